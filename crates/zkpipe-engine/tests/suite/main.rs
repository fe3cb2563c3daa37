//! The engine's integration tests, one module per subject, in one test binary: each test
//! binary links and optimises the engine's dependencies of its own (experiment 033). The
//! stores' own tests are in `zkpipe-store`.

mod engine;
