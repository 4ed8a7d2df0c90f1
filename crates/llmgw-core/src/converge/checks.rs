//! The checks that decide whether an unpacked build works: `ldd` of the
//! binary and of the libraries it loads at run time, the version command,
//! the GPU device listing, then the computation (`compute.rs`; Python's
//! torch and Triton check here). Each returns the sentence that explains a failure,
//! naming files by name (never by the staging path).

use std::path::{Path, PathBuf};

use super::BuildFailure;
use crate::parse::{devices, ldd};
use crate::recipe::{Build, GpuCheck};
use crate::system::{Cmd, SysError, System};
use llmgw_model::host::Host;

/// What files that are no real build say of themselves: a stand-in whose
/// first bytes are `magic` (the fake publisher's simulated programs, which
/// only the simulated machine runs) is refused with `says` when the real
/// `ldd` finds it is not a dynamic executable. The core does not know the
/// simulation: whoever wires the installer to a fake publisher says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotABuild {
    /// The file's first bytes.
    pub magic: &'static [u8],
    /// What such a file is, after its name: `is a simulated program …`.
    pub says: &'static str,
}

/// Finds the first regular file named `name` in `root`, breadth first, in
/// name order; `None` when there is none.
///
/// # Errors
/// A directory that cannot be listed.
pub fn find_binary(sys: &mut dyn System, root: &Path, name: &str) -> Result<Option<PathBuf>, SysError> {
    let mut queue = std::collections::VecDeque::from([root.to_path_buf()]);
    while let Some(dir) = queue.pop_front() {
        let entries = sys.list_dir(&dir)?.unwrap_or_default();
        if let Some(e) = entries.iter().find(|e| !e.is_dir && e.name == name) {
            return Ok(Some(dir.join(&e.name)));
        }
        queue.extend(entries.iter().filter(|e| e.is_dir).map(|e| dir.join(&e.name)));
    }
    Ok(None)
}

/// `ldd` of the binary and of each library it loads at run time (found
/// beside it): every missing library and symbol version, in one sentence.
/// A file that is `not_a_build` says so.
///
/// # Errors
/// The sentence naming what is missing, or the library that is not there.
pub fn libraries_load(
    sys: &mut dyn System,
    build: &Build,
    binary: &Path,
    not_a_build: Option<NotABuild>,
) -> Result<(), String> {
    let dir = binary.parent().unwrap_or(Path::new("/"));
    let mut files = vec![binary.to_path_buf()];
    for lib in build.runtime_libraries.iter().chain(build.gpu_backend().map(|g| &g.library)) {
        files.push(dir.join(lib));
    }
    let mut libs = std::collections::BTreeSet::new();
    let mut versions = std::collections::BTreeSet::new();
    for f in &files {
        let name = file_name(f);
        let beside = sys.list_dir(dir).map_err(|e| e.to_string())?.unwrap_or_default();
        if !beside.iter().any(|e| !e.is_dir && e.name == name) {
            return Err(format!("the build has no {name} beside {}", build.binary));
        }
        let out = sys.run(&Cmd::new("ldd", [f.display().to_string()]).timeout(60)).map_err(|e| e.to_string())?;
        let report = ldd::parse(&format!("{}\n{}", out.stdout, out.stderr));
        if report.not_dynamic {
            if let Some(stand_in) = not_a_build
                && sys.read(f).ok().flatten().is_some_and(|b| b.starts_with(stand_in.magic))
            {
                return Err(format!("{name} {}", stand_in.says));
            }
            return Err(format!("ldd says {name} is not a dynamic executable"));
        }
        // A failing ldd whose words the parser does not know is no proof the file loads.
        if !out.success() && report.is_clean() {
            let said = format!("{}\n{}", out.stderr, out.stdout);
            return Err(format!("ldd {name} {}: {}{}", out.ended, first_line(&said, f), printed(&out)));
        }
        libs.extend(report.missing_libraries.into_iter().map(|l| (l, name.clone())));
        versions.extend(report.missing_versions);
    }
    if libs.is_empty() && versions.is_empty() {
        return Ok(());
    }
    let mut parts = Vec::new();
    if !versions.is_empty() {
        // One entry per version, glibc's before libstdc++'s, numerically.
        let mut listed: Vec<(&str, Vec<u32>, String)> = versions
            .iter()
            .map(|v| {
                let (family, number) = v.version.rsplit_once('_').unwrap_or((&v.version, ""));
                let key = number.split('.').filter_map(|n| n.parse().ok()).collect();
                (family, key, format!("{} ({})", v.version, v.library))
            })
            .collect();
        listed.sort();
        listed.dedup_by(|a, b| a.2 == b.2);
        let listed: Vec<String> = listed.into_iter().map(|(_, _, s)| s).collect();
        parts.push(format!("this system's libraries lack {}", listed.join(", ")));
    }
    if !libs.is_empty() {
        let mut listed: Vec<String> = Vec::new();
        for (lib, by) in &libs {
            let entry = format!("{lib} (needed by {by})");
            if !listed.iter().any(|l| l.starts_with(&format!("{lib} "))) {
                listed.push(entry);
            }
        }
        parts.push(format!("not found: {}", listed.join(", ")));
    }
    Err(format!("ldd: {}", parts.join("; ")))
}

/// Runs the version command; it must exit 0 and say the version.
///
/// # Errors
/// The sentence with the exit status and the program's first line of error.
pub fn version_runs(sys: &mut dyn System, build: &Build, binary: &Path, timeout: u64) -> Result<String, String> {
    let cmd = Cmd::new(binary, build.version_args.clone()).timeout(timeout);
    let shown = format!("{} {}", build.binary, build.version_args.join(" "));
    let out = sys.run(&cmd).map_err(|e| e.to_string())?;
    let text = format!("{}\n{}", out.stdout, out.stderr);
    if !out.success() {
        return Err(format!("`{shown}` {}: {}{}", out.ended, first_line(&out.stderr, binary), printed(&out)));
    }
    if !build.version_says.iter().any(|says| says_version(&text, says)) {
        return Err(format!(
            "`{shown}` printed `{}`, which is not {} {}{}",
            first_line(&text, binary),
            build.binary,
            build.version,
            printed(&out)
        ));
    }
    Ok(first_line(&text, binary))
}

/// Whether `text` holds `says` as whole words: `uv 0.12.2` is not in
/// `uv 0.12.20`, and vLLM `0.19.1` is not `0.19.10` (a local label such as
/// `+cu129` may follow).
fn says_version(text: &str, says: &str) -> bool {
    let says = says.trim_end();
    text.match_indices(says).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + says.len()..].chars().next();
        before.is_none_or(|c| !c.is_alphanumeric() && c != '.')
            && after.is_none_or(|c| c.is_whitespace() || matches!(c, '+' | ')' | ',' | '('))
    })
}

/// The check that the build computes, whichever kind it has; what it
/// showed, in words (`computes on CUDA0: NVIDIA H100 80GB HBM3`). A build
/// that lists devices lists them first (the cheaper step), then computes on
/// every one listed with the tiny model written into `check_dir` (made and
/// removed here); a CPU build computes on the CPU.
///
/// # Errors
/// [`BuildFailure::Gpu`] for the listing (and Python's torch and Triton check),
/// [`BuildFailure::Compute`] for the model's run, each with its sentence.
pub fn gpu_computes(
    sys: &mut dyn System,
    build: &Build,
    binary: &Path,
    host: &Host,
    check_dir: &Path,
    timeout: u64,
) -> Result<String, BuildFailure> {
    use super::compute::{Target, model_computes};
    let (run, targets) = match &build.gpu {
        None => return Ok(String::new()),
        Some(GpuCheck::Torch { modules }) => {
            return torch_computes(sys, build, (binary, check_dir), host, modules, timeout).map_err(BuildFailure::Gpu);
        }
        Some(GpuCheck::Devices(gpu)) => {
            let listed = gpus_listed(sys, build, binary, host, timeout).map_err(BuildFailure::Gpu)?;
            (&gpu.model_run, listed.into_iter().map(|d| Target::Device(d.name, d.description)).collect())
        }
        Some(GpuCheck::Cpu(run)) => (run, vec![Target::Cpu]),
    };
    model_computes(sys, build, binary, run, &targets, check_dir, timeout)
        .map_err(|why| BuildFailure::Compute(format!("the {} build does not compute: {why}", build.variant)))
}

/// The first line of the Python GPU check: how the simulated interpreter
/// knows it.
pub const TORCH_CHECK_MARKER: &str = "# llmgw GPU check: torch computes on every GPU";

/// The line that begins the GPU check's Triton part.
pub const TRITON_CHECK_MARKER: &str = "# llmgw GPU check: Triton compiles and runs one kernel";

/// The file the GPU check is written to, in the check's directory: Triton's
/// `@triton.jit` reads a kernel's source with `inspect.getsource`, which
/// code given with `python -c` has none of.
pub const GPU_CHECK_FILE: &str = "llmgw_gpu_check.py";

/// The Python program that proves a build computes: imports torch and each
/// kernel module, then on every GPU computes a sum and prints the device;
/// then compiles one Triton kernel and runs it on the first GPU. Triton's
/// first compile builds a C launcher against the interpreter's `Python.h`
/// with the system's C compiler (sgl-project/sglang#1117,
/// vllm-project/vllm#27890), so this proves the compiler, the headers and
/// the GPU together, as a model's first load would.
pub fn torch_check_script(modules: &[String]) -> String {
    let mut s = format!("{TORCH_CHECK_MARKER}\nimport torch\n");
    for m in modules {
        s.push_str(&format!("import {m}\n"));
    }
    s.push_str(
        "assert torch.cuda.is_available(), \"torch.cuda.is_available() is False\"\n\
         for i in range(torch.cuda.device_count()):\n    \
         x = torch.ones(1024, device=f\"cuda:{i}\")\n    \
         assert float((x * 2).sum()) == 2048.0\n    \
         print(f\"cuda:{i}\", torch.cuda.get_device_name(i))\n",
    );
    s.push_str(&format!("{TRITON_CHECK_MARKER}\n"));
    s.push_str(
        "import triton\n\
         import triton.language as tl\n\
         @triton.jit\n\
         def llmgw_add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    \
         i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n    \
         tl.store(y_ptr + i, tl.load(x_ptr + i, mask=i < n) + 1, mask=i < n)\n\
         x = torch.arange(256, device=\"cuda:0\", dtype=torch.float32)\n\
         y = torch.empty_like(x)\n\
         llmgw_add_one[(1,)](x, y, 256, BLOCK=256)\n\
         assert torch.equal(y, x + 1), \"the Triton kernel computed a wrong result\"\n\
         print(\"triton\", triton.__version__, \"computes on cuda:0\")\n",
    );
    s
}

/// Runs the Python GPU check with the environment's interpreter, written
/// into `check_dir` (made here, removed here).
fn torch_computes(
    sys: &mut dyn System,
    build: &Build,
    (binary, check_dir): (&Path, &Path),
    host: &Host,
    modules: &[String],
    timeout: u64,
) -> Result<String, String> {
    let python = super::python::interpreter(binary);
    let script = check_dir.join(GPU_CHECK_FILE);
    sys.create_dir_all(check_dir)
        .and_then(|()| sys.write_atomic(&script, torch_check_script(modules).as_bytes()))
        .map_err(|e| format!("writing the GPU check: {e}"))?;
    let cmd = Cmd::new(&python, Vec::<String>::new()).arg_path(&script).timeout(timeout);
    let out = sys.run(&cmd);
    let _ = sys.remove(check_dir);
    let out = out.map_err(|e| e.to_string())?;
    if !out.success() {
        return Err(format!(
            "the {} build does not compute on the GPU: {}",
            build.variant,
            python_failure(&out.stderr)
        ));
    }
    let computed: Vec<&str> = out.stdout.lines().filter(|l| l.starts_with("cuda:")).collect();
    let want = host.nvidia.as_ref().map_or(1, |n| n.gpus.len());
    if computed.len() < want {
        return Err(format!("the {} build computed on {} of this node's {want} GPUs", build.variant, computed.len()));
    }
    let pairs = computed
        .iter()
        .map(|l| l.split_once(' ').map_or((l.to_string(), String::new()), |(d, n)| (d.to_string(), n.to_string())));
    let triton = match out.stdout.lines().any(|l| l.starts_with("triton ") && l.ends_with("computes on cuda:0")) {
        true => "; a Triton kernel compiles and runs on cuda:0",
        false => "",
    };
    Ok(format!("computes on {}{triton}", super::compute::devices_in_words(pairs.collect())))
}

/// Why the Python GPU check failed, in one line: the C compiler's error
/// when Triton's launcher did not compile (`fatal error: Python.h: No such
/// file or directory`, the file named without its temporary directory),
/// else the traceback's last line, the exception in CUDA's, torch's or
/// Triton's words.
fn python_failure(stderr: &str) -> String {
    if let Some(line) = stderr.lines().find(|l| l.contains(": fatal error: ")) {
        let (file, error) = line.split_once(": fatal error: ").unwrap_or((line, ""));
        let file = file.rsplit('/').next().unwrap_or(file);
        return format!("Triton could not compile its launcher: {file}: fatal error: {error}");
    }
    stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string()
}

/// Descriptions of Vulkan devices that are software rasterisers, not GPUs:
/// Mesa's llvmpipe and lavapipe, Google's SwiftShader. ggml selects them
/// only when `GGML_VK_VISIBLE_DEVICES` names them (they are
/// `VK_PHYSICAL_DEVICE_TYPE_CPU`; ggml-vulkan.cpp `ggml_vk_instance_init`),
/// listed as `Vulkan0: llvmpipe (LLVM 20.1.8, 256 bits)` (ggml-org/llama.cpp
/// PR #19846's CI log).
const SOFTWARE_RASTERISERS: &[&str] = &["llvmpipe", "lavapipe", "swiftshader"];

/// Lists the GPU devices with the build's backend; every GPU of the host
/// must be listed, and a software rasteriser is no GPU. The devices listed.
///
/// # Errors
/// The sentence saying what was listed, with the backend's own diagnostics.
fn gpus_listed(
    sys: &mut dyn System,
    build: &Build,
    binary: &Path,
    host: &Host,
    timeout: u64,
) -> Result<Vec<devices::Device>, String> {
    let Some(gpu) = build.gpu_backend() else {
        return Ok(vec![]);
    };
    let cmd = Cmd::new(binary, gpu.list_args.clone()).timeout(timeout);
    let out = sys.run(&cmd).map_err(|e| e.to_string())?;
    let shown = format!("{} {}", build.binary, gpu.list_args.join(" "));
    if !out.success() {
        return Err(format!("`{shown}` {}: {}{}", out.ended, first_line(&out.stderr, binary), printed(&out)));
    }
    let (listed, software): (Vec<devices::Device>, Vec<devices::Device>) = devices::parse(&out.stdout)
        .into_iter()
        .filter(|d| d.name.starts_with(&gpu.device_prefix))
        .partition(|d| !SOFTWARE_RASTERISERS.iter().any(|s| d.description.to_ascii_lowercase().starts_with(s)));
    let want = host.nvidia.as_ref().map_or(1, |n| n.gpus.len());
    // ggml's own diagnostics say why a device is missing; they name no path.
    // One line per distinct diagnostic: eight GPUs failing alike are one reason.
    let mut hints: Vec<String> =
        software.iter().map(|d| format!("{}: {} is a software rasteriser, not a GPU", d.name, d.description)).collect();
    for l in out.stderr.lines().filter(|l| l.starts_with("ggml_")) {
        let (tool, rest) = l.split_once(": ").unwrap_or(("", l));
        let msg = rest.split_once("): ").map_or(rest, |(_, m)| m);
        let line = format!("{tool}: {msg}");
        if !hints.contains(&line) {
            hints.push(line);
        }
    }
    let hint = if hints.is_empty() { String::new() } else { format!(" ({})", hints.join("; ")) };
    match listed.len() {
        0 => Err(format!("the {} build lists no {} device{hint}", build.variant, gpu.device_prefix)),
        n if n < want => Err(format!(
            "the {} build lists {n} {} device(s) of this node's {want} GPUs{hint}",
            build.variant, gpu.device_prefix
        )),
        _ => Ok(listed),
    }
}

/// ` (it printed 3.3 GB; the first 1 MiB of each stream kept)` when the
/// program printed more than was kept, else nothing.
fn printed(out: &crate::system::Output) -> String {
    out.left_out_words().map(|w| format!(" ({w})")).unwrap_or_default()
}

/// The first non-empty line, with the program's directory (and its parent,
/// a Python environment's root) taken out; of a Python traceback, the
/// exception (its last line: `ImportError: …`).
fn first_line(text: &str, binary: &Path) -> String {
    let dir = binary.parent().map(|d| format!("{}/", d.display())).unwrap_or_default();
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let first = lines.next().unwrap_or("");
    let line =
        if first.starts_with("Traceback (most recent call last)") { lines.next_back().unwrap_or(first) } else { first };
    // A Python environment's files are named from its root (`bin/` sits in it).
    let root = binary
        .parent()
        .filter(|d| d.file_name().is_some_and(|n| n == "bin"))
        .and_then(Path::parent)
        .map(|d| format!("{}/", d.display()))
        .unwrap_or_default();
    let line = line.replace(&dir, "");
    if root.len() > 1 { line.replace(&root, "") } else { line }.trim().to_string()
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::says_version;

    #[test]
    fn versions_are_matched_as_whole_words() {
        assert!(says_version("uv 0.12.20 (3f1c2a9 2026-10-02)\n", "uv 0.12.20"));
        assert!(!says_version("uv 0.12.20 (3f1c2a9)\n", "uv 0.12.2"));
        assert!(says_version("0.20.1+cu129\n", "0.20.1"));
        assert!(!says_version("0.19.10\n", "0.19.1"));
        assert!(says_version("version: 10850 (fe14399)\n", "version: 10850 "));
        assert!(says_version("version: 0.6.0-dev (build 11459, commit ff5888f99)\n", "(build 11459,"));
        assert!(!says_version("version: 0.6.0-dev (build 114590, commit ff5888f99)\n", "(build 11459,"));
        assert!(!says_version("version: 108500 (fe14399)\n", "version: 10850 "));
    }
}
