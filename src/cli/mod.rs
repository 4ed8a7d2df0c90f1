//! The command line: clap arguments and rendering, one file per
//! subcommand. No logic lives here: each command parses its input, calls
//! the library, renders, and returns the exit code.
//!
//! Cross-cutting pieces: `input.rs` reads what the user names (files,
//! wants); `settings.rs` turns flags and environment into the real system
//! and its configuration; `printer.rs` renders every report and plan as
//! text or JSON; `output.rs` writes to standard output.
//!
//! The binary's part: may import anything of the library (`llmgw::…`);
//! nothing imports it.

/// A note on stderr (what was found, what was assumed, what was saved):
/// `eprintln!` unless `--quiet` asked for none. Warnings and errors are
/// printed whatever `--quiet` says.
macro_rules! note {
    ($($arg:tt)*) => {
        if !$crate::cli::quiet() {
            eprintln!($($arg)*)
        }
    };
}

mod agent;
mod bench;
mod builds;
mod bundle;
mod discover;
mod input;
mod inspect;
mod list;
mod matrix;
mod mock_server;
mod offline;
mod output;
mod plan;
mod printer;
mod progress;
mod provision;
mod reference;
mod schema;
mod settings;
mod signals;
mod simulate;
mod usage;
mod what_if;

use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Parser, Subcommand, ValueEnum};

pub use input::Failure;
pub use usage::refused;

/// Installs inference engines on Linux GPU nodes, and simulates the
/// installation on described machines.
#[derive(Debug, Parser)]
#[command(
    name = "llmgw",
    version,
    about = "Install inference engines (llama.cpp, vLLM, SGLang, uv) on Linux GPU nodes, or simulate it",
    long_about = "Install inference engines (llama.cpp, vLLM, SGLang, uv) on Linux GPU nodes, or simulate it.\n\n\
        For a machine and an engine, llmgw picks the builds the machine can run, downloads one, \
        verifies every byte against the publisher's sha256 digest, unpacks it safely, proves that it \
        loads (ldd) and computes on the GPU, falls back to the next build when one fails, and commits \
        it atomically.\n\n\
        A machine is described by a host description (JSON; see matrix/README.md), \
        a file or the name of one embedded from matrix/hosts/ (`llmgw list hosts`). `simulate` runs the \
        whole installation for one against a fake release server; `plan` shows the selection alone.\n\n\
        A want is ENGINE@VERSION[:VARIANT]: llama.cpp@b10850, llama.cpp@b10850:vulkan, vllm@0.20.1, sglang@0.5.4, uv@0.12.20.",
    after_help = "Examples:\n  \
        llmgw simulate --host v100\n  \
        llmgw simulate --host node.json --want llama.cpp@b10850:vulkan --format json\n  \
        llmgw plan --host v100 --want llama.cpp@b10850\n  \
        llmgw matrix --scenario llama-cuda-without-ptx --diff\n  \
        llmgw bundle create --want llama.cpp@b10850 --arch amd64 --arch arm64 --out b.tar\n  \
        llmgw inspect libggml-cuda.so\n\n\
        Exit codes: 0 every want ready or not_here; 1 any failed or unsupported; 2 bad input; 3 llmgw itself failed.\n\n\
        Results go to stdout, never coloured; logs, progress and notes to stderr. The manual: docs/ \
        (docs/SUMMARY.md), `man llmgw`, `llmgw completions SHELL`."
)]
pub struct Cli {
    /// More log output on stderr (-v: info, -vv: debug); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// No progress bars and no notes on stderr (what was found, assumed or saved): results,
    /// warnings and errors only.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Colour of the log lines on stderr, the only colour llmgw prints (results are never
    /// coloured): auto is colour when stderr is a terminal and NO_COLOR is not set.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColorWhen::Auto, global = true)]
    pub color: ColorWhen,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Whether the log lines on stderr are coloured, by `--color` and
    /// `NO_COLOR`; `terminal` is whether stderr is one.
    #[allow(clippy::disallowed_methods)] // NO_COLOR: the environment, read where the command line is
    pub fn colour_logs(&self, terminal: bool) -> bool {
        self.color.enabled(terminal, std::env::var_os("NO_COLOR").as_deref())
    }
}

/// When the log lines on stderr are coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorWhen {
    /// When stderr is a terminal and `NO_COLOR` is not set (or is empty).
    Auto,
    /// Always, also on a pipe.
    Always,
    /// Never.
    Never,
}

impl ColorWhen {
    /// Whether to colour: `terminal` is whether stderr is one, `no_color`
    /// the value of `NO_COLOR` (<https://no-color.org>: any non-empty value
    /// asks for none).
    pub fn enabled(self, terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
        match self {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => terminal && no_color.is_none_or(|v| v.is_empty()),
        }
    }
}

/// Set once from `--quiet`, before the command runs.
static QUIET: AtomicBool = AtomicBool::new(false);

/// Whether `--quiet` asked for no notes and no progress on stderr.
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the whole installation for a described machine against a fake release server.
    Simulate(simulate::Args),
    /// Show the builds a machine would try, best first, and why each other build is left out.
    Plan(plan::Args),
    /// Run every host description against every want and compare with the golden outcomes.
    Matrix(matrix::Args),
    /// Install engines on this machine for real: discover it, converge, report.
    Provision(provision::Args),
    /// Serve the fake GitHub release server (the simulations' publisher) on loopback.
    MockServer(mock_server::Args),
    /// Print this machine as a host description (JSON) that `simulate --host` accepts.
    Discover(discover::Args),
    /// Keep the wanted engines installed: converge, re-check every 10 minutes, back off after failures, report.
    Agent(agent::Args),
    /// List every build of an engine version for an architecture, with its assets: what a bundle carries.
    Builds(builds::Args),
    /// Make an offline bundle from the publisher, or import one into an offline site's mirror.
    Bundle(bundle::Args),
    /// List the embedded hosts, scenarios or default wants: the names --host, --scenario and matrix take.
    List(list::Args),
    /// Print the JSON Schema of a host description or a wants file, for editors.
    Schema(schema::Args),
    /// Read what a build really is from its ELF files and CUDA fatbins: libraries, glibc floors, GPU kernels, the driver it needs.
    Inspect(inspect::Args),
    /// Print a shell's completion script for llmgw: bash, zsh or fish.
    Completions(reference::CompletionsArgs),
    /// Print the man page, llmgw(1), as roff (ci/release.sh ships it).
    #[command(hide = true)]
    Man,
    /// Print docs/reference/cli.md: every command's --help as markdown (tests/it/docs.rs).
    #[command(hide = true)]
    CliReference,
    /// sha256 of a file with llmgw's hasher, printed as sha256sum does (for ci/bench-vs-shell.sh).
    #[command(hide = true)]
    BenchSha256(bench::Sha256Args),
    /// Unpack a .tar.gz with llmgw's unpacker into a directory (for ci/bench-vs-shell.sh).
    #[command(hide = true)]
    BenchUnpack(bench::UnpackArgs),
}

/// Runs the command; the exit code, or the failure to report.
pub fn run(cli: Cli) -> Result<i32, Failure> {
    QUIET.store(cli.quiet, Ordering::Relaxed);
    match cli.command {
        Command::Simulate(a) => {
            signals::remove_scratch_when_stopped();
            signals::unless_stopped(simulate::run(a))
        }
        Command::Plan(a) => plan::run(a),
        Command::Matrix(a) => {
            signals::remove_scratch_when_stopped();
            signals::unless_stopped(matrix::run(a))
        }
        Command::Provision(a) => provision::run(a),
        Command::MockServer(a) => mock_server::run(a),
        Command::Discover(a) => discover::run(a),
        Command::Agent(a) => agent::run(a),
        Command::Builds(a) => builds::run(a),
        Command::Bundle(a) => bundle::run(a),
        Command::List(a) => list::run(a),
        Command::Schema(a) => schema::run(a),
        Command::Inspect(a) => inspect::run(a),
        Command::Completions(a) => reference::completions(a),
        Command::Man => reference::man(),
        Command::CliReference => reference::cli_reference(),
        Command::BenchSha256(a) => bench::sha256(a),
        Command::BenchUnpack(a) => bench::unpack(a),
    }
}
