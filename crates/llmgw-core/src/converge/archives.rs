//! A build from release archives: every asset downloaded, checked against
//! its digest and unpacked in one pass over its bytes, the assets side by
//! side, each into a directory of its own; then put together in order into
//! the staging tree, a runtime companion's files beside the binary. Nothing
//! is run or committed before every digest matched.

use super::failure::BuildFailure;
use super::record::{Built, Paths};
use crate::recipe::{Build, Engine, Source};
use crate::release::ReleaseSource;
use crate::release::download::fetch_unpack_verified;
use crate::system::{FetchJob, System};

/// Fetches, verifies and unpacks the assets of `build` (of `engine`, from
/// `source`) into the staging tree of `paths`; a build of another source
/// has nothing to fetch here.
///
/// # Errors
/// The first failure: the release or an asset missing, a download failing,
/// digests that differ, an archive refused, a directory not made.
pub(super) fn fetch_and_unpack(
    sys: &mut dyn System,
    source: &mut ReleaseSource,
    engine: Engine,
    build: &Build,
    paths: &Paths,
) -> Result<Built, BuildFailure> {
    let Source::Archives { repo, tag, assets, beside_binary } = &build.source else {
        return Ok(Built { files: vec![], assets: vec![], depends_on: vec![], python: None });
    };
    let release = (repo.as_str(), tag.as_str());
    // Every asset's digest was seen before anything was installed for the
    // build (Installer::install_build); the download checks it again.
    let mut wanted = Vec::new();
    for (i, name) in assets.iter().enumerate() {
        let asset = source.asset(sys, engine, &build.version, release, name)?;
        let size = (asset.size > 0).then_some(asset.size);
        let job = FetchJob { url: asset.browser_download_url.clone(), into: paths.unpacked(i), size };
        wanted.push((asset, job));
    }
    for (_, job) in &wanted {
        sys.create_dir_all(&job.into)?;
    }
    let jobs: Vec<FetchJob> = wanted.iter().map(|(_, job)| job.clone()).collect();
    let firsts = sys.fetch_unpack(&jobs);
    let mut files = Vec::new();
    let mut companions = Vec::new();
    let mut digests = Vec::new();
    for ((asset, job), first) in wanted.iter().zip(firsts) {
        let (digest, unpacked) = fetch_unpack_verified(sys, asset, job, first)?;
        // The publisher's own bytes, refused: an archive llmgw will not unpack.
        let unpacked = unpacked.map_err(|message| BuildFailure::Unpack { asset: asset.name.clone(), message })?;
        match beside_binary.contains(&asset.name) {
            true => companions.push((job, unpacked)),
            false => files.extend(unpacked),
        }
        digests.push(digest);
    }
    let tree = paths.tree();
    for (asset, job) in &wanted {
        if !beside_binary.contains(&asset.name) {
            sys.merge_into(&job.into, &tree)?;
        }
    }
    if !companions.is_empty() {
        // The runtime beside the binary, where its RUNPATH ($ORIGIN) looks,
        // whatever the companion's own top-level directory is called.
        let binary = super::checks::find_binary(sys, &tree, &build.binary)?
            .ok_or_else(|| BuildFailure::NoBinary(build.binary.clone()))?;
        let dir = binary.parent().unwrap_or(&tree).to_path_buf();
        let dir_rel = dir.strip_prefix(&tree).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
        for (job, unpacked) in companions {
            let entries = sys.list_dir(&job.into)?.unwrap_or_default();
            let top = match entries.as_slice() {
                [only] if only.is_dir => Some(only.name.clone()),
                _ => None,
            };
            let from = top.as_ref().map_or_else(|| job.into.clone(), |t| job.into.join(t));
            sys.merge_into(&from, &dir)?;
            sys.remove(&job.into)?;
            files.extend(unpacked.into_iter().map(|mut f| {
                let rest = top.as_ref().and_then(|t| f.path.strip_prefix(&format!("{t}/"))).unwrap_or(&f.path);
                f.path = if dir_rel.is_empty() { rest.to_string() } else { format!("{dir_rel}/{rest}") };
                f
            }));
        }
    }
    Ok(Built { files: crate::archive::last_write_wins(files), assets: digests, depends_on: vec![], python: None })
}
