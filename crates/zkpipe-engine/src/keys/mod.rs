//! Resident proving keys under their budgets.
//!
//! ```text
//!   Cold ──admit──► Reserved ──first partition──► Loading ──► Binding ──first device──► Hot
//!    ▲                  │ (cancelled)               │ (failed)                          │
//!    └──────────────────┴───────────────────────────┴────────────evict (idle, no refs)──┘
//! ```
//!
//! Each key is also in a [`Tier`], from its state and its bindings, each tier under its
//! own budget, evicted least recently used first:
//!
//! | tier | where its points are | budget |
//! |---|---|---|
//! | cold | the `.zkey` file | — |
//! | warm | compiled in host memory; streamed bindings pack chunks on every walk | `memory.host_limit` (and each binding's own host bytes, [`lease`]) |
//! | pinned | warm, and a streamed binding's copy in page-locked memory ([`pinned`]) | `memory.pinned_limit` (and the host's) |
//! | resident | on a device, in-core ([`resident`]) | `memory.device_limit` |
//!
//! Keys are `.zkey` files in one directory; a key's id is its file stem ([`meta`]). The
//! [`store`] admits, evicts and reports them; a partition's [`lease`] loads its key,
//! places it on a device ([`placement`], a pure function) and binds it there; [`entry`]
//! is one key's state, locked only to change it, never across a wait or an upload.

pub(crate) mod context;
pub(crate) mod entry;
pub(crate) mod generators;
pub(crate) mod lease;
pub mod meta;
pub(crate) mod pinned;
pub mod placement;
pub(crate) mod resident;
pub(crate) mod store;

pub use entry::{Residency, Tier};
pub use meta::{valid_key_id, KeyMeta};
pub use store::{KeyFailure, KeyStatus};
