//! The version numbers of a host description, each ordered numerically:
//! compute capabilities (`9.0`), NVIDIA driver versions (`535.183.01`),
//! and dotted versions (glibc `2.35`, libstdc++ `3.4.30`).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A compute capability `major.minor`: 7.0 is Volta, 9.0 Hopper.
///
/// Ordered by major, then minor. Parsed from `"X.Y"` or the JSON number
/// `X.Y`; anything else is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ComputeCapability {
    /// Generation: 7 for Volta and Turing, 8 Ampere and Ada, 9 Hopper.
    pub major: u32,
    /// Revision within the generation.
    pub minor: u32,
}

impl ComputeCapability {
    /// A compute capability from its parts.
    pub const fn new(major: u32, minor: u32) -> Self {
        ComputeCapability { major, minor }
    }

    /// Parses `X.Y` (one or two digits each side).
    ///
    /// # Errors
    /// [`VersionTextError::ComputeCapability`] when `s` is not `X.Y`.
    pub fn parse(s: &str) -> Result<Self, VersionTextError> {
        let bad = || VersionTextError::ComputeCapability(s.to_string());
        let (a, b) = s.trim().split_once('.').ok_or_else(bad)?;
        let digits = |p: &str| !p.is_empty() && p.len() <= 2 && p.bytes().all(|c| c.is_ascii_digit());
        // "7.05" is not 7.5, no GPU has a minor of two digits, and none has
        // compute capability 0.x.
        if !digits(a) || !digits(b) || b.len() > 1 || a.starts_with('0') {
            return Err(bad());
        }
        Ok(ComputeCapability::new(a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?))
    }
}

impl fmt::Display for ComputeCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl Serialize for ComputeCapability {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ComputeCapability {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = ComputeCapability;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a compute capability like \"8.6\" or 8.6")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<ComputeCapability, E> {
                ComputeCapability::parse(s).map_err(E::custom)
            }
            // 7.0 arrives as the float 7.0, whose shortest form is "7.0".
            fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<ComputeCapability, E> {
                ComputeCapability::parse(&format!("{n:?}")).map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<ComputeCapability, E> {
                Err(E::custom(format!("compute capability `{n}` has no minor part; write \"{n}.0\" (like 7.0)")))
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<ComputeCapability, E> {
                Err(E::custom(format!("compute capability `{n}` is not of the form X.Y (like 7.0 or 12.1)")))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// A text that is not the version it was read as; each variant holds the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionTextError {
    /// Not a compute capability `X.Y`.
    #[error("compute capability `{0}` is not of the form X.Y (like 7.0 or 12.1)")]
    ComputeCapability(String),
    /// Not a driver version of dotted numbers.
    #[error("driver version `{0}` is not dotted numbers (like 535.183.01)")]
    Driver(String),
    /// Not a version of dotted numbers.
    #[error("`{0}` is not a version of dotted numbers (like 2.35)")]
    Dotted(String),
}

/// An NVIDIA driver version: `535.183.01`. Ordered by its numeric parts.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DriverVersion {
    parts: Vec<u32>,
    text: String,
}

impl DriverVersion {
    /// Parses `MAJOR[.MINOR[.PATCH]]`.
    ///
    /// # Errors
    /// [`VersionTextError::Driver`] when `s` is not dotted numbers.
    pub fn parse(s: &str) -> Result<Self, VersionTextError> {
        let parts = dotted(s).ok_or_else(|| VersionTextError::Driver(s.to_string()))?;
        Ok(DriverVersion { parts, text: s.trim().to_string() })
    }

    /// The branch: 535 of `535.183.01`.
    pub fn major(&self) -> u32 {
        self.parts[0]
    }
}

impl fmt::Display for DriverVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for DriverVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for DriverVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        DriverVersion::parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// A version made of dotted numbers, compared numerically: glibc `2.35`,
/// libstdc++ `3.4.30`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DottedVersion(Vec<u32>);

impl DottedVersion {
    /// Parses `N(.N)*`.
    ///
    /// # Errors
    /// [`VersionTextError::Dotted`] when `s` is not dotted numbers.
    pub fn parse(s: &str) -> Result<Self, VersionTextError> {
        dotted(s).map(DottedVersion).ok_or_else(|| VersionTextError::Dotted(s.to_string()))
    }

    /// The numeric parts: `[2, 35]`.
    pub fn parts(&self) -> &[u32] {
        &self.0
    }
}

impl fmt::Display for DottedVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let texts: Vec<String> = self.0.iter().map(u32::to_string).collect();
        f.write_str(&texts.join("."))
    }
}

impl Serialize for DottedVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for DottedVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        DottedVersion::parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

fn dotted(s: &str) -> Option<Vec<u32>> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    // Digits only: `parse` would take "+535".
    s.split('.').map(|p| p.bytes().all(|c| c.is_ascii_digit()).then(|| p.parse::<u32>().ok()).flatten()).collect()
}

/// A string schema with `pattern`, described by `description`.
fn string_schema(description: &str, pattern: &str, examples: &[&str]) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "pattern": pattern,
        "description": description,
        "examples": examples,
    })
}

impl schemars::JsonSchema for ComputeCapability {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ComputeCapability".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Compute capability MAJOR.MINOR: \"8.6\", or the number 8.6",
            "anyOf": [
                {"type": "string", "pattern": "^[0-9]{1,3}\\.[0-9]{1,3}$"},
                {"type": "number", "not": {"type": "integer"}}
            ],
            "examples": ["7.0", "8.6", "12.1"]
        })
    }
}

impl schemars::JsonSchema for DriverVersion {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "DriverVersion".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        string_schema(
            "NVIDIA kernel driver version: dotted numbers, MAJOR.MINOR.PATCH",
            "^\\s*[0-9]+(\\.[0-9]+)*\\s*$",
            &["535.183.01", "580.95.05"],
        )
    }
}

impl schemars::JsonSchema for DottedVersion {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "DottedVersion".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        string_schema("A version of dotted numbers", "^\\s*[0-9]+(\\.[0-9]+)*\\s*$", &["2.35", "3.4.30"])
    }
}
