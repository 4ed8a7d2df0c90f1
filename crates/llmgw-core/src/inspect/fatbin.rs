//! The CUDA "fatbin" container that `nvcc` puts in a shared object's
//! `.nv_fatbin` section (and, for relocatable device code, `__nv_relfatbin`):
//! which GPU code it holds (SASS cubins and PTX), for which targets.
//!
//! NVIDIA does not document the container; docs/fatbin.md describes it, with
//! the public sources and what was checked against `cuobjdump` 13.5 on the
//! fixtures of `tests/fixtures/cuda/` (made by `ci/cuda-fixtures.sh`).
//!
//! The parser reads headers only: kind, target, PTX ISA version and
//! compression are all in the entry headers, so no payload is ever read,
//! decompressed or copied. [`parse_section_at`] reads them at their offsets
//! from a file and seeks past every payload; [`parse_section`] reads a
//! section held in memory. It is total: any bytes give entries or an error
//! naming the problem and its absolute file offset, never a panic, and it
//! allocates only per entry found (each takes at least 64 bytes of the
//! section), never in proportion to a length read from the file (a
//! concatenated entry's header, read whole, is refused past 64 KiB).
//!
//! A section holds one or more containers back to back:
//!
//! ```text
//! container: header (16 bytes) | entry | entry | ...      (header.fat_size bytes of entries)
//! entry:     header (header_size >= 64 bytes) | payload   (payload_size bytes, 8-padded)
//! ```

#![forbid(unsafe_code)]

use std::fmt;
use std::io::{self, Read, Seek, SeekFrom};

/// Magic number at the start of every fatbin container (little-endian
/// `50 ED 55 BA`). Source: `FATBIN_MAGIC` in n-eiling/cuda-fatbin-decompression
/// `fatbin-decompress.c` (as `FATBIN_TEXT_MAGIC`), vosen/ZLUDA
/// `zluda_dark_api/src/lib.rs`, redplait/denvdis `fb/fb.cc`; checked against
/// cuobjdump on every fixture of tests/fixtures/cuda/.
pub const FATBIN_MAGIC: u32 = 0xBA55_ED50;

/// Magic of the `__fatBinC_Wrapper_t` that points at a container, in the
/// `.nvFatBinSegment` section (not in `.nv_fatbin`). Source: `FATBINC_MAGIC`
/// in `fatbinary_section.h` of the CUDA 13.5 `nvidia-cuda-nvcc` wheel.
pub const FATBIN_WRAPPER_MAGIC: u32 = 0x4662_43B1;

/// The section holding the containers. Source: `FATBIN_DATA_SECTION_NAME` in
/// `fatbinary_section.h` (CUDA 13.5 wheel).
pub const SECTION_FATBIN: &str = ".nv_fatbin";

/// The section holding the pre-link containers of relocatable device code
/// (`nvcc -rdc=true`). Source: `FATBIN_PRELINK_DATA_SECTION_NAME` in
/// `fatbinary_section.h`; seen in tests/fixtures/cuda/rdc.so.
pub const SECTION_RELFATBIN: &str = "__nv_relfatbin";

/// The only container version known. Source: `FATBIN_VERSION` in
/// vosen/ZLUDA `zluda_dark_api/src/lib.rs` and the check in denvdis `fb/fb.cc`;
/// 1 in every fixture.
pub const CONTAINER_VERSION: u16 = 1;

/// Size of the container header, the smallest `header_size` accepted.
/// Source: `struct fatBinaryHeader` (u32 magic, u16 version, u16 headerSize,
/// u64 fatSize) in n-eiling/cuda-fatbin-decompression `fatbin-decompress.h`;
/// 16 in every fixture.
pub const CONTAINER_HEADER_SIZE: u16 = 16;

/// Size of the fixed part of an entry header, the smallest `header_size`
/// accepted. Source: `struct fat_text_header` in
/// n-eiling/cuda-fatbin-decompression `fatbin-decompress.h` (64 bytes);
/// fixtures show 64, 80, 96, 104, 112, 120, 200, 232, 264 and 312.
pub const ENTRY_HEADER_MIN_SIZE: u32 = 64;

/// Entry kind: PTX text. Source: `FATBIN_KIND_PTX` in NVIDIA's old
/// `fatbinary.h` as quoted by redplait/denvdis `fb/fb.cc`; checked against
/// cuobjdump ("Fatbin ptx code") on tests/fixtures/cuda/ptx_compute75.so.
pub const KIND_PTX: u16 = 0x0001;
/// Entry kind: an ELF cubin (SASS). Source: `FATBIN_KIND_ELF`, as above;
/// checked against cuobjdump ("Fatbin elf code") on tests/fixtures/cuda/sass_sm86.so.
pub const KIND_ELF: u16 = 0x0002;
/// Entry kind: the pre-ELF cubin format, "no longer generated". Source:
/// `FATBIN_KIND_OLDCUBIN` in NVIDIA's old `fatbinary.h` (denvdis `fb/fb.cc`); not seen.
pub const KIND_OLD_CUBIN: u16 = 0x0004;
/// Entry kind: NVVM IR / LTO-IR (`code=lto_86`). Source: `FATBIN_KIND_IR` in
/// NVIDIA's later `fatbinary.h`; seen in an `nvcc -dc -gencode
/// arch=compute_86,code=lto_86` object (not a fixture: it links into no .so).
pub const KIND_LTO_IR: u16 = 0x0008;
/// Entry kind: a "concatenated entry" (`nvcc --concat`, CUDA 13): one
/// (compressed) payload holding several images, described by sub-headers.
/// No public source found; checked against cuobjdump ("Fatbin concatenated
/// entry code") on tests/fixtures/cuda/concat.so.
pub const KIND_CONCATENATED: u16 = 0x0100;

/// Flag: 64-bit code (cuobjdump: `compile_size = 64bit`). Source:
/// `FATBIN_FLAG_64BIT` in n-eiling/cuda-fatbin-decompression
/// `fatbin-decompress.c`; set in every fixture.
pub const FLAG_64BIT: u64 = 0x0000_0001;
/// Flag: debug code. Source: `FATBIN_FLAG_DEBUG`, as above; not seen.
pub const FLAG_DEBUG: u64 = 0x0000_0002;
/// Flag: built for Linux (cuobjdump: `host = linux`). Source:
/// `FATBIN_FLAG_LINUX`, as above; set in every fixture.
pub const FLAG_HOST_LINUX: u64 = 0x0000_0010;
/// Flag: built for macOS. Source: `FATBIN_FLAG_MAC` in redplait/denvdis `fb/fb.cc`.
pub const FLAG_HOST_MAC: u64 = 0x0000_0020;
/// Flag: built for Windows. Source: `FATBIN_FLAG_WINDOWS` in redplait/denvdis `fb/fb.cc`.
pub const FLAG_HOST_WINDOWS: u64 = 0x0000_0040;
/// Flag: the oldest compression. Source: `FATBIN_FLAG_COMPRESS` in
/// redplait/denvdis `fb/fb.cc` ("CompressedOld" in vosen/ZLUDA); not seen.
pub const FLAG_COMPRESSED_LEGACY: u64 = 0x0000_1000;
/// Flag: LZ4-compressed payload (CUDA 12 tools). Source:
/// `FATBIN_FLAG_COMPRESS` in n-eiling/cuda-fatbin-decompression (its
/// decompressor is LZ4's block format), `FATBIN_FLAG_COMPRESS2` in
/// redplait/denvdis `fb/fb.cc`, LZ4 in vosen/ZLUDA; checked against cuobjdump
/// ("compressed") on tests/fixtures/cuda/cuda129.so and compress_mode_speed.so
/// (nvcc 13.5 `--compress-mode=speed` writes it too).
pub const FLAG_COMPRESSED_LZ4: u64 = 0x0000_2000;
/// Flag: zstd-compressed payload (CUDA 13 tools). Source:
/// `FATBIN_FLAG_ZCOMPRESS` in redplait/denvdis `fb/fb.cc`; checked against
/// cuobjdump ("compressed") on tests/fixtures/cuda/compress_all.so.
pub const FLAG_COMPRESSED_ZSTD: u64 = 0x0000_8000;
/// Flag: an architecture-specific target (`sm_90a`, `compute_120a`). No public
/// source found; checked against cuobjdump on tests/fixtures/cuda/sm90a.so and
/// sm100a_sm120a.so.
pub const FLAG_ARCH_SPECIFIC: u64 = 0x0010_0000;
/// Flag: a family-specific target (`sm_100f`, `compute_100f`). No public
/// source found; checked against cuobjdump on tests/fixtures/cuda/family_f.so.
pub const FLAG_FAMILY_SPECIFIC: u64 = 0x0020_0000;

const COMPRESSION_FLAGS: u64 = FLAG_COMPRESSED_LEGACY | FLAG_COMPRESSED_LZ4 | FLAG_COMPRESSED_ZSTD;

/// Offsets in the entry header (source: `struct fat_text_header` in
/// n-eiling/cuda-fatbin-decompression `fatbin-decompress.h` and
/// `FatbinFileHeader` in vosen/ZLUDA; each checked against cuobjdump on the
/// fixtures, see docs/fatbin.md).
mod at {
    pub const KIND: usize = 0x00;
    pub const HEADER_SIZE: usize = 0x04;
    pub const PAYLOAD_SIZE: usize = 0x08;
    pub const COMPRESSED_SIZE: usize = 0x10;
    pub const OPTIONS_OFFSET: usize = 0x14;
    pub const VERSION_MINOR: usize = 0x18;
    pub const VERSION_MAJOR: usize = 0x1a;
    pub const ARCH: usize = 0x1c;
    pub const NAME_OFFSET: usize = 0x20;
    pub const NAME_LEN: usize = 0x24;
    pub const FLAGS: usize = 0x28;
    pub const UNCOMPRESSED_SIZE: usize = 0x38;
}

/// What an entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// PTX text, compiled by the driver at load time (cuobjdump `--list-ptx`).
    Ptx,
    /// An ELF cubin of SASS for one GPU target (cuobjdump `--list-elf`).
    Elf,
    /// The pre-ELF cubin format.
    OldCubin,
    /// NVVM IR / LTO-IR for link-time optimisation.
    LtoIr,
    /// A kind this parser does not know, with its number.
    Unknown(u16),
}

impl EntryKind {
    fn from_raw(kind: u16) -> EntryKind {
        match kind {
            KIND_PTX => EntryKind::Ptx,
            KIND_ELF => EntryKind::Elf,
            KIND_OLD_CUBIN => EntryKind::OldCubin,
            KIND_LTO_IR => EntryKind::LtoIr,
            other => EntryKind::Unknown(other),
        }
    }
}

/// The letter after a target's number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Suffix {
    /// A plain target (`sm_86`): runs on that compute capability and later ones.
    None,
    /// `a`: architecture-specific (`sm_90a`), runs on that exact compute capability.
    ArchSpecific,
    /// `f`: family-specific (`sm_100f`), runs on the family's members.
    FamilySpecific,
}

/// A GPU target as the entry header names it: the `arch = sm_...` of
/// `cuobjdump -all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Target {
    /// The header's number: major × 10 + minor (86, 90, 100, 121).
    pub arch: u32,
    /// Compute capability major (`arch / 10`).
    pub major: u32,
    /// Compute capability minor (`arch % 10`).
    pub minor: u32,
    /// `a`, `f` or none, from the entry flags.
    pub suffix: Suffix,
}

impl Target {
    fn from_header(arch: u32, flags: u64) -> Target {
        let suffix = if flags & FLAG_ARCH_SPECIFIC != 0 {
            Suffix::ArchSpecific
        } else if flags & FLAG_FAMILY_SPECIFIC != 0 {
            Suffix::FamilySpecific
        } else {
            Suffix::None
        };
        Target { arch, major: arch / 10, minor: arch % 10, suffix }
    }

    fn suffix_str(suffix: Suffix) -> &'static str {
        match suffix {
            Suffix::None => "",
            Suffix::ArchSpecific => "a",
            Suffix::FamilySpecific => "f",
        }
    }
}

/// `sm_86`, `sm_90a`, `sm_100f`: the name `cuobjdump -all` prints as `arch =`.
impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.arch, Target::suffix_str(self.suffix))
    }
}

/// How an entry's payload is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    /// Stored as is.
    None,
    /// The oldest scheme ([`FLAG_COMPRESSED_LEGACY`]).
    Legacy,
    /// LZ4 block format ([`FLAG_COMPRESSED_LZ4`]): CUDA 12's default for PTX, and
    /// nvcc 13's `--compress-mode=speed`.
    Lz4,
    /// zstd ([`FLAG_COMPRESSED_ZSTD`]): CUDA 13's.
    Zstd,
}

impl Compression {
    fn from_flags(flags: u64) -> Compression {
        if flags & FLAG_COMPRESSED_ZSTD != 0 {
            Compression::Zstd
        } else if flags & FLAG_COMPRESSED_LZ4 != 0 {
            Compression::Lz4
        } else if flags & FLAG_COMPRESSED_LEGACY != 0 {
            Compression::Legacy
        } else {
            Compression::None
        }
    }
}

/// Where an image inside a concatenated entry (`nvcc --concat`) lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Concatenated {
    /// File offset of the concatenated entry's header.
    pub entry_offset: u64,
    /// This image's place among the entry's images, from 0.
    pub index: u32,
    /// Offset of this image in the entry's (decompressed) payload.
    pub offset_in_payload: u64,
}

/// One image in a fatbin: a cubin or a PTX file for one target.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Entry {
    /// Cubin, PTX, ...
    pub kind: EntryKind,
    /// The GPU target.
    pub target: Target,
    /// The header's version pair, `[major, minor]` as cuobjdump's `code
    /// version = [major,minor]`: the PTX ISA version for PTX (`[9,5]` is
    /// `.version 9.5`), the cubin's ELF ABI version for ELF (`[1,8]`).
    pub code_version: (u16, u16),
    /// For PTX, the PTX ISA version (major, minor) from the header: the same
    /// as the `.version` line of the PTX text, compressed or not.
    pub ptx_isa: Option<(u16, u16)>,
    /// How the payload is stored; for an image of a concatenated entry, how
    /// the entry's shared payload is.
    pub compression: Compression,
    /// Bytes the payload takes in the section (the header's payload size,
    /// padded to 8); for an image of a concatenated entry, the whole entry's.
    pub stored_size: u64,
    /// Bytes of payload data: the compressed size when compressed, else
    /// `stored_size`.
    pub payload_size: u64,
    /// The image's size once decompressed, when the header says it (always for
    /// a compressed entry and for an image of a concatenated entry).
    pub uncompressed_size: Option<u64>,
    /// File offset of this entry's header (for an image of a concatenated
    /// entry, of its sub-header).
    pub offset: u64,
    /// File offset of the payload (for an image of a concatenated entry, of
    /// the entry's shared payload).
    pub payload_offset: u64,
    /// File offset of the container holding the entry.
    pub container_offset: u64,
    /// The raw 64-bit flags word.
    pub flags: u64,
    /// Set when the image is one of a concatenated entry's.
    pub concatenated: Option<Concatenated>,
}

impl Entry {
    /// Whether the payload is compressed.
    pub fn compressed(&self) -> bool {
        self.compression != Compression::None
    }

    /// Whether the image is 64-bit code (`compile_size = 64bit`).
    pub fn is_64bit(&self) -> bool {
        self.flags & FLAG_64BIT != 0
    }

    /// The target as `cuobjdump --list-elf` / `--list-ptx` name it in
    /// `<file>.<n>.<target>.cubin|ptx`: as [`Target`]'s `Display`, except that
    /// a family-specific cubin is listed without its `f` (`sm_100f` cubins are
    /// listed as `sm_100`, `compute_100f` PTX as `sm_100f`). Checked against
    /// cuobjdump 13.5 on tests/fixtures/cuda/family_f.so and concat.so.
    pub fn listing_target(&self) -> String {
        let suffix = match (self.kind, self.target.suffix) {
            (EntryKind::Elf, Suffix::FamilySpecific) => Suffix::None,
            (_, suffix) => suffix,
        };
        format!("sm_{}{}", self.target.arch, Target::suffix_str(suffix))
    }
}

/// What is wrong with a fatbin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FatbinErrorKind {
    /// The section is empty, or holds only zero padding.
    Empty,
    /// `section_offset + section length` does not fit in 64 bits.
    OffsetOverflow,
    /// A container does not start with [`FATBIN_MAGIC`].
    BadMagic {
        /// The 32-bit little-endian word found.
        found: u32,
    },
    /// A container's version is not [`CONTAINER_VERSION`].
    UnsupportedVersion {
        /// The version found.
        found: u16,
    },
    /// A header is shorter than the data it must hold.
    HeaderTooSmall {
        /// "container" or "entry" or "concatenated sub-header".
        what: &'static str,
        /// The size the header claims or has.
        size: u64,
        /// The least acceptable.
        minimum: u64,
    },
    /// Something's bytes run past the end of what holds it.
    PastEnd {
        /// What runs past ("container", "entry header", "entry payload", ...).
        what: &'static str,
        /// How many bytes it needs from its offset.
        needed: u64,
        /// How many bytes there are from its offset.
        available: u64,
    },
    /// A compressed entry's lengths are inconsistent.
    CompressedLengths {
        /// The header's compressed size.
        compressed: u64,
        /// The header's payload (stored) size.
        stored: u64,
        /// The header's uncompressed size.
        uncompressed: u64,
    },
    /// A concatenated entry's sub-headers do not add up.
    Concatenation {
        /// What is inconsistent.
        detail: &'static str,
    },
    /// The file could not be read there (cut short while being read).
    Read {
        /// The operating system's words.
        detail: String,
    },
}

/// A fatbin that cannot be read, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FatbinError {
    /// Absolute file offset of the problem.
    pub offset: u64,
    /// The problem.
    pub kind: FatbinErrorKind,
}

impl fmt::Display for FatbinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fatbin at file offset {:#x}: ", self.offset)?;
        match &self.kind {
            FatbinErrorKind::Empty => write!(f, "no fatbin container in the section (empty or only zero bytes)"),
            FatbinErrorKind::OffsetOverflow => write!(f, "section offset plus length overflows 64 bits"),
            FatbinErrorKind::BadMagic { found } => {
                write!(f, "bad magic {found:#010x} (a container starts with {FATBIN_MAGIC:#010x})")
            }
            FatbinErrorKind::UnsupportedVersion { found } => {
                write!(f, "container version {found} (only {CONTAINER_VERSION} is known)")
            }
            FatbinErrorKind::HeaderTooSmall { what, size, minimum } => {
                write!(f, "{what} header size {size} is smaller than the minimum {minimum}")
            }
            FatbinErrorKind::PastEnd { what, needed, available } => {
                write!(f, "{what} needs {needed} bytes but only {available} remain")
            }
            FatbinErrorKind::CompressedLengths { compressed, stored, uncompressed } => write!(
                f,
                "compressed entry's lengths lie: compressed size {compressed}, stored size {stored}, \
                 uncompressed size {uncompressed}"
            ),
            FatbinErrorKind::Concatenation { detail } => write!(f, "concatenated entry: {detail}"),
            FatbinErrorKind::Read { detail } => write!(f, "cannot read: {detail}"),
        }
    }
}

impl std::error::Error for FatbinError {}

/// The longest entry header read whole: only a concatenated entry's header
/// is (its sub-headers are in it); nvcc 13.5 writes 200 to 312 bytes. Any
/// other entry's header is read for its fixed 64 bytes alone, whatever its
/// size field says.
pub const MAX_CONCATENATED_HEADER: u32 = 64 * 1024;

/// Reads every entry of a `.nv_fatbin` or `__nv_relfatbin` section held in
/// memory.
///
/// `section` is the section's bytes and `section_offset` its offset in the
/// file (`sh_offset`); every offset in the result and in an error is
/// absolute. Containers follow each other; zero padding between or after
/// them (whole 8-byte words of zeros) is skipped. An empty container is
/// fine; a section without any container is [`FatbinErrorKind::Empty`].
/// A concatenated entry (`nvcc --concat`) gives one [`Entry`] per image.
pub fn parse_section(section: &[u8], section_offset: u64) -> Result<Vec<Entry>, FatbinError> {
    let len = section.len() as u64;
    parse(&mut Section { reader: &mut io::Cursor::new(section), start: 0, len, base: section_offset })
}

/// Reads every entry of the section at `section_offset` (`sh_offset`),
/// `section_len` bytes long, of the file `reader`, as [`parse_section`]
/// does, reading the container and entry headers at their offsets and
/// seeking past every payload: a 128 MB section of a thousand entries is
/// read in a few kilobytes, and memory stays in proportion to the number of
/// entries.
///
/// The caller checks that the section lies within the file; a read that
/// fails anyway (a file cut short meanwhile) is [`FatbinErrorKind::Read`].
pub fn parse_section_at<R: Read + Seek>(
    reader: &mut R,
    section_offset: u64,
    section_len: u64,
) -> Result<Vec<Entry>, FatbinError> {
    parse(&mut Section { reader, start: section_offset, len: section_len, base: section_offset })
}

/// A section being read: `len` bytes from `start` in `reader`, reported at
/// absolute offsets from `base`. Positions below are relative to the section.
struct Section<'r, R> {
    reader: &'r mut R,
    start: u64,
    len: u64,
    base: u64,
}

impl<R: Read + Seek> Section<'_, R> {
    fn error(&self, pos: u64, kind: FatbinErrorKind) -> FatbinError {
        FatbinError { offset: self.base + pos, kind }
    }

    /// Fills `buf` from `pos`; the caller checked `pos + buf.len() <= len`.
    fn read(&mut self, pos: u64, buf: &mut [u8]) -> Result<(), FatbinError> {
        let at = self.start + pos;
        let result = self.reader.seek(SeekFrom::Start(at)).and_then(|_| self.reader.read_exact(buf));
        result.map_err(|e| self.error(pos, FatbinErrorKind::Read { detail: e.to_string() }))
    }

    /// `start + size` when it ends within `limit`, else a `PastEnd` error at `start`.
    fn span(&self, start: u64, size: u64, limit: u64, what: &'static str) -> Result<u64, FatbinError> {
        let available = limit.saturating_sub(start);
        if size > available {
            return Err(self.error(start, FatbinErrorKind::PastEnd { what, needed: size, available }));
        }
        // size <= available <= limit - start
        Ok(start + size)
    }
}

fn parse<R: Read + Seek>(s: &mut Section<'_, R>) -> Result<Vec<Entry>, FatbinError> {
    if s.base.checked_add(s.len).is_none() || s.start.checked_add(s.len).is_none() {
        return Err(s.error(0, FatbinErrorKind::OffsetOverflow));
    }
    // From here on `base + p` and `start + p` cannot overflow for any p <= len.
    let mut entries = Vec::new();
    let mut containers = 0usize;
    let mut pos = 0u64;
    while pos < s.len {
        let take = (s.len - pos).min(8) as usize;
        let mut word = [0u8; 8];
        s.read(pos, &mut word[..take])?;
        if word[..take].iter().all(|&b| b == 0) {
            if take < 8 {
                break;
            }
            pos += 8;
            continue;
        }
        let end = parse_container(s, pos, &mut entries)?;
        containers += 1;
        // parse_container returns an end past its header, so this progresses.
        debug_assert!(end > pos);
        pos = end;
    }
    if containers == 0 {
        return Err(s.error(0, FatbinErrorKind::Empty));
    }
    Ok(entries)
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    let bytes = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_le_bytes([bytes[0], bytes[1]]))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let bytes = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    let bytes = b.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(bytes);
    Some(u64::from_le_bytes(a))
}

/// Parses the container at `pos` and returns where it ends.
fn parse_container<R: Read + Seek>(
    s: &mut Section<'_, R>,
    pos: u64,
    entries: &mut Vec<Entry>,
) -> Result<u64, FatbinError> {
    s.span(pos, u64::from(CONTAINER_HEADER_SIZE), s.len, "container header")?;
    let mut h = [0u8; CONTAINER_HEADER_SIZE as usize];
    s.read(pos, &mut h)?;
    // The reads below are within the 16 bytes just read.
    let magic = u32_at(&h, 0).unwrap_or(0);
    if magic != FATBIN_MAGIC {
        return Err(s.error(pos, FatbinErrorKind::BadMagic { found: magic }));
    }
    let version = u16_at(&h, 4).unwrap_or(0);
    if version != CONTAINER_VERSION {
        return Err(s.error(pos, FatbinErrorKind::UnsupportedVersion { found: version }));
    }
    let header_size = u16_at(&h, 6).unwrap_or(0);
    if header_size < CONTAINER_HEADER_SIZE {
        return Err(s.error(
            pos,
            FatbinErrorKind::HeaderTooSmall {
                what: "container",
                size: u64::from(header_size),
                minimum: u64::from(CONTAINER_HEADER_SIZE),
            },
        ));
    }
    let fat_size = u64_at(&h, 8).unwrap_or(0);
    let first = s.span(pos, u64::from(header_size), s.len, "container header")?;
    let end = s.span(first, fat_size, s.len, "container")?;
    let mut p = first;
    while p < end {
        p = parse_entry(s, p, end, pos, entries)?;
    }
    Ok(end)
}

/// The fixed fields of an entry header (or of a concatenated sub-header).
struct RawHeader {
    kind: u16,
    header_size: u32,
    payload_size: u64,
    compressed_size: u32,
    options_offset: u32,
    minor: u16,
    major: u16,
    arch: u32,
    name_offset: u32,
    name_len: u32,
    flags: u64,
    uncompressed_size: u64,
}

impl RawHeader {
    /// Reads the 64 fixed bytes at the start of `h` (the caller checked there are 64).
    fn read(h: &[u8]) -> RawHeader {
        RawHeader {
            kind: u16_at(h, at::KIND).unwrap_or(0),
            header_size: u32_at(h, at::HEADER_SIZE).unwrap_or(0),
            payload_size: u64_at(h, at::PAYLOAD_SIZE).unwrap_or(0),
            compressed_size: u32_at(h, at::COMPRESSED_SIZE).unwrap_or(0),
            options_offset: u32_at(h, at::OPTIONS_OFFSET).unwrap_or(0),
            minor: u16_at(h, at::VERSION_MINOR).unwrap_or(0),
            major: u16_at(h, at::VERSION_MAJOR).unwrap_or(0),
            arch: u32_at(h, at::ARCH).unwrap_or(0),
            name_offset: u32_at(h, at::NAME_OFFSET).unwrap_or(0),
            name_len: u32_at(h, at::NAME_LEN).unwrap_or(0),
            flags: u64_at(h, at::FLAGS).unwrap_or(0),
            uncompressed_size: u64_at(h, at::UNCOMPRESSED_SIZE).unwrap_or(0),
        }
    }

    /// The length a sub-header of a concatenated entry takes: 64 bytes, or up
    /// to the NUL ending its option string or name, padded to 8 (what every
    /// real entry header's `header_size` is, e.g. options at 0x48 of length
    /// 0x14 give 96). Checked on tests/fixtures/cuda/concat.so.
    fn extent(&self, h: &[u8]) -> Option<u64> {
        let mut extent = u64::from(ENTRY_HEADER_MIN_SIZE);
        let string_end = |off: u32, len: u32| -> Option<u64> {
            let end = u64::from(off).checked_add(u64::from(len))?.checked_add(1)?;
            end.checked_add(7).map(|e| e & !7)
        };
        if self.options_offset != 0 {
            let off = usize::try_from(self.options_offset).ok()?;
            let (str_off, str_len) = (u32_at(h, off)?, u32_at(h, off.checked_add(4)?)?);
            extent = extent.max(u64::from(self.options_offset) + 8).max(string_end(str_off, str_len)?);
        }
        if self.name_offset != 0 || self.name_len != 0 {
            extent = extent.max(string_end(self.name_offset, self.name_len)?);
        }
        Some(extent)
    }

    fn entry(&self, offset: u64, container_offset: u64) -> Entry {
        let kind = EntryKind::from_raw(self.kind);
        let compression = Compression::from_flags(self.flags);
        let compressed = compression != Compression::None;
        Entry {
            kind,
            target: Target::from_header(self.arch, self.flags),
            code_version: (self.major, self.minor),
            ptx_isa: (kind == EntryKind::Ptx).then_some((self.major, self.minor)),
            compression,
            stored_size: self.payload_size,
            payload_size: if compressed { u64::from(self.compressed_size) } else { self.payload_size },
            uncompressed_size: if compressed { Some(self.uncompressed_size) } else { None },
            offset,
            payload_offset: offset + u64::from(self.header_size),
            container_offset,
            flags: self.flags,
            concatenated: None,
        }
    }
}

/// Parses the entry at `p` (within a container at `container`, ending at
/// `end`) and returns where the next one starts. Reads the fixed 64 bytes of
/// its header; the whole header only for a concatenated entry; never the
/// payload.
fn parse_entry<R: Read + Seek>(
    s: &mut Section<'_, R>,
    p: u64,
    end: u64,
    container: u64,
    entries: &mut Vec<Entry>,
) -> Result<u64, FatbinError> {
    s.span(p, u64::from(ENTRY_HEADER_MIN_SIZE), end, "entry header")?;
    let mut fixed = [0u8; ENTRY_HEADER_MIN_SIZE as usize];
    s.read(p, &mut fixed)?;
    let raw = RawHeader::read(&fixed);
    if raw.header_size < ENTRY_HEADER_MIN_SIZE {
        return Err(s.error(
            p,
            FatbinErrorKind::HeaderTooSmall {
                what: "entry",
                size: u64::from(raw.header_size),
                minimum: u64::from(ENTRY_HEADER_MIN_SIZE),
            },
        ));
    }
    let header_end = s.span(p, u64::from(raw.header_size), end, "entry header")?;
    let next = s.span(header_end, raw.payload_size, end, "entry payload")?;
    let compressed = raw.flags & COMPRESSION_FLAGS != 0;
    if compressed
        && (raw.compressed_size == 0 || u64::from(raw.compressed_size) > raw.payload_size || raw.uncompressed_size == 0)
    {
        return Err(s.error(
            p,
            FatbinErrorKind::CompressedLengths {
                compressed: u64::from(raw.compressed_size),
                stored: raw.payload_size,
                uncompressed: raw.uncompressed_size,
            },
        ));
    }
    let entry = raw.entry(s.base + p, s.base + container);
    if raw.kind == KIND_CONCATENATED {
        if raw.header_size > MAX_CONCATENATED_HEADER {
            return Err(s.error(p, FatbinErrorKind::Concatenation { detail: "entry header longer than 64 KiB" }));
        }
        // Bounded just above; within the container (span checked).
        let mut header = vec![0u8; raw.header_size as usize];
        s.read(p, &mut header)?;
        let blob_len = if compressed { raw.uncompressed_size } else { raw.payload_size };
        parse_concatenated(&header, &raw, &entry, blob_len, s.base + p, entries)?;
    } else {
        entries.push(entry);
    }
    Ok(next)
}

/// Reads the sub-headers of a concatenated entry (`header` is its whole
/// header, at file offset `offset`). Layout (no public source; checked on
/// tests/fixtures/cuda/concat.so): at the header's options offset, u32 count
/// and u32 length of the block (these 8 bytes included); then `count`
/// sub-headers, each an entry header whose `header_size` field holds the
/// image's offset in the entry's decompressed payload and whose payload size
/// is the image's size.
fn parse_concatenated(
    header: &[u8],
    raw: &RawHeader,
    outer: &Entry,
    blob_len: u64,
    offset: u64,
    entries: &mut Vec<Entry>,
) -> Result<(), FatbinError> {
    let err = |at: u64, detail| FatbinError { offset: offset + at, kind: FatbinErrorKind::Concatenation { detail } };
    let block = usize::try_from(raw.options_offset).unwrap_or(usize::MAX);
    let (Some(count), Some(block_len)) = (u32_at(header, block), block.checked_add(4).and_then(|b| u32_at(header, b)))
    else {
        // Named where the header says where it is: the offset may point anywhere.
        return Err(err(at::OPTIONS_OFFSET as u64, "descriptor block is outside the entry header"));
    };
    let block_end = block.checked_add(block_len as usize).filter(|&e| e <= header.len() && block_len >= 8);
    let Some(block_end) = block_end else {
        return Err(err(u64::from(raw.options_offset), "descriptor block length runs past the entry header"));
    };
    let mut p = block + 8;
    let mut index = 0u32;
    while p < block_end {
        let sub = &header[p..block_end];
        if sub.len() < ENTRY_HEADER_MIN_SIZE as usize {
            return Err(FatbinError {
                offset: offset + p as u64,
                kind: FatbinErrorKind::HeaderTooSmall {
                    what: "concatenated sub-header",
                    size: sub.len() as u64,
                    minimum: u64::from(ENTRY_HEADER_MIN_SIZE),
                },
            });
        }
        let d = RawHeader::read(sub);
        let Some(extent) = d.extent(sub).filter(|&e| e <= sub.len() as u64) else {
            return Err(err(p as u64, "a sub-header's strings run past the descriptor block"));
        };
        // In a sub-header the header_size slot is the image's offset in the payload.
        let image_offset = u64::from(d.header_size);
        if image_offset.checked_add(d.payload_size).is_none_or(|e| e > blob_len) {
            return Err(err(p as u64, "an image lies outside the entry's payload"));
        }
        entries.push(Entry {
            kind: EntryKind::from_raw(d.kind),
            target: Target::from_header(d.arch, d.flags),
            code_version: (d.major, d.minor),
            ptx_isa: (d.kind == KIND_PTX).then_some((d.major, d.minor)),
            uncompressed_size: Some(d.payload_size),
            offset: offset + p as u64,
            flags: d.flags,
            concatenated: Some(Concatenated { entry_offset: offset, index, offset_in_payload: image_offset }),
            ..outer.clone()
        });
        index = index.saturating_add(1);
        // extent >= 64 and <= sub.len(), so this progresses and stays in the block.
        p += extent as usize;
    }
    if index != count {
        return Err(err(u64::from(raw.options_offset), "sub-header count differs from the descriptors found"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry header of `size` bytes (at least 64) with the given fields.
    fn header(kind: u16, size: u32, payload: u64, arch: u32, version: (u16, u16), flags: u64) -> Vec<u8> {
        let mut h = vec![0u8; size as usize];
        h[0..2].copy_from_slice(&kind.to_le_bytes());
        h[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
        h[4..8].copy_from_slice(&size.to_le_bytes());
        h[8..16].copy_from_slice(&payload.to_le_bytes());
        h[0x18..0x1a].copy_from_slice(&version.1.to_le_bytes());
        h[0x1a..0x1c].copy_from_slice(&version.0.to_le_bytes());
        h[0x1c..0x20].copy_from_slice(&arch.to_le_bytes());
        h[0x28..0x30].copy_from_slice(&flags.to_le_bytes());
        h
    }

    fn set_u32(b: &mut [u8], at: usize, v: u32) {
        b[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }

    fn set_u64(b: &mut [u8], at: usize, v: u64) {
        b[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }

    /// An entry: header plus `payload` bytes of 0xAA.
    fn entry(kind: u16, arch: u32, version: (u16, u16), flags: u64, payload: usize) -> Vec<u8> {
        let mut e = header(kind, 64, payload as u64, arch, version, flags);
        e.extend(std::iter::repeat_n(0xAA, payload));
        e
    }

    /// A container around `entries`.
    fn container(entries: &[Vec<u8>]) -> Vec<u8> {
        let body: Vec<u8> = entries.concat();
        let mut c = Vec::new();
        c.extend_from_slice(&FATBIN_MAGIC.to_le_bytes());
        c.extend_from_slice(&1u16.to_le_bytes());
        c.extend_from_slice(&16u16.to_le_bytes());
        c.extend_from_slice(&(body.len() as u64).to_le_bytes());
        c.extend(body);
        c
    }

    const BASE: u64 = 0x2020;

    fn parse(b: &[u8]) -> Result<Vec<Entry>, FatbinError> {
        parse_section(b, BASE)
    }

    fn error(b: &[u8]) -> FatbinError {
        match parse(b) {
            Ok(entries) => panic!("expected an error, got {entries:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn one_sass_entry() {
        let s = container(&[entry(KIND_ELF, 86, (1, 8), 0x11, 16)]);
        let e = parse(&s).unwrap();
        assert_eq!(e.len(), 1);
        let e = &e[0];
        assert_eq!(e.kind, EntryKind::Elf);
        assert_eq!(e.target, Target { arch: 86, major: 8, minor: 6, suffix: Suffix::None });
        assert_eq!(e.target.to_string(), "sm_86");
        assert_eq!(e.listing_target(), "sm_86");
        assert_eq!((e.code_version, e.ptx_isa), ((1, 8), None));
        assert_eq!((e.compression, e.compressed(), e.is_64bit()), (Compression::None, false, true));
        assert_eq!((e.stored_size, e.payload_size, e.uncompressed_size), (16, 16, None));
        assert_eq!((e.container_offset, e.offset, e.payload_offset), (BASE, BASE + 16, BASE + 80));
    }

    #[test]
    fn compressed_ptx_names_its_isa() {
        let mut ptx = entry(KIND_PTX, 75, (9, 5), 0x8011, 16);
        set_u32(&mut ptx, at::COMPRESSED_SIZE, 14);
        set_u64(&mut ptx, at::UNCOMPRESSED_SIZE, 0x522);
        let e = parse(&container(&[ptx])).unwrap();
        assert_eq!(e[0].kind, EntryKind::Ptx);
        assert_eq!(e[0].ptx_isa, Some((9, 5)));
        assert_eq!(e[0].compression, Compression::Zstd);
        assert_eq!((e[0].payload_size, e[0].uncompressed_size), (14, Some(0x522)));
        assert_eq!(e[0].listing_target(), "sm_75");
    }

    #[test]
    fn suffixes_and_listing_names() {
        let s = container(&[
            entry(KIND_ELF, 90, (1, 8), 0x10_0011, 8),
            entry(KIND_ELF, 100, (1, 8), 0x120_0011, 8),
            entry(KIND_PTX, 100, (9, 5), 0x20_0011, 8),
            entry(KIND_PTX, 120, (9, 5), 0x10_0011, 8),
        ]);
        let e = parse(&s).unwrap();
        let names: Vec<(String, String)> = e.iter().map(|e| (e.target.to_string(), e.listing_target())).collect();
        let want = [("sm_90a", "sm_90a"), ("sm_100f", "sm_100"), ("sm_100f", "sm_100f"), ("sm_120a", "sm_120a")];
        assert_eq!(names, want.map(|(a, b)| (a.to_string(), b.to_string())));
        assert_eq!(e[1].target.suffix, Suffix::FamilySpecific);
        assert_eq!((e[1].target.major, e[1].target.minor), (10, 0));
    }

    #[test]
    fn containers_follow_each_other_with_zero_padding_and_empty_ones() {
        let mut s = container(&[]);
        s.extend(container(&[entry(KIND_ELF, 86, (1, 8), 0x11, 8)]));
        s.extend([0u8; 16]);
        s.extend(container(&[entry(KIND_PTX, 80, (9, 5), 0x11, 8), entry(KIND_ELF, 89, (1, 8), 0x11, 8)]));
        s.extend([0u8; 4]);
        let e = parse(&s).unwrap();
        let arches: Vec<u32> = e.iter().map(|e| e.target.arch).collect();
        assert_eq!(arches, [86, 80, 89]);
        assert_eq!(e[0].container_offset, BASE + 16);
        assert_eq!(e[1].container_offset, BASE + 16 + 16 + 72 + 16);
    }

    #[test]
    fn longer_headers_move_the_payload() {
        let mut ptx = header(KIND_PTX, 80, 8, 75, (9, 5), 0x11);
        set_u32(&mut ptx, at::OPTIONS_OFFSET, 0x40);
        set_u32(&mut ptx, 0x40, 0x48);
        ptx.extend([b'.'; 8]);
        let e = parse(&container(&[ptx])).unwrap();
        assert_eq!(e[0].payload_offset, BASE + 16 + 80);
    }

    /// A concatenated entry of two 64-byte ELF sub-headers (as nvcc --concat writes).
    fn concatenated(count: u32, block_len: u32, second_offset: u32, uncompressed: u64) -> Vec<u8> {
        let mut h = header(KIND_CONCATENATED, 200, 16, 0, (0, 1), 0x8011);
        set_u32(&mut h, at::COMPRESSED_SIZE, 10);
        set_u32(&mut h, at::OPTIONS_OFFSET, 0x40);
        set_u64(&mut h, at::UNCOMPRESSED_SIZE, uncompressed);
        set_u32(&mut h, 0x40, count);
        set_u32(&mut h, 0x44, block_len);
        let mut a = header(KIND_ELF, 64, 0x5f0, 86, (1, 8), 0x11);
        set_u32(&mut a, at::HEADER_SIZE, 0);
        let mut b = header(KIND_ELF, 64, 0x5f0, 120, (1, 8), 0x110_0011);
        set_u32(&mut b, at::HEADER_SIZE, second_offset);
        h[0x48..0x88].copy_from_slice(&a);
        h[0x88..0xc8].copy_from_slice(&b);
        h.extend([0xAA; 16]);
        h
    }

    #[test]
    fn concatenated_entry_gives_one_entry_per_image() {
        let s = container(&[concatenated(2, 0x88, 0x5f0, 0xbe0)]);
        let e = parse(&s).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!((e[0].listing_target().as_str(), e[1].listing_target().as_str()), ("sm_86", "sm_120a"));
        assert!(e.iter().all(|e| e.kind == EntryKind::Elf && e.compression == Compression::Zstd));
        assert_eq!(
            e[1].concatenated,
            Some(Concatenated { entry_offset: BASE + 16, index: 1, offset_in_payload: 0x5f0 })
        );
        assert_eq!((e[1].offset, e[1].payload_offset), (BASE + 16 + 0x88, BASE + 16 + 200));
        assert_eq!((e[1].uncompressed_size, e[1].payload_size, e[1].stored_size), (Some(0x5f0), 10, 16));
    }

    #[test]
    fn concatenated_entry_errors() {
        let cases = [
            (concatenated(3, 0x88, 0x5f0, 0xbe0), "count"),
            (concatenated(2, 0x1000, 0x5f0, 0xbe0), "runs past"),
            (concatenated(2, 0x4, 0x5f0, 0xbe0), "runs past"),
            (concatenated(2, 0x88, 0x5f1, 0xbe0), "outside"),
            (concatenated(2, 0x80, 0x5f0, 0xbe0), "sub-header"),
        ];
        for (bytes, word) in cases {
            let e = error(&container(&[bytes]));
            assert!(e.to_string().contains(word), "{e} should say {word}");
        }
        let mut outside = concatenated(2, 0x88, 0x5f0, 0xbe0);
        set_u32(&mut outside, at::OPTIONS_OFFSET, 0xfff0);
        let e = error(&container(&[outside]));
        assert!(matches!(e.kind, FatbinErrorKind::Concatenation { .. }));
        // Named at the options-offset field, within the entry: not where it points.
        assert_eq!(e.offset, BASE + 16 + at::OPTIONS_OFFSET as u64);
        // Near the end of the offsets, nothing overflows.
        let mut far = concatenated(2, 0x88, 0x5f0, 0xbe0);
        set_u32(&mut far, at::OPTIONS_OFFSET, u32::MAX);
        let s = container(&[far]);
        let e = parse_section(&s, u64::MAX - s.len() as u64).unwrap_err();
        assert!(matches!(e.kind, FatbinErrorKind::Concatenation { .. }), "{e}");
    }

    #[test]
    fn reading_at_offsets_gives_what_reading_in_memory_gives() {
        let mut ptx = entry(KIND_PTX, 75, (9, 5), 0x8011, 16);
        set_u32(&mut ptx, at::COMPRESSED_SIZE, 14);
        set_u64(&mut ptx, at::UNCOMPRESSED_SIZE, 0x522);
        let mut s = container(&[entry(KIND_ELF, 86, (1, 8), 0x11, 24), ptx]);
        s.extend(container(&[concatenated(2, 0x88, 0x5f0, 0xbe0)]));
        let mut file = vec![0xEE; BASE as usize];
        file.extend(&s);
        file.extend([0xEE; 32]);
        let at = parse_section_at(&mut io::Cursor::new(&file), BASE, s.len() as u64);
        assert_eq!(at, parse(&s));
        assert_eq!(at.unwrap().len(), 4);
        // An error too is named at the same absolute offset.
        file[BASE as usize] = 0;
        assert_eq!(parse_section_at(&mut io::Cursor::new(&file), BASE, s.len() as u64).unwrap_err().offset, BASE);
    }

    #[test]
    fn a_file_shorter_than_its_section_is_a_read_error() {
        let s = container(&[entry(KIND_ELF, 86, (1, 8), 0x11, 8)]);
        let e = parse_section_at(&mut io::Cursor::new(&s[..20]), 0, s.len() as u64).unwrap_err();
        assert!(matches!(e.kind, FatbinErrorKind::Read { .. }), "{e}");
        assert_eq!(e.offset, 16);
    }

    #[test]
    fn a_concatenated_header_longer_than_64_kib_is_refused_unread() {
        let mut h = concatenated(2, 0x88, 0x5f0, 0xbe0);
        set_u32(&mut h, at::HEADER_SIZE, MAX_CONCATENATED_HEADER + 8);
        h.resize(MAX_CONCATENATED_HEADER as usize + 8 + 16, 0);
        let e = error(&container(&[h]));
        assert_eq!(e.kind, FatbinErrorKind::Concatenation { detail: "entry header longer than 64 KiB" });
        assert_eq!(e.offset, BASE + 16);
    }

    #[test]
    fn empty_section() {
        assert_eq!(error(&[]), FatbinError { offset: BASE, kind: FatbinErrorKind::Empty });
        assert_eq!(error(&[0; 24]).kind, FatbinErrorKind::Empty);
    }

    #[test]
    fn offset_overflow() {
        let s = container(&[]);
        assert_eq!(parse_section(&s, u64::MAX - 4).unwrap_err().kind, FatbinErrorKind::OffsetOverflow);
    }

    #[test]
    fn bad_magic() {
        let mut s = container(&[entry(KIND_ELF, 86, (1, 8), 0x11, 8)]);
        s[0] = 0x51;
        let e = error(&s);
        assert_eq!(e, FatbinError { offset: BASE, kind: FatbinErrorKind::BadMagic { found: 0xBA55_ED51 } });
        assert!(e.to_string().contains("0x2020") && e.to_string().contains("0xba55ed51"), "{e}");
        // A second container's bad magic is named at its own offset.
        let mut two = container(&[]);
        two.extend(b"not a fatbin, no");
        assert_eq!(error(&two).offset, BASE + 16);
    }

    #[test]
    fn unsupported_container_version() {
        let mut s = container(&[]);
        s[4] = 2;
        assert_eq!(error(&s).kind, FatbinErrorKind::UnsupportedVersion { found: 2 });
    }

    #[test]
    fn container_header_smaller_than_minimum() {
        let mut s = container(&[]);
        s[6] = 8;
        let e = error(&s);
        assert_eq!(e.kind, FatbinErrorKind::HeaderTooSmall { what: "container", size: 8, minimum: 16 });
    }

    #[test]
    fn truncated_container_header() {
        let s = container(&[]);
        let e = error(&s[..12]);
        assert!(matches!(e.kind, FatbinErrorKind::PastEnd { what: "container header", needed: 16, available: 12 }));
    }

    #[test]
    fn container_size_past_section() {
        let mut s = container(&[entry(KIND_ELF, 86, (1, 8), 0x11, 8)]);
        set_u64(&mut s, 8, 1 << 40);
        let e = error(&s);
        assert_eq!(e.offset, BASE + 16);
        assert!(matches!(e.kind, FatbinErrorKind::PastEnd { what: "container", .. }), "{e}");
        set_u64(&mut s, 8, u64::MAX);
        assert!(matches!(error(&s).kind, FatbinErrorKind::PastEnd { .. }));
    }

    #[test]
    fn entry_header_past_container() {
        let mut s = container(&[entry(KIND_ELF, 86, (1, 8), 0x11, 8)]);
        set_u64(&mut s, 8, 40);
        let e = error(&s);
        assert_eq!(e.offset, BASE + 16);
        assert!(matches!(e.kind, FatbinErrorKind::PastEnd { what: "entry header", needed: 64, available: 40 }));
    }

    #[test]
    fn entry_header_smaller_than_minimum() {
        for size in [0u32, 16, 63] {
            let mut s = container(&[entry(KIND_ELF, 86, (1, 8), 0x11, 8)]);
            set_u32(&mut s, 16 + at::HEADER_SIZE, size);
            let e = error(&s);
            assert_eq!(e.offset, BASE + 16);
            let want = FatbinErrorKind::HeaderTooSmall { what: "entry", size: u64::from(size), minimum: 64 };
            assert_eq!(e.kind, want);
        }
    }

    #[test]
    fn entry_header_size_past_container() {
        let mut s = container(&[entry(KIND_ELF, 86, (1, 8), 0x11, 8)]);
        set_u32(&mut s, 16 + at::HEADER_SIZE, u32::MAX);
        assert!(matches!(error(&s).kind, FatbinErrorKind::PastEnd { what: "entry header", .. }));
    }

    #[test]
    fn entry_payload_past_container() {
        let mut s = container(&[entry(KIND_ELF, 86, (1, 8), 0x11, 8)]);
        set_u64(&mut s, 16 + at::PAYLOAD_SIZE, 9);
        let e = error(&s);
        assert_eq!(e.offset, BASE + 16 + 64);
        assert_eq!(e.kind, FatbinErrorKind::PastEnd { what: "entry payload", needed: 9, available: 8 });
        set_u64(&mut s, 16 + at::PAYLOAD_SIZE, u64::MAX);
        assert!(matches!(error(&s).kind, FatbinErrorKind::PastEnd { .. }));
    }

    #[test]
    fn compressed_entry_whose_lengths_lie() {
        // (compressed size, uncompressed size) against a stored size of 16.
        for (compressed, uncompressed) in [(0u32, 100u64), (17, 100), (12, 0)] {
            for flag in [FLAG_COMPRESSED_ZSTD, FLAG_COMPRESSED_LZ4, FLAG_COMPRESSED_LEGACY] {
                let mut e = entry(KIND_PTX, 75, (9, 5), 0x11 | flag, 16);
                set_u32(&mut e, at::COMPRESSED_SIZE, compressed);
                set_u64(&mut e, at::UNCOMPRESSED_SIZE, uncompressed);
                let err = error(&container(&[e]));
                assert_eq!(err.offset, BASE + 16);
                assert!(matches!(err.kind, FatbinErrorKind::CompressedLengths { .. }), "{err}");
                assert!(err.to_string().contains("lie"));
            }
        }
    }

    #[test]
    fn trailing_garbage_is_an_error() {
        let mut s = container(&[]);
        s.extend([1, 2, 3]);
        assert!(matches!(error(&s).kind, FatbinErrorKind::PastEnd { what: "container header", .. }));
    }

    #[test]
    fn errors_display_the_offset_and_implement_error() {
        let e: Box<dyn std::error::Error> = Box::new(error(&[7; 16]));
        assert!(e.to_string().starts_with("fatbin at file offset 0x2020: bad magic"), "{e}");
    }

    /// A tiny xorshift generator: std only, reproducible.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn random_mutations_never_panic() {
        let mut ptx = entry(KIND_PTX, 75, (9, 5), 0x8011, 16);
        set_u32(&mut ptx, at::COMPRESSED_SIZE, 14);
        set_u64(&mut ptx, at::UNCOMPRESSED_SIZE, 0x522);
        let mut good = container(&[entry(KIND_ELF, 86, (1, 8), 0x11, 24), ptx]);
        good.extend(container(&[concatenated(2, 0x88, 0x5f0, 0xbe0)]));
        assert_eq!(parse(&good).unwrap().len(), 4);
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..20_000 {
            let mut b = good.clone();
            for _ in 0..(xorshift(&mut state) % 4 + 1) {
                let i = (xorshift(&mut state) % b.len() as u64) as usize;
                b[i] = xorshift(&mut state) as u8;
            }
            let cut = (xorshift(&mut state) % (b.len() as u64 + 1)) as usize;
            let _ = parse_section(&b, xorshift(&mut state) >> 20);
            let _ = parse_section(&b[..cut], BASE);
            let _ = parse_section(&b[cut..], BASE);
        }
    }
}
