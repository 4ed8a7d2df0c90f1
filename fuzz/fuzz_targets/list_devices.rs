//! The `llama-server --list-devices` parser: any text gives a list of
//! devices, never a panic; every device has a name.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for d in llmgw_core::parse::devices::parse(&text) {
        assert!(!d.name.is_empty(), "{d:?}");
    }
});
