//! `llmgw`: parse the command line, run it, print, exit. Everything else is
//! in the library and in `cli/`.

mod cli;

use std::io::IsTerminal;

use clap::Parser;
use tracing_subscriber::EnvFilter;

fn main() {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(), // --help, --version
        Err(e) => {
            let args: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
            eprint!("{}", cli::refused(&e, &args));
            std::process::exit(llmgw_core::report::EXIT_BAD_INPUT);
        }
    };
    let level = match cli.verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(cli.colour_logs(std::io::stderr().is_terminal()))
        .with_target(false)
        .init();
    let code = match cli::run(cli) {
        Ok(code) => code,
        Err(f) => {
            // A file name or a value the user gave may hold controls: escaped, line by line.
            let message: Vec<String> = f.message().lines().map(llmgw_model::text::for_terminal).collect();
            eprintln!("llmgw: error: {}", message.join("\n"));
            f.exit_code()
        }
    };
    std::process::exit(code);
}
