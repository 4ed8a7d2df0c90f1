//! The engine report: which engines this node can run, and at which
//! versions ([`Reported`]), merging two sources as llmgw's first version
//! did (docs/facts.md §10):
//!
//! 1. the versions the agent installed and saw run (wants `ready` in the
//!    last pass);
//! 2. the engines the configuration names by hand (`engines.binaries`)
//!    whose version command answers ([`probe`]).
//!
//! Installed wins: it is the one seen to run. An engine the configuration
//! disables is never reported. Nothing merely found on the machine counts:
//! a `llama-server` on `PATH` is somebody's, not necessarily one that works.
//! uv is a tool of the Python engines, not an engine a node reports.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::converge::{State, Status};
use crate::recipe::{Engine, VersionCheck, VersionSyntax, compare_versions};
use crate::system::{Cmd, System};

/// Where a reported version was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Seen {
    /// Installed by the agent and seen to run in its last pass.
    Installed,
    /// Named in the configuration; its version command answered.
    Configured,
    /// Named in the configuration, but its version command did not answer
    /// with a version (a binary that is not there, or no longer runs): no
    /// versions, and the node cannot run it.
    NotAnswering,
}

/// What each configured binary answered ([`probe`]): its version, or why
/// it gave none, in words.
pub type Probed = BTreeMap<Engine, Result<String, String>>;

/// One engine this node can run: `{"engine": "llama.cpp", "versions": ["b10850"], "seen": "installed"}`
/// (or, `"seen": "not_answering"`, one configured that does not answer).
/// The status file and `llmgw agent --report --format json` both write this
/// type, so their keys come in the same order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reported {
    /// The engine.
    pub engine: Engine,
    /// Its versions, oldest first.
    pub versions: Vec<String>,
    /// Which source they come from.
    pub seen: Seen,
}

/// The versions the agent installed and saw run: per engine (uv left out),
/// the version of every `ready` status, oldest first, without repeats.
pub fn installed(statuses: &[Status]) -> BTreeMap<Engine, Vec<String>> {
    let mut out: BTreeMap<Engine, Vec<String>> = BTreeMap::new();
    for s in statuses.iter().filter(|s| s.state == State::Ready && s.engine.descriptor().reported) {
        let v = out.entry(s.engine).or_default();
        if !v.contains(&s.version) {
            v.push(s.version.clone());
        }
    }
    for v in out.values_mut() {
        v.sort_by(|a, b| compare_versions(a, b));
    }
    out
}

/// Merges the two sources: installed wins over configured; a configured
/// binary that does not answer is [`Seen::NotAnswering`]; disabled engines
/// and uv are left out. Sorted by engine.
pub fn merge(
    installed: &BTreeMap<Engine, Vec<String>>,
    configured: &Probed,
    disabled: &BTreeSet<Engine>,
) -> Vec<Reported> {
    let mut out: BTreeMap<Engine, Reported> = BTreeMap::new();
    for (e, v) in configured {
        let r = match v {
            Ok(v) => Reported { engine: *e, versions: vec![v.clone()], seen: Seen::Configured },
            Err(_) => Reported { engine: *e, versions: vec![], seen: Seen::NotAnswering },
        };
        out.insert(*e, r);
    }
    for (e, v) in installed.iter().filter(|(_, v)| !v.is_empty()) {
        out.insert(*e, Reported { engine: *e, versions: v.clone(), seen: Seen::Installed });
    }
    out.into_values().filter(|r| !disabled.contains(&r.engine) && r.engine.descriptor().reported).collect()
}

/// Seconds a configured binary's version command may take.
pub const PROBE_TIMEOUT_SECS: u64 = 30;

/// Asks each configured binary its version (`llama-server --version`,
/// `vllm --version`; for SGLang, its interpreter imports it) and keeps the
/// engines that answer with exit 0 and a version; for the others, why not,
/// in words, also logged at warning level:
/// `vllm's configured binary /opt/vllm/bin/vllm does not answer --version: it exited 126: …`.
/// uv is not asked.
pub fn probe(sys: &mut dyn System, binaries: &BTreeMap<Engine, PathBuf>) -> Probed {
    let mut out = BTreeMap::new();
    for (&engine, binary) in binaries.iter().filter(|(e, _)| e.descriptor().reported) {
        let VersionCheck { args, asked } = engine.descriptor().checked_with;
        let cmd = Cmd::new(binary, args.iter().copied()).timeout(PROBE_TIMEOUT_SECS);
        let why = match sys.run(&cmd) {
            Ok(o) if o.success() => match version_in(engine, &format!("{}\n{}", o.stdout, o.stderr)) {
                Some(v) => {
                    out.insert(engine, Ok(v));
                    continue;
                }
                None => format!("it printed no version of {engine}"),
            },
            Ok(o) => {
                let how = format!("it {}", o.ended);
                let how = match o.left_out_words() {
                    Some(printed) => format!("{how} ({printed})"),
                    None => how,
                };
                match o.stderr.lines().find(|l| !l.trim().is_empty()) {
                    None => how,
                    Some(said) => format!("{how}: {}", said.trim()),
                }
            }
            Err(e) => e.to_string(),
        };
        let why = format!("{engine}'s configured binary {} does not answer {asked}: {why}", binary.display());
        tracing::warn!(%engine, "{why}");
        out.insert(engine, Err(why));
    }
    out
}

/// The version an engine's version command printed: llama.cpp's
/// `version: 0.6.0-dev (build 11459, commit …)` (or the older `version:
/// 10850 (3f1c2a9)`) is `b11459`; the others print their dotted version (a
/// local label such as `+cu129` is dropped).
pub fn version_in(engine: Engine, text: &str) -> Option<String> {
    if engine.descriptor().versions == VersionSyntax::BuildTag {
        return crate::recipe::build_in_version_line(text).map(|n| format!("b{n}"));
    }
    text.split_whitespace()
        .map(|w| w.split('+').next().unwrap_or(w).trim_start_matches('v'))
        .find(|w| engine.check_version(w).is_ok())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(Engine, &str)]) -> Probed {
        pairs.iter().map(|(e, v)| (*e, Ok(v.to_string()))).collect()
    }

    #[test]
    fn installed_wins_and_disabled_engines_are_not_reported() {
        let installed: BTreeMap<Engine, Vec<String>> =
            [(Engine::LlamaCpp, vec!["b10850".to_string()]), (Engine::Uv, vec!["0.12.20".to_string()])].into();
        let configured = map(&[(Engine::LlamaCpp, "b9000"), (Engine::Vllm, "0.20.1"), (Engine::Sglang, "0.5.4")]);
        let disabled = [Engine::Sglang].into();
        let r = merge(&installed, &configured, &disabled);
        assert_eq!(
            r,
            [
                Reported { engine: Engine::LlamaCpp, versions: vec!["b10850".into()], seen: Seen::Installed },
                Reported { engine: Engine::Vllm, versions: vec!["0.20.1".into()], seen: Seen::Configured },
            ]
        );
    }

    #[test]
    fn versions_are_read_as_each_engine_prints_them() {
        assert_eq!(
            version_in(Engine::LlamaCpp, "ggml_cuda_init: …\nversion: 10850 (3f1c2a9)\nbuilt with cc"),
            Some("b10850".into())
        );
        assert_eq!(version_in(Engine::Vllm, "0.20.1+cu129\n"), Some("0.20.1".into()));
        assert_eq!(version_in(Engine::Sglang, "0.5.4\n"), Some("0.5.4".into()));
        assert_eq!(version_in(Engine::Vllm, "INFO starting\n"), None);
        assert_eq!(version_in(Engine::LlamaCpp, "usage: llama-server"), None);
    }
}
