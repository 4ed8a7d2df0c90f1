//! The simulated dynamic loader: resolves a simulated ELF file's needs
//! against its own directory (`$ORIGIN`) and the host's libraries, and
//! prints what `ldd` would.
//!
//! Host libraries ([`system_library`]): glibc's own are on every glibc
//! system; libstdc++ and libgcc_s wherever the host names a `glibcxx`;
//! OpenMP and the Vulkan loader when their OS package is installed;
//! `libcuda.so.1` with the NVIDIA driver. Symbol versions: `GLIBC_x.y` needs
//! glibc >= x.y, `GLIBCXX_3.4.n` needs the host's `glibcxx` >= 3.4.n;
//! `CXXABI_*` is taken as met wherever libstdc++ is (not modelled). A musl
//! host has none of glibc's libraries.

use std::collections::{BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use crate::truth::stub::ElfStub;
use llmgw_model::host::{DottedVersion, Host, Libc, PackageFamily};

/// Where a needed library was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// A simulated file in the build's tree.
    Tree(PathBuf),
    /// A host library at this path.
    System(String),
    /// Nowhere.
    Missing,
}

/// The loader's view of one file: every library reached and every symbol
/// version missing.
#[derive(Debug, Clone, Default)]
pub(crate) struct Resolution {
    /// Libraries in the order the loader reached them.
    pub libraries: Vec<(String, Found)>,
    /// `(version, library path, required-by path)` not met.
    pub missing_versions: BTreeSet<(String, String, String)>,
}

impl Resolution {
    /// Whether everything loads.
    pub fn loads(&self) -> bool {
        self.missing_versions.is_empty() && self.libraries.iter().all(|(_, f)| *f != Found::Missing)
    }

    /// The first problem in the words the loader prints when a program
    /// starts: `error while loading shared libraries: …` or a version line.
    pub fn loader_error(&self, program: &Path) -> Option<String> {
        if let Some((lib, _)) = self.libraries.iter().find(|(_, f)| *f == Found::Missing) {
            return Some(format!(
                "{}: error while loading shared libraries: {lib}: cannot open shared object file: No such file or directory",
                program.display()
            ));
        }
        self.missing_versions
            .iter()
            .next()
            .map(|(v, lib, by)| format!("{}: {lib}: version `{v}' not found (required by {by})", program.display()))
    }

    /// `ldd`'s output for the file at `path`: version errors, then one line per library.
    pub fn ldd_text(&self, path: &Path, host: &Host) -> String {
        let mut out = String::new();
        for (v, lib, by) in &self.missing_versions {
            out.push_str(&format!("{}: {lib}: version `{v}' not found (required by {by})\n", path.display()));
        }
        if host.os.libc == Libc::Musl {
            out.push_str(&format!("\t/lib/ld-musl-{}.so.1 (0x7f0000000000)\n", host.arch.gnu()));
            for (lib, found) in &self.libraries {
                match found {
                    Found::Missing => out.push_str(&format!(
                        "Error loading shared library {lib}: No such file or directory (needed by {})\n",
                        path.display()
                    )),
                    Found::Tree(p) => out.push_str(&format!("\t{lib} => {} (0x7f0000000000)\n", p.display())),
                    Found::System(p) => out.push_str(&format!("\t{lib} => {p} (0x7f0000000000)\n")),
                }
            }
            return out;
        }
        out.push_str("\tlinux-vdso.so.1 (0x00007ffd00000000)\n");
        for (lib, found) in &self.libraries {
            match found {
                Found::Missing => out.push_str(&format!("\t{lib} => not found\n")),
                Found::Tree(p) => out.push_str(&format!("\t{lib} => {} (0x00007f0000000000)\n", p.display())),
                Found::System(p) => out.push_str(&format!("\t{lib} => {p} (0x00007f0000000000)\n")),
            }
        }
        out
    }
}

/// Resolves `path` (a simulated ELF file already read as `stub`) on `host`;
/// `read` reads another file of the tree.
pub(crate) fn resolve(
    host: &Host,
    path: &Path,
    stub: &ElfStub,
    mut read: impl FnMut(&Path) -> Option<Vec<u8>>,
) -> Resolution {
    let mut res = Resolution::default();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut queue: VecDeque<(PathBuf, ElfStub)> = VecDeque::from([(path.to_path_buf(), stub.clone())]);
    while let Some((file, stub)) = queue.pop_front() {
        check_versions(host, &file, &stub, &mut res);
        let origin = file.parent().unwrap_or(Path::new("/")).to_path_buf();
        for lib in &stub.needed {
            if !seen.insert(lib.clone()) {
                continue;
            }
            let in_tree = stub.runpath.as_deref().is_some_and(|r| r.split(':').any(|d| d == "$ORIGIN"));
            let candidate = origin.join(lib);
            let tree_stub = if in_tree { read(&candidate).and_then(|b| ElfStub::from_bytes(&b)) } else { None };
            let found = match tree_stub {
                Some(s) => {
                    queue.push_back((candidate.clone(), s));
                    Found::Tree(candidate)
                }
                None => system_library(host, lib).map_or(Found::Missing, Found::System),
            };
            res.libraries.push((lib.clone(), found));
        }
    }
    res
}

/// The directory a host's libraries live in, by family and architecture.
fn lib_dir(host: &Host) -> String {
    match host.os.package_family {
        PackageFamily::Deb => format!("/lib/{}-linux-gnu", host.arch.gnu()),
        PackageFamily::Apk => "/usr/lib".to_string(),
        _ => "/lib64".to_string(),
    }
}

/// Every library some simulated host provides ([`system_library`] says
/// which host): glibc's, the C++ runtime, OpenMP, the Vulkan loader, the
/// dynamic loaders, and the NVIDIA driver's.
pub const SYSTEM_LIBRARIES: &[&str] = &[
    "libc.so.6",
    "libm.so.6",
    "libdl.so.2",
    "libpthread.so.0",
    "librt.so.1",
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
    "libstdc++.so.6",
    "libgcc_s.so.1",
    "libgomp.so.1",
    "libvulkan.so.1",
    "libcuda.so.1",
    "libnvidia-ml.so.1",
];

/// Where the host provides library `lib`, or `None`.
pub(crate) fn system_library(host: &Host, lib: &str) -> Option<String> {
    let glibc = host.os.libc == Libc::Glibc;
    let installed = |names: &[&str]| names.iter().any(|n| host.packages.installed.contains(*n));
    let present = match lib {
        "libc.so.6" | "libm.so.6" | "libdl.so.2" | "libpthread.so.0" | "librt.so.1" => glibc,
        // The dynamic loader, which NVIDIA's libraries name among their needs.
        "ld-linux-x86-64.so.2" => glibc && host.arch == llmgw_model::host::Arch::Amd64,
        "ld-linux-aarch64.so.1" => glibc && host.arch == llmgw_model::host::Arch::Arm64,
        "libstdc++.so.6" | "libgcc_s.so.1" => glibc && host.os.glibcxx.is_some(),
        // OpenMP's runtime: Debian/Ubuntu libgomp1; RHEL, Amazon Linux, Alpine libgomp.
        "libgomp.so.1" => glibc && installed(&["libgomp1", "libgomp"]),
        // The Vulkan loader: Debian/Ubuntu libvulkan1; RHEL, Alpine vulkan-loader.
        "libvulkan.so.1" => glibc && installed(&["libvulkan1", "vulkan-loader"]),
        // The NVIDIA driver's user-space libraries come with the driver.
        "libcuda.so.1" | "libnvidia-ml.so.1" => host.nvidia.is_some(),
        _ => false,
    };
    present.then(|| format!("{}/{lib}", lib_dir(host)))
}

fn check_versions(host: &Host, file: &Path, stub: &ElfStub, res: &mut Resolution) {
    for v in &stub.requires {
        let (lib, have, need) = if let Some(n) = v.strip_prefix("GLIBC_") {
            ("libc.so.6", host.os.glibc.as_ref(), n)
        } else if let Some(n) = v.strip_prefix("GLIBCXX_") {
            ("libstdc++.so.6", host.os.glibcxx.as_ref(), n)
        } else {
            continue;
        };
        let Some(lib_path) = system_library(host, lib) else {
            continue; // reported as a missing library instead
        };
        let met = match (have, DottedVersion::parse(need)) {
            (Some(have), Ok(need)) => *have >= need,
            _ => false,
        };
        if !met {
            res.missing_versions.insert((v.clone(), lib_path, file.display().to_string()));
        }
    }
}
