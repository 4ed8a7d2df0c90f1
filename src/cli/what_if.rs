//! The arguments `simulate` and `matrix` share for asking "what if": a
//! variant of the truth (`--scenario`) and changes to the machine (`--set`,
//! with `--diff` to show only what they change).

use std::path::PathBuf;

use llmgw_model::host::Setting;
use llmgw_sim::truth::Catalog;

use super::input::{self, Failure};

/// `--scenario FILE|NAME`, `--set PATH=VALUE`…, `--diff`.
#[derive(Debug, clap::Args)]
pub struct WhatIf {
    /// A scenario: a variant of the truth to run against, a file or the name of an
    /// embedded one (llama-cuda-without-ptx; `llmgw list scenarios`).
    #[arg(long, value_name = "FILE|NAME")]
    pub scenario: Option<PathBuf>,
    /// Change the machine before running: PATH=VALUE, a JSON path of the host
    /// description (nvidia.driver=580.65.06, disk_free_gb=50). Repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Show only what --scenario, --set or both change: each outcome that differs from the
    /// unchanged machine's against the embedded truth.
    #[arg(long)]
    pub diff: bool,
}

impl WhatIf {
    /// The truth to run against: the embedded one or the scenario's.
    pub fn catalog(&self) -> Result<Catalog, Failure> {
        input::catalog(self.scenario.as_deref())
    }

    /// The `--set`s, parsed; `--diff` without a change to show is refused.
    pub fn settings(&self) -> Result<Vec<Setting>, Failure> {
        if self.diff && self.set.is_empty() && self.scenario.is_none() {
            return Err(Failure::BadInput(
                "--diff shows what a change changes: give --scenario, --set PATH=VALUE, or both".into(),
            ));
        }
        self.set.iter().map(|s| Setting::parse(s).map_err(|e| Failure::BadInput(format!("--set: {e}")))).collect()
    }

    /// The scenario's name, as reports say it: the file's name without `.json`.
    pub fn scenario_name(&self) -> Option<String> {
        let path = self.scenario.as_deref()?;
        let name = path.file_stem().unwrap_or(path.as_os_str()).to_string_lossy();
        Some(llmgw_model::text::for_terminal(&name))
    }

    /// What a `--diff` compares with, in words: `scenario NAME, P=V, …`.
    pub fn change(&self) -> String {
        let scenario = self.scenario_name().map(|n| format!("scenario {n}"));
        scenario.into_iter().chain(self.set.iter().cloned()).collect::<Vec<_>>().join(", ")
    }
}
