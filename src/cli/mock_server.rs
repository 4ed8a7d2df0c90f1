//! `llmgw mock-server`: the fake release server, for manual use.

// The mirror directory the user names is checked here (see clippy.toml).
#![allow(clippy::disallowed_methods)]

use llmgw_model::host::Arch;
use llmgw_sim::publisher::FakeServer;
use llmgw_sim::runnable;
use llmgw_system::http::Http;
use llmgw_system::real::{RealSystem, Silent};

use super::input::Failure;

/// Arguments of `mock-server`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    llmgw mock-server --port 8080 &\n  \
    curl -s http://127.0.0.1:8080/repos/ggml-org/llama.cpp/releases/tags/b10850\n  \
    # a real install against it, without internet (needs a C compiler):\n  \
    llmgw mock-server --port 8080 --real-programs &\n  \
    llmgw provision --want llama.cpp@b10850 --engines-dir /tmp/engines \\\n  \
    \x20   --github-api http://127.0.0.1:8080\n  \
    # uv without GitHub's digests: checked against the .sha256 files instead\n  \
    llmgw mock-server --port 8080 --scenario uv-digest-from-sidecar &\n  \
    # with a mirror; its offline_base is http://127.0.0.1:8080/mirror\n  \
    llmgw mock-server --port 8080 --mirror /srv/llmgw-mirror\n\n\
    Without --real-programs the builds hold the simulation's stand-ins, which\n\
    only `llmgw simulate` runs: `llmgw provision` against it refuses them.")]
pub struct Args {
    /// The loopback port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Also serve this offline mirror directory (filled by `bundle import`) at <base>/mirror: the files it
    /// holds when the server starts.
    #[arg(long, value_name = "DIR")]
    mirror: Option<std::path::PathBuf>,
    /// Serve real programs, compiled here with the C compiler (cc), in the llama.cpp and uv
    /// builds for this machine's architecture, so that `llmgw provision --github-api` against
    /// this server installs them for real. They answer their version command and list no device.
    #[arg(long)]
    real_programs: bool,
    /// Serve a scenario's variant of the truth (a file or an embedded scenario's name): its faults,
    /// and digests GitHub does not give (uv-digest-from-sidecar).
    #[arg(long, value_name = "FILE|NAME")]
    scenario: Option<std::path::PathBuf>,
}

/// Serves until the process is stopped (Ctrl-C, SIGTERM).
pub fn run(args: Args) -> Result<i32, Failure> {
    if let Some(dir) = &args.mirror
        && !dir.is_dir()
    {
        let why = if dir.exists() { "is not a directory" } else { "does not exist" };
        return Err(Failure::BadInput(format!("--mirror `{}` {why}", dir.display())));
    }
    let truth = super::input::catalog(args.scenario.as_deref())?;
    let real = if args.real_programs { Some(real_programs(&truth)?) } else { None };
    let catalog: &llmgw_sim::truth::Catalog = match &real {
        Some((c, _)) => c,
        None => &truth,
    };
    let server = FakeServer::start_on(catalog, args.port)
        .map_err(|e| Failure::BadInput(format!("--port {}: cannot serve: {e}", args.port)))?;
    println!("serving the fake GitHub release API at {}", server.base_url());
    match &real {
        Some((_, replaced)) => {
            println!("real programs, built here with cc, in:");
            for (asset, n) in replaced {
                println!("  {asset} ({n} file{})", if *n == 1 { "" } else { "s" });
            }
        }
        None => println!("(simulated programs: `llmgw provision` against this server needs --real-programs)"),
    }
    for r in &catalog.releases {
        println!("  {}/repos/{}/releases/tags/{}", server.base_url(), r.repo, r.tag);
    }
    println!("uv's Python mirror (--python-mirror): {}", server.python_mirror_url());
    if let Some(dir) = &args.mirror {
        let files = server
            .serve_mirror(dir)
            .map_err(|e| Failure::BadInput(format!("--mirror `{}`: cannot serve it: {e}", dir.display())))?;
        let n = format!("{} file{}", files.len(), if files.len() == 1 { "" } else { "s" });
        println!("serving the mirror `{}` ({n}) at {}", dir.display(), server.mirror_url());
    }
    println!("stop with Ctrl-C");
    loop {
        std::thread::park();
    }
}

/// The truth with real programs for this machine's architecture, and which
/// assets got them.
fn real_programs(
    truth: &llmgw_sim::truth::Catalog,
) -> Result<(llmgw_sim::truth::Catalog, runnable::Replaced), Failure> {
    let arch = match std::env::consts::ARCH {
        "x86_64" => Arch::Amd64,
        "aarch64" => Arch::Arm64,
        other => {
            return Err(Failure::BadInput(format!(
                "--real-programs: this machine is {other}; the builds served are for amd64 and arm64"
            )));
        }
    };
    let http = Http::loopback(10, 60).map_err(|e| Failure::Internal(e.to_string()))?;
    let mut sys = RealSystem::new(http, Box::new(Silent));
    let dir =
        tempfile::tempdir().map_err(|e| Failure::Internal(format!("cannot make a directory to compile in: {e}")))?;
    runnable::with_real_programs(&mut sys, dir.path(), truth, arch)
        .map_err(|e| Failure::Internal(format!("--real-programs: {e}")))
}
