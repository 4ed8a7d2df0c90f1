//! The corpus of public reports (`tests/cases/`, issue 28 point 5): every
//! case's host simulated with each of its wants, what llmgw decides compared
//! with what the case says a correct installer decides.
//!
//! A case records both: `expected` (the correct decision, with the report's
//! link and the public rule behind it) and `today` (what llmgw decided when
//! `ci/cases_today.py` last ran, with `agrees`). This test holds the corpus
//! as a ratchet: a want that agreed must still agree, and a want whose
//! decision moved (fixed or broken) must have its `today` written again
//! (`ci/cases_today.py target/release/llmgw`), so every change of a rule that
//! a public report exercises is seen in review, with the report named.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cases")
}

/// The case files, sorted by name.
fn case_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(cases_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// What llmgw decides for `want` on the host in `host_file`: state, variant
/// and version of `simulate --format json`.
#[derive(Debug, PartialEq)]
struct Decision {
    state: String,
    variant: Option<String>,
    version: Option<String>,
}

impl Decision {
    fn of(engine: &Value) -> Decision {
        let text = |k: &str| engine.get(k).and_then(Value::as_str).map(str::to_owned);
        Decision { state: text("state").unwrap_or_default(), variant: text("variant"), version: text("version") }
    }
}

fn decide(host_file: &Path, want: &str) -> Decision {
    let out = Command::new(env!("CARGO_BIN_EXE_llmgw"))
        .args(["simulate", "--host"])
        .arg(host_file)
        .args(["--want", want, "--format", "json"])
        .output()
        .unwrap();
    assert_ne!(
        out.status.code(),
        Some(2),
        "{}: {want}: the case is bad input: {}",
        host_file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{want}: simulate printed no JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    Decision::of(&report["engines"][0])
}

/// The agreement rule of tests/cases/README.md ("Agreement"), as
/// `ci/cases_today.py` applies it.
fn agrees(expected: &Value, got: &Decision) -> bool {
    let states: Vec<&str> = match &expected["state"] {
        Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
        one => one.as_str().into_iter().collect(),
    };
    let same = |key: &str, got: &Option<String>| expected.get(key).is_none_or(|want| want.as_str() == got.as_deref());
    states.contains(&got.state.as_str())
        && same("variant", &got.variant)
        && same("version", &got.version)
        && expected.get("requires").and_then(Value::as_array).is_none_or(Vec::is_empty)
}

#[test]
fn every_public_report_decides_as_its_case_records() {
    let files = case_files();
    assert!(files.len() >= 40, "issue 28 asks for at least 40 cases; {} found", files.len());
    let work = tempfile::tempdir().unwrap();
    let (mut wants, mut agreeing) = (0, 0);
    let mut moved = Vec::new();
    for path in &files {
        let case: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let name = case["name"].as_str().unwrap();
        assert_eq!(
            Some(name),
            path.file_stem().and_then(|s| s.to_str()),
            "{}: `name` is not the file's",
            path.display()
        );
        let url = case["source"]["url"].as_str().unwrap_or("(no source.url)");
        assert!(url.starts_with("https://github.com/"), "{name}: source.url {url} is not a public report");
        let host_file = work.path().join(format!("{name}.json"));
        std::fs::write(&host_file, serde_json::to_vec(&case["host"]).unwrap()).unwrap();
        for want in case["want"].as_array().unwrap() {
            let want = want.as_str().unwrap();
            let expected = &case["expected"][want];
            assert!(expected.is_object(), "{name}: no `expected` for {want}");
            let recorded = &case["today"]["decisions"][want];
            let got = decide(&host_file, want);
            let now_agrees = agrees(expected, &got);
            wants += 1;
            agreeing += usize::from(now_agrees);
            let was = Decision::of(recorded);
            let agreed = recorded["agrees"].as_bool().unwrap_or(false);
            if got != was || now_agrees != agreed {
                let how = match (agreed, now_agrees) {
                    (true, false) => "BROKEN: it agreed",
                    (false, true) => "fixed: it now agrees",
                    _ => "moved",
                };
                moved.push(format!(
                    "{name} {want}: {how}; recorded {} {:?} {:?}, now {} {:?} {:?} ({url})",
                    was.state, was.variant, was.version, got.state, got.variant, got.version
                ));
            }
        }
    }
    assert!(
        moved.is_empty(),
        "{} of {wants} decisions differ from the cases' `today` (run ci/cases_today.py target/release/llmgw, \
         and explain each in the change):\n  {}",
        moved.len(),
        moved.join("\n  ")
    );
    // The corpus is a ratchet, not a formality: most reports agree, and the
    // rest are recorded as disagreeing with the principle that breaks them.
    assert!(agreeing * 3 >= wants * 2, "{agreeing} of {wants} wants agree");
    for path in &files {
        let case: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        for (want, d) in case["today"]["decisions"].as_object().unwrap() {
            if d["agrees"] == Value::Bool(false) {
                let principle = &case["expected"][want]["issue28"];
                assert!(
                    d["breaks"] == *principle && principle.is_string(),
                    "{}: {want} disagrees without naming the principle it breaks",
                    path.display()
                );
            }
        }
    }
}
