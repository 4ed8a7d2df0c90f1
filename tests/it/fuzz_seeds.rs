//! The fuzz targets' seed corpora and every input fuzzing found
//! (`fuzz/corpus/<target>/`, `fuzz/regressions/<target>/`), run through
//! the same checks as the targets, so that `cargo test` keeps them fixed
//! without a nightly toolchain.

use std::path::PathBuf;

use llmgw_model::host::Host;
use llmgw_system::unpack::{unpack_tar_gz, unpack_wheel};

#[path = "../../fuzz/fuzz_targets/common.rs"]
mod common;

#[path = "../../fuzz/fuzz_targets/input_json_check.rs"]
mod input_json_check;

/// Every input kept for `target`, by file name.
fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut out = Vec::new();
    for dir in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else { continue };
        for e in entries.flatten() {
            out.push((e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()));
        }
    }
    out.sort();
    assert!(!out.is_empty(), "no inputs for {target}");
    out
}

#[test]
fn host_descriptions_parse_or_fail_and_round_trip() {
    for (name, data) in inputs("host_json") {
        let Ok(text) = std::str::from_utf8(&data) else { continue };
        if let Ok(host) = Host::from_json(text) {
            let again = serde_json::to_string(&host).unwrap();
            assert_eq!(Host::from_json(&again).unwrap(), host, "{name}");
        }
    }
}

#[test]
fn input_files_and_wants_parse_or_fail_and_keep_their_promises() {
    for (_, data) in inputs("input_json") {
        input_json_check::input(&data);
    }
}

#[test]
fn ldd_and_list_devices_outputs_parse() {
    for (name, data) in inputs("ldd_output") {
        let report = llmgw_core::parse::ldd::parse(&String::from_utf8_lossy(&data));
        if report.is_clean() {
            assert!(report.missing_libraries.is_empty() && report.missing_versions.is_empty(), "{name}");
        }
    }
    for (name, data) in inputs("list_devices") {
        for d in llmgw_core::parse::devices::parse(&String::from_utf8_lossy(&data)) {
            assert!(!d.name.is_empty(), "{name}: {d:?}");
        }
    }
}

/// Seeds named `good.*` unpack; every other one is hostile and refused;
/// none writes outside its destination.
#[rstest::rstest]
#[case::tar_gz("unpack_tar_gz")]
#[case::wheel("unpack_wheel")]
fn archives_unpack_only_inside_and_hostile_seeds_are_refused(#[case] target: &str) {
    for (name, data) in inputs(target) {
        let root = tempfile::tempdir().unwrap();
        let dest = root.path().join("staging");
        std::fs::create_dir(&dest).unwrap();
        let result = match target {
            "unpack_tar_gz" => unpack_tar_gz(&data[..], &dest, common::LIMITS).map(drop),
            _ => unpack_wheel(std::io::Cursor::new(&data), &dest, common::LIMITS).map(drop),
        };
        common::assert_inside(root.path(), &dest);
        if name.starts_with("good.") {
            assert!(result.is_ok(), "{target}/{name}: {result:?}");
        } else if !name.starts_with("crash-") {
            assert!(result.is_err(), "{target}/{name} was not refused");
        }
    }
}

/// The fatbin seeds: sections cut from the fixtures (`good.*`) parse; the
/// broken ones (bad magic, sizes past the section, a compressed entry's
/// lying length, cut short, empty) are refused; the two readers agree.
#[test]
fn fatbin_sections_parse_or_are_refused_at_an_offset() {
    for (name, data) in inputs("fatbin") {
        let parsed = common::check_fatbin(&data);
        if name.starts_with("good.") {
            assert!(parsed, "fatbin/{name} did not parse");
        } else if !name.starts_with("crash-") {
            assert!(!parsed, "fatbin/{name} was not refused");
        }
    }
}
