//! Fuzz target `vk_json`: see zkpipe_fuzz::vk_json (crates/zkpipe-fuzz).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zkpipe_fuzz::vk_json(data));
