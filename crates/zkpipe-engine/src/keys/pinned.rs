//! The pinned tier: streamed bindings' copies of their keys' points, packed in the
//! device's layout in page-locked memory, so each walk's chunks cross from them directly
//! (`BoundKey::pin`). A copy is made after a binding's pass (outside the device's gate)
//! when it fits `memory.pinned_limit`, evicting idle keys' copies least recently used
//! first; it is reserved from the host budget as well, since it is host memory, but never
//! evicts a key to get there. Copies go when their key is evicted, or when another key's
//! copy needs their room while their key is idle.

use crate::keys::context::KeyContext;
use crate::keys::entry::{Binding, KeyEntry, Pin};
use crate::memory::Reservation;
use std::sync::Arc;

/// Pins `entry`'s binding on `device` if it streams, holds no copy, and the copy fits
/// `ctx`'s pinned budget (after evicting idle keys' copies); the host budget is charged
/// too. The caller holds a lease on `entry`, so its binding stays meanwhile. A failure to
/// pin is logged and the binding stays warm: pinning only makes its walks faster.
pub(crate) fn pin(ctx: &KeyContext, entry: &Arc<KeyEntry>, device: usize) {
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
        if !matches!(pin, Pin::Unpinned) || bytes == 0 || !ctx.pinned.could_ever_fit(bytes) {
            return;
        }
        *pin = Pin::Pinning;
        (Arc::clone(key), bytes)
    };
    let id = &entry.meta.id;
    let state = match reserve(ctx, bytes, entry) {
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
    let mut s = entry.lock();
    if let Some(Binding::Bound { pin, .. }) = s
        .placements
        .iter_mut()
        .find(|p| p.device == device)
        .map(|p| &mut p.binding)
    {
        *pin = state;
    }
}

/// `bytes` from the pinned budget and from the host's, evicting idle copies (of keys
/// other than `entry`'s) for the first; `None` if they cannot be had now.
fn reserve(
    ctx: &KeyContext,
    bytes: u64,
    entry: &Arc<KeyEntry>,
) -> Option<(Reservation, Reservation)> {
    loop {
        if let Some(pinned) = ctx.pinned.try_reserve(bytes) {
            return Some((pinned, ctx.budget.try_reserve(bytes)?));
        }
        if !unpin_least_recent(ctx, entry) {
            return None;
        }
    }
}

/// Drops the copies of the least recently used idle key other than `except` that holds
/// any; whether there was one.
fn unpin_least_recent(ctx: &KeyContext, except: &Arc<KeyEntry>) -> bool {
    let Some(victim) = ctx.least_recent_idle(except, |s| s.pinned_bytes() > 0) else {
        return false;
    };
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
