//! The arguments `simulate` and `matrix` share for asking "what if": a
//! variant of the truth (`--scenario`) and changes to the machine (`--set`,
//! with `--diff` to show only what they change).

use std::path::PathBuf;

use llmgw::host::Setting;
use llmgw::sim::truth::Catalog;

use super::input::{self, Failure};

/// `--scenario FILE`, `--set PATH=VALUE`…, `--diff`.
#[derive(Debug, clap::Args)]
pub struct WhatIf {
    /// A scenario file: a variant of the truth to run against (see mocks/scenarios/).
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// Change the machine before running: PATH=VALUE, a JSON path of the host
    /// description (nvidia.driver=580.65.06, disk_free_gb=50). Repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// With --set: show only what the change changes, against the unchanged machine.
    #[arg(long, requires = "set")]
    pub diff: bool,
}

impl WhatIf {
    /// The truth to run against: the embedded one or the scenario's.
    pub fn catalog(&self) -> Result<Catalog, Failure> {
        input::catalog(self.scenario.as_deref())
    }

    /// The `--set`s, parsed.
    pub fn settings(&self) -> Result<Vec<Setting>, Failure> {
        self.set.iter().map(|s| Setting::parse(s).map_err(|e| Failure::BadInput(format!("--set: {e}")))).collect()
    }
}
