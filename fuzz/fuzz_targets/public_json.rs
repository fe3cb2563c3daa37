//! Fuzz target `public_json`: see zkpipe_fuzz::public_json (crates/zkpipe-fuzz).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zkpipe_fuzz::public_json(data));
