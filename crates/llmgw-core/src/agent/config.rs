//! The agent's configuration file (`--config agent.json`): [`AgentConfig`].
//!
//! ```json
//! {"engines": {"disabled": ["sglang"],
//!              "binaries": {"llama.cpp": "/usr/local/bin/llama-server"}}}
//! ```
//!
//! - `engines.disabled`: engines this node never runs: not installed when
//!   asked for, and not reported when found (docs/facts.md §10).
//! - `engines.binaries`: engines the operator built or placed by hand, by
//!   the absolute path of their binary (for SGLang, the Python interpreter
//!   that imports it). Such an engine is never installed over — an installed
//!   build beside it would be used first and quietly replace the operator's —
//!   and is reported when its version command answers (docs/facts.md §10).
//!
//! Every field is optional; an empty object (or no file) is the default.
//! Unknown fields are an error naming their JSON path.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::recipe::{Engine, Want};
use llmgw_model::strict_json::{self, JsonError};

/// The agent's configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// What the node does with each engine.
    #[serde(default)]
    pub engines: EnginesConfig,
}

/// `engines` of [`AgentConfig`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnginesConfig {
    /// Engines never installed and never reported.
    #[serde(default)]
    pub disabled: BTreeSet<Engine>,
    /// Engines installed by hand: the absolute path of each one's binary.
    #[serde(default)]
    pub binaries: BTreeMap<Engine, PathBuf>,
}

impl AgentConfig {
    /// Parses and checks a configuration file.
    ///
    /// # Errors
    /// A [`JsonError`] naming the JSON path of the problem: a syntax error,
    /// an unknown field or engine, a binary that is not an absolute path.
    pub fn from_json(text: &str) -> Result<AgentConfig, JsonError> {
        let cfg: AgentConfig = strict_json::parse(text, &["engines"])?;
        for (engine, path) in &cfg.engines.binaries {
            if !path.is_absolute() {
                return Err(JsonError {
                    path: format!("engines.binaries.{engine}"),
                    message: format!("`{}` is not an absolute path", path.display()),
                });
            }
        }
        Ok(cfg)
    }

    /// Whether the configuration says this node never runs `engine`.
    pub fn disabled(&self, engine: Engine) -> bool {
        self.engines.disabled.contains(&engine)
    }

    /// Whether the configuration names `engine`'s binary (installed by hand).
    pub fn by_hand(&self, engine: Engine) -> bool {
        self.engines.binaries.contains_key(&engine)
    }

    /// The wants this node installs, and for each one it does not, why
    /// (`(want, reason)`): a disabled engine, or one installed by hand.
    pub fn wants_to_install(&self, wants: &[Want]) -> (Vec<Want>, Vec<(Want, &'static str)>) {
        let (mut keep, mut skip) = (Vec::new(), Vec::new());
        for w in wants {
            if self.disabled(w.engine) {
                skip.push((w.clone(), "the configuration disables this engine on this node"));
            } else if self.by_hand(w.engine) {
                skip.push((w.clone(), "the configuration names this engine's binary; the operator's build wins"));
            } else {
                keep.push(w.clone());
            }
        }
        (keep, skip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_disabled_engines_and_binaries() {
        let cfg = AgentConfig::from_json(
            r#"{"engines": {"disabled": ["sglang"], "binaries": {"llamacpp": "/usr/local/bin/llama-server"}}}"#,
        )
        .unwrap();
        assert!(cfg.disabled(Engine::Sglang) && !cfg.disabled(Engine::Vllm));
        assert!(cfg.by_hand(Engine::LlamaCpp));
        assert_eq!(AgentConfig::from_json("{}").unwrap(), AgentConfig::default());
    }

    #[test]
    fn names_where_a_configuration_is_wrong() {
        let err = |t: &str| AgentConfig::from_json(t).unwrap_err().to_string();
        assert!(err(r#"{"engines": {"disabled": ["ollama"]}}"#).starts_with("engines.disabled[0]: unknown engine"));
        assert!(
            err(r#"{"engines": {"binaries": {"vllm": "bin/vllm"}}}"#).starts_with("engines.binaries.vllm: `bin/vllm`")
        );
        assert!(err(r#"{"engine": {}}"#).starts_with("engine: unknown field `engine`"));
        assert!(err(r#"{"engines": []}"#).starts_with("engines: expected an object"));
    }

    #[test]
    fn disabled_and_hand_built_engines_are_not_installed() {
        let cfg = AgentConfig::from_json(
            r#"{"engines": {"disabled": ["sglang"], "binaries": {"llama.cpp": "/opt/llama/llama-server"}}}"#,
        )
        .unwrap();
        let wants: Vec<Want> =
            ["llama.cpp@b10850", "vllm@0.20.1", "sglang@0.5.4"].iter().map(|w| Want::parse(w).unwrap()).collect();
        let (keep, skip) = cfg.wants_to_install(&wants);
        assert_eq!(keep, [Want::parse("vllm@0.20.1").unwrap()]);
        assert_eq!(skip.len(), 2);
    }
}
