//! A fleet: every host of a listing read when its turn comes, in the order
//! of the host ids, identical machines simulated once, and each host's row
//! handed to a sink as soon as it is known.
//!
//! Hosts are taken [`CHUNK`] at a time: read in parallel (by the caller's
//! `read`, which alone touches files), then grouped by [`machine_key`] (the
//! description without its `name`: two hosts that differ only in `name` are
//! one machine), then the machines not seen before simulated in parallel,
//! once per machine (and once more changed by `--set`, with `--diff`), then
//! every host of the chunk handed on in order with its machine's statuses.
//! Memory holds the group table (one entry per distinct machine: its key and
//! statuses, some kilobytes), the names seen (duplicates are refused) and one
//! chunk; not the cells of the fleet.
//!
//! A machine is simulated under a placeholder name ([`PLACEHOLDER_NAME`]) and
//! its statuses searched for it: no status mentions the host's name today,
//! but if one ever does, that machine's hosts are simulated one by one
//! under their own names, so the rows are always those of simulating every
//! host on its own ([`super::run`]), byte for byte.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use sha2::{Digest, Sha256};

use super::{Cell, OFFLINE_HOSTS, Shard, drift, offline_id, run_offline};
use crate::publisher::FakeServer;
use crate::truth::Catalog;
use crate::{SimError, Simulation};
use llmgw_core::converge::Status;
use llmgw_core::recipe::Want;
use llmgw_model::host::{Host, Setting};

/// Hosts read, grouped and handed on together: enough to keep every core
/// busy, few enough that a chunk's descriptions and rows are small (about
/// 1 KB and 4 KB a host).
pub const CHUNK: usize = 512;

/// Simulations one fake server serves before a fresh one takes over: the
/// server keeps every request its routes matched, with the connection's
/// read buffer (some 8 KB each, 400 KB a simulation). Not under a scenario
/// whose faults answer a number of `times`: those count across the run.
pub const SIMULATIONS_PER_SERVER: usize = 48;

/// The name a machine is simulated under: no host description has it.
pub const PLACEHOLDER_NAME: &str = "llmgw-fleet-machine-3c1f9a";

/// The identity of a machine: the SHA-256 of its description, compact JSON
/// (sets sorted, GPUs in their order), with `name` emptied.
pub fn machine_key(host: &Host) -> [u8; 32] {
    let mut h = host.clone();
    h.name.clear();
    let json = serde_json::to_vec(&h).expect("a host always serializes");
    Sha256::digest(&json).into()
}

/// How to run a fleet.
#[derive(Debug, Clone, Copy)]
pub struct Plan<'a> {
    /// Every host converges these, in this order.
    pub wants: &'a [Want],
    /// The truth the fake server serves.
    pub catalog: &'a Catalog,
    /// `--set`: every host is changed so before it is simulated; a host a
    /// change does not apply to is left out ([`Row::LeftOut`]).
    pub settings: &'a [Setting],
    /// `--diff`: each host is simulated unchanged too ([`Row::Cells`]'s `before`).
    pub diff: bool,
    /// With `diff`: the truth the unchanged hosts run against, when it is
    /// not [`Plan::catalog`] (a scenario's `--diff`: the embedded truth).
    pub before_catalog: Option<&'a Catalog>,
    /// Only the hosts of this shard, by position in `ids`.
    pub shard: Option<Shard>,
    /// Threads reading and simulating at once (at least 1).
    pub jobs: usize,
    /// Identical machines simulated once; `false` simulates every host on
    /// its own (slow: for checking the grouping).
    pub group: bool,
    /// Add the offline rows ([`run_offline`]) of the [`OFFLINE_HOSTS`] of the fleet.
    pub offline: bool,
}

/// One row of the fleet, handed to the sink in the order of host ids (an
/// offline row `X (offline)` where that id sorts).
#[derive(Debug, Clone, Copy)]
pub enum Row<'a> {
    /// A host simulated: its cells, in the order of the wants; with
    /// `--diff`, `before` holds those of the unchanged host.
    Cells {
        /// The cells (of the changed host, with `--set`).
        cells: &'a [Cell],
        /// With `--diff`: the cells of the host unchanged, want for want.
        before: Option<&'a [Cell]>,
    },
    /// A host file that was not simulated: unreadable, malformed, or a
    /// second file of a name already seen.
    Bad {
        /// The host's id (its file's name without `.json`).
        id: &'a str,
        /// Why, in a sentence.
        reason: &'a str,
    },
    /// A host `--set` does not apply to (a driver on a machine without a GPU).
    LeftOut {
        /// The host's id.
        id: &'a str,
        /// Why, as [`Host::with_settings`] says it.
        why: &'a str,
    },
}

/// What a fleet run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Hosts of the listing in this run's shard.
    pub hosts: usize,
    /// Hosts with cells.
    pub simulated: usize,
    /// Simulations run: one per distinct machine (two with `--diff` when
    /// the change changes it), the offline rows aside.
    pub simulations: usize,
}

/// Why a fleet run stopped.
#[derive(Debug, thiserror::Error)]
pub enum FleetError<E> {
    /// A simulation could not be set up.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// The sink refused a row (its output went away).
    #[error("the output failed")]
    Sink(E),
}

/// Reads the host at a position of the listing: the description, or why
/// it cannot be had (the reason names no path: the caller knows it).
pub type Read<'a> = dyn Fn(usize) -> Result<Host, String> + Sync + 'a;

/// A host of a chunk, classified.
enum Slot {
    Bad(String),
    LeftOut(String),
    Host {
        /// The host as read.
        host: Box<Host>,
        /// The host changed by `--set`, when it was made for this host (not
        /// the machine's, remembered) and its name is not the host's.
        changed: Option<Box<Host>>,
        /// Where its statuses are: the group table's entries, or its own.
        before: Option<Source>,
        after: Source,
    },
}

#[derive(Debug, Clone, Copy)]
enum Source {
    Group(usize),
    Own(usize),
}

impl Source {
    fn group(self) -> Option<usize> {
        match self {
            Source::Group(g) => Some(g),
            Source::Own(_) => None,
        }
    }
}

/// Distinct machines and their statuses.
#[derive(Default)]
struct Groups {
    index: HashMap<[u8; 32], usize>,
    statuses: Vec<Option<Vec<Status>>>,
    /// Machines whose statuses mention the placeholder name: simulated per host.
    named: Vec<bool>,
}

impl Groups {
    /// The group of `host`, and whether it is new (to simulate).
    fn find(&mut self, key: [u8; 32]) -> (usize, bool) {
        if let Some(g) = self.index.get(&key) {
            return (*g, false);
        }
        let g = self.statuses.len();
        self.index.insert(key, g);
        self.statuses.push(None);
        self.named.push(false);
        (g, true)
    }
}

/// Runs the hosts of `ids` (host ids, sorted; `read` gives each) as
/// `plan` says, handing every row to `sink` in order.
///
/// # Errors
/// [`FleetError::Sim`] when the fake server or a simulation cannot be set
/// up; [`FleetError::Sink`] with the sink's error, which stops the run.
pub fn run<E>(
    ids: &[String],
    read: &Read<'_>,
    plan: &Plan<'_>,
    sink: &mut dyn FnMut(Row<'_>) -> Result<(), E>,
) -> Result<Totals, FleetError<E>> {
    let positions: Vec<usize> = (0..ids.len()).filter(|p| plan.shard.is_none_or(|s| s.holds(*p))).collect();
    let mut totals = Totals { hosts: positions.len(), ..Totals::default() };
    let mut offline = if plan.offline { offline_rows(ids, &positions, read, plan)? } else { Vec::new() };
    offline.reverse(); // popped from the end, in order
    // Two truths (a scenario's diff): the unchanged hosts' machines are
    // other machines (their own keys) on their own server.
    let before_catalog = plan.before_catalog.filter(|_| plan.diff);
    let mut servers = [Servers::new(plan.catalog), Servers::new(before_catalog.unwrap_or(plan.catalog))];
    let mut groups = Groups::default();
    let mut names: HashMap<String, usize> = HashMap::new();
    // What `--set` makes of each machine: its group, or why it does not apply.
    let mut changes: HashMap<[u8; 32], Result<usize, String>> = HashMap::new();
    let sets_name = plan.settings.iter().any(|s| s.path.split(['.', '[']).next() == Some("name"));
    let mut bad_offline: Vec<String> = Vec::new();
    let emit = |sink: &mut dyn FnMut(Row<'_>) -> Result<(), E>, row: Row<'_>| sink(row).map_err(FleetError::Sink);
    for chunk in positions.chunks(CHUNK) {
        let read_hosts = parallel(chunk, plan.jobs, |p| read(*p));
        // Classify, in order: bad, left out, or a host of a machine.
        let mut slots: Vec<Slot> = Vec::with_capacity(chunk.len());
        // Each machine to simulate with the truth it runs against ([`Truth`]).
        let mut new_groups: Vec<(usize, Host, Truth)> = Vec::new();
        let mut own: Vec<(Host, Truth)> = Vec::new();
        let mut find = |host: &Host, key: Option<[u8; 32]>, truth: Truth, groups: &mut Groups, own: &mut Vec<_>| {
            let Some(key) = key.filter(|_| plan.group) else {
                own.push((host.clone(), truth));
                return Source::Own(own.len() - 1);
            };
            let (g, new) = groups.find(truth.key(key));
            if new {
                let mut stand_in = host.clone();
                stand_in.name = PLACEHOLDER_NAME.into();
                new_groups.push((g, stand_in, truth));
            }
            Source::Group(g)
        };
        for (&p, host) in chunk.iter().zip(read_hosts) {
            let host = match host {
                Ok(h) => h,
                Err(why) => {
                    slots.push(Slot::Bad(why));
                    continue;
                }
            };
            if let Some(&first) = names.get(&host.name) {
                slots.push(Slot::Bad(format!(
                    "name: `{}` is already the name of host `{}`: one node, two files?",
                    llmgw_model::text::for_terminal(&host.name),
                    ids[first]
                )));
                continue;
            }
            names.insert(host.name.clone(), p);
            let key = plan.group.then(|| machine_key(&host));
            // The changed machine: what `--set` makes of one machine it
            // makes of every host of it (unless it sets the name).
            let memo = key.filter(|_| !sets_name);
            let mut changed = None;
            let after = match memo.and_then(|k| changes.get(&k)) {
                Some(known) => known.clone().map(Source::Group),
                None => {
                    let c = if plan.settings.is_empty() { Ok(host.clone()) } else { host.with_settings(plan.settings) };
                    let after = c.as_ref().map_err(Clone::clone).map(|c| {
                        let same = plan.settings.is_empty() && key.is_some();
                        let key = if same { key } else { plan.group.then(|| machine_key(c)) };
                        find(c, key, Truth::After, &mut groups, &mut own)
                    });
                    if let Some(k) = memo {
                        changes.insert(k, after.clone().map(|s| s.group().expect("grouped")));
                    }
                    changed = c.ok().filter(|_| sets_name || !plan.group);
                    after
                }
            };
            let after = match after {
                Ok(a) => a,
                Err(why) => {
                    slots.push(Slot::LeftOut(why));
                    continue;
                }
            };
            let truth = if before_catalog.is_some() { Truth::Before } else { Truth::After };
            let before = plan.diff.then(|| find(&host, key, truth, &mut groups, &mut own));
            slots.push(Slot::Host { host: Box::new(host), changed: changed.map(Box::new), before, after });
        }
        // Each new machine once.
        let wants = plan.wants;
        let simulate = |host: &Host, (server, truth): &(Arc<FakeServer>, &Catalog)| -> Result<Vec<Status>, SimError> {
            let mut sim = Simulation::on(host.clone(), server.clone())?;
            sim.set_machine_faults(truth.machine.clone());
            Ok(sim.converge(wants).engines)
        };
        totals.simulations += new_groups.len();
        for truth in [Truth::After, Truth::Before] {
            let of_truth: Vec<&(usize, Host, Truth)> = new_groups.iter().filter(|(_, _, t)| *t == truth).collect();
            for batch in of_truth.chunks(SIMULATIONS_PER_SERVER) {
                let server = (servers[truth as usize].next(batch.len())?, servers[truth as usize].catalog);
                let simulated = parallel(batch, plan.jobs, |(_, h, _)| simulate(h, &server));
                for ((g, _, _), statuses) in batch.iter().zip(simulated) {
                    let statuses = statuses?;
                    groups.named[*g] =
                        serde_json::to_string(&statuses).expect("statuses serialize").contains(PLACEHOLDER_NAME);
                    groups.statuses[*g] = Some(statuses);
                }
            }
        }
        // A machine whose statuses say its name: each of its hosts on its own.
        for slot in &mut slots {
            let Slot::Host { host, changed, before, after } = slot else { continue };
            if let Source::Group(g) = *after
                && groups.named[g]
            {
                let c = match changed {
                    Some(c) => (**c).clone(),
                    None => host.with_settings(plan.settings).expect("the same machine took the settings"),
                };
                own.push((c, Truth::After));
                *after = Source::Own(own.len() - 1);
            }
            if let Some(b) = before
                && let Source::Group(g) = *b
                && groups.named[g]
            {
                let truth = if before_catalog.is_some() { Truth::Before } else { Truth::After };
                own.push(((**host).clone(), truth));
                *b = Source::Own(own.len() - 1);
            }
        }
        totals.simulations += own.len();
        let mut simulated_own: Vec<Option<Vec<Status>>> = vec![None; own.len()];
        for truth in [Truth::After, Truth::Before] {
            let of_truth: Vec<(usize, &Host)> =
                own.iter().enumerate().filter(|(_, (_, t))| *t == truth).map(|(i, (h, _))| (i, h)).collect();
            for batch in of_truth.chunks(SIMULATIONS_PER_SERVER) {
                let server = (servers[truth as usize].next(batch.len())?, servers[truth as usize].catalog);
                for ((i, _), statuses) in batch.iter().zip(parallel(batch, plan.jobs, |(_, h)| simulate(h, &server))) {
                    simulated_own[*i] = Some(statuses?);
                }
            }
        }
        let own: Vec<Vec<Status>> = simulated_own.into_iter().map(|s| s.expect("simulated above")).collect();
        // The rows, in order.
        let statuses = |s: Source| match s {
            Source::Group(g) => groups.statuses[g].as_deref().expect("simulated above"),
            Source::Own(i) => own[i].as_slice(),
        };
        for (&p, slot) in chunk.iter().zip(&slots) {
            let id = ids[p].as_str();
            while offline.last().is_some_and(|r| r.id.as_str() < id) {
                let r = offline.pop().expect("a row");
                if !bad_offline.contains(&r.host) {
                    emit(sink, Row::Cells { cells: &r.cells, before: r.before.as_deref() })?;
                }
            }
            match slot {
                Slot::Bad(reason) => {
                    if OFFLINE_HOSTS.contains(&id) {
                        bad_offline.push(id.to_string());
                    }
                    emit(sink, Row::Bad { id, reason })?;
                }
                Slot::LeftOut(why) => emit(sink, Row::LeftOut { id, why })?,
                Slot::Host { host, changed, before, after } => {
                    totals.simulated += 1;
                    let name = changed.as_ref().map_or(&host.name, |c| &c.name);
                    let cells = cells_of(id, name, wants, statuses(*after));
                    let before = before.map(|b| cells_of(id, &host.name, wants, statuses(b)));
                    emit(sink, Row::Cells { cells: &cells, before: before.as_deref() })?;
                }
            }
        }
    }
    while let Some(r) = offline.pop() {
        if !bad_offline.contains(&r.host) {
            emit(sink, Row::Cells { cells: &r.cells, before: r.before.as_deref() })?;
        }
    }
    Ok(totals)
}

/// Which truth a machine runs against: the plan's, or (a scenario's
/// `--diff`) the unchanged hosts' [`Plan::before_catalog`]; the index of
/// its [`Servers`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Truth {
    After = 0,
    Before = 1,
}

impl Truth {
    /// The group key of a machine run against this truth: the machine's
    /// own key, or for [`Truth::Before`] another one derived from it.
    fn key(self, machine: [u8; 32]) -> [u8; 32] {
        match self {
            Truth::After => machine,
            Truth::Before => Sha256::new().chain_update(b"before:").chain_update(machine).finalize().into(),
        }
    }
}

/// The fake server simulations run against, renewed every
/// [`SIMULATIONS_PER_SERVER`] simulations when it may be.
struct Servers<'a> {
    catalog: &'a Catalog,
    current: Option<Arc<FakeServer>>,
    served: usize,
    renew: bool,
}

impl<'a> Servers<'a> {
    /// Servers of `catalog`, none started yet.
    fn new(catalog: &'a Catalog) -> Servers<'a> {
        Servers { catalog, current: None, served: 0, renew: catalog.faults.iter().all(|f| f.times.is_none()) }
    }

    /// The server for the next `n` simulations.
    fn next(&mut self, n: usize) -> Result<Arc<FakeServer>, SimError> {
        if self.current.is_some() && self.renew && self.served + n > SIMULATIONS_PER_SERVER {
            // The old one goes first: its requests are what is let go.
            self.current = None;
        }
        if self.current.is_none() {
            let server = FakeServer::start_unrecorded(self.catalog).map_err(|e| SimError::Server(e.to_string()))?;
            self.current = Some(Arc::new(server));
            self.served = 0;
        }
        self.served += n;
        Ok(self.current.clone().expect("started above"))
    }
}

/// A host's cells from its machine's statuses.
fn cells_of(id: &str, name: &str, wants: &[Want], statuses: &[Status]) -> Vec<Cell> {
    wants
        .iter()
        .zip(statuses)
        .map(|(want, status)| Cell {
            host: id.to_string(),
            host_name: name.to_string(),
            want: want.to_string(),
            status: status.clone(),
            drift: drift(status),
        })
        .collect()
}

/// An offline row, made before the fleet is walked.
struct OfflineRow {
    /// The host's id, and the row's (`X (offline)`).
    host: String,
    id: String,
    cells: Vec<Cell>,
    before: Option<Vec<Cell>>,
}

/// The offline rows of the [`OFFLINE_HOSTS`] among `positions` that read
/// and take the settings, sorted by id (as [`run_offline`] gives them).
fn offline_rows(
    ids: &[String],
    positions: &[usize],
    read: &Read<'_>,
    plan: &Plan<'_>,
) -> Result<Vec<OfflineRow>, SimError> {
    let mut originals = Vec::new();
    let mut changed = Vec::new();
    for &p in positions.iter().filter(|p| OFFLINE_HOSTS.contains(&ids[**p].as_str())) {
        let Ok(h) = read(p) else { continue };
        let Ok(c) = h.with_settings(plan.settings) else { continue };
        originals.push((ids[p].clone(), h));
        changed.push((ids[p].clone(), c));
    }
    if changed.is_empty() {
        return Ok(Vec::new());
    }
    let after = run_offline(&changed, plan.wants, plan.catalog, None)?;
    let truth = plan.before_catalog.unwrap_or(plan.catalog);
    let before = if plan.diff { Some(run_offline(&originals, plan.wants, truth, None)?) } else { None };
    let mut rows: Vec<OfflineRow> = Vec::new();
    for (i, c) in after.into_iter().enumerate() {
        let b = before.as_ref().map(|b| b[i].clone());
        match rows.last_mut().filter(|r| r.id == c.host) {
            Some(r) => {
                r.cells.push(c);
                if let (Some(rb), Some(b)) = (&mut r.before, b) {
                    rb.push(b);
                }
            }
            None => {
                let host =
                    changed.iter().map(|(id, _)| id).find(|id| offline_id(id) == c.host).cloned().unwrap_or_default();
                rows.push(OfflineRow { host, id: c.host.clone(), cells: vec![c], before: b.map(|b| vec![b]) });
            }
        }
    }
    Ok(rows)
}

/// `f` over `items` on up to `threads` threads, results in the order of `items`.
fn parallel<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = threads.max(1).min(items.len());
    if threads <= 1 {
        return items.iter().map(&f).collect();
    }
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        mine.push((i, f(item)));
                    }
                    mine
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}
