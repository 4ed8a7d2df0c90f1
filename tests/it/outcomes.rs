//! Every row of the outcome table of issue 2: each host file, simulated end
//! to end, gives the state, variant and reason a user must see.

use llmgw_core::converge::{Outcome, State, Status};
use llmgw_core::recipe::Want;
use llmgw_sim::simulate;
use rstest::rstest;

fn llama(file: &str) -> Status {
    let want = Want::parse("llama.cpp@b11459").unwrap();
    let report = simulate(&super::host(file), &[want]).unwrap();
    report.engines.into_iter().next().unwrap()
}

#[rstest]
#[case::v100("v100.json", "vulkan")]
#[case::h100_ptx_of_13_4_needs_615("h100-ubuntu24.04-driver580.json", "cuda-12.8")]
#[case::rtx3090_535_compressed_fatbins("rtx3090-ubuntu22.04-driver535.json", "vulkan")]
#[case::rtx3090_550_glibc_2_35("rtx3090-ubuntu22.04-driver550.json", "vulkan")]
#[case::t4_550("t4-ubuntu22.04-driver550.json", "vulkan")]
#[case::no_gpu_debian12("nogpu-debian12.json", "cpu")]
#[case::no_avx2("nogpu-noavx2-ubuntu22.04.json", "cpu")]
#[case::gh200_580_no_cuda_12_on_arm64("gh200-ubuntu24.04-driver580.json", "vulkan")]
#[case::gh200_570("gh200-ubuntu24.04-driver570.json", "vulkan")]
fn llama_cpp_is_ready_with(#[case] file: &str, #[case] variant: &str) {
    let s = llama(file);
    assert_eq!((s.state, s.variant.as_deref()), (State::Ready, Some(variant)), "{file}: {}", s.detail);
    let binary = s.binary.expect("a ready install names its binary");
    assert_eq!(binary, format!("llama.cpp/b11459-{variant}/llama-b11459/llama-server"));
    let installed = s.attempts.iter().find(|a| a.outcome == Outcome::Installed).unwrap();
    // Ready only once the tiny model computed: on every GPU, or on the CPU.
    let on = if variant == "cpu" { "computes on the CPU" } else { "computes on " };
    assert!(installed.reason.contains(on), "{}", installed.reason);
}

#[test]
fn v100_leaves_out_both_cuda_builds_with_their_reasons_and_installs_libvulkan1() {
    let s = llama("v100.json");
    let reason = |v: &str| s.attempts.iter().find(|a| a.variant == v).unwrap().clone();
    let cuda13 = reason("cuda-13.4");
    assert_eq!(cuda13.outcome, Outcome::LeftOut);
    assert!(
        cuda13.reason.contains("driver 580") && cuda13.reason.contains("compute capability 7.5 and newer"),
        "{}",
        cuda13.reason
    );
    let cuda12 = reason("cuda-12.8");
    assert_eq!(cuda12.outcome, Outcome::LeftOut);
    assert!(cuda12.reason.contains("driver 570") && cuda12.reason.contains("PTX"), "{}", cuda12.reason);
    let vulkan = reason("vulkan");
    assert!(vulkan.reason.contains("installed the OS package libvulkan1"), "{}", vulkan.reason);
    assert!(vulkan.reason.contains("Vulkan0: Tesla V100-SXM2-16GB"), "{}", vulkan.reason);
}

#[test]
fn no_avx2_is_a_note_naming_avx2() {
    let s = llama("nogpu-noavx2-ubuntu22.04.json");
    assert!(s.note.as_deref().is_some_and(|n| n.contains("avx2")), "{:?}", s.note);
}

#[test]
fn rhel9_fails_naming_every_missing_version() {
    let s = llama("a100-rhel9-driver570.json");
    assert_eq!(s.state, State::Failed);
    for v in ["GLIBC_2.38", "GLIBCXX_3.4.30", "GLIBCXX_3.4.32"] {
        assert!(s.detail.contains(v), "{v} missing from: {}", s.detail);
    }
    // Both builds were downloaded, and each refused when its files were read.
    let failed: Vec<&str> =
        s.attempts.iter().filter(|a| a.outcome == Outcome::Failed).map(|a| a.variant.as_str()).collect();
    assert_eq!(failed, ["cuda-12.8", "vulkan"]);
    assert!(s.binary.is_none());
}

#[test]
fn ubuntu_20_04_fails_naming_glibc_2_34() {
    let s = llama("nogpu-ubuntu20.04.json");
    assert_eq!(s.state, State::Failed);
    assert!(s.detail.contains("GLIBC_2.34 (`llama-b11459/"), "{}", s.detail);
    assert!(s.detail.contains("this node has glibc 2.31"), "{}", s.detail);
}

#[test]
fn ppc64le_is_unsupported_saying_no_build() {
    let s = llama("ac922-rhel8-ppc64le.json");
    assert_eq!(s.state, State::Unsupported);
    assert!(s.detail.contains("llama.cpp publishes no Linux build for ppc64le"), "{}", s.detail);
}

#[test]
fn a_container_without_the_vulkan_icd_fails_listing_no_vulkan_device() {
    let s = llama("t4-container-novulkan-driver550.json");
    assert_eq!(s.state, State::Failed);
    assert!(s.detail.contains("lists no Vulkan device"), "{}", s.detail);
}

#[test]
fn an_air_gapped_node_fails_naming_the_package() {
    let s = llama("v100-airgapped-driver535.json");
    assert_eq!(s.state, State::Failed);
    assert!(s.detail.contains("could not install the OS package libvulkan1"), "{}", s.detail);
}

#[rstest]
#[case("v100.json", State::Ready, Some("x86_64"))]
#[case("gh200-ubuntu24.04-driver580.json", State::Ready, Some("aarch64"))]
#[case("ac922-rhel8-ppc64le.json", State::Unsupported, None)]
fn uv(#[case] file: &str, #[case] state: State, #[case] variant: Option<&str>) {
    let want = Want::parse("uv@0.12.20").unwrap();
    let s = simulate(&super::host(file), &[want]).unwrap().engines.remove(0);
    assert_eq!((s.state, s.variant.as_deref()), (state, variant), "{}", s.detail);
}
