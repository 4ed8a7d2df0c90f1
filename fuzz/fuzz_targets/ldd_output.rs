//! The `ldd` output parser: any text gives a report, never a panic; a
//! report that says the binary loads names nothing missing.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let report = llmgw_core::parse::ldd::parse(&text);
    if report.is_clean() {
        assert!(report.missing_libraries.is_empty() && report.missing_versions.is_empty());
    }
});
