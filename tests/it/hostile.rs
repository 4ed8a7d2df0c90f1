//! Hostile servers, hostile files, careless paths: each input of the
//! review that broke llmgw, with the exit code and the words it now gets.
//! One test per kind; the kinds are closed where the input enters
//! (`system::files::{read_input, check_output}`, `strict_json`, `text`,
//! `recipe::{check_version, check_http_url}`, the HTTP client's budget).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
use llmgw_sim::publisher::FakeServer;
use llmgw_sim::truth::embedded_catalog;

fn llmgw() -> Command {
    Command::cargo_bin("llmgw").unwrap()
}

/// Runs llmgw; (exit code, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    let out = llmgw().args(args).output().unwrap();
    let s = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    (out.status.code().unwrap_or(-1), s(out.stdout), s(out.stderr))
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn v100() -> String {
    super::host_path("v100.json").display().to_string()
}

fn replay() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/discover/dgx-h100").display().to_string()
}

/// 1 and 2: an output path is a regular file or nothing yet; a link is
/// written through; a file keeps its mode; a bad path is exit 2 naming it.
#[test]
fn outputs_never_destroy_what_is_at_the_path() {
    let (code, _, err) = run(&["matrix", "--expected", "/dev/null", "--update"]);
    assert_eq!(
        (code, err.trim()),
        (2, "llmgw: error: --expected `/dev/null` is a device; only a regular file is replaced")
    );
    assert!(std::os::unix::fs::FileTypeExt::is_char_device(&Path::new("/dev/null").metadata().unwrap().file_type()));

    let t = tempfile::tempdir().unwrap();
    let real = t.path().join("real.json");
    let link = t.path().join("link.json");
    std::fs::write(&real, "{}").unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let (code, _, err) = run(&["discover", "--replay", &replay(), "--output", p(&link)]);
    assert_eq!(code, 0, "{err}");
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink(), "the link stays a link");
    assert!(std::fs::read_to_string(&real).unwrap().contains("H100"), "written through it");
    assert_eq!(real.metadata().unwrap().permissions().mode() & 0o777, 0o600, "the file's mode is kept");
    let new = t.path().join("new.json");
    assert_eq!(run(&["discover", "--replay", &replay(), "--output", p(&new)]).0, 0);
    assert_eq!(new.metadata().unwrap().permissions().mode() & 0o777, 0o644, "a new file is 0644");
    let (code, out, _) = run(&["discover", "--replay", &replay(), "--output", "-"]);
    assert!(code == 0 && out.contains("\"name\""), "- is standard output");

    let (code, _, err) = run(&["discover", "--replay", &replay(), "--output", "/nonexistent/d/x.json"]);
    assert_eq!(code, 2);
    assert_eq!(
        err.trim(),
        "llmgw: error: --output `/nonexistent/d/x.json` is in `/nonexistent/d`, which is not an existing directory"
    );
    let (code, _, err) = run(&["discover", "--replay", &replay(), "--output", p(t.path())]);
    assert_eq!(code, 2);
    let said = format!("llmgw: error: --output `{}` is a directory; only a regular file is replaced", p(t.path()));
    assert_eq!(err.trim(), said, "the path given, never a temporary beside it");
    let (code, _, err) = run(&["matrix", "--expected", p(t.path()), "--update"]);
    assert_eq!(code, 2, "{err}");
    let dangling = t.path().join("dangling.json");
    std::os::unix::fs::symlink(t.path().join("nowhere"), &dangling).unwrap();
    let (code, _, err) = run(&["discover", "--replay", &replay(), "--output", p(&dangling)]);
    assert_eq!((code, err.contains("is a symbolic link to nothing")), (2, true), "{err}");
}

/// 4: input files are regular files of a bounded size (or `-`); never a
/// device that never ends, nor a FIFO that waits for ever.
#[test]
fn input_files_are_regular_and_bounded() {
    let t = tempfile::tempdir().unwrap();
    let fifo = t.path().join("fifo.json");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let big = t.path().join("big.json");
    std::fs::write(&big, vec![b' '; 20 << 20]).unwrap();
    let v100 = v100();
    for (flag, lead) in [
        ("--host", vec!["simulate"]),
        ("--wants", vec!["simulate", "--host", &v100]),
        ("--scenario", vec!["simulate", "--host", &v100]),
        ("--offline-sha256", vec!["simulate", "--host", &v100, "--offline-base", "http://m/x"]),
    ] {
        for (path, says) in [
            ("/dev/zero", "is a device, not a regular file"),
            (p(&fifo), "is a FIFO, not a regular file"),
            (p(t.path()), "is a directory, not a regular file"),
            (p(&big), "bytes, more than"),
        ] {
            let mut args = lead.clone();
            args.extend([flag, path]);
            let (code, _, err) = run(&args);
            assert_eq!(code, 2, "{flag} {path}: {err}");
            assert!(err.contains(says) && err.contains(path), "{flag} {path}: {err}");
        }
    }
    let (code, _, err) = run(&["agent", "--wants", "/dev/zero", "--host", &v100, "--once"]);
    assert_eq!((code, err.contains("is a device")), (2, true), "{err}");
    // A bundle to import is a directory or a tar file: a FIFO never holds the import.
    let mirror = t.path().join("mirror");
    for (path, says) in [("/dev/zero", "is a device"), (p(&fifo), "is a FIFO")] {
        let (code, _, err) =
            run(&["bundle", "import", path, "--manifest-sha256", &"a".repeat(64), "--mirror", p(&mirror)]);
        assert_eq!(code, 2, "{path}: {err}");
        assert!(err.contains(says) && err.contains("not a directory or a tar file"), "{path}: {err}");
    }
    assert!(!mirror.exists(), "no mirror made");
    let host = std::fs::read(super::host_path("v100.json")).unwrap();
    let out = llmgw()
        .args(["plan", "--host", "-", "--want", "uv@0.12.20"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(&host)?;
            c.wait_with_output()
        })
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("host: v100"), "--host - reads standard input");
}

/// 9: a version is letters, digits and dots, at most 64 bytes, from a flag
/// or a file.
#[test]
fn versions_with_white_space_or_no_end_are_refused() {
    let v100 = v100();
    let (code, _, err) = run(&["simulate", "--host", &v100, "--want", "uv@0.12.20\n"]);
    assert_eq!(code, 2);
    assert!(err.contains("holds `\\u{000a}`; versions are letters, digits and dots"), "{err}");
    let long = format!("llama.cpp@b{}", "1".repeat(5000));
    let (code, _, err) = run(&["simulate", "--host", &v100, "--want", &long]);
    assert_eq!((code, err.contains("5001 bytes long; versions are at most 64")), (2, true), "{err}");
    let t = tempfile::tempdir().unwrap();
    let wants = t.path().join("w.json");
    std::fs::write(&wants, r#"{"wants": [{"engine": "uv", "version": "0.12.20\n"}]}"#).unwrap();
    let (code, _, err) = run(&["simulate", "--host", &v100, "--wants", p(&wants)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("wants[0].version") || err.contains("control character"), "{err}");
}

/// 10: strings from files and file names follow one rule where they enter,
/// and are escaped for where they are written.
#[test]
fn names_from_files_are_checked_and_escaped() {
    let t = tempfile::tempdir().unwrap();
    let hosts = t.path().join("hosts");
    std::fs::create_dir(&hosts).unwrap();
    let text = std::fs::read_to_string(super::host_path("v100.json")).unwrap();
    std::fs::write(hosts.join("a|b.json"), &text).unwrap();
    let wants = Path::new(env!("CARGO_MANIFEST_DIR")).join("matrix/wants.json");
    let (code, out, err) = run(&["matrix", "--hosts", p(&hosts), "--format", "markdown", "--wants", p(&wants)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("| a\\|b "), "a `|` in a host id is escaped in a markdown cell: {out}");
    for bad in ["e\u{1b}[31mred.json", "nl\nx.json"] {
        std::fs::remove_dir_all(&hosts).unwrap();
        std::fs::create_dir(&hosts).unwrap();
        std::fs::write(hosts.join(bad), &text).unwrap();
        let (code, _, err) = run(&["matrix", "--hosts", p(&hosts)]);
        assert_eq!(code, 2, "{bad:?}: {err}");
        assert!(err.contains("holds a control character") && !err.contains('\u{1b}'), "{bad:?}: {err}");
    }
    for (from, to, says) in [
        ("Tesla V100-SXM2-16GB", "Tesla V100\u{FFFE}", "nvidia.gpus[0].name: the text holds a Unicode noncharacter"),
        ("\"v100-ubuntu22.04-driver535\"", "\"v100\u{202E}evil\"", "name: the text holds a bidirectional control"),
    ] {
        let host = t.path().join("bad.json");
        std::fs::write(&host, text.replace(from, to)).unwrap();
        let (code, _, err) = run(&["simulate", "--host", p(&host)]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(says), "{err}");
    }
}

/// 11: a key given twice is refused, naming it and its JSON path, in every
/// kind of file.
#[test]
fn keys_given_twice_are_refused_naming_them() {
    let t = tempfile::tempdir().unwrap();
    let v100 = v100();
    let wants = t.path().join("w.json");
    std::fs::write(
        &wants,
        r#"{"wants": [{"engine": "uv", "version": "0.12.20"}], "wants": [{"engine": "llama.cpp", "version": "b10850"}]}"#,
    )
    .unwrap();
    let (code, _, err) = run(&["simulate", "--host", &v100, "--wants", p(&wants)]);
    assert_eq!(code, 2);
    assert!(err.contains("wants: the key `wants` is given twice"), "{err}");
    let hex = "ab".repeat(32);
    let sums = t.path().join("sums.json");
    std::fs::write(&sums, format!(r#"{{"a.tar.gz": "{hex}", "a.tar.gz": "{}"}}"#, "cd".repeat(32))).unwrap();
    let (code, _, err) = run(&[
        "simulate",
        "--host",
        &v100,
        "--want",
        "uv@0.12.20",
        "--offline-base",
        "http://m/x",
        "--offline-sha256",
        p(&sums),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("a.tar.gz: the key `a.tar.gz` is given twice"), "{err}");
    let host = t.path().join("h.json");
    let text = std::fs::read_to_string(super::host_path("v100.json")).unwrap();
    std::fs::write(&host, text.replacen("\"disk_free_gb\"", "\"disk_free_gb\": 1, \"disk_free_gb\"", 1)).unwrap();
    let (code, _, err) = run(&["simulate", "--host", p(&host)]);
    assert_eq!(code, 2);
    assert!(err.contains("disk_free_gb: the key `disk_free_gb` is given twice"), "{err}");
}

/// 12 and 13: a flag's value out of range, or a URL that cannot be one, is
/// refused when the command line is parsed.
#[test]
fn flags_are_checked_when_parsed() {
    for bad in ["0", "9223372036854775807", "18446744073709551616"] {
        let (code, _, err) = run(&["provision", "--want", "uv@0.12.20", "--dry-run", "--check-timeout", bad]);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains("--check-timeout"), "{err}");
    }
    for (url, says) in [
        ("http://h:99999/x", "invalid port number"),
        ("http://[::1/x", "invalid IPv6 address"),
        ("http://%zz/", "is not a valid URL"),
    ] {
        let (code, _, err) = run(&["simulate", "--host", &v100(), "--offline-base", url, "--offline-sha256", "x"]);
        assert_eq!(code, 2, "{url}: {err}");
        assert!(err.contains(says), "{url}: {err}");
        let (code, _, err) = run(&["provision", "--want", "uv@0.12.20", "--github-api", url, "--dry-run"]);
        assert_eq!((code, err.contains(says)), (2, true), "{url}: {err}");
    }
}

/// 13: a publisher whose download URL is not http(s) is refused when its
/// release is read, and not asked five times.
#[test]
fn a_publishers_download_url_that_cannot_be_fetched_is_refused_at_once() {
    let server = wiremock_server(serde_json::json!({
        "tag_name": "0.12.20",
        "assets": [{"name": "uv.tar.gz", "size": 1, "digest": null, "browser_download_url": "file:///etc/passwd"}]
    }));
    let http = llmgw_system::http::Http::loopback(5, 5).unwrap();
    let mut sys = llmgw_system::real::RealSystem::new(http, Box::new(llmgw_system::real::Silent));
    let e = llmgw_core::release::fetch(&mut sys, &server.1, "astral-sh/uv", "0.12.20").unwrap_err().to_string();
    assert_eq!(
        e,
        "release `0.12.20` of astral-sh/uv: the answer is not a GitHub release: \
         assets[0].browser_download_url: `file:///etc/passwd` has the scheme `file`; only http:// and https:// are supported"
    );
    let asked = server.0.block_on(server.2.received_requests()).unwrap_or_default().len();
    assert_eq!(asked, 1, "asked once: a URL that cannot be fetched is not worth asking again");
}

/// A wiremock server answering every release by tag with `json`; (the
/// server, its base URL). Runs on its own runtime so that blocking code
/// can call it.
fn wiremock_server(json: serde_json::Value) -> (tokio::runtime::Runtime, String, wiremock::MockServer) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let server = rt.block_on(async {
        let s = wiremock::MockServer::start().await;
        wiremock::Mock::given(wiremock::matchers::path_regex("^/repos/.*/releases/tags/.*$"))
            .respond_with(wiremock::ResponseTemplate::new(200).set_body_json(json))
            .mount(&s)
            .await;
        s
    });
    let base = server.uri();
    (rt, base, server)
}

/// 6, 7 and 15: a bundle import is all or nothing, never through a link,
/// and an empty manifest vouches for nothing.
#[test]
fn bundle_imports_are_all_or_nothing_and_stay_inside_the_mirror() {
    let t = tempfile::tempdir().unwrap();
    let publisher = FakeServer::start(embedded_catalog()).unwrap();
    let bundle = t.path().join("bundle");
    let api = publisher.base_url();
    let (code, out, err) = run(&[
        "bundle",
        "create",
        "--github-api",
        &api,
        "--want",
        "uv@0.12.20",
        "--arch",
        "amd64",
        "--out",
        p(&bundle),
    ]);
    assert_eq!(code, 0, "{err}");
    let sha = out.lines().find_map(|l| l.strip_prefix("manifest sha256: ")).unwrap().to_string();
    // A symbolic link to a directory inside the mirror: refused, nothing placed outside.
    let mirror = t.path().join("mirror");
    let elsewhere = t.path().join("elsewhere");
    std::fs::create_dir_all(&mirror).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink("../elsewhere", mirror.join("uv")).unwrap();
    let (code, _, err) = run(&["bundle", "import", p(&bundle), "--manifest-sha256", &sha, "--mirror", p(&mirror)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("the mirror's `uv` is a symbolic link"), "{err}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "nothing placed through the link");
    // An empty manifest: refused, as --offline-sha256 refuses it.
    let empty = t.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let manifest = r#"{"format": 1, "files": []}"#;
    std::fs::write(empty.join("manifest.json"), manifest).unwrap();
    let sha_empty = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(manifest.as_bytes()));
    let fresh = t.path().join("fresh");
    let (code, _, err) = run(&["bundle", "import", p(&empty), "--manifest-sha256", &sha_empty, "--mirror", p(&fresh)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("files: names no file; a manifest vouches for at least one"), "{err}");
    let (code, _, err) = run(&[
        "simulate",
        "--host",
        &v100(),
        "--want",
        "uv@0.12.20",
        "--offline-base",
        "http://m/x",
        "--offline-sha256",
        p(&empty.join("manifest.json")),
    ]);
    assert_eq!((code, err.contains("files: names no file")), (2, true), "{err}");
}

/// 8: a record's temporary a kill left is removed by the next run.
#[test]
fn what_a_kill_left_is_removed_by_the_next_run() {
    let t = tempfile::tempdir().unwrap();
    let engines = t.path().join("engines");
    let mut sim = llmgw_sim::Simulation::start(super::host("v100.json")).unwrap();
    sim.set_engines_dir(engines.clone());
    let want = [llmgw_core::recipe::Want::parse("uv@0.12.20").unwrap()];
    sim.converge(&want);
    let left = engines.join("uv").join(".llmgw-tmp-Ab12Cd");
    std::fs::write(&left, "{").unwrap();
    sim.converge(&want);
    assert!(!left.exists(), "the temporary of a record a kill left is removed");
    assert!(engines.join("uv/0.12.20-x86_64.json").is_file(), "the install stays");
}

/// 8: SIGTERM to a simulation removes its scratch directories.
#[test]
fn a_stopped_simulation_leaves_no_scratch() {
    let child = llmgw().args(["matrix"]).stdout(std::process::Stdio::null()).spawn().unwrap();
    let pid = child.id();
    let scratch_of = |pid: u32| -> Vec<String> {
        let base = std::env::var_os("TMPDIR").map_or_else(|| "/dev/shm".into(), std::path::PathBuf::from);
        std::fs::read_dir(base)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with(&format!("llmgw-sim-{pid}-")))
                    .collect()
            })
            .unwrap_or_default()
    };
    let seen = (0..2000).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(2));
        !scratch_of(pid).is_empty()
    });
    assert!(seen, "the matrix made its scratch");
    send(pid, "TERM");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "it ends as SIGTERM would have it end");
    assert!(scratch_of(pid).is_empty(), "its scratch is gone");
}

fn send(pid: u32, signal: &str) {
    Command::new("kill").args([&format!("-{signal}"), &pid.to_string()]).status().unwrap();
}

/// A machine without CA certificates (a minimal container, a chroot) still
/// simulates: the fake server is plain HTTP on loopback.
#[test]
fn a_machine_without_ca_certificates_still_simulates() {
    let out = llmgw()
        .args(["simulate", "--host", "v100", "--want", "uv@0.13.9"])
        .env("SSL_CERT_FILE", "/nonexistent/ca.pem")
        .env("SSL_CERT_DIR", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("uv@0.13.9: ready x86_64"));
}

/// A control character in a path the user gave is escaped in the error, as
/// in every report: no escape sequence reaches the terminal.
#[test]
fn an_error_naming_a_path_with_controls_escapes_them() {
    let (code, _, err) = run(&["simulate", "--host", "esc\u{1b}[31mred.json"]);
    assert_eq!(code, 2);
    assert!(!err.contains('\u{1b}'), "{err}");
    assert!(err.contains("esc\\u{001b}[31mred.json"), "{err}");
}

/// An engines directory that is something else says what it is, and nothing is made there.
#[test]
fn an_engines_dir_that_is_not_a_directory_says_what_it_is() {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("afile");
    std::fs::write(&file, "x").unwrap();
    let dangling = t.path().join("dangling");
    std::os::unix::fs::symlink(t.path().join("nothing"), &dangling).unwrap();
    for (path, is) in
        [(p(&file), "a regular file"), (p(&dangling), "a symbolic link to nothing"), ("/dev/null", "a device")]
    {
        let (code, _, err) =
            run(&["provision", "--want", "uv@0.13.9", "--engines-dir", path, "--github-api", "http://127.0.0.1:1"]);
        assert_eq!(code, 2, "{path}: {err}");
        assert!(err.contains(&format!("it is {is}, not a directory")), "{path}: {err}");
    }
    assert!(!t.path().join("nothing").exists());
}
