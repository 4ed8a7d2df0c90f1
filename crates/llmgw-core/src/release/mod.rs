//! Where builds come from, and the verified download of their assets.
//!
//! | file | what lives there |
//! | --- | --- |
//! | `github.rs` | GitHub's release API: a release by tag, the newest releases, their assets and digests |
//! | `index.rs` | a Python package index's project page (PEP 691): what a `latest` vLLM or SGLang looks at |
//! | `source.rs` | where a want's builds come from, decided once ([`Origin`]), and the release metadata seen in a pass ([`ReleaseSource`]) |
//! | `hosts.rs` | where a download may go: GitHub's release host, the API's own host, GitHub's redirect hosts |
//! | `mirror.rs` | an offline site's mirror layout: `<engine>/<version>/<asset>` |
//! | `sidecar.rs` | an asset's `<asset>.sha256` beside it in the release: its digest when GitHub's API gives none |
//! | `download.rs` | download and verify: an asset's bytes against the digest vouched for it, once more on a mismatch |
//!
//! Part of the core: every effect through [`crate::system::System`] (and
//! [`crate::retry`]). Uses: `recipe` (engines and builds), `retry` and
//! `system`.
//! Modelled on rustup's `dist/download.rs`: hash while streaming, compare,
//! and one error that names the asset, the expected and the actual digest.

pub mod download;
pub mod github;
pub mod hosts;
pub mod index;
pub mod mirror;
pub mod sidecar;
pub mod source;

pub use download::{AssetDigest, VerifyError};
pub use github::{Asset, DigestFrom, GITHUB_API, LIST_PAGE, Purpose, Release, ReleaseError, fetch, list, release_url};
pub use source::{Origin, ReleaseSource};
