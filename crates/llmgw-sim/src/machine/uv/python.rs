//! The simulated uv's Pythons: `uv python install` from python-build-standalone's
//! archives (through the mirror it is given), and which interpreter `uv
//! venv` takes: a managed one in the install directory, or the system's.
//!
//! As uv 0.13.9 does (docs/facts.md §5.4): `uv python install 3.12` is
//! CPython 3.12.16 of release 20261110; the archive is
//! `{mirror}/20261110/cpython-3.12.16%2B20261110-{triple}-install_only_stripped.tar.gz`,
//! its `python/` directory installed as `{install dir}/cpython-3.12.16-linux-{arch}-gnu`;
//! an installed one is not fetched again. `--install-dir` (or
//! `UV_PYTHON_INSTALL_DIR`) says where, `--mirror` (or
//! `UV_PYTHON_INSTALL_MIRROR`) where from. The simulated uv does not check
//! the archive's sha256 (the real one checks the digest bundled in it,
//! which the fake archives cannot have), nor link the minor version's
//! directory (`cpython-3.12-linux-x86_64-gnu`).

use std::path::{Path, PathBuf};

use llmgw_core::converge::PYTHON_INSTALL_MIRROR;
use llmgw_model::host::{Arch, Host};
use llmgw_system::Local;

/// The CPython 3.12 uv 0.13.9 installs: (version, python-build-standalone release).
pub(crate) const MANAGED: (&str, &str) = ("3.12.16", "20261110");

/// Where the system's CPython lives (Ubuntu's `/usr/bin/python3.12`).
pub(crate) const SYSTEM_BIN: &str = "/usr/bin";

/// The value of `name` among the command's environment.
pub(super) fn env_var<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
    env.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// An interpreter `uv venv` can use: its version and its `bin` directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Interpreter {
    /// `3.12.16`.
    pub version: String,
    /// `/…/python/cpython-3.12.16-linux-x86_64-gnu/bin`, `/usr/bin`.
    pub bin: PathBuf,
    /// Whether uv installed it (a managed Python), or the system has it.
    pub managed: bool,
}

/// The uv name of a managed CPython for the host: `cpython-3.12.16-linux-x86_64-gnu`.
fn key(host: &Host, version: &str) -> String {
    format!("cpython-{version}-linux-{}-{}", host.arch.gnu(), libc(host))
}

fn libc(host: &Host) -> &'static str {
    match host.os.libc {
        llmgw_model::host::Libc::Glibc => "gnu",
        llmgw_model::host::Libc::Musl => "musl",
    }
}

/// `uv python install [--no-bin] [--install-dir DIR] [--mirror URL] 3.12`:
/// uv's report on stderr, or its error.
pub(super) fn install(host: &Host, local: &Local, args: &[String], env: &[(String, String)]) -> Result<String, String> {
    let value = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map(String::as_str);
    let dir = value("--install-dir")
        .or_else(|| value("-i"))
        .or_else(|| env_var(env, "UV_PYTHON_INSTALL_DIR"))
        .ok_or("error: the simulated uv installs Pythons only into an --install-dir")?;
    let mirror =
        value("--mirror").or_else(|| env_var(env, "UV_PYTHON_INSTALL_MIRROR")).unwrap_or(PYTHON_INSTALL_MIRROR);
    let flags_with_values = ["--install-dir", "-i", "--mirror"];
    let target = args
        .iter()
        .enumerate()
        .filter(|(i, a)| !a.starts_with('-') && (*i == 0 || !flags_with_values.contains(&args[i - 1].as_str())))
        .map(|(_, a)| a.as_str())
        .next_back()
        .unwrap_or("3");
    let (version, tag) = MANAGED;
    if !version.starts_with(target) || !matches!(host.arch, Arch::Amd64 | Arch::Arm64) {
        return Err(format!(
            "error: No download found for request: cpython-{target}-linux-{}-{}",
            host.arch.gnu(),
            libc(host)
        ));
    }
    let key = key(host, version);
    let dir = Path::new(dir);
    if installed(local, &dir.join(&key)) {
        return Ok(format!("Python {target} is already installed\n"));
    }
    let triple = format!("{}-unknown-linux-{}", host.arch.gnu(), libc(host));
    let url = format!(
        "{}/{tag}/cpython-{version}%2B{tag}-{triple}-install_only_stripped.tar.gz",
        mirror.trim_end_matches('/')
    );
    let failed =
        |why: String| format!("error: Failed to install {key}\n  cause: Failed to download `{url}`\n  cause: {why}");
    let resp = local.http.http_get(&url, "application/octet-stream").map_err(|e| failed(e.to_string()))?;
    if resp.status != 200 {
        let reason = if resp.status == 404 { " Not Found" } else { "" };
        return Err(failed(format!("HTTP status client error ({}{reason}) for url ({url})", resp.status)));
    }
    let io = |e: llmgw_core::system::SysError| format!("error: Failed to install {key}\n  cause: {e}");
    let temp = dir.join(".temp").join(&key);
    let _ = local.files.remove(&temp);
    local.files.create_dir_all(&temp).map_err(io)?;
    local.files.unpack_tar_gz(&resp.body, &temp).map_err(io)?;
    let _ = local.files.remove(&dir.join(&key));
    local.files.rename(&temp.join("python"), &dir.join(&key)).map_err(io)?;
    let _ = local.files.remove(&temp);
    Ok(format!("Installed Python {version}\n + {key}\n"))
}

/// Whether the managed CPython at `dir` is there (its interpreter is).
fn installed(local: &Local, dir: &Path) -> bool {
    local.files.read(&dir.join("bin/python3.12")).ok().flatten().is_some()
}

/// The interpreter `uv venv --python REQUEST` takes: a managed one in the
/// install directory (uv prefers them), else with `only_managed` none, else
/// the system's when its version fits.
pub(super) fn find(
    host: &Host,
    local: &Local,
    request: &str,
    install_dir: Option<&str>,
    only_managed: bool,
) -> Option<Interpreter> {
    let (version, _) = MANAGED;
    if let Some(dir) = install_dir.map(Path::new)
        && version.starts_with(request)
        && installed(local, &dir.join(key(host, version)))
    {
        let bin = dir.join(key(host, version)).join("bin");
        return Some(Interpreter { version: version.to_string(), bin, managed: true });
    }
    if only_managed {
        return None;
    }
    let system = host.os.python.as_ref().filter(|p| p.version.starts_with(request))?;
    Some(Interpreter { version: system.version.clone(), bin: PathBuf::from(SYSTEM_BIN), managed: false })
}
