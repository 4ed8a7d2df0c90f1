//! uv: release archives of `astral-sh/uv`, the tool that installs the Python
//! engines; not an engine a node reports.

use std::collections::BTreeMap;

use super::engine::{Descriptor, Publisher, Variants, VersionCheck, VersionSyntax};
use super::{Build, Engine, GpuNeeds, Offer, Plan, Published, Refusal, Source, Want, pick, unsupported};
use llmgw_model::host::{Arch, Host};

/// The GitHub repository of the releases; tags have no `v` (`0.12.20`).
/// Source: `astral-sh/uv@crates/uv-bin-install/src/lib.rs` (download URLs).
const REPO: &str = "astral-sh/uv";

/// uv: release archives (prereleases passed over), one per GNU target of
/// x86-64 and aarch64, the variants; dotted versions; a tool, not reported.
pub(super) const DESCRIPTOR: Descriptor = Descriptor {
    engine: Engine::Uv,
    name: "uv",
    aliases: &[],
    publisher: Publisher::Releases { repo: REPO, assets_decide: false, skip_prereleases: true },
    variants: Variants::Named(&["x86_64", "aarch64"]),
    versions: VersionSyntax::Pep440,
    example: "0.12.20",
    checked_with: VersionCheck::VERSION_FLAG,
    reported: false,
    plan,
};

/// Plans uv on a host; what the release lists does not change its one build per target.
fn plan(want: &Want, host: &Host, _: Published) -> Result<Plan, Refusal> {
    let target = match host.arch {
        Arch::Amd64 => "x86_64",
        Arch::Arm64 => "aarch64",
        // uv publishes builds for more (powerpc64le, s390x, riscv64), but it
        // is installed here only for vLLM and SGLang, which are published
        // for x86-64 and aarch64 alone.
        other => {
            return Err(unsupported(format!(
                "uv is installed only for the Python GPU engines, which publish no build for {other}"
            )));
        }
    };
    let v = &want.version;
    let build = Build {
        variant: target.to_string(),
        version: v.clone(),
        // cargo-dist archive: one top-level directory named after the target
        // triple, holding `uv` and `uvx`. Source: `astral-sh/uv@dist-workspace.toml`.
        source: Source::Archives {
            repo: REPO.to_string(),
            tag: v.clone(),
            assets: vec![format!("uv-{target}-unknown-linux-gnu.tar.gz")],
            beside_binary: vec![],
        },
        packages: BTreeMap::new(),
        binary: "uv".to_string(),
        version_args: vec!["--version".to_string()],
        // `uv --version` prints "uv 0.12.20 (<commit> <date>)" on stdout.
        version_says: vec![format!("uv {v}")],
        runtime_libraries: vec![],
        gpu: None,
        cpu_flags: vec![],
        free_gb: 1,
        note: None,
        requires: vec![],
    };
    pick(want, vec![Offer { build, needs: GpuNeeds::default(), what: format!("uv {target}") }], host, vec![])
}
