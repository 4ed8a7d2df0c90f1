//! `llmgw schema host|wants|scenario`: the JSON Schema of the files a person writes
//! by hand, generated from the types the parser reads them into.

use llmgw_core::report::EXIT_OK;

use super::input::Failure;
use super::output;

/// Arguments of `schema`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    llmgw schema host > host.schema.json\n  \
    llmgw schema wants > wants.schema.json\n  \
    llmgw schema scenario > scenario.schema.json\n\n\
    Point an editor at it: in VS Code, \"json.schemas\": [{\"fileMatch\": [\"matrix/hosts/*.json\"],\n\
    \"url\": \"./host.schema.json\"}]; or put \"$schema\": \"./host.schema.json\" in a file you\n\
    only edit (llmgw refuses fields it does not know, that one included).\n\n\
    The parser checks a little more than the schema can say: versions and variants\n\
    against each engine, that a glibc system gives its glibc, and that what a scenario\n\
    names (release, asset, file) exists in the truth.")]
pub struct Args {
    /// Which file: host (a host description, matrix/hosts/*.json), wants (matrix/wants.json)
    /// or scenario (a variant of the truth, mocks/scenarios/*.json).
    #[arg(value_enum)]
    what: What,
}

/// The files with a schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum What {
    /// A host description.
    Host,
    /// A wants file.
    Wants,
    /// A scenario file.
    Scenario,
}

/// Runs `schema`: the schema as pretty JSON on stdout.
pub fn run(args: Args) -> Result<i32, Failure> {
    let schema = match args.what {
        What::Host => llmgw_model::host::json_schema(),
        What::Wants => llmgw_core::recipe::wants_json_schema(),
        What::Scenario => llmgw_sim::truth::scenario::json_schema(),
    };
    output::emit(&(serde_json::to_string_pretty(&schema).expect("a schema serializes") + "\n"))?;
    Ok(EXIT_OK)
}
