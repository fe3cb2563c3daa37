//! Fuzz target `proof_json`: see zkpipe_fuzz::proof_json (crates/zkpipe-fuzz).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zkpipe_fuzz::proof_json(data));
