//! Fuzz target `r1cs`: see zkpipe_fuzz::r1cs (crates/zkpipe-fuzz).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zkpipe_fuzz::r1cs(data));
