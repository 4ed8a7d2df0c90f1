//! `llmgw plan`: selection alone, with the reason for every build.

use std::fmt::Write as _;
use std::path::PathBuf;

use llmgw::host::Host;
use llmgw::recipe::{self, Plan, Refusal, Source, Want};
use llmgw::report::{EXIT_FAULT, EXIT_OK};
use llmgw::sim::default_wants;

use super::input::{self, Failure};
use super::output;

/// Arguments of `plan`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  llmgw plan --host matrix/hosts/v100.json --want llama.cpp@b10850")]
pub struct Args {
    /// The host description (JSON) of the machine.
    #[arg(long, value_name = "FILE")]
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

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Format {
    Text,
    Json,
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
    match args.format {
        Format::Text => output::emit(&text(&host, &plans))?,
        Format::Json => output::emit(&json_document(&host, &plans))?,
    }
    Ok(code)
}

/// The plans as JSON: `{"host": NAME, "plans": [{"want", "state", …}]}`, final newline.
pub fn json_document(host: &Host, plans: &[(Want, Result<Plan, Refusal>)]) -> String {
    let v: Vec<serde_json::Value> = plans.iter().map(|(w, p)| json(w, p)).collect();
    let doc = serde_json::json!({"host": host.name, "plans": v});
    format!("{}\n", serde_json::to_string_pretty(&doc).expect("plans serialize"))
}

fn json(w: &Want, p: &Result<Plan, Refusal>) -> serde_json::Value {
    match p {
        Ok(plan) => serde_json::json!({
            "want": w.to_string(), "state": "candidates",
            "candidates": plan.candidates, "excluded": plan.excluded, "notes": plan.notes,
        }),
        Err(Refusal::NotHere { reason }) => {
            serde_json::json!({"want": w.to_string(), "state": "not_here", "reason": reason})
        }
        Err(Refusal::Unsupported { reason, excluded }) => serde_json::json!({
            "want": w.to_string(), "state": "unsupported", "reason": reason, "excluded": excluded,
        }),
    }
}

/// Where a build comes from, in a few words.
fn source(s: &Source) -> String {
    match s {
        Source::Archives { assets, .. } => assets.join(" + "),
        Source::Python(env) => {
            let mut what: Vec<String> =
                env.wheel.iter().map(|w| format!("{}…{} from {} {}", w.prefix, w.suffix, w.repo, w.tag)).collect();
            what.extend(env.requirements.iter().cloned());
            if let Some(x) = &env.extra_index {
                what.push(format!("{} from {}", x.packages.join(", "), x.name));
            }
            format!("Python {} environment by uv: {}", env.python, what.join("; "))
        }
    }
}

/// The plans for a person: per want, the candidates and why each other build is left out.
pub fn text(host: &Host, plans: &[(Want, Result<Plan, Refusal>)]) -> String {
    let mut out = format!("host: {}\n", host.name);
    for (w, p) in plans {
        let _ = writeln!(out, "\n{w}");
        match p {
            Ok(plan) => {
                let _ = writeln!(out, "  candidates, best first:");
                for (i, b) in plan.candidates.iter().enumerate() {
                    let _ = writeln!(out, "    {}. {} ({})", i + 1, b.variant, source(&b.source));
                }
                if !plan.excluded.is_empty() {
                    let _ = writeln!(out, "  left out:");
                    for e in &plan.excluded {
                        let _ = writeln!(out, "    - {}: {}", e.variant, e.reason);
                    }
                }
                for n in &plan.notes {
                    let _ = writeln!(out, "  note: {n}");
                }
            }
            Err(Refusal::NotHere { reason }) => {
                let _ = writeln!(out, "  not here: {reason}");
            }
            Err(Refusal::Unsupported { reason, .. }) => {
                let _ = writeln!(out, "  unsupported: {reason}");
            }
        }
    }
    out
}
