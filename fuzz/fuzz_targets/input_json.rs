//! The files a user gives besides host descriptions — wants files, offline
//! checksums and bundle manifests, scenarios, the agent's configuration —
//! and a want on the command line: any bytes give a value or an error
//! naming where, never a panic; what is accepted holds no text the one rule
//! refuses, no key twice, no version a file name could not be.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "input_json_check.rs"]
mod check;

fuzz_target!(|data: &[u8]| {
    check::input(data);
});
