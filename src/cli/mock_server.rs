//! `llmgw mock-server`: the fake release server, for manual use.

// The mirror directory the user names is checked here (see clippy.toml).
#![allow(clippy::disallowed_methods)]

use llmgw::sim::publisher::FakeServer;
use llmgw::sim::truth::embedded_catalog;

use super::input::Failure;

/// Arguments of `mock-server`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  \
    llmgw mock-server --port 8080 &\n  \
    curl -s http://127.0.0.1:8080/repos/ggml-org/llama.cpp/releases/tags/b10850\n  \
    # with a mirror; its offline_base is http://127.0.0.1:8080/mirror\n  \
    llmgw mock-server --port 8080 --mirror /srv/llmgw-mirror")]
pub struct Args {
    /// The loopback port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Also serve this offline mirror directory (filled by `bundle import`) at <base>/mirror: the files it
    /// holds when the server starts.
    #[arg(long, value_name = "DIR")]
    mirror: Option<std::path::PathBuf>,
}

/// Serves until the process is stopped (Ctrl-C, SIGTERM).
pub fn run(args: Args) -> Result<i32, Failure> {
    if let Some(dir) = &args.mirror
        && !dir.is_dir()
    {
        let why = if dir.exists() { "is not a directory" } else { "does not exist" };
        return Err(Failure::BadInput(format!("--mirror `{}` {why}", dir.display())));
    }
    let catalog = embedded_catalog();
    let server = FakeServer::start_on(catalog, args.port)
        .map_err(|e| Failure::BadInput(format!("--port {}: cannot serve: {e}", args.port)))?;
    println!("serving the fake GitHub release API at {}", server.base_url());
    for r in &catalog.releases {
        println!("  {}/repos/{}/releases/tags/{}", server.base_url(), r.repo, r.tag);
    }
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
