//! The provision step of the check on a real NVIDIA GPU, from the bundle
//! `ci/gpu-bundle.sh` makes: the fake release that serves the bundle's
//! stand-ins, and what `provision` must say of them. Shared by `tests/gpu.rs`
//! (the bundle's `bin/gpu-tests`, run by `ci/gpu-check.sh` on the lent
//! machine) and `tests/it/gpu_bundle.rs` (the rehearsal in `cargo test`,
//! against the committed `tests/fixtures/gpu-bundle/`).
//!
//! The stand-ins (`programs/standin-new`, `programs/standin-old`: see
//! `ci/gpu-bundle/standin.c`) answer as `llama-server` and `llama-bench`
//! through the driver's `libcuda.so.1`. The release publishes a CUDA build
//! for every toolkit the recipe's driver tables know; the recipe's first
//! CUDA candidate for the host holds the old stand-in (machine code for 7.0
//! only, where llmgw's reading of the files does not see it), every other
//! the new one. On a GPU the first is listed, refused at the compute step in
//! CUDA's words, and the next installed; where no driver is, every build is
//! refused at the listing with the stand-in's own line.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use llmgw_core::converge::{Check, Outcome, State, Status};
use llmgw_core::recipe::{self, Published, Want};
use llmgw_model::host::Host;
use llmgw_sim::truth::{Asset, Catalog, File, Release};

/// The release the stand-ins are published as: the build number and commit
/// their `--version` says (`ci/gpu-bundle/standin.c`).
pub const TAG: &str = "b10850";

/// CUDA's words for machine code of another generation and no PTX.
pub const NO_KERNEL_IMAGE: &str = "CUDA error: no kernel image is available for execution on the device";

/// The stand-in's words where `libcuda.so.1` cannot be loaded or asked (ggml_cuda_init's).
pub const NO_DRIVER: &str = "failed to initialize CUDA";

/// The bundle's programs.
pub struct Programs {
    /// Machine code for the generations a lent machine may have.
    pub new: Vec<u8>,
    /// Machine code for 7.0 only.
    pub old: Vec<u8>,
    /// The empty library standing for each ggml backend module.
    pub lib: Vec<u8>,
    /// Where the new one is, to run it.
    pub new_path: PathBuf,
}

impl Programs {
    /// The programs of the bundle (or fixture) at `dir`.
    pub fn read(dir: &Path) -> Programs {
        let read = |name: &str| {
            let p = dir.join("programs").join(name);
            std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        };
        Programs {
            new: read("standin-new"),
            old: read("standin-old"),
            lib: read("libbackend.so"),
            new_path: dir.join("programs/standin-new"),
        }
    }

    /// The CUDA devices the new stand-in lists here: none where no driver is.
    pub fn devices_here(&self) -> (Vec<llmgw_core::parse::devices::Device>, String) {
        let out = std::process::Command::new(&self.new_path).arg("--list-devices").output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "standin-new --list-devices: {stdout}{stderr}");
        (llmgw_core::parse::devices::parse(&stdout), format!("{stdout}{stderr}"))
    }
}

/// The CUDA toolkits the recipe's driver tables know (`llmgw_model::nvidia`), newest first.
pub fn toolkits() -> Vec<String> {
    let mut all: Vec<String> = (12..=13)
        .flat_map(|major| (0..=9).map(move |minor| format!("{major}.{minor}")))
        .filter(|t| llmgw_model::nvidia::ptx_jit_min_driver(t).is_some())
        .collect();
    all.reverse();
    all
}

fn engine_asset(tk: &str) -> String {
    format!("llama-{TAG}-bin-ubuntu-cuda-{tk}-x64.tar.gz")
}

fn cudart_asset(tk: &str) -> String {
    format!("cudart-llama-{TAG}-bin-ubuntu-cuda-{tk}-x64.tar.gz")
}

/// The CUDA variants the recipe tries on `host`, in its order, for a release
/// of every known toolkit; and why the others are left out.
pub fn cuda_order(host: &Host) -> (Vec<String>, Vec<String>) {
    let names: Vec<String> = toolkits().iter().flat_map(|t| [engine_asset(t), cudart_asset(t)]).collect();
    let want = Want::parse(&format!("llama.cpp@{TAG}")).unwrap();
    match recipe::plan_published(&want, host, Published::Assets(&names)) {
        Ok(plan) => (
            plan.candidates.iter().map(|b| b.variant.clone()).filter(|v| v.starts_with("cuda-")).collect(),
            plan.excluded.iter().map(|e| format!("{}: {}", e.variant, e.reason)).collect(),
        ),
        Err(e) => (vec![], vec![format!("{e:?}")]),
    }
}

/// A file of real bytes (mode 0755) under the archive's top directory.
fn raw(path: &str, bytes: &[u8]) -> File {
    File { path: path.into(), raw: Some(bytes.to_vec()), ..File::default() }
}

/// The release: for every known toolkit a CUDA build (`program` as
/// `llama-server` and `llama-bench`, the backend modules) and its `cudart-`
/// companion; the old stand-in in `old_in`, the new one in every other.
pub fn catalog(p: &Programs, old_in: &str) -> Catalog {
    let mut assets = Vec::new();
    for tk in toolkits() {
        let program = if format!("cuda-{tk}") == old_in { &p.old } else { &p.new };
        let files = vec![
            raw("llama-server", program),
            raw("llama-bench", program),
            raw("libggml-cpu-x64.so", &p.lib),
            raw("libggml-cuda.so", &p.lib),
        ];
        let major = tk.split('.').next().unwrap();
        assets.push(Asset { name: engine_asset(&tk), top: format!("llama-{TAG}"), files, ..Asset::default() });
        assets.push(Asset {
            name: cudart_asset(&tk),
            top: format!("llama-{TAG}"),
            files: vec![raw(&format!("libcudart.so.{major}"), &p.lib)],
            ..Asset::default()
        });
    }
    Catalog {
        releases: vec![Release {
            engine: "llama.cpp".into(),
            version: TAG.into(),
            repo: "ggml-org/llama.cpp".into(),
            tag: TAG.into(),
            commit: "fe14399".into(),
            published_at: "2026-10-20T14:03:11Z".into(),
            prerelease: true,
            sources: vec!["the stand-ins of ci/gpu-bundle.sh".into()],
            assets,
        }],
        indexes: vec![],
        faults: vec![],
        machine: Default::default(),
    }
}

/// `host` (a host description's file) without its package manager: nothing
/// outside the machine can be reached, so no package can be installed.
/// Written into `dir`; the file and the host.
pub fn host_without_packages(host: &Path, dir: &Path) -> (PathBuf, Host) {
    let text = std::fs::read_to_string(host).unwrap_or_else(|e| panic!("{}: {e}", host.display()));
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["os"]["package_family"] = "none".into();
    let path = dir.join("host.json");
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let parsed = Host::from_json(&v.to_string()).unwrap_or_else(|e| panic!("{}: {e}", host.display()));
    (path, parsed)
}

/// `llmgw provision --format json` of `want` on `host` against the fake
/// server at `api`, into `engines`: the want's status, and what it printed.
pub fn provision(llmgw: &Path, host: &Path, engines: &Path, api: &str, want: &str) -> (Status, String) {
    let out = std::process::Command::new(llmgw)
        .args(["provision", "--format", "json", "--want", want, "--host"])
        .arg(host)
        .arg("--engines-dir")
        .arg(engines)
        .args(["--github-api", api])
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", llmgw.display()));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let said = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {said}"));
    let status: Status = serde_json::from_value(report["engines"][0].clone()).unwrap_or_else(|e| panic!("{e}: {said}"));
    (status, said)
}

/// What provision said, in one line: its state and each build it tried.
pub fn said(s: &Status) -> String {
    let tried: Vec<String> = tried(s)
        .iter()
        .map(|a| {
            let check = a.check.map_or(String::new(), |c| format!(" at the {} check", c.in_words()));
            format!("{} {:?}{check}: {}", a.variant, a.outcome, a.reason)
        })
        .collect();
    format!("{:?} {}; tried: {}", s.state, s.variant.as_deref().unwrap_or("-"), tried.join("; "))
}

/// The attempts a build was tried for (not left out), in order.
pub fn tried(s: &Status) -> Vec<&llmgw_core::converge::Attempt> {
    s.attempts.iter().filter(|a| a.outcome != Outcome::LeftOut).collect()
}

/// What provision must say where no driver is: every CUDA build tried was
/// downloaded, verified, unpacked, its libraries loaded and its version
/// said (the checks before the listing), and was refused at the listing
/// with the stand-in's line; nothing installed.
pub fn assert_refused_without_a_driver(s: &Status, order: &[String]) {
    let tried = tried(s);
    let variants: Vec<String> = tried.iter().map(|a| a.variant.clone()).collect();
    assert_eq!(variants, order, "not every CUDA build the recipe offers was tried: {}", said(s));
    for a in &tried {
        assert_eq!((a.outcome, a.check), (Outcome::Failed, Some(Check::Gpu)), "{}: {}", a.variant, a.reason);
        assert!(a.reason.contains("lists no CUDA device") && a.reason.contains(NO_DRIVER), "{}", a.reason);
    }
    assert_eq!(s.state, State::Failed, "{}", said(s));
}

/// What provision must say on a GPU: the old stand-in, first, was refused
/// at the compute step in CUDA's words; the next build computed on every
/// device and was installed.
pub fn assert_old_refused_next_installed(s: &Status, order: &[String]) {
    let tried = tried(s);
    let first = tried.first().unwrap_or_else(|| panic!("no build tried: {}", said(s)));
    assert_eq!(first.variant, order[0], "the old stand-in's build was not tried first: {}", said(s));
    assert_eq!(
        (first.outcome, first.check),
        (Outcome::Failed, Some(Check::Compute)),
        "the old stand-in was not refused at the compute step: {}",
        first.reason
    );
    assert!(first.reason.contains(NO_KERNEL_IMAGE), "the old stand-in, not in CUDA's words: {}", first.reason);
    assert_eq!((s.state, s.variant.as_deref()), (State::Ready, Some(order[1].as_str())), "{}", said(s));
    let next = tried.get(1).unwrap_or_else(|| panic!("no second build tried: {}", said(s)));
    assert!(next.reason.contains("computes on CUDA0"), "{}", next.reason);
}
