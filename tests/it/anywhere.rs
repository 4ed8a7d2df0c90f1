//! A newcomer's commands from any directory: hosts, scenarios and the
//! default wants by name (`llmgw list`), the matrix with its embedded hosts
//! and golden file outside the checkout, `--diff` of a scenario, errors that
//! point at the command's own help, and the small things a first hour trips on.

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;

/// llmgw run in `dir`.
fn llmgw_in(dir: &Path, args: &[&str]) -> Output {
    Command::cargo_bin("llmgw").unwrap().current_dir(dir).args(args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn checkout() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `*.json` names of a directory of the checkout, without `.json`, sorted.
fn names_in(dir: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(checkout().join(dir))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".json").map(String::from))
        .collect();
    names.sort();
    names
}

#[test]
fn every_host_and_scenario_of_the_checkout_is_embedded_and_listed() {
    let embedded: Vec<String> = llmgw_sim::matrix::embedded::HOSTS.iter().map(|(id, _)| id.to_string()).collect();
    assert_eq!(
        embedded,
        names_in("matrix/hosts"),
        "add each file of matrix/hosts/ to crates/llmgw-sim/src/matrix/embedded.rs"
    );
    for (id, json) in llmgw_sim::matrix::embedded::HOSTS {
        let on_disk = std::fs::read_to_string(checkout().join(format!("matrix/hosts/{id}.json"))).unwrap();
        assert_eq!(*json, on_disk, "{id}");
    }
    let nowhere = tempfile::tempdir().unwrap();
    let first_words = |out: Output| -> Vec<String> {
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout).lines().map(|l| l.split_whitespace().next().unwrap().to_string()).collect()
    };
    assert_eq!(first_words(llmgw_in(nowhere.path(), &["list", "hosts"])), names_in("matrix/hosts"));
    assert_eq!(first_words(llmgw_in(nowhere.path(), &["list", "scenarios"])), names_in("mocks/scenarios"));
    let wants = first_words(llmgw_in(nowhere.path(), &["list", "wants"]));
    let default: Vec<String> = llmgw_sim::default_wants().iter().map(ToString::to_string).collect();
    assert_eq!(wants, default);
    // The host list says what each machine is; JSON for programs.
    let hosts = text(&llmgw_in(nowhere.path(), &["list", "hosts"]).stdout);
    assert!(hosts.lines().any(|l| l.starts_with("v100 ") && l.ends_with("v100-ubuntu22.04-driver535")), "{hosts}");
    let json: serde_json::Value =
        serde_json::from_slice(&llmgw_in(nowhere.path(), &["list", "scenarios", "--format", "json"]).stdout).unwrap();
    assert_eq!(json[0]["id"], "download-cut-short-once");
    assert!(json[0]["description"].as_str().unwrap().contains("halfway"));
}

#[test]
fn a_host_and_a_scenario_by_name_from_any_directory() {
    let nowhere = tempfile::tempdir().unwrap();
    let by_path = llmgw_in(&checkout(), &["simulate", "--host", "matrix/hosts/v100.json"]);
    let by_name = llmgw_in(nowhere.path(), &["simulate", "--host", "v100"]);
    assert_eq!(by_name.status.code(), Some(1), "SGLang is unsupported on a V100: {}", text(&by_name.stderr));
    assert_eq!(text(&by_name.stdout), text(&by_path.stdout));
    assert!(by_name.stderr.is_empty(), "a name is no surprise: {}", text(&by_name.stderr));
    // README's path, outside the checkout: the embedded file, said so.
    let readme = llmgw_in(nowhere.path(), &["simulate", "--host", "matrix/hosts/v100.json"]);
    assert_eq!(text(&readme.stdout), text(&by_path.stdout));
    assert_eq!(
        text(&readme.stderr),
        "llmgw: no file `matrix/hosts/v100.json` here (outside the checkout): the embedded host `v100`\n"
    );
    // A file of that name here wins over the embedded host.
    let mine = std::fs::read_to_string(super::host_path("nogpu-debian12.json")).unwrap();
    std::fs::write(nowhere.path().join("v100"), mine).unwrap();
    let file = llmgw_in(nowhere.path(), &["plan", "--host", "v100"]);
    assert!(text(&file.stdout).starts_with("host: nogpu-debian12"), "{}", text(&file.stdout));
    std::fs::remove_file(nowhere.path().join("v100")).unwrap();
    // Neither a file nor a name: one line, exit 2.
    let none = llmgw_in(nowhere.path(), &["simulate", "--host", "v1000"]);
    assert_eq!(none.status.code(), Some(2));
    assert_eq!(
        text(&none.stderr),
        "llmgw: error: cannot read host file `v1000`: it does not exist, nor is it an embedded host's name \
         (llmgw list hosts)\n"
    );
    let none = llmgw_in(nowhere.path(), &["simulate", "--host", "v100", "--scenario", "nope"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(text(&none.stderr).contains("nor is it an embedded scenario's name (llmgw list scenarios)"));
    // A scenario by name, and by README's path outside the checkout.
    let named = llmgw_in(nowhere.path(), &["simulate", "--host", "v100", "--scenario", "github-503-twice"]);
    let pathed =
        llmgw_in(&checkout(), &["simulate", "--host", "v100", "--scenario", "mocks/scenarios/github-503-twice.json"]);
    assert_eq!(text(&named.stdout), text(&pathed.stdout));
    assert!(text(&named.stdout).starts_with("host: v100-ubuntu22.04-driver535\nwith scenario github-503-twice\n"));
}

#[test]
fn the_matrix_outside_the_checkout_runs_the_embedded_hosts_and_golden_file() {
    let nowhere = tempfile::tempdir().unwrap();
    let out = llmgw_in(nowhere.path(), &["matrix", "--check"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).starts_with("all ") && text(&out.stdout).contains("cells as expected"));
    let hosts = llmgw_sim::matrix::embedded::HOSTS.len();
    assert_eq!(
        text(&out.stderr),
        format!(
            "llmgw: no matrix/hosts/ here (outside the checkout): the {hosts} hosts embedded in llmgw \
             and its golden outcomes (llmgw list hosts)\n"
        )
    );
    // Nothing to rewrite there.
    let update = llmgw_in(nowhere.path(), &["matrix", "--update"]);
    assert_eq!(update.status.code(), Some(2));
    assert!(text(&update.stderr).contains("--update rewrites the checkout's matrix/expected.json"));
    assert_eq!(std::fs::read_dir(nowhere.path()).unwrap().count(), 0, "nothing written");
}

/// The hosts of a scenario's diff in the README: every H100, A100, B200 …
/// on a driver that runs CUDA 12.8 falls back when its build has no PTX.
fn scenario_diff(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["matrix", "--scenario", "llama-cuda-without-ptx", "--diff"];
    args.extend_from_slice(extra);
    llmgw_in(dir, &args)
}

#[test]
fn a_scenario_can_be_diffed_alone_or_with_a_set() {
    let nowhere = tempfile::tempdir().unwrap();
    let out = scenario_diff(nowhere.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.starts_with("with scenario llama-cuda-without-ptx:\n"), "{said}");
    assert!(
        said.contains("  h100-ubuntu24.04-driver580 llama.cpp@b11459: ready cuda-12.8 -> ready vulkan (drift)\n"),
        "{said}"
    );
    // b11459, pinned or as llama.cpp@latest resolves to it.
    assert!(
        said.lines().skip(1).all(|l| l.contains("llama.cpp@b11459") || l.contains("llama.cpp@latest")),
        "only what the scenario changes: {said}"
    );
    // The same, simulating every host on its own: the grouping keeps the two truths apart.
    let dir = tempfile::tempdir().unwrap();
    for f in ["h100-ubuntu24.04-driver580.json", "rtx4090-ubuntu24.04-driver575.json", "v100.json"] {
        std::fs::copy(super::host_path(f), dir.path().join(f)).unwrap();
    }
    let hosts = dir.path().to_str().unwrap();
    let grouped = scenario_diff(nowhere.path(), &["--hosts", hosts]);
    let ungrouped = scenario_diff(nowhere.path(), &["--hosts", hosts, "--ungrouped"]);
    assert_eq!(text(&grouped.stdout), text(&ungrouped.stdout));
    assert_eq!(
        text(&grouped.stdout),
        "with scenario llama-cuda-without-ptx:\n  \
         h100-ubuntu24.04-driver580 llama.cpp@b11459: ready cuda-12.8 -> ready vulkan (drift)\n  \
         h100-ubuntu24.04-driver580 llama.cpp@latest: ready cuda-12.8 b11459 -> ready vulkan b11459\n"
    );
    // Both at once: against the machine unchanged under the embedded truth.
    let both = scenario_diff(nowhere.path(), &["--hosts", hosts, "--set", "nvidia.driver=615.71.09", "--summary"]);
    let said = text(&both.stdout);
    assert!(said.starts_with("with scenario llama-cuda-without-ptx, nvidia.driver=615.71.09: 3 hosts"), "{said}");
    let json = scenario_diff(nowhere.path(), &["--hosts", hosts, "--summary", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["summary"]["scenario"], "llama-cuda-without-ptx");
    assert_eq!(doc["summary"]["set"], serde_json::json!([]));
    // simulate: the same question for one machine; its exit code is the machine's after the change.
    let one = llmgw_in(
        nowhere.path(),
        &["simulate", "--host", "h100-ubuntu24.04-driver580", "--scenario", "llama-cuda-without-ptx", "--diff"],
    );
    assert_eq!(one.status.code(), Some(0));
    assert_eq!(
        text(&one.stdout),
        "host: h100-ubuntu24.04-driver580\nwith scenario llama-cuda-without-ptx:\n  \
         llama.cpp@b11459: cuda-12.8 b11459 -> vulkan b11459\n"
    );
    // --diff alone has nothing to compare.
    for args in [&["simulate", "--host", "v100", "--diff"][..], &["matrix", "--diff"][..]] {
        let out = llmgw_in(nowhere.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(
            text(&out.stderr),
            "llmgw: error: --diff shows what a change changes: give --scenario, --set PATH=VALUE, or both\n"
        );
    }
}

#[test]
fn refused_command_lines_point_at_their_own_help_and_a_bare_llmgw_lists_the_commands() {
    let nowhere = tempfile::tempdir().unwrap();
    let bare = llmgw_in(nowhere.path(), &[]);
    assert_eq!(bare.status.code(), Some(2));
    assert!(bare.stdout.is_empty());
    let help = text(&llmgw_in(nowhere.path(), &["--help"]).stdout);
    assert_eq!(text(&bare.stderr), help, "a bare llmgw says what --help says");
    assert!(help.contains("Commands:\n  simulate"), "{help}");
    for (args, help) in [
        (&["simulate", "--host"][..], "llmgw simulate --help"),
        (&["-v", "matrix", "--shard"][..], "llmgw matrix --help"),
        (&["bundle", "import", "--bogus"][..], "llmgw bundle import --help"),
        (&["simulat"][..], "llmgw --help"),
    ] {
        let out = llmgw_in(nowhere.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let said = text(&out.stderr);
        assert_eq!(said.lines().count(), 1, "{said}");
        assert!(said.ends_with(&format!("(see {help})\n")), "{args:?}: {said}");
    }
}

#[test]
fn a_set_without_diff_says_the_machine_was_changed() {
    let out = llmgw_in(&checkout(), &["simulate", "--host", "v100", "--set", "nvidia.driver=580.95.05"]);
    assert!(
        text(&out.stdout).starts_with("host: v100-ubuntu22.04-driver535\nwith nvidia.driver=580.95.05\n\n"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn the_gnu_names_of_the_architectures_are_the_same_architectures() {
    let nowhere = tempfile::tempdir().unwrap();
    for (gnu, go) in [("x86_64", "amd64"), ("aarch64", "arm64")] {
        let a = llmgw_in(nowhere.path(), &["builds", "--engine", "uv", "--version", "0.12.20", "--arch", gnu]);
        let b = llmgw_in(nowhere.path(), &["builds", "--engine", "uv", "--version", "0.12.20", "--arch", go]);
        assert_eq!(a.status.code(), Some(0), "{}", text(&a.stderr));
        assert_eq!(a.stdout, b.stdout);
    }
    let bad = llmgw_in(nowhere.path(), &["builds", "--engine", "uv", "--version", "0.12.20", "--arch", "x86"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("amd64 (x86_64), arm64 (aarch64)"), "{}", text(&bad.stderr));
}

#[test]
fn the_agent_simulates_the_default_wants_from_anywhere_and_says_what_its_configuration_kept_out() {
    let nowhere = tempfile::tempdir().unwrap();
    std::fs::write(nowhere.path().join("agent.json"), r#"{"engines": {"disabled": ["sglang"]}}"#).unwrap();
    let out = llmgw_in(nowhere.path(), &["agent", "--host", "v100", "--config", "agent.json", "--once"]);
    let said = text(&out.stdout);
    // SGLang kept out, the rest as simulate says: every want ready.
    assert_eq!(out.status.code(), Some(0), "{said}{}", text(&out.stderr));
    assert!(said.starts_with("host: v100-ubuntu22.04-driver535\n\nllama.cpp@b10850: ready"), "{said}");
    assert!(
        said.ends_with(
            "\nsglang@0.5.4: not installed\n  the configuration disables this engine on this node\n\n\
             sglang@0.4.10: not installed\n  the configuration disables this engine on this node\n\n\
             sglang@0.5.23: not installed\n  the configuration disables this engine on this node\n"
        ),
        "{said}"
    );
    // README's wants path outside the checkout: the embedded wants, said so.
    let readme = llmgw_in(
        nowhere.path(),
        &["agent", "--wants", "matrix/wants.json", "--host", "v100", "--config", "agent.json", "--once"],
    );
    assert_eq!(text(&readme.stdout), said);
    assert!(
        text(&readme.stderr)
            .contains("no file `matrix/wants.json` here (outside the checkout): the embedded default wants"),
        "{}",
        text(&readme.stderr)
    );
    // On a node the wants file stays required.
    let node = llmgw_in(nowhere.path(), &["agent", "--once"]);
    assert_eq!(node.status.code(), Some(2));
    assert!(text(&node.stderr).contains("--wants <FILE>"), "{}", text(&node.stderr));
}

/// `llmgw mock-server --port 0` with `extra`, and its base URL; the second
/// line it printed.
fn serve(extra: &[&str]) -> (super::Running, String, String) {
    use std::io::BufRead;
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("llmgw"))
        .args(["mock-server", "--port", "0"])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut served = super::Running(child);
    let mut lines = std::io::BufReader::new(served.0.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let base = first.strip_prefix("serving the fake GitHub release API at ").unwrap_or_else(|| panic!("{first}"));
    let second = lines.next().unwrap().unwrap();
    // The rest of what it prints is read, so that it never writes to a closed pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (served, base.to_string(), second)
}

#[cfg(target_arch = "x86_64")]
#[test]
fn a_real_provision_against_the_fake_server_with_real_programs_installs_end_to_end() {
    let (_served, base, second) = serve(&["--real-programs"]);
    assert_eq!(second, "real programs, built here with cc, in:");
    let engines = tempfile::tempdir().unwrap();
    let out = llmgw_in(
        engines.path(),
        &[
            "provision",
            "--want",
            "llama.cpp@b10850",
            "--want",
            "uv@0.13.9",
            "--engines-dir",
            "e",
            "--github-api",
            &base,
        ],
    );
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}{}", text(&out.stderr));
    // The stand-in llama-bench read the tiny model's header and said a row: the CPU build's compute check.
    assert!(said.contains("llama.cpp@b10850: ready cpu\n  - cpu     installed: computes on the CPU"), "{said}");
    let server = engines.path().join("e/llama.cpp/b10850-cpu/llama-b10850/llama-server");
    let version = std::process::Command::new(server).arg("--version").output().unwrap();
    assert!(
        text(&version.stderr).starts_with("version: 0.4.0-dev (build 10850, commit fe14399)"),
        "{}",
        text(&version.stderr)
    );
    assert!(
        said.contains("uv@0.13.9: ready x86_64\n  - x86_64  installed: uv 0.13.9 (x86_64-unknown-linux-gnu)"),
        "{said}"
    );
    // What it installed is a real program that says its version.
    let uv = engines.path().join("e/uv/0.13.9-x86_64/uv-x86_64-unknown-linux-gnu/uv");
    let version = std::process::Command::new(uv).arg("--version").output().unwrap();
    assert_eq!(text(&version.stdout), "uv 0.13.9 (x86_64-unknown-linux-gnu)\n");
}

#[cfg(target_arch = "x86_64")]
#[test]
fn provision_against_the_fake_server_without_real_programs_says_why_it_cannot() {
    let (_served, base, second) = serve(&[]);
    assert_eq!(second, "(simulated programs: `llmgw provision` against this server needs --real-programs)");
    let engines = tempfile::tempdir().unwrap();
    let out =
        llmgw_in(engines.path(), &["provision", "--want", "uv@0.13.9", "--engines-dir", "e", "--github-api", &base]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}{}", text(&out.stderr));
    assert!(said.contains("runs only in `llmgw simulate`"), "{said}");
    assert!(!engines.path().join("e/uv/0.13.9-x86_64").exists(), "nothing of it committed");
}

#[test]
fn plan_says_the_version_substituted_as_simulate_does() {
    let nowhere = tempfile::tempdir().unwrap();
    let note = "note: vLLM 0.19.1, the newest built for compute capability 7.0, instead of 0.20.1";
    let plan = llmgw_in(nowhere.path(), &["plan", "--host", "v100", "--want", "vllm@0.20.1"]);
    let simulate = llmgw_in(nowhere.path(), &["simulate", "--host", "v100", "--want", "vllm@0.20.1"]);
    assert!(text(&plan.stdout).contains(note), "{}", text(&plan.stdout));
    assert!(text(&simulate.stdout).contains(note), "{}", text(&simulate.stdout));
    let json = llmgw_in(nowhere.path(), &["plan", "--host", "v100", "--want", "vllm@0.20.1", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["plans"][0]["candidates"][0]["note"], note.trim_start_matches("note: "));
}

#[test]
fn a_want_given_twice_is_refused_naming_both() {
    let nowhere = tempfile::tempdir().unwrap();
    let out = llmgw_in(
        nowhere.path(),
        &["simulate", "--host", "v100", "--want", "llama.cpp@b10850", "--want", "llamacpp@b10850"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "llmgw: error: --want `llamacpp@b10850` is --want `llama.cpp@b10850` again; give each want once\n"
    );
    std::fs::write(
        nowhere.path().join("w.json"),
        r#"{"wants": [{"engine": "uv", "version": "0.13.9"}, {"engine": "llama.cpp", "version": "b11459"}, {"engine": "uv", "version": "0.13.9"}]}"#,
    )
    .unwrap();
    for args in [
        &["simulate", "--host", "v100", "--wants", "w.json"][..],
        &["matrix", "--wants", "w.json", "--update", "--expected", "e.json"],
    ] {
        let out = llmgw_in(nowhere.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains("wants[2]: uv@0.13.9 is wants[0] again; give each want once"),
            "{}",
            text(&out.stderr)
        );
    }
    assert!(!nowhere.path().join("e.json").exists(), "nothing written");
}

#[test]
fn simulate_diff_as_json_is_refused_rather_than_printed_as_text() {
    let nowhere = tempfile::tempdir().unwrap();
    let out = llmgw_in(
        nowhere.path(),
        &["simulate", "--host", "v100", "--set", "nvidia.driver=580.95.05", "--diff", "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(text(&out.stderr).contains("--diff prints what changes as text: leave out --format json"));
}

#[test]
fn matrix_diff_of_cells_as_json_is_refused_and_the_summary_is_offered() {
    let nowhere = tempfile::tempdir().unwrap();
    let out = llmgw_in(nowhere.path(), &["matrix", "--set", "nvidia.driver=580.95.05", "--diff", "--format", "json"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    assert!(text(&out.stderr).contains("--diff lists the changed cells as text: leave out --format json"));
    assert!(text(&out.stderr).contains("--summary --diff --format json"));
}

#[test]
fn plan_of_latest_is_bad_input() {
    let nowhere = tempfile::tempdir().unwrap();
    let out = llmgw_in(nowhere.path(), &["plan", "--host", "v100", "--want", "llama.cpp@latest"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("`llama.cpp@latest` names no version to plan"), "{}", text(&out.stderr));
}

#[test]
fn verbose_simulate_says_each_build_it_tries_and_what_proved_it() {
    let nowhere = tempfile::tempdir().unwrap();
    let out = llmgw_in(nowhere.path(), &["-v", "simulate", "--host", "v100", "--want", "llama.cpp@b11459"]);
    let said = text(&out.stderr);
    assert!(said.contains("trying the vulkan build, candidate 1 of 1"), "{said}");
    assert!(said.contains("installed: installed the OS package libvulkan1; computes on Vulkan0"), "{said}");
    // Without -v, nothing of it.
    let quiet = llmgw_in(nowhere.path(), &["simulate", "--host", "v100", "--want", "llama.cpp@b11459"]);
    assert!(quiet.stderr.is_empty(), "{}", text(&quiet.stderr));
}

#[cfg(target_arch = "x86_64")]
#[test]
fn provision_against_the_fake_server_without_githubs_digest_installs_uv_verified_by_its_sidecar() {
    let (_served, base, _) = serve(&["--real-programs", "--scenario", "uv-digest-from-sidecar"]);
    let http = llmgw_system::http::Http::loopback(10, 60).unwrap();
    let get = |url: String| http.http_get(&url, "*/*").unwrap().body;
    let api: serde_json::Value =
        serde_json::from_slice(&get(format!("{base}/repos/astral-sh/uv/releases/tags/0.13.9"))).unwrap();
    let archive = &api["assets"][0];
    assert!(archive["digest"].is_null(), "the API gives none: {archive}");
    let sidecar = text(&get(format!("{}.sha256", archive["browser_download_url"].as_str().unwrap())));
    let (hex, name) = sidecar.trim_end().split_once("  ").unwrap();
    assert_eq!(name, "uv-x86_64-unknown-linux-gnu.tar.gz");
    let engines = tempfile::tempdir().unwrap();
    let out =
        llmgw_in(engines.path(), &["provision", "--want", "uv@0.13.9", "--engines-dir", "e", "--github-api", &base]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}{}", text(&out.stderr));
    assert!(said.contains("uv@0.13.9: ready x86_64"), "{said}");
    // The install record keeps the digest the sidecar gave, which the bytes matched.
    let record = std::fs::read_to_string(engines.path().join("e/uv/0.13.9-x86_64.json")).unwrap();
    assert!(record.contains(hex), "{record}");
    let uv = engines.path().join("e/uv/0.13.9-x86_64/uv-x86_64-unknown-linux-gnu/uv");
    let version = std::process::Command::new(uv).arg("--version").output().unwrap();
    assert_eq!(text(&version.stdout), "uv 0.13.9 (x86_64-unknown-linux-gnu)\n");
}
