//! Fuzz target `zkey`: see zkpipe_fuzz::zkey (crates/zkpipe-fuzz).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zkpipe_fuzz::zkey(data));
