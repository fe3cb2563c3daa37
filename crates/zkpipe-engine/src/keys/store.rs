//! The key store: every `.zkey` of the key directory, its state, and the host-memory
//! reservations of resident keys. Keys are admitted (memory reserved) with the first
//! partition that needs them, loaded by it through its [`KeyLease`], and evicted when idle
//! and unreferenced — by the janitor after the idle timeout, by admission when memory is
//! short, or on request — never while a lease exists.

use crate::curves::LoadedKey;
use crate::error::EngineError;
use crate::keys::context::KeyContext;
use crate::keys::entry::{Binding, KeyEntry, Residency, Tier};
use crate::keys::lease::KeyLease;
use crate::keys::meta::{valid_key_id, KeyMeta};
use crate::memory::Reservation;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};
use zkpipe_core::Devices;
use zkpipe_formats::zkey::ZkeyFile;

/// A key as status reports it.
#[derive(Debug, Clone)]
pub struct KeyStatus {
    /// Id, curve, sizes.
    pub meta: KeyMeta,
    /// Where it is.
    pub residency: Residency,
    /// Partitions holding it now.
    pub refs: usize,
    /// The devices it is placed on (first placement first); empty before first use.
    pub devices: Vec<usize>,
    /// For each of `devices`, the path its proofs take there once bound (`in-core`, or
    /// `streamed: batch …` for a key larger than the device's budget); empty while not.
    pub paths: Vec<String>,
    /// Its tier: cold, warm, pinned or resident.
    pub tier: Tier,
    /// Host bytes its pinned copies hold (0 unless pinned).
    pub pinned_bytes: u64,
    /// Host bytes its bindings hold beside the compiled key and their pinned copies (a
    /// streamed binding's packed matrices and staging buffers), reserved from
    /// `memory.host_limit` while bound.
    pub binding_host_bytes: u64,
    /// Times it was loaded.
    pub loads: u64,
    /// Time since it was last used.
    pub idle: Duration,
}

/// A `.zkey` file of the key directory that cannot be served, and why (status lists it
/// beside the keys; the daemon warns about it when it starts).
#[derive(Debug, Clone)]
pub struct KeyFailure {
    /// The key id the file's name gives (its stem).
    pub id: String,
    /// Why it cannot be served.
    pub error: String,
}

/// The store (see the module doc).
pub(crate) struct KeyStore {
    dir: PathBuf,
    ctx: Arc<KeyContext>,
    /// Whose per-partition host bytes count in each key's `partition_bytes`.
    devices: Arc<dyn Devices>,
}

impl KeyStore {
    /// Keys of `dir`, reserved from `ctx`'s budget; each key's `partition_bytes` includes
    /// what `devices` hold on the host per partition.
    /// Each file that cannot be served is logged now, not at the first job that names it.
    pub fn new(dir: PathBuf, ctx: KeyContext, devices: Arc<dyn Devices>) -> Self {
        let store = Self {
            dir,
            ctx: Arc::new(ctx),
            devices,
        };
        for f in store.scan().1 {
            let file = store.dir.join(format!("{}.zkey", f.id));
            tracing::warn!(file = %file.display(), error = %f.error, "key file cannot be served");
        }
        store
    }

    /// The pinned tier's budget (for status and metrics).
    pub fn pinned_budget(&self) -> &Arc<crate::memory::MemoryBudget> {
        &self.ctx.pinned
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<String, Arc<KeyEntry>>> {
        self.ctx.entries()
    }

    /// The entry of key `id`, reading its header on first use.
    pub fn resolve(&self, id: &str) -> Result<Arc<KeyEntry>, EngineError> {
        if !valid_key_id(id) {
            return Err(EngineError::InvalidKeyId(id.to_string()));
        }
        if let Some(e) = self.entries().get(id) {
            return Ok(Arc::clone(e));
        }
        let unknown = || EngineError::UnknownKey(id.to_string());
        let path = self.dir.join(format!("{id}.zkey"));
        let dir = self.dir.canonicalize().map_err(|_| unknown())?;
        let real = path.canonicalize().map_err(|_| unknown())?;
        if !real.starts_with(&dir) || !real.is_file() {
            return Err(unknown());
        }
        let z = ZkeyFile::open(&real).map_err(|e| EngineError::key_load(id, e))?;
        let shape = zkpipe_core::KeyShape::of_zkey(&z);
        let bind = (self.ctx.options)(id);
        let caps = self.devices.caps(&shape, &bind);
        let host = self.devices.partition_host_bytes(&shape, &bind);
        let meta = KeyMeta::from_zkey(id, &real, &z, &caps, host, bind);
        drop(z);
        let entry = Arc::new(KeyEntry::new(meta));
        Ok(Arc::clone(
            self.entries().entry(id.to_string()).or_insert(entry),
        ))
    }

    /// Takes a reference on `entry` and reserves `extra` host bytes with it (plus the key's
    /// own bytes if it is cold), if they fit now (`Ok(None)` if not). A key whose last
    /// load failed, with its file unchanged since, gives that error instead of loading
    /// again for every partition.
    pub fn try_lease(
        &self,
        entry: &Arc<KeyEntry>,
        extra: u64,
    ) -> Result<Option<(KeyLease, Reservation)>, EngineError> {
        // The file's identity matters only after a failed load (a syscall, not on every
        // admission).
        let failed = {
            let s = entry.lock();
            s.residency == Residency::Cold && s.last_error.is_some()
        };
        let stamp = if failed { entry.stamp() } else { None };
        let mut s = entry.lock();
        if s.residency == Residency::Cold {
            if let Some((e, at)) = &s.last_error {
                if at.is_some() && *at == stamp {
                    return Err(e.clone());
                }
            }
        }
        let budget = &self.ctx.budget;
        let reservation = if s.residency == Residency::Cold {
            let Some(mut r) = budget.try_reserve(entry.meta.host_bytes + extra) else {
                return Ok(None);
            };
            s.reservation = Some(r.split(entry.meta.host_bytes));
            s.residency = Residency::Reserved;
            r
        } else {
            match budget.try_reserve(extra) {
                Some(r) => r,
                None => return Ok(None),
            }
        };
        s.refs += 1;
        s.last_used = Instant::now();
        Ok(Some((
            KeyLease::new(Arc::clone(&self.ctx), Arc::clone(entry)),
            reservation,
        )))
    }

    /// Evicts idle, unreferenced loaded keys, least recently used first, until `bytes`
    /// more would fit in the budget. Returns whether anything was evicted.
    pub fn evict_for(&self, bytes: u64) -> bool {
        let mut idle: Vec<(Instant, Arc<KeyEntry>)> = self
            .entries()
            .values()
            .filter_map(|e| {
                let s = e.lock();
                (s.refs == 0 && s.residency.is_loaded()).then(|| (s.last_used, Arc::clone(e)))
            })
            .collect();
        idle.sort_by_key(|(t, _)| *t);
        let mut evicted = false;
        for (_, e) in idle {
            if self.ctx.budget.has_room(bytes) {
                break;
            }
            evicted |= self.evict_entry(&e).is_ok_and(|x| x);
        }
        evicted
    }

    /// Evicts keys unused for `idle` and unreferenced.
    pub fn evict_idle(&self, idle: Duration) {
        let entries: Vec<_> = self.entries().values().cloned().collect();
        for e in entries {
            let stale = {
                let s = e.lock();
                s.refs == 0 && s.residency.is_loaded() && s.last_used.elapsed() >= idle
            };
            if stale {
                let _ = self.evict_entry(&e);
            }
        }
    }

    /// Evicts key `id` now; refused while partitions hold it.
    pub fn evict(&self, id: &str) -> Result<bool, EngineError> {
        let e = self.resolve(id)?;
        self.evict_entry(&e)
    }

    fn evict_entry(&self, e: &KeyEntry) -> Result<bool, EngineError> {
        let (key, bound, r, devices) = {
            let mut s = e.lock();
            if s.refs > 0 {
                return Err(EngineError::KeyInUse {
                    id: e.meta.id.clone(),
                    refs: s.refs,
                });
            }
            if !s.residency.is_loaded() {
                return Ok(false);
            }
            s.residency = Residency::Cold;
            // The placements stay (affinity for the next load); their bindings go.
            let bound: Vec<Binding> = s
                .placements
                .iter_mut()
                .map(|p| std::mem::replace(&mut p.binding, Binding::Unbound))
                .collect();
            let devices: Vec<usize> = s.placements.iter().map(|p| p.device).collect();
            (s.key.take(), bound, s.reservation.take(), devices)
        };
        tracing::info!(key = %e.meta.id, ?devices, "evicting key");
        // The key's vectors are freed on the deallocation worker, then the budget is
        // given back.
        if let Some(k) = key {
            (self.ctx.free)(Box::new(k));
        }
        drop((bound, r));
        self.ctx.signal.notify();
        Ok(true)
    }

    /// Loads key `id` now if it is cold (waiting up to `timeout` for memory, evicting idle
    /// keys). Returns once it is loaded, with a lease on it (for binding it to a device)
    /// and the compiled key.
    pub fn preload(
        &self,
        id: &str,
        timeout: Duration,
        load_pool: &rayon::ThreadPool,
    ) -> Result<(KeyLease, Arc<dyn LoadedKey>), EngineError> {
        let e = self.resolve(id)?;
        let budget = &self.ctx.budget;
        if !budget.could_ever_fit(e.meta.host_bytes) {
            return Err(EngineError::TooLarge {
                what: format!("key {id:?}"),
                needed: e.meta.host_bytes,
                budget: budget.name().to_string(),
                limit: budget.limit(),
            });
        }
        let deadline = Instant::now() + timeout;
        let lease = loop {
            let seen = self.ctx.signal.generation();
            if let Some((lease, _)) = self.try_lease(&e, 0)? {
                break lease;
            }
            if !self.evict_for(e.meta.host_bytes) {
                if Instant::now() >= deadline {
                    return Err(EngineError::Busy(format!(
                        "no room in the host-memory budget for key {id:?} ({} bytes) within {timeout:?}",
                        e.meta.host_bytes
                    )));
                }
                self.ctx.signal.wait_past(seen, Duration::from_millis(50));
            }
        };
        let key = lease.get(load_pool)?;
        Ok((lease, key))
    }

    /// Every key in the directory, with residency for those known. Never waits for a load
    /// or a binding: entries are locked only to copy their state.
    pub fn status(&self) -> Vec<KeyStatus> {
        self.scan().0
    }

    /// [`Self::status`], and the `.zkey` files whose name is not a key id or whose header
    /// cannot be read.
    pub fn scan(&self) -> (Vec<KeyStatus>, Vec<KeyFailure>) {
        let mut ids: Vec<String> = std::fs::read_dir(&self.dir)
            .map(|rd| {
                rd.filter_map(|d| {
                    let p = d.ok()?.path();
                    (p.extension()? == "zkey")
                        .then(|| p.file_stem()?.to_str().map(str::to_string))
                        .flatten()
                })
                .collect()
            })
            .unwrap_or_default();
        ids.sort();
        let (mut keys, mut failed) = (Vec::new(), Vec::new());
        for id in ids {
            match self.resolve(&id) {
                Ok(e) => {
                    let s = e.lock();
                    keys.push(KeyStatus {
                        meta: e.meta.clone(),
                        residency: s.residency,
                        refs: s.refs,
                        devices: s.placements.iter().map(|p| p.device).collect(),
                        paths: s.placements.iter().map(|p| p.binding.path()).collect(),
                        tier: s.tier(),
                        pinned_bytes: s.pinned_bytes(),
                        binding_host_bytes: s.binding_host_bytes(),
                        loads: s.loads,
                        idle: s.last_used.elapsed(),
                    });
                }
                Err(e) => failed.push(KeyFailure {
                    id,
                    error: e.to_string(),
                }),
            }
        }
        (keys, failed)
    }
}
