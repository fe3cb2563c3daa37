//! `zkpipe`: a Groth16 prover for snarkjs/circom users, as a library that the `zkpipe`
//! binary runs ([`main`]) and the lab's `zkpipe-bench` builds on.
//!
//! Errors are printed as one line, `zkpipe: error: <file>: <what is wrong>`, with exit
//! status 1 (2 for a usage error or `await`'s timeout; a JSON error event with
//! `--log-format json`); outputs are written all-or-nothing. Logs go to stderr.
//!
//! Two environment variables, read once at startup (an unknown value is a one-line error,
//! exit status 2): `ZKPIPE_ALLOCATOR=system|mimalloc` (default system) picks the memory
//! allocator ([`allocator`]), and `ZKPIPE_HUGE_PAGES=0|1` (default 1) whether `serve`,
//! `submit` (and the lab's `loadtest` and `sweep`) ask glibc for huge pages
//! ([`huge_pages`]).
//!
//! The public API is what another zkpipe binary shares with this one, so that it is not
//! written twice: [`program::main`] (parsing, logging, one-line errors and exit statuses),
//! [`backend`] (`--backend`), [`with_curve!`], output planning ([`replace_outputs`],
//! [`new_outputs`]), [`Threads`], the daemon's client plumbing ([`client`]) and the
//! allocator a binary installs. It is not a stable API for other programs.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod allocator;
pub mod backend;
mod cli;
mod commands;
pub mod huge_pages;
pub mod logging;
pub mod program;
mod progress;

pub use cli::main;
pub use commands::client;
pub use commands::{exit_status, new_outputs, replace_outputs, Exit, Threads};

/// `--version` of zkpipe's binaries: the crate version and the commit it was built from
/// (build.rs).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("ZKPIPE_GIT_COMMIT"),
    ")"
);

/// The crates [`with_curve!`] names, re-exported so that its callers need not depend on
/// them under these names.
#[doc(hidden)]
pub mod deps {
    pub use zkpipe_core;
    pub use zkpipe_formats;
}
