//! [`Installer`]: the state one pass of convergence threads through every
//! want — the machine's effects, the host, the configuration, and the
//! release metadata seen so far — and the steps of one want, in order.

use std::path::{Path, PathBuf};

use super::failure::BuildFailure;
use super::record::{InstallRecord, Paths};
use super::status::{Attempt, Outcome, State, Status};
use super::{Config, archives, checks, packages, python, record};
use crate::recipe::{self, Build, Engine, Plan, Published, Refusal, Source, Want};
use crate::release::{Origin, ReleaseError, ReleaseSource};
use crate::system::{SysError, System};
use llmgw_model::host::Host;

/// The directories of a Python environment's `site-packages` whose
/// extension modules its import check loads, read before it runs: vLLM's
/// `_C.abi3.so`, SGLang's kernels (`sgl_kernel/common_ops.abi3.so`), and
/// torch's CUDA libraries (`torch/lib/libtorch_cuda.so`). Sources: the
/// wheels' file lists (`mocks/pypi/pypi.json`).
pub const PYTHON_EXTENSIONS: &[&str] = &["vllm", "sgl_kernel", "torch/lib"];

/// One pass of the installer over a machine.
pub struct Installer<'a> {
    sys: &'a mut dyn System,
    host: &'a Host,
    cfg: &'a Config,
    /// The publisher's release metadata, seen once per pass.
    publisher: ReleaseSource,
}

/// One want's context, passed to each of its steps: the want as asked,
/// and where its builds come from.
struct Job {
    /// The want as asked: the want itself, or for a `latest` want converged
    /// at the version it resolved to, the `latest` want; what the install
    /// record says it was installed for.
    asked: Want,
    /// An offline want's mirror, with release metadata of its own; `None`
    /// for a want installed from the publisher (the pass's metadata).
    mirror: Option<ReleaseSource>,
}

impl Job {
    /// The context of `want` (one version), asked as `asked`; its origin is
    /// the want's own.
    fn new(cfg: &Config, asked: &Want, want: &Want) -> Job {
        let origin = Origin::of(want);
        let mirror = origin.is_mirror().then(|| ReleaseSource::new(&cfg.github_api, origin));
        Job { asked: asked.clone(), mirror }
    }
}

/// The release metadata a job's builds come from: its mirror's, or the publisher's.
fn source<'s>(publisher: &'s mut ReleaseSource, job: &'s mut Job) -> &'s mut ReleaseSource {
    job.mirror.as_mut().unwrap_or(publisher)
}

/// What looking at earlier installs found: builds removed as broken, notes.
#[derive(Default)]
struct Earlier {
    attempts: Vec<Attempt>,
    notes: Vec<String>,
}

/// What an install already on the machine turned out to be.
enum Verified {
    /// No install of this build (or one made for another want).
    Absent,
    /// Installed, but not from assets with the offline want's checksums.
    Untrusted(String),
    /// Whole and working: its binary, and what proved it.
    Whole(PathBuf, String),
    /// Installed and broken: why.
    Broken(BuildFailure),
}

impl<'a> Installer<'a> {
    /// A pass over the machine `sys` described by `host`, installing as `cfg` says.
    pub fn new(sys: &'a mut dyn System, host: &'a Host, cfg: &'a Config) -> Installer<'a> {
        Installer { sys, host, cfg, publisher: ReleaseSource::new(&cfg.github_api, Origin::Publisher) }
    }

    /// Converges every want in order; one status per want. What an
    /// interrupted run left in the engines directory is removed first.
    pub fn converge(&mut self, wants: &[Want]) -> Vec<Status> {
        match record::clean_incomplete(self.sys, &self.cfg.engines_dir) {
            Ok(removed) if !removed.is_empty() => {
                tracing::warn!("removed what an interrupted install left: {}", removed.join(", "))
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("could not clean the engines directory: {e}"),
        }
        let statuses: Vec<Status> = wants.iter().map(|w| self.converge_one(w)).collect();
        self.keep_two_of_each_latest(wants, &statuses);
        // Each build removes its own staging; the empty staging area goes too.
        let staging = self.cfg.engines_dir.join(".staging");
        if self.sys.list_dir(&staging).ok().flatten().is_some_and(|e| e.is_empty()) {
            let _ = record::remove(self.sys, &self.cfg.engines_dir, &staging);
        }
        statuses
    }

    /// Converges one want: its plan, then [`Installer::install_plan`]. A
    /// `latest` want is resolved first ([`super::latest`]); when the newest
    /// version cannot be installed (or looked for), the newest installed
    /// earlier for it stays ready, saying why.
    pub fn converge_one(&mut self, want: &Want) -> Status {
        if !want.is_latest() {
            return self.converge_version(want, want);
        }
        let _span = tracing::info_span!("converge", want = %want).entered();
        match super::latest::resolve(self.sys, self.cfg, want, self.host) {
            Ok(resolved) => {
                tracing::info!("{want} is {}", resolved.version);
                let mut status = self.converge_version(&want.at(&resolved.version), want);
                status.want = want.name();
                let mut notes: Vec<String> = status.note.take().into_iter().collect();
                if !resolved.skipped.is_empty() {
                    notes.push(format!("newer, passed over: {}", resolved.skipped.join("; ")));
                }
                if status.state != State::Ready
                    && let Some(mut earlier) = self.installed_earlier(want, Some(&resolved.version))
                {
                    earlier.note = join_notes(vec![format!(
                        "{want} is {}, which did not install here ({}); {} stays",
                        resolved.version, status.detail, earlier.version
                    )]);
                    earlier.resolved = Some(resolved.version);
                    return earlier;
                }
                status.note = join_notes(notes);
                status.resolved = Some(resolved.version);
                status
            }
            Err(why) => {
                let why = format!("could not resolve {want}: {why}");
                // Said by the status itself; a matrix of hosts it does not fit stays quiet.
                tracing::info!("{why}");
                if let Some(mut earlier) = self.installed_earlier(want, None) {
                    earlier.note = join_notes(vec![format!("{why}; {} stays", earlier.version)]);
                    return earlier;
                }
                refused(want, State::Failed, why, vec![])
            }
        }
    }

    /// The newest install made for the `latest` want `want` (other than
    /// `except`, the version that just failed) that still verifies, as a
    /// ready status of `want`.
    fn installed_earlier(&mut self, want: &Want, except: Option<&str>) -> Option<Status> {
        let mut versions: Vec<String> =
            self.records_for(want).into_iter().map(|r| r.version).filter(|v| Some(v.as_str()) != except).collect();
        versions.sort_by(|a, b| version_order(want.engine, b, a));
        versions.dedup();
        for v in versions {
            let concrete = want.at(&v);
            let Ok(plan) = recipe::plan_published(&concrete, self.host, Published::Unknown) else { continue };
            let mut earlier = Earlier::default();
            let mut job = Job::new(self.cfg, want, &concrete);
            let found = self.already_installed(&mut job, &concrete, &plan, &mut earlier);
            if let Some(mut status) = found {
                status.want = want.name();
                return Some(status);
            }
        }
        None
    }

    /// The install records of `want`'s engine made for `want` itself (a
    /// `latest` want), in no order; unreadable ones are skipped, and those
    /// not to be followed set aside ([`record::load`]).
    fn records_for(&mut self, want: &Want) -> Vec<InstallRecord> {
        let dir = self.cfg.engines_dir.join(want.engine.as_str());
        let entries = self.sys.list_dir(&dir).ok().flatten().unwrap_or_default();
        entries
            .iter()
            .filter(|e| !e.is_dir && e.name.ends_with(".json"))
            .filter_map(|e| record::load(self.sys, &self.cfg.engines_dir, want.engine, &e.name).ok().flatten())
            .filter(|r| r.for_want == want.name())
            .collect()
    }

    /// After a pass: of the installs made for each `latest` want, the one
    /// ready now and the newest before it stay; older ones are removed,
    /// unless another want of the pass is ready with that version.
    fn keep_two_of_each_latest(&mut self, wants: &[Want], statuses: &[Status]) {
        let in_use: Vec<(Engine, &str)> =
            statuses.iter().filter(|s| s.state == State::Ready).map(|s| (s.engine, s.version.as_str())).collect();
        for (want, status) in wants.iter().zip(statuses) {
            if !want.is_latest() || status.state != State::Ready {
                continue;
            }
            let mut records = self.records_for(want);
            records.sort_by(|a, b| version_order(want.engine, &b.version, &a.version));
            let mut versions: Vec<String> = records.iter().map(|r| r.version.clone()).collect();
            versions.dedup();
            let now = status.version.as_str();
            let before = versions.iter().find(|v| version_order(want.engine, v, now).is_lt()).cloned();
            for r in records {
                let keep = r.version == now
                    || Some(&r.version) == before.as_ref()
                    || in_use.contains(&(want.engine, r.version.as_str()));
                if keep {
                    continue;
                }
                let paths = Paths::of(&self.cfg.engines_dir, want.engine, &r.version, &r.variant);
                let engines = &self.cfg.engines_dir;
                match record::remove(self.sys, engines, &paths.install)
                    .and_then(|()| record::remove(self.sys, engines, &paths.record))
                {
                    Ok(()) => tracing::info!(
                        "removed {} {} {}, installed for {want}: {now} and {} are kept",
                        want.engine,
                        r.version,
                        r.variant,
                        before.as_deref().unwrap_or("-")
                    ),
                    Err(e) => tracing::warn!("could not remove {} {} {}: {e}", want.engine, r.version, r.variant),
                }
            }
        }
    }

    /// Converges one want of one version, asked as `asked` (itself, or the
    /// `latest` want it resolved from): an install recorded answers first,
    /// then the release's plan is installed.
    fn converge_version(&mut self, want: &Want, asked: &Want) -> Status {
        let _span = tracing::info_span!("converge", want = %want).entered();
        let origin = Origin::of(want);
        let mut job = Job::new(self.cfg, asked, want);
        if origin.is_mirror() && want.engine.from_pypi() {
            let reason = format!(
                "{} is installed from PyPI, which an offline mirror does not carry; offline wants install llama.cpp and uv",
                want.engine
            );
            return refused(want, State::Unsupported, reason, vec![]);
        }
        // An install already recorded answers without the network: the
        // rules' plan names the builds that can be installed here.
        let mut earlier = Earlier::default();
        if let Ok(plan) = recipe::plan_published(want, self.host, Published::Unknown)
            && let Some(ready) = self.already_installed(&mut job, want, &plan, &mut earlier)
        {
            return ready;
        }
        // Then the release, where its assets say which builds exist: a
        // version that does not exist is said as such, and a build whose
        // assets the release lacks is left out, saying so.
        let listed: Option<Vec<String>> = match (origin.is_mirror(), recipe::release_of(want)) {
            (false, Some((repo, tag))) => match self.publisher.release(self.sys, repo, &tag) {
                Ok(release) => Some(release.assets.iter().map(|a| a.name.clone()).collect()),
                Err(e @ ReleaseError::NoRelease { .. }) => {
                    return refused(want, State::Failed, e.to_string(), vec![]);
                }
                // Not to be had now (a 500, the network): the rules plan,
                // and each build says why it could not be fetched.
                Err(_) => None,
            },
            _ => None,
        };
        let published = listed.as_deref().map_or(Published::Unknown, Published::Assets);
        match recipe::plan_published(want, self.host, published) {
            // The release's plan can name builds the rules did not (a
            // toolkit the tag table has not heard of): their installs too.
            Ok(plan) => match self.already_installed(&mut job, want, &plan, &mut earlier) {
                Some(ready) => ready,
                None => self.try_candidates(&mut job, want, &plan, earlier),
            },
            // Refused by the rules: first whether the version exists at all
            // (an offline want's mirror is not asked: it is a bundle's).
            Err(refusal) => match (!origin.is_mirror())
                .then(|| super::exists::unpublished(self.sys, self.cfg, &mut self.publisher, want))
                .flatten()
            {
                Some(why) => refused(want, State::Failed, why, vec![]),
                None => match refusal {
                    Refusal::NotHere { reason } => refused(want, State::NotHere, reason, vec![]),
                    Refusal::Unsupported { reason, excluded } => refused(want, State::Unsupported, reason, excluded),
                },
            },
        }
    }

    /// Installs the first candidate of `plan` that works, from the want's
    /// origin; the plan can come from a recipe or from a test. An install
    /// already recorded for the want answers first.
    pub fn install_plan(&mut self, want: &Want, plan: Plan) -> Status {
        let mut job = Job::new(self.cfg, want, want);
        let mut earlier = Earlier::default();
        match self.already_installed(&mut job, want, &plan, &mut earlier) {
            Some(ready) => ready,
            None => self.try_candidates(&mut job, want, &plan, earlier),
        }
    }

    /// An install already recorded for this want, in the recipe's order of
    /// preference, that verifies: its ready status. One made for another
    /// want (`:vulkan` asked for by name) does not answer a want that leaves
    /// the choice to the machine. A broken one is removed, said in `earlier`.
    fn already_installed(&mut self, job: &mut Job, want: &Want, plan: &Plan, earlier: &mut Earlier) -> Option<Status> {
        for build in &plan.candidates {
            let paths = Paths::new(&self.cfg.engines_dir, want.engine, build);
            match self.verify_installed(job, want, build, &paths) {
                Verified::Absent => {}
                Verified::Untrusted(why) if !earlier.notes.contains(&why) => {
                    tracing::info!(variant = %build.variant, "{why}");
                    earlier.notes.push(why);
                }
                Verified::Untrusted(_) => {}
                Verified::Whole(binary, why) => {
                    let mut attempts = std::mem::take(&mut earlier.attempts);
                    attempts.push(Attempt::new(&build.variant, Outcome::Verified, why));
                    attempts.extend(left_out(plan));
                    let mut notes = plan.notes.clone();
                    notes.append(&mut earlier.notes);
                    notes.extend(build.note.clone());
                    let how = "was installed earlier; every file verifies and it still works";
                    return Some(ready(want, build, binary, notes, attempts, how));
                }
                Verified::Broken(why) => {
                    let why = self.say(why);
                    tracing::warn!(variant = %build.variant, "installed build no longer works: {why}");
                    let _ = record::remove(self.sys, &self.cfg.engines_dir, &paths.install);
                    let _ = record::remove(self.sys, &self.cfg.engines_dir, &paths.record);
                    earlier.attempts.push(Attempt::new(
                        &build.variant,
                        Outcome::Stale,
                        format!("installed earlier and removed: {why}"),
                    ));
                }
            }
        }
        None
    }

    /// Installs each candidate in turn until one works.
    fn try_candidates(&mut self, job: &mut Job, want: &Want, plan: &Plan, earlier: Earlier) -> Status {
        let Earlier { mut attempts, notes: earlier_notes } = earlier;
        let mut notes = plan.notes.clone();
        notes.extend(earlier_notes);
        let mut failures: Vec<String> = Vec::new();

        for (i, build) in plan.candidates.iter().enumerate() {
            let _span = tracing::info_span!("build", variant = %build.variant).entered();
            tracing::info!("trying the {} build, candidate {} of {}", build.variant, i + 1, plan.candidates.len());
            let paths = Paths::new(&self.cfg.engines_dir, want.engine, build);
            let result = self.install_build(job, want, build, &paths);
            let _ = record::remove(self.sys, &self.cfg.engines_dir, &paths.staging);
            match result {
                Ok((binary, why)) => {
                    tracing::info!("installed: {why}");
                    let how = format!("installed: {why}");
                    attempts.push(Attempt::new(&build.variant, Outcome::Installed, why));
                    attempts.extend(left_out(plan));
                    notes.extend(build.note.clone());
                    return ready(want, build, binary, notes, attempts, &how);
                }
                Err(failure) => {
                    let check = failure.check();
                    let why = self.say(failure);
                    tracing::info!("build failed: {why}");
                    failures.push(format!("{}: {why}", build.variant));
                    attempts.push(Attempt { check, ..Attempt::new(&build.variant, Outcome::Failed, why) });
                }
            }
        }
        attempts.extend(left_out(plan));
        let detail =
            format!("no build of {} {} works on this node: {}", want.engine, want.version, failures.join("; "));
        Status { note: join_notes(notes), attempts, ..Status::new(want, State::Failed, detail) }
    }

    /// A failure in words, its paths relative to the engines directory.
    fn say(&self, failure: BuildFailure) -> String {
        failure.relative_to(&self.cfg.engines_dir).to_string()
    }

    /// Whether an install of `build` is recorded, whole and working.
    fn verify_installed(&mut self, job: &Job, want: &Want, build: &Build, paths: &Paths) -> Verified {
        let name = format!("{}-{}.json", build.version, build.variant);
        let record = match record::load(self.sys, &self.cfg.engines_dir, want.engine, &name) {
            Ok(Some(r)) => r,
            Ok(None) => return Verified::Absent,
            Err(record::RecordError::Rejected { defect, .. }) => {
                return Verified::Broken(BuildFailure::NotAsRecorded(format!(
                    "its install record was set aside as `{name}.rejected`: {defect}"
                )));
            }
            Err(record::RecordError::Io(e)) => return Verified::Broken(e.into()),
        };
        // A build chosen by name (`:vulkan`) answers only wants that name it;
        // one the machine chose answers any want it is a candidate of.
        let chosen_by_name = record.for_want.variant.is_some();
        if chosen_by_name && want.variant.is_none() && record.for_want != want.name() {
            return Verified::Absent;
        }
        // An offline want trusts the control plane's checksums only: an install
        // answers it when every asset it was made from has the digest
        // offline_sha256 gives for that asset. Otherwise it is left in place
        // (it may answer online wants) and the build is installed afresh from
        // the mirror, checked against those checksums.
        if let Some(Origin::Mirror { sha256, .. }) = job.mirror.as_ref().map(ReleaseSource::origin) {
            let trusted = !record.assets.is_empty()
                && record.assets.iter().all(|a| sha256.get(&a.name).is_some_and(|h| h.eq_ignore_ascii_case(&a.sha256)));
            if !trusted {
                return Verified::Untrusted(format!(
                    "the installed {} build was verified against other digests than offline_sha256 gives; \
                     not reused for this offline want",
                    build.variant
                ));
            }
        }
        // Each file itself, in its place: no link followed on the way.
        let install = format!("{}/{}-{}", want.engine, build.version, build.variant);
        for f in &record.files {
            let why = match self.sys.sha256_beneath(&self.cfg.engines_dir, &format!("{install}/{}", f.path)) {
                Ok(Some((_, h))) if h == f.sha256 => continue,
                Ok(Some(_)) => format!("{} no longer matches its sha256", f.path),
                Ok(None) => format!("{} is missing", f.path),
                Err(SysError::Refused { why, .. }) => format!("{} is no longer the file it was: {why}", f.path),
                Err(e) => return Verified::Broken(e.into()),
            };
            return Verified::Broken(BuildFailure::NotAsRecorded(why));
        }
        if let Err(broken) = self.python_verifies(build, &record) {
            return broken;
        }
        let binary = paths.install.join(&record.binary);
        let works = self.works(build, &binary, paths);
        // The compute check's model was written in the build's staging.
        let _ = record::remove(self.sys, &self.cfg.engines_dir, &paths.staging);
        match works {
            Ok(why) => Verified::Whole(binary, why),
            Err(f) => Verified::Broken(f),
        }
    }

    /// A Python environment's managed CPython, as its record lists it:
    /// every file still there and matching. One that does not is removed
    /// (with the environment, by the caller), so that the next install
    /// fetches it afresh; an environment recorded without one runs on the
    /// node's own Python and is installed again.
    fn python_verifies(&mut self, build: &Build, record: &InstallRecord) -> Result<(), Verified> {
        let Source::Python(_) = build.source else { return Ok(()) };
        let Some(python) = &record.python else {
            return Err(Verified::Broken(BuildFailure::NotAsRecorded(
                "its environment runs on the node's Python, not on one under the engines directory".into(),
            )));
        };
        let dir = self.cfg.engines_dir.join(&python.dir);
        for f in &python.files {
            let rel = format!("{}/{}", python.dir, f.path);
            let why = match self.sys.sha256_beneath(&self.cfg.engines_dir, &rel) {
                Ok(Some((_, h))) if h == f.sha256 => continue,
                Ok(Some(_)) => format!("{rel} no longer matches its sha256"),
                Ok(None) => format!("{rel} is missing"),
                Err(SysError::Refused { why, .. }) => format!("{rel} is no longer the file it was: {why}"),
                Err(e) => return Err(Verified::Broken(e.into())),
            };
            tracing::warn!("{why}: {} is removed, to be installed again", python.dir);
            let _ = record::remove(self.sys, &self.cfg.engines_dir, &dir);
            return Err(Verified::Broken(BuildFailure::NotAsRecorded(why)));
        }
        Ok(())
    }

    /// Why the build's own files say it cannot run here, read before any of
    /// them runs (`facts::refusal`): every file of an archive build; of a
    /// Python environment, the extension modules its import loads
    /// ([`PYTHON_EXTENSIONS`], under `site-packages`, named from there). A
    /// tree that cannot be read is said in the log and left to the checks.
    ///
    /// # Errors
    /// Listing the environment's directories fails.
    fn inspected(&mut self, build: &Build, tree: &Path) -> Result<Option<String>, BuildFailure> {
        let roots: Vec<(PathBuf, String)> = match &build.source {
            Source::Archives { .. } => vec![(tree.to_path_buf(), String::new())],
            Source::Python(env) => {
                let site = format!("lib/python{}/site-packages", env.python);
                let mut present = Vec::new();
                for dir in PYTHON_EXTENSIONS {
                    let root = tree.join(&site).join(dir);
                    if self.sys.list_dir(&root)?.is_some() {
                        present.push((root, format!("{site}/{dir}/")));
                    }
                }
                present
            }
        };
        let mut files = Vec::new();
        for (root, prefix) in roots {
            match self.sys.build_facts(&root) {
                Ok(found) => files.extend(found.into_iter().map(|mut f| {
                    f.path = format!("{prefix}{}", f.path);
                    f
                })),
                Err(e) => {
                    tracing::warn!("could not read the build's files before running them ({e}); its checks decide");
                }
            }
        }
        Ok(crate::facts::refusal(&files, self.host))
    }

    /// The checks that an installed build runs here: `ldd` (of the binary,
    /// or of a Python environment's interpreter), version, GPU and compute
    /// (its model written in the build's staging); what proved it.
    fn works(&mut self, build: &Build, binary: &Path, paths: &Paths) -> Result<String, BuildFailure> {
        let loads = match build.source {
            Source::Python(_) => python::interpreter(binary),
            Source::Archives { .. } => binary.to_path_buf(),
        };
        checks::libraries_load(self.sys, build, &loads, self.cfg.not_a_build).map_err(BuildFailure::Ldd)?;
        let timeout = self.cfg.check_timeout_secs;
        let version = checks::version_runs(self.sys, build, binary, timeout).map_err(BuildFailure::Version)?;
        let check_dir = paths.staging.join("check");
        let gpus = checks::gpu_computes(self.sys, build, binary, self.host, &check_dir, timeout)?;
        Ok(if gpus.is_empty() { version } else { gpus })
    }

    /// Installs one build into staging, checks it, and commits it: the
    /// binary, and what proved that it works.
    fn install_build(
        &mut self,
        job: &mut Job,
        want: &Want,
        build: &Build,
        paths: &Paths,
    ) -> Result<(PathBuf, String), BuildFailure> {
        // The release first: a version that does not exist costs nothing more.
        match &build.source {
            Source::Archives { repo, tag, assets, .. } => {
                // Every asset verifiable before any is downloaded: an offline
                // asset without the control plane's checksum is never fetched.
                for name in assets {
                    source(&mut self.publisher, job)
                        .asset(self.sys, want.engine, &build.version, (repo, tag), name)?
                        .sha256()?;
                }
            }
            Source::Python(env) => {
                python::preflight(self.sys, self.cfg, source(&mut self.publisher, job), want, build, env)?
            }
        }
        // Free disk, before anything is written.
        let free = self.sys.disk_free(&self.cfg.engines_dir)?;
        if free < build.free_gb.saturating_mul(1_000_000_000) {
            return Err(BuildFailure::Disk { need_gb: build.free_gb, free_bytes: free });
        }
        let family = self.host.os.package_family;
        let installed = packages::ensure(self.sys, family, build)?;
        // What the build does after this point, it does with the packages
        // installed: a failure says so, as the node is changed all the same.
        let (binary, why) =
            self.install_tree(job, want, build, paths).map_err(|failure| match installed.is_empty() {
                false => BuildFailure::AfterPackages { failure: Box::new(failure), installed: installed.clone() },
                // Packages would have given it libraries, not kernels or a newer glibc.
                true if family == llmgw_model::host::PackageFamily::None
                    && !build.packages.is_empty()
                    && !matches!(failure, BuildFailure::Inspected(_)) =>
                {
                    BuildFailure::NoPackageManager { failure: Box::new(failure), packages: packages::by_family(build) }
                }
                true => failure,
            })?;
        match installed.is_empty() {
            true => Ok((binary, why)),
            false => Ok((binary, format!("installed {}; {why}", super::failure::packages_in_words(&installed)))),
        }
    }

    /// The builds `build` requires (uv for a Python environment), each
    /// converged here at the top level as a want of its own: their statuses,
    /// every one `ready`.
    ///
    /// # Errors
    /// [`BuildFailure::Requirement`] for the first that is not ready.
    fn requirements(&mut self, build: &Build) -> Result<Vec<Status>, BuildFailure> {
        let mut out = Vec::new();
        for req in &build.requires {
            let status = self.converge_one(req);
            match (&status.state, &status.binary) {
                (State::Ready, Some(_)) => out.push(status),
                _ => {
                    return Err(BuildFailure::Requirement {
                        want: format!("{} {}", req.engine, req.version),
                        engine: req.engine.to_string(),
                        state: status.state.as_str().replace('_', " "),
                        detail: status.detail,
                    });
                }
            }
        }
        Ok(out)
    }

    /// Builds the tree in staging, checks it, and commits it: the binary,
    /// and what proved that it works.
    fn install_tree(
        &mut self,
        job: &mut Job,
        want: &Want,
        build: &Build,
        paths: &Paths,
    ) -> Result<(PathBuf, String), BuildFailure> {
        record::remove(self.sys, &self.cfg.engines_dir, &paths.staging)?;
        self.sys.create_dir_all(&paths.downloads())?;
        let tree = paths.tree();
        let built = match &build.source {
            Source::Archives { .. } => {
                archives::fetch_and_unpack(self.sys, source(&mut self.publisher, job), want.engine, build, paths)?
            }
            Source::Python(env) => {
                let requirements = self.requirements(build)?;
                let uv =
                    requirements.iter().find(|r| r.engine == Engine::Uv).and_then(|r| r.binary.clone()).ok_or_else(
                        || BuildFailure::Requirement {
                            want: "uv".into(),
                            engine: "uv".into(),
                            state: "is not among the recipe's requirements".into(),
                            detail: "a Python environment is made by uv".into(),
                        },
                    )?;
                let mut built = python::create_env(
                    self.sys,
                    self.cfg,
                    source(&mut self.publisher, job),
                    (build, env),
                    paths,
                    Path::new(&uv),
                )?;
                built.depends_on = requirements
                    .iter()
                    .map(|r| format!("{} {} {}", r.engine, r.version, r.variant.as_deref().unwrap_or("")))
                    .collect();
                built
            }
        };

        // What the unpacked files need, read before anything of them runs:
        // the same rule the simulated loader and GPU follow.
        if let Some(why) = self.inspected(build, &tree)? {
            return Err(BuildFailure::Inspected(why));
        }
        let binary = checks::find_binary(self.sys, &tree, &build.binary)?
            .ok_or_else(|| BuildFailure::NoBinary(build.binary.clone()))?;
        let why = self.works(build, &binary, paths)?;

        // Commit: the tree by rename, then the record, last.
        let rel = binary.strip_prefix(&tree).map_err(|_| BuildFailure::NoBinary(build.binary.clone()))?.to_path_buf();
        if let Some(parent) = paths.install.parent() {
            self.sys.create_dir_all(parent)?;
        }
        record::remove(self.sys, &self.cfg.engines_dir, &paths.install)?;
        self.sys.rename(&tree, &paths.install)?;
        let record = InstallRecord {
            engine: want.engine,
            for_want: job.asked.name(),
            version: build.version.clone(),
            variant: build.variant.clone(),
            binary: rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/"),
            files: built.files,
            assets: built.assets,
            depends_on: built.depends_on,
            python: built.python,
            installed_at: self.sys.now(),
        };
        let json = serde_json::to_vec_pretty(&record).expect("a record always serializes");
        self.sys.write_atomic(&paths.record, &json)?;
        Ok((paths.install.join(rel), why))
    }
}

fn refused(want: &Want, state: State, detail: String, excluded: Vec<recipe::Exclusion>) -> Status {
    let attempts = excluded.into_iter().map(|e| Attempt::new(e.variant, Outcome::LeftOut, e.reason)).collect();
    Status { attempts, ..Status::new(want, state, detail) }
}

fn left_out(plan: &Plan) -> impl Iterator<Item = Attempt> + '_ {
    plan.excluded.iter().map(|e| Attempt::new(&e.variant, Outcome::LeftOut, &e.reason))
}

fn ready(want: &Want, build: &Build, binary: PathBuf, notes: Vec<String>, attempts: Vec<Attempt>, how: &str) -> Status {
    let detail = format!("{} {} {} {how}", want.engine, build.version, build.variant);
    let status = Status { note: join_notes(notes), attempts, ..Status::new(want, State::Ready, detail) };
    status.installed(&build.version, &build.variant, &binary)
}

/// Orders two versions of `engine`: llama.cpp's build tags by their
/// number (`b9999` before `b11459`), the others by PEP 440.
fn version_order(engine: Engine, a: &str, b: &str) -> std::cmp::Ordering {
    let build = |v: &str| v.strip_prefix('b').and_then(|n| n.parse::<u64>().ok());
    match (engine.descriptor().versions, build(a), build(b)) {
        (recipe::VersionSyntax::BuildTag, Some(x), Some(y)) => x.cmp(&y),
        _ => recipe::compare_versions(a, b),
    }
}

fn join_notes(notes: Vec<String>) -> Option<String> {
    if notes.is_empty() { None } else { Some(notes.join("; ")) }
}
