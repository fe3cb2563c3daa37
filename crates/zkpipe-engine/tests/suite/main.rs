//! The engine's integration tests, one module per subject, in one test binary: each test
//! binary links and optimises the engine's dependencies of its own (experiment 033).
//! `support/` holds helpers shared with the CLI's tests.

mod engine;
mod shared_store;
