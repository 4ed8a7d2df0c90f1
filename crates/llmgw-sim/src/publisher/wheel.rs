//! Deterministic Python wheels built from a [`Dist`] of the truth.
//!
//! [`build`] packs a dist as a real wheel (PEP 427, the binary distribution
//! format): each top-level module as a package whose `__init__.py` states
//! the version, and the `.dist-info` directory with `METADATA`, `WHEEL`,
//! `entry_points.txt`, `RECORD` and [`SIM_FILE`], the dist itself as JSON,
//! from which the simulated machine learns what the installed package really
//! carries (its CUDA kernels). Everything that could vary is fixed (entry
//! order, every timestamp 1980-01-01 00:00:00, modes, compression), so the
//! same dist always gives the same bytes and the same sha256. [`metadata`]
//! is the `METADATA` text alone, which an index serves beside the wheel
//! (PEP 658).

use std::io::{Cursor, Write};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

use crate::truth::Dist;
use crate::truth::stub::ElfStub;
use crate::truth::wheel_name::WheelName;

/// The file in a wheel's `.dist-info` directory holding the [`Dist`] as
/// JSON (`serde_json`, pretty, with a final newline): what the package
/// really is, for the simulated machine. Not part of any real wheel.
pub const SIM_FILE: &str = "llmgw-sim.json";

/// Mode of every file in the wheel.
const FILE_MODE: u32 = 0o644;

/// The dist as a wheel: a zip archive, byte-identical from call to call.
///
/// Entries, in this order: for each module `M` of `dist.modules`,
/// `M/__init__.py` (`__version__ = "<version>"`, the local part included)
/// and each file of `dist.elf` as an [`ElfStub`] of its needs, sorted by
/// path; then in `<name>-<version>.dist-info/` (the name escaped as the wheel
/// format says: runs of `-`, `_`, `.` become `_`, lowercase):
/// `METADATA` ([`metadata`]), `WHEEL` (`Wheel-Version: 1.0`, `Generator:
/// llmgw-mock`, `Root-Is-Purelib: true` for a `none-any` wheel, `Build:` for
/// a build tag, one `Tag:` per tag the file name expands to),
/// `entry_points.txt` (`[console_scripts]`, only when `dist.scripts` is not
/// empty), [`SIM_FILE`], and `RECORD` last (`path,sha256=<urlsafe base64,
/// no padding>,<size in bytes>` per file, `RECORD,,` for itself). Deflate
/// compression at the default level, every timestamp 1980-01-01 00:00:00
/// (the earliest a zip can hold), mode 0644.
pub fn build(dist: &Dist) -> Vec<u8> {
    let info = dist.dist_info();
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut modules = dist.modules.clone();
    modules.sort();
    modules.dedup();
    for module in &modules {
        let init = format!(
            "# {} {}, simulated by llmgw: see {info}/{SIM_FILE}.\n__version__ = \"{}\"\n",
            dist.name, dist.version, dist.version
        );
        files.push((format!("{module}/__init__.py"), init.into_bytes()));
    }
    for elf in &dist.elf {
        let stub = ElfStub { needed: elf.needed.clone(), requires: elf.requires.clone(), ..ElfStub::default() };
        files.push((elf.path.clone(), stub.to_bytes()));
    }
    files.push((format!("{info}/METADATA"), metadata(dist).into_bytes()));
    files.push((format!("{info}/WHEEL"), wheel_file(&dist.filename).into_bytes()));
    if !dist.scripts.is_empty() {
        files.push((format!("{info}/entry_points.txt"), entry_points(dist).into_bytes()));
    }
    let mut sim = serde_json::to_string_pretty(dist).expect("a Dist always serializes");
    sim.push('\n');
    files.push((format!("{info}/{SIM_FILE}"), sim.into_bytes()));
    // Module files sorted by path, then the dist-info files sorted, RECORD
    // last (the wheel format encourages dist-info at the end, RECORD last).
    let dist_info_prefix = format!("{info}/");
    files.sort_by(|(a, _), (b, _)| (a.starts_with(&dist_info_prefix), a).cmp(&(b.starts_with(&dist_info_prefix), b)));
    let mut record = String::new();
    for (path, data) in &files {
        record.push_str(&format!("{path},sha256={},{}\n", URL_SAFE_NO_PAD.encode(Sha256::digest(data)), data.len()));
    }
    record.push_str(&format!("{info}/RECORD,,\n"));
    files.push((format!("{info}/RECORD"), record.into_bytes()));

    let options = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        .last_modified_time(DateTime::default())
        .unix_permissions(FILE_MODE);
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    for (path, data) in &files {
        zip.start_file(path.as_str(), options).expect("starting a zip entry in memory cannot fail");
        zip.write_all(data).expect("writing a zip entry to memory cannot fail");
    }
    zip.finish().expect("finishing a zip archive in memory cannot fail").into_inner()
}

/// The dist's core metadata, the wheel's `.dist-info/METADATA` (Core
/// metadata 2.1, packaging.python.org "Core metadata specifications"):
/// `Metadata-Version: 2.1`, `Name:`, `Version:`, `Requires-Python:` when the
/// dist states one, then one `Requires-Dist:` per requirement in the truth's
/// order; one field a line, ending with a newline. An index serves the same
/// text at `<file URL>.metadata` (PEP 658).
pub fn metadata(dist: &Dist) -> String {
    let mut text = format!("Metadata-Version: 2.1\nName: {}\nVersion: {}\n", dist.name, dist.version);
    if let Some(python) = &dist.requires_python {
        text.push_str(&format!("Requires-Python: {python}\n"));
    }
    for req in &dist.requires {
        text.push_str(&format!("Requires-Dist: {req}\n"));
    }
    text
}

/// The `WHEEL` file for a wheel of this file name.
fn wheel_file(filename: &str) -> String {
    let name = WheelName::parse(filename);
    let purelib = name.as_ref().is_some_and(WheelName::is_purelib);
    let mut text = format!("Wheel-Version: 1.0\nGenerator: llmgw-mock\nRoot-Is-Purelib: {purelib}\n");
    if let Some(build) = name.as_ref().and_then(|n| n.build.as_ref()) {
        text.push_str(&format!("Build: {build}\n"));
    }
    for tag in name.map(|n| n.tags()).unwrap_or_default() {
        text.push_str(&format!("Tag: {tag}\n"));
    }
    text
}

/// `entry_points.txt`: one console script per line, `name = module:function`.
fn entry_points(dist: &Dist) -> String {
    let mut text = String::from("[console_scripts]\n");
    for script in &dist.scripts {
        text.push_str(&format!("{script} = {}\n", entry_point(dist, script)));
    }
    text
}

/// The `module:function` a console script runs: the real one for the
/// scripts of the catalog (vllm: `vllm/pyproject.toml`; torchrun:
/// torch's `setup.py`; numpy's `f2py` and `numpy-config`: numpy's
/// `pyproject.toml`; general knowledge, UNCONFIRMED), else
/// `<first module>.__main__:main`.
fn entry_point(dist: &Dist, script: &str) -> String {
    let known = match script {
        "vllm" => Some("vllm.entrypoints.cli.main:main"),
        "torchrun" => Some("torch.distributed.run:main"),
        "f2py" => Some("numpy.f2py.f2py2e:main"),
        "numpy-config" => Some("numpy._configtool:main"),
        _ => None,
    };
    known.map_or_else(
        || {
            let module = dist.modules.first().map_or("main", String::as_str);
            format!("{module}.__main__:main")
        },
        str::to_string,
    )
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;
    use crate::truth::CudaTruth;

    fn kernel() -> Dist {
        Dist {
            name: "sgl-kernel".into(),
            version: "0.3.16".into(),
            filename: "sgl_kernel-0.3.16-cp310-abi3-manylinux2014_x86_64.whl".into(),
            requires_python: Some(">=3.10".into()),
            requires: vec!["torch==2.11.0".into(), "numpy".into()],
            modules: vec!["sgl_kernel".into()],
            scripts: vec![],
            cuda: Some(CudaTruth {
                toolkit: "13.0".into(),
                sass: vec!["9.0".into()],
                ptx: vec![],
                fails_at_import: true,
            }),
            elf: vec![crate::truth::WheelElf {
                path: "sgl_kernel/common_ops.abi3.so".into(),
                needed: vec!["libc.so.6".into()],
                requires: vec!["GLIBC_2.27".into()],
            }],
            upload_time: None,
        }
    }

    fn vllm() -> Dist {
        Dist {
            name: "vllm".into(),
            version: "0.20.1+cu129".into(),
            filename: "vllm-0.20.1+cu129-cp38-abi3-manylinux_2_31_x86_64.whl".into(),
            requires_python: None,
            requires: vec!["torch==2.11.0".into()],
            modules: vec!["vllm".into()],
            scripts: vec!["vllm".into()],
            cuda: None,
            elf: vec![],
            upload_time: None,
        }
    }

    fn read_all(bytes: &[u8]) -> Vec<(String, String)> {
        let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        (0..zip.len())
            .map(|i| {
                let mut f = zip.by_index(i).unwrap();
                assert_eq!(f.last_modified(), Some(DateTime::default()), "{:?}", f.name());
                assert_eq!(f.unix_mode().map(|m| m & 0o777), Some(0o644), "{:?}", f.name());
                let mut text = String::new();
                f.read_to_string(&mut text).unwrap();
                (f.name().unwrap().to_string(), text)
            })
            .collect()
    }

    #[test]
    fn is_byte_identical_between_calls() {
        assert_eq!(build(&kernel()), build(&kernel()));
        assert_eq!(build(&vllm()), build(&vllm()));
        assert_ne!(build(&kernel()), build(&vllm()));
    }

    #[test]
    fn reads_back_with_metadata_record_and_the_truth() {
        let bytes = build(&kernel());
        let files = read_all(&bytes);
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "sgl_kernel/__init__.py",
                "sgl_kernel/common_ops.abi3.so",
                "sgl_kernel-0.3.16.dist-info/METADATA",
                "sgl_kernel-0.3.16.dist-info/WHEEL",
                "sgl_kernel-0.3.16.dist-info/llmgw-sim.json",
                "sgl_kernel-0.3.16.dist-info/RECORD",
            ]
        );
        let get = |name: &str| &files.iter().find(|(n, _)| n == name).unwrap().1;
        assert!(get("sgl_kernel/__init__.py").ends_with("__version__ = \"0.3.16\"\n"));
        // The extension module is a stub the simulated loader reads back.
        let stub = ElfStub::from_bytes(get("sgl_kernel/common_ops.abi3.so").as_bytes()).unwrap();
        assert_eq!(stub.requires, ["GLIBC_2.27"]);
        let meta = get("sgl_kernel-0.3.16.dist-info/METADATA");
        assert_eq!(meta, &metadata(&kernel()));
        assert_eq!(
            meta,
            "Metadata-Version: 2.1\nName: sgl-kernel\nVersion: 0.3.16\nRequires-Python: >=3.10\n\
             Requires-Dist: torch==2.11.0\nRequires-Dist: numpy\n"
        );
        assert_eq!(
            get("sgl_kernel-0.3.16.dist-info/WHEEL"),
            "Wheel-Version: 1.0\nGenerator: llmgw-mock\nRoot-Is-Purelib: false\n\
             Tag: cp310-abi3-manylinux2014_x86_64\n"
        );
        let sim: Dist = serde_json::from_str(get("sgl_kernel-0.3.16.dist-info/llmgw-sim.json")).unwrap();
        assert_eq!(sim, kernel());

        // RECORD: every other file with its urlsafe-base64 sha256 and size.
        let record = get("sgl_kernel-0.3.16.dist-info/RECORD");
        let lines: Vec<&str> = record.lines().collect();
        assert_eq!(lines.len(), files.len());
        assert_eq!(*lines.last().unwrap(), "sgl_kernel-0.3.16.dist-info/RECORD,,");
        for (line, (name, text)) in lines.iter().zip(&files) {
            if name.ends_with("/RECORD") {
                continue;
            }
            let digest = URL_SAFE_NO_PAD.encode(Sha256::digest(text.as_bytes()));
            assert_eq!(*line, format!("{name},sha256={digest},{}", text.len()));
        }
    }

    #[test]
    fn scripts_local_versions_and_compressed_tags() {
        let files = read_all(&build(&vllm()));
        let get = |name: &str| &files.iter().find(|(n, _)| n == name).unwrap().1;
        assert_eq!(
            get("vllm-0.20.1+cu129.dist-info/entry_points.txt"),
            "[console_scripts]\nvllm = vllm.entrypoints.cli.main:main\n"
        );
        assert!(get("vllm/__init__.py").ends_with("__version__ = \"0.20.1+cu129\"\n"));
        assert!(!get("vllm-0.20.1+cu129.dist-info/METADATA").contains("Requires-Python"));

        let tags = |f: &str| WheelName::parse(f).map(|n| n.tags()).unwrap_or_default();
        assert_eq!(
            tags("numpy-2.3.4-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"),
            ["cp312-cp312-manylinux_2_27_x86_64", "cp312-cp312-manylinux_2_28_x86_64"]
        );
        assert_eq!(tags("transformers-4.57.1-py3-none-any.whl"), ["py3-none-any"]);
        assert!(tags("not-a-wheel.tar.gz").is_empty());
        assert!(wheel_file("transformers-4.57.1-py3-none-any.whl").contains("Root-Is-Purelib: true\n"));
        assert!(wheel_file("x-1-7-py3-none-any.whl").contains("Build: 7\nTag: py3-none-any\n"));
        assert_eq!(llmgw_model::pep503::wheel_escape("Sgl-Kernel"), "sgl_kernel");
        assert_eq!(llmgw_model::pep503::wheel_escape("a.-_b"), "a_b");
    }
}
