//! A build that is a Python environment: uv (installed first, through its
//! own recipe) installs a CPython of the engines' own under the engines
//! directory (`uv python install --install-dir <engines>/python --mirror …`,
//! never the node's Python: Ubuntu 24.04's has no `Python.h`, which Triton
//! compiles against; docs/facts.md §5.4), creates a relocatable environment
//! on it in staging (`uv venv --managed-python`) and installs the engine
//! into it from PyPI — or, for a wheel published as a GitHub release asset,
//! from that wheel checked against GitHub's digest, with the named packages
//! from one extra index. The interpreter's files go into the install record.
//!
//! What uv is told is a `pyproject.toml` in staging: the requirements as
//! `[project].dependencies`, the extra index as an explicit
//! `[[tool.uv.index]]` and each of its packages pinned to it in
//! `[tool.uv.sources]`, so every other package comes from PyPI. `uv pip
//! install -r pyproject.toml` honours `tool.uv.sources` (its `--no-sources`
//! flag turns them off). Source: docs.astral.sh/uv/concepts/indexes
//! ("Pinning a package to an index").

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Config;
use super::failure::BuildFailure;
use super::record::{Built, ManagedPython, PYTHON_DIR, Paths};
use crate::recipe::{Build, PythonEnv, ReleaseWheel, Want};
use crate::release::download::download_verified;
use crate::release::{Release, ReleaseSource};
use crate::system::{Cmd, System};

/// How long `uv pip install` of a Python engine may take, in seconds: a few
/// gigabytes of wheels on a slow link.
const UV_INSTALL_TIMEOUT_SECS: u64 = 3600;

/// How long `uv python install` may take, in seconds: one archive of some
/// 30 MB (python-build-standalone's `install_only_stripped`).
const UV_PYTHON_TIMEOUT_SECS: u64 = 900;

/// The variable that tells uv where its managed Pythons are: `uv python
/// install --install-dir` says that later commands need it to find them.
/// Source: uv 0.13.9 `uv python install --help` (`[env: UV_PYTHON_INSTALL_DIR=]`);
/// astral-sh/uv `crates/uv-cli/src/lib.rs` (`PythonInstallArgs::install_dir`).
pub const UV_PYTHON_INSTALL_DIR: &str = "UV_PYTHON_INSTALL_DIR";

/// Creates the environment of `build` in the staging tree of `paths` with
/// the uv at `uv` (installed first, as the build requires).
///
/// # Errors
/// The first failure: the wheel missing or not matching its digest, `uv
/// venv` or `uv pip install` failing (in uv's words).
pub(super) fn create_env(
    sys: &mut dyn System,
    cfg: &Config,
    source: &mut ReleaseSource,
    (build, env): (&Build, &PythonEnv),
    paths: &Paths,
    uv: &Path,
) -> Result<Built, BuildFailure> {
    let mut assets = Vec::new();
    let mut wheel = None;
    if let Some(w) = &env.wheel {
        let release = source.release(sys, &w.repo, &w.tag)?;
        let asset = wheel_asset(&release, w)?;
        let dest = paths.downloads().join(&asset.name);
        assets.push(download_verified(sys, asset, &dest)?);
        wheel = Some(dest);
    }
    let pyproject = paths.staging.join("pyproject.toml");
    let text = uv_project(build, env, wheel.as_deref(), cfg);
    sys.write_atomic(&pyproject, text.as_bytes())?;

    let tree = paths.tree();
    let downloads = format!("{}/", paths.downloads().display());
    // The interpreter first, under the engines directory, from the mirror;
    // then the environment on it, and on no other (the node's own Python
    // may lack the headers Triton compiles against).
    let pythons = cfg.engines_dir.join(PYTHON_DIR);
    let install = Cmd::new(uv, ["python", "install", "--no-bin", "--install-dir"])
        .arg_path(&pythons)
        .args(["--mirror", &cfg.python_mirror, &env.python])
        .env("NO_COLOR", "1")
        .timeout(UV_PYTHON_TIMEOUT_SECS);
    uv_step(sys, &install, "uv python install", &downloads)?;
    let venv =
        Cmd::new(uv, ["venv", "--relocatable", "--managed-python", "--no-python-downloads", "--python", &env.python])
            .arg_path(&tree)
            .env("NO_COLOR", "1")
            .env(UV_PYTHON_INSTALL_DIR, &pythons.display().to_string())
            .timeout(600);
    uv_step(sys, &venv, "uv venv", &downloads)?;
    let python = managed_python(sys, cfg, &tree)?;
    let install = Cmd::new(uv, ["pip", "install", "--python"])
        .arg_path(&tree.join("bin/python"))
        .args(["--default-index", &cfg.pypi_simple, "-r"])
        .arg_path(&pyproject)
        .env("NO_COLOR", "1")
        .timeout(UV_INSTALL_TIMEOUT_SECS);
    uv_step(sys, &install, "uv pip install", &downloads)?;

    let files = super::record::tree_files(sys, &tree)?;
    Ok(Built { files, assets, depends_on: vec![], python: Some(python) })
}

/// The managed CPython the environment at `tree` runs on: the directory
/// its `pyvenv.cfg` names as `home` (`<dir>/bin`), which must lie in the
/// engines directory's [`PYTHON_DIR`], with every file in it.
///
/// # Errors
/// [`BuildFailure::Uv`] when the environment runs on another Python.
fn managed_python(sys: &mut dyn System, cfg: &Config, tree: &Path) -> Result<ManagedPython, BuildFailure> {
    let cfg_file = sys.read(&tree.join("pyvenv.cfg"))?.unwrap_or_default();
    let text = String::from_utf8_lossy(&cfg_file);
    let home = text
        .lines()
        .find_map(|l| l.split_once('=').filter(|(k, _)| k.trim() == "home").map(|(_, v)| v.trim().to_string()))
        .unwrap_or_default();
    let pythons = cfg.engines_dir.join(PYTHON_DIR);
    let dir = Path::new(&home).parent().filter(|d| d.parent() == Some(pythons.as_path()));
    let Some(dir) = dir else {
        return Err(BuildFailure::Uv {
            step: "uv venv",
            ended: crate::system::Ended::Exited(0),
            said: format!(
                "the environment runs on `{home}`, not on a Python under {PYTHON_DIR}/ of the engines directory"
            ),
        });
    };
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let files = super::record::tree_files(sys, dir)?;
    Ok(ManagedPython { dir: format!("{PYTHON_DIR}/{name}"), files })
}

/// The `pyproject.toml` uv installs a Python build from (`uv pip install
/// -r`): its requirements, the release's wheel (downloaded to `wheel`) as a
/// `file://` requirement first, and each package of the extra index as a
/// direct requirement pinned to that index. The real-uv comparison
/// (`tests/it/real_uv.rs`) hands the same text to both uvs.
pub fn uv_project(build: &Build, env: &PythonEnv, wheel: Option<&Path>, cfg: &Config) -> String {
    let mut dependencies = env.requirements.clone();
    if let Some(dest) = wheel {
        let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let project = name.split('-').next().unwrap_or_default();
        dependencies.insert(0, format!("{project} @ file://{}", dest.display()));
    }
    // Sources apply to the project's direct dependencies only (uv's
    // resolver maps a package to an index from the manifest's own
    // requirements: astral-sh/uv#11388, #14538), so each package taken from
    // the extra index is a direct dependency too; the wheel's pins still
    // choose its version.
    if let Some(x) = &env.extra_index {
        dependencies.extend(x.packages.iter().cloned());
    }
    pyproject_toml(&build.binary, &env.python, dependencies, env, cfg)
}

/// Before anything is installed: the release of the wheel, each pinned
/// requirement on PyPI, and the version asked for (when an older one is to
/// be installed in its place) must exist. Costs a metadata request each.
///
/// # Errors
/// What the publisher does not have: the release or its wheel
/// ([`BuildFailure::Release`]), or a version on PyPI ([`BuildFailure::Index`]).
pub(super) fn preflight(
    sys: &mut dyn System,
    cfg: &Config,
    source: &mut ReleaseSource,
    want: &Want,
    build: &Build,
    env: &PythonEnv,
) -> Result<(), BuildFailure> {
    if let Some(w) = &env.wheel {
        let release = source.release(sys, &w.repo, &w.tag)?;
        wheel_asset(&release, w)?;
    }
    let mut pins: Vec<(String, String)> = env
        .requirements
        .iter()
        .filter_map(|r| r.split_once("=="))
        // `sglang[srt]==0.4.10` is project sglang (its extras aside).
        .map(|(n, v)| (n.split('[').next().unwrap_or(n).trim().to_string(), v.trim().to_string()))
        .collect();
    if build.version != want.version {
        pins.push((want.engine.as_str().to_string(), want.version.clone()));
    }
    for (project, version) in pins {
        if !super::exists::lists(&super::exists::pypi_versions(sys, cfg, &project)?, &version) {
            return Err(BuildFailure::Index(format!("PyPI has no {project} {version}")));
        }
    }
    Ok(())
}

/// The wheel asset of `w` in its release: the one named `prefix…suffix`.
fn wheel_asset<'a>(release: &'a Release, w: &ReleaseWheel) -> Result<&'a crate::release::Asset, BuildFailure> {
    release.assets.iter().find(|a| a.name.starts_with(&w.prefix) && a.name.ends_with(&w.suffix)).ok_or_else(|| {
        BuildFailure::Index(format!("release `{}` of {} has no asset {}…{}", w.tag, w.repo, w.prefix, w.suffix))
    })
}

/// Runs a uv step; its failure in uv's own words.
fn uv_step(sys: &mut dyn System, cmd: &Cmd, what: &'static str, downloads: &str) -> Result<(), BuildFailure> {
    let out = sys.run(cmd).map_err(|error| BuildFailure::UvNotRun { step: what, error })?;
    if out.success() {
        return Ok(());
    }
    // One line: uv's report without its box-drawing, and files by name.
    let said: Vec<String> = out
        .stderr
        .lines()
        .map(|l| l.replace(downloads, "").replace(['×', '╰', '─', '▶'], "").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    Err(BuildFailure::Uv { step: what, ended: out.ended, said: said.join(" ") })
}

#[derive(Serialize)]
struct Pyproject {
    project: Project,
    tool: Tool,
}

#[derive(Serialize)]
struct Project {
    name: String,
    version: String,
    #[serde(rename = "requires-python")]
    requires_python: String,
    dependencies: Vec<String>,
}

#[derive(Serialize)]
struct Tool {
    uv: UvSettings,
}

#[derive(Serialize)]
struct UvSettings {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    index: Vec<UvIndex>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    sources: BTreeMap<String, UvSource>,
}

#[derive(Serialize)]
struct UvIndex {
    name: String,
    url: String,
    explicit: bool,
}

#[derive(Serialize)]
struct UvSource {
    index: String,
}

/// The `pyproject.toml` uv installs from.
fn pyproject_toml(binary: &str, python: &str, dependencies: Vec<String>, env: &PythonEnv, cfg: &Config) -> String {
    let mut index = Vec::new();
    let mut sources = BTreeMap::new();
    if let Some(x) = &env.extra_index {
        index.push(UvIndex {
            name: x.name.clone(),
            url: format!("{}/{}", cfg.pytorch_whl.trim_end_matches('/'), x.pytorch_path),
            explicit: true,
        });
        for p in &x.packages {
            sources.insert(p.clone(), UvSource { index: x.name.clone() });
        }
    }
    let doc = Pyproject {
        project: Project {
            name: format!("llmgw-{binary}-environment"),
            version: "0".into(),
            requires_python: format!("=={python}.*"),
            dependencies,
        },
        tool: Tool { uv: UvSettings { index, sources } },
    };
    toml::to_string(&doc).expect("a pyproject always serializes")
}

/// The environment's interpreter, beside a Python build's binary.
pub(super) fn interpreter(binary: &Path) -> PathBuf {
    binary.with_file_name("python")
}
