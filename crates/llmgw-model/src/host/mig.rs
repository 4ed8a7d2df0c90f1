//! MIG (Multi-Instance GPU) instances: on a GPU with MIG mode on, CUDA's
//! devices are the instances, each with its own memory and UUID, not the
//! GPU. A process selects one by `CUDA_VISIBLE_DEVICES=MIG-<uuid>`, sees at
//! most one, and has only that instance's memory (NVIDIA's MIG user guide,
//! "CUDA device enumeration"; "Application considerations").
//!
//! An instance is written as `nvidia-smi -L` lists it under its GPU:
//! `  MIG 3g.40gb     Device  0: (UUID: MIG-0929581a-2be6-5dec-bf34-0954c6c529a6)`
//! (quoted in NVIDIA/nvidia-container-toolkit#203). `profile` is the name
//! nvidia-smi gives it: a GPU instance `<g>g.<memory>gb`, optionally with a
//! suffix (`1g.10gb+me`: with a media engine), or a compute instance inside
//! one, `<c>c.<g>g.<memory>gb`.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The most compute slices a MIG-capable GPU has: seven on A100, H100,
/// H200 and B200 (four on A30). Every instance takes at least one, so no
/// GPU lists more than seven. Source: NVIDIA's MIG user guide, "Supported
/// MIG profiles" (A100: `7g.40gb` is the whole GPU, "up to seven" instances).
pub const MAX_COMPUTE_SLICES: u32 = 7;

/// The lowest compute capability with MIG: 8.0 (A100, A30); 9.0 (H100,
/// H200), 10.0 (B200) and 12.0 (RTX PRO 6000 Blackwell) have it too. Source:
/// NVIDIA's MIG user guide, "Supported GPUs".
pub const MIG_FROM_COMPUTE_CAPABILITY: (u32, u32) = (8, 0);

/// A MIG profile as nvidia-smi names it: `3g.40gb`, `1g.10gb+me`, `1c.3g.40gb`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MigProfile {
    text: String,
    compute_slices: Option<u32>,
    gpu_slices: u32,
    memory_gb: u32,
}

/// A profile name that is not of nvidia-smi's form, kept as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a MIG profile like 3g.40gb, 1g.10gb+me or 1c.3g.40gb")]
pub struct MigProfileError {
    /// The text refused.
    pub text: String,
}

/// The JSON Schema pattern of a [`MigProfile`].
pub const MIG_PROFILE_PATTERN: &str = "^([1-7]c\\.)?[1-8]g\\.[1-9][0-9]{0,3}gb([+-][a-z]+(\\.[a-z]+)?)?$";

/// The JSON Schema pattern of a MIG instance's UUID (drivers R470 and later;
/// the older `MIG-GPU-<uuid>/<gi>/<ci>` form is refused).
pub const MIG_UUID_PATTERN: &str = "^MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";

impl MigProfile {
    /// Parses nvidia-smi's profile name.
    ///
    /// # Errors
    /// [`MigProfileError`] with the text, for any other form.
    pub fn parse(s: &str) -> Result<MigProfile, MigProfileError> {
        let bad = || MigProfileError { text: s.to_string() };
        let number = |p: &str, max_len: usize| -> Option<u32> {
            (!p.is_empty() && p.len() <= max_len && !p.starts_with('0') && p.bytes().all(|c| c.is_ascii_digit()))
                .then(|| p.parse().ok())
                .flatten()
        };
        let (core, suffix_ok) = match s.find(['+', '-']) {
            Some(i) => {
                let suffix = &s[i + 1..];
                let ok = suffix.split('.').count() <= 2
                    && suffix.split('.').all(|w| !w.is_empty() && w.bytes().all(|c| c.is_ascii_lowercase()));
                (&s[..i], ok)
            }
            None => (s, true),
        };
        if !suffix_ok {
            return Err(bad());
        }
        let parts: Vec<&str> = core.split('.').collect();
        let (c, g, m) = match parts.as_slice() {
            [g, m] => (None, *g, *m),
            [c, g, m] => (Some(c.strip_suffix('c').and_then(|c| number(c, 1)).ok_or_else(bad)?), *g, *m),
            _ => return Err(bad()),
        };
        let gpu_slices = g.strip_suffix('g').and_then(|g| number(g, 1)).filter(|g| *g <= 8).ok_or_else(bad)?;
        let memory_gb = m.strip_suffix("gb").and_then(|m| number(m, 4)).ok_or_else(bad)?;
        if c.is_some_and(|c| c > gpu_slices.min(MAX_COMPUTE_SLICES)) {
            return Err(bad());
        }
        Ok(MigProfile { text: s.to_string(), compute_slices: c, gpu_slices, memory_gb })
    }

    /// The compute slices the instance takes: `c` of a compute instance
    /// (`1c.3g.40gb`: 1), else the GPU instance's `g` (`3g.40gb`: 3).
    pub fn compute_slices(&self) -> u32 {
        self.compute_slices.unwrap_or(self.gpu_slices)
    }

    /// Whether this is a compute instance inside a GPU instance (`1c.3g.40gb`),
    /// which shares that GPU instance's memory with its siblings.
    pub fn is_compute_instance(&self) -> bool {
        self.compute_slices.is_some()
    }

    /// The memory the name gives, in GB as nvidia-smi rounds it (40 of `3g.40gb`).
    pub fn memory_gb(&self) -> u32 {
        self.memory_gb
    }
}

impl fmt::Display for MigProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for MigProfile {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for MigProfile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        MigProfile::parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for MigProfile {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "MigProfile".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A MIG profile as nvidia-smi names it",
            "type": "string",
            "pattern": MIG_PROFILE_PATTERN,
            "examples": ["3g.40gb", "1g.10gb+me", "1c.3g.40gb"]
        })
    }
}

/// A MIG instance's UUID, `MIG-<uuid>` (lower-case hex, as nvidia-smi prints it).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MigUuid(String);

/// Text that is not a MIG UUID of drivers R470 and later.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a MIG instance UUID like MIG-0929581a-2be6-5dec-bf34-0954c6c529a6")]
pub struct MigUuidError {
    /// The text refused.
    pub text: String,
}

impl MigUuid {
    /// Parses `MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    ///
    /// # Errors
    /// [`MigUuidError`] with the text, for any other form (the older
    /// `MIG-GPU-<uuid>/<gi>/<ci>` included).
    pub fn parse(s: &str) -> Result<MigUuid, MigUuidError> {
        let bad = || MigUuidError { text: s.to_string() };
        let hex = s.strip_prefix("MIG-").ok_or_else(bad)?;
        let groups: Vec<&str> = hex.split('-').collect();
        let lens = [8, 4, 4, 4, 12];
        let ok = groups.len() == lens.len()
            && groups
                .iter()
                .zip(lens)
                .all(|(g, n)| g.len() == n && g.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')));
        ok.then(|| MigUuid(s.to_string())).ok_or_else(bad)
    }

    /// The UUID as CUDA_VISIBLE_DEVICES takes it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for MigUuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for MigUuid {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for MigUuid {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        MigUuid::parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for MigUuid {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "MigUuid".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A MIG instance's UUID (drivers R470 and later)",
            "type": "string",
            "pattern": MIG_UUID_PATTERN,
            "examples": ["MIG-0929581a-2be6-5dec-bf34-0954c6c529a6"]
        })
    }
}

/// One MIG instance of a GPU: `{"profile": "3g.40gb", "memory_mib": 40192,
/// "uuid": "MIG-…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MigInstance {
    /// The profile, as nvidia-smi names it.
    pub profile: MigProfile,
    /// The instance's memory, in MiB (NVML's; from `nvidia-smi -L` alone,
    /// the profile's GB as GiB).
    pub memory_mib: u64,
    /// The UUID a process selects the instance by.
    pub uuid: MigUuid,
}

/// Why a GPU's MIG instances do not add up; the index is the instance's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MigError {
    /// The GPU has no MIG (compute capability below 8.0).
    #[error("a GPU of compute capability {major}.{minor} has no MIG (it begins with 8.0)")]
    NotOnThisGpu {
        /// The GPU's compute capability, major part.
        major: u32,
        /// Its minor part.
        minor: u32,
    },
    /// One instance has more memory than its GPU.
    #[error("[{index}] has {instance_mib} MiB, more than its GPU's {gpu_mib} MiB")]
    LargerThanGpu {
        /// Which instance.
        index: usize,
        /// Its memory, MiB.
        instance_mib: u64,
        /// The GPU's, MiB.
        gpu_mib: u64,
    },
    /// The instances take more compute slices than a GPU has.
    #[error("the instances take {slices} compute slices; a GPU has at most {MAX_COMPUTE_SLICES}")]
    TooManySlices {
        /// The slices taken, summed over the instances.
        slices: u32,
    },
    /// The GPU instances' memory adds up to more than the GPU's.
    #[error("the GPU instances' memory adds up to {total_mib} MiB, more than the GPU's {gpu_mib} MiB")]
    MoreMemoryThanGpu {
        /// Their memory, summed, MiB.
        total_mib: u64,
        /// The GPU's, MiB.
        gpu_mib: u64,
    },
    /// Two instances give one UUID.
    #[error("[{index}]'s UUID {uuid} is given twice")]
    DuplicateUuid {
        /// The second instance with it.
        index: usize,
        /// The UUID.
        uuid: MigUuid,
    },
}

/// Checks a GPU's instances against the GPU: MIG exists on it, no instance
/// is larger than it, the slices fit ([`MAX_COMPUTE_SLICES`]), the GPU
/// instances' memory fits (compute instances share their GPU instance's,
/// so they are not added), and every UUID is given once.
///
/// # Errors
/// The first [`MigError`] found, in that order.
pub fn check_instances(
    instances: &[MigInstance],
    compute_capability: (u32, u32),
    gpu_mib: u64,
) -> Result<(), MigError> {
    if instances.is_empty() {
        return Ok(());
    }
    if compute_capability < MIG_FROM_COMPUTE_CAPABILITY {
        let (major, minor) = compute_capability;
        return Err(MigError::NotOnThisGpu { major, minor });
    }
    let mut seen = std::collections::BTreeSet::new();
    for (index, m) in instances.iter().enumerate() {
        if m.memory_mib > gpu_mib {
            return Err(MigError::LargerThanGpu { index, instance_mib: m.memory_mib, gpu_mib });
        }
        if !seen.insert(&m.uuid) {
            return Err(MigError::DuplicateUuid { index, uuid: m.uuid.clone() });
        }
    }
    let slices: u32 = instances.iter().map(|m| m.profile.compute_slices()).sum();
    if slices > MAX_COMPUTE_SLICES {
        return Err(MigError::TooManySlices { slices });
    }
    let total_mib: u64 = instances.iter().filter(|m| !m.profile.is_compute_instance()).map(|m| m.memory_mib).sum();
    if total_mib > gpu_mib {
        return Err(MigError::MoreMemoryThanGpu { total_mib, gpu_mib });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(profile: &str, memory_mib: u64, n: u32) -> MigInstance {
        MigInstance {
            profile: MigProfile::parse(profile).unwrap(),
            memory_mib,
            uuid: MigUuid::parse(&format!("MIG-{n:08x}-2be6-5dec-bf34-0954c6c529a6")).unwrap(),
        }
    }

    #[test]
    fn nvidia_smi_profiles_parse() {
        for (p, slices, ci, gb) in [
            ("3g.40gb", 3, false, 40),
            ("1g.10gb+me", 1, false, 10),
            ("1g.24gb+me.all", 1, false, 24),
            ("7g.80gb", 7, false, 80),
            ("1c.3g.40gb", 1, true, 40),
            ("1g.23gb-me", 1, false, 23),
        ] {
            let m = MigProfile::parse(p).unwrap();
            assert_eq!((m.compute_slices(), m.is_compute_instance(), m.memory_gb()), (slices, ci, gb), "{p}");
            assert_eq!(m.to_string(), p);
        }
        for bad in ["3g", "3g.40", "0g.10gb", "9g.10gb", "4c.3g.40gb", "3g.40GB", "3g.40gb+", "MIG 3g.40gb", ""] {
            assert_eq!(MigProfile::parse(bad).unwrap_err().text, bad);
        }
    }

    #[test]
    fn uuids_of_r470_and_later_only() {
        assert!(MigUuid::parse("MIG-0929581a-2be6-5dec-bf34-0954c6c529a6").is_ok());
        for bad in [
            "MIG-GPU-0929581a-2be6-5dec-bf34-0954c6c529a6/1/0",
            "0929581a-2be6-5dec-bf34-0954c6c529a6",
            "MIG-0929581A-2be6-5dec-bf34-0954c6c529a6",
            "MIG-...",
        ] {
            assert!(MigUuid::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn instances_must_fit_their_gpu() {
        let h100 = (9, 0);
        let seven: Vec<_> = (0..7).map(|n| instance("1g.10gb", 9856, n)).collect();
        assert_eq!(check_instances(&seven, h100, 81559), Ok(()));
        let eight: Vec<_> = (0..8).map(|n| instance("1g.10gb", 9856, n)).collect();
        assert_eq!(check_instances(&eight, h100, 81559), Err(MigError::TooManySlices { slices: 8 }));
        let big = [instance("7g.80gb", 90000, 0)];
        assert!(matches!(check_instances(&big, h100, 81559), Err(MigError::LargerThanGpu { index: 0, .. })));
        let twice = [instance("3g.40gb", 40192, 1), instance("3g.40gb", 40192, 1)];
        assert!(matches!(check_instances(&twice, h100, 81559), Err(MigError::DuplicateUuid { index: 1, .. })));
        let over = [instance("3g.40gb", 50000, 1), instance("3g.40gb", 50000, 2)];
        assert!(matches!(check_instances(&over, h100, 81559), Err(MigError::MoreMemoryThanGpu { .. })));
        // Compute instances share their GPU instance's memory.
        let cis: Vec<_> = (0..3).map(|n| instance("1c.3g.40gb", 40192, n)).collect();
        assert_eq!(check_instances(&cis, h100, 81559), Ok(()));
        assert_eq!(check_instances(&seven[..1], (7, 0), 16384), Err(MigError::NotOnThisGpu { major: 7, minor: 0 }));
    }
}
