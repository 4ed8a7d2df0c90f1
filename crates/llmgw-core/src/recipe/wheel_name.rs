//! Wheel file names and their tags (PEP 427, PEP 425, PEP 600): what a
//! wheel is called, which tags a publisher writes into its `WHEEL` file,
//! and which wheels a host can install (the newest version a `latest` want
//! resolves to, the simulated uv's choice).
//!
//! `{name}-{version}(-{build})?-{python}-{abi}-{platform}.whl`, each tag
//! part possibly a `.`-joined set. `manylinux_2_N_<arch>` needs glibc >=
//! 2.N; the legacy `manylinux2014` is `manylinux_2_17`, `manylinux2010`
//! 2_12 and `manylinux1` 2_5 (PEP 600); `any` runs everywhere; a musl host
//! takes only `musllinux_*` and `any`.

use llmgw_model::host::{Host, Libc};

/// A wheel's name split into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelName {
    /// The distribution name as written in the file name: `sgl_kernel`.
    pub name: String,
    /// The version: `2.11.0+cu129`.
    pub version: String,
    /// The build tag, when the name has one: `1` in `torch-2.9.0-1-cp312-…`.
    pub build: Option<String>,
    /// Python tags: `cp312`, `cp38`, `py3`.
    pub python: Vec<String>,
    /// ABI tags: `cp312`, `abi3`, `none`.
    pub abi: Vec<String>,
    /// Platform tags: `manylinux_2_28_x86_64`, `any`.
    pub platform: Vec<String>,
}

impl WheelName {
    /// Parses a wheel file name; `None` when it is not one.
    pub fn parse(filename: &str) -> Option<WheelName> {
        let stem = filename.strip_suffix(".whl")?;
        let parts: Vec<&str> = stem.split('-').collect();
        let (name, version, build, rest) = match parts.len() {
            5 => (parts[0], parts[1], None, &parts[2..]),
            6 => (parts[0], parts[1], Some(parts[2].to_string()), &parts[3..]),
            _ => return None,
        };
        let set = |s: &str| s.split('.').map(str::to_string).collect::<Vec<_>>();
        Some(WheelName {
            name: name.to_string(),
            version: version.to_string(),
            build,
            python: set(rest[0]),
            abi: set(rest[1]),
            platform: set(rest[2]),
        })
    }

    /// The tags the name expands to, in file-name order:
    /// `numpy-2.3.4-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl`
    /// gives `cp312-cp312-manylinux_2_27_x86_64` and
    /// `cp312-cp312-manylinux_2_28_x86_64` (compressed tag sets, PEP 425).
    pub fn tags(&self) -> Vec<String> {
        let mut out = Vec::new();
        for p in &self.python {
            for a in &self.abi {
                for pl in &self.platform {
                    out.push(format!("{p}-{a}-{pl}"));
                }
            }
        }
        out
    }

    /// Whether the wheel is pure Python for every platform (`none-any`).
    pub fn is_purelib(&self) -> bool {
        self.abi == ["none"] && self.platform == ["any"]
    }

    /// Whether CPython 3.`minor` can import it.
    pub fn fits_python(&self, minor: u32) -> bool {
        let cp = format!("cp3{minor}");
        self.python.iter().any(|p| {
            p == "py3"
                || p == &cp
                || (self.abi.iter().any(|a| a == "abi3")
                    && p.strip_prefix("cp3").and_then(|m| m.parse::<u32>().ok()).is_some_and(|m| m <= minor))
        })
    }

    /// Whether `host` can load it: a platform tag for its architecture and
    /// a glibc at least the tag's.
    pub fn fits_platform(&self, host: &Host) -> bool {
        self.platform.iter().any(|p| platform_fits(p, host))
    }
}

/// The glibc a `manylinux` tag needs, `(2, N)`, and its architecture.
pub fn manylinux(tag: &str) -> Option<((u32, u32), &str)> {
    for (legacy, glibc) in [("manylinux2014_", (2, 17)), ("manylinux2010_", (2, 12)), ("manylinux1_", (2, 5))] {
        if let Some(arch) = tag.strip_prefix(legacy) {
            return Some((glibc, arch));
        }
    }
    let rest = tag.strip_prefix("manylinux_")?;
    let mut it = rest.splitn(3, '_');
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some(((major, minor), it.next()?))
}

fn platform_fits(tag: &str, host: &Host) -> bool {
    if tag == "any" {
        return true;
    }
    let arch = host.arch.gnu();
    if host.os.libc == Libc::Musl {
        return tag.starts_with("musllinux_") && tag.ends_with(arch);
    }
    let Some(((maj, min), tag_arch)) = manylinux(tag) else { return false };
    let Some(glibc) = &host.os.glibc else { return false };
    let have = glibc.parts();
    tag_arch == arch && (have.first().copied(), have.get(1).copied().unwrap_or(0)) >= (Some(maj), min)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_matches_tags() {
        let w = WheelName::parse("torch-2.11.0+cu129-cp312-cp312-manylinux_2_28_x86_64.whl").unwrap();
        assert_eq!((w.name.as_str(), w.version.as_str()), ("torch", "2.11.0+cu129"));
        assert!(w.fits_python(12));
        assert!(!w.fits_python(11));
        let abi3 = WheelName::parse("vllm-0.20.1-cp38-abi3-manylinux_2_28_x86_64.whl").unwrap();
        assert!(abi3.fits_python(12));
        let any = WheelName::parse("transformers-4.57.1-py3-none-any.whl").unwrap();
        assert!(any.fits_python(12));
        assert_eq!(manylinux("manylinux2014_aarch64"), Some(((2, 17), "aarch64")));
        assert_eq!(manylinux("manylinux_2_35_x86_64"), Some(((2, 35), "x86_64")));
        assert!(WheelName::parse("not-a-wheel.tar.gz").is_none());
    }
}
