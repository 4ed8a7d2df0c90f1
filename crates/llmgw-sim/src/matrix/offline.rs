//! The offline rows of the matrix: a few air-gapped hosts installing from a
//! mirror made by `bundle create` and `bundle import`, as an offline site's
//! node would.

use std::fmt;
use std::sync::Arc;

use super::{Cell, Shard, drift};
use crate::publisher::FakeServer;
use crate::truth::Catalog;
use crate::{SimError, Simulation};
use llmgw_core::recipe::Want;
use llmgw_model::host::Host;

/// Hosts the matrix also runs in offline mode, when its hosts directory
/// holds them: two air-gapped nodes, an arm64 GPU node and an arm64 node
/// without a GPU, so that a bundle of both architectures is exercised.
pub const OFFLINE_HOSTS: &[&str] = &[
    "gh200-ubuntu24.04-driver580",
    "l40s-airgapped-ubuntu22.04-driver580",
    "nogpu-ubuntu24.04-arm64",
    "v100-airgapped-driver535",
];

/// The host id of a host's offline row: `v100-airgapped-driver535 (offline)`.
pub fn offline_id(host: &str) -> String {
    format!("{host} (offline)")
}

/// Whether a row's host id is an offline row's ([`offline_id`]).
pub fn is_offline_id(id: &str) -> bool {
    id.ends_with(" (offline)")
}

/// The offline rows of the matrix: each host of [`OFFLINE_HOSTS`] in `hosts`
/// installs the archive engines of `wants` (llama.cpp, uv) as an offline
/// site's node would. A bundle of every build of those wants, for the
/// architectures of those hosts, is created from a fake publisher serving
/// `catalog` and imported into a mirror, which a second fake server serves
/// with the publisher's routes disabled; each host then converges offline
/// wants against it, with the manifest's checksums; a `latest` want is
/// resolved for each host against the publisher first, and the version it
/// resolved to is bundled and installed. Cells are as
/// [`run`]'s, their host id [`offline_id`]; a host's offline row is in the
/// shard of its host; none when no such host is in `hosts` or the shard.
///
/// # Errors
/// [`SimError`] when a server cannot start, or the bundle cannot be made or
/// imported.
pub fn run_offline(
    hosts: &[(String, Host)],
    wants: &[Want],
    catalog: &Catalog,
    shard: Option<Shard>,
) -> Result<Vec<Cell>, SimError> {
    use llmgw_core::converge::latest::LatestError;
    use llmgw_system::offline::bundle;
    let mut ids: Vec<&str> = hosts.iter().map(|(id, _)| id.as_str()).collect();
    ids.sort_unstable();
    let in_shard = |id: &str| shard.is_none_or(|s| ids.iter().position(|i| *i == id).is_some_and(|p| s.holds(p)));
    let mut chosen: Vec<&(String, Host)> =
        hosts.iter().filter(|(id, _)| OFFLINE_HOSTS.contains(&id.as_str()) && in_shard(id)).collect();
    chosen.sort_by(|a, b| a.0.cmp(&b.0));
    let wants: Vec<Want> = wants.iter().filter(|w| !w.engine.from_pypi()).cloned().collect();
    if chosen.is_empty() || wants.is_empty() {
        return Ok(vec![]);
    }
    let mut arches: Vec<llmgw_model::host::Arch> = chosen.iter().map(|(_, h)| h.arch).collect();
    arches.sort();
    arches.dedup();
    let failed = |what: &str, e: &dyn fmt::Display| SimError::Server(format!("the offline rows' {what}: {e}"));
    let work = llmgw_system::files::scratch_dir("llmgw-offline-").map_err(SimError::TempDir)?;
    let publisher = Arc::new(FakeServer::start(catalog).map_err(|e| SimError::Server(e.to_string()))?);
    // A `latest` want has no plan, so no bundle: the control plane resolves
    // it first, for each host against the publisher as that host's online
    // row does, and bundles the version it resolved to.
    let mut concrete: Vec<Vec<Result<Want, LatestError>>> = Vec::new();
    for (_, host) in &chosen {
        let mut sim = Simulation::on(host.clone(), publisher.clone())?;
        let mine = wants
            .iter()
            .map(|w| if w.is_latest() { sim.resolve_latest(w).map(|v| w.at(&v)) } else { Ok(w.clone()) })
            .collect();
        concrete.push(mine);
    }
    let mut bundled: Vec<Want> = Vec::new();
    for w in concrete.iter().flatten().flatten() {
        if !bundled.contains(w) {
            bundled.push(w.clone());
        }
    }
    let local = llmgw_system::http::Http::loopback(5, 30).map_err(|e| SimError::Client(e.to_string()))?;
    let mut sys = llmgw_system::real::RealSystem::new(local, Box::new(llmgw_system::real::Silent));
    let out = work.path().join("bundle");
    let made = bundle::create(&mut sys, &publisher.base_url(), &bundled, &arches, &[], &out)
        .map_err(|e| failed("bundle", &e))?;
    let mirror = work.path().join("mirror");
    bundle::import(&out, &made.manifest_sha256, &mirror).map_err(|e| failed("import", &e))?;
    // The site: its mirror, and no publisher (its routes answer 503).
    let bare = Catalog { releases: vec![], indexes: vec![], faults: vec![], machine: Default::default() };
    let site = Arc::new(FakeServer::start(&bare).map_err(|e| SimError::Server(e.to_string()))?);
    site.serve_mirror(&mirror).map_err(|e| failed("mirror", &e))?;
    site.disable_publisher();
    let mut cells = Vec::new();
    for ((id, host), mine) in chosen.into_iter().zip(concrete) {
        // Each want takes the checksums of its own engine and version: uv's
        // asset names carry no version, so two uv wants name the same asset.
        let offline: Vec<Want> = mine
            .iter()
            .flatten()
            .map(|w| {
                w.clone()
                    .offline(&site.mirror_url(), made.manifest.sha256_for(w.engine, &w.version))
                    .expect("a fake server's URL and a manifest's sums are valid")
            })
            .collect();
        let mut sim = Simulation::on(host.clone(), site.clone())?;
        let mut report = sim.converge(&offline).engines.into_iter();
        for (want, got) in wants.iter().zip(&mine) {
            let status = match got {
                Ok(concrete) => {
                    let mut status = report.next().expect("one status per want");
                    status.want = want.name();
                    status.resolved = want.is_latest().then(|| concrete.version.clone());
                    status
                }
                Err(why) => unresolved(want, &why.to_string()),
            };
            let drift = drift(&status);
            cells.push(Cell {
                host: offline_id(id),
                host_name: host.name.clone(),
                want: want.to_string(),
                status,
                drift,
            });
        }
    }
    Ok(cells)
}

/// The cell of a `latest` want the control plane could not resolve for a
/// host: nothing bundled for it, so nothing installed, saying why.
fn unresolved(want: &Want, why: &str) -> llmgw_core::converge::Status {
    let detail = format!("could not resolve {want} for this host's bundle: {why}");
    llmgw_core::converge::Status::new(want, llmgw_core::converge::State::Failed, detail)
}
