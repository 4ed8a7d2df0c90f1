//! `llmgw builds`: every build of an engine version for an architecture,
//! with its assets: what an offline bundle carries.

use std::fmt::Write as _;

use llmgw_core::offline::builds::builds;
use llmgw_core::recipe::Engine;
use llmgw_model::host::Arch;

use super::input::Failure;
use super::output;
use super::printer::Format;

/// Arguments of `builds`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    llmgw builds --engine llama.cpp --version b10850 --arch amd64\n  \
    llmgw builds --engine uv --version 0.12.20 --arch arm64 --format json\n\n\
    vLLM and SGLang are installed from PyPI, which an offline bundle does not carry.")]
pub struct Args {
    /// The engine: llama.cpp or uv.
    #[arg(long)]
    engine: String,
    /// The version as its publisher tags it: b10850, 0.12.20.
    #[arg(long)]
    version: String,
    /// The architecture: amd64, arm64 (Go/Debian names; x86_64 and aarch64 are the same).
    #[arg(long, value_parser = super::bundle::parse_arch)]
    arch: Arch,
    /// text for a person; json for programs.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// Said under the count: the list is the recipe's, not the publisher's.
const DERIVED: &str = "  (derived from the recipe's rules, not checked against the publisher: \
                       whether the release exists and has these assets, `bundle create` asks it)\n";

/// Runs `builds`; exit 2 for an engine no bundle carries.
pub fn run(args: Args) -> Result<i32, Failure> {
    let engine = Engine::parse(&args.engine).map_err(|e| Failure::BadInput(format!("--engine: {e}")))?;
    let list = builds(engine, &args.version, args.arch).map_err(|e| Failure::BadInput(e.to_string()))?;
    let text = match args.format {
        Format::Json => {
            let doc = serde_json::json!({
                "engine": engine, "version": args.version, "arch": args.arch,
                "checked_against_release": false, "builds": list,
            });
            serde_json::to_string_pretty(&doc).expect("builds serialize") + "\n"
        }
        Format::Text => {
            let mut out = format!(
                "{engine} {} for {}: {} build{}\n",
                args.version,
                args.arch,
                list.len(),
                if list.len() == 1 { "" } else { "s" }
            );
            out.push_str(DERIVED);
            let width = list.iter().map(|b| b.variant.len()).max().unwrap_or(0);
            for b in &list {
                let _ = writeln!(out, "  {:<width$}  {}", b.variant, b.assets.join(", "));
            }
            out
        }
    };
    output::emit(&text)?;
    Ok(llmgw_core::report::EXIT_OK)
}
