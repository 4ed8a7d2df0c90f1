//! `llmgw inspect` against NVIDIA's own tools: every fixture of
//! `tests/fixtures/cuda/` (made by `ci/cuda-fixtures.sh` with nvcc 13.5 and
//! NVRTC/nvFatbin 12.9) is inspected and compared with the listings saved
//! beside it: `cuobjdump --list-elf --list-ptx` (`.cuobjdump.txt`), with
//! `-all` (`.cuobjdump-all.txt`), the header lines of `cuobjdump -all -elf
//! -ptx` (`.cuobjdump-headers.txt`) and `readelf -d -V --dyn-syms -W`
//! (`.readelf.txt`). Then archives, directories, the command line and every
//! kind of bad input.

use std::io::Write;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use llmgw_core::archive::Limits;
use llmgw_core::inspect::{EntryKind, FileReport, InspectError};
use llmgw_sim::truth::stub::{Backend, ElfStub};
use llmgw_system::walk::inspect_path;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cuda")
}

/// Every fixture library's name, without `.so`.
fn fixture_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures())
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".so").map(String::from))
        .collect();
    names.sort();
    assert_eq!(names.len(), 14, "{names:?}");
    names
}

fn listing(name: &str, ext: &str) -> String {
    std::fs::read_to_string(fixtures().join(format!("{name}.{ext}"))).unwrap()
}

fn inspect_one(path: &Path) -> FileReport {
    let mut i = inspect_path(path, Limits::default()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(i.files.len(), 1);
    i.files.remove(0)
}

fn llmgw() -> Command {
    Command::cargo_bin("llmgw").unwrap()
}

/// `ELF file    1: ggml_mix.1.sm_86.cubin` → ("ELF", "sm_86").
fn listed(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let (kind, name) = l.split_once(" file")?;
            let name = name.rsplit(": ").next()?;
            let (stem, _ext) = name.rsplit_once('.')?;
            Some((kind.to_string(), stem.rsplit('.').next()?.to_string()))
        })
        .collect()
}

fn kind_word(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::Elf => "ELF",
        EntryKind::Ptx => "PTX",
        _ => "other",
    }
}

#[test]
fn every_fixture_lists_what_cuobjdump_lists() {
    for name in fixture_names() {
        let f = inspect_one(&fixtures().join(format!("{name}.so")));
        // --list-elf --list-ptx reads .nv_fatbin alone, and names an sm_100f cubin sm_100.
        let ours: Vec<(String, String)> = f
            .kernels
            .iter()
            .filter(|k| k.section == ".nv_fatbin")
            .map(|k| (kind_word(k.entry.kind).to_string(), k.entry.listing_target()))
            .collect();
        assert_eq!(ours, listed(&listing(&name, "cuobjdump.txt")), "{name}: --list-elf --list-ptx");
        // -all adds __nv_relfatbin.
        let all: Vec<(String, String)> =
            f.kernels.iter().map(|k| (kind_word(k.entry.kind).to_string(), k.entry.listing_target())).collect();
        assert_eq!(all, listed(&listing(&name, "cuobjdump-all.txt")), "{name}: -all");
    }
}

/// One header block of `cuobjdump -all -elf -ptx`: kind, `arch =`, `code
/// version =`, and whether it (or the concatenated entry holding it) says
/// `compressed`.
fn header_blocks(text: &str) -> Vec<(String, String, String, bool)> {
    let mut out: Vec<(String, String, String, bool)> = Vec::new();
    let mut concat_compressed = false;
    let mut in_concat = false;
    for raw in text.lines() {
        let nested = raw.starts_with('\t');
        let l = raw.trim();
        if let Some(kind) = l.strip_prefix("Fatbin ").and_then(|r| r.strip_suffix(" code:")) {
            if kind == "concatenated entry" {
                (in_concat, concat_compressed) = (true, false);
                continue;
            }
            if !nested {
                in_concat = false;
            }
            let kind = if kind == "elf" { "ELF" } else { "PTX" };
            out.push((kind.into(), String::new(), String::new(), in_concat && concat_compressed));
        } else if l == "compressed" {
            match out.last_mut() {
                Some(b) if !in_concat || nested => b.3 = true,
                _ => concat_compressed = true,
            }
        } else if let Some(a) = l.strip_prefix("arch = ") {
            out.last_mut().unwrap().1 = a.to_string();
        } else if let Some(v) = l.strip_prefix("code version = ")
            && let Some(b) = out.last_mut().filter(|_| !in_concat || nested)
        {
            b.2 = v.to_string();
        }
    }
    out
}

#[test]
fn isa_versions_targets_and_compression_match_cuobjdumps_headers() {
    for name in fixture_names() {
        let f = inspect_one(&fixtures().join(format!("{name}.so")));
        let ours: Vec<(String, String, String, bool)> = f
            .kernels
            .iter()
            .map(|k| {
                let e = &k.entry;
                let (a, b) = e.code_version;
                (kind_word(e.kind).to_string(), e.target.to_string(), format!("[{a},{b}]"), e.compressed())
            })
            .collect();
        assert_eq!(ours, header_blocks(&listing(&name, "cuobjdump-headers.txt")), "{name}");
        for k in &f.kernels {
            let e = &k.entry;
            assert_eq!(e.ptx_isa.is_some(), e.kind == EntryKind::Ptx, "{name}: {e:?}");
        }
    }
}

/// What `readelf -d -V` says: NEEDED, SONAME, RUNPATH, and each library's version needs.
type Readelf = (Vec<String>, Option<String>, Option<String>, Vec<(String, Vec<String>)>);

/// `(NEEDED)  Shared library: [libc.so.6]` and its kin, and the version needs.
fn readelf_facts(text: &str) -> Readelf {
    let bracket = |l: &str| l.rsplit_once('[').map(|(_, r)| r.trim_end_matches(']').to_string());
    let mut needed = Vec::new();
    let (mut soname, mut runpath) = (None, None);
    let mut needs: Vec<(String, Vec<String>)> = Vec::new();
    let mut in_needs = false;
    for l in text.lines() {
        if l.contains("(NEEDED)") {
            needed.extend(bracket(l));
        } else if l.contains("(SONAME)") {
            soname = bracket(l);
        } else if l.contains("(RUNPATH)") {
            runpath = bracket(l);
        } else if l.starts_with("Version needs section") {
            in_needs = true;
        } else if l.starts_with("Version ") {
            in_needs = false;
        } else if in_needs && let Some((_, file)) = l.split_once("File: ") {
            needs.push((file.split_whitespace().next().unwrap().to_string(), Vec::new()));
        } else if in_needs && let Some((_, name)) = l.split_once("Name: ") {
            needs.last_mut().unwrap().1.push(name.split_whitespace().next().unwrap().to_string());
        }
    }
    (needed, soname, runpath, needs)
}

#[test]
fn needed_soname_runpath_and_version_needs_match_readelf() {
    for name in fixture_names() {
        let f = inspect_one(&fixtures().join(format!("{name}.so")));
        let (needed, soname, runpath, needs) = readelf_facts(&listing(&name, "readelf.txt"));
        // NVRTC's fixtures are linked without any library; nvcc's all link libcudart.
        assert_eq!(needed.is_empty(), name.starts_with("cuda129"), "{name}: {needed:?}");
        assert_eq!(f.elf.needed, needed, "{name}");
        assert_eq!((&f.elf.soname, &f.elf.runpath), (&soname, &runpath), "{name}");
        let ours: Vec<(String, Vec<String>)> =
            f.elf.version_needs.iter().map(|n| (n.library.clone(), n.versions.clone())).collect();
        assert_eq!(ours, needs, "{name}");
        assert_eq!(f.cudart(), needed.iter().find(|n| n.starts_with("libcudart")).map(String::as_str));
    }
}

#[test]
fn ggml_mix_sums_up_to_its_floors_kernels_and_drivers() {
    let i = inspect_path(&fixtures().join("ggml_mix.so"), Limits::default()).unwrap();
    let s = &i.summary;
    let names = |t: &[llmgw_core::inspect::Target]| t.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ");
    assert_eq!(names(&s.sass), "sm_86 sm_89 sm_120a sm_121a");
    assert_eq!(names(&s.ptx), "sm_75 sm_80 sm_90");
    assert_eq!((s.images, s.compressed, s.ptx_isa.clone()), (11, 3, vec![(9, 5)]));
    assert_eq!(s.toolkit.as_ref().map(|t| t.version.as_str()), Some("13.5"));
    assert_eq!(s.floors[0].as_ref().map(|f| f.version.to_string()), Some("2.2.5".into()));
    // nvcc 13.5's PTX: no driver the table knows compiles it (13.4's is 615).
    assert_eq!((s.sass_driver_min(), s.ptx_driver_min()), (Some(580), None));
    assert_eq!(s.ptx_jit_unknown.as_deref(), Some("13.5"));
    // The fixtures built by NVRTC 12.9 name CUDA 12.9 by their PTX ISA 8.8.
    let cuda129 = inspect_path(&fixtures().join("cuda129.so"), Limits::default()).unwrap();
    assert_eq!(cuda129.summary.toolkit.map(|t| (t.version, t.from)), Some(("12.9".into(), "PTX ISA 8.8".into())));
}

#[test]
fn the_fixture_directory_inspects_every_library_and_skips_the_rest() {
    let i = inspect_path(&fixtures(), Limits::default()).unwrap();
    assert_eq!(i.files.len(), 14);
    assert_eq!(i.skipped.not_elf, 14 * 5 + 2, "the listings, kernels.cu and TOOLS.txt");
    let paths: Vec<&str> = i.files.iter().map(|f| f.path.as_str()).collect();
    assert!(paths.is_sorted() && paths.contains(&"family_f.so"), "{paths:?}");
    let sass = i.summary.sass.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ");
    assert_eq!(sass, "sm_86 sm_89 sm_90a sm_100f sm_100a sm_120f sm_120a sm_121a");
}

/// A `.tar.gz` holding `files` (name, bytes).
fn tar_gz(path: &Path, files: &[(&str, &[u8])]) {
    let gz = flate2::write::GzEncoder::new(std::fs::File::create(path).unwrap(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    for (name, bytes) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o755);
        tar.append_data(&mut h, name, *bytes).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap();
}

#[test]
fn archives_are_read_member_by_member_small_and_large() {
    let dir = tempfile::tempdir().unwrap();
    let so = std::fs::read(fixtures().join("ggml_mix.so")).unwrap();
    // Bytes after the last section change nothing: 17 MiB goes through a temporary file.
    let mut large = so.clone();
    large.resize(17 << 20, 0);
    let tgz = dir.path().join("build.tgz");
    tar_gz(&tgz, &[("top/README.md", b"text"), ("top/lib/a.so", &so), ("top/lib/large.so", &large)]);
    let direct = inspect_one(&fixtures().join("ggml_mix.so"));
    let i = inspect_path(&tgz, Limits::default()).unwrap();
    assert_eq!(i.files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["top/lib/a.so", "top/lib/large.so"]);
    assert_eq!((i.files[0].elf.clone(), i.files[0].kernels.clone()), (direct.elf.clone(), direct.kernels.clone()));
    assert_eq!(i.files[1].kernels, direct.kernels);
    assert_eq!((i.files[1].bytes, i.skipped.not_elf), (17 << 20, 1));

    let whl = dir.path().join("pkg-1.0-py3-none-manylinux_2_28_x86_64.whl");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&whl).unwrap());
    let opts = zip::write::SimpleFileOptions::default();
    zip.start_file("pkg/__init__.py", opts).unwrap();
    zip.write_all(b"").unwrap();
    zip.start_file("pkg/_C.so", opts).unwrap();
    zip.write_all(&so).unwrap();
    zip.finish().unwrap();
    let w = inspect_path(&whl, Limits::default()).unwrap();
    assert_eq!(w.files.len(), 1);
    assert_eq!((w.files[0].path.as_str(), &w.files[0].kernels), ("pkg/_C.so", &direct.kernels));

    // One file keeps its name as it is written.
    std::fs::write(dir.path().join("Upper.SO"), &so).unwrap();
    assert_eq!(inspect_one(&dir.path().join("Upper.SO")).path, "Upper.SO");

    // Limits hold: a member larger than allowed is refused, not copied.
    let small = Limits { max_bytes: 1 << 20, max_entries: 100 };
    let e = inspect_path(&tgz, small).unwrap_err();
    assert!(e.to_string().contains("`top/lib/large.so` in"), "{e}");
    assert!(matches!(e, InspectError::TooLarge { .. }));
}

fn bad(path: &Path, words: &[&str]) {
    let out = llmgw().arg("inspect").arg(path).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}: {stderr}", path.display());
    assert!(out.stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    for w in words {
        assert!(stderr.contains(w), "{}: `{stderr}` should say `{w}`", path.display());
    }
}

#[test]
fn bad_input_is_one_line_naming_the_file_and_offset_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let so = std::fs::read(fixtures().join("ggml_mix.so")).unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let p = d.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    bad(&write("notes.txt", b"<!DOCTYPE html>"), &["notes.txt` is not an ELF file (it starts with 3c 21 44 4f)"]);
    bad(&write("empty.so", b""), &["empty.so` is not an ELF file (it is empty (0 bytes))"]);
    bad(&write("cut.so", &so[..0x3000]), &["cut.so`", "offset 0xe1e8", "past the end of the file (12288 bytes)"]);
    bad(&write("elf-header.so", &so[..20]), &["elf-header.so`", "offset 0x0"]);
    bad(&write("magic-only.so", b"\x7fELF"), &["offset 0x0: cut short: 4 bytes, less than an ELF header"]);
    // An archive named as something else says what it is and what to name it.
    let mut plain = tar::Builder::new(std::fs::File::create(d.join("plain.bin")).unwrap());
    let mut h = tar::Header::new_ustar();
    h.set_size(so.len() as u64);
    h.set_mode(0o755);
    plain.append_data(&mut h, "lib/ggml_mix.so", so.as_slice()).unwrap();
    plain.into_inner().unwrap();
    bad(
        &d.join("plain.bin"),
        &["plain.bin` is not an ELF file", "which is a tar archive: inspect reads an archive named .tar"],
    );
    std::fs::copy(d.join("plain.bin"), d.join("plain.tar")).unwrap();
    let read = inspect_path(&d.join("plain.tar"), Limits::default()).unwrap();
    assert_eq!(read.files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["lib/ggml_mix.so"]);
    tar_gz(&d.join("gz.bin"), &[("lib/ggml_mix.so", &so)]);
    bad(&d.join("gz.bin"), &["gz.bin` is not an ELF file", "which is gzip data", ".tar.gz or .tgz"]);
    // The fatbin's first container says it is 1 TiB long (.nv_fatbin is at 0x2030).
    let mut big = so.clone();
    big[0x2038..0x2040].copy_from_slice(&(1u64 << 40).to_le_bytes());
    bad(&write("fatbin-size.so", &big), &["fatbin-size.so`: section .nv_fatbin", "offset 0x2040", "container needs"]);
    // A compressed PTX entry whose compressed size is larger than what it stores.
    let f = inspect_one(&fixtures().join("ggml_mix.so"));
    let ptx = f.kernels.iter().find(|k| k.entry.kind == EntryKind::Ptx && k.entry.compressed()).unwrap();
    let at = ptx.entry.offset as usize;
    let mut lying = so.clone();
    lying[at + 0x10..at + 0x14].copy_from_slice(&u32::MAX.to_le_bytes());
    bad(&write("lying.so", &lying), &["lying.so`", &format!("offset {at:#x}"), "lengths lie"]);
    bad(&d.join("missing.so"), &["missing.so`"]);
    // Inside an archive the member is named with its archive.
    let tgz = d.join("cut.tar.gz");
    tar_gz(&tgz, &[("lib/cut.so", &so[..0x3000])]);
    bad(&tgz, &["`lib/cut.so` in `", "cut.tar.gz`", "offset 0xe1e8"]);
    bad(&write("garbage.whl", b"PK not really"), &["archive `", "garbage.whl`"]);

    // A symbolic link loop in a directory.
    let tree = d.join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::os::unix::fs::symlink("b", tree.join("a")).unwrap();
    std::os::unix::fs::symlink("a", tree.join("b")).unwrap();
    bad(&tree, &["tree/a` is a symbolic link that leads round in a loop"]);
}

#[test]
fn in_a_directory_files_that_are_not_elf_and_links_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("README"), "text").unwrap();
    std::fs::write(d.join("empty.so"), "").unwrap();
    std::fs::copy(fixtures().join("sm90a.so"), d.join("sm90a.so")).unwrap();
    std::os::unix::fs::symlink("sm90a.so", d.join("libsm90a.so")).unwrap();
    std::os::unix::fs::symlink(fixtures().join("ggml_mix.so"), d.join("outside.so")).unwrap();
    let i = inspect_path(d, Limits::default()).unwrap();
    assert_eq!(i.files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["sm90a.so"]);
    assert_eq!(i.skipped.not_elf, 2);
    let links: Vec<(&str, &str)> = i.skipped.links.iter().map(|l| (l.path.as_str(), l.lands)).collect();
    assert_eq!(links, [("libsm90a.so", "in the tree"), ("outside.so", "out of the tree")]);
    let out = llmgw().arg("inspect").arg(d).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("1 ELF file; skipped 2 not ELF, 2 links not followed"), "{text}");
}

#[test]
fn json_writes_each_file_as_the_truths_elf_stub() {
    let out = llmgw().args(["inspect", "--format", "json"]).arg(fixtures().join("ggml_mix.so")).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let file = &v["files"][0];
    assert_eq!(file["path"], "ggml_mix.so");
    assert_eq!(file["targets"].as_array().unwrap().len(), 11);
    assert_eq!(file["targets"][2]["target"], "sm_120a");
    let stub: ElfStub = serde_json::from_value(file["elf"].clone()).unwrap();
    assert_eq!(stub.needed, ["libcudart.so.13", "libstdc++.so.6", "libgcc_s.so.1", "libc.so.6"]);
    assert_eq!(stub.requires, ["GLIBC_2.2.5", "CXXABI_1.3"]);
    let want = Backend::Cuda {
        toolkit: "13.5".into(),
        sass: vec!["8.6".into(), "8.9".into(), "12.0a".into(), "12.1a".into()],
        ptx: vec!["7.5".into(), "8.0".into(), "9.0".into()],
        compressed: true,
    };
    assert_eq!(stub.backend, Some(want));
    let s = &v["summary"];
    assert_eq!(s["floors"]["GLIBC"]["version"], "2.2.5");
    assert_eq!(s["driver"]["sass"]["min"], 580);
    assert_eq!(s["driver"]["ptx_jit"]["min"], serde_json::Value::Null, "CUDA 13.5's PTX: no driver known");
    assert_eq!(s["kernels_for"]["sass"], serde_json::json!(["8.6", "8.7", "8.9", "12.0", "12.1"]));
    // A family cubin is written as its compute capability, family PTX with its `f`.
    let out = llmgw().args(["inspect", "--format", "json"]).arg(fixtures().join("family_f.so")).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["files"][0]["elf"]["backend"]["sass"], serde_json::json!(["10.0", "12.0"]));
    assert_eq!(v["files"][0]["elf"]["backend"]["ptx"], serde_json::json!(["10.0f"]));
}

#[test]
fn text_output_for_ggml_mix() {
    let out = llmgw().arg("inspect").arg(fixtures().join("ggml_mix.so")).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let text = text.replace(&fixtures().display().to_string(), "tests/fixtures/cuda");
    insta::assert_snapshot!(text);
}
