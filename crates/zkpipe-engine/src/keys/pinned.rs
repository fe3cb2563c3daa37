//! The pinned tier: streamed bindings' copies of their keys' points, packed in the
//! device's layout in page-locked memory, so each walk's chunks cross from them directly
//! (`BoundKey::pin`). A copy is made after a binding's pass (outside the device's gate)
//! when it fits `memory.pinned_limit`, evicting idle keys' copies least recently used
//! first; it is reserved from the host budget as well, since it is host memory, but never
//! evicts a key to get there. Copies go when their key is evicted, or when another key's
//! copy needs their room while their key is idle.

use crate::keys::entry::{Binding, KeyEntry, Pin};
use crate::memory::{MemoryBudget, Reservation};
use std::sync::{Arc, Mutex, MutexGuard};

/// The pinned tier's budget and the keys holding copies (see the module doc).
pub(crate) struct PinnedTier {
    budget: Arc<MemoryBudget>,
    /// Entries that held a copy when last seen (pruned as copies go).
    holders: Mutex<Vec<Arc<KeyEntry>>>,
}

impl PinnedTier {
    /// A tier under `budget` (a limit of 0: nothing is ever pinned).
    pub fn new(budget: Arc<MemoryBudget>) -> Self {
        Self {
            budget,
            holders: Mutex::new(Vec::new()),
        }
    }

    /// The tier's budget.
    pub fn budget(&self) -> &Arc<MemoryBudget> {
        &self.budget
    }

    fn holders(&self) -> MutexGuard<'_, Vec<Arc<KeyEntry>>> {
        self.holders.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Pins `entry`'s binding on `device` if it streams, holds no copy, and the copy fits
    /// (after evicting idle keys' copies); `host` is charged too. The caller holds a lease
    /// on `entry`, so its binding stays meanwhile. A failure to pin is logged and the
    /// binding stays warm: pinning only makes its walks faster.
    pub fn pin(&self, entry: &Arc<KeyEntry>, device: usize, host: &Arc<MemoryBudget>) {
        let (key, bytes) = {
            let mut s = entry.lock();
            let Some(Binding::Bound { key, pin, .. }) = s
                .placements
                .iter_mut()
                .find(|p| p.device == device)
                .map(|p| &mut p.binding)
            else {
                return;
            };
            let bytes = key.pinnable_bytes();
            if !matches!(pin, Pin::Unpinned) || bytes == 0 || !self.budget.could_ever_fit(bytes) {
                return;
            }
            *pin = Pin::Pinning;
            (Arc::clone(key), bytes)
        };
        let id = &entry.meta.id;
        let state = match self.reserve(bytes, entry, host) {
            None => Pin::Unpinned,
            Some((pinned, host)) => match key.pin() {
                Ok(()) => {
                    tracing::info!(key = %id, device, bytes, "key pinned");
                    Pin::Held {
                        bytes,
                        _pinned: pinned,
                        _host: host,
                    }
                }
                Err(e) => {
                    tracing::warn!(key = %id, device, bytes, error = %e, "pinning the key failed; it streams through staging buffers");
                    Pin::Failed
                }
            },
        };
        let held = matches!(state, Pin::Held { .. });
        let mut s = entry.lock();
        if let Some(Binding::Bound { pin, .. }) = s
            .placements
            .iter_mut()
            .find(|p| p.device == device)
            .map(|p| &mut p.binding)
        {
            *pin = state;
        }
        drop(s);
        if held {
            let mut h = self.holders();
            if !h.iter().any(|e| Arc::ptr_eq(e, entry)) {
                h.push(Arc::clone(entry));
            }
        }
    }

    /// `bytes` from this tier's budget and from `host`, evicting idle copies (of keys
    /// other than `entry`'s) for the first; `None` if they cannot be had now.
    fn reserve(
        &self,
        bytes: u64,
        entry: &Arc<KeyEntry>,
        host: &Arc<MemoryBudget>,
    ) -> Option<(Reservation, Reservation)> {
        loop {
            if let Some(pinned) = self.budget.try_reserve(bytes) {
                return Some((pinned, host.try_reserve(bytes)?));
            }
            if !self.unpin_least_recent(entry) {
                return None;
            }
        }
    }

    /// Drops the copies of the least recently used idle key other than `except` that
    /// holds any; whether there was one.
    fn unpin_least_recent(&self, except: &Arc<KeyEntry>) -> bool {
        let mut holders = self.holders();
        holders.retain(|e| e.lock().pinned_bytes() > 0);
        let lru = holders
            .iter()
            .filter(|e| !Arc::ptr_eq(e, except))
            .filter_map(|e| {
                let s = e.lock();
                (s.refs == 0).then(|| (s.last_used, Arc::clone(e)))
            })
            .min_by_key(|(t, _)| *t);
        let Some((_, victim)) = lru else {
            return false;
        };
        holders.retain(|e| !Arc::ptr_eq(e, &victim));
        drop(holders);
        let mut s = victim.lock();
        if s.refs > 0 {
            // Taken again meanwhile: its copies stay, and the caller looks again.
            return true;
        }
        let mut freed = 0;
        for p in &mut s.placements {
            if let Binding::Bound { key, pin, .. } = &mut p.binding {
                if let Pin::Held { bytes, .. } = pin {
                    freed += *bytes;
                    key.unpin();
                    *pin = Pin::Unpinned;
                }
            }
        }
        drop(s);
        tracing::info!(key = %victim.meta.id, bytes = freed, "key unpinned for another");
        true
    }
}
