//! `llmgw plan`: selection alone, with the reason for every build.

use std::path::PathBuf;

use llmgw_core::recipe::{self, Plan, Refusal, Want};
use llmgw_core::report::{EXIT_FAULT, EXIT_OK};
use llmgw_sim::default_wants;

use super::input::{self, Failure};
use super::output;
use super::printer::{self, Format};

/// Arguments of `plan`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  llmgw plan --host v100 --want llama.cpp@b10850\n  \
    curl -s https://api.github.com/repos/ggml-org/llama.cpp/releases/tags/b11459 > b11459.json\n  \
    llmgw plan --host h100-ubuntu24.04-driver580 --want llama.cpp@b11459 --release b11459.json")]
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
    /// A release as GitHub's API answers it (saved with curl from
    /// /repos/OWNER/NAME/releases/tags/TAG): the wants of its tag are
    /// planned from its assets, a build whose assets it lacks left out.
    /// Without it, llama.cpp's builds are derived from the tag's range.
    #[arg(long, value_name = "FILE")]
    release: Option<PathBuf>,
    /// text for a person; json for programs.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// Runs `plan`; exit 1 when any want has no candidate (not for `not_here`).
pub fn run(args: Args) -> Result<i32, Failure> {
    let host = input::host(&args.host)?;
    let wants = input::wants(&args.wants, args.wants_file.as_deref(), default_wants)?;
    // `latest` is a question for the publisher, which plan never asks: bad input here.
    if let Some(w) = wants.iter().find(|w| w.is_latest()) {
        return Err(Failure::BadInput(recipe::latest_is_not_planned(w)));
    }
    let release = args.release.as_deref().map(release).transpose()?;
    if let Some((tag, _)) = &release
        && !wants.iter().any(|w| recipe::repository_of(w.engine).is_some() && w.version == *tag)
    {
        return Err(Failure::BadInput(format!(
            "--release: the release is `{tag}`, the version of no llama.cpp or uv want here"
        )));
    }
    let plans: Vec<(Want, Result<Plan, Refusal>)> = wants
        .into_iter()
        .map(|w| {
            let published = match &release {
                Some((tag, names)) if recipe::repository_of(w.engine).is_some() && w.version == *tag => {
                    recipe::Published::Assets(names)
                }
                _ => recipe::Published::Unknown,
            };
            let p = recipe::plan_published(&w, &host, published);
            (w, p)
        })
        .collect();
    let code =
        if plans.iter().any(|(_, p)| matches!(p, Err(Refusal::Unsupported { .. }))) { EXIT_FAULT } else { EXIT_OK };
    output::emit(&printer::plans(&host, &plans, args.format))?;
    Ok(code)
}

/// The tag and asset names of a saved GitHub release JSON.
fn release(path: &std::path::Path) -> Result<(String, Vec<String>), Failure> {
    #[derive(serde::Deserialize)]
    struct Named {
        name: String,
    }
    #[derive(serde::Deserialize)]
    struct Saved {
        tag_name: String,
        assets: Vec<Named>,
    }
    let text = input::read(input::RELEASE, path)?;
    let de = &mut serde_json::Deserializer::from_str(&text);
    let saved: Saved = serde_path_to_error::deserialize(de)
        .map_err(|e| Failure::BadInput(format!("--release `{}`: {}: {}", path.display(), e.path(), e.inner())))?;
    Ok((saved.tag_name, saved.assets.into_iter().map(|a| a.name).collect()))
}
