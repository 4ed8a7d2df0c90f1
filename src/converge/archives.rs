//! A build from release archives: every asset downloaded, checked against
//! GitHub's digest and unpacked in one pass over its bytes, the assets side
//! by side, each into a directory of its own; then put together in order
//! into the staging tree. Nothing is run or committed before every digest
//! matched.

use super::{Built, Config, Paths, Releases, release_of, verified_twice};
use crate::system::{FetchJob, System};

/// Fetches, verifies and unpacks `assets` of release `tag` of `repo` into
/// the staging tree of `paths`.
///
/// # Errors
/// The sentence of the first failure: the release or an asset missing, a
/// download failing, digests that differ, an archive refused.
pub(super) fn fetch_and_unpack(
    sys: &mut dyn System,
    cfg: &Config,
    releases: &mut Releases,
    repo: &str,
    tag: &str,
    assets: &[String],
    paths: &Paths,
) -> Result<Built, String> {
    let release = release_of(sys, cfg, releases, repo, tag)?;
    // Every asset's digest was seen before anything was installed for the
    // build (install_build); verified_twice reads it again.
    let mut wanted = Vec::new();
    for (i, name) in assets.iter().enumerate() {
        let asset = release.asset(name).map_err(|e| e.to_string())?;
        wanted.push((asset, FetchJob { url: asset.browser_download_url.clone(), into: paths.unpacked(i) }));
    }
    for (_, job) in &wanted {
        sys.create_dir_all(&job.into).map_err(|e| e.to_string())?;
    }
    let jobs: Vec<FetchJob> = wanted.iter().map(|(_, job)| job.clone()).collect();
    let firsts = sys.fetch_unpack(&jobs);
    let mut files = Vec::new();
    let mut digests = Vec::new();
    for ((asset, job), first) in wanted.iter().zip(firsts) {
        let name = &asset.name;
        let from = from_where(asset);
        let (digest, unpacked) = verified_twice(sys, asset, Some(first), |sys, first| {
            let got = crate::retry::fetch_unpack(sys, name, job, first).map_err(|e| {
                if !from.is_empty() {
                    tracing::info!("downloading {name} from {} failed: {e}", job.url);
                }
                format!("downloading {name}{from}: {e}")
            })?;
            Ok((got.bytes, got.sha256, got.unpacked))
        })?;
        // The publisher's own bytes, refused: an archive llmgw will not unpack.
        files.extend(unpacked.map_err(|e| format!("unpacking {name}: {e}"))?);
        digests.push(digest);
    }
    let tree = paths.tree();
    for (_, job) in &wanted {
        sys.merge_into(&job.into, &tree).map_err(|e| e.to_string())?;
    }
    Ok(Built { files: crate::archive::last_write_wins(files), assets: digests, depends_on: vec![] })
}

/// Where an offline asset comes from, for a failure's message: ` from the
/// mirror at <offline_base>/uv/0.12.21/<asset>` (the mirror's path of it,
/// the base left as a placeholder so that the words are the same from run
/// to run; `-v` logs the whole URL). Empty for the publisher's assets.
fn from_where(asset: &crate::release::Asset) -> String {
    if asset.digest_from != crate::release::DigestFrom::ControlPlane {
        return String::new();
    }
    let mut parts: Vec<&str> = asset.browser_download_url.rsplitn(4, '/').take(3).collect();
    parts.reverse();
    format!(" from the mirror at <offline_base>/{}", parts.join("/"))
}
