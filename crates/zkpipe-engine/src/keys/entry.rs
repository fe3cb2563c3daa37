//! One key known to the store: its header, its state, and what the store's parts share.
//!
//! A key's state moves Cold → Reserved → Loading → Binding → Hot and back to Cold on
//! eviction or a failed load; its [`Tier`] follows from that state and its bindings. Every change is made under the entry's mutex, which is
//! never held across a wait, a load or an upload: a thread that must wait for a load or
//! a binding waits on the entry's condition variable, so `status()` never blocks.

use crate::curves::{DeviceKey, LoadedKey};
use crate::error::EngineError;
use crate::keys::meta::KeyMeta;
use crate::memory::Reservation;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// Where a key is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Residency {
    /// On disk only.
    Cold,
    /// Memory admitted; the first partition to need it will load it.
    Reserved,
    /// Being read, checked and compiled.
    Loading,
    /// Compiled; being bound to (uploaded to) its first device, or waiting for it.
    Binding,
    /// Compiled and bound to at least one device.
    Hot,
}

impl Residency {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Residency::Cold => "cold",
            Residency::Reserved => "reserved",
            Residency::Loading => "loading",
            Residency::Binding => "binding",
            Residency::Hot => "hot",
        }
    }

    /// Whether the key is compiled and resident in host memory.
    pub fn is_loaded(self) -> bool {
        matches!(self, Residency::Binding | Residency::Hot)
    }
}

/// The tier a key is in, the highest any of its bindings reaches (see the module doc of
/// [`crate::keys`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// Not compiled: its file only (and pages the OS may cache).
    Cold,
    /// Compiled in host memory; a streamed binding packs its chunks into staging
    /// buffers on every walk.
    Warm,
    /// Streamed, from a pinned copy in the device's layout (`memory.pinned_limit`).
    Pinned,
    /// All its points on a device.
    Resident,
}

impl Tier {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Cold => "cold",
            Tier::Warm => "warm",
            Tier::Pinned => "pinned",
            Tier::Resident => "resident",
        }
    }

    /// Every tier, lowest first.
    pub const ALL: [Tier; 4] = [Tier::Cold, Tier::Warm, Tier::Pinned, Tier::Resident];
}

/// A key's binding on one device.
pub(crate) enum Binding {
    /// Not bound (before first use there, or after eviction).
    Unbound,
    /// A partition is binding it now; others wait on the entry's condition variable.
    InProgress,
    /// Bound: the device's copy, the device memory it holds and the host memory it holds
    /// beside the compiled key ([`DeviceKey::host_bytes`]; both given back on drop, after
    /// the copy), and its pinned copy's state.
    Bound {
        key: Arc<dyn DeviceKey>,
        _memory: Option<Reservation>,
        _host: Option<Reservation>,
        pin: Pin,
    },
}

/// A streamed binding's pinned copy ([`crate::keys::pinned`]).
pub(crate) enum Pin {
    /// None held (an in-core binding, or no room yet).
    Unpinned,
    /// A partition is making it now.
    Pinning,
    /// Held: its bytes, reserved from the pinned and the host budgets (given back on drop).
    Held {
        bytes: u64,
        _pinned: Reservation,
        _host: Reservation,
    },
    /// Making it failed; not tried again while the key stays bound.
    Failed,
}

impl Binding {
    /// A new binding of `key` holding `memory` of its device and `host` bytes of host
    /// memory, unpinned.
    pub fn bound(
        key: Arc<dyn DeviceKey>,
        memory: Option<Reservation>,
        host: Option<Reservation>,
    ) -> Self {
        Binding::Bound {
            key,
            _memory: memory,
            _host: host,
            pin: Pin::Unpinned,
        }
    }

    /// The path a bound key's proofs take on its device ([`DeviceKey::residency`]); empty
    /// while it is not bound.
    pub fn path(&self) -> String {
        match self {
            Binding::Bound { key, .. } => key.residency(),
            Binding::InProgress | Binding::Unbound => String::new(),
        }
    }

    /// The tier this binding puts its key in (`Warm` while not bound).
    pub fn tier(&self) -> Tier {
        match self {
            Binding::Bound { key, .. } if key.in_core() => Tier::Resident,
            Binding::Bound {
                pin: Pin::Held { .. },
                ..
            } => Tier::Pinned,
            _ => Tier::Warm,
        }
    }

    /// Host bytes its pinned copy holds.
    pub fn pinned_bytes(&self) -> u64 {
        match self {
            Binding::Bound {
                pin: Pin::Held { bytes, .. },
                ..
            } => *bytes,
            _ => 0,
        }
    }

    /// Host bytes it holds beside its compiled key and its pinned copy (reserved from the
    /// host budget while it is bound).
    pub fn host_bytes(&self) -> u64 {
        match self {
            Binding::Bound { _host: Some(r), .. } => r.bytes(),
            _ => 0,
        }
    }
}

/// A key's place on one device: the device it sticks to (affinity) and its binding there.
pub(crate) struct DevicePlacement {
    pub device: usize,
    pub binding: Binding,
}

/// The mutable part of an entry.
pub(crate) struct EntryState {
    pub residency: Residency,
    pub key: Option<Arc<dyn LoadedKey>>,
    /// Host memory of the compiled key, from admission until eviction.
    pub reservation: Option<Reservation>,
    /// In placement order; a device appears at most once.
    pub placements: Vec<DevicePlacement>,
    /// Leases (partitions) holding the key.
    pub refs: usize,
    pub last_used: Instant,
    pub loads: u64,
    /// Failed loads, and the last one's error with the file's identity then: partitions
    /// admitted while the file is unchanged fail with it instead of loading again.
    pub failures: u64,
    pub last_error: Option<(EngineError, Option<FileStamp>)>,
}

/// A file's identity for "has it changed since": length and modification time.
pub(crate) type FileStamp = (u64, std::time::SystemTime);

/// One key known to the store.
pub(crate) struct KeyEntry {
    pub meta: KeyMeta,
    state: Mutex<EntryState>,
    /// Signalled when a load or a binding ends.
    pub changed: Condvar,
}

impl EntryState {
    /// The key's tier: cold until compiled, else the highest of its bindings'.
    pub fn tier(&self) -> Tier {
        if !self.residency.is_loaded() {
            return Tier::Cold;
        }
        let bound = self.placements.iter().map(|p| p.binding.tier());
        bound.max().unwrap_or(Tier::Warm)
    }

    /// Host bytes its bindings' pinned copies hold.
    pub fn pinned_bytes(&self) -> u64 {
        self.placements
            .iter()
            .map(|p| p.binding.pinned_bytes())
            .sum()
    }

    /// Host bytes its bindings hold beside the compiled key and their pinned copies.
    pub fn binding_host_bytes(&self) -> u64 {
        self.placements.iter().map(|p| p.binding.host_bytes()).sum()
    }
}

impl KeyEntry {
    pub fn new(meta: KeyMeta) -> Self {
        Self {
            meta,
            state: Mutex::new(EntryState {
                residency: Residency::Cold,
                key: None,
                reservation: None,
                placements: Vec::new(),
                refs: 0,
                last_used: Instant::now(),
                loads: 0,
                failures: 0,
                last_error: None,
            }),
            changed: Condvar::new(),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, EntryState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits on the entry's condition variable (the lock is released meanwhile).
    pub fn wait<'a>(&self, s: MutexGuard<'a, EntryState>) -> MutexGuard<'a, EntryState> {
        self.changed.wait(s).unwrap_or_else(|e| e.into_inner())
    }

    /// The key file's identity now, if it can be read.
    pub fn stamp(&self) -> Option<FileStamp> {
        let m = std::fs::metadata(&self.meta.path).ok()?;
        Some((m.len(), m.modified().ok()?))
    }
}
