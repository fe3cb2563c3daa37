//! The bodies of zkpipe's fuzz targets, one function per target, shared by the libFuzzer
//! harness in `fuzz/` (nightly; `scripts/fuzz.sh` runs it) and the replay of the committed
//! corpus in `tests/corpus.rs` (stable, part of `cargo test`), so that CI replays exactly
//! what was fuzzed.
//!
//! Each body takes arbitrary bytes. The code under test may refuse them but must not
//! panic, and what it accepts must keep the promises checked here with `assert!` (on
//! purpose: a broken promise is a finding, and libFuzzer reports panics):
//!
//! | target | entry point | checked beyond "no panic" |
//! |---|---|---|
//! | `zkey` | `ZkeyFile::from_file` over bytes, then `VerifyingKey::from_zkey` and `CompiledKey::compile` | sections sized as the header says; written again, it parses to the same key; points re-encode to their bytes; CSR counts match |
//! | `wtns` | `Wtns::parse`, then `Witness::from_wtns` | written again, it parses to the same witness; every value is a field element with the same bytes |
//! | `r1cs` | `R1cs::parse` | combination offsets consistent; written again, it parses to the same system |
//! | `proof_json` | `parse_json::<ProofJson>`, then `Proof::from_json` per curve and `ProofCalldata::from_json` | JSON shape round-trips; an accepted proof round-trips through `to_json` |
//! | `public_json` | `parse_json::<PublicJson>`, then `public_from_json` per curve and `public_calldata` | JSON round-trips; each scalar prints as its input without leading zeros |
//! | `vk_json` | `parse_json::<VerificationKeyJson>`, then `VerifyingKey::from_json` per curve and `solidity::verifier` | JSON round-trips; IC has nPublic + 1 points; points round-trip through JSON |
//! | `request` | `decode_submit` / `decode_prove` (the daemon's prost decoding and priority conversion), then the `wtns` body for every witness and the key id check | the daemon's zero-copy messages and the public `pb` ones decode the same bytes alike; a re-encoded request decodes the same |
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod binary;
mod json;
mod request;
pub mod seeds;

pub use binary::{r1cs, wtns, zkey};
pub use json::{proof_json, public_json, vk_json};
pub use request::request;

/// A fuzz target body.
pub type Body = fn(&[u8]);

/// Every target: its name (the file `fuzz/fuzz_targets/<name>.rs` and the corpus folder
/// `fuzz/corpus/<name>/`) and its body.
pub const TARGETS: &[(&str, Body)] = &[
    ("zkey", zkey),
    ("wtns", wtns),
    ("r1cs", r1cs),
    ("proof_json", proof_json),
    ("public_json", public_json),
    ("vk_json", vk_json),
    ("request", request),
];
