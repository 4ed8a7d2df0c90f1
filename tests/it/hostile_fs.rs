//! A hostile file system: what anyone who can write the engines directory,
//! a capture or a release directory can put there — records that climb
//! out, binaries outside, FIFOs, devices, links, sparse giants — and what
//! llmgw does with each (issue 26's kinds 1, 2, 6, 7, 10 and 14). Nothing
//! outside the engines directory is removed or run, nothing hangs, and a
//! record that is not to be followed is set aside as `*.rejected`.
//!
//! The harness: [`installed`] gives a simulation with one build installed
//! (its engines directory real, in a temporary directory), [`record`] and
//! [`put_record`] read and write its install record, [`mkfifo`] makes a
//! FIFO, and [`within`] runs what could hang under a watchdog.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use assert_cmd::cargo::CommandCargoExt;
use llmgw_core::converge::{Outcome, State, Status};
use llmgw_core::recipe::Want;
use llmgw_sim::Simulation;

/// What may take this long is hung.
const WATCHDOG: Duration = Duration::from_secs(60);

const HOST: &str = "nogpu-debian12.json";

fn latest() -> Vec<Want> {
    vec![Want::parse("llama.cpp@latest").unwrap()]
}

/// A simulation of `host` with `wants` converged and ready; the record of
/// the one build installed (`llama.cpp/b11459-cpu.json`), relative to the
/// engines directory.
fn installed(host: &str, wants: &[Want]) -> (Simulation, String) {
    let mut sim = Simulation::start(super::host(host)).unwrap();
    let s = sim.converge(wants).engines.remove(0);
    assert_eq!(s.state, State::Ready, "{}", s.detail);
    let engine = wants[0].engine.as_str();
    let dir = sim.engines_dir().join(engine);
    let name = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with(".json"))
        .unwrap();
    (sim, format!("{engine}/{name}"))
}

/// The install record at `rel` under `engines`, as JSON.
fn record(engines: &Path, rel: &str) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(engines.join(rel)).unwrap()).unwrap()
}

/// Writes the install record `value` at `rel` under `engines`.
fn put_record(engines: &Path, rel: &str, value: &serde_json::Value) {
    std::fs::write(engines.join(rel), serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

/// Makes a FIFO at `path`.
fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success(), "mkfifo {}", path.display());
}

/// Runs `f` on a thread of its own: its value, or a failure when it takes
/// longer than the watchdog (a hang).
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(WATCHDOG).unwrap_or_else(|_| panic!("{what}: still running after {WATCHDOG:?}: it hangs"))
}

/// Runs llmgw under the watchdog: (exit code, stdout, stderr); a run past
/// it is killed and fails the test.
fn run(args: &[&str]) -> (i32, String, String) {
    let mut child = Command::cargo_bin("llmgw")
        .unwrap()
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > WATCHDOG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("llmgw {}: still running after {WATCHDOG:?}: it hangs", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let s = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    (out.status.code().unwrap_or(-1), s(out.stdout), s(out.stderr))
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// `../` as many times as `from` has components: from `from`, the root.
fn up_to_root(from: &Path) -> String {
    "../".repeat(from.components().count() - 1)
}

/// The build stays ready, installed afresh: its earlier install was seen
/// broken (`stale`), saying `says`.
fn reinstalled_saying(s: &Status, says: &str) {
    assert_eq!(s.state, State::Ready, "{}", s.detail);
    let stale = s.attempts.iter().find(|a| a.outcome == Outcome::Stale);
    assert!(stale.is_some_and(|a| a.reason.contains(says)), "{says}: {:#?}", s.attempts);
}

/// Kind 1: a record whose version climbs out of the engines directory,
/// and one whose managed CPython is a directory elsewhere: set aside,
/// never followed; what they point to is never removed.
#[test]
fn a_record_pointing_outside_is_set_aside_and_nothing_outside_is_removed() {
    let (mut sim, rel) = installed(HOST, &latest());
    let engines = sim.engines_dir().to_path_buf();
    let outside = tempfile::tempdir().unwrap();
    let mut victims = Vec::new();
    // Two, so that neither is kept as "the newest before" the ready one.
    for (i, name) in ["victim-a", "victim-b"].into_iter().enumerate() {
        let victim = outside.path().join(name);
        std::fs::create_dir_all(victim.join("x")).unwrap();
        std::fs::write(victim.join("x/data"), "keep me").unwrap();
        std::fs::write(outside.path().join(format!("{name}-x.json")), "keep me").unwrap();
        let mut r = record(&engines, &rel);
        let climb = format!(
            "{}{}",
            up_to_root(&engines.join("llama.cpp")),
            victim.display().to_string().trim_start_matches('/')
        );
        r["version"] = climb.into();
        r["variant"] = "x".into();
        put_record(&engines, &format!("llama.cpp/evil-{i}.json"), &r);
        victims.push(victim);
    }
    let s = sim.converge(&latest()).engines.remove(0);
    assert_eq!(s.state, State::Ready, "{}", s.detail);
    for (i, victim) in victims.iter().enumerate() {
        assert!(victim.join("x/data").exists(), "{} was removed", victim.display());
        let name = victim.file_name().unwrap().to_string_lossy();
        assert!(outside.path().join(format!("{name}-x.json")).exists(), "{name}-x.json was removed");
        assert!(engines.join(format!("llama.cpp/evil-{i}.json.rejected")).exists(), "set aside");
        assert!(!engines.join(format!("llama.cpp/evil-{i}.json")).exists(), "set aside");
    }
    assert!(engines.join(&rel).exists(), "the good record stays");
}

/// Kind 1, the Python engines: a record whose `python.dir` is a directory
/// outside is not followed, and that directory is never removed.
#[test]
fn a_python_record_whose_interpreter_is_elsewhere_is_not_followed() {
    let wants = [Want::parse("vllm@0.20.1").unwrap()];
    let (mut sim, rel) = installed("h100-ubuntu24.04-driver580.json", &wants);
    let engines = sim.engines_dir().to_path_buf();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim-py");
    std::fs::create_dir_all(victim.join("bin")).unwrap();
    std::fs::write(victim.join("bin/python3.12"), "not what the record says").unwrap();
    let mut r = record(&engines, &rel);
    r["python"]["dir"] = victim.display().to_string().into();
    put_record(&engines, &rel, &r);
    let s = sim.converge(&wants).engines.remove(0);
    reinstalled_saying(&s, "its install record was set aside");
    assert!(victim.join("bin/python3.12").exists(), "the directory outside was removed");
    assert!(engines.join(format!("{rel}.rejected")).exists());
}

/// Kind 2: a record whose binary is a path outside its install is not run,
/// nor one that no recorded sha256 covers.
#[test]
fn a_binary_no_recorded_sha256_covers_is_never_run() {
    let (mut sim, rel) = installed(HOST, &latest());
    let engines = sim.engines_dir().to_path_buf();
    let r = record(&engines, &rel);
    let install = engines.join(rel.trim_end_matches(".json"));
    let outside = tempfile::tempdir().unwrap();
    let copy = outside.path().join("llama-server");
    std::fs::copy(install.join(r["binary"].as_str().unwrap()), &copy).unwrap();
    for binary in [copy.display().to_string(), "not-listed".to_string()] {
        if binary == "not-listed" {
            std::fs::copy(&copy, install.join("not-listed")).unwrap();
        }
        let mut bad = r.clone();
        bad["binary"] = binary.clone().into();
        put_record(&engines, &rel, &bad);
        let s = sim.converge(&latest()).engines.remove(0);
        reinstalled_saying(&s, "its install record was set aside");
        // Said relative to the engines directory when it is inside it.
        let ran = s.binary.clone().unwrap();
        assert!(!Path::new(&ran).is_absolute() && !ran.ends_with("not-listed"), "{binary}: ran {ran}");
    }
}

/// Kind 6: a FIFO or a link to a device where an installed file, a record
/// or the engines directory's lock is: refused at once, naming it.
#[test]
fn fifos_and_devices_in_the_engines_directory_never_hang_it() {
    let (sim, rel) = installed(HOST, &latest());
    let engines = sim.engines_dir().to_path_buf();
    let r = record(&engines, &rel);
    let install = engines.join(rel.trim_end_matches(".json"));
    let file = install.join(r["files"][0]["path"].as_str().unwrap());
    let sim = within("an installed file that is a FIFO", move || {
        let mut sim = sim;
        std::fs::remove_file(&file).unwrap();
        mkfifo(&file);
        let s = sim.converge(&latest()).engines.remove(0);
        reinstalled_saying(&s, "it is a FIFO, not a regular file");
        // A link to /dev/zero there.
        std::fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &file).unwrap();
        let s = sim.converge(&latest()).engines.remove(0);
        reinstalled_saying(&s, "is a symbolic link, which is not followed");
        // A FIFO named as a record.
        mkfifo(&engines.join("llama.cpp/fifo.json"));
        let s = sim.converge(&latest()).engines.remove(0);
        assert_eq!(s.state, State::Ready, "{}", s.detail);
        assert!(engines.join("llama.cpp/fifo.json.rejected").exists(), "set aside");
        sim
    });
    drop(sim);

    // `.lock` a FIFO: provision says so at once (exit 2), holding nothing.
    let t = tempfile::tempdir().unwrap();
    mkfifo(&t.path().join(".lock"));
    let host = super::host_path("v100.json");
    let (code, _, err) =
        run(&["provision", "--want", "llama.cpp@b11459", "--host", p(&host), "--engines-dir", p(t.path())]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(".lock`: it is a FIFO, not a regular file"), "{err}");
}

/// Kind 6 and 7: a capture whose file is a FIFO, a device or a sparse
/// giant is refused at once naming the file; a release directory's archive
/// that is a FIFO too.
#[test]
fn captures_and_release_directories_are_read_as_regular_files_of_their_size() {
    let t = tempfile::tempdir().unwrap();
    let capture = t.path().join("capture");
    std::fs::create_dir(&capture).unwrap();
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/discover/dgx-h100");
    for e in std::fs::read_dir(&from).unwrap().flatten() {
        std::fs::copy(e.path(), capture.join(e.file_name())).unwrap();
    }
    let os_release = capture.join("os-release");
    std::fs::remove_file(&os_release).unwrap();
    mkfifo(&os_release);
    let (code, _, err) = run(&["discover", "--replay", p(&capture)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("os-release") && err.contains("is a FIFO, not a regular file"), "{err}");
    std::fs::remove_file(&os_release).unwrap();
    std::fs::File::create(&os_release).unwrap().set_len(5 << 30).unwrap();
    let (code, _, err) = run(&["discover", "--replay", p(&capture)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("os-release") && err.contains("bytes, more than"), "{err}");

    let dist = t.path().join("dist");
    std::fs::create_dir(&dist).unwrap();
    let name = "llmgw-0.1.0-x86_64-unknown-linux-gnu.tar.gz";
    mkfifo(&dist.join(name));
    std::fs::write(dist.join(format!("{name}.sha256")), format!("{}  {name}\n", "a".repeat(64))).unwrap();
    let out = t.path().join("b.tar");
    let args = ["bundle", "create", "--github-api", "http://127.0.0.1:9", "--want", "uv@0.12.20", "--arch", "amd64"];
    let (code, _, err) = run(&[&args[..], &["--llmgw-dir", p(&dist), "--out", p(&out)]].concat());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(name) && err.contains("it is a FIFO, not a regular file"), "{err}");
}

/// Kind 7: a record as large as a disk (sparse) is refused by its size,
/// never read whole.
#[test]
fn a_giant_record_is_set_aside_by_its_size() {
    let (sim, rel) = installed(HOST, &latest());
    let engines = sim.engines_dir().to_path_buf();
    let r = record(&engines, &rel);
    let giant = engines.join("llama.cpp/giant.json");
    std::fs::File::create(&giant).unwrap().set_len(6 << 30).unwrap();
    std::fs::File::create(engines.join(&rel)).unwrap().set_len(6 << 30).unwrap();
    let (_sim, s) = within("a 6 GB record", move || {
        let mut sim = sim;
        let s = sim.converge(&latest()).engines.remove(0);
        (sim, s)
    });
    reinstalled_saying(&s, "more than an install record ever is");
    assert!(engines.join("llama.cpp/giant.json.rejected").exists());
    assert_eq!(record(&engines, &rel)["files"], r["files"], "the build's record written again");
}

/// Kind 10 and 14: the agent's status file is never inside the engines
/// directory, and never a symbolic link written through.
#[test]
fn the_agent_status_file_is_refused_inside_the_engines_directory_or_as_a_link() {
    let t = tempfile::tempdir().unwrap();
    let engines = t.path().join("engines");
    std::fs::create_dir_all(engines.join("llama.cpp")).unwrap();
    for inside in [engines.join(".lock"), engines.join("llama.cpp/b11459-cpu.json"), engines.join("new/status.json")] {
        if let Some(dir) = inside.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        let args = ["agent", "--host", "v100", "--once", "--engines-dir", p(&engines), "--status-file", p(&inside)];
        let (code, _, err) = run(&args);
        assert_eq!(code, 2, "{}: {err}", inside.display());
        assert!(err.contains("is inside the engines directory"), "{err}");
        assert!(!inside.is_file() || std::fs::read(&inside).unwrap().is_empty(), "nothing written");
    }
    let real = t.path().join("elsewhere.json");
    std::fs::write(&real, "precious").unwrap();
    let link = t.path().join("status.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let (code, _, err) = run(&["agent", "--host", "v100", "--once", "--status-file", p(&link)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is a symbolic link"), "{err}");
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "precious");
}

/// Kind 14: a file of an install replaced by a link to an identical copy
/// outside does not verify: the file itself is read, no link followed.
#[test]
fn verification_reads_the_file_itself_and_follows_no_link() {
    let (mut sim, rel) = installed(HOST, &latest());
    let engines = sim.engines_dir().to_path_buf();
    let r = record(&engines, &rel);
    let install = engines.join(rel.trim_end_matches(".json"));
    let file = install.join(r["files"][0]["path"].as_str().unwrap());
    // Outside the engines directory, on its file system (a tree is moved there).
    let outside = tempfile::tempdir_in(engines.parent().unwrap()).unwrap();
    let copy = outside.path().join("copy");
    std::fs::copy(&file, &copy).unwrap();
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(&copy, &file).unwrap();
    let s = sim.converge(&latest()).engines.remove(0);
    reinstalled_saying(&s, "is a symbolic link, which is not followed");
    assert!(copy.exists(), "the copy outside is not removed");
    assert!(!std::fs::symlink_metadata(&file).unwrap().file_type().is_symlink(), "installed afresh");

    // A directory on the way that is a link to an identical tree outside.
    let r = record(&engines, &rel);
    let nested = r["files"].as_array().unwrap().iter().filter_map(|f| f["path"].as_str()).find(|f| f.contains('/'));
    if let Some(nested) = nested {
        let top = nested.split('/').next().unwrap();
        let moved: PathBuf = outside.path().join("tree");
        std::fs::rename(install.join(top), &moved).unwrap();
        std::os::unix::fs::symlink(&moved, install.join(top)).unwrap();
        let s = sim.converge(&latest()).engines.remove(0);
        reinstalled_saying(&s, "is a symbolic link, which is not followed");
        assert!(moved.join(nested.split_once('/').unwrap().1).exists(), "nothing removed through the link");
    }
}

/// Kind 14: a bundle manifest's variant is one its engine publishes, and
/// no entry is listed twice.
#[test]
fn a_manifest_with_an_unknown_variant_or_an_entry_twice_is_refused() {
    let entry = serde_json::json!({
        "engine": "uv", "version": "0.12.20", "arch": "amd64", "variant": "x86_64",
        "asset": "uv-x86_64-unknown-linux-gnu.tar.gz", "size": 3, "sha256": "ab".repeat(32),
    });
    let manifest = |files: Vec<serde_json::Value>| serde_json::json!({"format": 1, "files": files}).to_string();
    assert!(llmgw_core::offline::manifest::Manifest::from_json(&manifest(vec![entry.clone()])).is_ok());
    let mut odd = entry.clone();
    odd["variant"] = "../../x".into();
    let e = llmgw_core::offline::manifest::Manifest::from_json(&manifest(vec![odd])).unwrap_err();
    assert!(e.starts_with("files[0].variant: uv has no variant `../../x`"), "{e}");
    let e = llmgw_core::offline::manifest::Manifest::from_json(&manifest(vec![entry.clone(), entry])).unwrap_err();
    assert!(e.starts_with("files[1]: ") && e.ends_with("is listed twice"), "{e}");
}

/// Kind 14: U+2028 and U+FEFF in a name from a file are refused as the
/// other invisible or line-breaking characters are.
#[test]
fn line_separators_and_byte_order_marks_inside_names_are_refused() {
    let t = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(super::host_path("v100.json")).unwrap();
    for (c, says) in [('\u{2028}', "U+2028"), ('\u{feff}', "U+FEFF")] {
        let mut host: serde_json::Value = serde_json::from_str(&text).unwrap();
        host["name"] = format!("v100{c}node").into();
        let path = t.path().join("host.json");
        std::fs::write(&path, host.to_string()).unwrap();
        let (code, _, err) = run(&["plan", "--host", p(&path), "--want", "uv@0.12.20"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(says), "{err}");
    }
}

/// Kind 14: a release directory with only the static archive of an
/// architecture is refused, naming the glibc one it lacks.
#[test]
fn a_release_directory_without_the_glibc_archive_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let dist = t.path().join("dist");
    std::fs::create_dir(&dist).unwrap();
    let name = "llmgw-0.1.0-x86_64-unknown-linux-musl.tar.gz";
    std::fs::write(dist.join(name), "archive").unwrap();
    std::fs::write(dist.join(format!("{name}.sha256")), format!("{}  {name}\n", "a".repeat(64))).unwrap();
    let out = t.path().join("b.tar");
    let args = ["bundle", "create", "--github-api", "http://127.0.0.1:9", "--want", "uv@0.12.20", "--arch", "amd64"];
    let (code, _, err) = run(&[&args[..], &["--llmgw-dir", p(&dist), "--out", p(&out)]].concat());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("has no glibc release archive for amd64 (`llmgw-0.1.0-x86_64-unknown-linux-gnu.tar.gz`)"),
        "{err}"
    );
}
