//! Flags and environment turned into the real system and its configuration,
//! in one place: the publishers a real install reaches ([`GithubArgs`],
//! [`IndexArgs`]), the GitHub token (`GITHUB_TOKEN`, sent to GitHub's API
//! only), the engines directory's default, and the [`Config`] the installer
//! takes. `provision`, `agent` and `bundle create` flatten the same groups.

use std::path::PathBuf;

use llmgw_core::converge::{Config, PYPI_SIMPLE, PYTHON_INSTALL_MIRROR, PYTORCH_WHL};
use llmgw_core::release::GITHUB_API;
use llmgw_system::http::Http;
use llmgw_system::real::{RealSystem, Reporter};

use super::input::{self, Failure};

pub use llmgw_core::discover::DEFAULT_ENGINES_DIR;

/// Seconds to connect to a publisher, and to wait for each read of an answer.
const CONNECT_SECS: u64 = 10;
const READ_SECS: u64 = 60;

/// `--github-api`, and the token for it.
#[derive(Debug, Clone, clap::Args)]
pub struct GithubArgs {
    /// GitHub's REST API (a mirror, or the fake server in tests).
    #[arg(long, value_name = "URL", env = "LLMGW_GITHUB_API", default_value = GITHUB_API, value_parser = input::http_url)]
    pub github_api: String,
    /// A GitHub token, sent to GitHub's API only (a higher rate limit).
    #[arg(long, env = "GITHUB_TOKEN", hide_env_values = true, hide = true)]
    pub github_token: Option<String>,
}

/// `--pypi-index`, `--pytorch-index` and `--python-mirror`: where the Python engines'
/// packages and interpreter come from.
#[derive(Debug, Clone, clap::Args)]
pub struct IndexArgs {
    /// PyPI's simple index.
    #[arg(long, value_name = "URL", env = "LLMGW_PYPI_INDEX", default_value = PYPI_SIMPLE, value_parser = input::http_url)]
    pub pypi_index: String,
    /// PyTorch's wheel host, under which each CUDA version has its index.
    #[arg(long, value_name = "URL", env = "LLMGW_PYTORCH_INDEX", default_value = PYTORCH_WHL, value_parser = input::http_url)]
    pub pytorch_index: String,
    /// Where uv downloads the Python engines' CPython: a mirror of python-build-standalone's
    /// releases, laid out as `<URL>/<tag>/<archive>` (uv's `--mirror`).
    #[arg(long, value_name = "URL", env = "LLMGW_PYTHON_MIRROR", default_value = PYTHON_INSTALL_MIRROR, value_parser = input::http_url)]
    pub python_mirror: String,
}

impl GithubArgs {
    /// This machine, reaching the publishers with the token, showing downloads through `reporter`.
    ///
    /// # Errors
    /// [`Failure::Internal`] when the HTTP client cannot be set up.
    pub fn real_system(&self, reporter: Box<dyn Reporter>) -> Result<RealSystem, Failure> {
        let http = Http::new(CONNECT_SECS, READ_SECS, self.github_token.clone())
            .map_err(|e| Failure::Internal(format!("cannot set up the HTTP client: {e}")))?;
        Ok(RealSystem::new(http, reporter))
    }
}

/// The installer's configuration on a node: engines in `engines_dir`, the
/// publishers of `github` and `indexes`, each check at most `check_timeout_secs`.
pub fn config(engines_dir: PathBuf, github: &GithubArgs, indexes: &IndexArgs, check_timeout_secs: u64) -> Config {
    Config {
        engines_dir,
        github_api: github.github_api.clone(),
        pypi_simple: indexes.pypi_index.clone(),
        pytorch_whl: indexes.pytorch_index.clone(),
        python_mirror: indexes.python_mirror.clone(),
        check_timeout_secs,
        // A stub of the fake publisher reaching a real node says what it is.
        not_a_build: Some(llmgw_sim::truth::stub::NOT_A_BUILD),
    }
}
