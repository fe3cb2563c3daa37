//! The resident tier's eviction: a key bound to a device whose budget has no room for
//! another key's copy gives its copy up there if it is idle, least recently used first.
//! It stays compiled in host memory (warm), and its placement stays, so its next partition
//! goes back to the device and binds again.

use crate::keys::context::KeyContext;
use crate::keys::entry::{Binding, EntryState, KeyEntry, Residency};
use std::sync::Arc;

/// Unbinds, on device `device`, the copy of the least recently used idle key other than
/// `except` bound there; whether there was one. Call it inside the device's gate: the
/// copy's device memory is freed here, before its reservation is given back.
pub(crate) fn unbind_least_recent(ctx: &KeyContext, device: usize, except: &Arc<KeyEntry>) -> bool {
    let bound_here = |s: &EntryState| {
        s.placements
            .iter()
            .any(|p| p.device == device && matches!(p.binding, Binding::Bound { .. }))
    };
    let Some(victim) = ctx.least_recent_idle(except, bound_here) else {
        return false;
    };
    let binding = {
        let mut s = victim.lock();
        if s.refs > 0 {
            // Taken again meanwhile: its copy stays, and the caller looks again.
            return true;
        }
        let Some(p) = s.placements.iter_mut().find(|p| p.device == device) else {
            return true;
        };
        let b = std::mem::replace(&mut p.binding, Binding::Unbound);
        let still_bound = s
            .placements
            .iter()
            .any(|p| matches!(p.binding, Binding::Bound { .. }));
        if !still_bound && s.residency == Residency::Hot {
            s.residency = Residency::Binding;
        }
        b
    };
    tracing::info!(key = %victim.meta.id, device, "key unbound for another");
    // The device copy goes first, then its reservation (the fields' order).
    drop(binding);
    ctx.signal.notify();
    true
}
