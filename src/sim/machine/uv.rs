//! The simulated uv: `uv venv` and `uv pip install -r pyproject.toml`, as
//! far as llmgw uses them, against the fake package indexes.
//!
//! `venv` creates `bin/python` (a simulated CPython 3.12 that needs glibc
//! 2.17, as python-build-standalone's builds do; its download is not
//! simulated) and `lib/python3.12/site-packages/`. `pip install` resolves
//! the pyproject's dependencies — a package named in `[tool.uv.sources]`
//! from its explicit index, every other from the default index — through
//! the PEP 691 JSON API and each wheel's PEP 658 metadata, choosing the
//! newest version that fits the pin, CPython 3.12 and the host's platform;
//! then downloads each wheel, checks it against the index's sha256, unpacks
//! it into site-packages and writes its console scripts. Failures are in
//! uv's words (its `No solution found` and `Hash mismatch` reports), exit 2.

use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::host::Host;
use crate::pep503::normalize;
use crate::recipe::compare_versions;
use crate::sim::truth::stub::{ElfStub, Emulated, VersionOutput};
use crate::sim::truth::wheel_name::WheelName;
use crate::system::Effects;
use crate::system::Output;

/// The CPython a simulated `uv venv --python 3.12` provides.
pub(crate) const PYTHON_VERSION: &str = "3.12.12";

/// Where a simulated environment keeps its packages, under the environment.
pub(crate) const SITE_PACKAGES: &str = "lib/python3.12/site-packages";

/// Runs `uv ARGS` on the simulated host.
pub(super) fn run(host: &Host, local: &Effects, args: &[String]) -> Output {
    let result = match args.first().map(String::as_str) {
        Some("venv") => venv(local, &args[1..]),
        Some("pip") if args.get(1).map(String::as_str) == Some("install") => pip_install(host, local, &args[2..]),
        _ => Err(format!("error: unrecognized subcommand '{}'", args.join(" "))),
    };
    match result {
        Ok(stderr) => Output { code: Some(0), stdout: String::new(), stderr },
        Err(stderr) => Output { code: Some(2), stdout: String::new(), stderr: format!("{stderr}\n") },
    }
}

/// The value after `flag`, and the arguments that are neither flags nor their values.
fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map(String::as_str)
}

fn venv(local: &Effects, args: &[String]) -> Result<String, String> {
    let python = flag(args, "--python").unwrap_or("3");
    if !PYTHON_VERSION.starts_with(python) {
        return Err(format!("error: No interpreter found for Python {python} in managed installations or search path"));
    }
    let dir = args
        .iter()
        .enumerate()
        .filter(|(i, a)| !a.starts_with('-') && (*i == 0 || args[i - 1] != "--python"))
        .map(|(_, a)| a)
        .next_back()
        .ok_or("error: the environment's path is missing")?;
    let dir = Path::new(dir);
    let io = |e: crate::system::SysError| format!("error: {e}");
    local.files.create_dir_all(&dir.join(SITE_PACKAGES)).map_err(io)?;
    let interpreter = ElfStub {
        needed: vec!["libpthread.so.0".into(), "libdl.so.2".into(), "libm.so.6".into(), "libc.so.6".into()],
        requires: vec!["GLIBC_2.17".into()],
        version: Some(VersionOutput {
            args: vec!["--version".into()],
            stdout: format!("Python {PYTHON_VERSION}\n"),
            stderr: String::new(),
        }),
        emulates: Some(Emulated::Python),
        ..ElfStub::default()
    };
    local.files.write_file(&dir.join("bin/python"), &interpreter.to_bytes(), 0o755).map_err(io)?;
    let cfg = format!(
        "home = /opt/uv/python/cpython-{PYTHON_VERSION}-linux-gnu/bin\nimplementation = CPython\nuv = 0.12.20\nversion_info = {PYTHON_VERSION}\ninclude-system-site-packages = false\nrelocatable = true\n"
    );
    local.files.write_file(&dir.join("pyvenv.cfg"), cfg.as_bytes(), 0o644).map_err(io)?;
    Ok(format!("Using CPython {PYTHON_VERSION}\nCreating virtual environment at: {}\n", dir.display()))
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

/// One requirement: a name with an optional `==` pin, or a local wheel.
#[derive(Debug, Clone)]
struct Req {
    name: String,
    pin: Option<String>,
    file: Option<PathBuf>,
    text: String,
}

fn parse_req(s: &str) -> Option<Req> {
    let s = s.split(';').next()?.trim();
    if let Some((name, url)) = s.split_once(" @ ") {
        let path = url.trim().strip_prefix("file://")?;
        return Some(Req { name: normalize(name), pin: None, file: Some(PathBuf::from(path)), text: s.to_string() });
    }
    let (name, pin) = match s.split_once("==") {
        Some((n, p)) => (n, Some(p.trim().to_string())),
        None => (s, None),
    };
    let name = name.split('[').next()?.trim();
    (!name.is_empty()).then(|| Req { name: normalize(name), pin, file: None, text: s.to_string() })
}

/// Whether `version` satisfies `==pin`: a pin without a local label
/// matches any local label (PEP 440), so `==2.11.0` takes `2.11.0+cu129`.
fn pin_matches(pin: &str, version: &str) -> bool {
    version == pin || (!pin.contains('+') && version.split('+').next() == Some(pin))
}

/// The `Requires-Dist` of a METADATA text, without extras' requirements.
pub(crate) fn requires_dist(metadata: &str) -> Vec<String> {
    metadata
        .lines()
        .filter_map(|l| l.strip_prefix("Requires-Dist:"))
        .map(str::trim)
        .filter(|r| !r.contains("extra =="))
        .map(str::to_string)
        .collect()
}

#[derive(Deserialize)]
struct ProjectPage {
    files: Vec<FileEntry>,
}

#[derive(Deserialize)]
struct FileEntry {
    filename: String,
    url: String,
    hashes: BTreeMap<String, String>,
}

/// A resolved wheel and where it comes from.
#[derive(Debug, Clone)]
struct Chosen {
    version: String,
    filename: String,
    from: From,
}

#[derive(Debug, Clone)]
enum From {
    Index { url: String, sha256: String },
    File(PathBuf),
}

fn unsatisfiable(because: &str) -> String {
    format!(
        "  × No solution found when resolving dependencies:\n  ╰─▶ Because {because}, we can conclude that your requirements are unsatisfiable."
    )
}

fn pip_install(host: &Host, local: &Effects, args: &[String]) -> Result<String, String> {
    let python = flag(args, "--python").ok_or("error: no --python given")?;
    let default_index = flag(args, "--default-index").unwrap_or("https://pypi.org/simple").trim_end_matches('/');
    let requirements = flag(args, "-r").ok_or("error: no -r given")?;
    let text = local
        .files
        .read(Path::new(requirements))
        .map_err(|e| format!("error: {e}"))?
        .ok_or_else(|| format!("error: File not found: `{requirements}`"))?;
    let pyproject: PyprojectIn = toml::from_str(&String::from_utf8_lossy(&text))
        .map_err(|e| format!("error: Failed to parse `{requirements}`: {e}"))?;
    let explicit: BTreeMap<String, String> = pyproject.tool.uv.index.into_iter().map(|i| (i.name, i.url)).collect();
    // A source pins a package to an index only when the package is one of
    // the project's own dependencies (uv's `Indexes::from_manifest`).
    let direct: Vec<String> =
        pyproject.project.dependencies.iter().filter_map(|d| parse_req(d)).map(|r| r.name).collect();
    let sources: BTreeMap<String, String> = pyproject
        .tool
        .uv
        .sources
        .into_iter()
        .map(|(name, s)| (normalize(&name), explicit.get(&s.index).cloned().unwrap_or_default()))
        .filter(|(name, _)| direct.contains(name))
        .collect();

    // Resolve, breadth first, exact pins only.
    let mut chosen: BTreeMap<String, Chosen> = BTreeMap::new();
    let mut queue: VecDeque<Req> = pyproject.project.dependencies.iter().filter_map(|d| parse_req(d)).collect();
    while let Some(req) = queue.pop_front() {
        // A bare name waits for the pins: a real resolver chooses the
        // version every requirement allows, not the newest on its own.
        if req.pin.is_none() && req.file.is_none() && queue.iter().any(|r| r.pin.is_some() || r.file.is_some()) {
            queue.push_back(req);
            continue;
        }
        if let Some(c) = chosen.get(&req.name) {
            match &req.pin {
                Some(pin) if !pin_matches(pin, &c.version) => {
                    return Err(unsatisfiable(&format!(
                        "{}=={} is already required and you require {}",
                        req.name, c.version, req.text
                    )));
                }
                _ => continue,
            }
        }
        let (choice, metadata) = match &req.file {
            Some(path) => local_wheel(host, local, path)?,
            None => {
                let index =
                    sources.get(&req.name).filter(|u| !u.is_empty()).map_or(default_index, |u| u.trim_end_matches('/'));
                from_index(host, local, &req, index)?
            }
        };
        for r in requires_dist(&metadata).iter().filter_map(|r| parse_req(r)) {
            queue.push_back(r);
        }
        chosen.insert(req.name.clone(), choice);
    }

    // Download, verify, unpack.
    let env =
        Path::new(python).parent().and_then(Path::parent).ok_or("error: --python is not inside an environment")?;
    let site = env.join(SITE_PACKAGES);
    let mut installed = Vec::new();
    for (name, c) in &chosen {
        let bytes = match &c.from {
            From::File(p) => local.files.read(p).map_err(|e| format!("error: {e}"))?.unwrap_or_default(),
            From::Index { url, sha256 } => {
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
                let (_, got) = crate::archive::sha256_reader(&resp.body[..]).map_err(|e| format!("error: {e}"))?;
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

/// A requirement met by a local wheel file.
fn local_wheel(host: &Host, local: &Effects, path: &Path) -> Result<(Chosen, String), String> {
    let filename = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    let wheel = WheelName::parse(&filename).ok_or_else(|| format!("error: `{filename}` is not a wheel"))?;
    if !wheel.fits_python(12) || !wheel.fits_platform(host) {
        return Err(format!(
            "error: A path dependency is incompatible with the current platform: {}\n\n  hint: The wheel is compatible with {}",
            path.display(),
            wheel.platform.join(", ")
        ));
    }
    let bytes = local
        .files
        .read(path)
        .map_err(|e| format!("error: {e}"))?
        .ok_or_else(|| format!("error: File not found: `{}`", path.display()))?;
    let metadata = wheel_metadata(&bytes).map_err(|e| format!("error: Failed to read `{filename}`: {e}"))?;
    Ok((Chosen { version: wheel.version, filename, from: From::File(path.to_path_buf()) }, metadata))
}

/// A requirement met from a package index.
fn from_index(host: &Host, local: &Effects, req: &Req, index: &str) -> Result<(Chosen, String), String> {
    let url = format!("{index}/{}/", req.name);
    let resp = local
        .http
        .http_get(&url, "application/vnd.pypi.simple.v1+json")
        .map_err(|e| format!("error: Request failed for `{}`\n  Caused by: {e}", req.name))?;
    if resp.status == 404 {
        return Err(unsatisfiable(&format!(
            "{} was not found in the package registry and you require {}",
            req.name, req.text
        )));
    }
    if resp.status != 200 {
        return Err(format!("error: Failed to fetch `{url}`\n  Caused by: HTTP status {}", resp.status));
    }
    let page: ProjectPage = serde_json::from_slice(&resp.body)
        .map_err(|e| format!("error: Received some unexpected JSON from {url}: {e}"))?;
    let matching: Vec<(WheelName, &FileEntry)> = page
        .files
        .iter()
        .filter_map(|f| WheelName::parse(&f.filename).map(|w| (w, f)))
        .filter(|(w, _)| req.pin.as_deref().is_none_or(|p| pin_matches(p, &w.version)))
        .collect();
    if matching.is_empty() {
        return Err(unsatisfiable(&format!("there is no version of {}", req.text)));
    }
    let fitting: Vec<&(WheelName, &FileEntry)> =
        matching.iter().filter(|(w, _)| w.fits_python(12) && w.fits_platform(host)).collect();
    let Some((wheel, file)) = fitting.into_iter().max_by(|a, b| compare_versions(&a.0.version, &b.0.version)) else {
        let mut platforms: Vec<String> = matching.iter().flat_map(|(w, _)| w.platform.clone()).collect();
        platforms.sort();
        platforms.dedup();
        let version = &matching[0].0.version;
        return Err(format!(
            "{}\n\n      hint: Wheels are available for `{}` (v{version}) on the following platforms: {}",
            unsatisfiable(&format!(
                "{}=={version} has no wheels with a matching platform tag (e.g., `{}`) and you require {}",
                req.name,
                host_tag(host),
                req.text
            )),
            req.name,
            platforms.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
        ));
    };
    let sha256 = file.hashes.get("sha256").cloned().unwrap_or_default();
    let meta = local
        .http
        .http_get(&format!("{}.metadata", file.url), "text/plain")
        .map_err(|e| format!("error: Failed to fetch metadata of `{}`\n  Caused by: {e}", file.filename))?;
    let metadata = String::from_utf8_lossy(&meta.body).into_owned();
    Ok((
        Chosen {
            version: wheel.version.clone(),
            filename: file.filename.clone(),
            from: From::Index { url: file.url.clone(), sha256 },
        },
        metadata,
    ))
}

/// The platform tag uv names for the host: `manylinux_2_35_x86_64`.
fn host_tag(host: &Host) -> String {
    match &host.os.glibc {
        Some(g) => format!(
            "manylinux_{}_{}_{}",
            g.parts().first().unwrap_or(&2),
            g.parts().get(1).unwrap_or(&0),
            host.arch.gnu()
        ),
        None => format!("musllinux_1_2_{}", host.arch.gnu()),
    }
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
fn unpack_wheel(local: &Effects, bytes: &[u8], site: &Path) -> Result<Vec<(String, String)>, String> {
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
    fn requirements_and_pins() {
        let r = parse_req("torch==2.11.0").unwrap();
        assert_eq!((r.name.as_str(), r.pin.as_deref()), ("torch", Some("2.11.0")));
        assert!(pin_matches("2.11.0", "2.11.0+cu129"));
        assert!(!pin_matches("2.11.0+cu130", "2.11.0+cu129"));
        let f = parse_req("vllm @ file:///tmp/x/vllm-0.20.1+cu129-cp38-abi3-manylinux_2_31_x86_64.whl").unwrap();
        assert!(f.file.is_some());
        assert_eq!(normalize("Sgl_Kernel"), "sgl-kernel");
        assert_eq!(
            requires_dist("Name: x\nRequires-Dist: numpy==2.3.4\nRequires-Dist: pytest; extra == \"test\"\n"),
            ["numpy==2.3.4"]
        );
        assert_eq!(
            console_scripts("[console_scripts]\nvllm = vllm.entrypoints.cli.main:main\n"),
            [("vllm".to_string(), "vllm.entrypoints.cli.main:main".to_string())]
        );
    }
}
