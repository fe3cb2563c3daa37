//! Resident proving keys under one host-memory budget.
//!
//! ```text
//!   Cold ──admit──► Reserved ──first partition──► Loading ──► Binding ──first device──► Hot
//!    ▲                  │ (cancelled)               │ (failed)                          │
//!    └──────────────────┴───────────────────────────┴────────────evict (idle, no refs)──┘
//! ```
//!
//! Keys are `.zkey` files in one directory; a key's id is its file stem ([`meta`]). The
//! [`store`] admits, evicts and reports them; a partition's [`lease`] loads its key,
//! places it on a device ([`placement`], a pure function) and binds it there; [`entry`]
//! is one key's state, locked only to change it, never across a wait or an upload.

pub(crate) mod entry;
pub(crate) mod generators;
pub(crate) mod lease;
pub mod meta;
pub mod placement;
pub(crate) mod store;

pub use entry::Residency;
pub use meta::{valid_key_id, KeyMeta};
pub use store::{KeyFailure, KeyStatus};
