//! Every example of every command's `--help` runs (issue 30.4). Each line
//! under a command's `Example:` or `Examples:` that starts with `llmgw` is
//! run by bash as it is written, in the order `--help` shows them, in one
//! scratch directory standing for a node:
//!
//! - the publisher is the fake one: `LLMGW_GITHUB_API` names a `llmgw
//!   mock-server` this test starts, so `builds`, `bundle create` and
//!   `provision` download the embedded truth;
//! - a node's paths the examples name (`/etc/llmgw`, `/srv`, `/opt/llmgw`,
//!   `/tmp/engines`) are taken inside the scratch directory, `HOME` too;
//! - the files the examples name are made first ([`prepare`]): a host
//!   description, a release's JSON, a CUDA library, an archive and a wheel
//!   holding it, a fleet and a matrix's two shards.
//!
//! A line exits 0, or a code [`EXPECTED`] gives with why; a `mock-server`
//! line is a server: it must start serving and still be running a second
//! later (it is stopped before the next server and at the end), so that the
//! lines after it use it. A line [`EXPECTED`] does not run says why; every
//! entry of [`EXPECTED`] must match a line.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use assert_cmd::cargo::cargo_bin;

/// What an example may do here instead of exiting 0.
enum Expect {
    /// It exits with one of these codes, the command's documented ones, for this reason.
    Exit(&'static [i32], &'static str),
    /// It is not run here, for this reason.
    NotRun(&'static str),
}

/// The examples that do not exit 0 here: by their whole line, or, for a
/// key ending in `…`, by the start of it.
const EXPECTED: &[(&str, Expect)] = &[
    ("llmgw simulate --host v100", Expect::Exit(&[1], "SGLang has no kernels for a V100: unsupported")),
    (
        "llmgw simulate --host v100 --set nvidia.driver=580.95.05 --diff",
        Expect::Exit(&[1], "--diff exits as simulate does: SGLang is unsupported on a V100 with either driver"),
    ),
    (
        "llmgw discover > node.json && llmgw simulate --host node.json",
        Expect::Exit(&[0, 1], "this machine, whatever it is: 1 where a want fails or is unsupported on it"),
    ),
    (
        "llmgw matrix --update…",
        Expect::Exit(&[2], "outside the checkout it refuses to rewrite the embedded golden file"),
    ),
    (
        "llmgw provision --want llama.cpp@b10850",
        Expect::NotRun(
            "it installs into /opt/llmgw/engines of this machine; the provision with --engines-dir below runs",
        ),
    ),
    (
        "llmgw provision --want vllm@0.20.1 --engines-dir /srv/engines --format json",
        Expect::Exit(
            &[0, 1],
            "not_here without an NVIDIA GPU (0); with one, PyPI is asked and may not be reachable (1)",
        ),
    ),
    (
        "llmgw agent --wants /etc/llmgw/wants.json --config /etc/llmgw/agent.json",
        Expect::NotRun(
            "the agent of a node runs until stopped, installing into /opt/llmgw/engines (tests/it/agent.rs runs it)",
        ),
    ),
    (
        "llmgw agent --host v100 --scenario machine-crash-before-rename --once…",
        Expect::Exit(&[1], "SGLang is unsupported on a V100"),
    ),
    (
        "llmgw inspect /opt/llmgw/engines/…",
        Expect::Exit(&[2], "no build is installed under /opt/llmgw/engines here: PATH missing"),
    ),
];

/// The entry of [`EXPECTED`] for `line`.
fn expected(line: &str) -> Option<usize> {
    EXPECTED.iter().position(|(key, _)| match key.strip_suffix('…') {
        Some(start) => line.starts_with(start),
        None => line == *key,
    })
}

/// Every visible command's path (`["bundle", "create"]`), from the headings
/// of `llmgw cli-reference`.
fn commands() -> Vec<Vec<String>> {
    let out = Command::new(cargo_bin("llmgw")).arg("cli-reference").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("## `llmgw")?.strip_suffix('`'))
        .map(|p| p.split_whitespace().map(String::from).collect())
        .collect()
}

/// The example lines of one `--help`: those after `Example:`/`Examples:` up
/// to the first empty line, continuations (`\`) joined, only `llmgw …`.
fn examples(help: &str) -> Vec<String> {
    let mut lines = help.lines().skip_while(|l| !matches!(l.trim(), "Example:" | "Examples:"));
    lines.next();
    let mut joined: Vec<String> = Vec::new();
    let mut open = false;
    for line in lines.take_while(|l| !l.trim().is_empty()) {
        let line = line.trim();
        if open {
            let last = joined.last_mut().unwrap();
            last.push(' ');
            last.push_str(line.trim_end_matches('\\').trim());
        } else {
            joined.push(line.trim_end_matches('\\').trim().to_string());
        }
        open = line.ends_with('\\');
    }
    joined.into_iter().filter(|l| l.starts_with("llmgw ")).collect()
}

/// The line with a node's paths taken inside `node`.
fn rooted(line: &str, node: &Path) -> String {
    let n = node.display();
    line.replace(" /etc/llmgw", &format!(" {n}/etc/llmgw"))
        .replace(" /srv/", &format!(" {n}/srv/"))
        .replace(" /opt/llmgw", &format!(" {n}/opt/llmgw"))
        .replace(" /tmp/engines", &format!(" {n}/tmp/engines"))
}

/// The files the examples name, made in `dir`; `github` is the fake
/// publisher's base URL.
fn prepare(dir: &Path, github: &str) {
    let llmgw = |args: &[&str]| {
        let out = Command::new(cargo_bin("llmgw")).args(args).current_dir(dir).output().unwrap();
        assert!(out.status.code().is_some_and(|c| c <= 1), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    std::fs::copy(super::host_path("v100.json"), dir.join("node.json")).unwrap();
    std::fs::create_dir_all(dir.join("fleet")).unwrap();
    for h in ["v100.json", "h100-ubuntu24.04-driver580.json", "t4-ubuntu22.04-driver580.json"] {
        std::fs::copy(super::host_path(h), dir.join("fleet").join(h)).unwrap();
    }
    std::fs::write(
        dir.join("wants.json"),
        r#"{"wants": [{"engine": "llama.cpp", "version": "b10850"}, {"engine": "uv", "version": "0.12.20"}]}"#,
    )
    .unwrap();
    for d in ["etc/llmgw", "srv/llmgw-mirror", "opt/llmgw", "tmp"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    std::fs::write(dir.join("etc/llmgw/agent.json"), "{}").unwrap();
    std::fs::copy(dir.join("wants.json"), dir.join("etc/llmgw/wants.json")).unwrap();
    // The release plan --release reads, as GitHub's API answers it.
    let release = super::http_client()
        .get(format!("{github}/repos/ggml-org/llama.cpp/releases/tags/b11459"))
        .send()
        .unwrap()
        .bytes()
        .unwrap();
    std::fs::write(dir.join("b11459.json"), release).unwrap();
    // A real CUDA library, alone, in a build's archive and in a wheel.
    let so = std::fs::read(root().join("tests/fixtures/cuda/compress_all.so")).unwrap();
    std::fs::write(dir.join("libggml-cuda.so"), &so).unwrap();
    let mut tgz = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
    let mut header = tar::Header::new_gnu();
    header.set_size(so.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    tgz.append_data(&mut header, "llama-b11459/libggml-cuda.so", &so[..]).unwrap();
    let tgz = tgz.into_inner().unwrap().finish().unwrap();
    std::fs::write(dir.join("llama-b11459-bin-ubuntu-cuda-12.8-x64.tar.gz"), tgz).unwrap();
    let mut whl = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    whl.start_file("vllm/_C.abi3.so", zip::write::SimpleFileOptions::default()).unwrap();
    std::io::Write::write_all(&mut whl, &so).unwrap();
    std::fs::write(dir.join("vllm-0.20.1-cp38-abi3-manylinux_2_35_x86_64.whl"), whl.finish().unwrap().into_inner())
        .unwrap();
    // The shards --merge puts together: the fleet's, in two.
    for i in 1..=2 {
        let cells = llmgw(&["matrix", "--hosts", "fleet", "--shard", &format!("{i}/2"), "--format", "json"]);
        std::fs::write(dir.join(format!("shard-{i}.json")), cells).unwrap();
    }
}

/// Runs `line` with bash in `dir`; its exit code and what it printed.
fn run(line: &str, dir: &Path, env: &[(&str, String)]) -> (Option<i32>, String) {
    let out = bash(line, dir, env).stdout(Stdio::piped()).stderr(Stdio::piped()).output().unwrap();
    (out.status.code(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

fn bash(line: &str, dir: &Path, env: &[(&str, String)]) -> Command {
    let bin = cargo_bin("llmgw");
    let path = format!("{}:{}", bin.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let mut cmd = Command::new("bash");
    cmd.args(["-c", line]).current_dir(dir).env("PATH", path).env("HOME", dir).env_remove("NO_COLOR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The fake publisher on a free port, and its base URL.
fn serve() -> (super::Running, String) {
    let child = Command::new(cargo_bin("llmgw"))
        .args(["mock-server", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut served = super::Running(child);
    let mut lines = BufReader::new(served.0.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let base = first.strip_prefix(SERVING).unwrap_or_else(|| panic!("{first}")).to_string();
    std::thread::spawn(move || lines.for_each(drop));
    (served, base)
}

/// What `mock-server` prints first, once it serves.
const SERVING: &str = "serving the fake GitHub release API at ";

/// A `mock-server` example started: serving within a minute (with real
/// programs it compiles them first) and still running a second later.
fn start_server(command: &str, dir: &Path, env: &[(&str, String)]) -> Result<super::Running, String> {
    let child =
        bash(&format!("exec {command}"), dir, env).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut running = super::Running(child);
    let stdout = running.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        let _ = tx.send(lines.next().and_then(Result::ok));
        lines.for_each(drop);
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(Some(first)) if first.starts_with(SERVING) => {}
        other => return Err(format!("did not start serving: {other:?}")),
    }
    std::thread::sleep(Duration::from_secs(1));
    match running.0.try_wait().unwrap() {
        None => Ok(running),
        Some(status) => Err(format!("stopped ({status}) instead of serving")),
    }
}

#[test]
fn every_help_example_runs_against_the_embedded_truth() {
    let (_publisher, github) = serve();
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    prepare(dir, &github);
    let env = [("LLMGW_GITHUB_API", github.clone()), ("TMPDIR", dir.join("tmp").display().to_string())];
    let mut failed = Vec::new();
    let mut matched = vec![false; EXPECTED.len()];
    let mut server: Option<super::Running> = None;
    let mut ran = 0;
    for path in commands() {
        let out = Command::new(cargo_bin("llmgw")).args(&path).arg("--help").env("COLUMNS", "200").output().unwrap();
        for line in examples(&String::from_utf8(out.stdout).unwrap()) {
            let expect = expected(&line);
            if let Some(i) = expect {
                matched[i] = true;
            }
            let (want, why) = match expect.map(|i| &EXPECTED[i].1) {
                Some(Expect::NotRun(why)) => {
                    eprintln!("not run: `{line}`: {why}");
                    continue;
                }
                Some(Expect::Exit(codes, why)) => (*codes, *why),
                None => (&[0][..], "the command did what the example says"),
            };
            let command = rooted(line.trim_end_matches('&').trim(), dir);
            ran += 1;
            if line.starts_with("llmgw mock-server") {
                drop(server.take());
                match start_server(&command, dir, &env) {
                    Ok(running) => server = Some(running),
                    Err(why) => failed.push(format!("`{line}`: {why}")),
                }
                continue;
            }
            let (code, said) = run(&command, dir, &env);
            if !code.is_some_and(|c| want.contains(&c)) {
                failed.push(format!("`{line}`: exit {code:?}, not {want:?} ({why}):\n{said}"));
            }
        }
    }
    drop(server);
    let unmatched: Vec<_> =
        EXPECTED.iter().zip(&matched).filter(|(_, m)| !**m).map(|((s, _), _)| s.trim_end()).collect();
    assert!(unmatched.is_empty(), "entries of EXPECTED that match no example any more: {unmatched:?}");
    assert!(ran >= 40, "only {ran} examples ran");
    assert!(failed.is_empty(), "examples of --help that do not run as documented:\n{}", failed.join("\n"));
}

#[test]
fn examples_are_read_as_lines_of_the_help_with_continuations_joined() {
    let help = "Usage: llmgw x\n\nExamples:\n  llmgw a --b \\\n      --c d\n  # a comment\n  curl -s URL\n  llmgw e &\n\nExit codes: 0\n  llmgw not-an-example\n";
    assert_eq!(examples(help), ["llmgw a --b --c d", "llmgw e &"]);
}
