//! The wheel unpacker: any bytes unpack or are refused, never a panic, and
//! nothing is ever written outside the destination.
#![no_main]

use libfuzzer_sys::fuzz_target;
use llmgw_system::unpack::unpack_wheel;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let root = tempfile::tempdir().expect("a temporary directory");
    let dest = root.path().join("site-packages");
    std::fs::create_dir(&dest).expect("site-packages");
    let _ = unpack_wheel(std::io::Cursor::new(data), &dest, common::LIMITS);
    common::assert_inside(root.path(), &dest);
});
