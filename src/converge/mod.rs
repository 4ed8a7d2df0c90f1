//! The installer: wants in, [`Status`]es out, every effect through the
//! [`System`] trait (the steps are in README.md, "Run it" and "On a real node").
//!
//! For one want: the recipe's [`Plan`]; an install already recorded whose
//! files still verify and which still works is `ready` without a download;
//! otherwise each candidate in turn — free disk, OS packages, release
//! metadata, download and sha256 against the publisher's digest, safe unpack
//! into staging, the binary, `ldd`, the version command, the GPU listing —
//! and the first that passes is committed by rename, its record written
//! last. A failed build costs its download: its staging is removed and the
//! next is tried.

mod archives;
pub(crate) mod checks;
mod python;
pub mod record;
pub mod status;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::host::{Host, PackageFamily};
use crate::parse::packages;
use crate::recipe::{self, Build, Plan, Refusal, Source, Want};
use crate::release::{self, Release};
use crate::system::System;

pub use checks::torch_check_script;
pub use record::{InstallRecord, Paths};
pub use status::{Attempt, Check, Failure, Outcome, State, Status};

/// Where and from what the installer installs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The engines directory: `/opt/llmgw/engines`.
    pub engines_dir: PathBuf,
    /// Base URL of GitHub's REST API ([`release::GITHUB_API`], or the fake server's).
    pub github_api: String,
    /// PyPI's simple index ([`PYPI_SIMPLE`], or the fake server's).
    pub pypi_simple: String,
    /// PyTorch's wheel host, under which each CUDA version has its index
    /// ([`PYTORCH_WHL`], or the fake server's).
    pub pytorch_whl: String,
    /// Seconds a build's version command and GPU check may run before they
    /// are killed and the build counts as failed ([`CHECK_TIMEOUT_SECS`]).
    pub check_timeout_secs: u64,
}

/// The default limit of a check's process, in seconds: a GPU check imports
/// torch and initialises CUDA, which takes tens of seconds on a cold node.
pub const CHECK_TIMEOUT_SECS: u64 = 120;

/// PyPI's simple index, which uv reads in its JSON form (PEP 691).
pub const PYPI_SIMPLE: &str = "https://pypi.org/simple";

/// PyTorch's wheel indexes, one per CUDA version: `{PYTORCH_WHL}/cu129`.
pub const PYTORCH_WHL: &str = "https://download.pytorch.org/whl";

/// Converges every want in order; one status per want.
pub fn converge(sys: &mut dyn System, host: &Host, cfg: &Config, wants: &[Want]) -> Vec<Status> {
    match record::clean_incomplete(sys, &cfg.engines_dir) {
        Ok(removed) if !removed.is_empty() => {
            tracing::warn!("removed what an interrupted install left: {}", removed.join(", "))
        }
        Ok(_) => {}
        Err(e) => tracing::warn!("could not clean the engines directory: {e}"),
    }
    let mut releases = Releases::default();
    let statuses = wants.iter().map(|w| converge_one(sys, host, cfg, w, &mut releases)).collect();
    // Each build removes its own staging; the empty staging area goes too.
    let staging = cfg.engines_dir.join(".staging");
    if sys.list_dir(&staging).ok().flatten().is_some_and(|e| e.is_empty()) {
        let _ = sys.remove(&staging);
    }
    statuses
}

/// Release metadata fetched during one pass, by (repo, tag): builds of one
/// release share it.
#[derive(Debug, Default)]
pub struct Releases(BTreeMap<(String, String), Result<Release, String>>);

impl Releases {
    /// Releases known without asking the publisher: an offline mirror's
    /// (`offline::mirror::releases`). A want converged with them never
    /// fetches release metadata.
    pub fn known(releases: impl IntoIterator<Item = (String, String, Release)>) -> Releases {
        Releases(releases.into_iter().map(|(repo, tag, r)| ((repo, tag), Ok(r))).collect())
    }
}

/// Converges one want.
pub fn converge_one(sys: &mut dyn System, host: &Host, cfg: &Config, want: &Want, releases: &mut Releases) -> Status {
    let _span = tracing::info_span!("converge", want = %want).entered();
    if want.offline_base.is_some() && matches!(want.engine, recipe::Engine::Vllm | recipe::Engine::Sglang) {
        let reason = format!(
            "{} is installed from PyPI, which an offline mirror does not carry; offline wants install llama.cpp and uv",
            want.engine
        );
        return refused(want, State::Unsupported, reason, vec![]);
    }
    match recipe::plan(want, host) {
        // Offline: the mirror's releases, never the publisher's.
        Ok(plan) => match &want.offline_base {
            Some(base) => {
                let mut mirror = crate::offline::mirror::releases(base, &want.offline_sha256, want.engine, &plan);
                install_plan(sys, host, cfg, want, plan, &mut mirror)
            }
            None => install_plan(sys, host, cfg, want, plan, releases),
        },
        Err(Refusal::NotHere { reason }) => refused(want, State::NotHere, reason, vec![]),
        Err(Refusal::Unsupported { reason, excluded }) => refused(want, State::Unsupported, reason, excluded),
    }
}

fn refused(want: &Want, state: State, detail: String, excluded: Vec<recipe::Exclusion>) -> Status {
    Status {
        want: want.to_string(),
        engine: want.engine,
        version: want.version.clone(),
        variant: None,
        state,
        detail,
        note: None,
        binary: None,
        attempts: excluded.into_iter().map(|e| Attempt::new(e.variant, Outcome::LeftOut, e.reason)).collect(),
    }
}

/// Installs the first candidate of `plan` that works; the plan can come
/// from a recipe or from a test.
pub fn install_plan(
    sys: &mut dyn System,
    host: &Host,
    cfg: &Config,
    want: &Want,
    plan: Plan,
    releases: &mut Releases,
) -> Status {
    let mut attempts: Vec<Attempt> = Vec::new();
    let mut notes = plan.notes.clone();
    let mut failures: Vec<String> = Vec::new();

    // 1. An install already recorded for this want, in the recipe's order
    // of preference. One made for another want (`:vulkan` asked for by
    // name) does not answer a want that leaves the choice to the machine.
    for build in &plan.candidates {
        let paths = Paths::new(&cfg.engines_dir, want.engine, build);
        match verify_installed(sys, host, cfg, want, build, &paths) {
            Verified::Absent => {}
            Verified::Untrusted(why) => {
                tracing::info!(variant = %build.variant, "{why}");
                notes.push(why);
            }
            Verified::Whole(binary, why) => {
                attempts.push(Attempt::new(&build.variant, Outcome::Verified, why));
                attempts.extend(left_out(&plan));
                notes.extend(build.note.clone());
                return ready(
                    want,
                    build,
                    binary,
                    notes,
                    attempts,
                    "was installed earlier; every file verifies and it still works",
                );
            }
            Verified::Broken(why) => {
                tracing::warn!(variant = %build.variant, "installed build no longer works: {why}");
                let _ = sys.remove(&paths.install);
                let _ = sys.remove(&paths.record);
                attempts.push(Attempt::new(
                    &build.variant,
                    Outcome::Stale,
                    format!("installed earlier and removed: {why}"),
                ));
            }
        }
    }

    // 2. Each candidate in turn.
    for build in &plan.candidates {
        let _span = tracing::info_span!("build", variant = %build.variant).entered();
        let paths = Paths::new(&cfg.engines_dir, want.engine, build);
        let result = install_build(sys, &Job { host, cfg, want, build, paths: &paths }, releases);
        let _ = sys.remove(&paths.staging);
        match result {
            Ok((binary, why)) => {
                let how = format!("installed: {why}");
                attempts.push(Attempt::new(&build.variant, Outcome::Installed, why));
                attempts.extend(left_out(&plan));
                notes.extend(build.note.clone());
                return ready(want, build, binary, notes, attempts, &how);
            }
            Err(Failure { check, reason: why }) => {
                tracing::info!("build failed: {why}");
                failures.push(format!("{}: {why}", build.variant));
                attempts.push(Attempt { check, ..Attempt::new(&build.variant, Outcome::Failed, why) });
            }
        }
    }
    attempts.extend(left_out(&plan));
    Status {
        want: want.to_string(),
        engine: want.engine,
        version: want.version.clone(),
        variant: None,
        state: State::Failed,
        detail: format!("no build of {} {} works on this node: {}", want.engine, want.version, failures.join("; ")),
        note: join_notes(notes),
        binary: None,
        attempts,
    }
}

fn left_out(plan: &Plan) -> impl Iterator<Item = Attempt> + '_ {
    plan.excluded.iter().map(|e| Attempt::new(&e.variant, Outcome::LeftOut, &e.reason))
}

fn ready(want: &Want, build: &Build, binary: PathBuf, notes: Vec<String>, attempts: Vec<Attempt>, how: &str) -> Status {
    Status {
        want: want.to_string(),
        engine: want.engine,
        version: build.version.clone(),
        variant: Some(build.variant.clone()),
        state: State::Ready,
        detail: format!("{} {} {} {how}", want.engine, build.version, build.variant),
        note: join_notes(notes),
        binary: Some(binary.display().to_string()),
        attempts,
    }
}

fn join_notes(notes: Vec<String>) -> Option<String> {
    if notes.is_empty() { None } else { Some(notes.join("; ")) }
}

enum Verified {
    Absent,
    /// Installed, but not from assets with the offline want's checksums.
    Untrusted(String),
    Whole(PathBuf, String),
    Broken(String),
}

/// Whether an install of `build` is recorded, whole and working.
fn verify_installed(
    sys: &mut dyn System,
    host: &Host,
    cfg: &Config,
    want: &Want,
    build: &Build,
    paths: &Paths,
) -> Verified {
    let record = match sys.read(&paths.record) {
        Ok(Some(bytes)) => match serde_json::from_slice::<InstallRecord>(&bytes) {
            Ok(r) => r,
            Err(e) => return Verified::Broken(format!("its install record is unreadable ({e})")),
        },
        Ok(None) => return Verified::Absent,
        Err(e) => return Verified::Broken(e.to_string()),
    };
    // A build chosen by name (`:vulkan`) answers only wants that name it;
    // one the machine chose answers any want it is a candidate of.
    let chosen_by_name = record.for_want.contains(':');
    if chosen_by_name && want.variant.is_none() && record.for_want != want.to_string() {
        return Verified::Absent;
    }
    // An offline want trusts the control plane's checksums only: an install
    // answers it when every asset it was made from has the digest
    // offline_sha256 gives for that asset. Otherwise it is left in place
    // (it may answer online wants) and the build is installed afresh from
    // the mirror, checked against those checksums.
    if want.offline_base.is_some() {
        let trusted = !record.assets.is_empty()
            && record
                .assets
                .iter()
                .all(|a| want.offline_sha256.get(&a.name).is_some_and(|h| h.eq_ignore_ascii_case(&a.sha256)));
        if !trusted {
            return Verified::Untrusted(format!(
                "the installed {} build was verified against other digests than offline_sha256 gives; \
                 not reused for this offline want",
                build.variant
            ));
        }
    }
    for f in &record.files {
        match sys.sha256_file(&paths.install.join(&f.path)) {
            Ok(Some((_, h))) if h == f.sha256 => {}
            Ok(Some(_)) => return Verified::Broken(format!("{} no longer matches its sha256", f.path)),
            Ok(None) => return Verified::Broken(format!("{} is missing", f.path)),
            Err(e) => return Verified::Broken(e.to_string()),
        }
    }
    let binary = paths.install.join(&record.binary);
    match works(sys, host, cfg, build, &binary) {
        Ok(why) => Verified::Whole(binary, why),
        Err(f) => Verified::Broken(f.reason),
    }
}

/// The checks that an installed build runs here: `ldd` (of the binary, or
/// of a Python environment's interpreter), version, GPU.
fn works(sys: &mut dyn System, host: &Host, cfg: &Config, build: &Build, binary: &Path) -> Result<String, Failure> {
    match build.source {
        Source::Python(_) => checks::libraries_load(sys, build, &python::interpreter(binary)),
        Source::Archives { .. } => checks::libraries_load(sys, build, binary),
    }
    .map_err(Failure::at(Check::Ldd))?;
    let version =
        checks::version_runs(sys, build, binary, cfg.check_timeout_secs).map_err(Failure::at(Check::Version))?;
    let gpus =
        checks::gpu_computes(sys, build, binary, host, cfg.check_timeout_secs).map_err(Failure::at(Check::Gpu))?;
    Ok(match (&build.gpu, gpus.is_empty()) {
        (_, true) => version,
        (Some(recipe::GpuCheck::Devices(_)), false) => format!("lists {gpus}"),
        _ => gpus,
    })
}

/// One build of one want to install on one host, and where.
struct Job<'a> {
    host: &'a Host,
    cfg: &'a Config,
    want: &'a Want,
    build: &'a Build,
    paths: &'a Paths,
}

/// Installs one build into staging, checks it, and commits it: the binary,
/// and what proved that it works.
fn install_build(sys: &mut dyn System, job: &Job, releases: &mut Releases) -> Result<(PathBuf, String), Failure> {
    let Job { host, cfg, want, build, .. } = *job;
    // The release first: a version that does not exist costs nothing more.
    match &build.source {
        Source::Archives { repo, tag, assets } => {
            // Every asset verifiable before any is downloaded: an offline
            // asset without the control plane's checksum is never fetched.
            let release = release_of(sys, cfg, releases, repo, tag)?;
            for name in assets {
                release.asset(name).and_then(release::Asset::sha256).map_err(|e| e.to_string())?;
            }
        }
        Source::Python(env) => python::preflight(sys, cfg, releases, want, build, env)?,
    }
    // Free disk, before anything is written.
    let free = sys.disk_free(&cfg.engines_dir).map_err(|e| e.to_string())?;
    let need = build.free_gb.saturating_mul(1_000_000_000);
    if free < need {
        return Err(format!(
            "needs {} GB free for the engines, and {:.1} GB is free",
            build.free_gb,
            (free / 100_000_000) as f64 / 10.0
        )
        .into());
    }
    let family = host.os.package_family;
    let installed = ensure_packages(sys, family, build)?;
    // What the build does after this point, it does with the packages
    // installed: a failure says so, as the node is changed all the same.
    let changed = |e: String| match (installed.is_empty(), family) {
        (false, _) => format!(
            "{e} ({} {} installed for it)",
            packages_in_words(&installed),
            if installed.len() == 1 { "was" } else { "were" }
        ),
        (true, PackageFamily::None) if !build.packages.is_empty() => format!(
            "{e} (this system has no package manager the installer can use; elsewhere the build takes its libraries from {})",
            build
                .packages
                .iter()
                .map(|(f, p)| format!("{} on {}", p.join(", "), f.as_str()))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        _ => e,
    };
    let (binary, why) = install_tree(sys, job, releases).map_err(|f| f.map(changed))?;
    match installed.is_empty() {
        true => Ok((binary, why)),
        false => Ok((binary, format!("installed {}; {why}", packages_in_words(&installed)))),
    }
}

/// Builds the tree in staging, checks it, and commits it: the binary, and
/// what proved that it works.
fn install_tree(sys: &mut dyn System, job: &Job, releases: &mut Releases) -> Result<(PathBuf, String), Failure> {
    let Job { host, cfg, want, build, paths } = *job;
    sys.remove(&paths.staging).map_err(|e| e.to_string())?;
    sys.create_dir_all(&paths.downloads()).map_err(|e| e.to_string())?;
    let tree = paths.tree();
    let built = match &build.source {
        Source::Archives { repo, tag, assets } => {
            archives::fetch_and_unpack(sys, cfg, releases, repo, tag, assets, paths)?
        }
        Source::Python(env) => python::create_env(sys, host, cfg, releases, build, env, paths)?,
    };

    let binary = checks::find_binary(sys, &tree, &build.binary)?
        .ok_or_else(|| format!("the installed tree holds no {}", build.binary))?;
    let why = works(sys, host, cfg, build, &binary)?;

    // Commit: the tree by rename, then the record, last.
    let rel = binary.strip_prefix(&tree).map_err(|_| "the binary is outside the tree".to_string())?.to_path_buf();
    if let Some(parent) = paths.install.parent() {
        sys.create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    sys.remove(&paths.install).map_err(|e| e.to_string())?;
    sys.rename(&tree, &paths.install).map_err(|e| e.to_string())?;
    let record = InstallRecord {
        engine: want.engine,
        for_want: want.to_string(),
        version: build.version.clone(),
        variant: build.variant.clone(),
        binary: rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/"),
        files: built.files,
        assets: built.assets,
        depends_on: built.depends_on,
        installed_at: sys.now(),
    };
    let json = serde_json::to_vec_pretty(&record).expect("a record always serializes");
    sys.write_atomic(&paths.record, &json).map_err(|e| e.to_string())?;
    Ok((paths.install.join(rel), why))
}

/// What building a tree in staging produced, for the install record.
pub(crate) struct Built {
    /// Every file of the tree with its digest.
    pub files: Vec<crate::system::UnpackedFile>,
    /// The assets downloaded and the digests they matched.
    pub assets: Vec<record::AssetDigest>,
    /// Installs this one depends on: `uv 0.12.20 x86_64`.
    pub depends_on: Vec<String>,
}

/// A release's metadata, fetched once per release per pass.
pub(crate) fn release_of(
    sys: &mut dyn System,
    cfg: &Config,
    releases: &mut Releases,
    repo: &str,
    tag: &str,
) -> Result<Release, String> {
    releases
        .0
        .entry((repo.to_string(), tag.to_string()))
        .or_insert_with(|| release::fetch(sys, &cfg.github_api, repo, tag).map_err(|e| e.to_string()))
        .clone()
}

/// Downloads one release asset to `dest` and checks it against GitHub's digest.
pub(crate) fn download_verified(
    sys: &mut dyn System,
    asset: &release::Asset,
    dest: &Path,
) -> Result<record::AssetDigest, String> {
    let name = &asset.name;
    verified_twice(sys, asset, None::<()>, |sys, _| {
        let got = crate::retry::download(sys, name, &asset.browser_download_url, dest)
            .map_err(|e| format!("downloading {name}: {e}"))?;
        Ok((got.bytes, got.sha256, ()))
    })
    .map(|(digest, ())| digest)
}

/// Fetches an asset with `fetch` (size in bytes, sha256, and what else it
/// gave) and checks it against the digest vouched for it, once more when
/// they differ: a body cut or changed on the way is not the publisher's
/// file, and the same wrong bytes twice fail, naming both digests. `first`
/// is passed to the first call of `fetch` (a first attempt already made).
pub(crate) fn verified_twice<F, T>(
    sys: &mut dyn System,
    asset: &release::Asset,
    first: Option<F>,
    mut fetch: impl FnMut(&mut dyn System, Option<F>) -> Result<(u64, String, T), String>,
) -> Result<(record::AssetDigest, T), String> {
    let name = &asset.name;
    let expected = asset.sha256().map_err(|e| e.to_string())?;
    let whose = match asset.digest_from {
        release::DigestFrom::Publisher => "the publisher's digest",
        release::DigestFrom::ControlPlane => "the control plane's offline_sha256",
    };
    let mut got = fetch(sys, first)?;
    if got.1 != expected {
        tracing::warn!("{name}: sha256 {} is not {whose} {expected}; downloading it again", got.1);
        got = fetch(sys, None)?;
    }
    if got.1 != expected {
        let expected_size = match asset.size {
            0 => String::new(),
            size => format!(", {size} expected"),
        };
        return Err(format!(
            "{name}: sha256 {} does not match {whose} {expected}, downloaded twice ({} bytes received{expected_size})",
            got.1, got.0
        ));
    }
    Ok((record::AssetDigest { name: name.clone(), sha256: expected }, got.2))
}

/// `the OS package gcc`, `the OS packages libgomp1, libvulkan1`.
fn packages_in_words(names: &[String]) -> String {
    format!("the OS package{} {}", if names.len() == 1 { "" } else { "s" }, names.join(", "))
}

/// Installs the OS packages of `needed` that are missing; those it installed.
/// On a system without a package manager nothing can be installed, but a
/// compiler the build needs at run time is looked for (`gcc --version`):
/// the libraries the others provide are `ldd`'s to find.
fn ensure_packages(sys: &mut dyn System, family: PackageFamily, build: &Build) -> Result<Vec<String>, String> {
    let needed = build.packages_for(family);
    if family == PackageFamily::None {
        let wants_gcc = build.packages.values().any(|p| p.iter().any(|n| n == "gcc"));
        if wants_gcc && !sys.run(&crate::system::Cmd::new("gcc", ["--version"])).is_ok_and(|o| o.success()) {
            return Err("needs gcc (Triton builds its kernels' launcher with it when a model first loads), \
                        and this system has none and no package manager the installer can use"
                .into());
        }
        return Ok(vec![]);
    }
    if needed.is_empty() {
        return Ok(vec![]);
    }
    let Some(query) = packages::query_command(family, needed) else {
        unreachable!("a family without a package manager names no packages")
    };
    let out = sys.run(&query).map_err(|e| e.to_string())?;
    let have = packages::parse_installed(family, &out.stdout);
    let missing: Vec<String> = needed.iter().filter(|n| !have.contains(*n)).cloned().collect();
    if missing.is_empty() {
        return Ok(missing);
    }
    let install = packages::install_command(family, &missing).expect("a family with a query installs");
    let out = sys.run(&install).map_err(|e| format!("could not install {}: {e}", missing.join(", ")))?;
    if !out.success() {
        let said = out.stderr.lines().chain(out.stdout.lines()).find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        return Err(format!(
            "could not install the OS package {} (`{}` exited {}: {said})",
            missing.join(", "),
            install.display(),
            out.code.map_or("by a signal".to_string(), |c| c.to_string())
        ));
    }
    Ok(missing)
}
