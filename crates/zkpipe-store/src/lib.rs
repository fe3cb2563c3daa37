//! zkpipe's durable job stores, behind the engine's [`zkpipe_engine::JobStore`] (the
//! engine keeps the trait and its volatile in-memory store; this crate keeps the
//! databases, as `zkpipe-cuda` keeps the CUDA device set behind core's `Devices`):
//!
//! - [`SqliteStore`]: one daemon's jobs in `jobs.sqlite3` in its state directory, the
//!   embedded default;
//! - [`PgStore`]: a fleet's shared queue in Postgres (docs/fleet.md), with witnesses too
//!   large for the database in a directory or an S3 bucket.
//!
//! What the stores write holds private witnesses: the directories they create are 0700
//! and their files 0600, whatever the umask, and an existing state directory is made 0700
//! when it is opened.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod columns;
mod objects;
pub mod postgres;
mod private;
pub mod sqlite;
#[doc(hidden)]
pub mod testing;

pub use postgres::{PgOptions, PgStore};
pub use sqlite::{SqliteOptions, SqliteStore, DEFAULT_CHECKPOINT_PAGES, DEFAULT_INLINE_MAX};
