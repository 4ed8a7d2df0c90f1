//! `llmgw inspect PATH`: what a build really is, from its ELF files and
//! CUDA fatbins. Arguments and rendering; the reading is `llmgw_core::inspect`.
//! `--format json` writes each ELF file as the truth's own `ElfStub`
//! (`elf`), beside the facts it was read from.

use std::fmt::Write as _;
use std::path::PathBuf;

use llmgw_core::archive::Limits;
use llmgw_core::inspect::summary::label;
use llmgw_core::inspect::{EntryKind, FileReport, Summary, VERSION_FAMILIES};
use llmgw_model::host::ComputeCapability;
use llmgw_model::nvidia::DriverFloor;
use llmgw_sim::truth::stub::{Backend, ElfStub};
use llmgw_system::walk::{Inspection, inspect_path};
use serde::Serialize;

use super::input::Failure;
use super::output;
use super::printer::Format;

/// Arguments of `inspect`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    llmgw inspect libggml-cuda.so\n  \
    llmgw inspect llama-b11459-bin-ubuntu-cuda-12.8-x64.tar.gz\n  \
    llmgw inspect vllm-0.20.1-cp38-abi3-manylinux_2_35_x86_64.whl --format json\n  \
    llmgw inspect /opt/llmgw/engines/llama.cpp/b11459-cuda-12.8\n\n\
    PATH is a directory (walked; symbolic links are listed, never followed), an archive \
    (.tar.gz, .tgz, .zip, .whl: read member by member, nothing unpacked) or one ELF file. \
    Files that are not ELF are counted and skipped.\n\n\
    For each ELF file: its SONAME, NEEDED libraries, RUNPATH/RPATH, the symbol versions it \
    requires of each library (GLIBC_2.34, GLIBCXX_3.4.30, CXXABI_1.3.9), and the images of its \
    CUDA fatbins (.nv_fatbin, __nv_relfatbin): SASS (machine code for one GPU target: sm_86; \
    sm_120a runs on exactly 12.0; sm_100f on its family) or PTX (compiled by the driver for \
    that target and newer), the PTX ISA version, compression, and the CUDA runtime it links.\n\n\
    Then the build, all files together: the glibc, GLIBCXX and CXXABI floors (the highest \
    version any file requires, and which file), the SASS and PTX sets, the GPUs (compute \
    capabilities) it has machine code for and those only its PTX reaches, and the oldest NVIDIA \
    driver that loads its machine code and that compiles its PTX, each floor with its rule and \
    source (crates/llmgw-model/src/nvidia.rs).\n\n\
    --format json: one object {path, files, skipped, summary}; each file's `elf` is the truth's \
    ElfStub (mocks/README.md). See docs/guide/inspect.md.\n\n\
    Exit codes: 0 inspected (also when PATH holds no ELF file); 2 bad input: PATH missing, PATH \
    alone not an ELF file or empty, an ELF file or fatbin cut short or malformed (the line names \
    the file and the offset), a symbolic link loop, a corrupt archive, a limit passed; 3 the \
    output could not be written.")]
pub struct Args {
    /// A directory, an archive (.tar.gz, .tgz, .zip, .whl) or one ELF file.
    path: PathBuf,
    /// text for a person; json for programs.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

/// Runs `inspect`: exit 0, or 2 for bad input.
pub fn run(args: Args) -> Result<i32, Failure> {
    let inspection = inspect_path(&args.path, Limits::default()).map_err(|e| Failure::BadInput(e.to_string()))?;
    let text = match args.format {
        Format::Json => {
            serde_json::to_string_pretty(&json(&args.path, &inspection)).expect("the report serializes") + "\n"
        }
        Format::Text => text(&args.path, &inspection),
    };
    output::emit(&text)?;
    Ok(llmgw_core::report::EXIT_OK)
}

fn kind_name(kind: EntryKind) -> String {
    match kind {
        EntryKind::Elf => "sass".into(),
        EntryKind::Ptx => "ptx".into(),
        EntryKind::OldCubin => "old-cubin".into(),
        EntryKind::LtoIr => "lto-ir".into(),
        EntryKind::Unknown(n) => format!("kind-{n:#x}"),
    }
}

fn compression_name(c: llmgw_core::inspect::fatbin::Compression) -> Option<&'static str> {
    use llmgw_core::inspect::fatbin::Compression;
    match c {
        Compression::None => None,
        Compression::Legacy => Some("legacy"),
        Compression::Lz4 => Some("lz4"),
        Compression::Zstd => Some("zstd"),
    }
}

fn isa(v: (u16, u16)) -> String {
    format!("{}.{}", v.0, v.1)
}

/// The toolkit a file's own newest PTX says, else the build's.
fn file_toolkit(f: &FileReport, summary: &Summary) -> Option<String> {
    let own = f.ptx_isa().last().and_then(|&v| llmgw_model::nvidia::ptx_isa_toolkit(v));
    own.map(|(a, b)| format!("{a}.{b}")).or_else(|| summary.toolkit.as_ref().map(|t| t.version.clone()))
}

/// A file as the truth writes it (`mocks/README.md`, `files[].elf`).
fn stub(f: &FileReport, summary: &Summary) -> ElfStub {
    let backend = (!f.kernels.is_empty()).then(|| {
        let mut sass: Vec<String> = Vec::new();
        let mut ptx: Vec<String> = Vec::new();
        for k in &f.kernels {
            let list = match k.entry.kind {
                EntryKind::Elf => &mut sass,
                EntryKind::Ptx => &mut ptx,
                _ => continue,
            };
            let l = label(k.entry.kind, &k.entry.target);
            if !list.contains(&l) {
                list.push(l);
            }
        }
        let order = |s: &String| {
            let cc = s.trim_end_matches(['a', 'f']);
            (ComputeCapability::parse(cc).unwrap_or(ComputeCapability::new(0, 0)), s.clone())
        };
        sass.sort_by_key(order);
        ptx.sort_by_key(order);
        Backend::Cuda {
            toolkit: file_toolkit(f, summary).unwrap_or_default(),
            sass,
            ptx,
            compressed: f.kernels.iter().any(|k| k.entry.compressed()),
        }
    });
    ElfStub {
        needed: f.elf.needed.clone(),
        requires: f.requires(),
        runpath: f.elf.runpath.clone(),
        backend,
        ..ElfStub::default()
    }
}

/// The JSON document, its keys in the order README.md shows them.
#[derive(Serialize)]
struct Doc<'a> {
    path: String,
    files: Vec<FileJson<'a>>,
    skipped: SkippedJson<'a>,
    summary: SummaryJson<'a>,
}

#[derive(Serialize)]
struct FileJson<'a> {
    path: &'a str,
    bytes: u64,
    class: &'a str,
    machine: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    soname: Option<&'a str>,
    rpath: Option<&'a str>,
    version_needs: Vec<NeedJson<'a>>,
    cudart: Option<&'a str>,
    targets: Vec<TargetJson>,
    elf: ElfStub,
}

#[derive(Serialize)]
struct NeedJson<'a> {
    library: &'a str,
    versions: &'a [String],
}

#[derive(Serialize)]
struct TargetJson {
    section: &'static str,
    kind: String,
    target: String,
    listed_as: String,
    code_version: String,
    ptx_isa: Option<String>,
    compression: Option<&'static str>,
    offset: u64,
}

#[derive(Serialize)]
struct SkippedJson<'a> {
    not_elf: u64,
    links: Vec<LinkJson<'a>>,
    other: &'a [String],
}

#[derive(Serialize)]
struct LinkJson<'a> {
    path: &'a str,
    target: &'a str,
    lands: &'a str,
}

#[derive(Serialize)]
struct SummaryJson<'a> {
    elf_files: usize,
    cuda_files: usize,
    floors: FloorsJson<'a>,
    cudart: &'a [String],
    toolkit: Option<ToolkitJson<'a>>,
    sass: Vec<String>,
    ptx: Vec<String>,
    ptx_isa: Vec<String>,
    images: usize,
    compressed: usize,
    kernels_for: CoverageJson,
    driver: DriverJson<'a>,
}

#[derive(Serialize)]
#[allow(non_snake_case)] // the families' own names
struct FloorsJson<'a> {
    GLIBC: Option<FloorJson<'a>>,
    GLIBCXX: Option<FloorJson<'a>>,
    CXXABI: Option<FloorJson<'a>>,
}

#[derive(Serialize)]
struct FloorJson<'a> {
    version: String,
    file: &'a str,
}

#[derive(Serialize)]
struct ToolkitJson<'a> {
    version: &'a str,
    from: &'a str,
}

#[derive(Serialize)]
struct CoverageJson {
    sass: Vec<String>,
    ptx_only: Vec<String>,
    none: Vec<String>,
}

#[derive(Serialize)]
struct DriverJson<'a> {
    sass: FloorsOf<'a>,
    ptx_jit: FloorsOf<'a>,
}

#[derive(Serialize)]
struct FloorsOf<'a> {
    min: Option<u32>,
    floors: Vec<DriverFloorJson<'a>>,
}

#[derive(Serialize)]
struct DriverFloorJson<'a> {
    driver: u32,
    rule: &'a str,
    source: &'a str,
}

fn floors_of(floors: &[DriverFloor]) -> FloorsOf<'_> {
    FloorsOf {
        min: floors.iter().map(|f| f.driver).max(),
        floors: floors.iter().map(|f| DriverFloorJson { driver: f.driver, rule: &f.rule, source: f.source }).collect(),
    }
}

fn ccs(list: &[ComputeCapability]) -> Vec<String> {
    list.iter().map(ToString::to_string).collect()
}

fn target_json(k: &llmgw_core::inspect::Kernel) -> TargetJson {
    let e = &k.entry;
    TargetJson {
        section: k.section,
        kind: kind_name(e.kind),
        target: e.target.to_string(),
        listed_as: e.listing_target(),
        code_version: isa(e.code_version),
        ptx_isa: e.ptx_isa.map(isa),
        compression: compression_name(e.compression),
        offset: e.offset,
    }
}

fn json<'a>(path: &std::path::Path, i: &'a Inspection) -> Doc<'a> {
    let s = &i.summary;
    let files = i
        .files
        .iter()
        .map(|f| FileJson {
            path: &f.path,
            bytes: f.bytes,
            class: f.elf.class,
            machine: &f.elf.machine,
            kind: &f.elf.kind,
            soname: f.elf.soname.as_deref(),
            rpath: f.elf.rpath.as_deref(),
            version_needs: f
                .elf
                .version_needs
                .iter()
                .map(|n| NeedJson { library: &n.library, versions: &n.versions })
                .collect(),
            cudart: f.cudart(),
            targets: f.kernels.iter().map(target_json).collect(),
            elf: stub(f, s),
        })
        .collect();
    let floor = |n: usize| s.floors[n].as_ref().map(|f| FloorJson { version: f.version.to_string(), file: &f.file });
    let names = |t: &[llmgw_core::inspect::Target]| t.iter().map(ToString::to_string).collect();
    Doc {
        path: path.display().to_string(),
        files,
        skipped: SkippedJson {
            not_elf: i.skipped.not_elf,
            links: i
                .skipped
                .links
                .iter()
                .map(|l| LinkJson { path: &l.path, target: &l.target, lands: l.lands })
                .collect(),
            other: &i.skipped.other,
        },
        summary: SummaryJson {
            elf_files: s.elf_files,
            cuda_files: s.cuda_files,
            floors: FloorsJson { GLIBC: floor(0), GLIBCXX: floor(1), CXXABI: floor(2) },
            cudart: &s.cudart,
            toolkit: s.toolkit.as_ref().map(|t| ToolkitJson { version: &t.version, from: &t.from }),
            sass: names(&s.sass),
            ptx: names(&s.ptx),
            ptx_isa: s.ptx_isa.iter().map(|&v| isa(v)).collect(),
            images: s.images,
            compressed: s.compressed,
            kernels_for: CoverageJson {
                sass: ccs(&s.coverage.sass),
                ptx_only: ccs(&s.coverage.ptx_only),
                none: ccs(&s.coverage.none),
            },
            driver: DriverJson {
                sass: floors_of(&s.sass_driver),
                ptx_jit: FloorsOf { min: s.ptx_driver_min(), ..floors_of(&s.ptx_driver) },
            },
        },
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn or_dash(v: Option<&str>) -> &str {
    v.unwrap_or("-")
}

/// One kind's targets of a file, in file order, each once with its count:
/// `sm_86 ×2, sm_120a ×2`; `__nv_relfatbin` ones marked.
fn target_line(f: &FileReport, kind: EntryKind) -> Option<String> {
    let mut seen: Vec<(String, usize)> = Vec::new();
    let mut compressed: Vec<&str> = Vec::new();
    let mut isas: Vec<String> = Vec::new();
    for k in f.kernels.iter().filter(|k| k.entry.kind == kind) {
        let rel = if k.section == llmgw_core::inspect::fatbin::SECTION_FATBIN { "" } else { " (relocatable)" };
        let name = format!("{}{rel}", k.entry.target);
        match seen.iter_mut().find(|(n, _)| *n == name) {
            Some((_, count)) => *count += 1,
            None => seen.push((name, 1)),
        }
        if let Some(c) = compression_name(k.entry.compression)
            && !compressed.contains(&c)
        {
            compressed.push(c);
        }
        if let Some(v) = k.entry.ptx_isa.map(isa)
            && !isas.contains(&v)
        {
            isas.push(v);
        }
    }
    if seen.is_empty() {
        return None;
    }
    let total: usize = seen.iter().map(|(_, c)| c).sum();
    let names: Vec<String> = seen.into_iter().map(|(n, c)| if c == 1 { n } else { format!("{n} ×{c}") }).collect();
    let mut notes = Vec::new();
    if !isas.is_empty() {
        notes.push(format!("PTX ISA {}", isas.join(", ")));
    }
    let packed = f.kernels.iter().filter(|k| k.entry.kind == kind && k.entry.compressed()).count();
    notes.push(match packed {
        0 => "not compressed".to_string(),
        n if n == total => format!("compressed: {}", compressed.join(", ")),
        n => format!("{n} of {total} compressed: {}", compressed.join(", ")),
    });
    Some(format!("{} ({})", names.join(", "), notes.join("; ")))
}

fn text(path: &std::path::Path, i: &Inspection) -> String {
    let s = &i.summary;
    let mut out = format!("{}: {}", path.display(), plural(s.elf_files, "ELF file", "ELF files"));
    let sk = &i.skipped;
    if sk.not_elf > 0 || !sk.links.is_empty() || !sk.other.is_empty() {
        let mut parts = vec![format!("{} not ELF", sk.not_elf)];
        if !sk.links.is_empty() {
            parts.push(format!("{} not followed", plural(sk.links.len(), "link", "links")));
        }
        if !sk.other.is_empty() {
            parts.push(format!("{} special", plural(sk.other.len(), "file", "files")));
        }
        let _ = write!(out, "; skipped {}", parts.join(", "));
    }
    out.push('\n');
    for f in &i.files {
        let e = &f.elf;
        let _ = writeln!(out, "\n{} ({} {} {}, {} bytes)", f.path, e.class, e.machine, e.kind, f.bytes);
        let _ = writeln!(out, "  soname:    {}", or_dash(e.soname.as_deref()));
        let _ = writeln!(out, "  needed:    {}", if e.needed.is_empty() { "-".into() } else { e.needed.join(", ") });
        let mut paths = Vec::new();
        if let Some(r) = &e.runpath {
            paths.push(format!("RUNPATH {r}"));
        }
        if let Some(r) = &e.rpath {
            paths.push(format!("RPATH {r}"));
        }
        let _ = writeln!(out, "  runpath:   {}", if paths.is_empty() { "-".into() } else { paths.join("; ") });
        let needs: Vec<String> =
            e.version_needs.iter().map(|n| format!("{} {}", n.library, n.versions.join(" "))).collect();
        let _ = writeln!(out, "  versions:  {}", if needs.is_empty() { "-".into() } else { needs.join("; ") });
        if !f.kernels.is_empty() {
            let _ = writeln!(
                out,
                "  cuda:      runtime {}, {} in {}",
                or_dash(f.cudart()),
                plural(f.kernels.len(), "image", "images"),
                e.fatbin_sections.iter().map(|s| s.name).collect::<Vec<_>>().join(" and ")
            );
            for (kind, label) in [(EntryKind::Elf, "sass"), (EntryKind::Ptx, "ptx ")] {
                if let Some(line) = target_line(f, kind) {
                    let _ = writeln!(out, "    {label}     {line}");
                }
            }
        } else if let Some(c) = f.cudart() {
            let _ = writeln!(out, "  cuda:      runtime {c}, no fatbin");
        }
    }
    out.push_str(&summary_text(s));
    out
}

fn summary_text(s: &Summary) -> String {
    let mut out = format!(
        "\nbuild: {}, {} with CUDA kernels ({}, {} compressed)\n",
        plural(s.elf_files, "ELF file", "ELF files"),
        s.cuda_files,
        plural(s.images, "image", "images"),
        s.compressed
    );
    for (family, floor) in VERSION_FAMILIES.iter().zip(&s.floors) {
        let v = floor.as_ref().map_or("-".to_string(), |f| format!("{} ({})", f.version, f.file));
        let _ = writeln!(out, "  {:<9} {v}", format!("{family}:"));
    }
    if s.images == 0 && s.cudart.is_empty() {
        out.push_str("  cuda:     none\n");
        return out;
    }
    let list = |v: Vec<String>| if v.is_empty() { "-".to_string() } else { v.join(", ") };
    let _ = writeln!(out, "  runtime:  {}", list(s.cudart.clone()));
    let tk = s.toolkit.as_ref().map_or("-".to_string(), |t| format!("{} (from {})", t.version, t.from));
    let _ = writeln!(out, "  toolkit:  {tk}");
    let _ = writeln!(out, "  SASS:     {}", list(s.sass.iter().map(ToString::to_string).collect()));
    let ptx_isa = s.ptx_isa.iter().map(|&v| isa(v)).collect::<Vec<_>>();
    let isa_note = if ptx_isa.is_empty() { String::new() } else { format!(" (PTX ISA {})", ptx_isa.join(", ")) };
    let _ = writeln!(out, "  PTX:      {}{isa_note}", list(s.ptx.iter().map(ToString::to_string).collect()));
    if s.images == 0 {
        return out;
    }
    let cc = |v: &[ComputeCapability]| if v.is_empty() { "-".to_string() } else { ccs(v).join(" ") };
    let _ = writeln!(out, "  GPUs:     machine code for {}", cc(&s.coverage.sass));
    let _ = writeln!(out, "            PTX only (JIT) for {}", cc(&s.coverage.ptx_only));
    let _ = writeln!(out, "            no kernel for {}", cc(&s.coverage.none));
    // The PTX floors are the machine code's and JIT's own: show only what it adds.
    let jit: Vec<DriverFloor> = s.ptx_driver.iter().filter(|f| !s.sass_driver.contains(f)).cloned().collect();
    let blocks = [
        ("to load its machine code", &s.sass_driver, &s.sass_driver),
        ("to compile its PTX (JIT)", &s.ptx_driver, &jit),
    ];
    for (n, (what, all, shown)) in blocks.into_iter().enumerate() {
        if n == 1 && s.ptx.is_empty() {
            continue;
        }
        let min = match (n, &s.ptx_jit_unknown) {
            (1, Some(_)) => None,
            _ => all.iter().map(|f| f.driver).max(),
        };
        let min = min.map_or("unknown".to_string(), |d| d.to_string());
        let _ = writeln!(out, "  {:<9} {min} {what}", if n == 0 { "driver:" } else { "" });
        for f in shown {
            let _ = writeln!(out, "              {}: {}; source: {}", f.driver, f.rule, f.source);
        }
        if let (1, Some(toolkit)) = (n, &s.ptx_jit_unknown) {
            let _ = writeln!(
                out,
                "              ?: no driver is known to compile CUDA {toolkit}'s PTX; crates/llmgw-model/src/nvidia.rs's table has no such toolkit"
            );
        }
    }
    out
}
