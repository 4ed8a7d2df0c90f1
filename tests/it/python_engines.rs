//! vLLM and SGLang: Python environments made by uv, proven on the GPU.
//! Every row of issue 3's outcome table, and the faults it must show.

use llmgw_core::converge::{Outcome, State, Status};
use llmgw_core::recipe::{self, Want};
use llmgw_sim::truth::embedded_catalog;
use llmgw_sim::{Simulation, simulate};
use rstest::rstest;

fn one(file: &str, want: &str) -> Status {
    let report = simulate(&super::host(file), &[Want::parse(want).unwrap()]).unwrap();
    report.engines.into_iter().next().unwrap()
}

#[rstest]
#[case::h100_580_vllm("h100-ubuntu24.04-driver580.json", "vllm@0.20.1", State::Ready, Some("cu13"), "0.20.1")]
#[case::h100_580_sglang("h100-ubuntu24.04-driver580.json", "sglang@0.5.4", State::Ready, Some("cu12"), "0.5.4")]
#[case::h100_580_sglang_cuda13(
    "h100-ubuntu24.04-driver580.json",
    "sglang@0.5.23",
    State::Ready,
    Some("cu13"),
    "0.5.23"
)]
#[case::h100_580_vllm_0_33("h100-ubuntu24.04-driver580.json", "vllm@0.33.0", State::Ready, Some("cu13"), "0.33.0")]
#[case::h100_570_vllm("h100-ubuntu22.04-driver570.json", "vllm@0.20.1", State::Ready, Some("cu129"), "0.20.1")]
#[case::h100_570_sglang("h100-ubuntu22.04-driver570.json", "sglang@0.5.4", State::Ready, Some("cu12"), "0.5.4")]
#[case::h100_570_sglang_cuda13("h100-ubuntu22.04-driver570.json", "sglang@0.5.23", State::Unsupported, None, "0.5.23")]
#[case::h100_570_vllm_0_33("h100-ubuntu22.04-driver570.json", "vllm@0.33.0", State::Unsupported, None, "0.33.0")]
#[case::v100_vllm("v100.json", "vllm@0.20.1", State::Ready, Some("cu12"), "0.19.1")]
#[case::v100_sglang("v100.json", "sglang@0.5.4", State::Unsupported, None, "0.5.4")]
#[case::no_gpu_vllm("nogpu-debian12.json", "vllm@0.20.1", State::NotHere, None, "0.20.1")]
#[case::no_gpu_sglang("nogpu-debian12.json", "sglang@0.5.4", State::NotHere, None, "0.5.4")]
#[case::p100_vllm("p100-ubuntu22.04-driver535.json", "vllm@0.20.1", State::Unsupported, None, "0.20.1")]
#[case::p100_sglang("p100-ubuntu22.04-driver535.json", "sglang@0.5.4", State::Unsupported, None, "0.5.4")]
#[case::gh200_580_vllm("gh200-ubuntu24.04-driver580.json", "vllm@0.20.1", State::Ready, Some("cu13"), "0.20.1")]
#[case::gh200_580_sglang("gh200-ubuntu24.04-driver580.json", "sglang@0.5.4", State::Unsupported, None, "0.5.4")]
#[case::gh200_580_sglang_cuda13(
    "gh200-ubuntu24.04-driver580.json",
    "sglang@0.5.23",
    State::Ready,
    Some("cu13"),
    "0.5.23"
)]
#[case::small_disk_vllm("h100-smalldisk-driver580.json", "vllm@0.20.1", State::Failed, None, "0.20.1")]
#[case::small_disk_sglang("h100-smalldisk-driver580.json", "sglang@0.5.4", State::Failed, None, "0.5.4")]
#[case::t4_535_vllm("t4-ubuntu22.04-driver535.json", "vllm@0.20.1", State::Ready, Some("cu129"), "0.20.1")]
#[case::t4_535_sglang("t4-ubuntu22.04-driver535.json", "sglang@0.5.4", State::Unsupported, None, "0.5.4")]
#[case::v100_sglang_0_4("v100.json", "sglang@0.4.10", State::Unsupported, None, "0.4.10")]
#[case::h200_575_sglang_0_4("h200-ubuntu22.04-driver575.json", "sglang@0.4.10", State::Ready, Some("cu12"), "0.4.10")]
fn outcome(
    #[case] file: &str,
    #[case] want: &str,
    #[case] state: State,
    #[case] variant: Option<&str>,
    #[case] version: &str,
) {
    let s = one(file, want);
    assert_eq!(
        (s.state, s.variant.as_deref(), s.version.as_str()),
        (state, variant, version),
        "{file} {want}: {}",
        s.detail
    );
    if state == State::Ready {
        let installed = s.attempts.iter().find(|a| a.outcome == Outcome::Installed).unwrap();
        assert!(installed.reason.contains("computes on cuda:0"), "ready only once it computed: {}", installed.reason);
    }
}

#[test]
fn the_reasons_name_what_the_node_lacks() {
    let says = |file: &str, want: &str, text: &str| {
        let s = one(file, want);
        assert!(s.detail.contains(text), "{file} {want}: `{text}` missing from: {}", s.detail);
    };
    says("h100-ubuntu22.04-driver570.json", "sglang@0.5.23", "driver 580");
    says("h100-ubuntu22.04-driver570.json", "vllm@0.33.0", "has no CUDA 12.9 build: it needs torch 2.14.0");
    says(
        "gh200-ubuntu24.04-driver580.json",
        "sglang@0.5.4",
        "torch 2.8.0, whose aarch64 wheel on PyPI is built without CUDA",
    );
    says("v100.json", "sglang@0.5.4", "is 7.0");
    says("p100-ubuntu22.04-driver535.json", "vllm@0.20.1", "compute capability 6.0");
    says("h100-smalldisk-driver580.json", "vllm@0.20.1", "needs 25 GB free");
    says("nogpu-debian12.json", "vllm@0.20.1", "runs on NVIDIA GPUs and this node has none");
}

#[test]
fn an_older_vllm_for_a_volta_gpu_is_said_in_a_note() {
    let s = one("v100.json", "vllm@0.20.1");
    let note = s.note.unwrap_or_default();
    assert!(note.contains("vLLM 0.19.1, the newest built for compute capability 7.0, instead of 0.20.1"), "{note}");
}

#[test]
fn the_cuda_12_9_build_takes_the_wheel_from_github_and_torch_from_the_cu129_index() {
    let mut sim = Simulation::start(super::host("h100-ubuntu22.04-driver570.json")).unwrap();
    let s = sim.converge(&[Want::parse("vllm@0.20.1").unwrap()]).engines.remove(0);
    assert_eq!(s.variant.as_deref(), Some("cu129"), "{}", s.detail);
    let paths: Vec<String> = sim.server().requests().into_iter().map(|(_, p)| p).collect();
    assert!(paths.iter().any(|p| p.starts_with("/repos/vllm-project/vllm/releases/tags/v0.20.1")), "{paths:?}");
    assert!(paths.iter().any(|p| p.starts_with("/whl/cu129/torch/")), "torch from the cu129 index: {paths:?}");
    assert!(!paths.iter().any(|p| p.starts_with("/pypi/simple/torch/")), "not torch from PyPI: {paths:?}");
    assert!(paths.iter().any(|p| p.starts_with("/whl/cu129/torchvision/")), "torchvision too: {paths:?}");
    assert!(!paths.iter().any(|p| p.starts_with("/pypi/simple/vllm/")), "vllm is the release's wheel: {paths:?}");
}

#[test]
fn uv_is_installed_first_and_the_dependency_recorded() {
    let mut sim = Simulation::start(super::host("h100-ubuntu24.04-driver580.json")).unwrap();
    let s = sim.converge(&[Want::parse("vllm@0.20.1").unwrap()]).engines.remove(0);
    assert_eq!(s.state, State::Ready, "{}", s.detail);
    let uv = sim.engines_dir().join("uv/0.13.9-x86_64.json");
    assert!(uv.exists(), "uv installed through its own recipe");
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sim.engines_dir().join("vllm/0.20.1-cu13.json")).unwrap()).unwrap();
    assert_eq!(record["depends_on"], serde_json::json!(["uv 0.13.9 x86_64"]));
    // A second convergence verifies and downloads nothing.
    let downloads = sim.server().downloads();
    let again = sim.converge(&[Want::parse("vllm@0.20.1").unwrap()]).engines.remove(0);
    assert_eq!(again.attempts[0].outcome, Outcome::Verified);
    assert_eq!(sim.server().downloads(), downloads);
}

#[test]
fn a_wheel_needing_a_newer_glibc_fails_in_uvs_words_and_leaves_nothing() {
    let mut sim = Simulation::start(super::host("a10g-amazonlinux2-driver580.json")).unwrap();
    let s = sim.converge(&[Want::parse("vllm@0.20.1").unwrap()]).engines.remove(0);
    assert_eq!(s.state, State::Failed, "{}", s.detail);
    let cu13 = s.attempts.iter().find(|a| a.variant == "cu13").unwrap();
    assert!(cu13.reason.contains("No solution found when resolving dependencies"), "{}", cu13.reason);
    assert!(cu13.reason.contains("manylinux_2_26_x86_64"), "{}", cu13.reason);
    let staging = sim.engines_dir().join(".staging");
    let left: Vec<_> = std::fs::read_dir(&staging).map(|d| d.flatten().collect()).unwrap_or_default();
    assert!(left.is_empty(), "staging left behind: {left:?}");
    assert!(
        !sim.engines_dir().join("vllm").exists()
            || std::fs::read_dir(sim.engines_dir().join("vllm")).unwrap().count() == 0
    );
}

#[test]
fn a_torch_without_kernels_for_the_gpu_fails_the_gpu_check_and_the_next_build_is_tried() {
    // The truth changed: PyPI's CUDA 13 torch without Turing kernels.
    let mut catalog = embedded_catalog().clone();
    for index in catalog.indexes.iter_mut().filter(|i| i.name == "pypi") {
        for d in index.dists.iter_mut().filter(|d| d.name == "torch" && d.version == "2.11.0") {
            let cuda = d.cuda.as_mut().unwrap();
            cuda.sass.retain(|cc| cc != "7.5");
            cuda.ptx.clear();
        }
    }
    let host = super::host("t4-ubuntu22.04-driver535.json");
    let host = llmgw_model::host::Host {
        nvidia: host.nvidia.map(|mut n| {
            n.driver = llmgw_model::host::DriverVersion::parse("580.95.05").unwrap();
            n
        }),
        ..host
    };
    let mut sim = Simulation::with_catalog(host, &catalog).unwrap();
    let s = sim.converge(&[Want::parse("vllm@0.20.1").unwrap()]).engines.remove(0);
    assert_eq!((s.state, s.variant.as_deref()), (State::Ready, Some("cu129")), "{}", s.detail);
    let cu13 = &s.attempts[0];
    assert_eq!((cu13.variant.as_str(), cu13.outcome), ("cu13", Outcome::Failed));
    assert!(cu13.reason.contains("no kernel image is available for execution on the device"), "{}", cu13.reason);
}

/// The first recipe (docs/facts.md §10) offered SGLang from compute capability 7.5 (CUDA 13)
/// and 7.0 (CUDA 12); sgl-kernel is machine code for 8.0 and newer only.
/// Replayed, those plans fail at the GPU check; today's recipe refuses the
/// machines without a download.
#[rstest]
#[case::t4("t4-ubuntu22.04-driver535.json", "580.95.05", "h100-ubuntu24.04-driver580.json", "sglang@0.5.4")]
#[case::v100("v100.json", "535.183.01", "h200-ubuntu22.04-driver575.json", "sglang@0.4.10")]
fn the_seeds_sglang_thresholds_fail_at_the_gpu_check(
    #[case] file: &str,
    #[case] driver: &str,
    #[case] planned_on: &str,
    #[case] want: &str,
) {
    let want = Want::parse(want).unwrap();
    let seed_plan = recipe::plan(&want, &super::host(planned_on)).unwrap();
    let mut host = super::host(file);
    if let Some(n) = host.nvidia.as_mut() {
        n.driver = llmgw_model::host::DriverVersion::parse(driver).unwrap();
    }
    let mut sim = Simulation::start(host.clone()).unwrap();
    let s = sim.install_plan(&want, seed_plan).engines.remove(0);
    assert_eq!(s.state, State::Failed, "{}", s.detail);
    assert!(s.detail.contains("sgl_kernel cannot load its kernels"), "{}", s.detail);
    assert!(matches!(recipe::plan(&want, &host), Err(recipe::Refusal::Unsupported { .. })));
}

#[test]
fn a_version_that_does_not_exist_is_named_and_nothing_is_installed_for_it() {
    for (file, want) in [("v100.json", "vllm@9.9.9"), ("h100-ubuntu24.04-driver580.json", "vllm@9.9.9")] {
        let mut sim = Simulation::start(super::host(file)).unwrap();
        let s = sim.converge(&[Want::parse(want).unwrap()]).engines.remove(0);
        assert_eq!(s.state, State::Failed, "{file}: {}", s.detail);
        assert!(s.detail.contains("PyPI has no vllm 9.9.9"), "{file}: {}", s.detail);
        assert!(!s.detail.contains("was installed for it"), "gcc installed for nothing: {}", s.detail);
        assert!(!sim.system().host().packages.installed.contains("gcc"), "{file}");
    }
}

/// On a node the rules refuse the engine on (a driver too old, kernels
/// missing, no GPU at all), a version that does not exist is said first,
/// not a reason that speaks of it as if it did; an existing version keeps
/// the rules' reason.
#[rstest::rstest]
#[case::driver_too_old("t4-ubuntu22.04-driver535.json", "vllm@0.99.0", "PyPI has no vllm 0.99.0")]
#[case::kernels_missing("v100-ubuntu20.04-driver470.json", "sglang@0.5.5", "PyPI has no sglang 0.5.5")]
#[case::no_gpu("nogpu-debian12.json", "sglang@0.5.5", "PyPI has no sglang 0.5.5")]
#[case::uv_on_musl("nogpu-alpine3.21.json", "uv@9.9.9", "astral-sh/uv has no release `9.9.9`")]
fn a_version_that_does_not_exist_is_said_before_why_it_could_not_run(
    #[case] file: &str,
    #[case] want: &str,
    #[case] said: &str,
) {
    let host = super::host(file);
    assert!(recipe::plan(&Want::parse(want).unwrap(), &host).is_err(), "{file}: the rules refuse {want}");
    let s = simulate(&host, &[Want::parse(want).unwrap()]).unwrap().engines.remove(0);
    assert_eq!((s.state, s.detail.as_str()), (State::Failed, said), "{file}");
    let engine = want.split('@').next().unwrap();
    let version = match engine {
        "vllm" => "0.20.1",
        "sglang" => "0.5.4",
        _ => "0.13.9",
    };
    let existing = format!("{engine}@{version}");
    let kept = simulate(&host, &[Want::parse(&existing).unwrap()]).unwrap().engines.remove(0);
    assert_ne!(kept.state, State::Failed, "{file}: {existing}: {}", kept.detail);
    let unpublished = kept.detail.contains("PyPI has no") || kept.detail.contains("has no release");
    assert!(!unpublished, "{file}: {existing}: {}", kept.detail);
}

#[test]
fn without_a_package_manager_a_missing_compiler_is_named() {
    let mut host = super::host("h100-ubuntu24.04-driver580.json");
    host.os.package_family = llmgw_model::host::PackageFamily::None;
    host.packages.installed.remove("gcc");
    let s = simulate(&host, &[Want::parse("vllm@0.20.1").unwrap()]).unwrap().engines.remove(0);
    assert_eq!(s.state, State::Failed, "{}", s.detail);
    assert!(s.detail.contains("needs gcc"), "{}", s.detail);
    host.packages.installed.insert("gcc".into());
    let s = simulate(&host, &[Want::parse("vllm@0.20.1").unwrap()]).unwrap().engines.remove(0);
    assert_eq!(s.state, State::Ready, "{}", s.detail);
}

#[test]
fn jetson_gets_no_server_wheels() {
    let s = one("jetson-agx-orin-jetpack6.json", "vllm@0.20.1");
    assert_eq!(s.state, State::Unsupported, "{}", s.detail);
    assert!(s.detail.contains("Jetson's integrated GPU"), "{}", s.detail);
}

#[test]
fn the_status_says_which_want_it_answers() {
    let report = simulate(
        &super::host("v100.json"),
        &[Want::parse("vllm@0.20.1").unwrap(), Want::parse("vllm@0.19.1").unwrap()],
    )
    .unwrap();
    assert_eq!(report.engines[0].want, "vllm@0.20.1");
    assert_eq!(report.engines[1].want, "vllm@0.19.1");
    assert_eq!(report.engines[1].attempts[0].outcome, Outcome::Verified, "the first want's install answers the second");
}
