//! What the store and its leases share ([`KeyContext`]).

use crate::keys::entry::{EntryState, KeyEntry};
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
    /// The pinned tier's budget (`memory.pinned_limit`; [`crate::keys::pinned`]).
    pub pinned: Arc<MemoryBudget>,
    pub signal: Arc<Signal>,
    /// Frees an evicted key on the deallocation worker.
    pub free: Box<dyn Fn(crate::buffers::Garbage) + Send + Sync>,
}

impl KeyContext {
    /// The keys, locked (never while an entry is locked).
    pub fn entries(&self) -> MutexGuard<'_, HashMap<String, Arc<KeyEntry>>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The least recently used key other than `except` that no partition holds and that
    /// has what `gives` looks for (a tier's eviction picks its victim with it).
    pub fn least_recent_idle(
        &self,
        except: &Arc<KeyEntry>,
        gives: impl Fn(&EntryState) -> bool,
    ) -> Option<Arc<KeyEntry>> {
        let entries: Vec<Arc<KeyEntry>> = self.entries().values().cloned().collect();
        entries
            .into_iter()
            .filter(|e| !Arc::ptr_eq(e, except))
            .filter_map(|e| {
                let s = e.lock();
                let idle = s.refs == 0 && gives(&s);
                let used = s.last_used;
                drop(s);
                idle.then_some((used, e))
            })
            .min_by_key(|(t, _)| *t)
            .map(|(_, e)| e)
    }
}
