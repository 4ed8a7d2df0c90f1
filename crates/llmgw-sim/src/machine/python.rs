//! The simulated CPython of a uv environment, as far as llmgw runs it:
//! `python -c "import M; print('L', M.__version__)"`, llmgw's GPU check
//! (`python FILE`, [`TORCH_CHECK_MARKER`], its Triton part needing a C
//! compiler and the base interpreter's `Python.h`), and console scripts'
//! `--version`.
//!
//! What is installed is read from the environment itself: each wheel's
//! `.dist-info/llmgw-sim.json` says what the package really is (its
//! requirements, its CUDA kernels). An import fails as Python's does when
//! the module or a requirement is missing, when the loader refuses one of
//! the package's ELF files (a `GLIBC_` version the host lacks, whatever the
//! wheel's tag said), and, for a kernel package that loads its ops at
//! import (sgl-kernel), when it has no kernel for a GPU.
//! torch computes on a GPU when the driver runs its CUDA and it has a
//! kernel for the GPU ([`CudaKernels::refusal`]), else fails in CUDA's words.

use std::path::{Path, PathBuf};

use super::ldd::{Found, resolve};
use super::uv::SITE_PACKAGES;
use crate::truth::stub::ElfStub;
use crate::truth::{CudaTruth, Dist};
use llmgw_core::converge::checks::{GPU_CHECK_FILE, TORCH_CHECK_MARKER, TRITON_CHECK_MARKER};
use llmgw_core::system::{Ended, Output};
use llmgw_model::host::{ComputeCapability, Host};
use llmgw_model::nvidia::{CudaKernels, runtime_min_driver};
use llmgw_model::pep503::normalize;
use llmgw_system::Local;

/// Runs `python ARGS`, the interpreter at `python`.
pub(super) fn run(host: &Host, local: &Local, python: &Path, args: &[String]) -> Output {
    let env = Env::of(host, local, &env_root(python));
    match args {
        [c, code] if c == "-c" => {
            if code.starts_with(TORCH_CHECK_MARKER) {
                return gpu_check(&env, code);
            }
            match version_print(code) {
                Some((module, label)) => match env.import(&module) {
                    Ok(d) => ok(format!("{label} {}\n", d.version)),
                    Err(e) => traceback(1, &e),
                },
                None => failed(1, "SyntaxError: the simulated Python runs only llmgw's checks\n"),
            }
        }
        [file] if !file.starts_with('-') => match local.files.read(Path::new(file)).ok().flatten() {
            Some(code) if code.starts_with(TORCH_CHECK_MARKER.as_bytes()) => {
                gpu_check(&env, &String::from_utf8_lossy(&code))
            }
            Some(_) => failed(1, "SyntaxError: the simulated Python runs only llmgw's checks\n"),
            None => failed(2, &format!("python: can't open file '{file}': [Errno 2] No such file or directory\n")),
        },
        _ => failed(2, &format!("unknown option: {}\n", args.join(" "))),
    }
}

/// Runs a console script of an environment (`bin/vllm`): it imports its
/// module with the environment's Python; `--version` prints the version.
pub(super) fn run_script(host: &Host, local: &Local, script: &Path, text: &str, args: &[String]) -> Output {
    let env = Env::of(host, local, &env_root(&script.with_file_name("python")));
    let Some(module) =
        text.lines().find_map(|l| l.strip_prefix("from ")?.split_whitespace().next().map(str::to_string))
    else {
        return failed(1, "/bin/sh: not a console script of this environment\n");
    };
    let top = module.split('.').next().unwrap_or_default();
    match env.import(top) {
        Err(e) => traceback(6, &e),
        Ok(d) if args == ["--version"] => ok(format!("{}\n", d.version)),
        Ok(_) => failed(
            2,
            &format!("usage: {top} [-h] [-v] {{serve,...}}\nerror: unrecognized arguments: {}\n", args.join(" ")),
        ),
    }
}

fn ok(stdout: String) -> Output {
    Output { ended: Ended::Exited(0), stdout, stderr: String::new(), ..Output::default() }
}

fn failed(code: i32, stderr: &str) -> Output {
    Output { ended: Ended::Exited(code), stdout: String::new(), stderr: stderr.to_string(), ..Output::default() }
}

fn traceback(line: usize, exception: &str) -> Output {
    failed(
        1,
        &format!("Traceback (most recent call last):\n  File \"<string>\", line {line}, in <module>\n{exception}\n"),
    )
}

/// The environment of an interpreter at `<env>/bin/python`.
fn env_root(python: &Path) -> PathBuf {
    python.parent().and_then(Path::parent).unwrap_or(Path::new("/")).to_path_buf()
}

/// An environment as its interpreter sees it: the host, its files, its
/// `site-packages` and every package installed there (from each
/// dist-info's `llmgw-sim.json`).
struct Env<'a> {
    host: &'a Host,
    local: &'a Local,
    site: PathBuf,
    dists: Vec<Dist>,
}

impl<'a> Env<'a> {
    /// The environment rooted at `root`.
    fn of(host: &'a Host, local: &'a Local, root: &Path) -> Env<'a> {
        let site = root.join(SITE_PACKAGES);
        let entries = local.files.list_dir(&site).ok().flatten().unwrap_or_default();
        let dists = entries
            .iter()
            .filter(|e| e.is_dir && e.name.ends_with(".dist-info"))
            .filter_map(|e| local.files.read(&site.join(&e.name).join("llmgw-sim.json")).ok().flatten())
            .filter_map(|b| serde_json::from_slice(&b).ok())
            .collect();
        Env { host, local, site, dists }
    }

    /// Whether the environment's base interpreter has its C headers: the
    /// system's as the host says, a managed one's when
    /// `include/python3.12/Python.h` is beside its `bin/`.
    fn has_python_headers(&self) -> bool {
        let root = self.site.ancestors().nth(3).unwrap_or(Path::new("/"));
        let cfg = self.local.files.read(&root.join("pyvenv.cfg")).ok().flatten().unwrap_or_default();
        let cfg = String::from_utf8_lossy(&cfg);
        let home = cfg.lines().find_map(|l| l.strip_prefix("home = ")).unwrap_or_default().trim().to_string();
        if home == super::uv::SYSTEM_BIN {
            return self.host.os.python.as_ref().is_some_and(|p| p.headers);
        }
        let base = Path::new(&home).parent().unwrap_or(Path::new("/"));
        self.local.files.read(&base.join("include/python3.12/Python.h")).ok().flatten().is_some()
    }

    /// Imports a top-level module: its package and every package it
    /// requires must be installed, the loader must load each of its ELF
    /// files on this host, and a kernel package that loads its ops at import
    /// needs a kernel for every GPU. The exception line when not.
    fn import(&self, module: &str) -> Result<&Dist, String> {
        let dist = self
            .dists
            .iter()
            .find(|d| d.modules.iter().any(|m| m == module))
            .ok_or_else(|| format!("ModuleNotFoundError: No module named '{module}'"))?;
        for req in dist.requires.iter().filter(|r| !r.contains("extra ==")) {
            let name = normalize(req.split(['=', '<', '>', '!', '~', ';', '[', ' ', '(']).next().unwrap_or_default());
            if !self.dists.iter().any(|d| normalize(&d.name) == name) {
                return Err(format!("ModuleNotFoundError: No module named '{}'", name.replace('-', "_")));
            }
        }
        if let Some(e) = dist.elf.iter().find_map(|elf| self.load(&elf.path)) {
            return Err(format!("ImportError: {e}"));
        }
        if let Some(cuda) = dist.cuda.as_ref().filter(|c| c.fails_at_import)
            && let Some(why) = first_refusal(self.host, cuda)
        {
            return Err(format!("ImportError: {module} cannot load its kernels: {why}"));
        }
        Ok(dist)
    }

    /// Why the dynamic loader refuses the file at `path` in site-packages,
    /// in its words as Python's `ImportError` carries them
    /// (`/lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found
    /// (required by …/vllm/_C.abi3.so)`), or `None` when it loads. The
    /// wheel's platform tag is not consulted: the loader reads the file
    /// (vllm-project/vllm#41103: a wheel tagged `manylinux_2_31` whose
    /// `_C.abi3.so` needs `GLIBC_2.34`). A library of another package
    /// (`libtorch.so`) is loaded already, by importing that package first.
    fn load(&self, path: &str) -> Option<String> {
        let file = self.site.join(path);
        let read = |p: &Path| self.local.files.read(p).ok().flatten();
        let Some(stub) = read(&file).and_then(|b| ElfStub::from_bytes(&b)) else {
            return Some(format!("{}: cannot open shared object file: No such file or directory", file.display()));
        };
        let res = resolve(self.host, &file, &stub, read);
        if let Some((lib, _)) = res.libraries.iter().find(|(_, f)| *f == Found::Missing) {
            return Some(format!("{lib}: cannot open shared object file: No such file or directory"));
        }
        res.missing_versions
            .iter()
            .next()
            .map(|(v, lib, by)| format!("{lib}: version `{v}' not found (required by {by})"))
    }
}

/// `import M; print('L', M.__version__)` → (M, L).
fn version_print(code: &str) -> Option<(String, String)> {
    let (imp, print) = code.split_once(';')?;
    let module = imp.trim().strip_prefix("import ")?.trim().to_string();
    let inner = print.trim().strip_prefix("print(")?.strip_suffix(')')?;
    let (label, attr) = inner.split_once(',')?;
    (attr.trim() == format!("{module}.__version__"))
        .then(|| (module, label.trim().trim_matches(|c| c == '\'' || c == '"').to_string()))
}

/// Why a CUDA package cannot compute on one of the host's GPUs, or `None`.
fn first_refusal(host: &Host, cuda: &CudaTruth) -> Option<String> {
    let Some(nv) = &host.nvidia else {
        return Some("no CUDA-capable device is detected".into());
    };
    let (sass, exact) = split_sass(&cuda.sass);
    let ptx: Vec<ComputeCapability> = cuda.ptx.iter().filter_map(|s| ComputeCapability::parse(s).ok()).collect();
    let kernels = CudaKernels { toolkit: &cuda.toolkit, sass: &sass, sass_exact: &exact, ptx: &ptx, compressed: false };
    nv.gpus.iter().find_map(|g| kernels.refusal(g.compute_capability, &nv.driver))
}

/// SASS compute capabilities, the arch-specific ones (`12.0a`) apart.
pub(super) fn split_sass(list: &[String]) -> (Vec<ComputeCapability>, Vec<ComputeCapability>) {
    let mut family = Vec::new();
    let mut exact = Vec::new();
    for s in list {
        match s.strip_suffix('a') {
            Some(cc) => exact.extend(ComputeCapability::parse(cc).ok()),
            None => family.extend(ComputeCapability::parse(s).ok()),
        }
    }
    (family, exact)
}

/// llmgw's GPU check: import torch and each kernel module, then compute
/// on every GPU; then its Triton part ([`triton_check`]).
fn gpu_check(env: &Env, code: &str) -> Output {
    let (torch_part, triton_part) = match code.split_once(TRITON_CHECK_MARKER) {
        Some((t, _)) => (t, true),
        None => (code, false),
    };
    let out = torch_check(env, torch_part);
    if !out.success() || !triton_part {
        return out;
    }
    match triton_check(env, torch_part.lines().count() + 2) {
        Ok(line) => Output { stdout: format!("{}{line}", out.stdout), ..out },
        Err(failure) => Output { ended: Ended::Exited(1), stdout: out.stdout, stderr: failure, ..Output::default() },
    }
}

/// The GPU check's Triton part, its first line at `line`: Triton compiles
/// its C launcher with the system's C compiler against the interpreter's
/// `Python.h` (the base interpreter's `include/python3.12/`, as
/// `sysconfig.get_paths()["include"]` gives it), then runs the kernel. The
/// launcher's file name and line are Triton 3.x's `cuda_utils.c`, its
/// `#include <Python.h>` line UNCONFIRMED (sgl-project/sglang#1117 shows
/// an older Triton's `main.c:5:10`); without a compiler, Triton 3.4's
/// `_find_compiler` words (`triton/runtime/build.py`). Triton itself is taken as installed
/// with torch (torch's Linux wheels require it; `mocks/pypi/` does not
/// carry it).
fn triton_check(env: &Env, line: usize) -> Result<String, String> {
    if !env.host.packages.installed.contains("gcc") {
        return Err(format!(
            "Traceback (most recent call last):\n  File \"{GPU_CHECK_FILE}\", line {}, in <module>\n\
             RuntimeError: Failed to find C compiler. Please specify via CC environment variable or set triton.knobs.build.impl.\n",
            line + 8
        ));
    }
    if !env.has_python_headers() {
        return Err(format!(
            "/tmp/tmpllmgwsim/cuda_utils.c:6:10: fatal error: Python.h: No such file or directory\n    \
             6 | #include <Python.h>\n      |          ^~~~~~~~~~\ncompilation terminated.\n\
             Traceback (most recent call last):\n  File \"{GPU_CHECK_FILE}\", line {}, in <module>\n\
             subprocess.CalledProcessError: Command '['/usr/bin/gcc', '/tmp/tmpllmgwsim/cuda_utils.c', '-O3', '-shared', '-fPIC', '-o', '/tmp/tmpllmgwsim/cuda_utils.cpython-312-x86_64-linux-gnu.so', '-lcuda']' returned non-zero exit status 1.\n",
            line + 8
        ));
    }
    Ok("triton simulated computes on cuda:0\n".to_string())
}

/// llmgw's GPU check without its Triton part.
fn torch_check(env: &Env, code: &str) -> Output {
    let host = env.host;
    for (n, line) in code.lines().enumerate() {
        if let Some(m) = line.strip_prefix("import ")
            && let Err(e) = env.import(m.trim())
        {
            return traceback(n + 1, &e);
        }
    }
    let Some(torch) = env.dists.iter().find(|d| d.modules.iter().any(|m| m == "torch")) else {
        return traceback(2, "ModuleNotFoundError: No module named 'torch'");
    };
    let Some(cuda) = &torch.cuda else {
        return traceback(4, "AssertionError: torch.cuda.is_available() is False (torch was built without CUDA)");
    };
    let Some(nv) = &host.nvidia else {
        return traceback(4, "AssertionError: torch.cuda.is_available() is False");
    };
    if runtime_min_driver(&cuda.toolkit).is_none_or(|need| nv.driver.major() < need) {
        return failed(
            1,
            &format!(
                "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version {}). \
                 Please update your GPU driver.\nTraceback (most recent call last):\n  File \"<string>\", line 4, in <module>\n\
                 AssertionError: torch.cuda.is_available() is False\n",
                nv.driver
            ),
        );
    }
    let (sass, exact) = split_sass(&cuda.sass);
    let ptx: Vec<ComputeCapability> = cuda.ptx.iter().filter_map(|s| ComputeCapability::parse(s).ok()).collect();
    let kernels = CudaKernels { toolkit: &cuda.toolkit, sass: &sass, sass_exact: &exact, ptx: &ptx, compressed: false };
    let mut stdout = String::new();
    for (i, g) in nv.gpus.iter().enumerate() {
        if let Some(why) = kernels.refusal(g.compute_capability, &nv.driver) {
            return Output {
                ended: Ended::Exited(1),
                stdout,
                stderr: format!(
                    "Traceback (most recent call last):\n  File \"<string>\", line 7, in <module>\nRuntimeError: CUDA error: {why}\n"
                ),
                ..Output::default()
            };
        }
        stdout.push_str(&format!("cuda:{i} {}\n", g.name));
    }
    ok(stdout)
}
