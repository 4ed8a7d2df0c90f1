//! Real programs for the fake publisher (`llmgw mock-server
//! --real-programs`): the simulated programs of the archive engines'
//! builds for this machine's architecture (llama.cpp, uv) replaced by small
//! real ELF files compiled here with the system's C compiler, so that a
//! real `llmgw provision --github-api <the fake server>` installs them end
//! to end: the real `ldd` reads them, the real version command runs.
//!
//! Each program prints what its build's truth says for its version command
//! (`version: 0.4.0-dev (build 10850, commit fe14399)`, `uv 0.12.20 (…)`),
//! on the same stream, answers `--list-devices` with no device, and, as
//! `llama-bench -m MODEL`, checks the model's GGUF magic and prints one
//! row of 8 tokens generated (it
//! computes nothing); each shared library is an empty one. Neither needs
//! more than the C library. The builds of other architectures, and the
//! Python engines' wheels, keep the simulated programs, which only `llmgw
//! simulate` runs.
//!
//! Compiled through the [`System`] (`cc`, files in `dir`), as the rest of
//! the simulation's effects are.
//!
//! Uses: `truth`.

use std::fmt::Write as _;
use std::path::Path;

use crate::truth::stub::VersionOutput;
use crate::truth::{Catalog, File};
use llmgw_core::system::{Cmd, System};
use llmgw_model::host::Arch;

/// The engines whose archives get real programs.
pub const ENGINES: &[&str] = &["llama.cpp", "uv"];

/// What was made real: `(asset, files)`, in the catalog's order.
pub type Replaced = Vec<(String, usize)>;

/// `catalog` with every ELF file of the archive engines' assets for `arch`
/// replaced by a real program or library compiled with `cc` in `dir` (an
/// existing, empty directory); what was replaced.
///
/// # Errors
/// Why the C compiler could not build them (none installed, its own error
/// output).
pub fn with_real_programs(
    sys: &mut dyn System,
    dir: &Path,
    catalog: &Catalog,
    arch: Arch,
) -> Result<(Catalog, Replaced), String> {
    let library = compile(sys, dir, "libllmgw-fake", "int llmgw_fake_library(void) { return 0; }\n", true)?;
    let mut programs: Vec<(VersionOutput, Vec<u8>)> = Vec::new();
    let mut out = catalog.clone();
    let mut replaced = Replaced::new();
    for release in out.releases.iter_mut().filter(|r| ENGINES.contains(&r.engine.as_str())) {
        for asset in release.assets.iter_mut().filter(|a| asset_arch(&a.name) == Some(arch)) {
            let mut n = 0;
            for file in asset.files.iter_mut() {
                let Some(elf) = file.elf.take() else { continue };
                let bytes = match &elf.version {
                    None => library.clone(),
                    Some(v) => match programs.iter().find(|(o, _)| o == v) {
                        Some((_, b)) => b.clone(),
                        None => {
                            let name = format!("program-{}", programs.len());
                            let b = compile(sys, dir, &name, &program_source(v), false)?;
                            programs.push((v.clone(), b.clone()));
                            b
                        }
                    },
                };
                *file = File { path: file.path.clone(), raw: Some(bytes), ..File::default() };
                n += 1;
            }
            if n > 0 {
                replaced.push((asset.name.clone(), n));
            }
        }
    }
    Ok((out, replaced))
}

/// The architecture an archive is for, by its name (`…-x64.tar.gz`,
/// `uv-aarch64-…`); `None` when the name does not say one llmgw knows.
pub fn asset_arch(name: &str) -> Option<Arch> {
    let stem = name.trim_end_matches(".tar.gz");
    let word = |w: &str| stem.split('-').any(|x| x == w);
    if stem.contains("x86_64") || word("x64") {
        Some(Arch::Amd64)
    } else if stem.contains("aarch64") || word("arm64") {
        Some(Arch::Arm64)
    } else {
        None
    }
}

/// A C program that prints `v` for its version arguments, lists no device
/// for `--list-devices`, reads a model's magic and prints one generation
/// row for `-m MODEL` (llama-bench's compute check), and fails otherwise.
fn program_source(v: &VersionOutput) -> String {
    let mut test = String::new();
    for (i, a) in v.args.iter().enumerate() {
        let _ = write!(test, " && strcmp(argv[{}], {}) == 0", i + 1, c_string(a));
    }
    format!(
        "#include <stdio.h>\n#include <string.h>\n\
         /* A real stand-in built by llmgw mock-server --real-programs: it computes nothing. */\n\
         int main(int argc, char **argv) {{\n\
         \x20   if (argc == {argc}{test}) {{\n\
         \x20       fputs({out}, stdout);\n\
         \x20       fputs({err}, stderr);\n\
         \x20       return 0;\n\
         \x20   }}\n\
         \x20   if (argc == 2 && strcmp(argv[1], \"--list-devices\") == 0) {{\n\
         \x20       fputs(\"Available devices:\\n  (none)\\n\", stdout);\n\
         \x20       return 0;\n\
         \x20   }}\n\
         \x20   /* llama-bench -m MODEL … -o jsonl: the model's header read, one row said; nothing computed. */\n\
         \x20   for (int i = 1; i + 1 < argc; i++) {{\n\
         \x20       if (strcmp(argv[i], \"-m\") != 0) continue;\n\
         \x20       char magic[4] = {{0}};\n\
         \x20       FILE *f = fopen(argv[i + 1], \"rb\");\n\
         \x20       if (!f || fread(magic, 1, 4, f) != 4 || memcmp(magic, \"GGUF\", 4) != 0) {{\n\
         \x20           fputs(\"llama_model_load: error loading model: not a GGUF file\\n\", stderr);\n\
         \x20           return 1;\n\
         \x20       }}\n\
         \x20       fclose(f);\n\
         \x20       puts(\"{{\\\"n_prompt\\\": 0, \\\"n_gen\\\": 8, \\\"avg_ts\\\": 1.0, \\\"backends\\\": \\\"CPU\\\", \\\"devices\\\": \\\"none\\\"}}\");\n\
         \x20       return 0;\n\
         \x20   }}\n\
         \x20   fputs(\"a stand-in from llmgw mock-server --real-programs: it only answers its version command\\n\", stderr);\n\
         \x20   return 1;\n\
         }}\n",
        argc = v.args.len() + 1,
        out = c_string(&v.stdout),
        err = c_string(&v.stderr),
    )
}

/// `s` as a C string literal.
fn c_string(s: &str) -> String {
    let mut out = String::from("\"");
    for b in s.bytes() {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => {
                let _ = write!(out, "\\{b:03o}");
            }
        }
    }
    out.push('"');
    out
}

/// Compiles `source` into `dir/name` (a shared library when `shared`), and reads it back.
fn compile(sys: &mut dyn System, dir: &Path, name: &str, source: &str, shared: bool) -> Result<Vec<u8>, String> {
    let src = dir.join(format!("{name}.c"));
    let bin = dir.join(name);
    sys.write_atomic(&src, source.as_bytes()).map_err(|e| e.to_string())?;
    let mut cmd = Cmd::new("cc", ["-O1", "-o"]).arg_path(&bin).arg_path(&src);
    if shared {
        cmd = cmd.args(["-shared", "-fPIC"]);
    }
    let out =
        sys.run(&cmd).map_err(|e| format!("no C compiler to build real programs with ({e}): install one (gcc)"))?;
    if !out.success() {
        return Err(format!("cc could not build {name}: {}", out.stderr.trim()));
    }
    sys.read(&bin).map_err(|e| e.to_string())?.ok_or_else(|| format!("cc wrote no {name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_archive_says_its_architecture_by_its_name() {
        assert_eq!(asset_arch("llama-b10850-bin-ubuntu-x64.tar.gz"), Some(Arch::Amd64));
        assert_eq!(asset_arch("llama-b10850-bin-ubuntu-vulkan-arm64.tar.gz"), Some(Arch::Arm64));
        assert_eq!(asset_arch("cudart-llama-b11459-bin-ubuntu-cuda-12.8-x64.tar.gz"), Some(Arch::Amd64));
        assert_eq!(asset_arch("uv-x86_64-unknown-linux-gnu.tar.gz"), Some(Arch::Amd64));
        assert_eq!(asset_arch("uv-aarch64-unknown-linux-musl.tar.gz"), Some(Arch::Arm64));
        assert_eq!(asset_arch("llama-b10850-bin-ubuntu-s390x.tar.gz"), None);
    }

    #[test]
    fn text_becomes_a_c_string_that_says_the_same() {
        assert_eq!(c_string("version: 1 (a\"b)\n\\é"), "\"version: 1 (a\\\"b)\\n\\\\\\303\\251\"");
    }
}
