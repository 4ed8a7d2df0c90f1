//! Faults of the publisher (mocks/scenarios/): retried with backoff on the
//! simulated clock, waited out when the server says how long, and failed
//! with the reason when waiting is no use. Asserted: the state, the
//! reason's words, the request count on the fake server, the clock.

use llmgw_core::converge::State;
use llmgw_core::recipe::Want;
use llmgw_sim::Simulation;
use llmgw_sim::machine::SIM_EPOCH;
use llmgw_sim::truth::Catalog;
use llmgw_sim::truth::embedded_catalog;
use llmgw_sim::truth::scenario::Scenario;

fn scenario(name: &str) -> Catalog {
    let path = super::host_path(&format!("../../mocks/scenarios/{name}.json"));
    Scenario::from_json(&std::fs::read_to_string(path).unwrap()).unwrap().apply(embedded_catalog()).unwrap()
}

fn requests_to(sim: &Simulation, path_part: &str) -> usize {
    sim.server().requests().iter().filter(|(_, p)| p.contains(path_part)).count()
}

fn llama(catalog: &Catalog) -> (Simulation, llmgw_core::converge::Status) {
    let mut sim = Simulation::with_catalog(super::host("v100.json"), catalog).unwrap();
    let s = sim.converge(&[Want::parse("llama.cpp@b10850").unwrap()]).engines.remove(0);
    (sim, s)
}

#[test]
fn a_503_twice_is_retried_with_backoff_and_the_build_installed() {
    let (sim, s) = llama(&scenario("github-503-twice"));
    assert_eq!((s.state, s.variant.as_deref()), (State::Ready, Some("vulkan")), "{}", s.detail);
    assert_eq!(requests_to(&sim, "github-production-release-asset"), 3, "three attempts at the body");
    let waited = sim.system().clock() - SIM_EPOCH;
    assert!((6..=8).contains(&waited), "2 s then 4 s, plus jitter: {waited}");
}

#[test]
fn a_502_of_the_release_metadata_is_asked_again() {
    let (sim, s) = llama(&scenario("github-502-metadata-once"));
    assert_eq!(s.state, State::Ready, "{}", s.detail);
    assert_eq!(requests_to(&sim, "/releases/tags/b10850"), 2, "the 502, then the answer");
    let waited = sim.system().clock() - SIM_EPOCH;
    assert!((2..=3).contains(&waited), "one backoff of 2 s plus jitter: {waited}");
}

#[test]
fn a_429_with_retry_after_is_waited_out() {
    let (sim, s) = llama(&scenario("github-429-retry-after"));
    assert_eq!(s.state, State::Ready, "{}", s.detail);
    assert_eq!(requests_to(&sim, "/releases/tags/b10850"), 2);
    assert_eq!(sim.system().clock() - SIM_EPOCH, 30, "exactly the Retry-After");
}

#[test]
fn a_rate_limit_used_up_for_an_hour_fails_naming_it_without_waiting() {
    let (sim, s) = llama(&scenario("github-rate-limit-exhausted"));
    assert_eq!(s.state, State::Failed);
    assert!(s.detail.contains("rate limit") && s.detail.contains("GITHUB_TOKEN"), "{}", s.detail);
    assert_eq!(requests_to(&sim, "/releases/tags/b10850"), 1, "asked once: the metadata is kept for the pass");
    assert_eq!(sim.system().clock(), SIM_EPOCH, "no waiting that could not help");
    assert!(!sim.system().host().packages.installed.contains("libvulkan1"), "nothing installed for it");
}

#[test]
fn a_rate_limit_resetting_soon_is_waited_for() {
    let mut catalog = scenario("github-rate-limit-exhausted");
    catalog.faults[0].rate_limit_reset_in_secs = Some(600);
    catalog.faults[0].times = Some(1);
    let (sim, s) = llama(&catalog);
    assert_eq!(s.state, State::Ready, "{}", s.detail);
    assert_eq!(sim.system().clock() - SIM_EPOCH, 601, "until the reset, and a second");
}

#[test]
fn a_500_every_time_fails_after_five_attempts_leaving_nothing() {
    let (sim, s) = llama(&scenario("github-500-always"));
    assert_eq!(s.state, State::Failed);
    assert!(s.detail.contains("HTTP 500") && s.detail.contains("after 5 attempts"), "{}", s.detail);
    assert_eq!(requests_to(&sim, "github-production-release-asset"), 5);
    let staging: Vec<_> =
        std::fs::read_dir(sim.engines_dir().join(".staging")).map(|d| d.flatten().collect()).unwrap_or_default();
    assert!(staging.is_empty(), "{staging:?}");
    assert!(!sim.engines_dir().join("llama.cpp/b10850-vulkan").exists());
}

#[test]
fn a_changed_byte_is_downloaded_again_then_refused_naming_both_digests() {
    let mut catalog = embedded_catalog().clone();
    super::asset_mut(&mut catalog, "llama-b10850-bin-ubuntu-vulkan-x64.tar.gz").tampered = true;
    let (sim, s) = llama(&catalog);
    assert_eq!(s.state, State::Failed);
    let reason = &s.attempts[0].reason;
    assert!(
        reason.contains("downloaded twice") && reason.contains("does not match the publisher's digest"),
        "{reason}"
    );
    assert_eq!(requests_to(&sim, "github-production-release-asset"), 2, "once more, then no further");
}

/// The installer dies before each change it makes to the machine, one run
/// per change, for an archive engine and a Python one: the next convergence
/// reports nothing as ready that is not whole (it installs or verifies),
/// removes what the crash left in staging, and completes the install.
#[rstest::rstest]
#[case::llama_cpp("v100.json", "llama.cpp@b10850", "vulkan")]
#[case::vllm("h100-ubuntu24.04-driver580.json", "vllm@0.20.1", "cu13")]
fn a_crash_before_any_change_is_recovered_by_the_next_convergence(
    #[case] file: &str,
    #[case] want: &str,
    #[case] variant: &str,
) {
    use llmgw_core::converge::Outcome;
    let want = [Want::parse(want).unwrap()];
    let mut crashes = 0;
    for k in 1.. {
        let mut catalog = embedded_catalog().clone();
        catalog.machine.crash_before_change = Some(k);
        let mut sim = Simulation::with_catalog(super::host(file), &catalog).unwrap();
        // The simulation recovers as the next run of the installer would:
        // the same directory, converged again.
        let s = sim.converge(&want).engines.remove(0);
        match sim.take_crashes().as_slice() {
            [] => {
                // Past the last change: this run had no crash and installed.
                assert_eq!(s.state, State::Ready);
                break;
            }
            [crash] => assert_eq!(crash.before_change, k),
            more => panic!("one crash per run, not {more:?}"),
        }
        crashes += 1;
        assert_eq!(
            (s.state, s.variant.as_deref()),
            (State::Ready, Some(variant)),
            "after a crash before change {k}: {}",
            s.detail
        );
        let first = s.attempts.iter().find(|a| a.outcome != Outcome::LeftOut && a.outcome != Outcome::Stale).unwrap();
        assert!(matches!(first.outcome, Outcome::Installed | Outcome::Verified), "change {k}: {:?}", s.attempts);
        let staging: Vec<_> =
            std::fs::read_dir(sim.engines_dir().join(".staging")).map(|d| d.flatten().collect()).unwrap_or_default();
        assert!(staging.is_empty(), "change {k}: staging left: {staging:?}");
    }
    assert!(crashes >= 8, "every change of an install was crashed before: {crashes}");
}

#[test]
fn a_package_manager_that_fails_is_the_builds_reason() {
    let mut catalog = embedded_catalog().clone();
    catalog.machine.package_manager_fails = true;
    let (_, s) = llama(&catalog);
    assert_eq!(s.state, State::Failed);
    assert!(
        s.detail.contains("could not install the OS package libvulkan1") && s.detail.contains("dpkg returned an error"),
        "{}",
        s.detail
    );
}

#[test]
fn a_disk_that_fills_up_mid_install_fails_the_build_and_leaves_nothing() {
    let mut catalog = embedded_catalog().clone();
    catalog.machine.disk_full_after_bytes = Some(1000);
    let (sim, s) = llama(&catalog);
    assert_eq!(s.state, State::Failed);
    assert!(s.detail.contains("No space left on device"), "{}", s.detail);
    let staging: Vec<_> =
        std::fs::read_dir(sim.engines_dir().join(".staging")).map(|d| d.flatten().collect()).unwrap_or_default();
    assert!(staging.is_empty(), "{staging:?}");
}

/// What a failed or recovered download left: the staging directory empty,
/// and the build installed (its record there) or not at all.
fn assert_nothing_half_installed(sim: &Simulation, installed: bool) {
    let staging: Vec<_> =
        std::fs::read_dir(sim.engines_dir().join(".staging")).map(|d| d.flatten().collect()).unwrap_or_default();
    assert!(staging.is_empty(), "staging left: {staging:?}");
    let dir = sim.engines_dir().join("llama.cpp/b10850-vulkan");
    assert_eq!(dir.exists(), installed, "{}", dir.display());
    let record = sim.engines_dir().join("llama.cpp/b10850-vulkan.json");
    assert_eq!(record.exists(), installed, "{}", record.display());
    if installed {
        let record = std::fs::read_to_string(record).unwrap();
        assert!(record.contains("8ef36fa275956c6b02405c9896f2b0dfb12b13c80bdf05f5043579739fa11c08"), "{record}");
    }
}

#[test]
fn a_body_cut_short_once_is_downloaded_again_and_installed() {
    let (sim, s) = llama(&scenario("download-cut-short-once"));
    assert_eq!((s.state, s.variant.as_deref()), (State::Ready, Some("vulkan")), "{}", s.detail);
    assert_eq!(requests_to(&sim, "github-production-release-asset"), 2, "the cut one, then the whole one");
    assert_nothing_half_installed(&sim, true);
}

#[test]
fn a_connection_reset_every_time_fails_after_five_attempts_leaving_nothing() {
    let (sim, s) = llama(&scenario("download-reset-always"));
    assert_eq!(s.state, State::Failed);
    let reason = &s.attempts[0].reason;
    assert!(reason.contains("reset") && reason.contains("after 5 attempts"), "{reason}");
    assert_eq!(requests_to(&sim, "github-production-release-asset"), 5);
    assert_nothing_half_installed(&sim, false);
}

#[test]
fn a_byte_changed_once_is_downloaded_again_and_the_publishers_bytes_installed() {
    let (sim, s) = llama(&scenario("download-one-byte-changed-once"));
    assert_eq!(s.state, State::Ready, "{}", s.detail);
    assert_eq!(requests_to(&sim, "github-production-release-asset"), 2, "once more after the mismatch, no further");
    assert_nothing_half_installed(&sim, true);
}

#[test]
fn an_answer_slower_than_the_timeout_is_asked_again() {
    let (sim, s) = llama(&scenario("download-slow-once"));
    assert_eq!(s.state, State::Ready, "{}", s.detail);
    assert_eq!(requests_to(&sim, "github-production-release-asset"), 2, "timed out once");
    let waited = sim.system().clock() - SIM_EPOCH;
    assert!((2..=3).contains(&waited), "one backoff of 2 s plus jitter on the simulated clock: {waited}");
    assert_nothing_half_installed(&sim, true);
}

#[test]
fn a_redirect_loop_fails_at_once_without_asking_again() {
    let (sim, s) = llama(&scenario("download-redirect-loop"));
    assert_eq!(s.state, State::Failed);
    assert!(s.attempts[0].reason.contains("redirected more than 10 times (a redirect loop)"), "{}", s.detail);
    assert_eq!(requests_to(&sim, "/releases/download/"), 1, "a loop is not worth asking again");
    assert_eq!(sim.system().clock(), SIM_EPOCH, "no backoff");
    assert_nothing_half_installed(&sim, false);
}

#[test]
fn a_body_that_never_ends_is_cut_at_its_declared_size_and_not_asked_again() {
    let (sim, s) = llama(&scenario("download-endless-body"));
    assert_eq!(s.state, State::Failed);
    let vulkan = &s.attempts[0];
    assert!(
        vulkan.reason.starts_with("downloading llama-b10850-bin-ubuntu-vulkan-x64.tar.gz: the answer goes on past ")
            && vulkan.reason.contains(" bytes, the size the publisher declared; it was cut there"),
        "{}",
        vulkan.reason
    );
    let asked = requests_to(&sim, "github-production-release-asset");
    assert_eq!(asked, 1, "a body too long is the server's doing: not asked again");
    assert_eq!(sim.system().clock(), SIM_EPOCH, "no backoff");
}

#[test]
fn release_metadata_that_never_ends_is_cut_at_8_mib() {
    let mut sim = Simulation::with_catalog(super::host("v100.json"), &scenario("github-endless-metadata")).unwrap();
    let s = sim.converge(&[Want::parse("uv@0.12.20").unwrap()]).engines.remove(0);
    assert_eq!(s.state, State::Failed);
    assert!(
        s.detail.contains("release `0.12.20` of astral-sh/uv: the answer goes on past 8388608 bytes"),
        "{}",
        s.detail
    );
    assert_eq!(requests_to(&sim, "/releases/tags/0.12.20"), 1, "not asked again");
}

#[test]
fn a_403_with_retry_after_is_githubs_secondary_limit_and_waited_out() {
    let (sim, s) = llama(&scenario("github-403-secondary-rate-limit"));
    assert_eq!(s.state, State::Ready, "{}", s.detail);
    assert_eq!(requests_to(&sim, "/releases/tags/b10850"), 2);
    assert_eq!(sim.system().clock() - SIM_EPOCH, 60, "exactly the Retry-After");
}
