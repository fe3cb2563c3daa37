//! What the store and its leases share ([`KeyContext`]).

use crate::keys::pinned::PinnedTier;
use crate::memory::{MemoryBudget, Signal};
use std::sync::Arc;
use zkpipe_core::{BindOptions, PointChecks};

/// What the store and its leases share: the host budget keys are reserved from, the
/// pinned tier, how much of a key to check when loading it, how each key binds, the
/// wake-up signal, and where evicted keys go to be freed.
pub(crate) struct KeyContext {
    pub checks: PointChecks,
    /// How each key binds, by id.
    pub options: Box<dyn Fn(&str) -> BindOptions + Send + Sync>,
    pub budget: Arc<MemoryBudget>,
    /// Streamed bindings' pinned copies, under `memory.pinned_limit`.
    pub pinned: PinnedTier,
    pub signal: Arc<Signal>,
    /// Frees an evicted key on the deallocation worker.
    pub free: Box<dyn Fn(crate::buffers::Garbage) + Send + Sync>,
}
