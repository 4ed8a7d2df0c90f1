//! The installer: wants in, [`Status`]es out, every effect through the
//! [`System`] trait (DESIGN.md section 6).
//!
//! For one want: the recipe's [`Plan`]; an install already recorded whose
//! files still verify and which still works is `ready` without a download;
//! otherwise each candidate in turn — free disk, OS packages, release
//! metadata, download and sha256 against the publisher's digest, safe unpack
//! into staging, the binary, `ldd`, the version command, the GPU listing —
//! and the first that passes is committed by rename, its record written
//! last. A failed build costs its download: its staging is removed and the
//! next is tried.

mod checks;
pub mod record;
pub mod status;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::host::{Host, PackageFamily};
use crate::parse::packages;
use crate::recipe::{self, Build, Engine, Plan, Refusal, Want};
use crate::release::{self, Release};
use crate::system::System;

pub use record::{InstallRecord, Paths};
pub use status::{Attempt, Outcome, State, Status};

/// Where and from what the installer installs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The engines directory: `/opt/llmgw/engines`.
    pub engines_dir: PathBuf,
    /// Base URL of GitHub's REST API ([`release::GITHUB_API`], or the fake server's).
    pub github_api: String,
}

/// Converges every want in order; one status per want.
pub fn converge(sys: &mut dyn System, host: &Host, cfg: &Config, wants: &[Want]) -> Vec<Status> {
    let mut releases = Releases::default();
    wants
        .iter()
        .map(|w| converge_one(sys, host, cfg, w, &mut releases))
        .collect()
}

/// Release metadata fetched during one pass, by (repo, tag): builds of one
/// release share it.
#[derive(Debug, Default)]
pub struct Releases(BTreeMap<(String, String), Result<Release, String>>);

/// Converges one want.
pub fn converge_one(sys: &mut dyn System, host: &Host, cfg: &Config, want: &Want, releases: &mut Releases) -> Status {
    let _span = tracing::info_span!("converge", want = %want).entered();
    match recipe::plan(want, host) {
        Ok(plan) => install_plan(sys, host, cfg, want, plan, releases),
        Err(Refusal::NotHere { reason }) => refused(want, State::NotHere, reason, vec![]),
        Err(Refusal::Unsupported { reason, excluded }) => refused(want, State::Unsupported, reason, excluded),
    }
}

fn refused(want: &Want, state: State, detail: String, excluded: Vec<recipe::Exclusion>) -> Status {
    Status {
        engine: want.engine,
        version: want.version.clone(),
        variant: None,
        state,
        detail,
        note: None,
        binary: None,
        attempts: excluded
            .into_iter()
            .map(|e| Attempt {
                variant: e.variant,
                outcome: Outcome::LeftOut,
                reason: e.reason,
            })
            .collect(),
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

    // 1. An install already recorded, in the recipe's order of preference.
    for build in &plan.candidates {
        let paths = Paths::new(&cfg.engines_dir, want.engine, build);
        match verify_installed(sys, host, build, &paths) {
            Verified::Absent => {}
            Verified::Whole(binary, why) => {
                attempts.push(Attempt {
                    variant: build.variant.clone(),
                    outcome: Outcome::Verified,
                    reason: why,
                });
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
                attempts.push(Attempt {
                    variant: build.variant.clone(),
                    outcome: Outcome::Stale,
                    reason: format!("installed earlier and removed: {why}"),
                });
            }
        }
    }

    // 2. Each candidate in turn.
    for build in &plan.candidates {
        let _span = tracing::info_span!("build", variant = %build.variant).entered();
        let paths = Paths::new(&cfg.engines_dir, want.engine, build);
        let result = install_build(sys, host, cfg, want.engine, build, &paths, releases);
        let _ = sys.remove(&paths.staging);
        match result {
            Ok((binary, why)) => {
                let how = format!("installed: {why}");
                attempts.push(Attempt {
                    variant: build.variant.clone(),
                    outcome: Outcome::Installed,
                    reason: why,
                });
                attempts.extend(left_out(&plan));
                notes.extend(build.note.clone());
                return ready(want, build, binary, notes, attempts, &how);
            }
            Err(why) => {
                tracing::info!("build failed: {why}");
                failures.push(format!("{}: {why}", build.variant));
                attempts.push(Attempt {
                    variant: build.variant.clone(),
                    outcome: Outcome::Failed,
                    reason: why,
                });
            }
        }
    }
    attempts.extend(left_out(&plan));
    Status {
        engine: want.engine,
        version: want.version.clone(),
        variant: None,
        state: State::Failed,
        detail: format!(
            "no build of {} {} works on this node: {}",
            want.engine,
            want.version,
            failures.join("; ")
        ),
        note: join_notes(notes),
        binary: None,
        attempts,
    }
}

fn left_out(plan: &Plan) -> impl Iterator<Item = Attempt> + '_ {
    plan.excluded.iter().map(|e| Attempt {
        variant: e.variant.clone(),
        outcome: Outcome::LeftOut,
        reason: e.reason.clone(),
    })
}

fn ready(want: &Want, build: &Build, binary: PathBuf, notes: Vec<String>, attempts: Vec<Attempt>, how: &str) -> Status {
    Status {
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
    Whole(PathBuf, String),
    Broken(String),
}

/// Whether an install of `build` is recorded, whole and working.
fn verify_installed(sys: &mut dyn System, host: &Host, build: &Build, paths: &Paths) -> Verified {
    let record = match sys.read(&paths.record) {
        Ok(Some(bytes)) => match serde_json::from_slice::<InstallRecord>(&bytes) {
            Ok(r) => r,
            Err(e) => return Verified::Broken(format!("its install record is unreadable ({e})")),
        },
        Ok(None) => return Verified::Absent,
        Err(e) => return Verified::Broken(e.to_string()),
    };
    for f in &record.files {
        match sys.sha256_file(&paths.install.join(&f.path)) {
            Ok(Some(h)) if h == f.sha256 => {}
            Ok(Some(_)) => return Verified::Broken(format!("{} no longer matches its sha256", f.path)),
            Ok(None) => return Verified::Broken(format!("{} is missing", f.path)),
            Err(e) => return Verified::Broken(e.to_string()),
        }
    }
    let binary = paths.install.join(&record.binary);
    match works(sys, host, build, &binary) {
        Ok(why) => Verified::Whole(binary, why),
        Err(why) => Verified::Broken(why),
    }
}

/// The checks that an unpacked build runs here: `ldd`, version, GPU.
fn works(sys: &mut dyn System, host: &Host, build: &Build, binary: &Path) -> Result<String, String> {
    checks::libraries_load(sys, build, binary)?;
    let version = checks::version_runs(sys, build, binary)?;
    let gpus = checks::gpus_listed(sys, build, binary, host)?;
    Ok(if gpus.is_empty() {
        version
    } else {
        format!("lists {gpus}")
    })
}

/// Installs one build into staging, checks it, and commits it.
fn install_build(
    sys: &mut dyn System,
    host: &Host,
    cfg: &Config,
    engine: Engine,
    build: &Build,
    paths: &Paths,
    releases: &mut Releases,
) -> Result<(PathBuf, String), String> {
    // Free disk, before anything is written.
    let free = sys.disk_free(&cfg.engines_dir).map_err(|e| e.to_string())?;
    let need = build.free_gb.saturating_mul(1_000_000_000);
    if free < need {
        return Err(format!(
            "needs {} GB free for the engines, and {:.1} GB is free",
            build.free_gb,
            free as f64 / 1e9
        ));
    }

    let installed = ensure_packages(sys, host.os.package_family, build.packages_for(host.os.package_family))?;

    // Release metadata, once per release per pass.
    let key = (build.repo.clone(), build.tag.clone());
    let release = releases
        .0
        .entry(key)
        .or_insert_with(|| release::fetch(sys, &cfg.github_api, &build.repo, &build.tag).map_err(|e| e.to_string()))
        .clone()?;

    sys.remove(&paths.staging).map_err(|e| e.to_string())?;
    let (downloads, tree) = (paths.downloads(), paths.tree());
    sys.create_dir_all(&downloads).map_err(|e| e.to_string())?;
    sys.create_dir_all(&tree).map_err(|e| e.to_string())?;

    // Every asset verified before any is unpacked: nothing unverified is
    // ever written into the tree, let alone run.
    let mut digests = Vec::new();
    for name in &build.assets {
        let asset = release.asset(name).map_err(|e| e.to_string())?;
        let expected = asset.sha256().map_err(|e| e.to_string())?;
        let file = downloads.join(name);
        let got = sys
            .download(&asset.browser_download_url, &file)
            .map_err(|e| format!("downloading {name}: {e}"))?;
        if got.sha256 != expected {
            return Err(format!(
                "{name}: sha256 {} does not match the publisher's digest {expected} ({} bytes received, {} expected)",
                got.sha256, got.bytes, asset.size
            ));
        }
        digests.push(record::AssetDigest {
            name: name.clone(),
            sha256: expected,
        });
    }
    let mut files = Vec::new();
    for name in &build.assets {
        let placed = sys
            .unpack(&downloads.join(name), &tree)
            .map_err(|e| format!("unpacking {name}: {e}"))?;
        files.extend(placed);
    }
    files.sort();
    files.dedup_by(|a, b| a.path == b.path);

    let binary = checks::find_binary(sys, &tree, &build.binary)?
        .ok_or_else(|| format!("the archives hold no {}", build.binary))?;
    let mut why = works(sys, host, build, &binary)?;
    if !installed.is_empty() {
        why = format!("installed the OS package {}; {why}", installed.join(", "));
    }

    // Commit: the tree by rename, then the record, last.
    let rel = binary
        .strip_prefix(&tree)
        .map_err(|_| "the binary is outside the tree".to_string())?
        .to_path_buf();
    if let Some(parent) = paths.install.parent() {
        sys.create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    sys.remove(&paths.install).map_err(|e| e.to_string())?;
    sys.rename(&tree, &paths.install).map_err(|e| e.to_string())?;
    let record = InstallRecord {
        engine,
        version: build.version.clone(),
        variant: build.variant.clone(),
        binary: rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        files,
        assets: digests,
        installed_at: sys.now(),
    };
    let json = serde_json::to_vec_pretty(&record).expect("a record always serializes");
    sys.write_atomic(&paths.record, &json).map_err(|e| e.to_string())?;
    Ok((paths.install.join(rel), why))
}

/// Installs the OS packages of `needed` that are missing; those it installed.
fn ensure_packages(sys: &mut dyn System, family: PackageFamily, needed: &[String]) -> Result<Vec<String>, String> {
    if needed.is_empty() {
        return Ok(vec![]);
    }
    let Some(query) = packages::query_command(family, needed) else {
        return Err(format!(
            "needs the OS packages {}, and this system has no package manager the installer can use",
            needed.join(", ")
        ));
    };
    let out = sys.run(&query).map_err(|e| e.to_string())?;
    let have = packages::parse_installed(family, &out.stdout);
    let missing: Vec<String> = needed.iter().filter(|n| !have.contains(*n)).cloned().collect();
    if missing.is_empty() {
        return Ok(missing);
    }
    let install = packages::install_command(family, &missing).expect("a family with a query installs");
    let out = sys
        .run(&install)
        .map_err(|e| format!("could not install {}: {e}", missing.join(", ")))?;
    if !out.success() {
        let said = out
            .stderr
            .lines()
            .chain(out.stdout.lines())
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim();
        return Err(format!(
            "could not install the OS package {} (`{}` exited {}: {said})",
            missing.join(", "),
            install.display(),
            out.code.map_or("by a signal".to_string(), |c| c.to_string())
        ));
    }
    Ok(missing)
}
