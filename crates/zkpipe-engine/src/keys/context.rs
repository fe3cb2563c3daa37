//! What the store and its leases share ([`KeyContext`]).

use crate::keys::entry::KeyEntry;
use crate::keys::pinned::PinnedTier;
use crate::memory::{MemoryBudget, Signal};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use zkpipe_core::{BindOptions, PointChecks};

/// Every key the store knows, by id.
pub(crate) type Entries = Mutex<HashMap<String, Arc<KeyEntry>>>;

/// What the store and its leases share: the keys, the host budget they are reserved
/// from, the pinned tier, how much of a key to check when loading it, how each key binds,
/// the wake-up signal, and where evicted keys go to be freed.
pub(crate) struct KeyContext {
    /// Every key known, for the tiers' evictions to choose from.
    pub entries: Entries,
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

impl KeyContext {
    /// The keys, locked (never while an entry is locked).
    pub fn entries(&self) -> MutexGuard<'_, HashMap<String, Arc<KeyEntry>>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}
