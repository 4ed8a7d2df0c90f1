//! `llama-server --list-devices`: the GPU devices a build's backends list.
//!
//! Format (common/arg.cpp): `Available devices:` then one line per device,
//! `  CUDA0: NVIDIA H100 80GB HBM3 (81559 MiB, 80873 MiB free)`, or `  (none)`.
//! CPU devices are never listed.

/// One listed device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    /// The backend's device name: `CUDA0`, `Vulkan1`.
    pub name: String,
    /// The description: `NVIDIA H100 80GB HBM3`.
    pub description: String,
    /// Total memory in MiB.
    pub total_mib: u64,
    /// Free memory in MiB.
    pub free_mib: u64,
}

/// The devices listed in `--list-devices`' standard output; none when the
/// header is missing or it says `(none)`. Lines of another shape are skipped.
pub fn parse(stdout: &str) -> Vec<Device> {
    let mut lines = stdout.lines().skip_while(|l| l.trim() != "Available devices:");
    lines.next();
    lines.filter_map(device).collect()
}

fn device(line: &str) -> Option<Device> {
    let line = line.strip_prefix("  ")?.trim_end();
    let (name, rest) = line.split_once(": ")?;
    // A backend's device name: `CUDA0`, `Vulkan1`, `SYCL0`, `BLAS`.
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        return None;
    }
    let open = rest.rfind(" (")?;
    let (description, mem) = (&rest[..open], rest[open + 2..].strip_suffix(')')?);
    let (total, free) = mem.split_once(", ")?;
    Some(Device {
        name: name.to_string(),
        description: description.to_string(),
        total_mib: total.strip_suffix(" MiB")?.parse().ok()?,
        free_mib: free.strip_suffix(" MiB free")?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_devices_and_none() {
        let out = "Available devices:\n  CUDA0: NVIDIA H100 80GB HBM3 (81559 MiB, 80873 MiB free)\n  Vulkan0: AMD Radeon (RX 6600M) (8176 MiB, 8176 MiB free)\n";
        let d = parse(out);
        assert_eq!(d.len(), 2);
        assert_eq!((d[0].name.as_str(), d[0].total_mib, d[0].free_mib), ("CUDA0", 81559, 80873));
        assert_eq!(d[1].description, "AMD Radeon (RX 6600M)");
        assert!(parse("Available devices:\n  (none)\n").is_empty());
        assert!(parse("garbage\n  CUDA0: x (1 MiB, 1 MiB free)\n").is_empty());
    }

    #[test]
    fn a_line_without_a_device_name_is_no_device() {
        // Found by the list_devices fuzz target (fuzz/regressions/list_devices/).
        assert!(parse("Available devices:\n  : (1 MiB, 2 M (1 MiB, 2 MiB free)\n").is_empty());
        assert!(parse("Available devices:\n  a b: x (1 MiB, 2 MiB free)\n").is_empty());
    }
}
