//! The real uv judges the simulated uv (issue 16, point 7): for every
//! matrix host and every Python want of `matrix/wants.json`, each Python
//! build the recipe has for that version (PyPI's, and the release wheel
//! with PyTorch's cu129 index) is resolved by both uvs against the fake
//! publisher's indexes, with the same `pyproject.toml` the installer writes
//! (`llmgw_core::converge::uv_project`), the host's platform as
//! `--python-platform` and the build's Python as `--python-version`: `uv pip
//! compile … --format pylock.toml`. They must agree on whether it resolves
//! and, when it does, on the wheel of every project.
//!
//! The real uv is the `uv` package from PyPI, pinned in `.ci/run`, which
//! installs it into a virtual environment of its own and names it in
//! `LLMGW_REAL_UV`. Without that variable (a developer's plain `cargo
//! test`) the comparison says that it did not run; with it, a uv that is
//! missing or of another version fails the test.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use llmgw_core::converge::{Config, uv_project};
use llmgw_core::recipe::{self, Build, Engine, Source, UV_VERSION, Want};
use llmgw_model::host::{Arch, ComputeCapability, DriverVersion, Gpu, Host, Libc, Nvidia};
use llmgw_sim::machine::uv as sim_uv;
use llmgw_sim::publisher::FakeServer;
use llmgw_sim::truth::embedded_catalog;
use llmgw_sim::truth::wheel_name::{WheelName, manylinux};
use llmgw_system::Local;
use llmgw_system::files::Files;
use llmgw_system::http::Http;

/// The variable naming the real uv.
const REAL_UV: &str = "LLMGW_REAL_UV";

/// The `--python-platform` minors uv 0.13.9 takes for glibc (`uv pip
/// compile --help`): `manylinux_2_17`, `_2_28`, `_2_31` to `_2_40`.
const UV_GLIBC_MINORS: &[u32] = &[17, 28, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40];

/// The real uv, when `LLMGW_REAL_UV` names one; a panic when it names none
/// that runs, or one of another version than the simulated uv's.
fn real_uv() -> Option<PathBuf> {
    let path = PathBuf::from(std::env::var_os(REAL_UV)?);
    let out = Command::new(&path)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("{REAL_UV}={} does not run: {e}", path.display()));
    let says = String::from_utf8_lossy(&out.stdout);
    assert!(
        says.starts_with(&format!("uv {UV_VERSION} ")),
        "{REAL_UV}={} is `{}`, not uv {UV_VERSION}, the uv the recipes install",
        path.display(),
        says.trim()
    );
    Some(path)
}

/// The `--python-platform` of a host: its architecture and the highest
/// glibc tag uv offers at or below the host's, or its musl target; `None`
/// for an architecture uv has no target for (ppc64le, s390x).
fn platform(host: &Host) -> Option<String> {
    let arch = match host.arch {
        Arch::Amd64 => "x86_64",
        Arch::Arm64 => "aarch64",
        _ => return None,
    };
    if host.os.libc == Libc::Musl {
        return Some(format!("{arch}-unknown-linux-musl"));
    }
    let g = host.os.glibc.as_ref()?.parts().to_vec();
    let minor = UV_GLIBC_MINORS.iter().rev().find(|m| (2, **m) <= (g[0], g[1]))?;
    Some(format!("{arch}-manylinux_2_{minor}"))
}

/// The host as a machine every build's GPU needs are met on: one H100-class
/// GPU and the newest driver, so that the recipe names each of its builds.
fn any_gpu(host: &Host) -> Host {
    let mut h = host.clone();
    h.nvidia = Some(Nvidia {
        driver: DriverVersion::parse("590.44.01").unwrap(),
        vulkan_icd: true,
        gpus: vec![Gpu {
            name: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: ComputeCapability::parse("9.0").unwrap(),
            memory_mib: 81559,
            mig: vec![],
        }],
        l4t: None,
    });
    h
}

/// A host to run the simulated uv on (its `pip compile` reads no host).
fn any_gpu_host() -> Host {
    super::host("h100-ubuntu24.04-driver580.json")
}

/// Each Python build the recipe has for `want` on `host`'s architecture,
/// variant by variant; where the recipe refuses the architecture itself
/// (torch without CUDA on aarch64), PyPI's builds for x86-64, which uv can
/// still be asked to resolve there.
fn builds(want: &Want, host: &Host) -> Vec<Build> {
    let variants: &[&str] = match want.engine {
        Engine::Vllm => &["cu13", "cu129", "cu12"],
        _ => &["cu13", "cu12"],
    };
    let mut x86 = host.clone();
    x86.arch = Arch::Amd64;
    let mut out = Vec::new();
    for v in variants {
        let w = Want { variant: Some(v.to_string()), ..want.clone() };
        let plan = recipe::plan(&w, &any_gpu(host)).or_else(|_| {
            recipe::plan(&w, &any_gpu(&x86)).map(|mut p| {
                p.candidates.retain(|b| matches!(&b.source, Source::Python(e) if e.wheel.is_none()));
                p
            })
        });
        if let Ok(p) = plan {
            out.extend(p.candidates.into_iter().filter(|b| b.variant == *v && b.version == want.version));
        }
    }
    out
}

/// What a uv's pylock says: each project's wheel file name; or that it failed.
fn resolution(ok: bool, stdout: &str, stderr: &str) -> Result<BTreeMap<String, String>, String> {
    if !ok {
        return Err(stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default().trim().to_string());
    }
    let lock: toml::Value = toml::from_str(stdout).unwrap_or_else(|e| panic!("not a pylock: {e}\n{stdout}"));
    let mut out = BTreeMap::new();
    for p in lock.get("packages").and_then(|p| p.as_array()).into_iter().flatten() {
        let name = p["name"].as_str().unwrap().to_string();
        let wheel = p.get("wheels").and_then(|w| w.as_array()).and_then(|w| w.first());
        let place = wheel
            .and_then(|w| w.get("url").or_else(|| w.get("path")))
            .or_else(|| p.get("archive").and_then(|a| a.get("path").or_else(|| a.get("url"))))
            .and_then(|u| u.as_str())
            .unwrap_or_else(|| panic!("{name}: no wheel in the pylock\n{stdout}"));
        let file = place.rsplit('/').next().unwrap().replace("%2B", "+").replace("%2b", "+");
        out.insert(name, file);
    }
    Ok(out)
}

#[test]
fn the_simulated_uv_resolves_as_the_real_uv_on_every_matrix_host() {
    let Some(real) = real_uv() else {
        eprintln!("real uv: {REAL_UV} is not set, so the simulated uv was not compared (.ci/run sets it)");
        return;
    };
    let catalog = embedded_catalog();
    // The platform a host is resolved for must decide as its glibc would:
    // no wheel of the indexes has a tag in a gap of uv's targets.
    for d in catalog.indexes.iter().flat_map(|i| &i.dists) {
        for tag in WheelName::parse(&d.filename).unwrap().platform {
            if let Some(((2, minor), _)) = manylinux(&tag) {
                assert!(
                    UV_GLIBC_MINORS.contains(&minor) || minor < 17,
                    "{}: {tag} falls between uv's targets",
                    d.filename
                );
            }
        }
    }
    let server = FakeServer::start(catalog).unwrap();
    let work = tempfile::tempdir().unwrap();
    let cfg = Config {
        engines_dir: work.path().join("engines"),
        github_api: server.base_url(),
        pypi_simple: server.pypi_simple_url(),
        pytorch_whl: server.pytorch_url(),
        python_mirror: server.python_mirror_url(),
        check_timeout_secs: 60,
        not_a_build: None,
    };
    let http = Http::loopback(5, 60).unwrap();
    let effects = Local { http: http.clone(), files: Files::scratch() };
    let wants: Vec<Want> = llmgw_sim::default_wants().into_iter().filter(|w| w.engine.from_pypi()).collect();
    let hosts_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("matrix/hosts");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&hosts_dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();

    // Every (host, want, build) and what it asks: the host's platform and
    // the pyproject. Identical questions are asked once.
    let mut triples = Vec::new();
    let mut questions: BTreeMap<(String, String), String> = BTreeMap::new();
    let (mut hosts, mut without_target) = (0, Vec::new());
    for file in &files {
        let host = Host::from_json(&std::fs::read_to_string(file).unwrap()).unwrap();
        let Some(platform) = platform(&host) else {
            without_target.push(host.name.clone());
            continue;
        };
        hosts += 1;
        for want in &wants {
            for build in builds(want, &host) {
                let Source::Python(env) = &build.source else { continue };
                let wheel = env.wheel.as_ref().map(|w| release_wheel(&http, &server, w, work.path()));
                let project = uv_project(&build, env, wheel.as_deref(), &cfg);
                let key = (platform.clone(), project);
                questions.insert(key.clone(), env.python.clone());
                triples.push((format!("{} ({platform}) {want} {}", host.name, build.variant), key));
            }
        }
    }
    let compared = triples.len();

    // Both uvs answer each question, four at a time.
    type Said = Result<BTreeMap<String, String>, String>;
    let asked: Vec<(&(String, String), &String)> = questions.iter().collect();
    let mut runs: BTreeMap<(String, String), (Said, Said)> = BTreeMap::new();
    for chunk in asked.chunks(4) {
        let answers: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = chunk
                .iter()
                .enumerate()
                .map(|(i, ((platform, project), python))| {
                    let (real, cfg, effects, work) = (&real, &cfg, &effects, work.path());
                    scope.spawn(move || {
                        let dir = tempfile::tempdir_in(work).unwrap();
                        let pyproject = dir.path().join("pyproject.toml");
                        std::fs::write(&pyproject, project).unwrap();
                        let mut args: Vec<String> = [
                            "pip",
                            "compile",
                            pyproject.to_str().unwrap(),
                            "--python-platform",
                            platform,
                            "--python-version",
                            python,
                            "--default-index",
                            &cfg.pypi_simple,
                            "--only-binary",
                            ":all:",
                            "--format",
                            "pylock.toml",
                        ]
                        .iter()
                        .map(|s| s.to_string())
                        .collect();
                        // The interpreter beside the real uv (its virtual
                        // environment's) spares uv a search of the machine's
                        // Pythons; it only builds, and nothing is built.
                        let python = real.with_file_name("python");
                        if python.exists() {
                            args.extend(["--python".to_string(), python.display().to_string()]);
                        }
                        let out = Command::new(real)
                            .args(&args)
                            .env("UV_CACHE_DIR", work.join(format!("uv-cache-{i}")))
                            .env("UV_PYTHON_DOWNLOADS", "never")
                            .env("UV_NO_CONFIG", "1")
                            .env("NO_COLOR", "1")
                            .output()
                            .unwrap();
                        let real_says = resolution(
                            out.status.success(),
                            &String::from_utf8_lossy(&out.stdout),
                            &String::from_utf8_lossy(&out.stderr),
                        );
                        // The simulated uv decides from the arguments alone;
                        // any host stands for the machine it runs on.
                        let sim = sim_uv::run(&any_gpu_host(), effects, &args, &[]);
                        (real_says, resolution(sim.success(), &sim.stdout, &sim.stderr))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for ((key, _), said) in chunk.iter().zip(answers) {
            runs.insert((*key).clone(), said);
        }
    }
    let mut differences = Vec::new();
    for (what, key) in &triples {
        let (real_says, sim_says) = &runs[key];
        let agree = match (real_says, sim_says) {
            (Ok(a), Ok(b)) => a == b,
            (Err(_), Err(_)) => true,
            _ => false,
        };
        if !agree {
            differences.push(format!("{what}: real uv {real_says:?}, simulated uv {sim_says:?}"));
        }
    }
    let resolvable = runs.values().filter(|(r, _)| r.is_ok()).count();
    eprintln!(
        "real uv {UV_VERSION} and the simulated uv compared on {compared} (host, want, build) triples of {hosts} hosts \
         ({} distinct resolutions, {resolvable} resolvable); hosts without a uv target: {}",
        runs.len(),
        without_target.join(", ")
    );
    assert!(differences.is_empty(), "{} difference(s):\n{}", differences.len(), differences.join("\n"));
    // Both outcomes are exercised, and every platform the matrix has.
    assert!(resolvable > 0 && resolvable < runs.len(), "{resolvable} of {}", runs.len());
    let platforms: BTreeSet<&String> = runs.keys().map(|(p, _)| p).collect();
    assert!(platforms.len() >= 8, "{platforms:?}");
}

/// The release wheel of a build, downloaded once into `dir` (as the
/// installer checks it against GitHub's digest, here the API's `digest`).
fn release_wheel(http: &Http, server: &FakeServer, w: &recipe::ReleaseWheel, dir: &Path) -> PathBuf {
    let url = format!("{}/repos/{}/releases/tags/{}", server.base_url(), w.repo, w.tag);
    let release: serde_json::Value =
        serde_json::from_slice(&http.http_get(&url, "application/json").unwrap().body).unwrap();
    let asset = release["assets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| {
            let n = a["name"].as_str().unwrap();
            n.starts_with(&w.prefix) && n.ends_with(&w.suffix)
        })
        .unwrap_or_else(|| panic!("{}@{} has no {}…{}", w.repo, w.tag, w.prefix, w.suffix));
    let name = asset["name"].as_str().unwrap();
    let dest = dir.join("wheels").join(name);
    if !dest.exists() {
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        let got = http.http_get(asset["browser_download_url"].as_str().unwrap(), "application/octet-stream").unwrap();
        assert_eq!(got.status, 200, "{name}");
        std::fs::write(&dest, &got.body).unwrap();
    }
    dest
}
