//! The hardware matrix compiled into the binary, from `matrix/`: every host
//! description of `matrix/hosts/` by its id (the file's name without
//! `.json`) and the golden outcomes of `matrix/expected.json`, so that
//! `--host v100` and `llmgw matrix` run from any directory.

/// The host descriptions of `matrix/hosts/`, by id, in the order of ids
/// (the matrix's rows). A new host is one more line here and its file
/// (a test compares this list with the directory).
pub const HOSTS: &[(&str, &str)] = &[
    ("a10-rhel10-driver580", include_str!("../../../../matrix/hosts/a10-rhel10-driver580.json")),
    ("a100-rhel8-driver550", include_str!("../../../../matrix/hosts/a100-rhel8-driver550.json")),
    ("a100-rhel9-driver570", include_str!("../../../../matrix/hosts/a100-rhel9-driver570.json")),
    ("a100-t4-ubuntu22.04-driver550", include_str!("../../../../matrix/hosts/a100-t4-ubuntu22.04-driver550.json")),
    ("a100-ubuntu20.04-driver525", include_str!("../../../../matrix/hosts/a100-ubuntu20.04-driver525.json")),
    ("a100-ubuntu22.04-driver535", include_str!("../../../../matrix/hosts/a100-ubuntu22.04-driver535.json")),
    ("a100-ubuntu24.04-driver580", include_str!("../../../../matrix/hosts/a100-ubuntu24.04-driver580.json")),
    ("a10g-amazonlinux2-driver580", include_str!("../../../../matrix/hosts/a10g-amazonlinux2-driver580.json")),
    ("ac922-rhel8-ppc64le", include_str!("../../../../matrix/hosts/ac922-rhel8-ppc64le.json")),
    (
        "altra-a100-ubuntu24.04-driver580-arm64",
        include_str!("../../../../matrix/hosts/altra-a100-ubuntu24.04-driver580-arm64.json"),
    ),
    ("b200-ubuntu24.04-driver570", include_str!("../../../../matrix/hosts/b200-ubuntu24.04-driver570.json")),
    ("b200-ubuntu24.04-driver580", include_str!("../../../../matrix/hosts/b200-ubuntu24.04-driver580.json")),
    ("dgx-spark-gb10-dgxos7-driver580", include_str!("../../../../matrix/hosts/dgx-spark-gb10-dgxos7-driver580.json")),
    ("gh200-ubuntu22.04-driver550", include_str!("../../../../matrix/hosts/gh200-ubuntu22.04-driver550.json")),
    ("gh200-ubuntu24.04-driver570", include_str!("../../../../matrix/hosts/gh200-ubuntu24.04-driver570.json")),
    ("gh200-ubuntu24.04-driver580", include_str!("../../../../matrix/hosts/gh200-ubuntu24.04-driver580.json")),
    ("gtx1080ti-ubuntu24.04-driver550", include_str!("../../../../matrix/hosts/gtx1080ti-ubuntu24.04-driver550.json")),
    ("gtx1080ti-ubuntu24.04-driver580", include_str!("../../../../matrix/hosts/gtx1080ti-ubuntu24.04-driver580.json")),
    ("h100-l4-ubuntu22.04-driver570", include_str!("../../../../matrix/hosts/h100-l4-ubuntu22.04-driver570.json")),
    ("h100-rhel9-driver580", include_str!("../../../../matrix/hosts/h100-rhel9-driver580.json")),
    ("h100-smalldisk-driver580", include_str!("../../../../matrix/hosts/h100-smalldisk-driver580.json")),
    ("h100-ubuntu22.04-driver570", include_str!("../../../../matrix/hosts/h100-ubuntu22.04-driver570.json")),
    ("h100-ubuntu24.04-driver580", include_str!("../../../../matrix/hosts/h100-ubuntu24.04-driver580.json")),
    ("h200-ubuntu22.04-driver575", include_str!("../../../../matrix/hosts/h200-ubuntu22.04-driver575.json")),
    ("h200-ubuntu24.04-driver590", include_str!("../../../../matrix/hosts/h200-ubuntu24.04-driver590.json")),
    ("jetson-agx-orin-jetpack6", include_str!("../../../../matrix/hosts/jetson-agx-orin-jetpack6.json")),
    (
        "jetson-orin-nano-jetpack6-smalldisk",
        include_str!("../../../../matrix/hosts/jetson-orin-nano-jetpack6-smalldisk.json"),
    ),
    ("k40-debian11-driver470-noavx2", include_str!("../../../../matrix/hosts/k40-debian11-driver470-noavx2.json")),
    ("k80-ubuntu20.04-driver470", include_str!("../../../../matrix/hosts/k80-ubuntu20.04-driver470.json")),
    ("l4-container-novulkan-driver535", include_str!("../../../../matrix/hosts/l4-container-novulkan-driver535.json")),
    (
        "l4-smalldisk-ubuntu24.04-driver580",
        include_str!("../../../../matrix/hosts/l4-smalldisk-ubuntu24.04-driver580.json"),
    ),
    ("l4-ubuntu22.04-driver535", include_str!("../../../../matrix/hosts/l4-ubuntu22.04-driver535.json")),
    (
        "l40s-airgapped-ubuntu22.04-driver580",
        include_str!("../../../../matrix/hosts/l40s-airgapped-ubuntu22.04-driver580.json"),
    ),
    ("l40s-rhel9-driver570", include_str!("../../../../matrix/hosts/l40s-rhel9-driver570.json")),
    ("linuxone-z16-rhel9-s390x", include_str!("../../../../matrix/hosts/linuxone-z16-rhel9-s390x.json")),
    ("m40-ubuntu22.04-driver535", include_str!("../../../../matrix/hosts/m40-ubuntu22.04-driver535.json")),
    ("m60-rhel8-driver470", include_str!("../../../../matrix/hosts/m60-rhel8-driver470.json")),
    ("nogpu-alpine3.21", include_str!("../../../../matrix/hosts/nogpu-alpine3.21.json")),
    ("nogpu-debian11-smalldisk", include_str!("../../../../matrix/hosts/nogpu-debian11-smalldisk.json")),
    ("nogpu-debian12", include_str!("../../../../matrix/hosts/nogpu-debian12.json")),
    ("nogpu-debian13", include_str!("../../../../matrix/hosts/nogpu-debian13.json")),
    (
        "nogpu-graviton3-amazonlinux2023-arm64",
        include_str!("../../../../matrix/hosts/nogpu-graviton3-amazonlinux2023-arm64.json"),
    ),
    ("nogpu-noavx2-ubuntu22.04", include_str!("../../../../matrix/hosts/nogpu-noavx2-ubuntu22.04.json")),
    ("nogpu-rhel10", include_str!("../../../../matrix/hosts/nogpu-rhel10.json")),
    ("nogpu-ubuntu20.04", include_str!("../../../../matrix/hosts/nogpu-ubuntu20.04.json")),
    ("nogpu-ubuntu24.04-arm64", include_str!("../../../../matrix/hosts/nogpu-ubuntu24.04-arm64.json")),
    ("p100-debian12-driver525", include_str!("../../../../matrix/hosts/p100-debian12-driver525.json")),
    ("p100-ubuntu22.04-driver535", include_str!("../../../../matrix/hosts/p100-ubuntu22.04-driver535.json")),
    ("p40-ubuntu22.04-driver580", include_str!("../../../../matrix/hosts/p40-ubuntu22.04-driver580.json")),
    ("power10-ubuntu24.04-ppc64le", include_str!("../../../../matrix/hosts/power10-ubuntu24.04-ppc64le.json")),
    ("rtx2080ti-ubuntu20.04-driver525", include_str!("../../../../matrix/hosts/rtx2080ti-ubuntu20.04-driver525.json")),
    ("rtx3080-ubuntu24.04-driver565", include_str!("../../../../matrix/hosts/rtx3080-ubuntu24.04-driver565.json")),
    ("rtx3090-ubuntu22.04-driver535", include_str!("../../../../matrix/hosts/rtx3090-ubuntu22.04-driver535.json")),
    ("rtx3090-ubuntu22.04-driver550", include_str!("../../../../matrix/hosts/rtx3090-ubuntu22.04-driver550.json")),
    ("rtx4090-ubuntu24.04-driver575", include_str!("../../../../matrix/hosts/rtx4090-ubuntu24.04-driver575.json")),
    ("rtx5090-debian13-driver590", include_str!("../../../../matrix/hosts/rtx5090-debian13-driver590.json")),
    ("rtx5090-ubuntu24.04-driver575", include_str!("../../../../matrix/hosts/rtx5090-ubuntu24.04-driver575.json")),
    ("rtxa6000-debian13-driver550", include_str!("../../../../matrix/hosts/rtxa6000-debian13-driver550.json")),
    ("rtxpro6000-rhel10-driver580", include_str!("../../../../matrix/hosts/rtxpro6000-rhel10-driver580.json")),
    ("t4-amazonlinux2023-driver570", include_str!("../../../../matrix/hosts/t4-amazonlinux2023-driver570.json")),
    ("t4-container-novulkan-driver550", include_str!("../../../../matrix/hosts/t4-container-novulkan-driver550.json")),
    ("t4-ubuntu22.04-driver535", include_str!("../../../../matrix/hosts/t4-ubuntu22.04-driver535.json")),
    ("t4-ubuntu22.04-driver550", include_str!("../../../../matrix/hosts/t4-ubuntu22.04-driver550.json")),
    ("t4-ubuntu22.04-driver580", include_str!("../../../../matrix/hosts/t4-ubuntu22.04-driver580.json")),
    ("t4-ubuntu24.04-driver590", include_str!("../../../../matrix/hosts/t4-ubuntu24.04-driver590.json")),
    ("v100", include_str!("../../../../matrix/hosts/v100.json")),
    ("v100-airgapped-driver535", include_str!("../../../../matrix/hosts/v100-airgapped-driver535.json")),
    ("v100-ubuntu20.04-driver470", include_str!("../../../../matrix/hosts/v100-ubuntu20.04-driver470.json")),
    ("v100-ubuntu24.04-driver580", include_str!("../../../../matrix/hosts/v100-ubuntu24.04-driver580.json")),
];

/// `matrix/expected.json`: the golden outcomes of [`HOSTS`] against the default wants.
pub const EXPECTED_JSON: &str = include_str!("../../../../matrix/expected.json");

/// The embedded host description named `id`, as JSON.
pub fn host(id: &str) -> Option<&'static str> {
    HOSTS.binary_search_by(|(h, _)| (*h).cmp(id)).ok().map(|i| HOSTS[i].1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_host_is_valid_and_in_order() {
        assert!(HOSTS.windows(2).all(|w| w[0].0 < w[1].0), "HOSTS sorted by id");
        for (id, json) in HOSTS {
            llmgw_model::host::Host::from_json(json).unwrap_or_else(|e| panic!("matrix/hosts/{id}.json: {e}"));
            assert_eq!(host(id), Some(*json));
        }
        assert_eq!(host("nope"), None);
        crate::matrix::ExpectedFile::from_json(EXPECTED_JSON).expect("matrix/expected.json is valid");
    }
}
