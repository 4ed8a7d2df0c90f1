//! The simulated uv's resolver: requirements (PEP 508, as far as the
//! truth's METADATA writes them), the platform and Python a resolution is
//! for, and the choice of one wheel per project from the PEP 691 indexes.
//!
//! What it decides, as uv 0.13.9 does for the same index (the real-uv
//! comparison, `tests/it/real_uv.rs`, checks it on every matrix host): a
//! wheel installs when one of its platform tags fits the target (a
//! `manylinux_2_N` tag needs glibc 2.N or newer, `any` runs everywhere, a
//! musl target takes `musllinux` only), its Python tag fits the Python
//! (`cp312`, `py3`, `cp38-abi3` for 3.8 and later) and the file's
//! `requires-python` contains that Python. Of the versions every
//! requirement of a project allows, the newest whose own pins agree with
//! what is chosen already wins; of its files, the highest build tag, then
//! the most specific platform tag. Pinned requirements are resolved before
//! bare ones, so a bare `torchvision` waits for `torch==2.8.0` and takes the
//! torchvision made for it, as uv's backtracking would.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use pep440_rs::{Version, VersionSpecifiers};
use serde::Deserialize;

use crate::truth::wheel_name::{WheelName, manylinux};
use llmgw_model::host::{Host, Libc};
use llmgw_model::pep503::normalize;
use llmgw_system::Local;

/// What a resolution is for: an architecture, a C library, a Python.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The architecture as wheel tags name it: `x86_64`, `aarch64`.
    pub arch: String,
    /// The glibc `(major, minor)`; `None` on a musl system.
    pub glibc: Option<(u32, u32)>,
    /// The Python version: `3.12` or `3.12.12`.
    pub python: String,
}

impl Target {
    /// The target of a host, with the Python the environment runs.
    pub fn of_host(host: &Host, python: &str) -> Target {
        let glibc = match (&host.os.libc, &host.os.glibc) {
            (Libc::Glibc, Some(g)) => {
                Some((g.parts().first().copied().unwrap_or(2), g.parts().get(1).copied().unwrap_or(0)))
            }
            _ => None,
        };
        Target { arch: host.arch.gnu().to_string(), glibc, python: python.to_string() }
    }

    /// A `--python-platform` as uv takes it: `x86_64-manylinux_2_35`,
    /// `aarch64-manylinux2014`, `x86_64-unknown-linux-gnu` (which uv reads
    /// as `manylinux_2_28`), `x86_64-unknown-linux-musl`.
    ///
    /// # Errors
    /// uv's words for a value it does not take.
    pub fn parse_platform(platform: &str, python: &str) -> Result<Target, String> {
        let bad = || format!("error: invalid value '{platform}' for '--python-platform <PYTHON_PLATFORM>'");
        let (arch, rest) = platform.split_once('-').ok_or_else(bad)?;
        if !matches!(arch, "x86_64" | "aarch64") {
            return Err(bad());
        }
        let glibc = match rest {
            "unknown-linux-gnu" => Some((2, 28)),
            "unknown-linux-musl" => None,
            "manylinux2014" => Some((2, 17)),
            _ => {
                let ((major, minor), _) = manylinux(&format!("{rest}_{arch}")).ok_or_else(bad)?;
                Some((major, minor))
            }
        };
        Ok(Target { arch: arch.to_string(), glibc, python: python.to_string() })
    }

    /// The platform tag uv names in a hint: `manylinux_2_35_x86_64`.
    pub fn tag(&self) -> String {
        match self.glibc {
            Some((major, minor)) => format!("manylinux_{major}_{minor}_{}", self.arch),
            None => format!("musllinux_1_2_{}", self.arch),
        }
    }

    /// The Python's minor version (12 of `3.12.12`).
    fn python_minor(&self) -> u32 {
        self.python.split('.').nth(1).and_then(|m| m.parse().ok()).unwrap_or(0)
    }

    /// Whether a wheel of this name installs here.
    fn fits(&self, w: &WheelName) -> bool {
        w.fits_python(self.python_minor()) && w.platform.iter().any(|p| self.platform_rank(p).is_some())
    }

    /// How specific a fitting platform tag is (higher first), `None` when it does not fit.
    fn platform_rank(&self, tag: &str) -> Option<(u32, u32)> {
        if tag == "any" {
            return Some((0, 0));
        }
        match self.glibc {
            None => (tag.starts_with("musllinux_") && tag.ends_with(&self.arch)).then_some((1, 0)),
            Some(have) => {
                let (need, arch) = manylinux(tag)?;
                (arch == self.arch && need <= have).then_some(need)
            }
        }
    }

    /// Whether a `requires-python` contains this Python.
    fn python_allowed(&self, spec: Option<&str>) -> bool {
        let (Some(spec), Ok(v)) = (spec, Version::from_str(&self.python)) else { return true };
        VersionSpecifiers::from_str(spec).map_or(true, |s| s.contains(&v))
    }
}

/// One requirement: a project, its extras and version specifiers, the extra
/// it belongs to (`; extra == "srt"`), or a local wheel (`name @ file://…`).
#[derive(Debug, Clone)]
pub struct Req {
    /// The project, normalized (PEP 503): `sgl-kernel`.
    pub name: String,
    /// The extras asked for: `["srt"]` of `sglang[srt]==0.4.10`.
    pub extras: Vec<String>,
    /// The version specifiers: `==2.8.0`, `>=2.14.0`; empty for a bare name.
    pub spec: String,
    /// The extra whose requirement this is, from its marker.
    pub extra: Option<String>,
    /// A local wheel standing for the project.
    pub file: Option<PathBuf>,
    /// The requirement as written, for messages.
    pub text: String,
}

impl Req {
    /// Parses `name[extras] specifiers ; marker` or `name @ file://path`;
    /// `None` for anything else (a marker other than an extra included: the
    /// truth writes none).
    pub fn parse(s: &str) -> Option<Req> {
        let (body, marker) = s.split_once(';').map_or((s, None), |(b, m)| (b, Some(m.trim())));
        let extra = match marker {
            None => None,
            Some(m) => {
                let value = m.strip_prefix("extra")?.trim_start().strip_prefix("==")?.trim();
                Some(value.trim_matches(|c| c == '"' || c == '\'').to_string())
            }
        };
        let body = body.trim();
        let text = s.trim().to_string();
        if let Some((name, url)) = body.split_once(" @ ") {
            let path = url.trim().strip_prefix("file://")?;
            let name = normalize(name.trim());
            return Some(Req {
                name,
                extras: vec![],
                spec: String::new(),
                extra,
                file: Some(PathBuf::from(path)),
                text,
            });
        }
        let end = body.find(|c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c))).unwrap_or(body.len());
        let (name, mut rest) = body.split_at(end);
        if name.is_empty() {
            return None;
        }
        let mut extras = Vec::new();
        if let Some(inner) = rest.trim_start().strip_prefix('[') {
            let (list, after) = inner.split_once(']')?;
            extras = list.split(',').map(|e| e.trim().to_string()).filter(|e| !e.is_empty()).collect();
            rest = after;
        }
        let spec: String =
            rest.trim().trim_start_matches('(').trim_end_matches(')').chars().filter(|c| !c.is_whitespace()).collect();
        if !spec.is_empty() && VersionSpecifiers::from_str(&spec).is_err() {
            return None;
        }
        Some(Req { name: normalize(name), extras, spec, extra, file: None, text })
    }

    /// Whether it pins one version (`==`).
    fn pinned(&self) -> bool {
        self.spec.starts_with("==") && !self.spec.contains(',')
    }

    /// Whether `version` satisfies it (PEP 440: `==2.11.0` takes `2.11.0+cu129`).
    pub fn allows(&self, version: &str) -> bool {
        if self.spec.is_empty() {
            return true;
        }
        match (VersionSpecifiers::from_str(&self.spec), Version::from_str(version)) {
            (Ok(s), Ok(v)) => s.contains(&v),
            _ => false,
        }
    }
}

/// The requirements of a METADATA text for the extras asked for: those
/// without a marker, and those of each extra in `extras`.
pub fn requires_dist(metadata: &str, extras: &[String]) -> Vec<Req> {
    metadata
        .lines()
        .filter_map(|l| l.strip_prefix("Requires-Dist:"))
        .filter_map(|r| Req::parse(r.trim()))
        .filter(|r| r.extra.as_ref().is_none_or(|e| extras.contains(e)))
        .collect()
}

/// A resolved wheel and where it comes from.
#[derive(Debug, Clone)]
pub struct Chosen {
    /// Its version.
    pub version: String,
    /// The wheel's file name.
    pub filename: String,
    /// Where to get it.
    pub from: WheelFrom,
    /// Its METADATA (for the extras asked of it later).
    metadata: String,
    /// The extras whose requirements were added.
    extras: Vec<String>,
}

/// Where a chosen wheel comes from.
#[derive(Debug, Clone)]
pub enum WheelFrom {
    /// A file of an index, with the sha256 the index gives.
    Index {
        /// The file's URL.
        url: String,
        /// Its sha256, hex.
        sha256: String,
    },
    /// A local wheel.
    File(PathBuf),
}

#[derive(Deserialize)]
struct ProjectPage {
    files: Vec<FileEntry>,
}

#[derive(Deserialize, Clone)]
struct FileEntry {
    filename: String,
    url: String,
    hashes: BTreeMap<String, String>,
    #[serde(rename = "requires-python", default)]
    requires_python: Option<String>,
}

/// uv's report of a resolution that cannot succeed.
pub fn unsatisfiable(because: &str) -> String {
    format!(
        "  × No solution found when resolving dependencies:\n  ╰─▶ Because {because}, we can conclude that your requirements are unsatisfiable."
    )
}

/// Reads a local wheel's METADATA, with its name's parts; uv's words when it cannot.
pub type LocalMetadata<'a> = &'a dyn Fn(&Path) -> Result<(WheelName, String), String>;

/// Resolves requirements against the indexes for one target.
pub struct Resolver<'a> {
    /// The network and files.
    pub local: &'a Local,
    /// What it resolves for.
    pub target: &'a Target,
    /// The default index's simple root, without the final `/`.
    pub default_index: String,
    /// Projects pinned to another index (`[tool.uv.sources]`): name → simple root.
    pub sources: BTreeMap<String, String>,
    /// Reads a local wheel's METADATA.
    pub local_metadata: LocalMetadata<'a>,
    /// Whether a local wheel must fit the target: `pip install` checks it
    /// against the interpreter it installs for, `pip compile` takes the path
    /// as given (uv 0.13.9 locks a `manylinux_2_31` wheel for
    /// `x86_64-manylinux_2_28`: the real-uv comparison showed it).
    pub local_must_fit: bool,
}

impl Resolver<'_> {
    /// Every project with its chosen wheel, by name; uv's report when none fits.
    ///
    /// # Errors
    /// uv's words: no version, no wheel for the platform or the Python, a conflict.
    pub fn resolve(&self, roots: Vec<Req>) -> Result<BTreeMap<String, Chosen>, String> {
        let mut chosen: BTreeMap<String, Chosen> = BTreeMap::new();
        let mut queue: VecDeque<Req> = roots.into();
        while let Some(req) = queue.pop_front() {
            // A bare name waits for the pins: a real resolver chooses the
            // version every requirement allows, not the newest on its own.
            if !req.pinned() && req.file.is_none() && queue.iter().any(|r| r.pinned() || r.file.is_some()) {
                queue.push_back(req);
                continue;
            }
            if let Some(c) = chosen.get_mut(&req.name) {
                if req.file.is_none() && !req.allows(&c.version) {
                    return Err(unsatisfiable(&format!(
                        "{}=={} is already required and you require {}",
                        req.name, c.version, req.text
                    )));
                }
                let new: Vec<String> = req.extras.iter().filter(|e| !c.extras.contains(e)).cloned().collect();
                if !new.is_empty() {
                    queue.extend(requires_dist(&c.metadata, &new).into_iter().filter(|r| r.extra.is_some()));
                    c.extras.extend(new);
                }
                continue;
            }
            let same: Vec<Req> = queue.iter().filter(|r| r.name == req.name && r.file.is_none()).cloned().collect();
            let (version, filename, from, metadata) = match &req.file {
                Some(path) => {
                    let (wheel, metadata) = (self.local_metadata)(path)?;
                    if self.local_must_fit && !self.target.fits(&wheel) {
                        return Err(format!(
                            "error: A path dependency is incompatible with the current platform: {}\n\n  hint: The wheel is compatible with {}",
                            path.display(),
                            wheel.platform.join(", ")
                        ));
                    }
                    let filename = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
                    (wheel.version, filename, WheelFrom::File(path.clone()), metadata)
                }
                None => self.pick_from_index(&req, &same, &chosen)?,
            };
            queue.extend(requires_dist(&metadata, &req.extras));
            chosen.insert(req.name.clone(), Chosen { version, filename, from, metadata, extras: req.extras.clone() });
        }
        Ok(chosen)
    }

    /// The wheel of `req` from its index: the newest version every
    /// requirement of the project allows whose own pins agree with what is
    /// chosen, its best file for the target.
    fn pick_from_index(
        &self,
        req: &Req,
        same: &[Req],
        chosen: &BTreeMap<String, Chosen>,
    ) -> Result<(String, String, WheelFrom, String), String> {
        let index = self.sources.get(&req.name).map_or(self.default_index.as_str(), String::as_str);
        let url = format!("{index}/{}/", req.name);
        let resp = self
            .local
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
        let matching: Vec<(WheelName, FileEntry)> = page
            .files
            .into_iter()
            .filter_map(|f| WheelName::parse(&f.filename).map(|w| (w, f)))
            .filter(|(w, _)| req.allows(&w.version) && same.iter().all(|r| r.allows(&w.version)))
            .collect();
        if matching.is_empty() {
            return Err(unsatisfiable(&format!("there is no version of {}", req.text)));
        }
        let fitting: Vec<&(WheelName, FileEntry)> = matching
            .iter()
            .filter(|(w, f)| self.target.fits(w) && self.target.python_allowed(f.requires_python.as_deref()))
            .collect();
        if fitting.is_empty() {
            return Err(self.no_wheel(req, &matching));
        }
        // Newest version first; within one, the highest build tag, then the
        // most specific platform tag.
        let rank = |w: &WheelName| {
            let build = w.build.as_deref().and_then(|b| b.parse::<u64>().ok());
            let platform = w.platform.iter().filter_map(|p| self.target.platform_rank(p)).max();
            (build, platform)
        };
        let mut versions: Vec<&str> = fitting.iter().map(|(w, _)| w.version.as_str()).collect();
        versions.sort_by(|a, b| llmgw_core::recipe::compare_versions(b, a));
        versions.dedup();
        let mut conflict = None;
        for v in versions {
            let Some((wheel, file)) =
                fitting.iter().filter(|(w, _)| w.version == v).max_by(|a, b| rank(&a.0).cmp(&rank(&b.0))).copied()
            else {
                continue;
            };
            let meta = self
                .local
                .http
                .http_get(&format!("{}.metadata", file.url), "text/plain")
                .map_err(|e| format!("error: Failed to fetch metadata of `{}`\n  Caused by: {e}", file.filename))?;
            let metadata = String::from_utf8_lossy(&meta.body).into_owned();
            let clash = requires_dist(&metadata, &req.extras)
                .into_iter()
                .find(|r| chosen.get(&r.name).is_some_and(|c| r.file.is_none() && !r.allows(&c.version)));
            if let Some(r) = clash {
                conflict.get_or_insert_with(|| {
                    let c = &chosen[&r.name];
                    format!("{}=={v} depends on {} and {}=={} is already required", req.name, r.text, r.name, c.version)
                });
                continue;
            }
            let sha256 = file.hashes.get("sha256").cloned().unwrap_or_default();
            return Ok((
                wheel.version.clone(),
                file.filename.clone(),
                WheelFrom::Index { url: file.url.clone(), sha256 },
                metadata,
            ));
        }
        Err(unsatisfiable(&conflict.unwrap_or_else(|| format!("no version of {} fits", req.text))))
    }

    /// uv's report when versions exist but no wheel fits the platform or the Python.
    fn no_wheel(&self, req: &Req, matching: &[(WheelName, FileEntry)]) -> String {
        let version = &matching[0].0.version;
        let for_python: Vec<&(WheelName, FileEntry)> = matching
            .iter()
            .filter(|(w, _)| w.platform.iter().any(|p| self.target.platform_rank(p).is_some()))
            .collect();
        if let Some((_, f)) = for_python.first() {
            let spec = f.requires_python.clone().unwrap_or_default();
            return unsatisfiable(&format!(
                "the requested Python version ({}) does not satisfy Python{spec} and {}=={version} depends on Python{spec}",
                self.target.python, req.name
            ));
        }
        let mut platforms: Vec<String> = matching.iter().flat_map(|(w, _)| w.platform.clone()).collect();
        platforms.sort();
        platforms.dedup();
        format!(
            "{}\n\n      hint: Wheels are available for `{}` (v{version}) on the following platforms: {}",
            unsatisfiable(&format!(
                "{}=={version} has no wheels with a matching platform tag (e.g., `{}`) and you require {}",
                req.name,
                self.target.tag(),
                req.text
            )),
            req.name,
            platforms.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_markers_and_specifiers() {
        let r = Req::parse("torch==2.11.0").unwrap();
        assert_eq!((r.name.as_str(), r.spec.as_str()), ("torch", "==2.11.0"));
        assert!(r.allows("2.11.0+cu129"));
        assert!(!r.allows("2.11.1"));
        let r = Req::parse("torch (>=2.14.0)").unwrap();
        assert!(r.allows("2.14.1") && !r.allows("2.8.0"));
        let r = Req::parse("sglang[srt]==0.4.10").unwrap();
        assert_eq!((r.name.as_str(), r.extras.as_slice()), ("sglang", ["srt".to_string()].as_slice()));
        let r = Req::parse("sgl-kernel==0.2.8; extra == \"srt\"").unwrap();
        assert_eq!(r.extra.as_deref(), Some("srt"));
        assert!(Req::parse("llguidance<1.4; platform_machine == \"x86_64\"").is_none());
        let f = Req::parse("vllm @ file:///tmp/x/vllm-0.20.1+cu129-cp38-abi3-manylinux_2_31_x86_64.whl").unwrap();
        assert!(f.file.is_some());
        let meta = "Name: s\nRequires-Dist: numpy\nRequires-Dist: torch==2.7.1; extra == \"srt\"\n";
        assert_eq!(requires_dist(meta, &[]).len(), 1);
        assert_eq!(requires_dist(meta, &["srt".to_string()]).len(), 2);
    }

    #[test]
    fn platforms_as_uv_takes_them() {
        let t = Target::parse_platform("x86_64-manylinux_2_35", "3.12").unwrap();
        assert_eq!((t.glibc, t.tag().as_str()), (Some((2, 35)), "manylinux_2_35_x86_64"));
        assert_eq!(Target::parse_platform("x86_64-unknown-linux-gnu", "3.12").unwrap().glibc, Some((2, 28)));
        assert_eq!(Target::parse_platform("aarch64-manylinux2014", "3.12").unwrap().glibc, Some((2, 17)));
        assert_eq!(Target::parse_platform("x86_64-unknown-linux-musl", "3.12").unwrap().glibc, None);
        assert!(Target::parse_platform("powerpc64le-manylinux_2_35", "3.12").is_err());
        let w = |f: &str| WheelName::parse(f).unwrap();
        assert!(t.fits(&w("vllm-0.20.1-cp38-abi3-manylinux_2_35_x86_64.whl")));
        assert!(!t.fits(&w("vllm-0.20.1-cp38-abi3-manylinux_2_35_aarch64.whl")));
        let rhel9 = Target::parse_platform("x86_64-manylinux_2_34", "3.12").unwrap();
        assert!(!rhel9.fits(&w("vllm-0.20.1-cp38-abi3-manylinux_2_35_x86_64.whl")));
        assert!(rhel9.fits(&w("sgl_kernel-0.2.8-cp39-abi3-manylinux2014_x86_64.whl")));
        assert!(!rhel9.fits(&w("sglang-0.5.23-cp313-cp313-manylinux_2_34_x86_64.whl")));
        assert!(rhel9.python_allowed(Some("<3.15,>=3.10")) && !rhel9.python_allowed(Some(">=3.13")));
    }
}
