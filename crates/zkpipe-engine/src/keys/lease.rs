//! A partition's reference on a key, from admission to completion: through it the key is
//! loaded (by the first partition that needs it), placed on a device and bound there.
//! While any lease exists the key is not evicted.

use crate::curves::{curve, DeviceKey, LoadedKey};
use crate::error::EngineError;
use crate::keys::context::KeyContext;
use crate::keys::entry::{Binding, DevicePlacement, KeyEntry, Residency};
use crate::keys::meta::KeyMeta;
use crate::keys::placement::Placement;
use crate::keys::resident::unbind_least_recent;
use crate::memory::{MemoryBudget, Reservation};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zkpipe_core::{Devices, Error as CoreError};
use zkpipe_formats::zkey::ZkeyFile;

/// How long a binding waits for the device memory of the key's resident copy, and for
/// the host memory the binding holds beside the key.
const BIND_MEMORY_WAIT: Duration = Duration::from_secs(60);

/// A reference on a key (see the module doc).
pub(crate) struct KeyLease {
    ctx: Arc<KeyContext>,
    entry: Arc<KeyEntry>,
}

impl KeyLease {
    /// A lease on `entry`, whose `refs` the caller has already counted.
    pub(super) fn new(ctx: Arc<KeyContext>, entry: Arc<KeyEntry>) -> Self {
        Self { ctx, entry }
    }

    pub fn meta(&self) -> &KeyMeta {
        &self.entry.meta
    }

    /// The compiled key, loading it on `pool` if this lease is first. Call it from a plain
    /// thread, not from inside a rayon job: it may wait for another lease's load, and a
    /// rayon thread waiting inside that load's parallel work could steal this very wait
    /// and deadlock.
    pub fn get(&self, pool: &rayon::ThreadPool) -> Result<Arc<dyn LoadedKey>, EngineError> {
        let mut s = self.entry.lock();
        let failures = s.failures;
        loop {
            match s.residency {
                Residency::Binding | Residency::Hot => {
                    if let Some(k) = &s.key {
                        return Ok(Arc::clone(k));
                    }
                }
                Residency::Loading => {
                    s = self.entry.wait(s);
                    if s.failures != failures {
                        return Err(self.last_error(&s));
                    }
                    continue;
                }
                Residency::Reserved => {
                    s.residency = Residency::Loading;
                    drop(s);
                    let loaded = self.load(pool);
                    let stamp = self.entry.stamp();
                    s = self.entry.lock();
                    match loaded {
                        Ok(k) => {
                            s.residency = Residency::Binding;
                            if s.placements
                                .iter()
                                .any(|p| matches!(p.binding, Binding::Bound { .. }))
                            {
                                s.residency = Residency::Hot;
                            }
                            s.key = Some(Arc::clone(&k));
                            s.loads += 1;
                            self.entry.changed.notify_all();
                            return Ok(k);
                        }
                        Err(e) => {
                            s.residency = Residency::Cold;
                            s.reservation = None;
                            s.failures += 1;
                            s.last_error = Some((e.clone(), stamp));
                            self.entry.changed.notify_all();
                            drop(s);
                            self.ctx.signal.notify();
                            return Err(e);
                        }
                    }
                }
                Residency::Cold => {}
            }
            return Err(self.last_error(&s));
        }
    }

    fn last_error(&self, s: &crate::keys::entry::EntryState) -> EngineError {
        s.last_error.as_ref().map_or_else(
            || {
                EngineError::key_load(
                    &self.entry.meta.id,
                    CoreError::InvalidKey("the key is not loaded".into()),
                )
            },
            |(e, _)| e.clone(),
        )
    }

    /// Maps, checks and compiles the key file on `pool` (no lock held).
    fn load(&self, pool: &rayon::ThreadPool) -> Result<Arc<dyn LoadedKey>, EngineError> {
        let meta = &self.entry.meta;
        let _span = tracing::info_span!("load_key", key = %meta.id).entered();
        let compile = || {
            let z = ZkeyFile::open(&meta.path)?;
            curve(z.header.curve).compile(&z, self.ctx.checks)
        };
        let started = Instant::now();
        let loaded = catch_unwind(AssertUnwindSafe(|| pool.install(compile)))
            .unwrap_or_else(|_| {
                Err(CoreError::Backend {
                    backend: "engine",
                    message: "internal error (panic) while loading".into(),
                })
            })
            .map_err(|e| EngineError::key_load(&meta.id, e));
        if loaded.is_ok() {
            tracing::info!(key = %meta.id, seconds = started.elapsed().as_secs_f64(), "key loaded");
        }
        loaded
    }

    /// Places the key under its lock: `choose` sees the devices it is placed on (in
    /// placement order) and picks one ([`crate::keys::placement::place`] or
    /// [`crate::keys::placement::take_over`]), or none; a `New` device is added to its
    /// placements. Returns the device and whether it is new. Whatever `choose` records
    /// (a partition counted on the device) is recorded before another partition of the
    /// key is placed, so two placed at once see each other.
    pub fn place_with(
        &self,
        choose: impl FnOnce(&[usize]) -> Option<Placement>,
    ) -> Option<(usize, bool)> {
        let mut s = self.entry.lock();
        let placed: Vec<usize> = s.placements.iter().map(|p| p.device).collect();
        match choose(&placed)? {
            Placement::Placed(d) => Some((d, false)),
            Placement::New(d) => {
                s.placements.push(DevicePlacement {
                    device: d,
                    binding: Binding::Unbound,
                });
                Some((d, true))
            }
        }
    }

    /// The key bound to `device` of `devices`, binding it there (and reserving the device
    /// memory of its resident copy from `budget`, and the host memory the binding holds
    /// beside the key from the host budget) on first use. Call it inside the device's
    /// gate: binding is device work. No lock is held while it reserves memory or uploads;
    /// a second lease binding the same device meanwhile waits for this one. A binding
    /// whose host memory cannot be had is dropped again ([`EngineError::Busy`]).
    pub fn bind(
        &self,
        key: &Arc<dyn LoadedKey>,
        devices: &dyn Devices,
        device: usize,
        device_name: &str,
        budget: Option<&Arc<MemoryBudget>>,
    ) -> Result<Arc<dyn DeviceKey>, EngineError> {
        let meta = &self.entry.meta;
        let mut s = self.entry.lock();
        loop {
            let i = match s.placements.iter().position(|p| p.device == device) {
                Some(i) => i,
                None => {
                    s.placements.push(DevicePlacement {
                        device,
                        binding: Binding::Unbound,
                    });
                    s.placements.len() - 1
                }
            };
            match &s.placements[i].binding {
                Binding::Bound { key, .. } => return Ok(Arc::clone(key)),
                Binding::InProgress => s = self.entry.wait(s),
                Binding::Unbound => {
                    s.placements[i].binding = Binding::InProgress;
                    break;
                }
            }
        }
        drop(s);
        let bytes = devices.key_device_bytes(&meta.shape, &meta.bind);
        let bound = (|| {
            let reservation = match budget {
                Some(b) => Some(self.reserve_device(b, bytes, device)?),
                None => None,
            };
            let started = Instant::now();
            let b = catch_unwind(AssertUnwindSafe(|| key.bind(devices, device, &meta.bind)))
                .unwrap_or_else(|_| {
                    Err(CoreError::Backend {
                        backend: "engine",
                        message: "internal error (panic) while binding".into(),
                    })
                })
                .map_err(|e| EngineError::Bind {
                    id: meta.id.clone(),
                    device: device_name.to_string(),
                    source: Arc::new(e),
                })?;
            tracing::info!(key = %meta.id, device = device_name, seconds = started.elapsed().as_secs_f64(), residency = %b.residency(), "key bound");
            // On failure `b` goes before `reservation` (declared after it): the copy is
            // freed before its device memory is given back.
            let host = self.reserve_host(b.host_bytes(), device_name)?;
            Ok((b, reservation, host))
        })();
        let mut s = self.entry.lock();
        // Placements are never removed, so this is the one marked above.
        let (binding, r) = match bound {
            Ok((b, memory, host)) => (Binding::bound(Arc::clone(&b), memory, host), Ok(b)),
            Err(e) => (Binding::Unbound, Err(e)),
        };
        if r.is_ok() && s.residency == Residency::Binding {
            s.residency = Residency::Hot;
        }
        if let Some(p) = s.placements.iter_mut().find(|p| p.device == device) {
            p.binding = binding;
        }
        self.entry.changed.notify_all();
        r
    }
}

impl KeyLease {
    /// `bytes` of device `device`'s `budget` for the key's copy there: at once if they
    /// fit, else after unbinding idle keys' copies on the device, least recently used
    /// first (they stay compiled, warm), else waiting up to [`BIND_MEMORY_WAIT`] for
    /// partitions to give theirs back.
    fn reserve_device(
        &self,
        budget: &Arc<MemoryBudget>,
        bytes: u64,
        device: usize,
    ) -> Result<Reservation, EngineError> {
        loop {
            if let Some(r) = budget.try_reserve(bytes) {
                return Ok(r);
            }
            if !unbind_least_recent(&self.ctx, device, &self.entry) {
                break;
            }
        }
        budget.reserve_wait(bytes, BIND_MEMORY_WAIT).ok_or_else(|| {
            EngineError::Busy(format!(
                "no room for key {:?} ({bytes} bytes) in {}",
                self.entry.meta.id,
                budget.name()
            ))
        })
    }

    /// `bytes` of the host budget for what a binding on `device_name` holds beside the key
    /// (none if 0): at once if they fit, else waiting up to [`BIND_MEMORY_WAIT`] for
    /// partitions or other keys to give theirs back.
    fn reserve_host(
        &self,
        bytes: u64,
        device_name: &str,
    ) -> Result<Option<Reservation>, EngineError> {
        if bytes == 0 {
            return Ok(None);
        }
        let budget = &self.ctx.budget;
        // reserve_wait takes them at once where they fit.
        let r = budget.reserve_wait(bytes, BIND_MEMORY_WAIT);
        r.map(Some).ok_or_else(|| {
            EngineError::Busy(format!(
                "no room for key {:?} bound on {device_name} ({bytes} host bytes beside the key) in {} (memory.host_limit)",
                self.entry.meta.id,
                budget.name()
            ))
        })
    }

    /// Pins the key's binding on `device` where it streams and the pinned tier has room
    /// ([`crate::keys::pinned::pin`]). Call it outside the device's gate:
    /// packing the copy is host work.
    pub fn pin(&self, device: usize) {
        crate::keys::pinned::pin(&self.ctx, &self.entry, device);
    }
}

impl Drop for KeyLease {
    fn drop(&mut self) {
        let mut s = self.entry.lock();
        s.refs -= 1;
        s.last_used = Instant::now();
        if s.refs == 0 && s.residency == Residency::Reserved {
            // Admitted but never loaded (its partitions were cancelled): give the memory back.
            s.residency = Residency::Cold;
            s.reservation = None;
        }
        drop(s);
        self.ctx.signal.notify();
    }
}
