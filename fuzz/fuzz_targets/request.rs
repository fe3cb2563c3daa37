//! Fuzz target `request`: see zkpipe_fuzz::request (crates/zkpipe-fuzz).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zkpipe_fuzz::request(data));
