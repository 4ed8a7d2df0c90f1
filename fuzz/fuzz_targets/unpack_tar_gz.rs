//! The archive unpacker: any bytes unpack or are refused, never a panic,
//! and nothing is ever written outside the destination (checked by
//! walking the parent of the destination afterwards).
#![no_main]

use libfuzzer_sys::fuzz_target;
use llmgw_system::unpack::unpack_tar_gz;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let root = tempfile::tempdir().expect("a temporary directory");
    let dest = root.path().join("staging");
    std::fs::create_dir(&dest).expect("staging");
    let _ = unpack_tar_gz(data, &dest, common::LIMITS);
    common::assert_inside(root.path(), &dest);
});
