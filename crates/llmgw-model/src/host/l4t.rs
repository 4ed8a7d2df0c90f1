//! A Jetson's L4T (Jetson Linux) release, `R36.4.3`: what decides its CUDA
//! stack (the iGPU userspace of JetPack 5 and 6, or the SBSA CUDA 13 stack
//! of JetPack 7), not its compute capability.
//!
//! The form is `/etc/nv_tegra_release`'s two fields joined unchanged: the
//! file's first line is `# R36 (release), REVISION: 4.3, GCID: …, BOARD: …,
//! EABI: aarch64, DATE: …` (as quoted in ollama/ollama#18067 `# R39
//! (release), REVISION: 2.1`, ollama/ollama#9317 `# R32 (release),
//! REVISION: 7.6`), and NVIDIA names releases so ("L4T R36.4.0 / JetPack
//! 6.1"). One spelling only: `r36.4.3`, `36.4.3` and `36.4` are refused.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An L4T release `R<major>.<minor>.<patch>`, ordered numerically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct L4tRelease {
    /// The release: 35 (JetPack 5), 36 (JetPack 6), 38 and 39 (JetPack 7).
    pub major: u32,
    /// The revision's first number: 4 of `REVISION: 4.3`.
    pub minor: u32,
    /// The revision's second number: 3 of `REVISION: 4.3`.
    pub patch: u32,
}

/// Text that is not an L4T release, kept as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not an L4T release like R36.4.3 (an upper-case R, the release, then the revision's two numbers)")]
pub struct L4tParseError {
    /// The text refused.
    pub text: String,
}

/// The JSON Schema pattern of [`L4tRelease`]'s text form.
pub const L4T_PATTERN: &str = "^R[1-9][0-9]{0,5}\\.[0-9]{1,6}\\.[0-9]{1,6}$";

/// The first L4T release whose CUDA stack is NVIDIA's SBSA one, the stack
/// that the aarch64 server builds (PyPI's and PyTorch's CUDA wheels,
/// llama.cpp's arm64 CUDA archives) target: JetPack 7 (L4T r38, Thor; r39,
/// JetPack 7.2, Orin as well). Earlier releases (r32 JetPack 4, r35 JetPack
/// 5, r36 JetPack 6) run the Tegra iGPU userspace, for which none of those
/// builds is made. Sources: dusty-nv/jetson-containers#1257 ("rel-36 cannot
/// use the SBSA CUDA toolkit, restrict use to rel-38 only"); ollama/ollama
/// PR #16628 ("The new Jetpack 7.2 supports SBSA based CUDA"); NixOS
/// nixpkgs#530931 ("With JetPack 7.2, the Jetson Orin series is supported.
/// This means that the CUDA 13 SBSA packages can be used with compute
/// capability 8.7").
pub const FIRST_SBSA_RELEASE: u32 = 38;

impl L4tRelease {
    /// Parses `R<major>.<minor>.<patch>`.
    ///
    /// # Errors
    /// [`L4tParseError`] with the text, for any other form.
    pub fn parse(s: &str) -> Result<L4tRelease, L4tParseError> {
        let bad = || L4tParseError { text: s.to_string() };
        let rest = s.strip_prefix('R').ok_or_else(bad)?;
        let mut parts = rest.split('.');
        let mut number = |leading_zero_ok: bool| -> Result<u32, L4tParseError> {
            let p = parts.next().ok_or_else(bad)?;
            let digits = !p.is_empty() && p.len() <= 6 && p.bytes().all(|c| c.is_ascii_digit());
            if !digits || (!leading_zero_ok && p.starts_with('0')) {
                return Err(bad());
            }
            p.parse().map_err(|_| bad())
        };
        let (major, minor, patch) = (number(false)?, number(true)?, number(true)?);
        if parts.next().is_some() {
            return Err(bad());
        }
        Ok(L4tRelease { major, minor, patch })
    }

    /// The release from `/etc/nv_tegra_release`'s first line, `# R36
    /// (release), REVISION: 4.3, …`; `None` when the line is not of that form.
    pub fn from_nv_tegra_release(line: &str) -> Option<L4tRelease> {
        let rest = line.trim_start().strip_prefix('#')?.trim_start();
        let (release, rest) = rest.split_once(' ')?;
        let rest = rest.trim_start().strip_prefix("(release),")?.trim_start();
        let revision = rest.strip_prefix("REVISION:")?.trim_start();
        let revision = revision.split(',').next()?.trim();
        L4tRelease::parse(&format!("{release}.{revision}")).ok()
    }

    /// Whether this release runs NVIDIA's SBSA CUDA stack ([`FIRST_SBSA_RELEASE`]).
    pub fn runs_sbsa_cuda(&self) -> bool {
        self.major >= FIRST_SBSA_RELEASE
    }
}

impl fmt::Display for L4tRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "R{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl Serialize for L4tRelease {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for L4tRelease {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        L4tRelease::parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for L4tRelease {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "L4tRelease".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A Jetson's L4T release, as /etc/nv_tegra_release gives it: R<release>.<revision>",
            "type": "string",
            "pattern": L4T_PATTERN,
            "examples": ["R36.4.3", "R39.2.1"]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_one_spelling_parses_and_prints_back() {
        let r = L4tRelease::parse("R36.4.3").unwrap();
        assert_eq!((r.major, r.minor, r.patch), (36, 4, 3));
        assert_eq!(r.to_string(), "R36.4.3");
        assert!(L4tRelease::parse("R35.6.1").unwrap() < L4tRelease::parse("R36.4.0").unwrap());
        assert!(L4tRelease::parse("R36.10.0").unwrap() > L4tRelease::parse("R36.4.7").unwrap());
    }

    #[test]
    fn other_spellings_are_refused_with_the_text() {
        for bad in ["r36.4.0", "36.4", "36.4.3", "R36.4", "R36", "R36.4.3.1", "R036.4.3", "R36.4.x", "", "R.4.3"] {
            let e = L4tRelease::parse(bad).unwrap_err();
            assert_eq!(e.text, bad);
        }
    }

    #[test]
    fn nv_tegra_release_lines_of_public_reports_are_read() {
        let line = "# R39 (release), REVISION: 2.1, GCID: 46758480, BOARD: generic, EABI: aarch64, DATE: Tue Mar 10";
        assert_eq!(L4tRelease::from_nv_tegra_release(line).unwrap().to_string(), "R39.2.1");
        let line = "# R32 (release), REVISION: 7.6, GCID: 38171779, BOARD: t210ref, EABI: aarch64, DATE: Tue Nov";
        assert_eq!(L4tRelease::from_nv_tegra_release(line).unwrap().to_string(), "R32.7.6");
        assert_eq!(L4tRelease::from_nv_tegra_release("# R36 (release), REVISION: 4.0").unwrap().to_string(), "R36.4.0");
        for bad in ["R36.4.0", "# R36 (release), REVISION: 4", "# R36 (release)", "# L4T 36.4"] {
            assert_eq!(L4tRelease::from_nv_tegra_release(bad), None, "{bad}");
        }
    }

    #[test]
    fn jetpack_7_is_the_first_sbsa_release() {
        assert!(!L4tRelease::parse("R36.4.7").unwrap().runs_sbsa_cuda());
        assert!(L4tRelease::parse("R38.2.0").unwrap().runs_sbsa_cuda());
        assert!(L4tRelease::parse("R39.2.1").unwrap().runs_sbsa_cuda());
    }
}
