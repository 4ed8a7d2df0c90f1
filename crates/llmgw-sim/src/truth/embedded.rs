//! The truth compiled into the binary, from `mocks/`: one JSON file per
//! release under `mocks/<engine>/`, one per package index under
//! `mocks/pypi/`, so that llmgw simulates from any directory.

use std::sync::OnceLock;

use super::Catalog;

/// The releases compiled into the binary: (path in the repository, JSON).
/// A new release is one more line here and its file under `mocks/`.
pub(super) const EMBEDDED: &[(&str, &str)] = &[
    ("mocks/llama.cpp/b10850.json", include_str!("../../../../mocks/llama.cpp/b10850.json")),
    ("mocks/llama.cpp/b11459.json", include_str!("../../../../mocks/llama.cpp/b11459.json")),
    ("mocks/python/3.12.16.json", include_str!("../../../../mocks/python/3.12.16.json")),
    ("mocks/uv/0.12.20.json", include_str!("../../../../mocks/uv/0.12.20.json")),
    ("mocks/uv/0.13.9.json", include_str!("../../../../mocks/uv/0.13.9.json")),
    ("mocks/vllm/0.20.1.json", include_str!("../../../../mocks/vllm/0.20.1.json")),
];

/// The package indexes compiled into the binary: (path in the repository,
/// JSON of one [`super::Index`]), each file named after its index.
pub(super) const EMBEDDED_INDEXES: &[(&str, &str)] = &[
    ("mocks/pypi/pypi.json", include_str!("../../../../mocks/pypi/pypi.json")),
    ("mocks/pypi/pytorch-cu129.json", include_str!("../../../../mocks/pypi/pytorch-cu129.json")),
];

/// The scenarios compiled into the binary, by name (`mocks/scenarios/<name>.json`):
/// what `--scenario NAME` takes, from any directory.
pub const SCENARIOS: &[(&str, &str)] = &[
    ("download-cut-short-once", include_str!("../../../../mocks/scenarios/download-cut-short-once.json")),
    ("download-endless-body", include_str!("../../../../mocks/scenarios/download-endless-body.json")),
    ("download-one-byte-changed-once", include_str!("../../../../mocks/scenarios/download-one-byte-changed-once.json")),
    ("download-redirect-loop", include_str!("../../../../mocks/scenarios/download-redirect-loop.json")),
    ("download-reset-always", include_str!("../../../../mocks/scenarios/download-reset-always.json")),
    ("download-slow-once", include_str!("../../../../mocks/scenarios/download-slow-once.json")),
    (
        "github-403-secondary-rate-limit",
        include_str!("../../../../mocks/scenarios/github-403-secondary-rate-limit.json"),
    ),
    ("github-429-retry-after", include_str!("../../../../mocks/scenarios/github-429-retry-after.json")),
    ("github-500-always", include_str!("../../../../mocks/scenarios/github-500-always.json")),
    ("github-502-metadata-once", include_str!("../../../../mocks/scenarios/github-502-metadata-once.json")),
    ("github-503-twice", include_str!("../../../../mocks/scenarios/github-503-twice.json")),
    ("github-endless-metadata", include_str!("../../../../mocks/scenarios/github-endless-metadata.json")),
    ("github-rate-limit-exhausted", include_str!("../../../../mocks/scenarios/github-rate-limit-exhausted.json")),
    ("llama-cuda-without-ptx", include_str!("../../../../mocks/scenarios/llama-cuda-without-ptx.json")),
    ("llama-latest-partial-release", include_str!("../../../../mocks/scenarios/llama-latest-partial-release.json")),
    ("machine-compute-hangs", include_str!("../../../../mocks/scenarios/machine-compute-hangs.json")),
    ("machine-crash-before-rename", include_str!("../../../../mocks/scenarios/machine-crash-before-rename.json")),
    ("machine-disk-fills-up", include_str!("../../../../mocks/scenarios/machine-disk-fills-up.json")),
    ("machine-gpu-lost-after-listing", include_str!("../../../../mocks/scenarios/machine-gpu-lost-after-listing.json")),
    ("machine-model-truncated", include_str!("../../../../mocks/scenarios/machine-model-truncated.json")),
    ("machine-package-manager-fails", include_str!("../../../../mocks/scenarios/machine-package-manager-fails.json")),
    ("uv-digest-from-sidecar", include_str!("../../../../mocks/scenarios/uv-digest-from-sidecar.json")),
    ("uv-no-digest-no-sidecar", include_str!("../../../../mocks/scenarios/uv-no-digest-no-sidecar.json")),
    ("uv-sidecar-disagrees", include_str!("../../../../mocks/scenarios/uv-sidecar-disagrees.json")),
    ("uv-sidecar-malformed", include_str!("../../../../mocks/scenarios/uv-sidecar-malformed.json")),
];

/// The catalog embedded from `mocks/`: every release the fake server
/// publishes, parsed once.
///
/// # Panics
/// When a file does not parse, naming the file and the JSON path: they are
/// the project's own data, and a unit test parses them.
pub fn embedded_catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| Catalog {
        releases: EMBEDDED.iter().map(|(file, text)| parse(file, text)).collect(),
        indexes: EMBEDDED_INDEXES.iter().map(|(file, text)| parse(file, text)).collect(),
        faults: vec![],
        machine: Default::default(),
    })
}

/// One embedded file, parsed; panics naming the file and the JSON path.
fn parse<T: serde::de::DeserializeOwned>(file: &str, text: &str) -> T {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).unwrap_or_else(|e| panic!("{file}: {e}"))
}
