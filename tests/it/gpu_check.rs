//! The simulation catches a wrong recipe rule at the GPU check: the first
//! recipe (docs/facts.md §10) offered llama.cpp's CUDA 12.8 build to an RTX 3090 on driver 535
//! (525 being CUDA 12's floor); the build's fatbins are compressed, which
//! drivers before 550 cannot load: the installer reads that from the
//! unpacked files before running them, and falls back. The recipe now leaves it out (550); this test
//! replays the old rule's plan, on the card's Ubuntu 24.04 twin (the CUDA
//! builds need glibc 2.38).

use llmgw::converge::{Outcome, State};
use llmgw::recipe::{self, Want};
use llmgw::sim::Simulation;

#[test]
fn the_seed_rule_is_caught_before_the_build_runs_and_the_next_build_installed() {
    let want = Want::parse("llama.cpp@b11459").unwrap();
    let noble = |file: &str| {
        let mut host = super::host(file);
        host.os.version = "24.04".into();
        host.os.glibc = Some(llmgw::host::DottedVersion::parse("2.39").unwrap());
        host.os.glibcxx = Some(llmgw::host::DottedVersion::parse("3.4.33").unwrap());
        host
    };
    // The plan the first recipe's rule gave on driver 535 is today's plan on 550.
    let seed_plan = recipe::plan(&want, &noble("rtx3090-ubuntu22.04-driver550.json")).unwrap();
    assert_eq!(seed_plan.candidates[0].variant, "cuda-12.8");

    let mut sim = Simulation::start(noble("rtx3090-ubuntu22.04-driver535.json")).unwrap();
    let s = sim.install_plan(&want, seed_plan).engines.remove(0);
    assert_eq!((s.state, s.variant.as_deref()), (State::Ready, Some("vulkan")));
    let cuda = &s.attempts[0];
    assert_eq!((cuda.variant.as_str(), cuda.outcome), ("cuda-12.8", Outcome::Failed));
    // Read from the build's files before it runs, as the loader would say it.
    assert_eq!(cuda.check, Some(llmgw::converge::Check::Inspect), "{}", cuda.reason);
    assert!(cuda.reason.contains("its CUDA code runs on no GPU of this node"), "{}", cuda.reason);
    assert!(cuda.reason.contains("compressed fatbin needs driver 550"), "{}", cuda.reason);

    // And today's recipe never downloads it there.
    let plan = recipe::plan(&want, &noble("rtx3090-ubuntu22.04-driver535.json")).unwrap();
    assert_eq!(plan.candidates.iter().map(|b| b.variant.as_str()).collect::<Vec<_>>(), ["vulkan"]);
}
