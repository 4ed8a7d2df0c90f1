//! The host-description parser: any bytes give a host or an error naming
//! where, never a panic; a host it accepts survives its own JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use llmgw_model::host::Host;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(host) = Host::from_json(text) {
        let again = serde_json::to_string(&host).expect("a host serializes");
        let back = Host::from_json(&again).expect("a host's own JSON parses");
        assert_eq!(back, host, "round trip through {again}");
    }
});
