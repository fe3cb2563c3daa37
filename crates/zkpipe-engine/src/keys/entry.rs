//! One key known to the store: its header, its state, and what the store's parts share.
//!
//! A key's state moves Cold → Reserved → Loading → Binding → Hot and back to Cold on
//! eviction or a failed load. Every change is made under the entry's mutex, which is
//! never held across a wait, a load or an upload: a thread that must wait for a load or
//! a binding waits on the entry's condition variable, so `status()` never blocks.

use crate::curves::{DeviceKey, LoadedKey};
use crate::error::EngineError;
use crate::keys::meta::KeyMeta;
use crate::memory::{MemoryBudget, Reservation, Signal};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;
use zkpipe_core::{BindOptions, PointChecks};

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

/// A key's binding on one device.
pub(crate) enum Binding {
    /// Not bound (before first use there, or after eviction).
    Unbound,
    /// A partition is binding it now; others wait on the entry's condition variable.
    InProgress,
    /// Bound: the device's copy, and the device memory it holds (given back on drop).
    Bound {
        key: Arc<dyn DeviceKey>,
        _memory: Option<Reservation>,
    },
}

impl Binding {
    /// The path a bound key's proofs take on its device ([`DeviceKey::residency`]); empty
    /// while it is not bound.
    pub fn path(&self) -> String {
        match self {
            Binding::Bound { key, .. } => key.residency(),
            Binding::InProgress | Binding::Unbound => String::new(),
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

/// What the store and its leases share: the host budget keys are reserved from, how
/// much of a key to check when loading it, how each key binds, the wake-up signal, and
/// where evicted keys go to be freed.
pub(crate) struct KeyContext {
    pub checks: PointChecks,
    /// How each key binds, by id.
    pub options: Box<dyn Fn(&str) -> BindOptions + Send + Sync>,
    pub budget: Arc<MemoryBudget>,
    pub signal: Arc<Signal>,
    /// Frees an evicted key on the deallocation worker.
    pub free: Box<dyn Fn(crate::buffers::Garbage) + Send + Sync>,
}
