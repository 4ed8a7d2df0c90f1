//! A build from release archives: every asset downloaded and checked
//! against GitHub's digest, then unpacked in order into the staging tree.

use super::{Built, Config, Paths, Releases, download_verified, release_of};
use crate::system::System;

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
    let (downloads, tree) = (paths.downloads(), paths.tree());
    sys.create_dir_all(&tree).map_err(|e| e.to_string())?;
    // Every asset verified before any is unpacked: nothing unverified is
    // ever written into the tree, let alone run.
    let mut digests = Vec::new();
    for name in assets {
        let asset = release.asset(name).map_err(|e| e.to_string())?;
        digests.push(download_verified(sys, asset, &downloads.join(name))?);
    }
    let mut files = Vec::new();
    for name in assets {
        let placed = sys.unpack(&downloads.join(name), &tree).map_err(|e| format!("unpacking {name}: {e}"))?;
        files.extend(placed);
    }
    Ok(Built { files: crate::archive::last_write_wins(files), assets: digests, depends_on: vec![] })
}
