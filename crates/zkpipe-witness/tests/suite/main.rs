//! The witness generators' integration tests, one module per subject, in one test binary:
//! each test binary links its own copy of wasmtime (lab/experiments/033-ci-build-time.md).

mod native;
mod snarkjs_inputs;
mod wasm;
