//! The stores' integration tests, one module per subject, in one test binary (each test
//! binary links the stores' dependencies of its own). The SQLite store's own tests are
//! unit tests (`src/sqlite/tests.rs`); the Postgres ones run on a throwaway server
//! (`tests/support/postgres.rs`, shared with the CLI's fleet tests).

mod permissions;
mod postgres;
#[path = "../support/postgres.rs"]
mod support;
mod throughput;
