//! `llmgw list hosts|scenarios|wants`: what is embedded in the binary, by
//! the names `--host`, `--scenario` and `matrix` take from any directory.

use std::fmt::Write as _;

use llmgw_core::report::EXIT_OK;
use llmgw_model::host::Host;
use llmgw_sim::matrix::embedded::HOSTS;
use llmgw_sim::truth::embedded::SCENARIOS;
use llmgw_sim::truth::scenario::Scenario;

use super::input::Failure;
use super::output;
use super::printer::Format;

/// Arguments of `list`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    llmgw list hosts                  # then: llmgw simulate --host v100\n  \
    llmgw list scenarios              # then: llmgw matrix --scenario llama-cuda-without-ptx --diff\n  \
    llmgw list wants --format json")]
pub struct Args {
    /// What to list: hosts (matrix/hosts/), scenarios (mocks/scenarios/), wants (matrix/wants.json).
    #[arg(value_enum)]
    what: What,
    /// text for a person; json for programs.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// The embedded things to list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum What {
    /// The host descriptions of `matrix/hosts/`: `--host NAME`, and `matrix` outside the checkout.
    Hosts,
    /// The scenarios of `mocks/scenarios/`: `--scenario NAME`.
    Scenarios,
    /// The default wants (`matrix/wants.json`).
    Wants,
}

/// Runs `list`.
pub fn run(args: Args) -> Result<i32, Failure> {
    // (name, what it is), in the order of names.
    let rows: Vec<(String, String)> = match args.what {
        What::Hosts => HOSTS
            .iter()
            .map(|(id, json)| {
                let host = Host::from_json(json).map_err(|e| Failure::Internal(format!("embedded host {id}: {e}")))?;
                Ok(((*id).to_string(), host.name))
            })
            .collect::<Result<_, Failure>>()?,
        What::Scenarios => SCENARIOS
            .iter()
            .map(|(name, json)| {
                let s = Scenario::from_json(json)
                    .map_err(|e| Failure::Internal(format!("embedded scenario {name}: {e}")))?;
                Ok(((*name).to_string(), s.description))
            })
            .collect::<Result<_, Failure>>()?,
        What::Wants => llmgw_sim::default_wants().iter().map(|w| (w.to_string(), String::new())).collect(),
    };
    let text =
        match args.format {
            Format::Json => {
                let key = match args.what {
                    What::Hosts => "name",
                    What::Scenarios => "description",
                    What::Wants => "",
                };
                let list: Vec<serde_json::Value> =
                    rows.iter()
                        .map(|(n, about)| {
                            if key.is_empty() { serde_json::json!(n) } else { serde_json::json!({"id": n, key: about}) }
                        })
                        .collect();
                serde_json::to_string_pretty(&list).expect("names serialize") + "\n"
            }
            Format::Text => {
                let width = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
                let mut out = String::new();
                for (name, about) in &rows {
                    let _ = writeln!(out, "{}", format!("{name:<width$}  {about}").trim_end());
                }
                out
            }
        };
    output::emit(&text)?;
    Ok(EXIT_OK)
}
