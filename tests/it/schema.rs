//! `llmgw schema host|wants|scenario`: the JSON Schema editors check files
//! with, and the strict parser, agree: every host file and scenario of the
//! checkout and the default wants validate; a set of wrong files is refused
//! by both.

use boon::{Compiler, Schemas};

/// The schema `llmgw schema WHAT` prints, compiled.
fn compiled(what: &str) -> (Schemas, boon::SchemaIndex) {
    let out = assert_cmd::Command::cargo_bin("llmgw").unwrap().args(["schema", what]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    let mut schemas = Schemas::new();
    let mut compiler = Compiler::new();
    compiler.add_resource("schema.json", schema).unwrap();
    let index = compiler.compile("schema.json", &mut schemas).unwrap();
    (schemas, index)
}

/// Validates every file of the checkout's `dir` against `llmgw schema
/// WHAT`, naming the first that fails; how many there are.
fn every_file_validates(what: &str, dir: &str) -> usize {
    let schema = compiled(what);
    let mut n = 0;
    for e in std::fs::read_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir)).unwrap() {
        let path = e.unwrap().path();
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        if let Err(e) = schema.0.validate(&doc, schema.1) {
            panic!("{}: {e}", path.display());
        }
        n += 1;
    }
    n
}

fn valid(s: &(Schemas, boon::SchemaIndex), text: &str) -> bool {
    let doc: serde_json::Value = serde_json::from_str(text).unwrap();
    s.0.validate(&doc, s.1).is_ok()
}

#[test]
fn every_host_file_of_the_checkout_validates_against_the_host_schema() {
    let n = every_file_validates("host", "matrix/hosts");
    assert!(n >= 69, "{n} host files");
    let wants = compiled("wants");
    let text = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("matrix/wants.json"));
    assert!(valid(&wants, &text.unwrap()), "matrix/wants.json");
}

/// The V100 host of the README with one change.
fn v100_with(change: impl Fn(&mut serde_json::Value)) -> String {
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(super::host_path("v100.json")).unwrap()).unwrap();
    change(&mut doc);
    doc.to_string()
}

#[rstest::rstest]
#[case::as_is(|_: &mut serde_json::Value| {}, true)]
#[case::unknown_field(|d: &mut serde_json::Value| d["colour"] = "red".into(), false)]
#[case::unknown_field_deep(|d: &mut serde_json::Value| d["nvidia"]["gpus"][0]["vendor"] = "nv".into(), false)]
#[case::missing_arch(|d: &mut serde_json::Value| { d.as_object_mut().unwrap().remove("arch"); }, false)]
#[case::unknown_arch(|d: &mut serde_json::Value| d["arch"] = "x86".into(), false)]
#[case::blank_name(|d: &mut serde_json::Value| d["name"] = "  ".into(), false)]
#[case::name_256(|d: &mut serde_json::Value| d["name"] = "n".repeat(256).into(), true)]
#[case::name_257(|d: &mut serde_json::Value| d["name"] = "n".repeat(257).into(), false)]
#[case::gpu_name_long(|d: &mut serde_json::Value| d["nvidia"]["gpus"][0]["name"] = "g".repeat(100_000).into(), false)]
#[case::no_gpus(|d: &mut serde_json::Value| d["nvidia"]["gpus"] = serde_json::json!([]), false)]
#[case::too_many_gpus(|d: &mut serde_json::Value| { let g = d["nvidia"]["gpus"][0].clone(); d["nvidia"]["gpus"] = serde_json::Value::Array(vec![g; 257]); }, false)]
#[case::no_nvidia(|d: &mut serde_json::Value| d["nvidia"] = serde_json::Value::Null, true)]
#[case::nvidia_absent(|d: &mut serde_json::Value| { d.as_object_mut().unwrap().remove("nvidia"); }, true)]
#[case::cc_as_number(|d: &mut serde_json::Value| d["nvidia"]["gpus"][0]["compute_capability"] = serde_json::json!(8.6), true)]
#[case::cc_as_integer(|d: &mut serde_json::Value| d["nvidia"]["gpus"][0]["compute_capability"] = serde_json::json!(8), false)]
#[case::cc_words(|d: &mut serde_json::Value| d["nvidia"]["gpus"][0]["compute_capability"] = "Volta".into(), false)]
#[case::driver_words(|d: &mut serde_json::Value| d["nvidia"]["driver"] = "latest".into(), false)]
#[case::glibc_not_2(|d: &mut serde_json::Value| d["os"]["glibc"] = "3.1".into(), false)]
#[case::glibc_missing(|d: &mut serde_json::Value| d["os"]["glibc"] = serde_json::Value::Null, false)]
#[case::musl_with_glibc(|d: &mut serde_json::Value| d["os"]["libc"] = "musl".into(), false)]
#[case::musl_without_glibc(|d: &mut serde_json::Value| { d["os"]["libc"] = "musl".into(); d["os"]["glibc"] = serde_json::Value::Null; }, true)]
#[case::glibcxx_form(|d: &mut serde_json::Value| d["os"]["glibcxx"] = "3.5.1".into(), false)]
#[case::disk_negative(|d: &mut serde_json::Value| d["disk_free_gb"] = serde_json::json!(-1), false)]
#[case::disk_as_text(|d: &mut serde_json::Value| d["disk_free_gb"] = "200".into(), false)]
#[case::vulkan_icd_null(|d: &mut serde_json::Value| d["nvidia"]["vulkan_icd"] = serde_json::Value::Null, true)]
#[case::package_family(|d: &mut serde_json::Value| d["os"]["package_family"] = "pacman".into(), false)]
#[case::l4t_on_arm64(|d: &mut serde_json::Value| { d["arch"] = "arm64".into(); d["nvidia"]["l4t"] = "R36.4.3".into(); }, true)]
#[case::l4t_lower_case(|d: &mut serde_json::Value| { d["arch"] = "arm64".into(); d["nvidia"]["l4t"] = "r36.4.0".into(); }, false)]
#[case::l4t_jetpack_like(|d: &mut serde_json::Value| { d["arch"] = "arm64".into(); d["nvidia"]["l4t"] = "36.4".into(); }, false)]
#[case::l4t_without_r(|d: &mut serde_json::Value| { d["arch"] = "arm64".into(); d["nvidia"]["l4t"] = "36.4.3".into(); }, false)]
#[case::l4t_on_amd64(|d: &mut serde_json::Value| d["nvidia"]["l4t"] = "R36.4.3".into(), false)]
#[case::mig(|d: &mut serde_json::Value| { ampere(d); d["nvidia"]["gpus"][0]["mig"] = mig(&["3g.40gb", "1g.10gb+me"]); }, true)]
#[case::mig_seven(|d: &mut serde_json::Value| { ampere(d); d["nvidia"]["gpus"][0]["mig"] = mig(&["1g.10gb"; 7]); }, true)]
#[case::mig_eight(|d: &mut serde_json::Value| { ampere(d); d["nvidia"]["gpus"][0]["mig"] = mig(&["1g.10gb"; 8]); }, false)]
#[case::mig_profile(|d: &mut serde_json::Value| { ampere(d); d["nvidia"]["gpus"][0]["mig"] = mig(&["3g"]); }, false)]
#[case::mig_old_uuid(|d: &mut serde_json::Value| { ampere(d); d["nvidia"]["gpus"][0]["mig"] = serde_json::json!([{"profile": "3g.40gb", "memory_mib": 40192, "uuid": "MIG-GPU-0929581a-2be6-5dec-bf34-0954c6c529a6/1/0"}]); }, false)]
#[case::mig_unknown_field(|d: &mut serde_json::Value| { ampere(d); d["nvidia"]["gpus"][0]["mig"] = mig(&["3g.40gb"]); d["nvidia"]["gpus"][0]["mig"][0]["gi"] = 1.into(); }, false)]
#[case::wsl(|d: &mut serde_json::Value| d["os"]["wsl"] = true.into(), true)]
#[case::wsl_words(|d: &mut serde_json::Value| d["os"]["wsl"] = "yes".into(), false)]
fn the_host_schema_and_the_parser_agree(#[case] change: fn(&mut serde_json::Value), #[case] accepted: bool) {
    let schema = compiled("host");
    let text = v100_with(change);
    let parsed = llmgw_model::host::Host::from_json(&text);
    assert_eq!(parsed.is_ok(), accepted, "the parser on {text}: {:?}", parsed.err());
    assert_eq!(valid(&schema, &text), accepted, "the schema on {text}");
}

/// An A100 80 GB in place of the V100 (MIG needs compute capability 8.0).
fn ampere(d: &mut serde_json::Value) {
    d["nvidia"]["gpus"][0] =
        serde_json::json!({"name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0", "memory_mib": 81920});
}

/// MIG instances of `profiles`, 10 GB each, each with its own UUID.
fn mig(profiles: &[&str]) -> serde_json::Value {
    let one = |(i, p): (usize, &&str)| serde_json::json!({"profile": p, "memory_mib": 9856, "uuid": format!("MIG-{i:08x}-2be6-5dec-bf34-0954c6c529a6")});
    serde_json::Value::Array(profiles.iter().enumerate().map(one).collect())
}

#[rstest::rstest]
#[case::the_gpu_has_no_mig(|d: &mut serde_json::Value| d["nvidia"]["gpus"][0]["mig"] = mig(&["1g.10gb"]), "nvidia.gpus[0].mig: a GPU of compute capability 7.0 has no MIG")]
#[case::larger_than_its_gpu(|d: &mut serde_json::Value| { ampere(d); d["nvidia"]["gpus"][0]["mig"] = mig(&["7g.80gb"]); d["nvidia"]["gpus"][0]["mig"][0]["memory_mib"] = 90000.into(); }, "nvidia.gpus[0].mig: [0] has 90000 MiB, more than its GPU's 81920 MiB")]
#[case::more_slices_than_a_gpu(|d: &mut serde_json::Value| { ampere(d); d["nvidia"]["gpus"][0]["mig"] = mig(&["4g.40gb", "4g.40gb"]); }, "nvidia.gpus[0].mig: the instances take 8 compute slices; a GPU has at most 7")]
#[case::one_uuid_twice(|d: &mut serde_json::Value| { ampere(d); d["nvidia"]["gpus"][0]["mig"] = mig(&["1g.10gb", "1g.10gb"]); d["nvidia"]["gpus"][0]["mig"][1]["uuid"] = d["nvidia"]["gpus"][0]["mig"][0]["uuid"].clone(); }, "nvidia.gpus[0].mig: [1]'s UUID MIG-00000000-2be6-5dec-bf34-0954c6c529a6 is given twice")]
#[case::l4t_on_amd64(|d: &mut serde_json::Value| d["nvidia"]["l4t"] = "R36.4.3".into(), "nvidia.l4t: an L4T release is a Jetson's, and a Jetson is arm64, not amd64")]
#[case::l4t_spelling(|d: &mut serde_json::Value| { d["arch"] = "arm64".into(); d["nvidia"]["l4t"] = "r36.4.0".into(); }, "nvidia.l4t: `r36.4.0` is not an L4T release like R36.4.3")]
fn what_the_schema_cannot_say_the_parser_refuses_with_its_path(
    #[case] change: fn(&mut serde_json::Value),
    #[case] says: &str,
) {
    let text = v100_with(change);
    let e = llmgw_model::host::Host::from_json(&text).unwrap_err().to_string();
    assert!(e.starts_with(says), "{e}");
    // And the command line says it with exit 2.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("host.json");
    std::fs::write(&file, &text).unwrap();
    let out =
        std::process::Command::new(env!("CARGO_BIN_EXE_llmgw")).args(["plan", "--host"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(says), "{}", String::from_utf8_lossy(&out.stderr));
}

#[rstest::rstest]
#[case::plain(r#"{"wants": [{"engine": "llama.cpp", "version": "b10850"}]}"#, true)]
#[case::variant(r#"{"wants": [{"engine": "uv", "version": "0.13.9", "variant": "x86_64"}]}"#, true)]
#[case::unknown_engine(r#"{"wants": [{"engine": "ollama", "version": "0.1.0"}]}"#, false)]
#[case::unknown_field(r#"{"wants": [{"engine": "uv", "version": "0.13.9", "pin": true}]}"#, false)]
#[case::no_version(r#"{"wants": [{"engine": "uv"}]}"#, false)]
#[case::not_a_list(r#"{"wants": {"engine": "uv", "version": "0.13.9"}}"#, false)]
#[case::twice(r#"{"wants": [{"engine": "uv", "version": "0.13.9"}, {"engine": "uv", "version": "0.13.9"}]}"#, false)]
#[case::top_level_field(r#"{"wants": [], "extra": 1}"#, false)]
#[case::no_want(r#"{"wants": []}"#, false)]
#[case::alias(r#"{"wants": [{"engine": "llamacpp", "version": "b10850"}]}"#, true)]
#[case::offline(r#"{"wants": [{"engine": "uv", "version": "0.13.9", "offline_base": "http://m/llmgw", "offline_sha256": {"uv.tar.gz": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789ABCDEF"}}]}"#, true)]
#[case::checksums_without_mirror(r#"{"wants": [{"engine": "uv", "version": "0.13.9", "offline_sha256": {"uv.tar.gz": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}]}"#, false)]
#[case::mirror_without_checksums(
    r#"{"wants": [{"engine": "uv", "version": "0.13.9", "offline_base": "http://m/llmgw"}]}"#,
    false
)]
#[case::checksum_not_hex(r#"{"wants": [{"engine": "uv", "version": "0.13.9", "offline_base": "http://m/llmgw", "offline_sha256": {"uv.tar.gz": "nothex"}}]}"#, false)]
#[case::checksum_of_a_path(r#"{"wants": [{"engine": "uv", "version": "0.13.9", "offline_base": "http://m/llmgw", "offline_sha256": {"../uv.tar.gz": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}]}"#, false)]
fn the_wants_schema_and_the_parser_agree(#[case] text: &str, #[case] accepted: bool) {
    let schema = compiled("wants");
    let parsed = llmgw_core::recipe::WantsFile::from_json(text);
    assert_eq!(parsed.is_ok(), accepted, "the parser on {text}: {:?}", parsed.err());
    assert_eq!(valid(&schema, text), accepted, "the schema on {text}");
}

#[test]
fn every_scenario_of_the_checkout_validates_against_the_scenario_schema() {
    let n = every_file_validates("scenario", "mocks/scenarios");
    assert!(n >= 25, "{n} scenario files");
}

/// A scenario of one fault of llama.cpp's b10850 release, with `fault`'s fields.
fn one_fault(fault: &str) -> String {
    format!(r#"{{"description": "x", "faults": [{{"release": "ggml-org/llama.cpp@b10850", {fault}}}]}}"#)
}

const VULKAN: &str = r#""asset": "llama-b10850-bin-ubuntu-vulkan-x64.tar.gz""#;

#[rstest::rstest]
#[case::status(one_fault(r#""status": 503, "times": 2"#), true)]
#[case::body(one_fault(&format!(r#"{VULKAN}, "body": "cut_short", "times": 1"#)), true)]
#[case::status_and_null_body(one_fault(r#""status": 503, "body": null"#), true)]
#[case::both(one_fault(&format!(r#"{VULKAN}, "status": 503, "body": "reset""#)), false)]
#[case::neither(one_fault(r#""times": 1"#), false)]
#[case::not_an_error(one_fault(r#""status": 200"#), false)]
#[case::times_zero(one_fault(r#""status": 503, "times": 0"#), false)]
#[case::unknown_body(one_fault(&format!(r#"{VULKAN}, "body": "garbled""#)), false)]
#[case::asset_fault_without_asset(one_fault(r#""body": "one_byte_changed""#), false)]
#[case::body_with_retry_after(one_fault(r#""body": "redirect_loop", "retry_after_secs": 5"#), false)]
#[case::wait_over_a_year(one_fault(r#""status": 429, "retry_after_secs": 40000000"#), false)]
#[case::unknown_field(one_fault(r#""status": 503, "colour": "red""#), false)]
#[case::no_description(r#"{"faults": []}"#.to_string(), false)]
#[case::top_level_field(r#"{"description": "x", "when": "now"}"#.to_string(), false)]
#[case::timeout_zero(r#"{"description": "x", "machine": {"http_timeout_secs": 0}}"#.to_string(), false)]
#[case::timeout_a_day(r#"{"description": "x", "machine": {"http_timeout_secs": 86400}}"#.to_string(), false)]
#[case::crash_before_zero(r#"{"description": "x", "machine": {"crash_before_change": 0}}"#.to_string(), false)]
#[case::sidecar_line_and_none(r#"{"description": "x", "digests": [{"release": "astral-sh/uv@0.13.9", "asset": "uv-x86_64-unknown-linux-gnu.tar.gz", "no_api_digest": true, "no_sidecar": true, "sidecar_line": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}]}"#.to_string(), false)]
#[case::sidecar_line(r#"{"description": "x", "digests": [{"release": "astral-sh/uv@0.13.9", "asset": "uv-x86_64-unknown-linux-gnu.tar.gz", "no_api_digest": true, "sidecar_line": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}]}"#.to_string(), true)]
#[case::digest_patch_of_nothing(r#"{"description": "x", "digests": [{"release": "astral-sh/uv@0.13.9", "asset": "uv-x86_64-unknown-linux-gnu.tar.gz"}]}"#.to_string(), false)]
#[case::sidecar_line_with_the_api_digest(r#"{"description": "x", "digests": [{"release": "astral-sh/uv@0.13.9", "asset": "uv-x86_64-unknown-linux-gnu.tar.gz", "sidecar_line": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}]}"#.to_string(), false)]
#[case::crash_before_one(r#"{"description": "x", "machine": {"crash_before_change": 1}}"#.to_string(), true)]
#[case::unknown_program_fault(r#"{"description": "x", "machine": {"compute_program": "explodes"}}"#.to_string(), false)]
#[case::backend(r#"{"description": "x", "truth": [{"release": "ggml-org/llama.cpp@b10850", "asset": "llama-b10850-bin-ubuntu-vulkan-x64.tar.gz", "path": "libggml-vulkan.so", "backend": {"kind": "cpu"}}]}"#.to_string(), true)]
#[case::backend_unknown_kind(r#"{"description": "x", "truth": [{"release": "ggml-org/llama.cpp@b10850", "asset": "a", "path": "p", "backend": {"kind": "metal"}}]}"#.to_string(), false)]
#[case::cuda_without_toolkit(r#"{"description": "x", "truth": [{"release": "ggml-org/llama.cpp@b10850", "asset": "a", "path": "p", "backend": {"kind": "cuda", "sass": [], "ptx": [], "compressed": false}}]}"#.to_string(), false)]
fn the_scenario_schema_and_the_parser_agree(#[case] text: String, #[case] accepted: bool) {
    use llmgw_sim::truth::scenario::Scenario;
    let schema = compiled("scenario");
    let parsed = Scenario::from_json(&text)
        .map_err(|e| e.to_string())
        .and_then(|s| s.apply(llmgw_sim::truth::embedded_catalog()).map(drop));
    assert_eq!(parsed.is_ok(), accepted, "the parser on {text}: {:?}", parsed.err());
    assert_eq!(valid(&schema, &text), accepted, "the schema on {text}");
}
