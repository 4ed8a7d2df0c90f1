//! Bundles: every build a cluster could need, fetched from the publisher on
//! a connected machine ([`create`]) and imported into an offline site's
//! mirror ([`import`]).
//!
//! A bundle is a directory or a tar holding `manifest.json` ([`Manifest`])
//! and each asset at its mirror path (`<engine>/<version>/<asset name>`,
//! [`super::mirror`]). The manifest lists every file with its size in bytes
//! and sha256; its own sha256 is printed and written *beside* the bundle
//! (`<out>.manifest.sha256`), never inside it, so that it can travel apart
//! (a ticket, the control plane) and vouch for the bundle on the other side.
//!
//! Import checks the manifest against that sha256, then every file against
//! the manifest (no file missing, none extra, none changed), all in a
//! staging directory beside the mirror; only then is anything moved into
//! the mirror. One bad file and nothing is imported.

// Bundles are files on the operator's machine: written and read here, as
// archive.rs reads archives. Downloads go through the System trait.
#![allow(clippy::disallowed_methods)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use llmgw_core::offline::builds::builds;
pub use llmgw_core::offline::manifest::{Entry, MANIFEST, Manifest};
use llmgw_core::recipe::Want;
use llmgw_core::release::{self, Release};
use llmgw_core::system::System;
use llmgw_model::host::Arch;

/// Why a bundle could not be made or imported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    /// The input is wrong: a want, a flag, or a bundle that does not check
    /// out (exit 2). Nothing was written.
    #[error("{0}")]
    Refused(String),
    /// The publisher did not give what was asked, or a download did not
    /// match its digest (exit 1). Nothing was written.
    #[error("{0}")]
    Fetch(String),
    /// A file could not be read or written (exit 3).
    #[error("{0}")]
    Io(String),
}

fn io_err(what: &str, path: &Path) -> impl Fn(io::Error) -> BundleError {
    let s = format!("{what} `{}`", path.display());
    move |e| BundleError::Io(format!("{s}: {e}"))
}

/// One asset to fetch, for one build on one architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// Its manifest entry, less size and digest (0 and empty).
    pub entry: Entry,
    /// `owner/name` of the publisher's repository.
    pub repo: String,
    /// The release tag.
    pub tag: String,
}

/// Every asset of every build of every want for every architecture,
/// sorted as the manifest is. A want with a variant carries that build only.
///
/// # Errors
/// [`BundleError::Refused`] naming the want: a Python engine, no build for
/// an architecture, a variant not published for one.
pub fn plan(wants: &[Want], arches: &[Arch]) -> Result<Vec<Planned>, BundleError> {
    if wants.is_empty() || arches.is_empty() {
        return Err(BundleError::Refused("a bundle needs at least one --want and one --arch".into()));
    }
    let mut out = BTreeMap::new();
    for want in wants {
        if want.offline_base.is_some() {
            return Err(BundleError::Refused(format!(
                "want {want}: a bundle is made from the publisher, not a mirror"
            )));
        }
        for &arch in arches {
            let all = builds(want.engine, &want.version, arch)
                .map_err(|e| BundleError::Refused(format!("want {want}: {e}")))?;
            let chosen: Vec<_> =
                all.into_iter().filter(|b| want.variant.as_ref().is_none_or(|v| v == &b.variant)).collect();
            if chosen.is_empty() {
                return Err(BundleError::Refused(format!("want {want}: no such build for {arch}")));
            }
            for b in chosen {
                for asset in &b.assets {
                    let entry = Entry {
                        engine: want.engine,
                        version: want.version.clone(),
                        arch,
                        variant: b.variant.clone(),
                        asset: asset.clone(),
                        size: 0,
                        sha256: String::new(),
                    };
                    out.insert(entry.clone(), Planned { entry, repo: b.repo.clone(), tag: b.tag.clone() });
                }
            }
        }
    }
    Ok(out.into_values().collect())
}

/// Fetches every planned asset from the publisher (release metadata from
/// `github_api`, each asset downloaded with retries and checked against the
/// publisher's digest, through `sys`) into `dir` at its mirror path, and
/// writes `dir/manifest.json`. An asset two builds share is downloaded once.
///
/// # Errors
/// [`BundleError::Fetch`] with the publisher's or the check's words;
/// [`BundleError::Io`] when `dir` cannot be written.
pub fn fetch_into(
    sys: &mut dyn System,
    github_api: &str,
    planned: &[Planned],
    dir: &Path,
) -> Result<Manifest, BundleError> {
    let mut releases: BTreeMap<(String, String), Release> = BTreeMap::new();
    let mut done: BTreeMap<String, (u64, String)> = BTreeMap::new();
    let mut files = Vec::new();
    for p in planned {
        let path = p.entry.path();
        if !done.contains_key(&path) {
            let key = (p.repo.clone(), p.tag.clone());
            if !releases.contains_key(&key) {
                let r =
                    release::fetch(sys, github_api, &p.repo, &p.tag).map_err(|e| BundleError::Fetch(e.to_string()))?;
                releases.insert(key.clone(), r);
            }
            // GitHub's digest, or the release's `<asset>.sha256` when it gives none.
            let asset = release::sidecar::with_digest(sys, &releases[&key], &p.entry.asset)
                .and_then(|a| a.sha256().map(|_| a))
                .map_err(|e| BundleError::Fetch(e.fetched_for(release::Purpose::Bundle).to_string()))?;
            let dest = dir.join(&path);
            if let Some(parent) = dest.parent() {
                sys.create_dir_all(parent).map_err(|e| BundleError::Io(e.to_string()))?;
            }
            let got = release::download::download_verified(sys, &asset, &dest)
                .map_err(|e| BundleError::Fetch(e.to_string()))?;
            let (size, _) = sys
                .sha256_file(&dest)
                .map_err(|e| BundleError::Io(e.to_string()))?
                .ok_or_else(|| BundleError::Io(format!("`{}` vanished after its download", dest.display())))?;
            done.insert(path.clone(), (size, got.sha256));
        }
        let (size, sha256) = done[&path].clone();
        files.push(Entry { size, sha256, ..p.entry.clone() });
    }
    let manifest = Manifest { format: 1, files, llmgw: vec![] };
    sys.write_atomic(&dir.join(MANIFEST), &manifest.to_bytes()).map_err(|e| BundleError::Io(e.to_string()))?;
    Ok(manifest)
}

/// What [`create`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created {
    /// The manifest written into the bundle.
    pub manifest: Manifest,
    /// sha256 of `manifest.json`, lowercase hex; also in [`Created::sha256_file`].
    pub manifest_sha256: String,
    /// The file beside the bundle holding `manifest_sha256`: `<out>.manifest.sha256`.
    pub sha256_file: PathBuf,
    /// Bytes of all assets together.
    pub bytes: u64,
}

/// The file beside a bundle that holds its manifest's sha256:
/// `bundle.tar` -> `bundle.tar.manifest.sha256`, `bundle/` -> `bundle.manifest.sha256`.
pub fn sha256_file_of(out: &Path) -> PathBuf {
    let mut name = out.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".manifest.sha256");
    out.with_file_name(name)
}

/// Makes a bundle at `out`: a tar when its name ends in `.tar`, else a new
/// directory. Everything is fetched into a staging directory beside `out`
/// first, and `out` appears whole or not at all; then the manifest's sha256
/// is written to [`sha256_file_of`]`(out)`. `llmgw` (llmgw's own release
/// files, [`super::installer::find`]) are copied in beside the engines'
/// assets and listed in the manifest's `llmgw`, hashed as they are copied.
///
/// # Errors
/// As [`plan`] and [`fetch_into`]; [`BundleError::Refused`] when `out`
/// exists already (a bundle is never written over another) or its parent
/// is not a directory, or a file of `llmgw` is not what it was when found.
pub fn create(
    sys: &mut dyn System,
    github_api: &str,
    wants: &[Want],
    arches: &[Arch],
    llmgw: &[super::installer::Found],
    out: &Path,
) -> Result<Created, BundleError> {
    let planned = plan(wants, arches)?;
    let as_tar = out_is_tar(out)?;
    let sha256_file = sha256_file_of(out);
    for (flag, path) in [("--out", out), ("the manifest's sha256 file beside it,", sha256_file.as_path())] {
        if fs::symlink_metadata(path).is_ok() {
            return Err(BundleError::Refused(format!(
                "{flag} `{}` exists already; a bundle is written to a new path",
                path.display()
            )));
        }
    }
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(BundleError::Refused(format!(
            "--out `{}`: `{}` is not a directory",
            out.display(),
            parent.display()
        )));
    }
    crate::files::remove_left_by_the_dead(parent, BUNDLE_STAGING);
    let staging = tempfile::Builder::new()
        .prefix(&crate::files::tagged_prefix(BUNDLE_STAGING))
        .tempdir_in(parent)
        .map_err(io_err("cannot stage in", parent))?;
    let tree = staging.path().join("bundle");
    fs::create_dir_all(&tree).map_err(io_err("cannot create", &tree))?;
    let mut manifest = fetch_into(sys, github_api, &planned, &tree)?;
    if !llmgw.is_empty() {
        for found in llmgw {
            let (e, dest) = (&found.entry, tree.join(found.entry.path()));
            let src = fs::File::open(&found.path).map_err(io_err("cannot read", &found.path))?;
            let got = copy_hashing(src, &dest).map_err(io_err("cannot write", &dest))?;
            if got != (e.size, e.sha256.clone()) {
                return Err(BundleError::Refused(format!(
                    "`{}` changed while the bundle was made (sha256 {}, was {})",
                    found.path.display(),
                    got.1,
                    e.sha256
                )));
            }
            set_mode_644(&dest).map_err(io_err("cannot write", &dest))?;
        }
        manifest.llmgw = llmgw.iter().map(|f| f.entry.clone()).collect();
        fs::write(tree.join(MANIFEST), manifest.to_bytes()).map_err(io_err("cannot write", &tree.join(MANIFEST)))?;
    }
    let manifest_bytes = manifest.to_bytes();
    // Readable as the assets are (write_atomic makes a private file).
    set_mode_644(&tree.join(MANIFEST)).map_err(io_err("cannot write", &tree.join(MANIFEST)))?;
    let manifest_sha256 = hex::encode(Sha256::digest(&manifest_bytes));
    // The sha256 file first, then the bundle: a bundle never lies there
    // without it, and one that cannot be placed takes it away again.
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&sha256_file)
        .and_then(|mut f| f.write_all(format!("{manifest_sha256}\n").as_bytes()))
        .map_err(|e| {
            let _ = fs::remove_file(&sha256_file);
            io_err("cannot write", &sha256_file)(e)
        })?;
    let placed = if as_tar {
        let tar = staging.path().join("bundle.tar");
        write_tar(&tree, &manifest, &tar).and_then(|()| fs::rename(&tar, out).map_err(io_err("cannot write", out)))
    } else {
        fs::rename(&tree, out).map_err(io_err("cannot write", out))
    };
    if let Err(e) = placed {
        let _ = fs::remove_file(&sha256_file);
        return Err(e);
    }
    let bytes = manifest.files_by_path().values().map(|(s, _)| s).sum();
    Ok(Created { manifest, manifest_sha256, sha256_file, bytes })
}

/// Whether `--out` names a tar: it ends in `.tar`, in any case. A
/// compressed tar's name (`.tar.gz`, `.tgz`, …) is refused: bundles are
/// plain tar.
///
/// # Errors
/// [`BundleError::Refused`] naming `out`.
pub fn out_is_tar(out: &Path) -> Result<bool, BundleError> {
    let name = out.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    for ext in [".tar.gz", ".tgz", ".tar.xz", ".txz", ".tar.zst", ".tar.bz2", ".gz", ".zst", ".xz", ".bz2", ".zip"] {
        if name.ends_with(ext) {
            return Err(BundleError::Refused(format!(
                "--out `{}`: bundles are plain tar, not compressed; name it .tar (or a directory)",
                out.display()
            )));
        }
    }
    Ok(name.ends_with(".tar"))
}

/// The kinds of staging llmgw leaves beside a bundle or a mirror while it works.
const BUNDLE_STAGING: &str = ".llmgw-bundle-";
const IMPORT_STAGING: &str = ".llmgw-import-";

fn set_mode_644(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o644))
}

/// Writes the bundle in `tree` as a tar at `out`: `manifest.json` first,
/// then every file in manifest order, mode 0644, owner 0, mtime 0, so that
/// the same bundle is the same bytes.
///
/// # Errors
/// [`BundleError::Io`].
pub fn write_tar(tree: &Path, manifest: &Manifest, out: &Path) -> Result<(), BundleError> {
    let file = fs::File::create(out).map_err(io_err("cannot write", out))?;
    let mut tar = tar::Builder::new(io::BufWriter::new(file));
    let header = |size: u64| {
        let mut h = tar::Header::new_gnu();
        h.set_size(size);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        h.set_entry_type(tar::EntryType::Regular);
        h
    };
    let bytes = manifest.to_bytes();
    tar.append_data(&mut header(bytes.len() as u64), MANIFEST, bytes.as_slice())
        .map_err(io_err("cannot write", out))?;
    for (path, (size, _)) in manifest.files_by_path() {
        let src = tree.join(&path);
        let f = fs::File::open(&src).map_err(io_err("cannot read", &src))?;
        tar.append_data(&mut header(size), &path, f).map_err(io_err("cannot write", out))?;
    }
    let mut w = tar.into_inner().map_err(io_err("cannot write", out))?;
    w.flush().map_err(io_err("cannot write", out))?;
    Ok(())
}

/// What [`import`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    /// Mirror paths placed by this import.
    pub placed: Vec<String>,
    /// Mirror paths the mirror already held, byte for byte.
    pub already: Vec<String>,
}

/// Imports the bundle at `bundle` (a directory or a tar) into the mirror
/// directory `mirror`, created if absent (its parent must exist).
///
/// In order, before anything enters the mirror: `manifest.json`'s sha256
/// must be `manifest_sha256` (the one carried apart); the manifest must be
/// well formed ([`Manifest::from_json`]); every file it lists must be in the
/// bundle with its size and sha256, and no other file may be; a file the
/// mirror already holds must be the same bytes. Files are copied into a
/// staging directory beside the mirror while they are hashed, so what is
/// checked is what is placed; then each is renamed into place. Importing a
/// bundle twice places nothing the second time.
///
/// # Errors
/// [`BundleError::Refused`] naming the file (or the manifest) that does not
/// check out; the mirror is then unchanged. [`BundleError::Io`] when a file
/// cannot be read or written.
pub fn import(bundle: &Path, manifest_sha256: &str, mirror: &Path) -> Result<Imported, BundleError> {
    let given = llmgw_model::sha256::Sha256::parse(manifest_sha256.trim())
        .map_err(|_| BundleError::Refused(format!("--manifest-sha256 `{manifest_sha256}` is not 64 hex digits")))?
        .to_string();
    let meta = fs::metadata(bundle).map_err(|e| BundleError::Refused(format!("bundle `{}`: {e}", bundle.display())))?;
    // A bundle is a directory or a tar file: a FIFO would hold the import
    // forever, a device would be read as a tar without end.
    if !meta.is_dir() && !meta.is_file() {
        return Err(BundleError::Refused(format!(
            "bundle `{}` is {}, not a directory or a tar file; nothing was imported",
            bundle.display(),
            crate::files::kind_in_words(meta.file_type())
        )));
    }
    let parent = mirror.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(BundleError::Refused(format!(
            "--mirror `{}`: `{}` is not a directory",
            mirror.display(),
            parent.display()
        )));
    }
    if mirror.exists() && !mirror.is_dir() {
        return Err(BundleError::Refused(format!("--mirror `{}` is not a directory", mirror.display())));
    }
    if meta.is_dir()
        && let (Ok(b), Ok(p)) = (fs::canonicalize(bundle), fs::canonicalize(parent))
        && p.join(mirror.file_name().unwrap_or_default()).starts_with(&b)
    {
        return Err(BundleError::Refused(format!(
            "--mirror `{}` is inside the bundle `{}`; give a mirror outside it",
            mirror.display(),
            bundle.display()
        )));
    }
    crate::files::remove_left_by_the_dead(parent, IMPORT_STAGING);
    let staging = tempfile::Builder::new()
        .prefix(&crate::files::tagged_prefix(IMPORT_STAGING))
        .tempdir_in(parent)
        .map_err(io_err("cannot stage in", parent))?;
    let refuse =
        |what: String| BundleError::Refused(format!("bundle `{}`: {what}; nothing was imported", bundle.display()));

    // Everything the bundle holds, copied into staging and hashed on the way.
    let staged = if meta.is_dir() { stage_dir(bundle, staging.path()) } else { stage_tar(bundle, staging.path()) };
    let staged = match staged {
        Ok(s) => s,
        // A manifest vouched for and malformed says more than what it made of the files.
        Err(e) => {
            let m = fs::read(staging.path().join(MANIFEST)).ok();
            if let Some(m) = m
                && hex::encode(Sha256::digest(&m)) == given
                && let Err(bad) = Manifest::from_json(&String::from_utf8_lossy(&m))
            {
                return Err(refuse(format!("{MANIFEST}: {bad}")));
            }
            return Err(refuse(e));
        }
    };
    let Some((_, got)) = staged.get(MANIFEST) else {
        return Err(refuse(format!("it holds no {MANIFEST}")));
    };
    if got != &given {
        return Err(refuse(format!(
            "{MANIFEST} has sha256 {got}, not the {given} given with --manifest-sha256: it is not the manifest that was published"
        )));
    }
    let text = fs::read_to_string(staging.path().join(MANIFEST)).map_err(|e| refuse(format!("{MANIFEST}: {e}")))?;
    let manifest = Manifest::from_json(&text).map_err(|e| refuse(format!("{MANIFEST}: {e}")))?;
    let listed = manifest.files_by_path();
    for (path, (size, sha)) in &listed {
        match staged.get(path) {
            None => return Err(refuse(format!("`{path}` is in the manifest and missing from the bundle"))),
            Some((s, _)) if s != size => {
                return Err(refuse(format!("`{path}` is {s} bytes; the manifest says {size}")));
            }
            Some((_, h)) if h != sha => {
                return Err(refuse(format!("`{path}` has sha256 {h}; the manifest says {sha}")));
            }
            Some(_) => {}
        }
    }
    if let Some(extra) = staged.keys().find(|p| p.as_str() != MANIFEST && !listed.contains_key(*p)) {
        return Err(refuse(format!("`{extra}` is in the bundle and not in its manifest")));
    }
    // What the mirror already holds must be the same bytes.
    let mut imported = Imported { placed: vec![], already: vec![] };
    for (path, (_, sha)) in &listed {
        let dest = mirror.join(path);
        if let Ok(m) = fs::symlink_metadata(&dest) {
            if !m.is_file() {
                let what = if m.file_type().is_symlink() { "a symbolic link" } else { "not a regular file" };
                return Err(refuse(format!("the mirror's `{path}` is {what}; a mirror holds regular files only",)));
            }
            let (_, h) = hash_file(&dest).map_err(io_err("cannot read", &dest))?;
            if &h != sha {
                return Err(refuse(format!(
                    "the mirror holds `{path}` with sha256 {h}, and the bundle's is {sha}; remove it from the mirror first if it is wrong"
                )));
            }
            imported.already.push(path.clone());
        } else {
            imported.placed.push(path.clone());
        }
    }
    // Every directory on the way to a new file is a real directory of the
    // mirror (a symbolic link there would place files outside it), checked
    // before anything is placed; then the placement is all or nothing.
    for path in &imported.placed {
        let mut at = mirror.to_path_buf();
        let parts: Vec<&str> = path.split('/').collect();
        for part in &parts[..parts.len() - 1] {
            at.push(part);
            match fs::symlink_metadata(&at) {
                Ok(m) if m.file_type().is_symlink() => {
                    let rel = at.strip_prefix(mirror).unwrap_or(&at).display().to_string();
                    return Err(refuse(format!(
                        "the mirror's `{rel}` is a symbolic link; a mirror holds directories and regular files only"
                    )));
                }
                Ok(m) if !m.is_dir() => {
                    let rel = at.strip_prefix(mirror).unwrap_or(&at).display().to_string();
                    return Err(refuse(format!("the mirror's `{rel}` is not a directory")));
                }
                _ => {}
            }
        }
    }
    Placement::place(mirror, staging.path(), &imported.placed).map_err(|why| {
        BundleError::Io(format!("bundle `{}`: {why}; the mirror is as it was, nothing was imported", bundle.display()))
    })?;
    Ok(imported)
}

/// The file in a mirror that says what an import in progress placed, so
/// that a run after a kill can undo it: `{"pid", "dirs", "files"}`.
const JOURNAL: &str = ".llmgw-import-journal.json";

/// An import's placement into a mirror: every directory it made and every
/// file it placed, journaled before the first change, so that a failure
/// (or the next import, after a kill) takes them away again.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Placement {
    /// The importing process.
    pid: u32,
    /// Directories made, relative to the mirror, parents first.
    dirs: Vec<String>,
    /// Files placed, relative to the mirror.
    files: Vec<String>,
}

impl Placement {
    /// Places `files` (relative paths) from `staging` into `mirror`: all of
    /// them, or, when one cannot be placed, none (those placed are removed,
    /// the directories made for them too).
    ///
    /// # Errors
    /// The sentence of the first failure.
    fn place(mirror: &Path, staging: &Path, files: &[String]) -> Result<(), String> {
        Placement::undo_left(mirror);
        if files.is_empty() {
            return Ok(());
        }
        fs::create_dir_all(mirror).map_err(|e| format!("cannot create the mirror `{}`: {e}", mirror.display()))?;
        let mut plan = Placement { pid: std::process::id(), ..Placement::default() };
        for f in files {
            let mut dir = String::new();
            let parts: Vec<&str> = f.split('/').collect();
            for part in &parts[..parts.len() - 1] {
                dir = if dir.is_empty() { part.to_string() } else { format!("{dir}/{part}") };
                if !mirror.join(&dir).exists() && !plan.dirs.contains(&dir) {
                    plan.dirs.push(dir.clone());
                }
            }
        }
        plan.files = files.to_vec();
        let journal = mirror.join(JOURNAL);
        fs::write(&journal, serde_json::to_vec(&plan).expect("a journal serializes"))
            .map_err(|e| format!("cannot write `{}`: {e}", journal.display()))?;
        let result = plan.apply(mirror, staging);
        if result.is_err() {
            plan.undo(mirror);
        }
        let _ = fs::remove_file(&journal);
        result
    }

    fn apply(&self, mirror: &Path, staging: &Path) -> Result<(), String> {
        for d in &self.dirs {
            let dir = mirror.join(d);
            fs::create_dir(&dir).map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
        }
        for f in &self.files {
            let dest = mirror.join(f);
            place(&staging.join(f), &dest).map_err(|e| format!("cannot place `{}`: {e}", dest.display()))?;
        }
        Ok(())
    }

    /// Takes away what this placement made: its files, then its directories.
    fn undo(&self, mirror: &Path) {
        for f in &self.files {
            let _ = fs::remove_file(mirror.join(f));
        }
        for d in self.dirs.iter().rev() {
            let _ = fs::remove_dir(mirror.join(d));
        }
    }

    /// Undoes the placement a killed import left in `mirror` (its journal's
    /// process gone), saying so at info level.
    fn undo_left(mirror: &Path) {
        let journal = mirror.join(JOURNAL);
        let Ok(text) = fs::read(&journal) else { return };
        let Ok(left) = serde_json::from_slice::<Placement>(&text) else { return };
        if left.pid != std::process::id() && Path::new(&format!("/proc/{}", left.pid)).exists() {
            return;
        }
        left.undo(mirror);
        let _ = fs::remove_file(&journal);
        tracing::info!("undid the placement of {} files an interrupted import left in the mirror", left.files.len());
    }
}

/// Moves a staged file to `dest` atomically: a rename, or where the mirror
/// is another file system than its parent (a mount point), a copy beside
/// `dest` renamed over it, so that no reader ever sees half a file.
fn place(src: &Path, dest: &Path) -> io::Result<()> {
    match fs::rename(src, dest) {
        Err(e) if e.kind() == io::ErrorKind::CrossesDevices => {
            let mut name = dest.file_name().unwrap_or_default().to_os_string();
            name.push(".llmgw-partial");
            let tmp = dest.with_file_name(name);
            fs::copy(src, &tmp)?;
            fs::File::open(&tmp)?.sync_all()?;
            fs::rename(&tmp, dest)
        }
        other => other,
    }
}

/// sha256 and size of a file.
fn hash_file(path: &Path) -> io::Result<(u64, String)> {
    llmgw_core::archive::sha256_reader(fs::File::open(path)?)
}

/// Copies `from` into `dest` while hashing it: (bytes, sha256).
fn copy_hashing(mut from: impl Read, dest: &Path) -> io::Result<(u64, String)> {
    if let Some(dir) = dest.parent() {
        fs::create_dir_all(dir)?;
    }
    let mut out = io::BufWriter::new(fs::File::create(dest)?);
    let got = llmgw_core::archive::sha256_copy(&mut from, &mut out)?;
    out.flush()?;
    Ok(got)
}

/// A bundle path as `/`-joined normal components, or why it is refused.
fn bundle_path(p: &Path) -> Result<String, String> {
    let mut parts = Vec::new();
    for c in p.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_str().ok_or_else(|| format!("`{}` is not UTF-8", p.display()))?),
            Component::CurDir => {}
            _ => return Err(format!("`{}` would land outside the mirror", p.display())),
        }
    }
    if parts.is_empty() {
        return Err("an entry has an empty path".into());
    }
    Ok(parts.join("/"))
}

/// Stages every regular file of the directory `dir`; symbolic links and
/// other special files are refused.
fn stage_dir(dir: &Path, staging: &Path) -> Result<BTreeMap<String, (u64, String)>, String> {
    let mut out = BTreeMap::new();
    let mut todo = vec![PathBuf::new()];
    while let Some(rel) = todo.pop() {
        let listing = fs::read_dir(dir.join(&rel)).map_err(|e| format!("cannot list `{}`: {e}", rel.display()))?;
        for entry in listing {
            let entry = entry.map_err(|e| e.to_string())?;
            let rel = rel.join(entry.file_name());
            let kind = entry.file_type().map_err(|e| e.to_string())?;
            if kind.is_dir() {
                todo.push(rel);
            } else if kind.is_file() {
                let name = bundle_path(&rel)?;
                let f = fs::File::open(entry.path()).map_err(|e| format!("cannot read `{name}`: {e}"))?;
                out.insert(name.clone(), copy_hashing(f, &staging.join(&name)).map_err(|e| format!("`{name}`: {e}"))?);
            } else if kind.is_symlink() {
                return Err(format!("`{}` is a symbolic link; a bundle holds regular files only", rel.display()));
            } else {
                return Err(format!("`{}` is not a regular file", rel.display()));
            }
        }
    }
    Ok(out)
}

/// Stages every file of the tar `path`: only regular files and directories
/// with plain relative paths are taken; anything else is refused.
fn stage_tar(path: &Path, staging: &Path) -> Result<BTreeMap<String, (u64, String)>, String> {
    let mut file = fs::File::open(path).map_err(|e| e.to_string())?;
    let mut magic = [0u8; 6];
    let n = file.read(&mut magic).map_err(|e| e.to_string())?;
    let compressed = [&b"\x1f\x8b"[..], b"\x28\xb5\x2f\xfd", b"\xfd7zXZ\0", b"BZh", b"PK\x03\x04"];
    if compressed.iter().any(|m| magic[..n].starts_with(m)) {
        return Err("it is a compressed file; bundles are plain tar (decompress it first)".into());
    }
    let size = file.metadata().map_err(|e| e.to_string())?.len();
    let file = fs::File::open(path).map_err(|e| e.to_string())?;
    let truncated = |e: io::Error| {
        if e.kind() == io::ErrorKind::UnexpectedEof || size % 512 != 0 {
            "the tar is truncated".to_string()
        } else {
            format!("not a tar: {}", String::from_utf8_lossy(e.to_string().as_bytes()).escape_debug())
        }
    };
    let mut tar = tar::Archive::new(io::BufReader::new(file));
    let mut out = BTreeMap::new();
    let mut names = BTreeSet::new();
    for entry in tar.entries().map_err(truncated)? {
        let entry = entry.map_err(truncated)?;
        // Directories are not placed as such (`./` of `tar -C dir -cf … .`);
        // a file's own path makes its parents.
        if entry.header().entry_type() == tar::EntryType::Directory {
            continue;
        }
        let p = entry.path().map_err(|e| format!("not a tar: {e}"))?.into_owned();
        let name = bundle_path(&p)?;
        match entry.header().entry_type() {
            tar::EntryType::Regular | tar::EntryType::Continuous => {}
            other => return Err(format!("`{name}` is a {other:?} entry, not a regular file")),
        }
        if !names.insert(name.clone()) {
            return Err(format!("`{name}` is in the tar twice"));
        }
        let size_of_entry = entry.header().size().map_err(truncated)?;
        let copied = copy_hashing(entry, &staging.join(&name)).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => format!("`{name}`: the tar is truncated"),
            _ => format!("`{name}`: {e}"),
        })?;
        if copied.0 != size_of_entry {
            return Err(format!("`{name}`: the tar is truncated"));
        }
        out.insert(name.clone(), copied);
    }
    if size % 512 != 0 {
        return Err("the tar is truncated".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmgw_core::recipe::Engine;

    fn entry(asset: &str) -> Entry {
        Entry {
            engine: Engine::Uv,
            version: "0.12.20".into(),
            arch: Arch::Amd64,
            variant: "x86_64".into(),
            asset: asset.into(),
            size: 3,
            sha256: "ab".repeat(32),
        }
    }

    #[test]
    fn manifests_are_strict_and_name_the_path() {
        let good = Manifest { format: 1, files: vec![entry("uv-x86_64-unknown-linux-gnu.tar.gz")], llmgw: vec![] };
        let text = String::from_utf8(good.to_bytes()).unwrap();
        assert_eq!(Manifest::from_json(&text).unwrap(), good);
        let bad = text.replace("\"uv\"", "\"ollama\"");
        assert!(Manifest::from_json(&bad).unwrap_err().starts_with("files[0].engine: unknown engine `ollama`"));
        let bad = text.replace("uv-x86_64-unknown-linux-gnu.tar.gz", "../x");
        assert!(Manifest::from_json(&bad).unwrap_err().starts_with("files[0].asset: `../x` is not a plain file name"));
    }

    #[test]
    fn a_bundle_plan_is_every_build_per_architecture_and_refuses_python_engines() {
        let wants = [Want::parse("uv@0.12.20").unwrap(), Want::parse("llama.cpp@b11459").unwrap()];
        let p = plan(&wants, &[Arch::Amd64, Arch::Arm64]).unwrap();
        // llama.cpp: amd64 cpu 1 + cuda 2 + 2 + vulkan 1; arm64 cpu 1 + cuda 2 + vulkan 1; uv: 2.
        assert_eq!(p.len(), 6 + 4 + 2);
        let e = plan(&[Want::parse("vllm@0.20.1").unwrap()], &[Arch::Amd64]).unwrap_err().to_string();
        assert!(e.contains("offline bundle does not carry"), "{e}");
    }

    #[test]
    fn the_sha256_file_is_beside_the_bundle() {
        assert_eq!(sha256_file_of(Path::new("/x/b.tar")), Path::new("/x/b.tar.manifest.sha256"));
        assert_eq!(sha256_file_of(Path::new("b")), Path::new("b.manifest.sha256"));
    }

    #[test]
    fn a_placement_that_fails_halfway_takes_back_what_it_placed() {
        let t = tempfile::tempdir().unwrap();
        let (mirror, staging) = (t.path().join("mirror"), t.path().join("staging"));
        fs::create_dir_all(staging.join("a")).unwrap();
        fs::write(staging.join("a/x"), "x").unwrap();
        fs::create_dir_all(mirror.join("kept")).unwrap();
        fs::write(mirror.join("kept/old"), "old").unwrap();
        // `b/y` is not in staging: its rename fails after `a/x` was placed.
        let e = Placement::place(&mirror, &staging, &["a/x".into(), "b/y".into()]).unwrap_err();
        assert!(e.starts_with("cannot place"), "{e}");
        let left: Vec<_> = fs::read_dir(&mirror).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left, ["kept"], "the mirror as it was: no a/, no b/, no journal");
        assert_eq!(fs::read_to_string(mirror.join("kept/old")).unwrap(), "old");
    }

    #[test]
    fn the_placement_a_killed_import_left_is_undone_by_the_next() {
        let t = tempfile::tempdir().unwrap();
        let mirror = t.path().join("mirror");
        fs::create_dir_all(mirror.join("uv/0.12.20")).unwrap();
        fs::write(mirror.join("uv/0.12.20/half"), "placed").unwrap();
        // A process that is gone: pid 0 has no /proc entry.
        let left =
            Placement { pid: 0, dirs: vec!["uv".into(), "uv/0.12.20".into()], files: vec!["uv/0.12.20/half".into()] };
        fs::write(mirror.join(JOURNAL), serde_json::to_vec(&left).unwrap()).unwrap();
        Placement::place(&mirror, t.path(), &[]).unwrap();
        assert_eq!(fs::read_dir(&mirror).unwrap().count(), 0, "undone, journal and all");
    }
}
