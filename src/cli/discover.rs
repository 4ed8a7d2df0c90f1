//! `llmgw discover`: this machine as a host description, printed or written
//! to a file; `--capture` saves every raw answer, `--replay` describes a
//! machine from such a folder alone.

use std::path::PathBuf;

use llmgw_core::discover::{self, DEFAULT_ENGINES_DIR, DiscoverError, Discovered};
use llmgw_core::report::EXIT_OK;
use llmgw_system::probe::{Capture, RealProbe, ReplayProbe};

use super::input::{self, Failure};
use super::output;

/// Arguments of `discover`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    llmgw discover > node.json && llmgw simulate --host node.json\n  \
    llmgw discover --capture node-capture/\n  \
    llmgw discover --replay node-capture/ --output node.json")]
pub struct Args {
    /// Write the host description to FILE (atomically; `-`: standard output)
    /// instead of standard output. A file there is replaced, a link written through.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Where engines will be installed: free disk is measured on its file
    /// system (or that of its nearest existing ancestor).
    #[arg(long, value_name = "DIR", default_value = DEFAULT_ENGINES_DIR, conflicts_with = "replay")]
    engines_dir: PathBuf,
    /// Also save every raw answer read (os-release, cpuinfo, nvidia-smi, NVML, …)
    /// into DIR, one file per source, for --replay elsewhere. DIR must be empty or absent.
    #[arg(long, value_name = "DIR", conflicts_with = "replay")]
    capture: Option<PathBuf>,
    /// Describe the machine a --capture folder holds, reading nothing else.
    #[arg(long, value_name = "DIR")]
    replay: Option<PathBuf>,
}

/// Runs `discover`: exit 0 with the description; 2 for a bad --replay or
/// --capture folder (a replay that cannot be described is the folder's
/// fault); 3 when this machine cannot be described.
pub fn run(args: Args) -> Result<i32, Failure> {
    let output = args.output.as_deref().filter(|p| *p != std::path::Path::new("-"));
    if let Some(path) = output {
        input::output("--output", path)?;
    }
    let found = match (&args.replay, &args.capture) {
        (Some(dir), _) => {
            let mut probe = ReplayProbe::new(dir).map_err(bad)?;
            discover::discover(&mut probe)
        }
        (None, Some(dir)) => {
            Capture::check_folder(dir).map_err(bad)?;
            let mut real = RealProbe::new();
            let mut capture = Capture::new(&mut real);
            let found = discover::discover_at(&mut capture, &args.engines_dir);
            // Saved even when discovery failed: then it is most worth a look.
            let written = capture.finish(dir).map_err(|e| Failure::Internal(e.to_string()))?;
            note!("llmgw: saved {} files into {}", written.len(), dir.display());
            found
        }
        (None, None) => discover::discover_at(&mut RealProbe::new(), &args.engines_dir),
    };
    let Discovered { host, warnings, gpu_discovery } = found.map_err(|e| match &args.replay {
        // Replaying, the folder is the input: whatever it lacks is its fault.
        Some(dir) => Failure::BadInput(format!("--replay `{}`: {e}", dir.display())),
        None => Failure::Internal(format!("cannot describe this machine: {e}")),
    })?;
    note!("llmgw: GPU discovery: {gpu_discovery}");
    for w in &warnings {
        eprintln!("llmgw: warning: {w}");
    }
    let text = format!("{}\n", serde_json::to_string_pretty(&host).expect("a host always serializes"));
    match output {
        Some(path) => input::write_output("--output", path, text.as_bytes())?,
        None => output::emit(&text)?,
    }
    Ok(EXIT_OK)
}

fn bad(e: DiscoverError) -> Failure {
    Failure::BadInput(e.to_string())
}
