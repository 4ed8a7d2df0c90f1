//! The command line as a user meets it: outputs, exit codes, bad input.

use assert_cmd::Command;

fn llmgw() -> Command {
    Command::cargo_bin("llmgw").unwrap()
}

#[test]
fn simulate_json_is_byte_identical_between_runs() {
    let run = || {
        let out = llmgw()
            .args(["simulate", "--host"])
            .arg(super::host_path("v100.json"))
            .args(["--format", "json"])
            .output()
            .unwrap();
        // SGLang is unsupported on a V100: exit 1.
        assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    let (a, b) = (run(), run());
    assert!(!a.is_empty());
    assert_eq!(a, b);
    let v: serde_json::Value = serde_json::from_slice(&a).unwrap();
    assert_eq!(v["host"], "v100-ubuntu22.04-driver535");
    let e = &v["engines"][0];
    for key in ["engine", "version", "variant", "state", "detail", "note", "binary", "attempts"] {
        assert!(e.get(key).is_some(), "missing `{key}` in {e}");
    }
}

#[test]
fn simulate_text_for_v100() {
    let out = llmgw().args(["simulate", "--host"]).arg(super::host_path("v100.json")).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "SGLang is unsupported on a V100");
    insta::assert_snapshot!(String::from_utf8(out.stdout).unwrap());
}

#[test]
fn plan_prints_candidates_and_reasons() {
    let out = llmgw()
        .args(["plan", "--want", "llama.cpp@b10850", "--host"])
        .arg(super::host_path("v100.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    insta::assert_snapshot!(String::from_utf8(out.stdout).unwrap());
}

#[test]
fn a_failed_want_exits_1() {
    llmgw().args(["simulate", "--host"]).arg(super::host_path("a100-rhel9-driver570.json")).assert().code(1);
    llmgw().args(["simulate", "--host"]).arg(super::host_path("ac922-rhel8-ppc64le.json")).assert().code(1);
}

/// Runs llmgw with `args` in a directory holding `files`; asserts exit 2,
/// nothing on stdout, one line on stderr containing each of `says`, and no
/// file written.
fn bad_input(files: &[(&str, &str)], args: &[&str], says: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let out = llmgw().current_dir(dir.path()).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{args:?} printed to stdout");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    for s in says {
        assert!(stderr.contains(s), "`{s}` missing from: {stderr}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), files.len(), "a file was written");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let v100 = std::fs::read_to_string(super::host_path("v100.json")).unwrap();
    let bad_cc = v100.replace("\"7.0\"", "\"seven\"");
    let unknown = v100.replace("\"disk_free_gb\"", "\"disk_gb\": 1, \"disk_free_gb\"");
    let missing = v100.replace("\"arch\": \"amd64\",", "");
    let trailing = format!("{v100} {{}}");
    // (files in the directory, arguments, what stderr must say)
    type Case<'a> = (Vec<(&'a str, &'a str)>, Vec<&'a str>, Vec<&'a str>);
    let cases: Vec<Case> = vec![
        (vec![], vec!["simulate", "--host", "nope.json"], vec!["cannot read host file `nope.json`"]),
        (
            vec![("h.json", "{not json")],
            vec!["simulate", "--host", "h.json"],
            vec!["host file `h.json`", "key must be a string"],
        ),
        (
            vec![("h.json", &bad_cc)],
            vec!["simulate", "--host", "h.json"],
            vec!["nvidia.gpus[0].compute_capability", "seven"],
        ),
        (vec![("h.json", &unknown)], vec!["simulate", "--host", "h.json"], vec!["unknown field `disk_gb`"]),
        (vec![("h.json", &missing)], vec!["plan", "--host", "h.json"], vec!["missing field `arch`"]),
        (
            vec![("h.json", &v100)],
            vec!["simulate", "--host", "h.json", "--want", "ollama@1"],
            vec!["--want `ollama@1`", "unknown engine"],
        ),
        (
            vec![("h.json", &v100)],
            vec!["simulate", "--host", "h.json", "--want", "llama.cpp@newest"],
            vec!["not a build tag"],
        ),
        (
            vec![("h.json", &v100), ("w.json", "{\"wants\": [{\"engine\": \"uv\"}]}")],
            vec!["simulate", "--host", "h.json", "--wants", "w.json"],
            vec!["wants file `w.json`", "wants[0]", "missing field `version`"],
        ),
        (vec![("h.json", &trailing)], vec!["simulate", "--host", "h.json"], vec!["trailing characters"]),
        (vec![("h.json", "[]")], vec!["simulate", "--host", "h.json"], vec![".: expected an object, found an array"]),
        (vec![("h.json", "null")], vec!["simulate", "--host", "h.json"], vec![".: expected an object, found null"]),
        (
            vec![("capture", "a file")],
            vec!["discover", "--replay", "capture"],
            vec!["not a capture folder (it is a regular file)", "llmgw discover --capture DIR"],
        ),
        // Checked before anything is done: no file can be made in /proc.
        (vec![], vec!["discover", "--output", "/proc/llmgw-node.json"], vec!["no file can be made in `/proc`"]),
        (vec![("h.json", "")], vec!["plan", "--host", "h.json"], vec!["the document is empty"]),
        (
            vec![("h.json", &v100), ("w.json", "{\"wants\": []}")],
            vec!["plan", "--host", "h.json", "--wants", "w.json"],
            vec!["lists no want"],
        ),
        (
            vec![("h.json", &v100)],
            vec!["simulate", "--host", "h.json", "--format", "yaml"],
            vec!["invalid value 'yaml'", "possible values"],
        ),
    ];
    for (files, args, says) in cases {
        bad_input(&files, &args, &says);
    }
}

#[test]
fn plan_reads_a_saved_release_and_leaves_out_builds_whose_assets_it_lacks() {
    let server = llmgw_sim::publisher::FakeServer::start(llmgw_sim::truth::embedded_catalog()).unwrap();
    let url = format!("{}/repos/ggml-org/llama.cpp/releases/tags/b11459", server.base_url());
    let mut release: serde_json::Value =
        serde_json::from_slice(&super::http_client().get(url).send().unwrap().bytes().unwrap()).unwrap();
    // The CUDA 12.8 runtime not (yet) uploaded.
    release["assets"]
        .as_array_mut()
        .unwrap()
        .retain(|a| a["name"] != "cudart-llama-b11459-bin-ubuntu-cuda-12.8-x64.tar.gz");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("b11459.json");
    std::fs::write(&file, release.to_string()).unwrap();
    let plan = |extra: &[&str]| {
        let out = Command::cargo_bin("llmgw")
            .unwrap()
            .args([
                "plan",
                "--host",
                "matrix/hosts/l4-smalldisk-ubuntu24.04-driver580.json",
                "--want",
                "llama.cpp@b11459",
            ])
            .args(extra)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
    };
    let (code, without, _) = plan(&[]);
    assert_eq!(code, Some(0));
    assert!(without.contains("1. cuda-13.4") && without.contains("2. cuda-12.8"), "{without}");
    let (code, with, _) = plan(&["--release", file.to_str().unwrap()]);
    assert_eq!(code, Some(0));
    assert!(with.contains("1. cuda-13.4") && !with.contains("2. cuda-12.8"), "{with}");
    assert!(with.contains("without its CUDA runtime cudart-llama-b11459-bin-ubuntu-cuda-12.8-x64.tar.gz"), "{with}");
    // A release of another version, or not a release: exit 2 naming it.
    std::fs::write(&file, release.to_string().replace("\"b11459\"", "\"b1\"")).unwrap();
    let (code, _, err) = plan(&["--release", file.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--release: the release is `b1`, the version of no llama.cpp or uv want here"), "{err}");
    std::fs::write(&file, r#"{"tag_name": "b11459", "assets": [{"size": 1}]}"#).unwrap();
    let (code, _, err) = plan(&["--release", file.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(err.contains("assets[0]: missing field `name`"), "{err}");
}
