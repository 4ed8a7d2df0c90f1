//! The GPU check in simulation: the build's files read first (a CUDA build
//! with no kernel for any GPU of the node is refused before it runs), then
//! the listing, then the tiny model computed on every GPU listed, the
//! simulated GPU deciding from the build's kernels as the real one does. A
//! build with no kernel for one of the node's GPUs is listed and fails at
//! the compute step on that GPU, in CUDA's words; one whose PTX the driver
//! can compile computes. What goes wrong on the way (a damaged model, a
//! program that hangs or prints nothing, a GPU gone between the listing and
//! the computation) is each build's clear reason, the next build is tried,
//! and nothing is left half-installed.

use llmgw_core::converge::{Check, Outcome, State, Status};
use llmgw_core::recipe::{self, Want};
use llmgw_model::host::{DottedVersion, DriverVersion, Host};
use llmgw_sim::Simulation;
use llmgw_sim::truth::scenario::Scenario;
use llmgw_sim::truth::{Catalog, MachineFaults, ModelDamage, ProgramFault, embedded_catalog};

/// A host of `matrix/hosts/` moved to Ubuntu 24.04 (the CUDA builds of
/// b11459 need glibc 2.38).
fn noble(file: &str) -> Host {
    let mut host = super::host(file);
    host.os.version = "24.04".into();
    host.os.glibc = Some(DottedVersion::parse("2.39").unwrap());
    host.os.glibcxx = Some(DottedVersion::parse("3.4.33").unwrap());
    host
}

/// What the machine left: no staging, and no install of `want`'s engine.
fn nothing_installed(sim: &Simulation) {
    let list =
        |p: std::path::PathBuf| -> Vec<_> { std::fs::read_dir(p).map(|d| d.flatten().collect()).unwrap_or_default() };
    let staging = list(sim.engines_dir().join(".staging"));
    assert!(staging.is_empty(), "staging left: {staging:?}");
    let installed = list(sim.engines_dir().join("llama.cpp"));
    assert!(installed.is_empty(), "installed: {installed:?}");
}

fn attempt<'a>(s: &'a Status, variant: &str) -> &'a llmgw_core::converge::Attempt {
    s.attempts.iter().find(|a| a.variant == variant).unwrap_or_else(|| panic!("no {variant} attempt: {:?}", s.attempts))
}

#[test]
fn the_seed_rule_is_caught_before_the_build_runs_and_the_next_build_installed() {
    let want = Want::parse("llama.cpp@b11459").unwrap();
    // The seed's recipe offered CUDA 12.8 to an RTX 3090 on driver 535 (525
    // being CUDA 12's floor); its fatbins are compressed, which drivers
    // before 550 cannot load.
    // The plan the first recipe's rule gave on driver 535 is today's plan on 550.
    let seed_plan = recipe::plan(&want, &noble("rtx3090-ubuntu22.04-driver550.json")).unwrap();
    assert_eq!(seed_plan.candidates[0].variant, "cuda-12.8");

    let mut sim = Simulation::start(noble("rtx3090-ubuntu22.04-driver535.json")).unwrap();
    let s = sim.install_plan(&want, seed_plan).engines.remove(0);
    assert_eq!((s.state, s.variant.as_deref()), (State::Ready, Some("vulkan")));
    let cuda = &s.attempts[0];
    assert_eq!((cuda.variant.as_str(), cuda.outcome), ("cuda-12.8", Outcome::Failed));
    // Read from the build's files before it runs, as the loader would say it.
    assert_eq!(cuda.check, Some(Check::Inspect), "{}", cuda.reason);
    assert!(cuda.reason.contains("its CUDA code runs on no GPU of this node"), "{}", cuda.reason);
    assert!(cuda.reason.contains("compressed fatbin needs driver 550"), "{}", cuda.reason);

    // And today's recipe never downloads it there.
    let plan = recipe::plan(&want, &noble("rtx3090-ubuntu22.04-driver535.json")).unwrap();
    assert_eq!(plan.candidates.iter().map(|b| b.variant.as_str()).collect::<Vec<_>>(), ["vulkan"]);
}

#[test]
fn a_build_without_a_kernel_for_one_gpu_lists_it_and_fails_at_the_compute_step_in_cudas_words() {
    // An H100 and an L4 in one node; the CUDA 12.8 build of the scenario
    // has SASS for the L4 (8.9) and nothing the H100 (9.0) can run. Its
    // files serve one GPU of the node, so it is not refused before it runs:
    // it is listed, and the H100s fail at their first kernel.
    let text = std::fs::read_to_string(super::host_path("../../mocks/scenarios/llama-cuda-without-ptx.json")).unwrap();
    let catalog = Scenario::from_json(&text).unwrap().apply(embedded_catalog()).unwrap();
    let mut sim = Simulation::with_catalog(noble("h100-l4-ubuntu22.04-driver570.json"), &catalog).unwrap();
    let s = sim.converge(&[Want::parse("llama.cpp@b11459").unwrap()]).engines.remove(0);
    assert_eq!((s.state, s.variant.as_deref()), (State::Ready, Some("vulkan")), "{}", s.detail);
    let cuda = attempt(&s, "cuda-12.8");
    assert_eq!(cuda.check, Some(Check::Compute), "{}", cuda.reason);
    assert_eq!(
        cuda.reason,
        "the cuda-12.8 build does not compute: llama-bench on CUDA0 (NVIDIA H100 PCIe) was killed by a signal: \
         CUDA error: no kernel image is available for execution on the device; it computes on CUDA1: NVIDIA L4"
    );
    // The listing came first and named every GPU; then each computed in turn.
    let commands = sim.system().commands();
    let listing = commands.iter().position(|c| c == "llama-server --list-devices").unwrap();
    let runs: Vec<usize> = commands
        .iter()
        .enumerate()
        .filter(|(_, c)| c.starts_with("llama-bench ") && c.contains(" -dev CUDA"))
        .map(|(i, _)| i)
        .collect();
    assert!(!runs.is_empty() && runs.iter().all(|&r| r > listing), "{commands:?}");
}

#[test]
fn a_build_without_a_kernel_for_any_gpu_is_refused_before_it_runs() {
    let text = std::fs::read_to_string(super::host_path("../../mocks/scenarios/llama-cuda-without-ptx.json")).unwrap();
    let catalog = Scenario::from_json(&text).unwrap().apply(embedded_catalog()).unwrap();
    let mut sim = Simulation::with_catalog(super::host("h100-ubuntu24.04-driver580.json"), &catalog).unwrap();
    let s = sim.converge(&[Want::parse("llama.cpp@b11459").unwrap()]).engines.remove(0);
    assert_eq!((s.state, s.variant.as_deref()), (State::Ready, Some("vulkan")), "{}", s.detail);
    let cuda = attempt(&s, "cuda-12.8");
    assert_eq!(cuda.check, Some(Check::Inspect), "{}", cuda.reason);
    assert!(cuda.reason.contains("its CUDA code runs on no GPU of this node"), "{}", cuda.reason);
    assert!(!sim.system().commands().iter().any(|c| c.contains(" -dev CUDA")), "nothing of it ran");
}

#[test]
fn ptx_the_driver_can_compile_computes_and_ptx_from_a_newer_toolkit_fails_with_its_line() {
    // A T4 (7.5) has PTX only in both CUDA builds of b11459. On driver 590,
    // CUDA 13.4's PTX (which needs 615) cannot be compiled and CUDA 12.8's
    // (570) can. The recipe knows; a plan made as if the driver were 615
    // meets the build's files, which say so before anything runs.
    let want = Want::parse("llama.cpp@b11459").unwrap();
    let mut on_615 = super::host("t4-ubuntu24.04-driver590.json");
    on_615.nvidia.as_mut().unwrap().driver = DriverVersion::parse("615.71.09").unwrap();
    let plan = recipe::plan(&want, &on_615).unwrap();
    assert_eq!(plan.candidates[0].variant, "cuda-13.4");

    let mut sim = Simulation::start(super::host("t4-ubuntu24.04-driver590.json")).unwrap();
    let s = sim.install_plan(&want, plan).engines.remove(0);
    assert_eq!((s.state, s.variant.as_deref()), (State::Ready, Some("cuda-12.8")), "{}", s.detail);
    // Read from its files before it runs, in the words the GPU would say it in.
    assert_eq!(s.attempts[0].check, Some(Check::Inspect), "{}", s.attempts[0].reason);
    assert!(
        s.attempts[0].reason.contains(
            "Tesla T4 (7.5): `llama-b11459/libggml-cuda.so`: the provided PTX was compiled with an unsupported \
             toolchain. (CUDA 13.4 PTX for compute capability 7.5 needs driver 615, this is 590.44.01)"
        ),
        "{}",
        s.attempts[0].reason
    );
    assert_eq!(s.attempts[1].reason, "computes on CUDA0–CUDA3: 4× Tesla T4");
}

#[test]
fn the_cpu_build_computes_on_the_cpu() {
    let mut sim = Simulation::start(super::host("nogpu-debian12.json")).unwrap();
    let s = sim.converge(&[Want::parse("llama.cpp@b11459").unwrap()]).engines.remove(0);
    assert_eq!((s.state, s.variant.as_deref()), (State::Ready, Some("cpu")), "{}", s.detail);
    assert!(s.attempts[0].reason.ends_with("computes on the CPU"), "{}", s.attempts[0].reason);
    assert!(sim.system().commands().iter().any(|c| c.starts_with("llama-bench -m ") && c.contains(" -dev none ")));
    // The model is written for the check only: never part of the install.
    let installed = sim.engines_dir().join("llama.cpp/b11459-cpu/llama-b11459");
    assert!(installed.join("llama-bench").is_file() && !installed.join("tiny-llama.gguf").exists());
}

/// The embedded truth with the machine's faults set to `faults`.
fn faulty(faults: MachineFaults) -> Catalog {
    let mut catalog = embedded_catalog().clone();
    catalog.machine = faults;
    catalog
}

#[rstest::rstest]
#[case::model_truncated(
    MachineFaults { model_damaged: Some(ModelDamage::Truncated), ..Default::default() },
    "exited 1: llama_model_load: error loading model: tensor 'blk.0.ffn_down.weight' data is not within the file bounds, model is corrupted or incomplete"
)]
#[case::model_corrupted(
    MachineFaults { model_damaged: Some(ModelDamage::CorruptedMagic), ..Default::default() },
    "exited 1: gguf_init_from_reader: invalid magic characters: 'GGUX', expected 'GGUF'"
)]
#[case::program_hangs(
    MachineFaults { compute_program: Some(ProgramFault::Hangs), ..Default::default() },
    "was killed at its time limit of 120 s, printing nothing"
)]
#[case::program_prints_nothing(
    MachineFaults { compute_program: Some(ProgramFault::PrintsNothing), ..Default::default() },
    "exited 0, printing nothing"
)]
fn what_goes_wrong_at_the_compute_step_is_each_builds_reason_and_leaves_nothing(
    #[case] faults: MachineFaults,
    #[case] said: &str,
) {
    let mut sim =
        Simulation::with_catalog(super::host("l4-smalldisk-ubuntu24.04-driver580.json"), &faulty(faults)).unwrap();
    let start = sim.system().clock();
    let s = sim.converge(&[Want::parse("llama.cpp@b11459").unwrap()]).engines.remove(0);
    assert_eq!(s.state, State::Failed, "{}", s.detail);
    let tried: Vec<&str> =
        s.attempts.iter().filter(|a| a.outcome == Outcome::Failed).map(|a| a.variant.as_str()).collect();
    assert_eq!(tried, ["cuda-13.4", "cuda-12.8", "vulkan"], "every build tried in turn");
    for a in s.attempts.iter().filter(|a| a.outcome == Outcome::Failed) {
        let device = if a.variant == "vulkan" { "Vulkan0" } else { "CUDA0" };
        assert_eq!(a.check, Some(Check::Compute), "{}", a.reason);
        // The Vulkan build installed its loader first, and says so after its reason.
        let after = if a.variant == "vulkan" { " (the OS package libvulkan1 was installed for it)" } else { "" };
        assert_eq!(
            a.reason,
            format!("the {} build does not compute: llama-bench on {device} (NVIDIA L4) {said}{after}", a.variant)
        );
    }
    if said.contains("time limit") {
        assert_eq!(sim.system().clock() - start, 3 * 120, "each hang waited out on the simulated clock");
    }
    nothing_installed(&sim);
}

#[test]
fn a_gpu_gone_between_the_listing_and_the_computation_is_named_and_the_next_build_tried() {
    let faults = MachineFaults { gpu_lost_after_listing: Some(2), ..Default::default() };
    let mut sim = Simulation::with_catalog(super::host("h100-ubuntu24.04-driver580.json"), &faulty(faults)).unwrap();
    let s = sim.converge(&[Want::parse("llama.cpp@b11459").unwrap()]).engines.remove(0);
    assert_eq!(s.state, State::Failed, "{}", s.detail);
    // Off the bus after the listing: the devices renumber, the last is no more.
    assert_eq!(
        attempt(&s, "cuda-12.8").reason,
        "the cuda-12.8 build does not compute: llama-bench on CUDA7 (NVIDIA H100 80GB HBM3) exited 1: \
         error: invalid device: CUDA7; it computes on CUDA0–CUDA6: 7× NVIDIA H100 80GB HBM3"
    );
    // The next build's listing sees 7 of the node's 8.
    assert_eq!(attempt(&s, "vulkan").check, Some(Check::Gpu));
    assert!(
        attempt(&s, "vulkan").reason.starts_with("the vulkan build lists 7 Vulkan device(s) of this node's 8 GPUs")
    );
    nothing_installed(&sim);
}

#[test]
fn a_verified_install_computes_again_and_leaves_no_staging() {
    let mut sim = Simulation::start(super::host("v100.json")).unwrap();
    let want = [Want::parse("llama.cpp@b10850").unwrap()];
    assert_eq!(sim.converge(&want).engines[0].state, State::Ready);
    let s = sim.converge(&want).engines.remove(0);
    assert_eq!(
        (s.attempts[0].outcome, s.attempts[0].reason.as_str()),
        (Outcome::Verified, "computes on Vulkan0: Tesla V100-SXM2-16GB")
    );
    assert!(!sim.engines_dir().join(".staging").exists(), "the check's model is gone");
}
