//! Download and verify: an asset's bytes are hashed while they stream, and
//! compared with the digest vouched for them (the publisher's, or for an
//! offline mirror the control plane's). A mismatch is downloaded once more:
//! a body cut or changed on the way is not the publisher's file, and the
//! same wrong bytes twice are refused, naming both digests.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::github::{Asset, DigestFrom, ReleaseError};
use crate::system::{FetchJob, Fetched, SysError, System, UnpackedFile};

/// An asset and the digest it matched, as an install record keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssetDigest {
    /// The asset's file name.
    pub name: String,
    /// Its sha256, lowercase hex.
    pub sha256: String,
}

/// Why an asset could not be had verified.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The asset has no digest to be checked against: it is not downloaded.
    #[error("{0}")]
    Unverifiable(ReleaseError),
    /// The download failed (after the retries a transient failure gets).
    #[error("downloading {asset}{}: {error}", from_where(.from))]
    Download {
        /// The asset's name.
        asset: String,
        /// Where it was downloaded from.
        from: DigestFrom,
        /// What failed.
        error: SysError,
    },
    /// The bytes did not match the digest, twice.
    #[error(
        "{asset}: sha256 {actual} does not match {} {expected}, downloaded twice ({bytes} bytes received{})",
        .from.whose(.asset),
        if *.expected_bytes == 0 { String::new() } else { format!(", {} expected", .expected_bytes) }
    )]
    Digest {
        /// The asset's name.
        asset: String,
        /// Who vouches for `expected`.
        from: DigestFrom,
        /// The sha256 vouched for, lowercase hex.
        expected: String,
        /// The sha256 of what arrived, lowercase hex.
        actual: String,
        /// Bytes received.
        bytes: u64,
        /// Bytes the publisher declared; 0 when unknown (an offline mirror's).
        expected_bytes: u64,
    },
}

/// Where an asset was downloaded from, for a failure's message: ` from the
/// mirror at <offline_base>/uv/0.12.21/<asset>` (the mirror's path of it,
/// the base left as a placeholder so that the words are the same from run
/// to run; `-v` logs the whole URL). Empty for the publisher's assets.
fn from_where(from: &DigestFrom) -> String {
    match from {
        DigestFrom::Publisher | DigestFrom::Sidecar => String::new(),
        DigestFrom::Mirror { path } => format!(" from the mirror at <offline_base>/{path}"),
    }
}

/// Downloads one asset to `dest` (with retries) and checks it against its digest.
///
/// # Errors
/// [`VerifyError`]: no digest, the download failing, or digests that differ twice.
pub fn download_verified(sys: &mut dyn System, asset: &Asset, dest: &Path) -> Result<AssetDigest, VerifyError> {
    verified_twice(sys, asset, None::<()>, |sys, _| {
        let size = (asset.size > 0).then_some(asset.size);
        let got = crate::retry::download(sys, &asset.name, &asset.browser_download_url, dest, size)
            .map_err(|error| download_failed(asset, error))?;
        Ok((got.bytes, got.sha256, ()))
    })
    .map(|(digest, ())| digest)
}

/// Downloads and unpacks one archive into `job.into` in one pass over its
/// bytes (with retries), and checks the body against the asset's digest;
/// `first` is the result of a first attempt already made (the assets of a
/// build are first fetched side by side). What unpacking gave comes back
/// as it is: the publisher's own bytes may still be refused by the unpacker.
///
/// # Errors
/// As [`download_verified`].
pub fn fetch_unpack_verified(
    sys: &mut dyn System,
    asset: &Asset,
    job: &FetchJob,
    first: Result<Fetched, SysError>,
) -> Result<(AssetDigest, Result<Vec<UnpackedFile>, String>), VerifyError> {
    verified_twice(sys, asset, Some(first), |sys, first| {
        let got = crate::retry::fetch_unpack(sys, &asset.name, job, first).map_err(|error| {
            if asset.digest_from != DigestFrom::Publisher {
                tracing::info!(
                    "downloading {} from {} failed: {error}",
                    asset.name,
                    super::hosts::without_credentials(&job.url)
                );
            }
            download_failed(asset, error)
        })?;
        Ok((got.bytes, got.sha256, got.unpacked))
    })
}

fn download_failed(asset: &Asset, error: SysError) -> VerifyError {
    VerifyError::Download { asset: asset.name.clone(), from: asset.digest_from.clone(), error }
}

/// Fetches an asset with `fetch` (size in bytes, sha256, and what else it
/// gave) and checks it against the digest vouched for it, once more when
/// they differ. `first` is passed to the first call of `fetch` (a first
/// attempt already made).
fn verified_twice<F, T>(
    sys: &mut dyn System,
    asset: &Asset,
    first: Option<F>,
    mut fetch: impl FnMut(&mut dyn System, Option<F>) -> Result<(u64, String, T), VerifyError>,
) -> Result<(AssetDigest, T), VerifyError> {
    let name = &asset.name;
    let expected = asset.sha256().map_err(VerifyError::Unverifiable)?;
    let whose = asset.digest_from.whose(name);
    let mut got = fetch(sys, first)?;
    if got.1 != expected {
        tracing::warn!("{name}: sha256 {} is not {whose} {expected}; downloading it again", got.1);
        got = fetch(sys, None)?;
    }
    if got.1 != expected {
        return Err(VerifyError::Digest {
            asset: name.clone(),
            from: asset.digest_from.clone(),
            expected,
            actual: got.1,
            bytes: got.0,
            expected_bytes: asset.size,
        });
    }
    Ok((AssetDigest { name: name.clone(), sha256: expected }, got.2))
}
