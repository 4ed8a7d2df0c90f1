//! What an ELF file says about its loading, read with the `object` crate:
//! `DT_SONAME`, `DT_NEEDED`, `DT_RUNPATH`/`DT_RPATH`, the symbol versions it
//! needs of each library (`.gnu.version_r`), and where its CUDA fatbin
//! sections lie.
//!
//! Only what is asked is read: the ELF header, the section headers and
//! their names, the dynamic section, its string table (string by string) and
//! the version needs. Over `object::read::ReadCache` that is a few kilobytes
//! of a gigabyte library. Every size a header gives is checked against the
//! file's length before it is read, and the sections read whole are
//! bounded ([`MAX_TABLE_BYTES`]). Errors name the offset.

use object::elf;
use object::read::elf::{Dyn as _, FileHeader, SectionHeader as _, SectionTable};
use object::{Endianness, FileKind, ReadRef};

use super::fatbin::{SECTION_FATBIN, SECTION_RELFATBIN};

/// The largest dynamic section or version-needs section read: a real one
/// is a few hundred bytes (libtorch_cuda.so's `.dynamic` is 0x250).
pub const MAX_TABLE_BYTES: u64 = 1 << 20;

/// What one ELF file says about how it is loaded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ElfFacts {
    /// `ELF64` or `ELF32`.
    pub class: &'static str,
    /// The machine: `x86-64`, `aarch64`, … (`machine 0x…` for others).
    pub machine: String,
    /// The file type: `DYN`, `EXEC`, `REL`, `CORE` (or the number).
    pub kind: String,
    /// `DT_SONAME`.
    pub soname: Option<String>,
    /// `DT_NEEDED`, in the file's order.
    pub needed: Vec<String>,
    /// `DT_RUNPATH`.
    pub runpath: Option<String>,
    /// `DT_RPATH` (the older tag; the loader ignores it when RUNPATH is set).
    pub rpath: Option<String>,
    /// The symbol versions it needs of each library (`.gnu.version_r`), in the file's order.
    pub version_needs: Vec<VersionNeed>,
    /// Its CUDA fatbin sections (`.nv_fatbin`, `__nv_relfatbin`) that have bytes in the file.
    pub fatbin_sections: Vec<SectionRange>,
}

/// The versions one library must define (`libc.so.6`: `GLIBC_2.17`, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionNeed {
    /// The library, as `DT_NEEDED` names it.
    pub library: String,
    /// The version names: `GLIBC_2.17`, `GLIBCXX_3.4.30`, `CXXABI_1.3.9`.
    pub versions: Vec<String>,
}

/// Where a section's bytes are in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionRange {
    /// Its name: [`SECTION_FATBIN`] or [`SECTION_RELFATBIN`].
    pub name: &'static str,
    /// `sh_offset`.
    pub offset: u64,
    /// `sh_size`.
    pub size: u64,
}

/// What is wrong with an ELF file, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfError {
    /// The file offset of the header or table that is wrong.
    pub offset: u64,
    /// What is wrong, in words.
    pub detail: String,
}

impl std::fmt::Display for ElfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ELF at file offset {:#x}: {}", self.offset, self.detail)
    }
}

impl std::error::Error for ElfError {}

fn error(offset: u64, detail: impl Into<String>) -> ElfError {
    ElfError { offset, detail: detail.into() }
}

/// Whether `bytes` start with the ELF magic.
pub fn has_elf_magic(bytes: &[u8]) -> bool {
    bytes.starts_with(&elf::ELFMAG)
}

/// Reads the facts of the ELF file `data` (a `&[u8]`, or a
/// `&object::read::ReadCache` over a file).
///
/// # Errors
/// [`ElfError`] when the file is not an ELF object `object` reads (a wrong
/// class, a header cut short), or a header or table runs past the end of
/// the file, or a table is malformed.
pub fn read<'data, R: ReadRef<'data>>(data: R) -> Result<ElfFacts, ElfError> {
    let len = data.len().map_err(|()| error(0, "cannot tell the file's length"))?;
    match FileKind::parse(data) {
        Ok(FileKind::Elf32) => read_as::<elf::FileHeader32<Endianness>, R>(data, len, "ELF32"),
        Ok(FileKind::Elf64) => read_as::<elf::FileHeader64<Endianness>, R>(data, len, "ELF64"),
        Ok(_) => Err(error(0, "not an ELF file")),
        // An ELF header is 52 bytes (ELF32) or 64 (ELF64): System V ABI, "ELF Header".
        Err(_) if len < 64 => {
            Err(error(0, format!("cut short: {len} bytes, less than an ELF header (52 or 64 bytes)")))
        }
        Err(e) => Err(error(0, format!("{e} ({len} bytes)"))),
    }
}

fn read_as<'data, H: FileHeader<Endian = Endianness>, R: ReadRef<'data>>(
    data: R,
    len: u64,
    class: &'static str,
) -> Result<ElfFacts, ElfError> {
    let header = H::parse(data).map_err(|e| error(0, format!("{e}: the ELF header is cut short or malformed")))?;
    let endian = header.endian().map_err(|e| error(0, e.to_string()))?;
    let mut facts = ElfFacts {
        class,
        machine: machine_name(header.e_machine(endian)),
        kind: type_name(header.e_type(endian)),
        ..ElfFacts::default()
    };
    let shoff: u64 = header.e_shoff(endian).into();
    if shoff == 0 {
        // No section headers (sstrip'd): nothing more is read.
        return Ok(facts);
    }
    let entsize = u64::from(header.e_shentsize(endian));
    let count = u64::from(header.e_shnum(endian)).max(1);
    let end = count.checked_mul(entsize).and_then(|n| n.checked_add(shoff));
    if end.is_none_or(|e| e > len) {
        return Err(error(
            shoff,
            format!("the {count} section headers ({entsize} bytes each) run past the end of the file ({len} bytes)"),
        ));
    }
    let sections = header.sections(endian, data).map_err(|e| error(shoff, format!("section headers: {e}")))?;
    for s in sections.iter() {
        if s.sh_type(endian) == elf::SHT_NOBITS {
            continue;
        }
        let (offset, size): (u64, u64) = (s.sh_offset(endian).into(), s.sh_size(endian).into());
        if offset.checked_add(size).is_none_or(|e| e > len) {
            let name = sections.section_name(endian, s).map(String::from_utf8_lossy).unwrap_or_default();
            return Err(error(
                offset,
                format!("section `{name}` ({size} bytes) runs past the end of the file ({len} bytes)"),
            ));
        }
        match sections.section_name(endian, s) {
            Ok(n) if n == SECTION_FATBIN.as_bytes() => {
                facts.fatbin_sections.push(SectionRange { name: SECTION_FATBIN, offset, size });
            }
            Ok(n) if n == SECTION_RELFATBIN.as_bytes() => {
                facts.fatbin_sections.push(SectionRange { name: SECTION_RELFATBIN, offset, size });
            }
            _ => {}
        }
    }
    read_dynamic(&sections, endian, data, &mut facts)?;
    read_version_needs(&sections, endian, data, &mut facts)?;
    Ok(facts)
}

/// The bytes of a table section, bounded by [`MAX_TABLE_BYTES`] (its range
/// within the file was checked).
fn table<'data, H: FileHeader<Endian = Endianness>, R: ReadRef<'data>>(
    s: &H::SectionHeader,
    endian: Endianness,
    data: R,
    what: &str,
) -> Result<&'data [u8], ElfError> {
    let (offset, size): (u64, u64) = (s.sh_offset(endian).into(), s.sh_size(endian).into());
    if size > MAX_TABLE_BYTES {
        return Err(error(offset, format!("{what} of {size} bytes is larger than {MAX_TABLE_BYTES} bytes")));
    }
    data.read_bytes_at(offset, size).map_err(|()| error(offset, format!("cannot read {what} ({size} bytes)")))
}

/// The string at `at` of the string table `strtab` (a section index), read
/// lazily: one string, up to its NUL.
fn string<'data, H: FileHeader<Endian = Endianness>, R: ReadRef<'data>>(
    sections: &SectionTable<'data, H, R>,
    endian: Endianness,
    data: R,
    strtab: u32,
    at: u64,
) -> Result<String, ElfError> {
    let s = sections
        .section(object::SectionIndex(strtab as usize))
        .map_err(|e| error(0, format!("string table {strtab}: {e}")))?;
    let (offset, size): (u64, u64) = (s.sh_offset(endian).into(), s.sh_size(endian).into());
    let bad = || error(offset.saturating_add(at), format!("string at {at} of string table {strtab} ({size} bytes)"));
    if at >= size {
        return Err(bad());
    }
    let bytes = data.read_bytes_at_until(offset + at..offset + size, 0).map_err(|()| bad())?;
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

fn read_dynamic<'data, H: FileHeader<Endian = Endianness>, R: ReadRef<'data>>(
    sections: &SectionTable<'data, H, R>,
    endian: Endianness,
    data: R,
    facts: &mut ElfFacts,
) -> Result<(), ElfError> {
    let Some(s) = sections.iter().find(|s| s.sh_type(endian) == elf::SHT_DYNAMIC) else {
        return Ok(());
    };
    let offset: u64 = s.sh_offset(endian).into();
    let bytes = table::<H, R>(s, endian, data, "the dynamic section")?;
    let entries: &[H::Dyn] = object::pod::slice_from_all_bytes(bytes)
        .map_err(|()| error(offset, "the dynamic section is not a whole number of aligned entries"))?;
    let strtab = s.sh_link(endian);
    for d in entries {
        let tag = d.d_tag(endian);
        if tag == elf::DT_NULL {
            break;
        }
        let val: u64 = d.d_val(endian).into();
        let slot = match tag {
            elf::DT_NEEDED => None,
            elf::DT_SONAME => Some(&mut facts.soname),
            elf::DT_RUNPATH => Some(&mut facts.runpath),
            elf::DT_RPATH => Some(&mut facts.rpath),
            _ => continue,
        };
        let text = string(sections, endian, data, strtab, val)?;
        match slot {
            None => facts.needed.push(text),
            Some(slot) => *slot = Some(text),
        }
    }
    Ok(())
}

fn read_version_needs<'data, H: FileHeader<Endian = Endianness>, R: ReadRef<'data>>(
    sections: &SectionTable<'data, H, R>,
    endian: Endianness,
    data: R,
    facts: &mut ElfFacts,
) -> Result<(), ElfError> {
    let Some(s) = sections.iter().find(|s| s.sh_type(endian) == elf::SHT_GNU_VERNEED) else {
        return Ok(());
    };
    let offset: u64 = s.sh_offset(endian).into();
    let bytes = table::<H, R>(s, endian, data, "the version needs (.gnu.version_r)")?;
    let strtab = s.sh_link(endian);
    let bad = |detail: String| error(offset, format!("the version needs (.gnu.version_r): {detail}"));
    let mut at = 0usize;
    // Each record is at least 16 bytes, so this many records at most.
    for _ in 0..=bytes.len() / 16 {
        let need: &elf::Verneed<Endianness> = object::pod::from_bytes(bytes.get(at..).unwrap_or_default())
            .map(|(v, _)| v)
            .map_err(|()| bad(format!("record at +{at:#x} is cut short")))?;
        let library = string(sections, endian, data, strtab, u64::from(need.vn_file.get(endian)))?;
        let mut versions = Vec::new();
        let mut aux = at.checked_add(need.vn_aux.get(endian) as usize);
        for _ in 0..need.vn_cnt.get(endian) {
            let Some(a) = aux else { return Err(bad(format!("record at +{at:#x} points past the section"))) };
            let v: &elf::Vernaux<Endianness> = object::pod::from_bytes(bytes.get(a..).unwrap_or_default())
                .map(|(v, _)| v)
                .map_err(|()| bad(format!("version at +{a:#x} is cut short")))?;
            versions.push(string(sections, endian, data, strtab, u64::from(v.vna_name.get(endian)))?);
            aux = match v.vna_next.get(endian) {
                0 => None,
                n => a.checked_add(n as usize),
            };
        }
        facts.version_needs.push(VersionNeed { library, versions });
        match need.vn_next.get(endian) {
            0 => return Ok(()),
            n => at = at.saturating_add(n as usize),
        }
    }
    Err(bad("its records go round in a loop".into()))
}

fn machine_name(m: elf::Machine) -> String {
    match m {
        elf::EM_X86_64 => "x86-64".into(),
        elf::EM_386 => "x86".into(),
        elf::EM_AARCH64 => "aarch64".into(),
        elf::EM_ARM => "arm".into(),
        elf::EM_PPC64 => "ppc64".into(),
        elf::EM_S390 => "s390".into(),
        elf::EM_RISCV => "riscv".into(),
        other => format!("machine {:#x}", other.0),
    }
}

fn type_name(t: elf::FileType) -> String {
    match t {
        elf::ET_REL => "REL".into(),
        elf::ET_EXEC => "EXEC".into(),
        elf::ET_DYN => "DYN".into(),
        elf::ET_CORE => "CORE".into(),
        other => format!("type {:#x}", other.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::disallowed_methods)] // a test reads its fixture
    fn fixture(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/cuda").join(name);
        std::fs::read(path).unwrap()
    }

    #[test]
    fn reads_needed_versions_and_fatbin_sections() {
        let f = read(&fixture("ggml_mix.so")[..]).unwrap();
        assert_eq!((f.class, f.machine.as_str(), f.kind.as_str()), ("ELF64", "x86-64", "DYN"));
        assert_eq!(f.needed, ["libcudart.so.13", "libstdc++.so.6", "libgcc_s.so.1", "libc.so.6"]);
        assert_eq!((f.soname, f.runpath, f.rpath), (None, None, None));
        let libs: Vec<&str> = f.version_needs.iter().map(|v| v.library.as_str()).collect();
        assert_eq!(libs, ["libgcc_s.so.1", "libstdc++.so.6", "libc.so.6", "libcudart.so.13"]);
        assert_eq!(f.version_needs[2].versions, ["GLIBC_2.2.5"]);
        assert_eq!(f.fatbin_sections, [SectionRange { name: SECTION_FATBIN, offset: 0x2030, size: 0xacf8 }]);
    }

    #[test]
    fn a_cut_short_elf_names_the_offset() {
        let bytes = fixture("ggml_mix.so");
        let e = read(&bytes[..0x3000]).unwrap_err();
        assert_eq!(e.offset, 0xe1e8, "{e}");
        assert!(e.to_string().contains("run past the end of the file (12288 bytes)"), "{e}");
        let e = read(&bytes[..40]).unwrap_err();
        assert_eq!(e.offset, 0);
        assert!(read(&b"\x7fELF"[..]).is_err());
        assert!(read(&b""[..]).is_err());
    }

    #[test]
    fn section_past_the_end_is_named() {
        let mut bytes = fixture("ggml_mix.so");
        // .nv_fatbin is section 15; its sh_size is at +0x20 of its header.
        let at = 0xe1e8 + 15 * 64 + 0x20;
        bytes[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let e = read(&bytes[..]).unwrap_err();
        assert_eq!(e.offset, 0x2030);
        assert!(e.to_string().contains("section `.nv_fatbin`"), "{e}");
    }
}
