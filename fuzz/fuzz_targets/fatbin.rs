//! The CUDA fatbin container parser (`llmgw inspect`): any bytes give
//! entries or an error naming an offset within the section, never a panic;
//! the in-memory and the at-offsets readers agree.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    common::check_fatbin(data);
});
