//! The real path on this machine: `llmgw provision` against the fake
//! release server, with archives whose programs are real ELF files built
//! here with `cc`, checked by the real `ldd` and run as real processes.
//! The same convergence as in simulation, on real tools' answers.

use std::path::{Path, PathBuf};
use std::process::Command;

use llmgw_sim::publisher::FakeServer;
use llmgw_sim::truth::{Catalog, File};

#[path = "../support/built.rs"]
mod built;
use built::{asset, backends, build, raw, release};
use serde_json::Value;

/// Compiles C `source` into `out` with `args`; panics with cc's words.
fn cc(dir: &Path, name: &str, source: &str, args: &[&str]) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let out = dir.join(name);
    let status = Command::new("cc").arg(&src).arg("-o").arg(&out).args(args).current_dir(dir).output().unwrap();
    assert!(status.status.success(), "cc {name}: {}", String::from_utf8_lossy(&status.stderr));
    out
}

/// A `llama-server` that answers `--version` on stderr and lists an RTX
/// 3090 through CUDA and Vulkan, in the real one's formats, and runs as
/// `llama-bench` too (`-m MODEL -dev DEVICE`): it reads the model, checks
/// that it is the whole tiny model, and prints llama-bench's JSON rows, or
/// the loader's line. `call` is a statement calling into a library. For the
/// tests of what goes wrong, `LLMGW_TEST_BENCH_FAULT` (`abort`: CUDA's
/// lines then SIGABRT, as ggml-cuda aborts; `hang`; `silent`) applies on
/// the device `LLMGW_TEST_BENCH_ON` (`flood`: 5,000,000 bytes of `y` lines,
/// then exit 0, as `yes | head` would), and `LLMGW_TEST_LLVMPIPE` lists Mesa's
/// software rasteriser as the Vulkan device. With `LLMGW_TEST_CHILDREN`
/// naming a directory, `--version` leaves two `sleep 300` children behind
/// (their standard streams closed, so no pipe holds llmgw), each writing
/// its process id into a file there.
fn server_source(call: &str) -> String {
    r#"#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
DECL
static const char *arg(int argc, char **argv, const char *flag) {
    for (int i = 1; i + 1 < argc; i++) if (strcmp(argv[i], flag) == 0) return argv[i + 1];
    return 0;
}
int main(int argc, char **argv) {
    CALL
    const char *children = getenv("LLMGW_TEST_CHILDREN");
    if (children && argc > 1 && strcmp(argv[1], "--version") == 0) {
        for (int i = 0; i < 2; i++) {
            if (fork() == 0) {
                char path[4096];
                snprintf(path, sizeof path, "%s/child-%d.pid", children, i);
                FILE *p = fopen(path, "w");
                if (p) { fprintf(p, "%d\n", (int)getpid()); fclose(p); }
                close(0); close(1); close(2);
                execlp("sleep", "sleep", "300", (char *)0);
                _exit(127);
            }
        }
    }
    if (argc > 1 && strcmp(argv[1], "--version") == 0) { fprintf(stderr, "version: 0.4.0-dev (build 10850, commit fe14399)\nbuilt with cc\n"); return 0; }
    if (argc > 1 && strcmp(argv[1], "--list-devices") == 0) {
        printf("Available devices:\n  CUDA0: NVIDIA GeForce RTX 3090 (24576 MiB, 24000 MiB free)\n");
        if (getenv("LLMGW_TEST_LLVMPIPE")) printf("  Vulkan0: llvmpipe (LLVM 20.1.8, 256 bits) (32768 MiB, 32768 MiB free)\n");
        else printf("  Vulkan0: NVIDIA GeForce RTX 3090 (24576 MiB, 24000 MiB free)\n");
        return 0;
    }
    const char *model = arg(argc, argv, "-m"), *dev = arg(argc, argv, "-dev");
    if (!model || !dev) return 1;
    const char *fault = getenv("LLMGW_TEST_BENCH_FAULT"), *on = getenv("LLMGW_TEST_BENCH_ON");
    if (fault && on && strcmp(on, dev) == 0) {
        if (strcmp(fault, "hang") == 0) for (;;) pause();
        if (strcmp(fault, "silent") == 0) return 0;
        if (strcmp(fault, "flood") == 0) { for (int i = 0; i < 2500000; i++) fputs("y\n", stdout); return 0; }
        fprintf(stderr, "load_tensors: offloaded 3/3 layers to GPU\nggml_cuda_compute_forward: RMS_NORM failed\n"
                        "CUDA error: no kernel image is available for execution on the device\n"
                        "  current device: 0, in function ggml_cuda_compute_forward at ggml-cuda.cu:2419\n  err\n"
                        "ggml-cuda.cu:109: CUDA error\n");
        abort();
    }
    unsigned char m[4] = {0};
    long size = 0;
    FILE *f = fopen(model, "rb");
    if (f) { if (fread(m, 1, 4, f) != 4) m[0] = 0; fseek(f, 0, SEEK_END); size = ftell(f); fclose(f); }
    if (memcmp(m, "GGUF", 4) != 0 || size != SIZE) {
        fprintf(stderr, "gguf_init_from_reader: invalid magic characters: '%c%c%c%c', expected 'GGUF'\n"
                        "llama_bench: error: failed to load model '%s'\n", m[0], m[1], m[2], m[3], model);
        return 1;
    }
    const char *backend = strcmp(dev, "none") == 0 ? "CPU" : strncmp(dev, "CUDA", 4) == 0 ? "CUDA" : "Vulkan";
    printf("{\"backends\": \"%s\", \"devices\": \"%s\", \"n_gpu_layers\": 99, \"n_prompt\": 8, \"n_gen\": 0, \"avg_ts\": 2538.29}\n", backend, dev);
    printf("{\"backends\": \"%s\", \"devices\": \"%s\", \"n_gpu_layers\": 99, \"n_prompt\": 0, \"n_gen\": 8, \"avg_ts\": 9720.90}\n", backend, dev);
    return 0;
}
"#
    .replace("DECL", if call.is_empty() { "" } else { "int llmgw_probe(void);" })
    .replace("CALL", call)
    .replace("SIZE", &llmgw_core::converge::TINY_MODEL.len().to_string())
}

/// Real programs for three builds: one that loads, one linked against a
/// library that is not shipped, one needing a symbol version its shipped
/// library lacks.
struct Programs {
    good: Vec<u8>,
    missing_lib: Vec<u8>,
    versioned: Vec<u8>,
    old_versioned_lib: Vec<u8>,
    plain_lib: Vec<u8>,
}

fn programs(dir: &Path) -> Programs {
    let lib = "int llmgw_probe(void) { return 0; }\n";
    cc(dir, "libllmgwmissing.so", lib, &["-shared", "-fPIC"]);
    std::fs::write(dir.join("v2.map"), "LLMGW_2.0 { global: llmgw_probe; local: *; };\n").unwrap();
    std::fs::write(dir.join("v1.map"), "LLMGW_1.0 { global: llmgw_probe; local: *; };\n").unwrap();
    cc(dir, "libllmgwv.so", lib, &["-shared", "-fPIC", "-Wl,--version-script=v2.map", "-Wl,-soname,libllmgwv.so"]);
    let good = cc(dir, "good", &server_source(""), &[]);
    let missing =
        cc(dir, "missing", &server_source("llmgw_probe();"), &["-L.", "-lllmgwmissing", "-Wl,-rpath,$ORIGIN"]);
    let versioned = cc(dir, "versioned", &server_source("llmgw_probe();"), &["-L.", "-lllmgwv", "-Wl,-rpath,$ORIGIN"]);
    // The library shipped beside it: the same soname, an older version node.
    let old_dir = dir.join("old");
    std::fs::create_dir_all(&old_dir).unwrap();
    std::fs::copy(dir.join("v1.map"), old_dir.join("v1.map")).unwrap();
    let old = cc(
        &old_dir,
        "libllmgwv.so",
        lib,
        &["-shared", "-fPIC", "-Wl,--version-script=v1.map", "-Wl,-soname,libllmgwv.so"],
    );
    let plain = cc(dir, "libplain.so", lib, &["-shared", "-fPIC"]);
    let read = |p: PathBuf| std::fs::read(p).unwrap();
    Programs {
        good: read(good),
        missing_lib: read(missing),
        versioned: read(versioned),
        old_versioned_lib: read(old),
        plain_lib: read(plain),
    }
}

/// A llama.cpp b10850 release whose CUDA 12.8 build has `cuda`'s
/// `llama-server` (beside the backends) and whose Vulkan and CPU builds load
/// and run here.
fn catalog(p: &Programs, cuda: Vec<File>) -> Catalog {
    let lib = &p.plain_lib;
    let mut cuda_files = cuda;
    if !cuda_files.iter().any(|f| f.path == "llama-bench") {
        cuda_files.push(raw("llama-bench", &p.good));
    }
    cuda_files.extend(backends(lib, Some("libggml-cuda.so")));
    release(
        vec![
            asset("llama-b10850-bin-ubuntu-x64.tar.gz", build(&p.good, lib, None)),
            asset("llama-b10850-bin-ubuntu-cuda-12.8-x64.tar.gz", cuda_files),
            asset("cudart-llama-b10850-bin-ubuntu-cuda-12.8-x64.tar.gz", vec![raw("libcudart.so.12", lib)]),
            asset("llama-b10850-bin-ubuntu-vulkan-x64.tar.gz", build(&p.good, lib, Some("libggml-vulkan.so"))),
        ],
        "programs built by this test with cc",
    )
}

/// An RTX 3090 on driver 550 without a package manager: candidates
/// cuda-12.8, then vulkan; no package is installed on this machine.
fn gpu_host(dir: &Path) -> PathBuf {
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(super::host_path("rtx3090-ubuntu22.04-driver550.json")).unwrap())
            .unwrap();
    v["os"]["package_family"] = "none".into();
    let path = dir.join("host.json");
    std::fs::write(&path, v.to_string()).unwrap();
    path
}

/// `llmgw provision --want WANT` of `host` into `engines` from `server`,
/// JSON out, checks limited to 2 s, no GitHub token.
fn provision_cmd(server: &FakeServer, host: &Path, engines: &Path, want: &str) -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("llmgw"));
    c.args(["provision", "--check-timeout", "2", "--format", "json", "--want", want, "--host"])
        .arg(host)
        .arg("--engines-dir")
        .arg(engines)
        .args(["--github-api", &server.base_url()])
        .env_remove("GITHUB_TOKEN");
    c
}

/// The report a provision printed.
fn report_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    })
}

fn provision(server: &FakeServer, host: &Path, engines: &Path, want: &str) -> (i32, Value) {
    let out = provision_cmd(server, host, engines, want).output().unwrap();
    (out.status.code().unwrap_or(-1), report_of(&out))
}

#[test]
fn real_ldd_drives_the_fallback_as_the_simulated_one_does() {
    let dir = tempfile::tempdir().unwrap();
    let p = programs(dir.path());
    let host = gpu_host(dir.path());
    for (cuda, says) in [
        (vec![raw("llama-server", &p.missing_lib)], "not found: libllmgwmissing.so (needed by llama-server)"),
        (
            vec![raw("llama-server", &p.versioned), raw("libllmgwv.so", &p.old_versioned_lib)],
            "this system's libraries lack LLMGW_2.0 (libllmgwv.so)",
        ),
    ] {
        let server = FakeServer::start(&catalog(&p, cuda)).unwrap();
        let engines = tempfile::tempdir_in(dir.path()).unwrap().keep();
        let (code, report) = provision(&server, &host, &engines, "llama.cpp@b10850");
        let s = &report["engines"][0];
        assert_eq!(code, 0, "{s}");
        assert_eq!(s["variant"], "vulkan", "{s}");
        let cuda = &s["attempts"][0];
        assert_eq!(
            (cuda["variant"].as_str(), cuda["outcome"].as_str(), cuda["check"].as_str()),
            (Some("cuda-12.8"), Some("failed"), Some("ldd"))
        );
        assert!(cuda["reason"].as_str().unwrap().contains(says), "{}", cuda["reason"]);
        assert!(s["attempts"][1]["reason"].as_str().unwrap().contains("Vulkan0: NVIDIA GeForce RTX 3090"), "{s}");
        let binary = PathBuf::from(s["binary"].as_str().unwrap());
        assert!(binary.starts_with(&engines) && binary.ends_with("llama.cpp/b10850-vulkan/llama-b10850/llama-server"));
        assert!(!engines.join(".staging/llama.cpp-b10850-cuda-12.8").exists(), "the failed build's staging is gone");
    }
}

#[test]
fn provision_installs_and_a_second_run_downloads_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = programs(dir.path());
    let host = gpu_host(dir.path());
    let server = FakeServer::start(&catalog(&p, vec![raw("llama-server", &p.good)])).unwrap();
    let engines = dir.path().join("engines");
    let (code, first) = provision(&server, &host, &engines, "llama.cpp@b10850");
    assert_eq!(code, 0, "{first}");
    assert_eq!(first["engines"][0]["variant"], "cuda-12.8");
    let downloads = server.downloads();
    assert_eq!(downloads, 2, "the build and its cudart archive");
    let record: Value =
        serde_json::from_slice(&std::fs::read(engines.join("llama.cpp/b10850-cuda-12.8.json")).unwrap()).unwrap();
    assert_eq!(record["assets"].as_array().unwrap().len(), 2);
    let (code, second) = provision(&server, &host, &engines, "llama.cpp@b10850");
    assert_eq!(code, 0);
    assert_eq!(second["engines"][0]["attempts"][0]["outcome"], "verified");
    assert_eq!(server.downloads(), downloads, "nothing downloaded again");
}

#[test]
fn the_real_compute_check_runs_the_embedded_model_on_each_device_and_leaves_it_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let p = programs(dir.path());
    let host = gpu_host(dir.path());
    let server = FakeServer::start(&catalog(&p, vec![raw("llama-server", &p.good)])).unwrap();
    let engines = dir.path().join("engines");
    let (code, report) = provision(&server, &host, &engines, "llama.cpp@b10850");
    assert_eq!(code, 0, "{report}");
    // The real program read the whole model from staging and printed its rows.
    assert_eq!(report["engines"][0]["attempts"][0]["reason"], "computes on CUDA0: NVIDIA GeForce RTX 3090");
    assert!(!engines.join(".staging").exists(), "the model went with the staging");
    assert!(!engines.join("llama.cpp/b10850-cuda-12.8/llama-b10850/tiny-llama.gguf").exists());
}

/// A real program that goes wrong on CUDA0 only: the CUDA build fails in
/// the program's own words (or for want of any) and the Vulkan build, on
/// the same GPU, is installed.
#[rstest::rstest]
#[case::aborts("abort", "was killed by a signal: CUDA error: no kernel image is available for execution on the device")]
#[case::hangs("hang", "was killed at its time limit of 2 s, printing nothing")]
#[case::prints_nothing("silent", "exited 0, printing nothing")]
#[case::floods(
    "flood",
    "exited 0, printing no row of tokens generated (`-o jsonl`) and no error line of llama-bench \
     (it printed 5.0 MB; the first 1 MiB of each stream kept)"
)]
fn a_compute_program_that_fails_is_named_in_its_words_and_the_next_build_installed(
    #[case] fault: &str,
    #[case] said: &str,
) {
    let dir = tempfile::tempdir().unwrap();
    let p = programs(dir.path());
    let host = gpu_host(dir.path());
    let server = FakeServer::start(&catalog(&p, vec![raw("llama-server", &p.good)])).unwrap();
    let engines = dir.path().join("engines");
    let out = provision_cmd(&server, &host, &engines, "llama.cpp@b10850")
        .env("LLMGW_TEST_BENCH_FAULT", fault)
        .env("LLMGW_TEST_BENCH_ON", "CUDA0")
        .output()
        .unwrap();
    let report = report_of(&out);
    let s = &report["engines"][0];
    assert_eq!(s["variant"], "vulkan", "{s}");
    assert_eq!(s["attempts"][0]["check"], "compute");
    // This host has no package manager: the reason says so after the program's words.
    let reason = s["attempts"][0]["reason"].as_str().unwrap();
    let words =
        format!("the cuda-12.8 build does not compute: llama-bench on CUDA0 (NVIDIA GeForce RTX 3090) {said} (");
    assert!(reason.starts_with(&words), "{reason}");
    assert!(!engines.join("llama.cpp/b10850-cuda-12.8").exists());
}

#[test]
fn a_software_rasteriser_is_no_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let p = programs(dir.path());
    let host = gpu_host(dir.path());
    let server = FakeServer::start(&catalog(&p, vec![raw("llama-server", &p.good)])).unwrap();
    let engines = dir.path().join("engines");
    let out = provision_cmd(&server, &host, &engines, "llama.cpp@b10850:vulkan")
        .env("LLMGW_TEST_LLVMPIPE", "1")
        .output()
        .unwrap();
    let report = report_of(&out);
    let s = &report["engines"][0];
    assert_eq!(s["state"], "failed", "{s}");
    let reason = s["attempts"][0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(
            "the vulkan build lists no Vulkan device (Vulkan0: llvmpipe (LLVM 20.1.8, 256 bits) is a software rasteriser, not a GPU)"
        ),
        "{reason}"
    );
}

#[test]
fn a_tampered_asset_is_refused_naming_both_digests() {
    let dir = tempfile::tempdir().unwrap();
    let p = programs(dir.path());
    let host = gpu_host(dir.path());
    let mut cat = catalog(&p, vec![raw("llama-server", &p.good)]);
    cat.releases[0].assets[1].tampered = true;
    let server = FakeServer::start(&cat).unwrap();
    let engines = dir.path().join("engines");
    let (_, report) = provision(&server, &host, &engines, "llama.cpp@b10850");
    let s = &report["engines"][0];
    assert_eq!(s["variant"], "vulkan", "the next build is tried: {s}");
    let reason = s["attempts"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("does not match the publisher's digest"), "{reason}");
    let hexes = reason.split(|c: char| !c.is_ascii_hexdigit()).filter(|w| w.len() == 64).count();
    assert_eq!(hexes, 2, "both digests named: {reason}");
    assert!(!engines.join("llama.cpp/b10850-cuda-12.8").exists());
}

#[test]
fn a_program_that_hangs_is_killed_at_its_limit_and_the_next_build_tried() {
    let dir = tempfile::tempdir().unwrap();
    let p = programs(dir.path());
    // A cuda-12.8 llama-server that never answers: the version check's limit kills it.
    let hang = cc(dir.path(), "hang", "#include <unistd.h>\nint main(void) { for (;;) pause(); }\n", &[]);
    let server = FakeServer::start(&catalog(&p, vec![raw("llama-server", &std::fs::read(hang).unwrap())])).unwrap();
    let host = gpu_host(dir.path());
    let engines = dir.path().join("engines");
    let started = std::time::Instant::now();
    let (_, report) = provision(&server, &host, &engines, "llama.cpp@b10850");
    let s = &report["engines"][0];
    assert_eq!(s["variant"], "vulkan", "{s}");
    let reason = s["attempts"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("was killed"), "{reason}");
    assert!(started.elapsed().as_secs() < 30, "killed at its 2 s limit");
}

/// Issue 26, kind 14: a program of a build that passes its checks and
/// leaves children running has them killed with its process group; none
/// outlives llmgw.
#[test]
fn children_a_checked_program_leaves_behind_do_not_outlive_llmgw() {
    let dir = tempfile::tempdir().unwrap();
    let p = programs(dir.path());
    let host = gpu_host(dir.path());
    let server = FakeServer::start(&catalog(&p, vec![raw("llama-server", &p.good)])).unwrap();
    let engines = dir.path().join("engines");
    let pids = dir.path().join("pids");
    std::fs::create_dir_all(&pids).unwrap();
    let out =
        provision_cmd(&server, &host, &engines, "llama.cpp@b10850").env("LLMGW_TEST_CHILDREN", &pids).output().unwrap();
    let report = report_of(&out);
    assert_eq!(report["engines"][0]["state"], "ready", "{report}");
    let written: Vec<String> =
        std::fs::read_dir(&pids).unwrap().map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap()).collect();
    assert!(written.len() >= 2, "the stand-in forked its children: {written:?}");
    for pid in written.iter().map(|p| p.trim()) {
        // Gone, or a zombie its new parent has not reaped yet.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
        if !matches!(state, None | Some('Z' | 'X')) {
            let _ = Command::new("kill").args(["-9", pid]).status();
            panic!("`sleep 300` {pid} outlived llmgw: {stat}");
        }
    }
}

#[test]
fn dry_run_touches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let engines = dir.path().join("engines");
    let out = assert_cmd::Command::cargo_bin("llmgw")
        .unwrap()
        .args(["provision", "--dry-run", "--want", "llama.cpp@b10850", "--host"])
        .arg(super::host_path("v100.json"))
        .arg("--engines-dir")
        .arg(&engines)
        .args(["--github-api", "http://127.0.0.1:9"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("1. vulkan") && text.contains("nothing was downloaded"), "{text}");
    assert!(!engines.exists());
}

#[test]
fn two_provisions_at_once_take_turns_and_download_once() {
    let dir = tempfile::tempdir().unwrap();
    let p = programs(dir.path());
    let host = gpu_host(dir.path());
    let server = FakeServer::start(&catalog(&p, vec![raw("llama-server", &p.good)])).unwrap();
    let engines = dir.path().join("engines");
    let spawn = || {
        provision_cmd(&server, &host, &engines, "llama.cpp@b10850")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
    let mut outcomes: Vec<String> = outs
        .iter()
        .map(|o| {
            assert_eq!(o.status.code(), Some(0));
            let v: Value = serde_json::from_slice(&o.stdout).unwrap();
            v["engines"][0]["attempts"][0]["outcome"].as_str().unwrap().to_string()
        })
        .collect();
    outcomes.sort();
    assert_eq!(outcomes, ["installed", "verified"], "one installs, the other waits and finds it done");
    assert_eq!(server.downloads(), 2, "the build and its cudart archive, once");
}

/// Writes an executable shell script.
fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_package_manager_that_fails_is_each_builds_reason_and_nothing_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let p = programs(dir.path());
    // A deb machine whose package manager knows nothing and installs nothing.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    script(
        &bin.join("dpkg-query"),
        "for p in \"$@\"; do case \"$p\" in -*|*'$'*) ;; *) echo \"dpkg-query: no packages found matching $p\" >&2;; esac; done; exit 1",
    );
    script(&bin.join("apt-get"), "echo 'E: Unable to locate package libgomp1' >&2; exit 100");
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(super::host_path("rtx3090-ubuntu22.04-driver550.json")).unwrap())
            .unwrap();
    v["os"]["package_family"] = "deb".into();
    let host = dir.path().join("host.json");
    std::fs::write(&host, v.to_string()).unwrap();
    let server = FakeServer::start(&catalog(&p, vec![raw("llama-server", &p.good)])).unwrap();
    let engines = dir.path().join("engines");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = provision_cmd(&server, &host, &engines, "llama.cpp@b10850").env("PATH", path).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report = report_of(&out);
    let s = &report["engines"][0];
    assert_eq!(s["state"], "failed");
    let tried: Vec<&Value> = s["attempts"].as_array().unwrap().iter().filter(|a| a["outcome"] == "failed").collect();
    assert_eq!(tried.len(), 2, "cuda-12.8, then vulkan: {s}");
    for a in tried {
        assert!(a["reason"].as_str().unwrap().contains("could not install the OS package"), "{a}");
    }
    assert_eq!(server.downloads(), 0, "nothing downloaded for a build whose packages cannot be had");
    assert!(!engines.join("llama.cpp").exists());
}

#[test]
fn an_engines_directory_that_cannot_be_made_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let out = assert_cmd::Command::cargo_bin("llmgw")
        .unwrap()
        .args(["provision", "--want", "llama.cpp@b10850", "--host"])
        .arg(super::host_path("v100.json"))
        .arg("--engines-dir")
        .arg(file.join("engines"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--engines-dir") && err.contains("a-file/engines"), "{err}");
}

#[test]
fn an_interrupted_download_leaves_no_install_and_the_next_run_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let p = programs(dir.path());
    let host = gpu_host(dir.path());
    let mut cat = catalog(&p, vec![raw("llama-server", &p.good)]);
    cat.releases[0].assets[1].delay_ms = 30_000; // the CUDA build's download hangs
    let server = FakeServer::start(&cat).unwrap();
    let engines = dir.path().join("engines");
    let mut cmd = provision_cmd(&server, &host, &engines, "llama.cpp@b10850");
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    // Ctrl-C as at a terminal: a test run as a background job (`cmd &` in a
    // script) has SIGINT ignored, and children inherit that.
    // SAFETY: signal() is async-signal-safe; nothing else runs in the child.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let child = cmd.spawn().unwrap();
    // Wait until the download has begun (its staging exists), then Ctrl-C.
    let staging = engines.join(".staging/llama.cpp-b10850-cuda-12.8/downloads");
    let started = std::time::Instant::now();
    while !staging.exists() && started.elapsed().as_secs() < 20 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(staging.exists(), "the download began");
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        !out.status.success(),
        "the interrupted run finished: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!engines.join("llama.cpp/b10850-cuda-12.8").exists(), "nothing partial installed");
    assert!(!engines.join("llama.cpp/b10850-cuda-12.8.json").exists());
    // The next run removes what was left and installs.
    let mut quick = cat.clone();
    quick.releases[0].assets[1].delay_ms = 0;
    let server = FakeServer::start(&quick).unwrap();
    let (code, report) = provision(&server, &host, &engines, "llama.cpp@b10850");
    assert_eq!((code, report["engines"][0]["variant"].as_str()), (0, Some("cuda-12.8")), "{report}");
    assert!(!engines.join(".staging/llama.cpp-b10850-cuda-12.8").exists());
}

#[test]
fn as_another_user_os_packages_are_not_installed_and_the_reason_says_so() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    // A deb machine missing libgomp1, a package manager that would install it.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    script(&bin.join("dpkg-query"), "exit 1");
    script(&bin.join("apt-get"), "echo installed-by-apt; exit 0");
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(super::host_path("nogpu-debian12.json")).unwrap()).unwrap();
    v["os"]["package_family"] = "deb".into();
    let host = dir.path().join("host.json");
    std::fs::write(&host, v.to_string()).unwrap();
    for f in [&bin, &host] {
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let engines = dir.path().join("engines");
    let p = programs(dir.path());
    let server = FakeServer::start(&catalog(&p, vec![raw("llama-server", &p.good)])).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(assert_cmd::cargo::cargo_bin("llmgw"))
        .args(["provision", "--format", "json", "--want", "llama.cpp@b10850", "--host"])
        .arg(&host)
        .arg("--engines-dir")
        .arg(&engines)
        .args(["--github-api", &server.base_url()])
        .env("PATH", path)
        .output()
        .unwrap();
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let s = &report["engines"][0];
    let reason = s["attempts"][0]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("could not install the OS package libgomp1") && reason.contains("needs root"), "{s}");
}

#[test]
fn a_write_that_fails_mid_download_is_each_builds_reason_and_leaves_nothing() {
    // The file-size limit stands in for a full disk: past 4 KiB every write
    // fails (EFBIG, with SIGXFSZ ignored), as it would with no space left.
    let dir = tempfile::tempdir().unwrap();
    let p = programs(dir.path());
    let host = gpu_host(dir.path());
    let server = FakeServer::start(&catalog(&p, vec![raw("llama-server", &p.good)])).unwrap();
    let engines = dir.path().join("engines");
    let llmgw = assert_cmd::cargo::cargo_bin("llmgw");
    let script = format!(
        "ulimit -f 4; trap '' XFSZ; exec '{}' provision --format json --want llama.cpp@b10850 --host '{}' --engines-dir '{}' --github-api '{}'",
        llmgw.display(),
        host.display(),
        engines.display(),
        server.base_url()
    );
    let out = std::process::Command::new("bash").args(["-c", &script]).output().unwrap();
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let s = &report["engines"][0];
    assert_eq!(s["state"], "failed", "{s}");
    let tried: Vec<&Value> = s["attempts"].as_array().unwrap().iter().filter(|a| a["outcome"] == "failed").collect();
    assert_eq!(tried.len(), 2, "each build tried: {s}");
    for a in tried {
        assert!(a["reason"].as_str().unwrap().contains("File too large"), "{a}");
    }
    let staging: Vec<_> =
        std::fs::read_dir(engines.join(".staging")).map(|d| d.flatten().collect()).unwrap_or_default();
    assert!(staging.is_empty(), "{staging:?}");
    assert!(!engines.join("llama.cpp").exists() || std::fs::read_dir(engines.join("llama.cpp")).unwrap().count() == 0);
}

#[test]
fn provision_on_this_machine_installs_the_cpu_build_and_a_second_run_downloads_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = programs(dir.path());
    let server = FakeServer::start(&catalog(&p, vec![raw("llama-server", &p.good)])).unwrap();
    let engines = dir.path().join("engines");
    // This machine as `discover` sees it, its GPUs (if any) left out so that
    // the CPU build is the one to install wherever the test runs.
    let found = assert_cmd::Command::cargo_bin("llmgw")
        .unwrap()
        .args(["discover", "--engines-dir"])
        .arg(&engines)
        .output()
        .unwrap();
    assert_eq!(found.status.code(), Some(0), "{}", String::from_utf8_lossy(&found.stderr));
    let mut me: Value = serde_json::from_slice(&found.stdout).unwrap();
    me["nvidia"] = Value::Null;
    let host = dir.path().join("me.json");
    std::fs::write(&host, me.to_string()).unwrap();
    let run = || provision(&server, &host, &engines, "llama.cpp@b10850").1["engines"][0].clone();
    let first = run();
    assert_eq!((first["state"].as_str(), first["variant"].as_str()), (Some("ready"), Some("cpu")), "{first}");
    let downloads = server.downloads();
    assert_eq!(downloads, 1);
    let second = run();
    assert_eq!(second["attempts"][0]["outcome"], "verified", "{second}");
    assert_eq!(server.downloads(), downloads, "nothing downloaded again");
}

#[test]
fn a_simulated_build_on_a_real_machine_says_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(super::host_path("nogpu-debian12.json")).unwrap()).unwrap();
    v["os"]["package_family"] = "none".into();
    let host = dir.path().join("host.json");
    std::fs::write(&host, v.to_string()).unwrap();
    let server = FakeServer::start(llmgw_sim::truth::embedded_catalog()).unwrap();
    let engines = dir.path().join("engines");
    let (code, report) = provision(&server, &host, &engines, "llama.cpp@b10850");
    assert_eq!(code, 1);
    let reason = report["engines"][0]["attempts"][0]["reason"].as_str().unwrap().to_string();
    assert!(reason.contains("simulated program from llmgw's fake release server"), "{reason}");
    assert!(!engines.join(".staging").exists(), "no empty staging left");
}

#[test]
fn dry_run_speaks_json_when_asked() {
    let out = assert_cmd::Command::cargo_bin("llmgw")
        .unwrap()
        .args(["provision", "--dry-run", "--format", "json", "--want", "llama.cpp@b10850", "--host"])
        .arg(super::host_path("v100.json"))
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["plans"][0]["candidates"][0]["variant"], "vulkan");
}

#[test]
fn a_real_cuda_library_without_kernels_for_the_gpu_is_refused_before_it_runs_in_the_simulations_words() {
    // A real fatbin (nvcc 13.5: SASS 8.6 8.9 12.0a 12.1a, PTX 7.5 8.0 9.0)
    // as libggml-cuda.so, on a node whose GPU is compute capability 7.0.
    let fixture = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cuda/ggml_mix.so")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = programs(dir.path());
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(gpu_host(dir.path())).unwrap()).unwrap();
    v["nvidia"]["driver"] = "580.95.05".into();
    v["nvidia"]["gpus"][0]["compute_capability"] = "7.0".into();
    v["nvidia"]["gpus"][0]["name"] = "Tesla V100-SXM2-16GB".into();
    let host = dir.path().join("v100.json");
    std::fs::write(&host, v.to_string()).unwrap();
    let mut cat = catalog(&p, vec![raw("llama-server", &p.good)]);
    let cuda = cat.releases[0].assets.iter_mut().find(|a| a.name.contains("cuda-12.8-x64")).unwrap();
    cuda.files.iter_mut().find(|f| f.path == "libggml-cuda.so").unwrap().raw = Some(fixture.clone());
    let server = FakeServer::start(&cat).unwrap();
    let engines = dir.path().join("engines");
    let (code, report) = provision(&server, &host, &engines, "llama.cpp@b10850");
    assert_eq!(code, 0, "{report}");
    let s = &report["engines"][0];
    assert_eq!(s["variant"], "vulkan", "{s}");
    let cuda = &s["attempts"][0];
    assert_eq!((cuda["variant"].as_str(), cuda["check"].as_str()), (Some("cuda-12.8"), Some("inspect")), "{cuda}");
    let said = cuda["reason"].as_str().unwrap();
    let words = "inspected before running: its CUDA code runs on no GPU of this node: Tesla V100-SXM2-16GB (7.0): \
                 `llama-b10850/libggml-cuda.so`: no kernel image is available for execution on the device (compute capability 7.0)";
    assert_eq!(said, words);

    // The simulation says the same of the truth's stub of that file, as
    // `llmgw inspect --format json` writes it.
    let out = Command::new(assert_cmd::cargo::cargo_bin("llmgw"))
        .args(["inspect", "--format", "json"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cuda/ggml_mix.so"))
        .output()
        .unwrap();
    let inspected: Value = serde_json::from_slice(&out.stdout).unwrap();
    let stub: llmgw_sim::truth::stub::ElfStub = serde_json::from_value(inspected["files"][0]["elf"].clone()).unwrap();
    let mut truth = llmgw_sim::truth::embedded_catalog().clone();
    let b10850 = truth.releases.iter_mut().find(|r| r.tag == "b10850").unwrap();
    let mut cuda_build = b10850.assets.iter().find(|a| a.name.contains("vulkan-x64")).unwrap().clone();
    cuda_build.name = "llama-b10850-bin-ubuntu-cuda-12.8-x64.tar.gz".into();
    cuda_build.files.iter_mut().find(|f| f.path == "libggml-vulkan.so").unwrap().elf = Some(stub);
    cuda_build.files.iter_mut().find(|f| f.path == "libggml-vulkan.so").unwrap().path = "libggml-cuda.so".into();
    let mut runtime = cuda_build.clone();
    runtime.name = "cudart-llama-b10850-bin-ubuntu-cuda-12.8-x64.tar.gz".into();
    runtime.top = "cudart-llama-b10850-bin-ubuntu-cuda-12.8-x64".into();
    runtime.files.retain(|f| f.path == "LICENSE");
    runtime.files[0].path = "README".into();
    b10850.assets.extend([cuda_build, runtime]);
    let mut sim =
        llmgw_sim::Simulation::with_catalog(llmgw_model::host::Host::from_json(&v.to_string()).unwrap(), &truth)
            .unwrap();
    let simulated = sim.converge(&[llmgw_core::recipe::Want::parse("llama.cpp@b10850").unwrap()]).engines.remove(0);
    assert_eq!(simulated.attempts[0].reason, words, "the simulation and the real node say the same");
}
