//! The truth compiled into the binary, from `mocks/`: one JSON file per
//! release under `mocks/<engine>/`, one per package index under
//! `mocks/pypi/`, so that llmgw simulates from any directory.

use std::sync::OnceLock;

use super::Catalog;

/// The releases compiled into the binary: (path in the repository, JSON).
/// A new release is one more line here and its file under `mocks/`.
pub(super) const EMBEDDED: &[(&str, &str)] = &[
    ("mocks/llama.cpp/b10850.json", include_str!("../../../mocks/llama.cpp/b10850.json")),
    ("mocks/uv/0.12.20.json", include_str!("../../../mocks/uv/0.12.20.json")),
    ("mocks/vllm/0.20.1.json", include_str!("../../../mocks/vllm/0.20.1.json")),
];

/// The package indexes compiled into the binary: (path in the repository,
/// JSON of one [`super::Index`]), each file named after its index.
pub(super) const EMBEDDED_INDEXES: &[(&str, &str)] = &[
    ("mocks/pypi/pypi.json", include_str!("../../../mocks/pypi/pypi.json")),
    ("mocks/pypi/pytorch-cu129.json", include_str!("../../../mocks/pypi/pytorch-cu129.json")),
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
