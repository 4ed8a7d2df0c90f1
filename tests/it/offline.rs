//! Offline sites end to end: `builds`, a bundle created from the fake
//! publisher, imported into a mirror, and engines installed from that mirror
//! with the publisher's routes disabled and not one request reaching them;
//! and every refusal of a bad bundle, with the mirror unchanged.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use llmgw_core::converge::State;
use llmgw_core::recipe::Want;
use llmgw_sim::Simulation;
use llmgw_sim::publisher::FakeServer;
use llmgw_sim::truth::embedded_catalog;
use llmgw_system::offline::bundle::Manifest;
use sha2::{Digest, Sha256};

fn llmgw() -> Command {
    Command::cargo_bin("llmgw").unwrap()
}

/// Runs llmgw; (exit code, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    let out = llmgw().args(args).output().unwrap();
    let s = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.code().unwrap_or(-1), s(out.stdout), s(out.stderr))
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Every file under `dir` with its sha256: the tree, byte for byte.
fn tree(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(listing) = std::fs::read_dir(&d) else { continue };
        for e in listing.flatten() {
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
            } else {
                let rel = e.path().strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.insert(rel, hex::encode(Sha256::digest(std::fs::read(e.path()).unwrap())));
            }
        }
    }
    out
}

/// A bundle made by `llmgw bundle create` from the fake publisher; its
/// manifest sha256 as printed.
fn create(publisher: &FakeServer, wants: &[&str], arches: &[&str], out: &Path) -> String {
    let mut args = vec!["bundle", "create", "--github-api"];
    let api = publisher.base_url();
    args.push(&api);
    for w in wants {
        args.extend(["--want", w]);
    }
    for a in arches {
        args.extend(["--arch", a]);
    }
    args.extend(["--out", p(out)]);
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}");
    let printed = stdout.lines().find_map(|l| l.strip_prefix("manifest sha256: ")).expect(&stdout).to_string();
    let beside = std::fs::read_to_string(llmgw_system::offline::bundle::sha256_file_of(out)).unwrap();
    assert_eq!(beside.trim(), printed, "the sha256 printed is the one written beside the bundle");
    printed
}

fn import(bundle: &Path, sha: &str, mirror: &Path) -> (i32, String, String) {
    run(&["bundle", "import", p(bundle), "--manifest-sha256", sha, "--mirror", p(mirror)])
}

fn manifest_of(dir: &Path) -> Manifest {
    Manifest::from_json(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap()
}

#[test]
fn builds_lists_every_build_with_its_assets_and_refuses_python_engines() {
    let (code, out, _) = run(&["builds", "--engine", "llama.cpp", "--version", "b11459", "--arch", "arm64"]);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "llama.cpp b11459 for arm64: 3 builds\n\
         \x20 (derived from the recipe's rules, not checked against the publisher: whether the release exists and \
         has these assets, `bundle create` asks it)\n\
         \x20 cpu        llama-b11459-bin-ubuntu-arm64.tar.gz\n\
         \x20 cuda-13.4  llama-b11459-bin-ubuntu-cuda-13.4-arm64.tar.gz, cudart-llama-b11459-bin-ubuntu-cuda-13.4-arm64.tar.gz\n\
         \x20 vulkan     llama-b11459-bin-ubuntu-vulkan-arm64.tar.gz\n"
    );
    let (code, out, _) =
        run(&["builds", "--engine", "llama.cpp", "--version", "b11459", "--arch", "amd64", "--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let variants: Vec<&str> = v["builds"].as_array().unwrap().iter().map(|b| b["variant"].as_str().unwrap()).collect();
    assert_eq!(variants, ["cpu", "cuda-13.4", "cuda-12.8", "vulkan"]);
    assert_eq!(v["checked_against_release"], false, "a list from the recipe's rules says so");
    assert_eq!(v["builds"][1]["assets"].as_array().unwrap().len(), 2, "the build and its CUDA runtime");
    let (code, _, err) = run(&["builds", "--engine", "ollama", "--version", "0.1.0", "--arch", "amd64"]);
    assert_eq!(code, 2);
    assert!(err.contains("--engine: unknown engine `ollama`"), "{err}");
    for engine in ["vllm", "sglang"] {
        let (code, _, err) = run(&["builds", "--engine", engine, "--version", "0.5.4", "--arch", "amd64"]);
        assert_eq!(code, 2);
        assert!(err.contains(&format!("{engine} is installed from PyPI")), "{err}");
        assert!(err.contains("which an offline bundle does not carry"), "{err}");
    }
}

#[test]
fn round_trip_create_import_and_install_offline_without_a_request_to_the_publisher() {
    let t = tempfile::tempdir().unwrap();
    let publisher = FakeServer::start(embedded_catalog()).unwrap();
    let bundle = t.path().join("llmgw-bundle.tar");
    let sha = create(&publisher, &["llama.cpp@b11459", "uv@0.12.20"], &["amd64", "arm64"], &bundle);

    // The tar holds the manifest and the assets, and not the manifest's sha256.
    let mut names = Vec::new();
    for e in tar::Archive::new(std::fs::File::open(&bundle).unwrap()).entries().unwrap() {
        names.push(e.unwrap().path().unwrap().to_string_lossy().into_owned());
    }
    assert_eq!(names[0], "manifest.json");
    assert_eq!(names.len(), 1 + 12, "{names:?}");
    assert!(!names.iter().any(|n| n.contains("sha256")));
    // The same bundle is the same bytes.
    let again = t.path().join("again.tar");
    assert_eq!(create(&publisher, &["uv@0.12.20", "llama.cpp@b11459"], &["arm64", "amd64"], &again), sha);
    assert_eq!(std::fs::read(&bundle).unwrap(), std::fs::read(&again).unwrap());

    let mirror = t.path().join("mirror");
    let (code, out, err) = import(&bundle, &sha, &mirror);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("imported 12 files into the mirror"), "{out}");
    let imported = tree(&mirror);
    assert!(imported.contains_key("llama.cpp/b11459/llama-b11459-bin-ubuntu-cuda-13.4-arm64.tar.gz"), "{imported:?}");
    assert!(imported.contains_key("uv/0.12.20/uv-x86_64-unknown-linux-gnu.tar.gz"));
    // Idempotent: a second import places nothing and says so.
    let (code, out, _) = import(&bundle, &sha, &mirror);
    assert_eq!(code, 0);
    assert!(out.starts_with("nothing to import: the mirror"), "{out}");
    assert_eq!(tree(&mirror), imported);
    let leftovers: Vec<_> = std::fs::read_dir(t.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".llmgw"))
        .collect();
    assert!(leftovers.is_empty(), "staging left behind: {leftovers:?}");

    // The control plane's checksums: the manifest's, checked on import.
    let sums = {
        let dir = t.path().join("m");
        let mut tar = tar::Archive::new(std::fs::File::open(&bundle).unwrap());
        tar.unpack(&dir).unwrap();
        manifest_of(&dir).sha256_by_asset()
    };
    // The site's server: the mirror served, the publisher's routes disabled.
    let site = FakeServer::start(embedded_catalog()).unwrap();
    site.serve_mirror(&mirror).unwrap();
    site.disable_publisher();
    for host in
        ["h100-ubuntu24.04-driver580.json", "v100.json", "nogpu-debian12.json", "gh200-ubuntu24.04-driver580.json"]
    {
        let wants: Vec<Want> = ["llama.cpp@b11459", "uv@0.12.20"]
            .iter()
            .map(|w| Want::parse(w).unwrap().offline(&site.mirror_url(), sums.clone()).unwrap())
            .collect();
        let mut offline = Simulation::start(super::host(host)).unwrap();
        let got = offline.converge(&wants);
        let online = Simulation::start(super::host(host))
            .unwrap()
            .converge(&[Want::parse("llama.cpp@b11459").unwrap(), Want::parse("uv@0.12.20").unwrap()]);
        for (off, on) in got.engines.iter().zip(&online.engines) {
            assert_eq!((off.state, &off.variant), (on.state, &on.variant), "{host}: {off:?}");
        }
        assert_eq!(got.engines[0].state, State::Ready, "{host}: {:?}", got.engines[0]);
        assert!(
            offline.server().requests().is_empty(),
            "{host}: the publisher was asked: {:?}",
            offline.server().requests()
        );
    }
    assert!(site.publisher_requests().is_empty(), "{:?}", site.publisher_requests());
    assert!(site.requests().len() >= 4, "the mirror served the installs: {:?}", site.requests());
}

/// A directory bundle of uv for amd64, its manifest sha256, and a mirror
/// already holding a llama.cpp import.
fn bundle_and_mirror(t: &Path) -> (PathBuf, String, PathBuf) {
    let publisher = FakeServer::start(embedded_catalog()).unwrap();
    let mirror = t.join("mirror");
    let first = t.join("first");
    let sha = create(&publisher, &["llama.cpp@b11459:cpu"], &["amd64"], &first);
    assert_eq!(import(&first, &sha, &mirror).0, 0);
    let bundle = t.join("bundle");
    let sha = create(&publisher, &["uv@0.12.20", "llama.cpp@b11459:vulkan"], &["amd64"], &bundle);
    (bundle, sha, mirror)
}

#[test]
fn a_bad_bundle_is_refused_naming_the_file_and_the_mirror_is_unchanged() {
    type Break = fn(&Path) -> String;
    let cases: [(&str, Break, &str); 4] = [
        (
            "missing",
            |b| {
                std::fs::remove_file(b.join("uv/0.12.20/uv-x86_64-unknown-linux-gnu.tar.gz")).unwrap();
                String::new()
            },
            "`uv/0.12.20/uv-x86_64-unknown-linux-gnu.tar.gz` is in the manifest and missing from the bundle",
        ),
        (
            "extra",
            |b| {
                std::fs::write(b.join("uv/0.12.20/uv-riscv64.tar.gz"), b"x").unwrap();
                String::new()
            },
            "`uv/0.12.20/uv-riscv64.tar.gz` is in the bundle and not in its manifest",
        ),
        (
            "changed byte",
            |b| {
                let f = b.join("llama.cpp/b11459/llama-b11459-bin-ubuntu-vulkan-x64.tar.gz");
                let mut bytes = std::fs::read(&f).unwrap();
                bytes[100] ^= 1;
                std::fs::write(&f, bytes).unwrap();
                String::new()
            },
            "`llama.cpp/b11459/llama-b11459-bin-ubuntu-vulkan-x64.tar.gz` has sha256 ",
        ),
        (
            "unknown engine",
            |b| {
                let m = b.join("manifest.json");
                let text = std::fs::read_to_string(&m).unwrap().replacen("\"uv\"", "\"ollama\"", 1);
                std::fs::write(&m, &text).unwrap();
                hex::encode(Sha256::digest(text.as_bytes())) // a manifest vouched for, naming an unknown engine
            },
            "manifest.json: files[",
        ),
    ];
    for (what, break_it, says) in cases {
        let t = tempfile::tempdir().unwrap();
        let (bundle, sha, mirror) = bundle_and_mirror(t.path());
        let before = tree(&mirror);
        let new_sha = break_it(&bundle);
        let sha = if new_sha.is_empty() { sha } else { new_sha };
        // The same bundle as a tar.
        let tar_path = t.path().join("broken.tar");
        let mut b = tar::Builder::new(std::fs::File::create(&tar_path).unwrap());
        b.append_dir_all(".", &bundle).unwrap();
        b.into_inner().unwrap();
        for form in [&bundle, &tar_path] {
            let (code, out, err) = import(form, &sha, &mirror);
            assert_eq!(code, 2, "{what}: {out}{err}");
            assert!(err.contains(says), "{what}: {err}");
            assert!(err.contains("nothing was imported"), "{what}: {err}");
            assert_eq!(err.lines().count(), 1, "{what}: one line: {err}");
            assert_eq!(tree(&mirror), before, "{what}: the mirror changed");
        }
    }
}

#[test]
fn a_manifest_that_is_not_the_one_given_is_refused_and_nothing_imported() {
    let t = tempfile::tempdir().unwrap();
    let (bundle, sha, mirror) = bundle_and_mirror(t.path());
    let before = tree(&mirror);
    let wrong = format!("{}{}", if sha.starts_with('0') { "1" } else { "0" }, &sha[1..]);
    let (code, _, err) = import(&bundle, &wrong, &mirror);
    assert_eq!(code, 2);
    assert!(
        err.contains(&format!("manifest.json has sha256 {sha}, not the {wrong} given with --manifest-sha256")),
        "{err}"
    );
    let (code, _, err) = import(&bundle, "abc", &mirror);
    assert_eq!(code, 2);
    assert!(err.contains("--manifest-sha256 `abc` is not 64 hex digits"), "{err}");
    assert_eq!(tree(&mirror), before);
    // And the good one goes in, beside what the mirror held.
    let (code, out, err) = import(&bundle, &sha, &mirror);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("imported 2 files"), "{out}");
    assert_eq!(tree(&mirror).len(), before.len() + 2);
}

#[test]
fn a_tar_entry_outside_the_mirror_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let bad = t.path().join("bad.tar");
    let mut b = tar::Builder::new(std::fs::File::create(&bad).unwrap());
    let mut h = tar::Header::new_gnu();
    h.set_size(1);
    h.set_mode(0o644);
    h.set_entry_type(tar::EntryType::Regular);
    // `append_data` refuses `..`; write the name into the header directly.
    h.as_gnu_mut().unwrap().name[..10].copy_from_slice(b"../evil.sh");
    h.set_cksum();
    b.append(&h, &b"x"[..]).unwrap();
    b.finish().unwrap();
    drop(b);
    let mirror = t.path().join("mirror");
    let (code, _, err) = import(&bad, &"0".repeat(64), &mirror);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("`../evil.sh` would land outside the mirror"), "{err}");
    assert!(!mirror.exists() && !t.path().join("evil.sh").exists());
}

#[test]
fn bundle_create_refuses_python_engines_and_an_existing_out_writing_nothing() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("b.tar");
    let (code, _, err) = run(&["bundle", "create", "--want", "vllm@0.20.1", "--arch", "amd64", "--out", p(&out)]);
    assert_eq!(code, 2);
    assert!(err.contains("vllm is installed from PyPI") && err.contains("does not carry"), "{err}");
    std::fs::write(&out, b"").unwrap();
    let (code, _, err) = run(&["bundle", "create", "--want", "uv@0.12.20", "--arch", "amd64", "--out", p(&out)]);
    assert_eq!(code, 2);
    assert!(err.contains("exists already"), "{err}");
    assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 1, "nothing written");
}

/// A mirror of uv and llama.cpp for amd64 served by a fake server with the
/// publisher disabled; the manifest's checksums.
fn site(t: &Path) -> (FakeServer, BTreeMap<String, String>) {
    let publisher = FakeServer::start(embedded_catalog()).unwrap();
    let bundle = t.join("bundle");
    let sha = create(&publisher, &["uv@0.12.20", "llama.cpp@b11459"], &["amd64"], &bundle);
    let mirror = t.join("mirror");
    assert_eq!(import(&bundle, &sha, &mirror).0, 0);
    let site = FakeServer::start(embedded_catalog()).unwrap();
    site.serve_mirror(&mirror).unwrap();
    site.disable_publisher();
    (site, manifest_of(&bundle).sha256_by_asset())
}

#[test]
fn an_asset_without_the_control_planes_checksum_is_refused_before_any_download() {
    let t = tempfile::tempdir().unwrap();
    let (site, mut sums) = site(t.path());
    sums.retain(|name, _| !name.starts_with("cudart-"));
    let want = Want::parse("llama.cpp@b11459").unwrap().offline(&site.mirror_url(), sums).unwrap();
    let mut sim = Simulation::start(super::host("h100-ubuntu24.04-driver580.json")).unwrap();
    let s = sim.converge(&[want]).engines.remove(0);
    // The CUDA build lacks its runtime's checksum: refused unfetched; Vulkan installs.
    assert_eq!((s.state, s.variant.as_deref()), (State::Ready, Some("vulkan")), "{s:?}");
    assert_eq!(s.attempts[0].variant, "cuda-12.8");
    assert!(s.attempts[0].reason.contains("offline_sha256 holds none for it"), "{}", s.attempts[0].reason);
    let fetched: Vec<_> = site.requests().into_iter().map(|(_, p)| p).collect();
    assert!(fetched.iter().all(|p| p.contains("vulkan")), "only the vulkan archive was downloaded: {fetched:?}");
    assert!(sim.server().requests().is_empty());
}

#[test]
fn an_offline_python_engine_is_unsupported_in_words_and_asks_nothing() {
    let t = tempfile::tempdir().unwrap();
    let (site, sums) = site(t.path());
    let want = Want::parse("vllm@0.20.1").unwrap().offline(&site.mirror_url(), sums).unwrap();
    let mut sim = Simulation::start(super::host("h100-ubuntu24.04-driver580.json")).unwrap();
    let s = sim.converge(&[want]).engines.remove(0);
    assert_eq!(s.state, State::Unsupported);
    assert!(s.detail.contains("vllm is installed from PyPI, which an offline mirror does not carry"), "{}", s.detail);
    assert!(sim.server().requests().is_empty() && site.requests().is_empty());
}

#[test]
fn simulate_takes_offline_wants_from_flags_and_from_a_wants_file() {
    let t = tempfile::tempdir().unwrap();
    let (site, sums) = site(t.path());
    let host = super::host_path("v100.json");
    let sums_file = t.path().join("sums.json");
    std::fs::write(&sums_file, serde_json::to_vec(&sums).unwrap()).unwrap();
    let (code, out, err) = run(&[
        "simulate",
        "--host",
        p(&host),
        "--want",
        "llama.cpp@b11459",
        "--offline-base",
        &site.mirror_url(),
        "--offline-sha256",
        p(&sums_file),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("llama.cpp@b11459: ready vulkan"), "{out}");

    let wants = serde_json::json!({"wants": [
        {"engine": "uv", "version": "0.12.20", "offline_base": site.mirror_url(), "offline_sha256": sums},
    ]});
    let wants_file = t.path().join("wants.json");
    std::fs::write(&wants_file, wants.to_string()).unwrap();
    let (code, out, err) = run(&["simulate", "--host", p(&host), "--wants", p(&wants_file)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("uv@0.12.20: ready x86_64"), "{out}");
    assert!(site.publisher_requests().is_empty(), "{:?}", site.publisher_requests());

    // Bad offline input: one line naming where.
    let bad = serde_json::json!({"wants": [
        {"engine": "uv", "version": "0.12.20", "offline_base": site.mirror_url(), "offline_sha256": {"a.tar.gz": "00"}},
    ]});
    std::fs::write(&wants_file, bad.to_string()).unwrap();
    let (code, _, err) = run(&["simulate", "--host", p(&host), "--wants", p(&wants_file)]);
    assert_eq!(code, 2);
    assert!(err.contains("wants[0].offline_sha256.a.tar.gz: `00` is not a sha256"), "{err}");
    let (code, _, err) =
        run(&["simulate", "--host", p(&host), "--want", "uv@0.12.20", "--offline-base", "http://mirror"]);
    assert_eq!(code, 2);
    assert!(err.contains("--offline-sha256"), "{err}");
}

#[test]
fn the_matrix_offline_rows_show_the_same_variants_as_online() {
    use llmgw_sim::matrix::{ExpectedFile, OFFLINE_HOSTS, offline_id, run_offline};
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("matrix/expected.json")).unwrap();
    let golden = ExpectedFile::from_json(&text).unwrap();
    let by: BTreeMap<(&str, &str), _> = golden.cells.iter().map(|c| ((c.host.as_str(), c.want.as_str()), c)).collect();
    let hosts: Vec<(String, llmgw_model::host::Host)> =
        OFFLINE_HOSTS.iter().map(|id| (id.to_string(), super::host(&format!("{id}.json")))).collect();
    let cells = run_offline(&hosts, &llmgw_sim::matrix_wants(), embedded_catalog(), None).unwrap();
    let offline_wants = llmgw_sim::matrix_wants().iter().filter(|w| !w.engine.from_pypi()).count();
    assert!(offline_wants >= 2);
    assert_eq!(cells.len(), OFFLINE_HOSTS.len() * offline_wants, "the llama.cpp and uv wants on each host");
    for c in &cells {
        let online = by[&(c.host.strip_suffix(" (offline)").unwrap(), c.want.as_str())];
        assert!(
            c.outcome().same_outcome(online),
            "{} {}: offline {:?}, online {online:?}",
            c.host,
            c.want,
            c.outcome()
        );
        assert!(c.outcome().same_outcome(by[&(c.host.as_str(), c.want.as_str())]), "the golden offline row");
    }
    assert!(cells.iter().any(|c| c.host == offline_id("nogpu-ubuntu24.04-arm64") && c.status.state == State::Ready));
    // A `latest` want, resolved for each host before the bundle, names the version it installed offline.
    let latest = cells.iter().find(|c| c.host == offline_id("nogpu-ubuntu24.04-arm64") && c.want == "llama.cpp@latest");
    let latest = latest.unwrap();
    assert_eq!((latest.status.state, latest.status.resolved.as_deref()), (State::Ready, Some("b11459")));
}

#[test]
fn a_publisher_file_that_does_not_match_its_digest_makes_no_bundle() {
    let mut catalog = embedded_catalog().clone();
    let uv = catalog.releases.iter_mut().find(|r| r.repo == "astral-sh/uv").unwrap();
    uv.assets.iter_mut().find(|a| a.name == "uv-x86_64-unknown-linux-gnu.tar.gz").unwrap().tampered = true;
    let publisher = FakeServer::start(&catalog).unwrap();
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("b.tar");
    let api = publisher.base_url();
    let (code, _, err) = run(&[
        "bundle",
        "create",
        "--github-api",
        &api,
        "--want",
        "llama.cpp@b11459:cpu",
        "--want",
        "uv@0.12.20",
        "--arch",
        "amd64",
        "--out",
        p(&out),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("uv-x86_64-unknown-linux-gnu.tar.gz: sha256 ") && err.contains("no bundle was written"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 0, "nothing written, not even staging");
}

#[test]
fn a_mirror_file_changed_after_import_is_not_installed() {
    let t = tempfile::tempdir().unwrap();
    let publisher = FakeServer::start(embedded_catalog()).unwrap();
    let bundle = t.path().join("bundle");
    let sha = create(&publisher, &["uv@0.12.20"], &["amd64"], &bundle);
    let mirror = t.path().join("mirror");
    assert_eq!(import(&bundle, &sha, &mirror).0, 0);
    let f = mirror.join("uv/0.12.20/uv-x86_64-unknown-linux-gnu.tar.gz");
    let mut bytes = std::fs::read(&f).unwrap();
    bytes[50] ^= 1;
    std::fs::write(&f, bytes).unwrap();
    let site = FakeServer::start(embedded_catalog()).unwrap();
    site.serve_mirror(&mirror).unwrap();
    site.disable_publisher();
    let want = Want::parse("uv@0.12.20").unwrap().offline(&site.mirror_url(), manifest_of(&bundle).sha256_by_asset());
    let mut sim = Simulation::start(super::host("v100.json")).unwrap();
    let s = sim.converge(&[want.unwrap()]).engines.remove(0);
    assert_eq!(s.state, State::Failed);
    assert!(s.attempts[0].reason.contains("does not match"), "{}", s.attempts[0].reason);
    assert!(sim.server().requests().is_empty() && site.publisher_requests().is_empty());
}

#[test]
fn provision_takes_the_offline_flags_and_refuses_them_half_given() {
    let host = super::host_path("v100.json");
    let (code, _, err) =
        run(&["provision", "--host", p(&host), "--want", "uv@0.12.20", "--offline-base", "http://mirror.internal"]);
    assert_eq!(code, 2);
    assert!(err.contains("--offline-sha256"), "{err}");
    let (code, _, err) = run(&[
        "provision",
        "--host",
        p(&host),
        "--want",
        "uv@0.12.20",
        "--offline-base",
        "http://mirror.internal",
        "--offline-sha256",
        "/nonexistent/sums.json",
        "--dry-run",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--offline-sha256: cannot read checksums file `/nonexistent/sums.json`: it does not exist"),
        "{err}"
    );
}

#[test]
fn an_install_already_there_answers_an_offline_want_only_with_the_control_planes_digests() {
    let t = tempfile::tempdir().unwrap();
    let (site, sums) = site(t.path());
    let host = super::host_path("v100.json");
    let wants_file = t.path().join("wants.json");
    let uv = "uv-x86_64-unknown-linux-gnu.tar.gz";
    let wrong = serde_json::json!({uv: "2".repeat(64)});
    let wants = serde_json::json!({"wants": [
        {"engine": "uv", "version": "0.12.20"},
        {"engine": "uv", "version": "0.12.20", "offline_base": site.mirror_url(), "offline_sha256": wrong},
    ]});
    std::fs::write(&wants_file, wants.to_string()).unwrap();
    let (code, out, err) = run(&["simulate", "--host", p(&host), "--wants", p(&wants_file)]);
    assert_ne!(code, 0, "{out}{err}");
    let second = out.lines().filter(|l| l.starts_with("uv@0.12.20:")).nth(1).expect(&out);
    assert!(!second.contains("ready"), "the online install is not trusted offline: {out}");
    assert!(out.contains("not reused for this offline want"), "{out}");

    // With the control plane's own digests the install there answers it.
    let good: BTreeMap<_, _> = sums.iter().filter(|(k, _)| k.starts_with("uv-")).collect();
    let wants = serde_json::json!({"wants": [
        {"engine": "uv", "version": "0.12.20"},
        {"engine": "uv", "version": "0.12.20", "offline_base": site.mirror_url(), "offline_sha256": good},
    ]});
    std::fs::write(&wants_file, wants.to_string()).unwrap();
    let (code, out, err) = run(&["simulate", "--host", p(&host), "--wants", p(&wants_file)]);
    assert_eq!(code, 0, "{out}{err}");
    let second = out.lines().filter(|l| l.starts_with("uv@0.12.20:")).nth(1).expect(&out);
    assert!(second.contains("ready x86_64"), "{out}");
}

#[test]
fn a_manifest_of_two_uv_versions_gives_each_want_the_checksums_of_its_version() {
    let t = tempfile::tempdir().unwrap();
    let (site, _) = site(t.path());
    let bundle = t.path().join("bundle");
    let mut m = manifest_of(&bundle);
    let uv = "uv-x86_64-unknown-linux-gnu.tar.gz";
    // The same asset name for another version, with other bytes, listed first and last.
    let mut other = m.files.iter().find(|e| e.asset == uv).unwrap().clone();
    other.version = "0.12.99".into();
    other.sha256 = "2".repeat(64);
    for at_end in [false, true] {
        let mut files = m.files.clone();
        if at_end {
            files.push(other.clone())
        } else {
            files.insert(0, other.clone())
        }
        m.files = files;
        let sums = t.path().join("manifest.json");
        std::fs::write(&sums, m.to_bytes()).unwrap();
        let base = site.mirror_url();
        let host = super::host_path("v100.json");
        let args =
            ["simulate", "--host", p(&host), "--want", "uv@0.12.20", "--offline-base", &base, "--offline-sha256"];
        let (code, out, err) = run(&[&args[..], &[p(&sums)]].concat());
        assert_eq!(code, 0, "other version at end: {at_end}: {out}{err}");
        assert!(out.contains("uv@0.12.20: ready x86_64"), "{out}");
        // A version the manifest does not list: refused up front, naming it.
        let args =
            ["simulate", "--host", p(&host), "--want", "uv@0.12.21", "--offline-base", &base, "--offline-sha256"];
        let (code, _, err) = run(&[&args[..], &[p(&sums)]].concat());
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("the manifest lists no file of uv 0.12.21"), "{err}");
        // A Python engine is no version the manifest lacks: it is unsupported offline, in words.
        let args =
            ["simulate", "--host", p(&host), "--want", "vllm@0.20.1", "--offline-base", &base, "--offline-sha256"];
        let (_, out, err) = run(&[&args[..], &[p(&sums)]].concat());
        assert!(out.contains("vllm@0.20.1: unsupported"), "{out}{err}");
        m = manifest_of(&bundle);
    }
}

#[test]
fn url_flags_are_checked_when_parsed_and_say_what_is_wrong() {
    let host = super::host_path("v100.json");
    let create = |api: &'static str| {
        let mut a = vec!["bundle", "create", "--want", "uv@0.12.20", "--arch", "amd64", "--out", "/nonexistent/b.tar"];
        a.extend(["--github-api", api]);
        a
    };
    let offline = |base: &'static str| {
        let mut a = vec!["simulate", "--host", p(&host), "--want", "uv@0.12.20"];
        a.extend(["--offline-base", base, "--offline-sha256", "/x.json"]);
        a
    };
    let cases = [
        (create("notaurl"), "`notaurl` is not an http:// or https:// URL"),
        (create("ftp://x/"), "`ftp://x/` has the scheme `ftp`"),
        (offline("http://"), "`http://` has no host"),
        (offline("http://m/mirror?token=abc"), "has a query string, which is not supported"),
    ];
    for (args, says) in cases {
        let (code, _, err) = run(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{err}");
        assert!(!err.contains("attempts"), "refused at once, not after retries: {err}");
    }
}

#[test]
fn offline_wants_file_rules_are_the_flags_rules_and_the_flags_do_not_override_a_file() {
    let t = tempfile::tempdir().unwrap();
    let host = super::host_path("v100.json");
    let wants_file = t.path().join("wants.json");
    let hex = "ab".repeat(32);
    let cases = [
        (
            serde_json::json!({"engine": "uv", "version": "0.12.20", "offline_base": "http://m/x"}),
            "wants[0].offline_sha256: names no checksum",
        ),
        (
            serde_json::json!({"engine": "uv", "version": "0.12.20", "offline_base": "http://m/x", "offline_sha256": {}}),
            "wants[0].offline_sha256: names no checksum",
        ),
        (
            serde_json::json!({"engine": "uv", "version": "0.12.20", "offline_base": "HTTP://m/x?a=b", "offline_sha256": {"a": hex}}),
            "wants[0].offline_base: `HTTP://m/x?a=b` has a query string",
        ),
    ];
    for (want, says) in cases {
        std::fs::write(&wants_file, serde_json::json!({"wants": [want]}).to_string()).unwrap();
        let (code, _, err) = run(&["simulate", "--host", p(&host), "--wants", p(&wants_file)]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(says), "{err}");
    }
    let sums = t.path().join("sums.json");
    std::fs::write(&sums, serde_json::json!({"a.tar.gz": hex}).to_string()).unwrap();
    let own = serde_json::json!({"wants": [{"engine": "uv", "version": "0.12.20"},
        {"engine": "uv", "version": "0.12.20", "offline_base": "http://m/x", "offline_sha256": {"a.tar.gz": hex}}]});
    std::fs::write(&wants_file, own.to_string()).unwrap();
    let (code, _, err) = run(&[
        "simulate",
        "--host",
        p(&host),
        "--wants",
        p(&wants_file),
        "--offline-base",
        "http://other/y",
        "--offline-sha256",
        p(&sums),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("wants[1] (uv@0.12.20) carries its own offline_base"), "{err}");
    // A checksums file in sha256sum's form: the shapes it takes.
    std::fs::write(&sums, format!("{hex}  a.tar.gz\n")).unwrap();
    let (code, _, err) = run(&[
        "simulate",
        "--host",
        p(&host),
        "--want",
        "uv@0.12.20",
        "--offline-base",
        "http://m/x",
        "--offline-sha256",
        p(&sums),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("expected a JSON object") && err.contains("manifest.json"), "{err}");
}

/// `bundle create` from the fake publisher, as a user runs it: (exit code, stdout, stderr).
fn try_create(publisher: &FakeServer, want: &str, out: &Path, extra: &[&str]) -> (i32, String, String) {
    let api = publisher.base_url();
    let args = ["bundle", "create", "--github-api", &api, "--want", want, "--arch", "amd64", "--out", p(out)];
    run(&[&args[..], extra].concat())
}

#[test]
fn bundle_create_checks_out_and_its_sha256_file_up_front_and_names_tars_in_any_case() {
    let t = tempfile::tempdir().unwrap();
    let publisher = FakeServer::start(embedded_catalog()).unwrap();
    // A sha256 file that cannot be written: refused before anything is fetched or written.
    let zz = t.path().join("zz.tar");
    std::fs::create_dir(t.path().join("zz.tar.manifest.sha256")).unwrap();
    let (code, _, err) = try_create(&publisher, "uv@0.12.20", &zz, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("zz.tar.manifest.sha256` exists already"), "{err}");
    assert!(!zz.exists());
    // One there already is not overwritten.
    let z = t.path().join("z.tar");
    std::fs::write(t.path().join("z.tar.manifest.sha256"), "mine\n").unwrap();
    let (code, _, err) = try_create(&publisher, "uv@0.12.20", &z, &[]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(std::fs::read_to_string(t.path().join("z.tar.manifest.sha256")).unwrap(), "mine\n");
    assert!(!z.exists());
    // Compressed names are refused; `.TAR` is a tar.
    for name in ["b.tar.gz", "b.tgz"] {
        let (code, _, err) = try_create(&publisher, "uv@0.12.20", &t.path().join(name), &[]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("bundles are plain tar"), "{err}");
        assert!(!t.path().join(name).exists());
    }
    let upper = t.path().join("X.TAR");
    let (code, out, err) = try_create(&publisher, "uv@0.12.20", &upper, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(upper.is_file(), "a tar, not a directory");
    assert!(out.contains(": 1 file,"), "{out}");
    // A directory bundle's manifest is as readable as its assets.
    use std::os::unix::fs::PermissionsExt;
    let dir = t.path().join("dir");
    create(&publisher, &["uv@0.12.20"], &["amd64"], &dir);
    assert_eq!(std::fs::metadata(dir.join("manifest.json")).unwrap().permissions().mode() & 0o777, 0o644);
}

#[test]
fn staging_an_interrupted_run_left_is_removed_by_the_next_and_nothing_else() {
    let t = tempfile::tempdir().unwrap();
    let (bundle, sha, mirror) = bundle_and_mirror(t.path());
    let stale = t.path().join(".llmgw-import-abc123");
    let stale_pid = t.path().join(".llmgw-import-999999999-abc123");
    let live = t.path().join(format!(".llmgw-import-{}-abc123", std::process::id()));
    let other = t.path().join(".import-abc123");
    for d in [&stale, &stale_pid, &live, &other] {
        std::fs::create_dir_all(d.join("uv")).unwrap();
    }
    let (code, _, err) =
        run(&["-v", "bundle", "import", p(&bundle), "--manifest-sha256", &sha, "--mirror", p(&mirror)]);
    assert_eq!(code, 0, "{err}");
    assert!(!stale.exists() && !stale_pid.exists(), "{err}");
    assert!(live.exists() && other.exists(), "a running import's staging and other names stay");
    assert!(err.contains(".llmgw-import-abc123") && err.contains("interrupted"), "{err}");

    let publisher = FakeServer::start(embedded_catalog()).unwrap();
    let stale = t.path().join(".llmgw-bundle-xyz");
    std::fs::create_dir(&stale).unwrap();
    let (code, _, err) = try_create(&publisher, "uv@0.12.20", &t.path().join("b2.tar"), &["-v"]);
    assert_eq!(code, 0, "{err}");
    assert!(!stale.exists(), "{err}");
}

#[test]
fn bundle_import_refuses_bad_places_and_bad_tars_in_words() {
    let t = tempfile::tempdir().unwrap();
    let (bundle, sha, mirror) = bundle_and_mirror(t.path());
    let before = tree(&mirror);
    // A mirror that is a file.
    let mfile = t.path().join("mfile");
    std::fs::write(&mfile, "x").unwrap();
    let (code, _, err) = import(&bundle, &sha, &mfile);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("--mirror `{}` is not a directory", p(&mfile))), "{err}");
    // A mirror inside the bundle directory.
    let (code, _, err) = import(&bundle, &sha, &bundle.join("m"));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is inside the bundle"), "{err}");
    assert!(!bundle.join("m").exists());
    // A mirror file that is a symbolic link is not hashed through.
    let outside = t.path().join("outside");
    std::fs::write(&outside, "x").unwrap();
    let uv = "uv/0.12.20/uv-x86_64-unknown-linux-gnu.tar.gz";
    std::fs::create_dir_all(mirror.join("uv/0.12.20")).unwrap();
    std::os::unix::fs::symlink(bundle.join(uv), mirror.join(uv)).unwrap();
    let (code, _, err) = import(&bundle, &sha, &mirror);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("the mirror's `{uv}` is a symbolic link")), "{err}");
    std::fs::remove_file(mirror.join(uv)).unwrap();
    // A gzipped bundle, a truncated one.
    let tar_path = t.path().join("b.tar");
    let mut b = tar::Builder::new(std::fs::File::create(&tar_path).unwrap());
    b.append_dir_all(".", &bundle).unwrap();
    b.into_inner().unwrap();
    let bytes = std::fs::read(&tar_path).unwrap();
    let gz = t.path().join("b.tar.gz");
    let mut gzipped = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
    gzipped.extend_from_slice(&bytes[..200]);
    std::fs::write(&gz, gzipped).unwrap();
    let (code, _, err) = import(&gz, &sha, &mirror);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("a compressed file; bundles are plain tar"), "{err}");
    let cut = t.path().join("cut.tar");
    std::fs::write(&cut, &bytes[..bytes.len() / 2 + 7]).unwrap();
    let (code, _, err) = import(&cut, &sha, &mirror);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("truncated"), "{err}");
    // A symbolic link in a directory bundle says so.
    let linked = t.path().join("linked");
    std::fs::create_dir(&linked).unwrap();
    std::fs::copy(bundle.join("manifest.json"), linked.join("manifest.json")).unwrap();
    std::os::unix::fs::symlink(bundle.join("uv"), linked.join("uv")).unwrap();
    let (code, _, err) = import(&linked, &sha, &mirror);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("`uv` is a symbolic link"), "{err}");
    assert_eq!(tree(&mirror), before);
    assert_eq!(
        std::fs::read_dir(t.path())
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with(".llmgw"))
            .count(),
        0
    );
}

#[test]
fn a_manifest_entry_with_an_empty_asset_name_is_refused_with_its_json_path() {
    let t = tempfile::tempdir().unwrap();
    let (bundle, _, mirror) = bundle_and_mirror(t.path());
    let mut m = manifest_of(&bundle);
    let mut empty = m.files[0].clone();
    empty.asset = String::new();
    m.files.push(empty.clone());
    let text = m.to_bytes();
    let sha = hex::encode(Sha256::digest(&text));
    // A tar with the manifest first and a file where the empty name's path would be.
    let tar_path = t.path().join("empty.tar");
    let mut b = tar::Builder::new(std::fs::File::create(&tar_path).unwrap());
    let mut h = tar::Header::new_gnu();
    h.set_size(text.len() as u64);
    h.set_mode(0o644);
    b.append_data(&mut h, "manifest.json", &text[..]).unwrap();
    let mut h = tar::Header::new_gnu();
    h.set_size(1);
    h.set_mode(0o644);
    b.append_data(&mut h, format!("{}/{}", empty.engine, empty.version), &b"x"[..]).unwrap();
    for e in &m.files[..m.files.len() - 1] {
        b.append_path_with_name(bundle.join(e.path()), e.path()).unwrap();
    }
    b.into_inner().unwrap();
    let (code, _, err) = import(&tar_path, &sha, &mirror);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("manifest.json: files[{}].asset", m.files.len() - 1)), "{err}");
}

#[test]
fn bundle_create_skips_python_engines_of_a_wants_file_with_a_note() {
    let t = tempfile::tempdir().unwrap();
    let publisher = FakeServer::start(embedded_catalog()).unwrap();
    let wants = Path::new(env!("CARGO_MANIFEST_DIR")).join("matrix/wants.json");
    let out = t.path().join("b.tar");
    let api = publisher.base_url();
    let (code, stdout, err) =
        run(&["bundle", "create", "--github-api", &api, "--wants", p(&wants), "--arch", "amd64", "--out", p(&out)]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("vllm@0.20.1: not carried by bundles (installed from PyPI)"), "{err}");
    assert!(stdout.contains("uv@0.12.20") && stdout.contains("llama.cpp@b11459"), "{stdout}");
}

#[test]
fn the_mirror_served_answers_head_and_serves_regular_files_only() {
    let t = tempfile::tempdir().unwrap();
    let mirror = t.path().join("mirror");
    std::fs::create_dir_all(mirror.join("uv/0.12.20")).unwrap();
    std::fs::write(mirror.join("uv/0.12.20/a.tar.gz"), b"hello").unwrap();
    let secret = t.path().join("secret");
    std::fs::write(&secret, b"not the mirror's").unwrap();
    std::os::unix::fs::symlink(&secret, mirror.join("uv/0.12.20/b.tar.gz")).unwrap();
    let site = FakeServer::start(embedded_catalog()).unwrap();
    assert_eq!(site.serve_mirror(&mirror).unwrap(), ["uv/0.12.20/a.tar.gz"]);
    let client = super::http_client();
    let url = format!("{}/uv/0.12.20/a.tar.gz", site.mirror_url());
    let head = client.head(&url).send().unwrap();
    assert_eq!(head.status(), 200);
    assert_eq!(head.headers()["content-length"], "5");
    assert_eq!(client.get(&url).send().unwrap().bytes().unwrap().as_ref(), b"hello");
    let link = client.get(format!("{}/uv/0.12.20/b.tar.gz", site.mirror_url())).send().unwrap();
    assert_eq!(link.status(), 404, "a symbolic link is not served");
    // The publisher's release assets answer HEAD too (after the redirect GET takes).
    let asset =
        format!("{}/astral-sh/uv/releases/download/0.12.20/uv-x86_64-unknown-linux-gnu.tar.gz", site.base_url());
    let head = client.head(&asset).send().unwrap();
    let get = client.get(&asset).send().unwrap();
    assert_eq!((head.status(), get.status()), (reqwest::StatusCode::OK, reqwest::StatusCode::OK));
    assert_eq!(head.headers()["content-length"], get.headers()["content-length"]);

    // A mirror that is not a directory: refused before anything is served or printed.
    for bad in [t.path().join("nonexistent"), secret] {
        let (code, out, err) = run(&["mock-server", "--mirror", p(&bad)]);
        assert_eq!((code, out.as_str()), (2, ""), "{err}");
        assert!(err.contains(&format!("--mirror `{}`", p(&bad))), "{err}");
    }
}

#[test]
fn the_offline_commands_help_examples_fit_80_columns_unwrapped() {
    let example = |cmd: &[&str], columns: &str| {
        let out = llmgw().args(cmd).arg("--help").env("COLUMNS", columns).output().unwrap();
        let help = String::from_utf8(out.stdout).unwrap();
        help[help.find("Example").expect(&help)..].to_string()
    };
    for cmd in [&["bundle", "create"][..], &["bundle", "import"], &["mock-server"]] {
        let (narrow, wide) = (example(cmd, "80"), example(cmd, "200"));
        assert_eq!(narrow, wide, "{cmd:?}: clap wrapped the example at 80 columns");
        for line in wide.lines() {
            assert!(line.chars().count() <= 80, "{cmd:?}: `{line}` is wider than 80 columns");
        }
    }
}

#[test]
fn a_file_the_mirror_lacks_is_named_by_its_mirror_path_the_same_from_run_to_run() {
    let t = tempfile::tempdir().unwrap();
    let (site, sums) = site(t.path());
    let host = super::host_path("v100.json");
    let sums_file = t.path().join("sums.json");
    let uv: BTreeMap<_, _> = sums.iter().filter(|(k, _)| k.starts_with("uv-")).collect();
    std::fs::write(&sums_file, serde_json::to_vec(&uv).unwrap()).unwrap();
    let base = site.mirror_url();
    let args = ["simulate", "--host", p(&host), "--want", "uv@0.12.21", "--offline-base", &base, "--offline-sha256"];
    let (code, out, err) = run(&[&args[..], &[p(&sums_file)]].concat());
    assert_ne!(code, 0, "{out}{err}");
    assert!(
        out.contains("downloading uv-x86_64-unknown-linux-gnu.tar.gz from the mirror at <offline_base>/uv/0.12.21/uv-x86_64-unknown-linux-gnu.tar.gz: HTTP 404"),
        "{out}"
    );
    assert!(!out.contains(&base), "the mirror's port is not in the output: {out}");
}

#[test]
fn bundle_create_says_an_asset_without_a_digest_is_not_bundled() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(MockServer::start());
    let release = serde_json::json!({"tag_name": "0.12.20", "assets": [{
        "name": "uv-x86_64-unknown-linux-gnu.tar.gz", "size": 3,
        "browser_download_url": format!("{}/dl/uv.tar.gz", server.uri()), "digest": null,
    }]});
    rt.block_on(
        Mock::given(method("GET"))
            .and(path("/repos/astral-sh/uv/releases/tags/0.12.20"))
            .respond_with(ResponseTemplate::new(200).set_body_json(release))
            .mount(&server),
    );
    let t = tempfile::tempdir().unwrap();
    let api = server.uri();
    let out = t.path().join("b.tar");
    let (code, _, err) =
        run(&["bundle", "create", "--github-api", &api, "--want", "uv@0.12.20", "--arch", "amd64", "--out", p(&out)]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("it cannot be verified, so it is not bundled"), "{err}");
    assert!(!err.contains("installed"), "{err}");
}

/// A release directory as ci/release.sh writes it, for `targets` of
/// llmgw `version`: each archive holds `llmgw-<version>-<target>/llmgw`
/// (a stand-in binary) and README.md, with its `.sha256` beside it.
fn release_dir(dir: &Path, version: &str, targets: &[&str]) {
    std::fs::create_dir_all(dir).unwrap();
    for target in targets {
        let name = format!("llmgw-{version}-{target}.tar.gz");
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let mut tar = tar::Builder::new(gz);
        for (file, body) in [("llmgw", format!("llmgw {version} for {target}")), ("README.md", "# llmgw".into())] {
            let mut h = tar::Header::new_gnu();
            h.set_size(body.len() as u64);
            h.set_mode(0o755);
            tar.append_data(&mut h, format!("llmgw-{version}-{target}/{file}"), body.as_bytes()).unwrap();
        }
        let bytes = tar.into_inner().unwrap().finish().unwrap();
        std::fs::write(dir.join(&name), &bytes).unwrap();
        let line = format!("{}  {name}\n", hex::encode(Sha256::digest(&bytes)));
        std::fs::write(dir.join(format!("{name}.sha256")), line).unwrap();
    }
}

const GNU: &str = "x86_64-unknown-linux-gnu";
const MUSL: &str = "x86_64-unknown-linux-musl";

#[test]
fn a_bundle_carries_llmgw_itself_into_the_mirror_checked_by_the_same_manifest() {
    let t = tempfile::tempdir().unwrap();
    let publisher = FakeServer::start(embedded_catalog()).unwrap();
    let dist = t.path().join("dist");
    release_dir(&dist, "0.1.0", &[GNU, MUSL, "aarch64-unknown-linux-gnu"]);
    // What is not llmgw's release for the architectures asked is left alone.
    std::fs::write(dist.join("SHA256SUMS"), "whatever\n").unwrap();
    std::fs::write(dist.join("llmgw-0.1.0-powerpc64le-unknown-linux-gnu.tar.gz"), "not asked for").unwrap();
    let bundle = t.path().join("b.tar");
    let api = publisher.base_url();
    let args = ["bundle", "create", "--github-api", &api, "--want", "uv@0.12.20", "--arch", "amd64", "--arch", "arm64"];
    let (code, out, err) = run(&[&args[..], &["--llmgw-dir", p(&dist), "--out", p(&bundle)]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(": 8 files,"), "2 uv archives, 3 llmgw archives and their .sha256: {out}");
    assert!(
        out.contains("llmgw@0.1.0  amd64  x86_64-unknown-linux-musl  llmgw-0.1.0-x86_64-unknown-linux-musl.tar.gz\n"),
        "{out}"
    );
    let sha = out.lines().find_map(|l| l.strip_prefix("manifest sha256: ")).unwrap().to_string();

    let mirror = t.path().join("mirror");
    let (code, out, err) = import(&bundle, &sha, &mirror);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("imported 8 files into the mirror"), "{out}");
    // The mirror serves the archives byte for byte, and sha256sum checks them there.
    let own = mirror.join("llmgw/0.1.0");
    let mut names: Vec<String> =
        std::fs::read_dir(&own).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names.len(), 6, "{names:?}");
    for name in &names {
        assert_eq!(std::fs::read(own.join(name)).unwrap(), std::fs::read(dist.join(name)).unwrap(), "{name}");
    }
    let check = std::process::Command::new("sha256sum")
        .arg("-c")
        .arg(format!("llmgw-0.1.0-{GNU}.tar.gz.sha256"))
        .current_dir(&own)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
    assert_eq!(String::from_utf8_lossy(&check.stdout), format!("llmgw-0.1.0-{GNU}.tar.gz: OK\n"));

    // The manifest names each file with its target; a bundle without llmgw has no such list.
    let dir = t.path().join("unpacked");
    tar::Archive::new(std::fs::File::open(&bundle).unwrap()).unpack(&dir).unwrap();
    let manifest = manifest_of(&dir);
    assert_eq!(manifest.llmgw.len(), 6);
    // Sorted by version, arch (amd64 before arm64), target and asset.
    let paths: Vec<String> = manifest.llmgw.iter().map(|e| e.path()).collect();
    assert_eq!(
        paths,
        [
            format!("llmgw/0.1.0/llmgw-0.1.0-{GNU}.tar.gz"),
            format!("llmgw/0.1.0/llmgw-0.1.0-{GNU}.tar.gz.sha256"),
            format!("llmgw/0.1.0/llmgw-0.1.0-{MUSL}.tar.gz"),
            format!("llmgw/0.1.0/llmgw-0.1.0-{MUSL}.tar.gz.sha256"),
            "llmgw/0.1.0/llmgw-0.1.0-aarch64-unknown-linux-gnu.tar.gz".to_string(),
            "llmgw/0.1.0/llmgw-0.1.0-aarch64-unknown-linux-gnu.tar.gz.sha256".to_string(),
        ]
    );
    assert!(manifest.llmgw.iter().all(|e| e.target != "powerpc64le-unknown-linux-gnu"));
    let plain = t.path().join("plain");
    create(&publisher, &["uv@0.12.20"], &["amd64"], &plain);
    assert!(!std::fs::read_to_string(plain.join("manifest.json")).unwrap().contains("llmgw"));

    // One byte of llmgw changed in a bundle: nothing is imported.
    let dir_bundle = t.path().join("dirbundle");
    let (code, out, err) = run(&[&args[..], &["--llmgw-dir", p(&dist), "--out", p(&dir_bundle)]].concat());
    assert_eq!(code, 0, "{err}");
    let sha = out.lines().find_map(|l| l.strip_prefix("manifest sha256: ")).unwrap().to_string();
    let victim = dir_bundle.join(format!("llmgw/0.1.0/llmgw-0.1.0-{MUSL}.tar.gz"));
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[20] ^= 1;
    std::fs::write(&victim, bytes).unwrap();
    let fresh = t.path().join("fresh");
    let (code, _, err) = import(&dir_bundle, &sha, &fresh);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("`llmgw/0.1.0/llmgw-0.1.0-{MUSL}.tar.gz` has sha256")), "{err}");
    assert!(err.contains("nothing was imported") && !fresh.exists(), "{err}");
}

#[test]
fn bad_llmgw_release_directories_are_refused_in_words_before_any_download() {
    let t = tempfile::tempdir().unwrap();
    let publisher = FakeServer::start(embedded_catalog()).unwrap();
    let out = t.path().join("b.tar");
    let attempt = |dir: &Path, arch: &str| {
        let api = publisher.base_url();
        run(&[
            "bundle",
            "create",
            "--github-api",
            &api,
            "--want",
            "uv@0.12.20",
            "--arch",
            arch,
            "--llmgw-dir",
            p(dir),
            "--out",
            p(&out),
        ])
    };
    let refused = |dir: &Path, arch: &str, says: &str| {
        let (code, _, err) = attempt(dir, arch);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(&format!("--llmgw-dir `{}`: ", dir.display())) && err.contains(says), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!out.exists() && !llmgw_system::offline::bundle::sha256_file_of(&out).exists());
    };
    refused(&t.path().join("none"), "amd64", "No such file or directory");

    let one = t.path().join("one");
    release_dir(&one, "0.1.0", &[GNU]);
    refused(&one, "arm64", "has no llmgw release archive for arm64 (llmgw-VERSION-aarch64-unknown-linux-gnu.tar.gz");
    refused(&one, "riscv64", "llmgw is not released for riscv64");

    let two = t.path().join("two");
    release_dir(&two, "0.1.0", &[GNU]);
    release_dir(&two, "0.2.0", &[MUSL]);
    refused(&two, "amd64", "holds llmgw release archives of versions 0.1.0, 0.2.0; give a directory of one release");

    let name = format!("llmgw-0.1.0-{GNU}.tar.gz");
    let changed = t.path().join("changed");
    release_dir(&changed, "0.1.0", &[GNU]);
    let sidecar = std::fs::read_to_string(changed.join(format!("{name}.sha256"))).unwrap();
    std::fs::write(changed.join(&name), b"a different archive").unwrap();
    refused(&changed, "amd64", &format!("`{name}` has sha256 "));
    refused(&changed, "amd64", &format!("`{name}.sha256` says {}", &sidecar[..64]));

    let lone = t.path().join("lone");
    release_dir(&lone, "0.1.0", &[GNU]);
    std::fs::remove_file(lone.join(format!("{name}.sha256"))).unwrap();
    refused(&lone, "amd64", &format!("`{name}.sha256`, the sha256 of `{name}`: it does not exist"));
    std::fs::write(lone.join(format!("{name}.sha256")), "0123\n").unwrap();
    refused(&lone, "amd64", &format!("`{name}.sha256`, the sha256 of `{name}`, holds `0123`, which is not `<sha256>`"));
    std::fs::write(lone.join(format!("{name}.sha256")), format!("{}  other.tar.gz\n", "ab".repeat(32))).unwrap();
    refused(&lone, "amd64", "names `other.tar.gz` instead");
    std::fs::write(lone.join(format!("{name}.sha256")), "a".repeat(600)).unwrap();
    refused(&lone, "amd64", "is longer than 512 bytes");

    // The right digest of an archive that does not hold llmgw.
    let empty = t.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let bytes = tar::Builder::new(gz).into_inner().unwrap().finish().unwrap();
    std::fs::write(empty.join(&name), &bytes).unwrap();
    std::fs::write(empty.join(format!("{name}.sha256")), format!("{}  {name}\n", hex::encode(Sha256::digest(&bytes))))
        .unwrap();
    refused(&empty, "amd64", &format!("`{name}` does not hold `llmgw-0.1.0-{GNU}/llmgw`"));
    assert!(publisher.requests().is_empty(), "nothing was downloaded: {:?}", publisher.requests());
}

#[test]
fn a_manifest_of_llmgw_files_is_checked_with_json_paths() {
    let sha = "ab".repeat(32);
    let entry = |target: &str, asset: &str| serde_json::json!({"version": "0.1.0", "arch": "amd64", "target": target, "asset": asset, "size": 3, "sha256": sha});
    let manifest = |llmgw: serde_json::Value| {
        let files = serde_json::json!([{"engine": "uv", "version": "0.12.20", "arch": "amd64", "variant": "x86_64",
            "asset": "uv-x86_64-unknown-linux-gnu.tar.gz", "size": 3, "sha256": sha}]);
        Manifest::from_json(&serde_json::json!({"format": 1, "files": files, "llmgw": llmgw}).to_string())
    };
    let good = manifest(serde_json::json!([entry(GNU, "llmgw-0.1.0-x86_64-unknown-linux-gnu.tar.gz.sha256")]));
    assert_eq!(good.unwrap().files_by_path().len(), 2);
    let e = manifest(serde_json::json!([entry("aarch64-unknown-linux-gnu", "x")])).unwrap_err();
    assert_eq!(e, "llmgw[0].target: `aarch64-unknown-linux-gnu` is not a target llmgw is released for on amd64");
    let e = manifest(serde_json::json!([entry(GNU, "../../etc/passwd")])).unwrap_err();
    assert!(e.starts_with("llmgw[0].asset: `../../etc/passwd` is neither `llmgw-0.1.0-x86_64"), "{e}");
    let twice = entry(GNU, "llmgw-0.1.0-x86_64-unknown-linux-gnu.tar.gz");
    let e = manifest(serde_json::json!([twice, twice])).unwrap_err();
    assert!(
        e.starts_with("llmgw[1]: `llmgw/0.1.0/llmgw-0.1.0-x86_64-unknown-linux-gnu.tar.gz` is listed twice"),
        "{e}"
    );
}
