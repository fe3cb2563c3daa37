//! The CLI's integration tests: the `zkpipe` binary, snarkjs (npm) and daemons on
//! loopback, one module per subject. One test binary instead of one per file: each file
//! linked and optimised its own copy of the helpers, the gRPC client and the verifier,
//! which cost CI's two cores minutes (lab/experiments/033-ci-build-time.md).

mod bad_input;
mod cli;
mod common;
mod container;
mod cross_verify;
mod daemon;
mod daemon_inputs;
mod dev_setup;
mod durability;
mod fleet;
mod latency_paths;
mod memory_switches;
mod ops;
mod outputs;
mod solidity;
mod stdin;
mod streamed_submit;
mod witness;
