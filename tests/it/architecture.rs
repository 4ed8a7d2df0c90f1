//! The shape of the workspace, checked where the compiler cannot: each
//! crate depends only on the layers below it, and the pure ones on no crate
//! that makes effects; within a crate, no import cycle between its folders
//! and files (a parent's `mod.rs` and its children excepted: they are one
//! module), and every top-level module's documentation says, in a `Uses:`
//! sentence, exactly the modules of its crate it uses; no source file over
//! 600 lines apart from its tests; tests last in every file.
//!
//! Imports are read from the source text: every `crate::a::b` path and
//! every `super::b`, outside `#[cfg(test)]` code (tests may reach anywhere).

#![allow(clippy::disallowed_methods)] // a test reads the source tree

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// The longest a source file may be, its tests left out.
const MAX_LINES: usize = 600;

/// The workspace's crates, lowest layer first: each may depend on those
/// before it and on no other of them (their `Cargo.toml`s say so, and
/// [`the_crates_depend_only_on_the_layers_below_them`] checks it).
const CRATES: &[(&str, &str)] = &[
    ("llmgw-model", "crates/llmgw-model"),
    ("llmgw-core", "crates/llmgw-core"),
    ("llmgw-system", "crates/llmgw-system"),
    ("llmgw-sim", "crates/llmgw-sim"),
    ("llmgw", "."),
];

/// Crates that make effects (HTTP, files, processes, a server): none of
/// them may be a normal dependency of the pure layers, `llmgw-model` and
/// `llmgw-core`, so the compiler keeps those pure.
const EFFECT_CRATES: &[&str] = &[
    "reqwest",
    "rustls",
    "rustix",
    "tempfile",
    "tar",
    "flate2",
    "zip",
    "nvml-wrapper",
    "wiremock",
    "hyper",
    "socket2",
];

/// Crates only the simulation may depend on: the fake publisher's server.
const SIMULATION_ONLY: &[&str] = &["wiremock", "hyper", "hyper-util", "http-body-util"];

/// One source file: its crate, its module path (`["machine", "uv"]`) and
/// its text without test code.
struct Source {
    path: PathBuf,
    /// The crate's name with `_`: `llmgw_core`.
    krate: String,
    module: Vec<String>,
    /// Its code, without tests and comments.
    code: String,
    /// Its module documentation (`//!` lines at the top).
    doc: String,
    /// Its lines, tests left out.
    lines: usize,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn sources() -> Vec<Source> {
    let mut out = Vec::new();
    for (name, dir) in CRATES {
        let src = root().join(dir).join("src");
        let mut todo = vec![src.clone()];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    todo.push(p);
                    continue;
                }
                if p.extension().is_none_or(|x| x != "rs") || p.file_name().is_some_and(|n| n == "tests.rs") {
                    continue;
                }
                let rel = p.strip_prefix(&src).unwrap();
                let mut module: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
                let last = module.pop().unwrap();
                if !matches!(last.as_str(), "mod.rs" | "lib.rs" | "main.rs") {
                    module.push(last.trim_end_matches(".rs").to_string());
                }
                let text = std::fs::read_to_string(&p).unwrap();
                let lines = text.split("#[cfg(test)]").next().unwrap_or(&text).lines().count();
                let doc = text.lines().take_while(|l| l.starts_with("//!")).collect::<Vec<_>>().join("\n");
                out.push(Source {
                    path: p.clone(),
                    krate: name.replace('-', "_"),
                    module,
                    code: without_tests(&text),
                    doc,
                    lines,
                });
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The code up to the first `#[cfg(test)]` (test modules come last),
/// without comments: a doc link is no import.
fn without_tests(text: &str) -> String {
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    code.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// Every module path of its own crate the code names: `crate::a::b::c`
/// gives `[a, b, c]`; `super::x` from a file of module `m` gives `m`'s
/// parent plus `x`.
fn references(s: &Source) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (i, _) in s.code.match_indices("crate::") {
        let before = s.code[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '$') {
            continue;
        }
        out.push(segments(&s.code[i + "crate::".len()..]));
    }
    for (i, _) in s.code.match_indices("super::") {
        let before = s.code[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let mut base = s.module.clone();
        base.pop();
        let mut rest = &s.code[i + "super::".len()..];
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        // `super::{a, b::c}` names each of a and b.
        if let Some(inner) = rest.strip_prefix('{') {
            let inner = &inner[..inner.find('}').unwrap_or(inner.len())];
            for part in inner.split(',') {
                let seg = segments(part.trim());
                if let Some(first) = seg.first().filter(|f| *f != "self") {
                    let mut p = base.clone();
                    p.push(first.clone());
                    out.push(p);
                }
            }
        } else {
            let mut p = base.clone();
            p.extend(segments(rest).into_iter().take(1));
            out.push(p);
        }
    }
    out
}

/// The leading lowercase path segments of `rest`: `a::b::Type` gives `[a, b]`.
fn segments(rest: &str) -> Vec<String> {
    let mut out = Vec::new();
    for seg in rest.split("::") {
        let name: String = seg.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_uppercase()) || name.len() != seg.len() {
            if !name.is_empty() && !name.starts_with(|c: char| c.is_ascii_uppercase()) {
                out.push(name);
            }
            break;
        }
        out.push(name);
    }
    out
}

/// The strongly connected components of `graph` with more than one node:
/// each a set of modules that import each other, round a cycle (Tarjan).
fn cycles_of(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, n: &'a str) {
            let i = self.index.len();
            self.index.insert(n, i);
            self.low.insert(n, i);
            self.stack.push(n);
            self.on_stack.insert(n);
            for m in self.graph.get(n).into_iter().flatten() {
                let m = m.as_str();
                if !self.index.contains_key(m) {
                    self.visit(m);
                    let low = self.low[n].min(self.low[m]);
                    self.low.insert(n, low);
                } else if self.on_stack.contains(m) {
                    let low = self.low[n].min(self.index[m]);
                    self.low.insert(n, low);
                }
            }
            if self.low[n] == self.index[n] {
                let mut component = Vec::new();
                while let Some(m) = self.stack.pop() {
                    self.on_stack.remove(m);
                    component.push(m.to_string());
                    if m == n {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.out.push(component);
                }
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for n in graph.keys() {
        if !t.index.contains_key(n.as_str()) {
            t.visit(n);
        }
    }
    t.out.sort();
    t.out
}

/// The folders of one crate's `src/` (as module paths), its root among
/// them: a file's own module is a folder only when it has a `mod.rs`.
fn folders(sources: &[&Source]) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    for s in sources {
        for n in 0..s.module.len() {
            out.insert(s.module[..n].to_vec());
        }
    }
    out.retain(|f| f.is_empty() || sources.iter().any(|s| s.module == *f && s.path.ends_with("mod.rs")));
    out
}

/// The import graph among the children of `folder` in one crate: a child
/// is a file or folder directly in it; an edge goes from a child whose code
/// names another child. The folder's own `mod.rs` is no node.
fn graph_of(folder: &[String], sources: &[&Source]) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for s in sources {
        if s.module.len() <= folder.len() || s.module[..folder.len()] != *folder {
            continue;
        }
        let from = s.module[folder.len()].clone();
        for r in references(s) {
            if r.len() > folder.len() && r[..folder.len()] == *folder && r[folder.len()] != from {
                graph.entry(from.clone()).or_default().insert(r[folder.len()].clone());
            }
        }
        graph.entry(from).or_default();
    }
    graph
}

/// The sources of each crate, by the crate's name with `_`.
fn by_crate(sources: &[Source]) -> BTreeMap<String, Vec<&Source>> {
    let mut out: BTreeMap<String, Vec<&Source>> = BTreeMap::new();
    for s in sources {
        out.entry(s.krate.clone()).or_default().push(s);
    }
    out
}

#[test]
fn no_import_cycle_between_the_folders_and_files_of_any_crate() {
    let sources = sources();
    let mut found = Vec::new();
    for (krate, sources) in by_crate(&sources) {
        for folder in folders(&sources) {
            let graph = graph_of(&folder, &sources);
            for c in cycles_of(&graph) {
                let at = format!("{krate}::{}", folder.join("::"));
                let edges: Vec<String> = c
                    .iter()
                    .flat_map(|a| graph[a].iter().filter(|b| c.contains(b)).map(move |b| format!("{a} -> {b}")))
                    .collect();
                found.push(format!("{at}: {} import each other ({})", c.join(", "), edges.join(", ")));
            }
        }
    }
    assert!(found.is_empty(), "import cycles:\n{}", found.join("\n"));
}

#[test]
fn the_cycle_finder_finds_a_cycle_and_none_where_there_is_none() {
    let g = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
            g.entry(b.to_string()).or_default();
        }
        g
    };
    let abc = vec!["a".to_string(), "b".into(), "c".into()];
    assert_eq!(cycles_of(&g(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])), vec![abc]);
    assert!(cycles_of(&g(&[("a", "b"), ("b", "c"), ("a", "c")])).is_empty());
    let s = Source {
        path: PathBuf::from("x.rs"),
        krate: "llmgw_sim".into(),
        module: vec!["machine".into(), "uv".into()],
        code: "use super::{ldd, truth::X};\nuse crate::recipe::Want;\nfoo(crate::files::Files::new());".into(),
        doc: String::new(),
        lines: 3,
    };
    let refs = references(&s);
    assert!(refs.contains(&vec!["machine".into(), "ldd".into()]), "{refs:?}");
    assert!(refs.contains(&vec!["recipe".into()]), "{refs:?}");
    assert!(refs.contains(&vec!["files".into()]), "{refs:?}");
}

/// The `[dependencies]` of a crate's `Cargo.toml` (normal ones, every
/// target's), by name.
fn normal_dependencies(dir: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(root().join(dir).join("Cargo.toml")).unwrap();
    let manifest: toml::Table = text.parse().unwrap();
    let mut out: BTreeSet<String> = BTreeSet::new();
    let mut take = |t: Option<&toml::Value>| {
        if let Some(t) = t.and_then(toml::Value::as_table) {
            out.extend(t.keys().cloned());
        }
    };
    take(manifest.get("dependencies"));
    if let Some(targets) = manifest.get("target").and_then(toml::Value::as_table) {
        for t in targets.values() {
            take(t.get("dependencies"));
        }
    }
    out
}

#[test]
fn the_crates_depend_only_on_the_layers_below_them() {
    let ours: Vec<&str> = CRATES.iter().map(|(n, _)| *n).collect();
    let mut wrong = Vec::new();
    for (i, (name, dir)) in CRATES.iter().enumerate() {
        let deps = normal_dependencies(dir);
        for d in deps.iter().filter(|d| ours.contains(&d.as_str())) {
            let at = ours.iter().position(|o| o == d).unwrap();
            if at >= i {
                wrong.push(format!("{name} depends on {d}, a layer at or above its own"));
            }
        }
        if i <= 1 {
            for d in deps.iter().filter(|d| EFFECT_CRATES.contains(&d.as_str())) {
                wrong.push(format!("{name} is pure but depends on {d}, which makes effects"));
            }
        }
        if *name != "llmgw-sim" {
            for d in deps.iter().filter(|d| SIMULATION_ONLY.contains(&d.as_str())) {
                wrong.push(format!("{name} depends on {d}, which only the simulation may"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn effects_are_allowed_only_in_the_system_crate_the_command_line_and_the_served_mirror() {
    let allowed = |s: &Source| {
        s.krate == "llmgw_system"
            || s.krate == "llmgw"
            || (s.krate == "llmgw_sim" && s.module == ["publisher", "mirror"])
    };
    let wrong: Vec<String> = sources()
        .iter()
        .filter(|s| s.code.contains("allow(clippy::disallowed_methods)") && !allowed(s))
        .map(|s| s.path.display().to_string())
        .collect();
    assert!(wrong.is_empty(), "files outside the effects' places that allow clippy's disallowed methods: {wrong:?}");
}

#[test]
fn no_source_file_is_over_600_lines_apart_from_its_tests() {
    let long: Vec<String> = sources()
        .iter()
        .filter(|s| s.code.lines().count() > MAX_LINES)
        .map(|s| format!("{} ({} lines)", s.path.display(), s.lines))
        .collect();
    assert!(long.is_empty(), "files over {MAX_LINES} lines, tests left out: {long:?}");
}

#[test]
fn tests_come_last_in_every_file() {
    let mut out_of_place = Vec::new();
    for s in sources() {
        let text = std::fs::read_to_string(&s.path).unwrap();
        let Some(at) = text
            .match_indices("#[cfg(test)]\nmod ")
            .map(|(i, _)| i)
            .find(|&i| text[i..].lines().nth(1).is_some_and(|l| l.ends_with('{')))
        else {
            continue;
        };
        let after = &text[at..];
        let end = after.find("\n}\n").map_or(after.len(), |i| i + 3);
        if !after[end..].trim().is_empty() {
            out_of_place.push(s.path.display().to_string());
        }
    }
    assert!(out_of_place.is_empty(), "files with code after their test module: {out_of_place:?}");
}

/// What a module's documentation says it uses of its own crate: the
/// backticked names of the sentence that starts `Uses:` (none: `Uses:
/// nothing of this crate.`); `None` when it says nothing.
fn stated_uses(doc: &str) -> Option<BTreeSet<String>> {
    let text: String = doc.lines().map(|l| l.trim_start_matches("//!").trim()).collect::<Vec<_>>().join(" ");
    let at = text.find("Uses:")?;
    let para = &text[at + "Uses:".len()..];
    let para = &para[..para.find(". ").map_or(para.len(), |i| i + 1)];
    // Only plain names count: a path (`llmgw_core::recipe`) is another crate's.
    Some(
        para.split('`')
            .skip(1)
            .step_by(2)
            .filter(|n| n.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            .map(str::to_string)
            .collect(),
    )
}

#[test]
fn every_module_says_what_it_uses_of_its_crate_and_uses_nothing_else() {
    // The top-level modules of each library crate (a file or a folder at
    // src/), each with its sentence `Uses: `a`, `b`.` in its documentation,
    // compared with the crate's modules its code names (tests left out).
    let sources = sources();
    let mut wrong = Vec::new();
    for (krate, sources) in by_crate(&sources) {
        if krate == "llmgw" {
            continue; // the binary wires everything: nothing to say
        }
        let tops: BTreeSet<String> = sources.iter().filter_map(|s| s.module.first().cloned()).collect();
        for top in &tops {
            let Some(head) = sources.iter().find(|s| s.module == [top.clone()]) else { continue };
            let mut used: BTreeSet<String> = BTreeSet::new();
            for s in sources.iter().filter(|s| s.module.first() == Some(top)) {
                for r in references(s) {
                    if let Some(first) = r.first().filter(|f| *f != top && tops.contains(*f)) {
                        used.insert(first.clone());
                    }
                }
            }
            match stated_uses(&head.doc) {
                None => wrong.push(format!(
                    "{}: its documentation has no `Uses:` sentence; it uses {:?}",
                    head.path.display(),
                    used
                )),
                Some(said) => {
                    if said != used {
                        let extra: Vec<_> = used.difference(&said).collect();
                        let stale: Vec<_> = said.difference(&used).collect();
                        wrong.push(format!(
                            "{}: uses {extra:?} without saying so; says {stale:?} but does not use them",
                            head.path.display()
                        ));
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "modules whose `Uses:` sentence is not what their code uses:\n{}", wrong.join("\n"));
}

#[test]
fn a_uses_sentence_is_read_as_its_names() {
    let doc = "//! Pure.\n//!\n//! Uses: `host`, `recipe` (versions)\n//! and `system`. More text `x`.";
    assert_eq!(stated_uses(doc), Some(["host", "recipe", "system"].map(String::from).into()));
    assert_eq!(stated_uses("//! Uses: nothing of this crate."), Some(BTreeSet::new()));
    assert_eq!(stated_uses("//! No rule here."), None);
}
