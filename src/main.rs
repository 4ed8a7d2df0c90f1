//! `llmgw`: parse the command line, run it, print, exit. Everything else is
//! in the library and in `cli/`.

mod cli;

use clap::Parser;
use tracing_subscriber::EnvFilter;

fn main() {
    let cli = cli::Cli::parse();
    let level = match cli.verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
    let code = match cli::run(cli) {
        Ok(code) => code,
        Err(f) => {
            eprintln!("llmgw: error: {}", f.message());
            f.exit_code()
        }
    };
    std::process::exit(code);
}
