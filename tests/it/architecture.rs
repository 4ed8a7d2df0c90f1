//! The shape of `src/`, checked: no import cycle between its top-level
//! folders and files, nor between the files and folders of any one folder
//! (a parent's `mod.rs` and its children excepted: they are one module);
//! no source file over 600 lines apart from its tests; every folder's
//! `mod.rs` says what lives there and what it may import.
//!
//! Imports are read from the source text: every `crate::a::b` path (and in
//! the binary's files, `llmgw::a::b`), and every `super::b` of a folder's
//! files, outside `#[cfg(test)]` code (tests may reach anywhere).

#![allow(clippy::disallowed_methods)] // a test reads the source tree

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest a source file may be, its tests left out.
const MAX_LINES: usize = 600;

/// One source file: its module path (`["sim", "publisher", "github"]`) and
/// its text without test code.
struct Source {
    path: PathBuf,
    module: Vec<String>,
    /// Whether it belongs to the binary (`main.rs`, `cli/`), which reaches
    /// the library as `llmgw::`.
    bin: bool,
    /// Its code, without tests and comments.
    code: String,
    /// Its lines, tests left out.
    lines: usize,
}

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn sources() -> Vec<Source> {
    let root = src();
    let mut out = Vec::new();
    let mut todo = vec![root.clone()];
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") || p.file_name().is_some_and(|n| n == "tests.rs") {
                continue;
            }
            let rel = p.strip_prefix(&root).unwrap();
            let mut module: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
            let last = module.pop().unwrap();
            if !matches!(last.as_str(), "mod.rs" | "lib.rs" | "main.rs") {
                module.push(last.trim_end_matches(".rs").to_string());
            }
            let bin = rel.starts_with("cli") || rel == Path::new("main.rs");
            let text = std::fs::read_to_string(&p).unwrap();
            let lines = text.split("#[cfg(test)]").next().unwrap_or(&text).lines().count();
            out.push(Source { path: p.clone(), module, bin, code: without_tests(&text), lines });
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

/// Every module path the code names: `crate::a::b::c` gives `[a, b, c]`;
/// `super::x` from a file of module `m` gives `m`'s parent plus `x`.
fn references(s: &Source) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let prefixes: &[&str] = if s.bin { &["llmgw::", "crate::"] } else { &["crate::"] };
    for prefix in prefixes {
        for (i, _) in s.code.match_indices(prefix) {
            let before = s.code[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let rest = &s.code[i + prefix.len()..];
            let mut path: Vec<String> = Vec::new();
            if *prefix == "crate::" && s.bin {
                // The binary's own modules: `crate::cli::…` is `cli`.
                path.push("cli".into());
            }
            path.extend(segments(rest));
            out.push(path);
        }
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
        if s.bin && base.is_empty() {
            base.push("cli".into());
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

/// The folders of `src/` (as module paths), the crate's root among them.
fn folders(sources: &[Source]) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    for s in sources {
        for n in 0..s.module.len() {
            out.insert(s.module[..n].to_vec());
        }
    }
    // A file's own module is a folder only when it has a mod.rs.
    out.retain(|f| f.is_empty() || src().join(f.join("/")).is_dir());
    out
}

/// The import graph among the children of `folder`: a child is a file or
/// folder directly in it; an edge goes from a child whose code names
/// another child. The folder's own `mod.rs` is no node.
fn graph_of(folder: &[String], sources: &[Source]) -> BTreeMap<String, BTreeSet<String>> {
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

#[test]
fn no_import_cycle_between_the_folders_and_files_of_src() {
    let sources = sources();
    let mut found = Vec::new();
    for folder in folders(&sources) {
        let graph = graph_of(&folder, &sources);
        for c in cycles_of(&graph) {
            let at = if folder.is_empty() { "src/".to_string() } else { format!("src/{}/", folder.join("/")) };
            let edges: Vec<String> = c
                .iter()
                .flat_map(|a| graph[a].iter().filter(|b| c.contains(b)).map(move |b| format!("{a} -> {b}")))
                .collect();
            found.push(format!("{at}: {} import each other ({})", c.join(", "), edges.join(", ")));
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
        module: vec!["sim".into(), "machine".into(), "uv".into()],
        bin: false,
        code: "use super::{ldd, truth::X};\nuse crate::recipe::Want;\nfoo(crate::system::http::Http::new());".into(),
        lines: 3,
    };
    let refs = references(&s);
    assert!(refs.contains(&vec!["sim".into(), "machine".into(), "ldd".into()]), "{refs:?}");
    assert!(refs.contains(&vec!["recipe".into()]), "{refs:?}");
    assert!(refs.contains(&vec!["system".into(), "http".into()]), "{refs:?}");
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

#[test]
fn every_folder_says_what_lives_there_and_what_it_may_import() {
    let mut silent = Vec::new();
    for dir in folders(&sources()).into_iter().filter(|f| !f.is_empty()) {
        let path = src().join(dir.join("/")).join("mod.rs");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let doc: String = text.lines().take_while(|l| l.starts_with("//!")).collect::<Vec<_>>().join("\n");
        if doc.is_empty() || !doc.contains("import") {
            silent.push(path.display().to_string());
        }
    }
    assert!(silent.is_empty(), "folders whose mod.rs does not say what lives there and what it may import: {silent:?}");
}
