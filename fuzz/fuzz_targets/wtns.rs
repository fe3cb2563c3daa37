//! Fuzz target `wtns`: see zkpipe_fuzz::wtns (crates/zkpipe-fuzz).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zkpipe_fuzz::wtns(data));
