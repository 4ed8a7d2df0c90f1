//! The simulated uv: `uv python install`, `uv venv`, `uv pip install -r
//! pyproject.toml` and `uv pip compile`, as far as llmgw (and the real-uv
//! comparison) uses them, against the fake package indexes and the fake
//! python-build-standalone downloads.
//!
//! `python install` (`python.rs`) unpacks CPython 3.12.16's archive from the
//! mirror into the install directory. `venv` creates `bin/python` (a
//! simulated CPython that needs glibc 2.17, as python-build-standalone's
//! builds do) and `lib/python3.12/site-packages/` on the interpreter it
//! finds: a managed one in `UV_PYTHON_INSTALL_DIR`, else (without
//! `--managed-python`) the host's own (`os.python`), named as `home` in
//! `pyvenv.cfg`; with neither, one taken as downloaded (not simulated). `pip install` resolves
//! the pyproject's dependencies for the host (`resolve.rs`) — a package
//! named in `[tool.uv.sources]` from its explicit index, every other from
//! the default index — through the PEP 691 JSON API and each wheel's PEP 658
//! metadata; then downloads each wheel, checks it against the index's
//! sha256, unpacks it into site-packages and writes its console scripts.
//! `pip compile` resolves the same way for a `--python-platform` and
//! `--python-version` and prints the lock as `--format pylock.toml` does
//! (PEP 751: each package's name, version and wheel). Failures are in uv's
//! words (its `No solution found` and `Hash mismatch` reports), exit 2.
//!
//! May import what the machine may (`host`, `pep503`, `recipe`'s version
//! order, the truth's wheel names and stubs, `system`).

mod python;
mod resolve;

pub(crate) use python::SYSTEM_BIN;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde::Deserialize;

use crate::truth::stub::{ElfStub, Emulated, VersionOutput};
use crate::truth::wheel_name::WheelName;
use llmgw_core::system::{Ended, Output};
use llmgw_model::host::Host;
use llmgw_model::pep503::normalize;
use llmgw_system::Local;
use resolve::{Req, Resolver, Target, WheelFrom};

/// The CPython a simulated `uv venv --python 3.12` provides when uv
/// installs it (what the resolver targets).
pub(crate) const PYTHON_VERSION: &str = python::MANAGED.0;

/// Where a simulated environment keeps its packages, under the environment.
pub(crate) const SITE_PACKAGES: &str = "lib/python3.12/site-packages";

/// Runs `uv ARGS` with the environment variables `env` on the simulated
/// host: `python install`, `venv`, `pip install` (for the host) and `pip
/// compile` (for the `--python-platform` given, the host aside), with uv's
/// exit codes (0, or 2 with its report on stderr).
pub fn run(host: &Host, local: &Local, args: &[String], env: &[(String, String)]) -> Output {
    let result = match (args.first().map(String::as_str), args.get(1).map(String::as_str)) {
        (Some("python"), Some("install")) => python::install(host, local, &args[2..], env).map(|e| (String::new(), e)),
        (Some("venv"), _) => venv(host, local, &args[1..], env).map(|e| (String::new(), e)),
        (Some("pip"), Some("install")) => pip_install(host, local, &args[2..]).map(|e| (String::new(), e)),
        (Some("pip"), Some("compile")) => pip_compile(local, &args[2..]),
        _ => Err(format!("error: unrecognized subcommand '{}'", args.join(" "))),
    };
    match result {
        Ok((stdout, stderr)) => Output { ended: Ended::Exited(0), stdout, stderr, ..Output::default() },
        Err(stderr) => Output {
            ended: Ended::Exited(2),
            stdout: String::new(),
            stderr: format!("{stderr}\n"),
            ..Output::default()
        },
    }
}

/// The value after `flag`, and the arguments that are neither flags nor their values.
fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map(String::as_str)
}

/// `uv venv [--relocatable] [--managed-python] [--no-python-downloads]
/// --python V DIR`: the environment on the interpreter uv finds
/// ([`python::find`]); with `--managed-python` (or `UV_MANAGED_PYTHON`)
/// only a managed one, which with downloads off must be installed already.
/// Without any, the interpreter is taken as downloaded (not simulated).
fn venv(host: &Host, local: &Local, args: &[String], env: &[(String, String)]) -> Result<String, String> {
    let request = flag(args, "--python").unwrap_or("3");
    let only_managed = args.iter().any(|a| a == "--managed-python")
        || python::env_var(env, "UV_MANAGED_PYTHON").is_some_and(|v| v == "1" || v == "true");
    let no_downloads = args.iter().any(|a| a == "--no-python-downloads")
        || python::env_var(env, "UV_PYTHON_DOWNLOADS").is_some_and(|v| v == "never");
    let install_dir = python::env_var(env, "UV_PYTHON_INSTALL_DIR");
    let found = python::find(host, local, request, install_dir, only_managed);
    let base = match found {
        Some(i) => i,
        None if no_downloads => {
            let where_ =
                if only_managed { "in managed installations" } else { "in managed installations or search path" };
            return Err(format!(
                "error: No interpreter found for Python {request} {where_}\n\nhint: A managed Python download is available for Python {request}, but Python downloads are set to 'never'"
            ));
        }
        None if !python::MANAGED.0.starts_with(request) => {
            return Err(format!(
                "error: No interpreter found for Python {request} in managed installations or search path"
            ));
        }
        None => python::Interpreter {
            version: python::MANAGED.0.to_string(),
            bin: Path::new("/opt/uv/python").join(format!("cpython-{}-linux-gnu/bin", python::MANAGED.0)),
            managed: true,
        },
    };
    let dir = args
        .iter()
        .enumerate()
        .filter(|(i, a)| !a.starts_with('-') && (*i == 0 || args[i - 1] != "--python"))
        .map(|(_, a)| a)
        .next_back()
        .ok_or("error: the environment's path is missing")?;
    let dir = Path::new(dir);
    let io = |e: llmgw_core::system::SysError| format!("error: {e}");
    local.files.create_dir_all(&dir.join(SITE_PACKAGES)).map_err(io)?;
    let interpreter = ElfStub {
        needed: vec!["libpthread.so.0".into(), "libdl.so.2".into(), "libm.so.6".into(), "libc.so.6".into()],
        requires: vec!["GLIBC_2.17".into()],
        version: Some(VersionOutput {
            args: vec!["--version".into()],
            stdout: format!("Python {}\n", base.version),
            stderr: String::new(),
        }),
        emulates: Some(Emulated::Python),
        ..ElfStub::default()
    };
    local.files.write_file(&dir.join("bin/python"), &interpreter.to_bytes(), 0o755).map_err(io)?;
    let cfg = format!(
        "home = {}\nimplementation = CPython\nuv = {}\nversion_info = {}\ninclude-system-site-packages = false\nrelocatable = true\n",
        base.bin.display(),
        llmgw_core::recipe::UV_VERSION,
        base.version
    );
    local.files.write_file(&dir.join("pyvenv.cfg"), cfg.as_bytes(), 0o644).map_err(io)?;
    Ok(format!(
        "Using CPython {} interpreter at: {}/python{}\nCreating virtual environment at: {}\n",
        base.version,
        base.bin.display(),
        &base.version[..base.version.rfind('.').unwrap_or(base.version.len())],
        dir.display()
    ))
}

#[derive(Deserialize)]
struct PyprojectIn {
    project: ProjectIn,
    #[serde(default)]
    tool: ToolIn,
}

#[derive(Deserialize)]
struct ProjectIn {
    #[serde(default)]
    dependencies: Vec<String>,
}

#[derive(Deserialize, Default)]
struct ToolIn {
    #[serde(default)]
    uv: UvIn,
}

#[derive(Deserialize, Default)]
struct UvIn {
    #[serde(default)]
    index: Vec<IndexIn>,
    #[serde(default)]
    sources: BTreeMap<String, SourceIn>,
}

#[derive(Deserialize)]
struct IndexIn {
    name: String,
    url: String,
}

#[derive(Deserialize)]
struct SourceIn {
    index: String,
}

/// What a requirements file asks: the requirements and the projects pinned
/// to another index (name → that index's simple root).
fn read_requirements(local: &Local, file: &str) -> Result<(Vec<Req>, BTreeMap<String, String>), String> {
    let text = local
        .files
        .read(Path::new(file))
        .map_err(|e| format!("error: {e}"))?
        .ok_or_else(|| format!("error: File not found: `{file}`"))?;
    let text = String::from_utf8_lossy(&text);
    if !file.ends_with(".toml") {
        let reqs = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'));
        return reqs
            .map(|l| Req::parse(l).ok_or_else(|| format!("error: Failed to parse `{file}`: `{l}`")))
            .collect::<Result<Vec<_>, _>>()
            .map(|r| (r, BTreeMap::new()));
    }
    let pyproject: PyprojectIn = toml::from_str(&text).map_err(|e| format!("error: Failed to parse `{file}`: {e}"))?;
    let explicit: BTreeMap<String, String> = pyproject.tool.uv.index.into_iter().map(|i| (i.name, i.url)).collect();
    let reqs = pyproject
        .project
        .dependencies
        .iter()
        .map(|d| Req::parse(d).ok_or_else(|| format!("error: Failed to parse `{file}`: `{d}`")))
        .collect::<Result<Vec<_>, _>>()?;
    // A source pins a package to an index only when the package is one of
    // the project's own dependencies (uv's `Indexes::from_manifest`).
    let sources = pyproject
        .tool
        .uv
        .sources
        .into_iter()
        .map(|(name, s)| (normalize(&name), explicit.get(&s.index).cloned().unwrap_or_default()))
        .filter(|(name, url)| !url.is_empty() && reqs.iter().any(|r| &r.name == name))
        .map(|(name, url)| (name, url.trim_end_matches('/').to_string()))
        .collect();
    Ok((reqs, sources))
}

/// The METADATA of a local wheel, with its name's parts.
fn local_metadata(local: &Local, path: &Path) -> Result<(WheelName, String), String> {
    let filename = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    let wheel = WheelName::parse(&filename).ok_or_else(|| format!("error: `{filename}` is not a wheel"))?;
    let bytes = local
        .files
        .read(path)
        .map_err(|e| format!("error: {e}"))?
        .ok_or_else(|| format!("error: File not found: `{}`", path.display()))?;
    let metadata = wheel_metadata(&bytes).map_err(|e| format!("error: Failed to read `{filename}`: {e}"))?;
    Ok((wheel, metadata))
}

/// The requirements of the file `requirements` resolved for `target`
/// against `default_index` and the file's own sources; a local wheel is
/// checked against the target when `local_must_fit` (`pip install` does,
/// `pip compile` does not).
fn resolve(
    local: &Local,
    target: &Target,
    default_index: &str,
    requirements: &str,
    local_must_fit: bool,
) -> Result<BTreeMap<String, resolve::Chosen>, String> {
    let (roots, sources) = read_requirements(local, requirements)?;
    let read_local = |p: &Path| local_metadata(local, p);
    let resolver = Resolver {
        local,
        target,
        default_index: default_index.to_string(),
        sources,
        local_metadata: &read_local,
        local_must_fit,
    };
    resolver.resolve(roots)
}

fn pip_install(host: &Host, local: &Local, args: &[String]) -> Result<String, String> {
    let python = flag(args, "--python").ok_or("error: no --python given")?;
    let default_index = flag(args, "--default-index").unwrap_or("https://pypi.org/simple").trim_end_matches('/');
    let requirements = flag(args, "-r").ok_or("error: no -r given")?;
    let target = Target::of_host(host, PYTHON_VERSION);
    let chosen = resolve(local, &target, default_index, requirements, true)?;

    // Download, verify, unpack.
    let env =
        Path::new(python).parent().and_then(Path::parent).ok_or("error: --python is not inside an environment")?;
    let site = env.join(SITE_PACKAGES);
    let mut installed = Vec::new();
    for (name, c) in &chosen {
        let bytes = match &c.from {
            WheelFrom::File(p) => local.files.read(p).map_err(|e| format!("error: {e}"))?.unwrap_or_default(),
            WheelFrom::Index { url, sha256 } => {
                let resp = local
                    .http
                    .http_get(url, "application/octet-stream")
                    .map_err(|e| format!("error: Failed to download `{name}=={}`\n  Caused by: {e}", c.version))?;
                if resp.status != 200 {
                    return Err(format!(
                        "error: Failed to download `{name}=={}`\n  Caused by: HTTP status {}",
                        c.version, resp.status
                    ));
                }
                let (_, got) = llmgw_core::archive::sha256_reader(&resp.body[..]).map_err(|e| format!("error: {e}"))?;
                if got != *sha256 {
                    return Err(format!(
                        "error: Failed to download `{name}=={}`\n  Caused by: Hash mismatch for `{name}=={}`\n\nExpected:\n  sha256:{sha256}\n\nComputed:\n  sha256:{got}",
                        c.version, c.version
                    ));
                }
                resp.body
            }
        };
        let scripts = unpack_wheel(local, &bytes, &site)
            .map_err(|e| format!("error: Failed to install `{}`: {e}", c.filename))?;
        for (script, target) in scripts {
            local
                .files
                .write_file(&env.join("bin").join(&script), entry_point(&target).as_bytes(), 0o755)
                .map_err(|e| format!("error: {e}"))?;
        }
        installed.push(format!(" + {name}=={}", c.version));
    }
    let n = chosen.len();
    Ok(format!("Resolved {n} packages\nPrepared {n} packages\nInstalled {n} packages\n{}\n", installed.join("\n")))
}

/// `uv pip compile FILE --python-platform P --python-version V
/// [--default-index URL] --format pylock.toml`: the resolution for that
/// platform, as a PEP 751 lock on stdout (each package's `name`, `version`
/// and its one wheel, by `url` or local `path`), `Resolved N packages` on
/// stderr. Only this output format is simulated.
fn pip_compile(local: &Local, args: &[String]) -> Result<(String, String), String> {
    let file = args
        .iter()
        .enumerate()
        .find(|(i, a)| !a.starts_with('-') && (*i == 0 || !args[i - 1].starts_with("--")))
        .map(|(_, a)| a.as_str())
        .ok_or("error: the following required arguments were not provided: <SRC_FILE>")?;
    if flag(args, "--format").is_some_and(|f| f != "pylock.toml") {
        return Err("error: the simulated uv writes only --format pylock.toml".into());
    }
    let python = flag(args, "--python-version").unwrap_or(PYTHON_VERSION);
    let target = match flag(args, "--python-platform") {
        Some(p) => Target::parse_platform(p, python)?,
        None => return Err("error: the simulated uv compiles only for a --python-platform".into()),
    };
    let default_index = flag(args, "--default-index")
        .or_else(|| flag(args, "--index-url"))
        .unwrap_or("https://pypi.org/simple")
        .trim_end_matches('/');
    let chosen = resolve(local, &target, default_index, file, false)?;
    let quote = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    let mut lock = format!(
        "# This file was autogenerated by uv via the following command:\n#    uv pip compile {}\nlock-version = \"1.0\"\ncreated-by = \"uv\"\nrequires-python = \">={python}\"\n",
        args.join(" ")
    );
    for (name, c) in &chosen {
        let wheel = match &c.from {
            WheelFrom::Index { url, sha256 } => {
                format!("{{ url = {}, hashes = {{ sha256 = {} }} }}", quote(url), quote(sha256))
            }
            WheelFrom::File(p) => format!("{{ path = {} }}", quote(&p.display().to_string())),
        };
        lock.push_str(&format!(
            "\n[[packages]]\nname = {}\nversion = {}\nwheels = [{wheel}]\n",
            quote(name),
            quote(&c.version)
        ));
    }
    Ok((lock, format!("Resolved {} packages\n", chosen.len())))
}

/// The METADATA of a wheel's `.dist-info`.
fn wheel_metadata(bytes: &[u8]) -> Result<String, String> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| e.to_string())?;
    let name = zip
        .file_names()
        .filter_map(Result::ok)
        .find(|n| n.ends_with(".dist-info/METADATA") && n.matches('/').count() == 1)
        .map(|n| n.into_owned())
        .ok_or("the wheel has no .dist-info/METADATA")?;
    let mut text = String::new();
    zip.by_name(&name).map_err(|e| e.to_string())?.read_to_string(&mut text).map_err(|e| e.to_string())?;
    Ok(text)
}

/// Unpacks a wheel into `site` through the installer's own allowlist
/// (uv refuses the same entries); its console scripts as (name, `module:function`).
fn unpack_wheel(local: &Local, bytes: &[u8], site: &Path) -> Result<Vec<(String, String)>, String> {
    let placed = local.files.unpack_wheel(bytes, site).map_err(|e| e.to_string())?;
    let mut scripts = Vec::new();
    for f in placed.iter().filter(|f| f.path.ends_with(".dist-info/entry_points.txt")) {
        let text = local.files.read(&site.join(&f.path)).map_err(|e| e.to_string())?.unwrap_or_default();
        scripts.extend(console_scripts(&String::from_utf8_lossy(&text)));
    }
    Ok(scripts)
}

/// The `[console_scripts]` of an `entry_points.txt`.
fn console_scripts(text: &str) -> Vec<(String, String)> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == "[console_scripts]";
        } else if inside && let Some((name, target)) = line.split_once('=') {
            out.push((name.trim().to_string(), target.trim().to_string()));
        }
    }
    out
}

/// A relocatable console script as uv writes it: it runs the environment's
/// own `python` found beside itself.
fn entry_point(target: &str) -> String {
    let (module, function) = target.split_once(':').unwrap_or((target, "main"));
    format!(
        "#!/bin/sh\n'''exec' \"$(dirname -- \"$(realpath -- \"$0\")\")\"/'python' \"$0\" \"$@\"\n' '''\n# -*- coding: utf-8 -*-\nimport sys\nfrom {module} import {function}\nif __name__ == \"__main__\":\n    sys.argv[0] = sys.argv[0].removesuffix(\".exe\")\n    sys.exit({function}())\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_scripts_and_entry_points() {
        assert_eq!(normalize("Sgl_Kernel"), "sgl-kernel");
        assert_eq!(
            console_scripts("[console_scripts]\nvllm = vllm.entrypoints.cli.main:main\n"),
            [("vllm".to_string(), "vllm.entrypoints.cli.main:main".to_string())]
        );
        assert!(entry_point("vllm.entrypoints.cli.main:main").contains("from vllm.entrypoints.cli.main import main"));
    }
}
