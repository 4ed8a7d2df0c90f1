//! The documentation cannot rot: the references generated from the code
//! (`docs/reference/cli.md` from clap, the JSON schemas from `llmgw
//! schema`) are what this build prints, and every relative link of every
//! markdown file of the repository resolves, to a file and, for
//! `#anchor`, to a heading of it.
//!
//! To write the generated references again after a change to the command
//! line or a format:
//! `LLMGW_BLESS_DOCS=1 cargo test --release --test it -- docs::` (then
//! review `git diff docs/reference/`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use pulldown_cmark::{Event, Parser, Tag, TagEnd};

/// Each generated file, relative to the repository, and the arguments of
/// `llmgw` that print it.
const GENERATED: &[(&str, &[&str])] = &[
    ("docs/reference/cli.md", &["cli-reference"]),
    ("docs/reference/schemas/host.schema.json", &["schema", "host"]),
    ("docs/reference/schemas/wants.schema.json", &["schema", "wants"]),
    ("docs/reference/schemas/scenario.schema.json", &["schema", "scenario"]),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_generated_references_are_what_the_binary_prints() {
    let bless = std::env::var_os("LLMGW_BLESS_DOCS").is_some_and(|v| !v.is_empty());
    let mut stale = Vec::new();
    for (file, args) in GENERATED {
        // No environment: clap shows an `env` flag's value when it is set.
        let out = Command::cargo_bin("llmgw").unwrap().args(*args).env_clear().output().unwrap();
        assert!(out.status.success(), "llmgw {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
        let path = root().join(file);
        if bless {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &out.stdout).unwrap();
        } else if std::fs::read(&path).ok().as_deref() != Some(&out.stdout[..]) {
            stale.push(format!("{file} (llmgw {})", args.join(" ")));
        }
    }
    assert!(
        stale.is_empty(),
        "these committed files differ from what this build prints:\n  {}\n\
         write them again with `LLMGW_BLESS_DOCS=1 cargo test --release --test it -- docs::` and review the diff",
        stale.join("\n  ")
    );
}

/// Every markdown file of the repository, build outputs and hidden folders
/// left out.
fn markdown_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for p in entries {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "target" || name == "node_modules" {
                continue;
            }
            if p.is_dir() {
                walk(&p, out);
            } else if name.ends_with(".md") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root(), &mut out);
    out
}

/// A heading's anchor as GitHub makes it: lowercase, every character but
/// letters, digits, `-`, `_` and spaces dropped, spaces made `-`; the n-th
/// repeat of an anchor gets `-n`.
fn anchor(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// A markdown file's links (their destinations) and its headings' anchors.
fn links_and_anchors(text: &str) -> (Vec<String>, BTreeSet<String>) {
    let (mut links, mut anchors, mut seen) = (Vec::new(), BTreeSet::new(), BTreeSet::new());
    let mut heading: Option<String> = None;
    for event in Parser::new(text) {
        match event {
            Event::Start(Tag::Link { dest_url, .. }) | Event::Start(Tag::Image { dest_url, .. }) => {
                links.push(dest_url.to_string())
            }
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t)
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let base = anchor(&heading.take().unwrap_or_default());
                let mut a = base.clone();
                let mut n = 0;
                while !seen.insert(a.clone()) {
                    n += 1;
                    a = format!("{base}-{n}");
                }
                anchors.insert(a);
            }
            _ => {}
        }
    }
    (links, anchors)
}

#[test]
fn every_relative_link_of_the_markdown_files_resolves() {
    let files = markdown_files();
    assert!(files.iter().any(|f| f.ends_with("docs/SUMMARY.md")), "the book's SUMMARY.md is not found");
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let (links, _) = links_and_anchors(&text);
        for link in links {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = link.split_once('#').map_or((link.as_str(), None), |(p, f)| (p, Some(f)));
            let target = if path.is_empty() { file.clone() } else { file.parent().unwrap().join(path) };
            let shown = file.strip_prefix(root()).unwrap().display();
            if !target.exists() {
                broken.push(format!("{shown}: `{link}`: no such file"));
                continue;
            }
            if let Some(fragment) = fragment.filter(|_| target.extension().is_some_and(|e| e == "md")) {
                let (_, anchors) = links_and_anchors(&std::fs::read_to_string(&target).unwrap());
                if !anchors.contains(fragment) {
                    broken.push(format!("{shown}: `{link}`: no heading with the anchor `#{fragment}`"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "links that do not resolve:\n  {}", broken.join("\n  "));
}

#[test]
fn anchors_are_made_as_github_makes_them() {
    assert_eq!(anchor("Scenarios (`scenarios/`)"), "scenarios-scenarios");
    assert_eq!(anchor("On a real node: discover and provision"), "on-a-real-node-discover-and-provision");
    let (_, anchors) = links_and_anchors("# A\n\n## A\n\n## Install on a node\n");
    assert_eq!(anchors, ["a", "a-1", "install-on-a-node"].map(String::from).into());
}

#[test]
fn a_broken_link_is_found() {
    let (links, anchors) = links_and_anchors("# T\n\nSee [x](missing.md#nowhere) and `[y](code.md)`.\n");
    assert_eq!(links, ["missing.md#nowhere"]);
    assert!(!anchors.contains("nowhere"));
}
