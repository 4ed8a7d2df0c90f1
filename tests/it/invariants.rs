//! Properties that hold on every machine, checked on generated hosts: real
//! distributions, real GPUs, real driver branches, in any combination.
//!
//! Hosts are built as host-description JSON and parsed with
//! [`Host::from_json`], so the generator is checked by the parser too. The
//! properties that plan only run many cases; those that simulate (a fake
//! release server on loopback each time) run few.

use std::collections::BTreeSet;
use std::fmt;

use llmgw_core::converge::{Outcome, State, Status};
use llmgw_core::recipe::{self, Plan, Refusal, Want, compare_versions};
use llmgw_core::report::Report;
use llmgw_model::host::{ComputeCapability, Host};
use llmgw_sim::{default_wants, simulate};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Value, json};

/// Cases for the properties that only plan.
const PLAN_CASES: u32 = 256;
/// Cases for the properties that simulate whole hosts.
const SIM_CASES: u32 = 24;

/// Real distributions by glibc: `(glibc, deb (id, version, GLIBCXX), rpm
/// (id, version, GLIBCXX))`, the GLIBCXX of the libstdc++ each release ships.
const DISTROS: &[(&str, Release, Release)] = &[
    ("2.28", ("debian", "10", "3.4.25"), ("rhel", "8.10", "3.4.25")),
    ("2.31", ("ubuntu", "20.04", "3.4.28"), ("fedora", "32", "3.4.28")),
    ("2.34", ("ubuntu", "21.10", "3.4.29"), ("rhel", "9.4", "3.4.29")),
    ("2.35", ("ubuntu", "22.04", "3.4.30"), ("fedora", "36", "3.4.30")),
    ("2.36", ("debian", "12", "3.4.30"), ("fedora", "37", "3.4.30")),
    ("2.39", ("ubuntu", "24.04", "3.4.33"), ("fedora", "40", "3.4.33")),
    ("2.41", ("debian", "13", "3.4.33"), ("fedora", "42", "3.4.34")),
];

/// A distribution release: `(ID, VERSION_ID, GLIBCXX)`.
type Release = (&'static str, &'static str, &'static str);

/// Real GPUs, one per compute capability: `(major, minor, name, memory MiB)`.
const GPUS: &[(u32, u32, &str, u64)] = &[
    (3, 5, "Tesla K40m", 11_441),
    (3, 7, "Tesla K80", 11_441),
    (5, 2, "Tesla M60", 8_192),
    (6, 0, "Tesla P100-PCIE-16GB", 16_384),
    (6, 1, "Tesla P40", 24_576),
    (7, 0, "Tesla V100-SXM2-16GB", 16_384),
    (7, 5, "Tesla T4", 15_360),
    (8, 0, "NVIDIA A100-SXM4-80GB", 81_920),
    (8, 6, "NVIDIA GeForce RTX 3090", 24_576),
    (8, 7, "Orin (nvgpu)", 32_768),
    (8, 9, "NVIDIA L4", 23_034),
    (9, 0, "NVIDIA H100 80GB HBM3", 81_559),
    (10, 0, "NVIDIA B200", 183_359),
    (10, 3, "NVIDIA B300 SXM6 AC", 275_040),
    (12, 0, "NVIDIA RTX PRO 6000 Blackwell Server Edition", 97_887),
    (12, 1, "NVIDIA GB10", 122_571),
];

/// Driver branches NVIDIA published for data-center GPUs.
const BRANCHES: &[u32] = &[470, 525, 535, 550, 565, 570, 575, 580, 590];

/// The last branch that supports GPUs below compute capability 7.5: 590
/// dropped Maxwell, Pascal and Volta.
const LAST_BRANCH_FOR_OLD_GPUS: u32 = 580;

/// A driver: a branch and a point release (`550.127.05`).
#[derive(Debug, Clone, Copy)]
struct Driver {
    branch: u32,
    minor: u32,
    patch: u32,
}

impl Driver {
    fn text(self) -> String {
        format!("{}.{}.{:02}", self.branch, self.minor, self.patch)
    }
}

/// Everything a generated host is made of; [`Spec::host`] writes it as JSON.
#[derive(Clone)]
struct Spec {
    arch: &'static str,
    distro: usize,
    rpm: bool,
    avx2: bool,
    /// Indices into [`GPUS`]; empty for a machine without NVIDIA GPUs.
    gpus: Vec<usize>,
    driver: Driver,
    vulkan_icd: bool,
    disk_free_gb: u64,
    /// Which of the family's libgomp, Vulkan loader and gcc are installed.
    installed: [bool; 3],
    installable: bool,
}

/// A failing case prints as the host description it is, ready to save as a
/// host file and replay with `llmgw simulate --host`.
impl fmt::Debug for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&serde_json::to_string(&self.json()).map_err(|_| fmt::Error)?)
    }
}

impl Spec {
    fn json(&self) -> Value {
        let (glibc, deb, rpm) = DISTROS[self.distro];
        let (family, (id, version, glibcxx)) = if self.rpm { ("rpm", rpm) } else { ("deb", deb) };
        let names: [&str; 3] =
            if self.rpm { ["libgomp", "vulkan-loader", "gcc"] } else { ["libgomp1", "libvulkan1", "gcc"] };
        let installed: Vec<&str> = names.iter().zip(self.installed).filter(|(_, on)| *on).map(|(n, _)| *n).collect();
        let (model, flags): (&str, Vec<&str>) = match self.arch {
            "amd64" if self.avx2 => ("AMD EPYC 7R13 Processor", vec!["sse4_2", "avx", "avx2", "fma"]),
            "amd64" => ("Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz", vec!["sse4_2", "avx"]),
            "arm64" => ("Neoverse-V2", vec!["asimd", "sve", "sve2"]),
            _ => ("POWER9, altivec supported", vec!["altivec", "vsx"]),
        };
        let nvidia = if self.gpus.is_empty() {
            Value::Null
        } else {
            let gpus: Vec<Value> = self
                .gpus
                .iter()
                .map(|&i| {
                    let (major, minor, name, mib) = GPUS[i];
                    json!({"name": name, "compute_capability": format!("{major}.{minor}"), "memory_mib": mib})
                })
                .collect();
            json!({"driver": self.driver.text(), "vulkan_icd": self.vulkan_icd, "gpus": gpus})
        };
        json!({
            "name": format!("generated-{}-{id}{version}-{}gpu", self.arch, self.gpus.len()),
            "arch": self.arch,
            "os": {"id": id, "version": version, "package_family": family, "libc": "glibc",
                   "glibc": glibc, "glibcxx": glibcxx},
            "cpu": {"model": model, "flags": flags},
            "nvidia": nvidia,
            "disk_free_gb": self.disk_free_gb,
            "packages": {"installed": installed, "installable": self.installable},
        })
    }

    /// The host, through the same strict parser a host file goes through.
    fn host(&self) -> Host {
        let text = serde_json::to_string_pretty(&self.json()).unwrap();
        Host::from_json(&text).unwrap_or_else(|e| panic!("the generator wrote a host the parser refuses: {e}\n{text}"))
    }

    fn lowest_cc(&self) -> Option<ComputeCapability> {
        self.gpus.iter().map(|&i| ComputeCapability::new(GPUS[i].0, GPUS[i].1)).min()
    }
}

fn arch() -> impl Strategy<Value = &'static str> {
    prop_oneof![5 => Just("amd64"), 4 => Just("arm64"), 1 => Just("ppc64le")]
}

fn driver() -> impl Strategy<Value = Driver> {
    (prop::sample::select(BRANCHES), 1..250u32, 1..100u32).prop_map(|(branch, minor, patch)| Driver {
        branch,
        minor,
        patch,
    })
}

/// Hosts with `gpus` NVIDIA GPUs (a range; 0 is a machine without NVIDIA).
fn spec_with(gpus: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Spec> {
    (
        (arch(), 0..DISTROS.len(), any::<bool>(), any::<bool>()),
        prop::collection::vec(0..GPUS.len(), gpus),
        (driver(), any::<bool>(), 5..=2000u64),
        (any::<[bool; 3]>(), any::<bool>()),
    )
        .prop_map(
            |((arch, distro, rpm, avx2), gpus, (driver, vulkan_icd, disk_free_gb), (installed, installable))| Spec {
                arch,
                distro,
                rpm,
                avx2,
                gpus,
                driver,
                vulkan_icd,
                disk_free_gb,
                installed,
                installable,
            },
        )
}

fn spec() -> impl Strategy<Value = Spec> {
    spec_with(0..=4)
}

/// The wants of the properties that only plan: the defaults, and llama.cpp
/// asked for each of its variants.
fn plan_wants() -> Vec<Want> {
    let mut wants = default_wants();
    for v in ["cpu", "cuda-13.3", "cuda-12.8", "vulkan"] {
        wants.push(Want::parse(&format!("llama.cpp@b10850:{v}")).unwrap());
    }
    wants
}

fn candidates(plan: &Result<Plan, Refusal>) -> BTreeSet<(String, String)> {
    match plan {
        Ok(p) => p.candidates.iter().map(|b| (b.variant.clone(), b.version.clone())).collect(),
        Err(_) => BTreeSet::new(),
    }
}

fn sim(host: &Host) -> Report {
    simulate(host, &default_wants()).expect("the simulation starts")
}

/// A status in one line, for failure messages.
fn line(s: &Status) -> String {
    format!("{} {}: {} {:?}: {}", s.engine, s.version, s.state.as_str(), s.variant, s.detail)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(PLAN_CASES))]

    /// Every generated host is one the strict parser accepts, and says what
    /// it was generated to say.
    #[test]
    fn generated_hosts_parse(spec in spec()) {
        let host = spec.host();
        prop_assert_eq!(host.min_compute_capability(), spec.lowest_cc());
        prop_assert_eq!(host.nvidia.as_ref().map_or(0, |n| n.gpus.len()), spec.gpus.len());
    }

    /// No recipe offers the `cpu` build on a machine with an NVIDIA GPU, even
    /// when it is the variant asked for.
    #[test]
    fn plan_never_offers_cpu_on_an_nvidia_node(spec in spec_with(1..=4)) {
        let host = spec.host();
        for want in plan_wants() {
            let plan = recipe::plan(&want, &host);
            prop_assert!(
                !candidates(&plan).iter().any(|(v, _)| v == "cpu"),
                "{want}: the cpu build is a candidate on {}", host.name
            );
        }
    }

    /// Adding a GPU with a lower compute capability never selects a build
    /// needing a higher one.
    ///
    /// The builds offered for the larger machine are among those offered for
    /// the smaller one, except where the recipe falls back to an older
    /// version for the weaker card (vLLM 0.19.1 for a V100): that build
    /// must be older, must say so in a note, and is checked by the second
    /// half. And every build offered for the larger machine is offered (as
    /// the variant asked for) for a machine with its weakest card alone:
    /// the build's kernels reach down to the lowest compute capability.
    #[test]
    fn a_lower_gpu_never_selects_a_build_needing_a_higher_one(spec in spec_with(1..=3), pick in any::<Index>()) {
        let lowest = spec.lowest_cc().unwrap();
        let lower: Vec<usize> =
            (0..GPUS.len()).filter(|&i| ComputeCapability::new(GPUS[i].0, GPUS[i].1) <= lowest).collect();
        let added = lower[pick.index(lower.len())];
        let mut bigger = spec.clone();
        bigger.gpus.push(added);
        let (before_host, after_host) = (spec.host(), bigger.host());
        let weakest = Spec { gpus: vec![added], ..spec.clone() }.host();
        for want in plan_wants() {
            let before = recipe::plan(&want, &before_host);
            let after = recipe::plan(&want, &after_host);
            let old = candidates(&before);
            if let Ok(p) = &after {
                for b in &p.candidates {
                    let key = (b.variant.clone(), b.version.clone());
                    if old.contains(&key) {
                        continue;
                    }
                    // Only a fallback to an older version may bring a build the smaller machine did not get.
                    let older = old.iter().all(|(_, v)| compare_versions(&b.version, v).is_lt());
                    let noted = b.note.as_deref().is_some_and(|n| n.contains(&added_cc(added)));
                    prop_assert!(
                        older && noted,
                        "{want}: adding a {} GPU to {} brought {}@{} (note {:?}), not among {:?}",
                        added_cc(added), before_host.name, b.variant, b.version, b.note, old
                    );
                }
                for b in &p.candidates {
                    let alone = Want { variant: Some(b.variant.clone()), ..Want::new(want.engine, &want.version) };
                    let alone_plan = recipe::plan(&alone, &weakest);
                    prop_assert!(
                        candidates(&alone_plan).contains(&(b.variant.clone(), b.version.clone())),
                        "{want}: {}@{} offered for {} but not for its weakest GPU ({}) alone: {:?}",
                        b.variant, b.version, after_host.name, added_cc(added), alone_plan.err()
                    );
                }
            }
        }
    }
}

fn added_cc(i: usize) -> String {
    format!("{}.{}", GPUS[i].0, GPUS[i].1)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(SIM_CASES))]

    /// No simulated machine with an NVIDIA GPU ends with the `cpu` build
    /// ready, or installs it at all.
    #[test]
    fn simulation_never_readies_cpu_on_an_nvidia_node(spec in spec_with(1..=4)) {
        let report = sim(&spec.host());
        for s in &report.engines {
            prop_assert!(
                !(s.state == State::Ready && s.variant.as_deref() == Some("cpu")),
                "{}: {}", report.host, line(s)
            );
            for a in &s.attempts {
                prop_assert!(
                    !(a.variant == "cpu" && matches!(a.outcome, Outcome::Installed | Outcome::Verified)),
                    "{}: {} {}: the cpu build was {}", report.host, s.engine, s.version, a.outcome.as_str()
                );
            }
        }
    }

    /// Nothing is installed that the plan left out: every ready variant is
    /// among the plan's candidates for the host (the plan is what checks a
    /// build's needs), every build tried is, and every build the plan left
    /// out is reported left out, never installed.
    #[test]
    fn only_planned_builds_are_installed(spec in spec()) {
        let host = spec.host();
        let wants = default_wants();
        let report = sim(&host);
        prop_assert_eq!(report.engines.len(), wants.len());
        for (want, s) in wants.iter().zip(&report.engines) {
            let plan = recipe::plan(want, &host);
            let ok = candidates(&plan);
            if s.state == State::Ready {
                let installed = (s.variant.clone().unwrap_or_default(), s.version.clone());
                prop_assert!(ok.contains(&installed), "{}: {} is not among the plan's {:?}", host.name, line(s), ok);
            }
            let left_out: BTreeSet<&str> = match &plan {
                Ok(p) => p.excluded.iter().map(|e| e.variant.as_str()).collect(),
                Err(Refusal::Unsupported { excluded, .. }) => excluded.iter().map(|e| e.variant.as_str()).collect(),
                Err(Refusal::NotHere { .. }) => BTreeSet::new(),
            };
            for a in &s.attempts {
                if left_out.contains(a.variant.as_str()) {
                    prop_assert_eq!(
                        a.outcome, Outcome::LeftOut,
                        "{}: {}: the plan left out {}", host.name, line(s), a.variant
                    );
                } else {
                    prop_assert!(
                        ok.iter().any(|(v, _)| *v == a.variant),
                        "{}: {}: {} was {} but is not among the plan's candidates {:?}",
                        host.name, line(s), a.variant, a.outcome.as_str(), ok
                    );
                }
            }
            if plan.is_err() {
                prop_assert!(s.state != State::Ready, "{}: ready although the plan refused: {}", host.name, line(s));
            }
        }
    }

    /// A newer driver never turns a ready engine into failed or unsupported
    /// on the same GPUs. The upgrade stays within NVIDIA's support: at most
    /// 580 where the lowest GPU is below 7.5; where no newer branch is
    /// allowed, a newer point release of the same branch.
    #[test]
    fn a_driver_upgrade_never_breaks_a_ready_engine(spec in spec_with(1..=4), pick in any::<Index>()) {
        let old = spec.driver;
        let ceiling = if spec.lowest_cc().unwrap() < ComputeCapability::new(7, 5) { LAST_BRANCH_FOR_OLD_GPUS } else { u32::MAX };
        let newer: Vec<u32> = BRANCHES.iter().copied().filter(|&b| b > old.branch && b <= ceiling).collect();
        let new = if newer.is_empty() {
            Driver { minor: old.minor + 1, ..old }
        } else {
            Driver { branch: newer[pick.index(newer.len())], ..old }
        };
        let upgraded = Spec { driver: new, ..spec.clone() };
        let (before, after) = (sim(&spec.host()), sim(&upgraded.host()));
        for (b, a) in before.engines.iter().zip(&after.engines) {
            prop_assert!(
                !(b.state == State::Ready && a.state.is_fault()),
                "{}: driver {} -> {}: was {}, now {}", before.host, old.text(), new.text(), line(b), line(a)
            );
        }
    }

    /// Every fault says why: a `failed` or `unsupported` status has a
    /// detail, and each of its attempts a reason.
    #[test]
    fn every_fault_says_why(spec in spec()) {
        let report = sim(&spec.host());
        for s in &report.engines {
            if !s.state.is_fault() {
                continue;
            }
            prop_assert!(!s.detail.trim().is_empty(), "{}: {} {} is {} without a detail", report.host, s.engine, s.version, s.state.as_str());
            for a in &s.attempts {
                prop_assert!(
                    !a.reason.trim().is_empty(),
                    "{}: {}: attempt {} ({}) has no reason", report.host, line(s), a.variant, a.outcome.as_str()
                );
            }
        }
    }
}
