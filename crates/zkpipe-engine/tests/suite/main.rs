//! The engine's integration tests, one module per subject, in one test binary: each test
//! binary links and optimises the engine's dependencies of its own
//! (lab/experiments/033-ci-build-time.md). What the modules share (the fixtures' keys, an
//! engine's test configuration, proof checks, test devices) is in `support`. The stores'
//! own tests are in `zkpipe-store`.

mod engine;
mod packed;
mod restart;
mod support;
