//! `llmgw plan`: selection alone, with the reason for every build.

use std::path::PathBuf;

use llmgw::recipe::{self, Plan, Refusal, Want};
use llmgw::report::{EXIT_FAULT, EXIT_OK};
use llmgw::sim::default_wants;

use super::input::{self, Failure};
use super::output;
use super::printer::{self, Format};

/// Arguments of `plan`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  llmgw plan --host v100 --want llama.cpp@b10850")]
pub struct Args {
    /// The host description (JSON) of the machine, or the name of an embedded one (v100).
    #[arg(long, value_name = "FILE|NAME")]
    host: PathBuf,
    /// ENGINE@VERSION[:VARIANT]; repeatable. Default: the wants of matrix/wants.json (embedded).
    #[arg(long = "want", value_name = "ENGINE@VERSION[:VARIANT]")]
    wants: Vec<String>,
    /// A wants file instead of --want.
    #[arg(long = "wants", value_name = "FILE")]
    wants_file: Option<PathBuf>,
    /// text for a person; json for programs.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// Runs `plan`; exit 1 when any want has no candidate (not for `not_here`).
pub fn run(args: Args) -> Result<i32, Failure> {
    let host = input::host(&args.host)?;
    let wants = input::wants(&args.wants, args.wants_file.as_deref(), default_wants)?;
    let plans: Vec<(Want, Result<Plan, Refusal>)> = wants
        .into_iter()
        .map(|w| {
            let p = recipe::plan(&w, &host);
            (w, p)
        })
        .collect();
    let code =
        if plans.iter().any(|(_, p)| matches!(p, Err(Refusal::Unsupported { .. }))) { EXIT_FAULT } else { EXIT_OK };
    output::emit(&printer::plans(&host, &plans, args.format))?;
    Ok(code)
}
