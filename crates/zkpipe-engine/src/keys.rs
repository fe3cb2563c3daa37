//! Resident proving keys under one host-memory budget.
//!
//! Keys are `.zkey` files in one directory; a key's id is its file stem and ids that could
//! name anything outside the directory are refused. A key is **cold** (on disk; only its
//! header has been read), **reserved** (memory admitted, load pending), **loading**, or
//! **hot** (compiled and resident, bound to its device). It is loaded on demand by the
//! first partition that needs it, and evicted when it is idle and unreferenced — by the
//! janitor after the idle timeout, by admission when memory is short, or on request —
//! never while a partition holds a [`KeyLease`] on it.

use crate::devices::BackendFactory;
use crate::error::EngineError;
use crate::memory::{MemoryBudget, Reservation, Signal};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use zkpipe_core::{Backend, Bls12_381, Bn254, CompiledKey, Curve, PointChecks};
use zkpipe_formats::zkey::ZkeyFile;
use zkpipe_formats::CurveId;

/// What the header of a key says, and what it costs in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyMeta {
    /// The key id (file stem).
    pub id: String,
    /// The file.
    pub path: PathBuf,
    /// Its curve.
    pub curve: CurveId,
    /// Signals including the constant 1 (witness length).
    pub n_vars: usize,
    /// Public signals.
    pub n_public: usize,
    /// Evaluation domain size.
    pub domain_size: usize,
    /// Entries of the A and B matrices together.
    pub n_coefficients: usize,
    /// Host bytes of the compiled key when resident (points and matrices).
    pub host_bytes: u64,
    /// Host bytes one partition of this key needs in flight (buffers and scratch, and what
    /// the backend itself holds on the host during the device stage).
    pub partition_bytes: u64,
}

impl KeyMeta {
    fn from_zkey(id: &str, path: &Path, z: &ZkeyFile) -> Self {
        let h = &z.header;
        let (n_vars, n_public, n) = (
            h.n_vars as usize,
            h.n_public as usize,
            h.domain_size as usize,
        );
        let (g1, g2) = match h.curve {
            CurveId::Bn254 => (
                std::mem::size_of::<<Bn254 as ark_ec::pairing::Pairing>::G1Affine>(),
                std::mem::size_of::<<Bn254 as ark_ec::pairing::Pairing>::G2Affine>(),
            ),
            CurveId::Bls12_381 => (
                std::mem::size_of::<<Bls12_381 as ark_ec::pairing::Pairing>::G1Affine>(),
                std::mem::size_of::<<Bls12_381 as ark_ec::pairing::Pairing>::G2Affine>(),
            ),
        };
        let fr = 32usize;
        let g1_points = 2 * n_vars + n_vars.saturating_sub(n_public + 1) + n + n_public + 1;
        let csr = z.n_coefficients() as usize * (4 + fr) + 2 * (n + 1) * 4;
        let host_bytes = (g1_points * g1 + n_vars * g2 + csr + 4096) as u64;
        // a, b, c and h over the domain; the witness and its scalars; MSM scratch.
        let partition_bytes = (fr * (5 * n + 2 * n_vars) + (1 << 20)) as u64;
        Self {
            id: id.to_string(),
            path: path.to_path_buf(),
            curve: h.curve,
            n_vars,
            n_public,
            domain_size: n,
            n_coefficients: z.n_coefficients() as usize,
            host_bytes,
            partition_bytes,
        }
    }
}

/// A compiled key of either curve.
#[derive(Clone)]
pub(crate) enum LoadedKey {
    Bn254(Arc<CompiledKey<Bn254>>),
    Bls12_381(Arc<CompiledKey<Bls12_381>>),
}

/// A key's backend on its device.
#[derive(Clone)]
pub(crate) enum BoundBackend {
    Bn254(Arc<dyn Backend<Bn254>>),
    Bls12_381(Arc<dyn Backend<Bls12_381>>),
}

impl LoadedKey {
    /// Whether both are the same compiled copy, not merely the same key id: a copy loaded
    /// again after eviction is another one, and only partitions reduced with one copy may
    /// share a device pass over its points.
    pub fn same(&self, other: &LoadedKey) -> bool {
        match (self, other) {
            (LoadedKey::Bn254(a), LoadedKey::Bn254(b)) => Arc::ptr_eq(a, b),
            (LoadedKey::Bls12_381(a), LoadedKey::Bls12_381(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl BoundBackend {
    /// How many partitions of `key` one device pass may take, as the backend says (1
    /// where the key is of another curve, which binding rules out).
    pub fn batch_limit(&self, key: &LoadedKey) -> usize {
        match (self, key) {
            (BoundBackend::Bn254(b), LoadedKey::Bn254(k)) => b.batch_limit(k),
            (BoundBackend::Bls12_381(b), LoadedKey::Bls12_381(k)) => b.batch_limit(k),
            _ => 1,
        }
    }
}

/// The curves the engine serves, with the glue between generic code and the enums above.
pub(crate) trait EngineCurve: Curve {
    fn key(k: &LoadedKey) -> Option<&Arc<CompiledKey<Self>>>;
    fn backend(b: &BoundBackend) -> Option<&Arc<dyn Backend<Self>>>;
}

impl EngineCurve for Bn254 {
    fn key(k: &LoadedKey) -> Option<&Arc<CompiledKey<Self>>> {
        match k {
            LoadedKey::Bn254(k) => Some(k),
            LoadedKey::Bls12_381(_) => None,
        }
    }
    fn backend(b: &BoundBackend) -> Option<&Arc<dyn Backend<Self>>> {
        match b {
            BoundBackend::Bn254(b) => Some(b),
            BoundBackend::Bls12_381(_) => None,
        }
    }
}

impl EngineCurve for Bls12_381 {
    fn key(k: &LoadedKey) -> Option<&Arc<CompiledKey<Self>>> {
        match k {
            LoadedKey::Bls12_381(k) => Some(k),
            LoadedKey::Bn254(_) => None,
        }
    }
    fn backend(b: &BoundBackend) -> Option<&Arc<dyn Backend<Self>>> {
        match b {
            BoundBackend::Bls12_381(b) => Some(b),
            BoundBackend::Bn254(_) => None,
        }
    }
}

/// Where a key is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Residency {
    /// On disk only.
    Cold,
    /// Memory admitted; the first partition to need it will load it.
    Reserved,
    /// Being loaded.
    Loading,
    /// Compiled and resident.
    Hot,
}

impl Residency {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Residency::Cold => "cold",
            Residency::Reserved => "reserved",
            Residency::Loading => "loading",
            Residency::Hot => "hot",
        }
    }
}

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
    /// Times it was loaded.
    pub loads: u64,
    /// Time since it was last used.
    pub idle: Duration,
}

/// A key's place on one device: the device it sticks to (affinity) and, while the key is
/// hot, its backend there and the device memory its resident copy holds.
struct Placement {
    device: usize,
    backend: Option<BoundBackend>,
    reservation: Option<Reservation>,
}

struct EntryState {
    residency: Residency,
    key: Option<LoadedKey>,
    reservation: Option<Reservation>,
    /// In placement order; a device appears at most once.
    placements: Vec<Placement>,
    refs: usize,
    last_used: Instant,
    loads: u64,
    failures: u64,
    last_error: Option<EngineError>,
}

/// One key known to the store.
pub(crate) struct KeyEntry {
    pub meta: KeyMeta,
    state: Mutex<EntryState>,
    loaded: Condvar,
}

impl KeyEntry {
    fn lock(&self) -> MutexGuard<'_, EntryState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The store (see the module doc).
pub(crate) struct KeyStore {
    dir: PathBuf,
    checks: PointChecks,
    budget: Arc<MemoryBudget>,
    signal: Arc<Signal>,
    entries: Mutex<HashMap<String, Arc<KeyEntry>>>,
    /// Where evicted keys go to be freed (the deallocation worker).
    free: Box<dyn Fn(Box<dyn std::any::Any + Send>) + Send + Sync>,
    /// Whose backends' own host bytes per partition count in each key's `partition_bytes`.
    factory: Arc<dyn BackendFactory>,
}

/// Whether `id` is a plain file stem: no separators, no leading dot, nothing odd.
pub fn valid_key_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 200
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl KeyStore {
    /// Each key's `partition_bytes` includes what `factory`'s backends hold on the host
    /// per partition ([`BackendFactory::partition_host_bytes`]).
    pub fn new(
        dir: PathBuf,
        checks: PointChecks,
        budget: Arc<MemoryBudget>,
        signal: Arc<Signal>,
        free: Box<dyn Fn(Box<dyn std::any::Any + Send>) + Send + Sync>,
        factory: Arc<dyn BackendFactory>,
    ) -> Self {
        Self {
            dir,
            checks,
            budget,
            signal,
            factory,
            entries: Mutex::new(HashMap::new()),
            free,
        }
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<String, Arc<KeyEntry>>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The entry of key `id`, reading its header on first use.
    pub fn resolve(&self, id: &str) -> Result<Arc<KeyEntry>, EngineError> {
        if !valid_key_id(id) {
            return Err(EngineError::InvalidKeyId(id.to_string()));
        }
        if let Some(e) = self.entries().get(id) {
            return Ok(Arc::clone(e));
        }
        let path = self.dir.join(format!("{id}.zkey"));
        let dir = self
            .dir
            .canonicalize()
            .map_err(|_| EngineError::UnknownKey(id.to_string()))?;
        let real = path
            .canonicalize()
            .map_err(|_| EngineError::UnknownKey(id.to_string()))?;
        if !real.starts_with(&dir) || !real.is_file() {
            return Err(EngineError::UnknownKey(id.to_string()));
        }
        let z = ZkeyFile::open(&real).map_err(|e| EngineError::KeyLoad {
            id: id.to_string(),
            message: e.to_string(),
        })?;
        let mut meta = KeyMeta::from_zkey(id, &real, &z);
        meta.partition_bytes += self.factory.partition_host_bytes(&meta);
        drop(z);
        let entry = Arc::new(KeyEntry {
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
            loaded: Condvar::new(),
        });
        Ok(Arc::clone(
            self.entries().entry(id.to_string()).or_insert(entry),
        ))
    }

    /// Takes a reference on `entry` and reserves `extra` host bytes with it (plus the key's
    /// own bytes if it is cold), if they fit now.
    pub fn try_lease(
        self: &Arc<Self>,
        entry: &Arc<KeyEntry>,
        extra: u64,
    ) -> Option<(KeyLease, Reservation)> {
        let mut s = entry.lock();
        let reservation = if s.residency == Residency::Cold {
            let mut r = self.budget.try_reserve(entry.meta.host_bytes + extra)?;
            s.reservation = Some(r.split(entry.meta.host_bytes));
            s.residency = Residency::Reserved;
            r
        } else {
            self.budget.try_reserve(extra)?
        };
        s.refs += 1;
        s.last_used = Instant::now();
        Some((
            KeyLease {
                store: Arc::clone(self),
                entry: Arc::clone(entry),
            },
            reservation,
        ))
    }

    /// Evicts idle, unreferenced hot keys, least recently used first, until `bytes` more
    /// would fit in the budget. Returns whether anything was evicted.
    pub fn evict_for(&self, bytes: u64) -> bool {
        let mut idle: Vec<(Instant, Arc<KeyEntry>)> = self
            .entries()
            .values()
            .filter_map(|e| {
                let s = e.lock();
                (s.refs == 0 && s.residency == Residency::Hot).then(|| (s.last_used, Arc::clone(e)))
            })
            .collect();
        idle.sort_by_key(|(t, _)| *t);
        let mut evicted = false;
        for (_, e) in idle {
            if self.budget.has_room(bytes) {
                break;
            }
            evicted |= self.evict_entry(&e).is_ok();
        }
        evicted
    }

    /// Evicts keys unused for `idle` and unreferenced.
    pub fn evict_idle(&self, idle: Duration) {
        let entries: Vec<_> = self.entries().values().cloned().collect();
        for e in entries {
            let stale = {
                let s = e.lock();
                s.refs == 0 && s.residency == Residency::Hot && s.last_used.elapsed() >= idle
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
            if s.residency != Residency::Hot {
                return Ok(false);
            }
            s.residency = Residency::Cold;
            // The placements stay (affinity for the next load); what they hold goes.
            let bound: Vec<_> = s
                .placements
                .iter_mut()
                .map(|p| (p.backend.take(), p.reservation.take()))
                .collect();
            let devices: Vec<usize> = s.placements.iter().map(|p| p.device).collect();
            (s.key.take(), bound, s.reservation.take(), devices)
        };
        tracing::info!(key = %e.meta.id, ?devices, "evicting key");
        // The key's vectors are freed on the deallocation worker, then the budget is
        // given back.
        if let Some(k) = key {
            (self.free)(Box::new(k));
        }
        drop((bound, r));
        self.signal.notify();
        Ok(true)
    }

    /// Loads key `id` now if it is cold (waiting up to `timeout` for memory, evicting idle
    /// keys). Returns once it is hot.
    pub fn preload(
        self: &Arc<Self>,
        id: &str,
        timeout: Duration,
        load_pool: &rayon::ThreadPool,
    ) -> Result<(), EngineError> {
        let e = self.resolve(id)?;
        if !self.budget.could_ever_fit(e.meta.host_bytes) {
            return Err(EngineError::TooLarge {
                what: format!("key {id:?}"),
                needed: e.meta.host_bytes,
                budget: self.budget.name().to_string(),
                limit: self.budget.limit(),
            });
        }
        let deadline = Instant::now() + timeout;
        let lease = loop {
            let seen = self.signal.generation();
            if let Some((lease, _)) = self.try_lease(&e, 0) {
                break lease;
            }
            if !self.evict_for(e.meta.host_bytes) {
                if Instant::now() >= deadline {
                    return Err(EngineError::Busy(format!(
                        "no room in the host-memory budget for key {id:?} ({} bytes) within {timeout:?}",
                        e.meta.host_bytes
                    )));
                }
                self.signal.wait_past(seen, Duration::from_millis(50));
            }
        };
        lease.get(load_pool).map(|_| ())
    }

    /// Every key in the directory, with residency for those known.
    pub fn status(&self) -> Vec<KeyStatus> {
        let mut ids: Vec<String> = std::fs::read_dir(&self.dir)
            .map(|rd| {
                rd.filter_map(|d| {
                    let p = d.ok()?.path();
                    (p.extension()? == "zkey")
                        .then(|| p.file_stem()?.to_str().map(str::to_string))
                        .flatten()
                })
                .filter(|id| valid_key_id(id))
                .collect()
            })
            .unwrap_or_default();
        ids.sort();
        ids.into_iter()
            .filter_map(|id| {
                let e = self.resolve(&id).ok()?;
                let s = e.lock();
                Some(KeyStatus {
                    meta: e.meta.clone(),
                    residency: s.residency,
                    refs: s.refs,
                    devices: s.placements.iter().map(|p| p.device).collect(),
                    loads: s.loads,
                    idle: s.last_used.elapsed(),
                })
            })
            .collect()
    }

    fn compile(&self, meta: &KeyMeta) -> Result<LoadedKey, EngineError> {
        let err = |e: &dyn std::fmt::Display| EngineError::KeyLoad {
            id: meta.id.clone(),
            message: e.to_string(),
        };
        let z = ZkeyFile::open(&meta.path).map_err(|e| err(&e))?;
        Ok(match z.header.curve {
            CurveId::Bn254 => LoadedKey::Bn254(Arc::new(
                CompiledKey::compile(&z, self.checks).map_err(|e| err(&e))?,
            )),
            CurveId::Bls12_381 => LoadedKey::Bls12_381(Arc::new(
                CompiledKey::compile(&z, self.checks).map_err(|e| err(&e))?,
            )),
        })
    }
}

/// A reference on a key, held by one partition from admission to completion; the key
/// cannot be evicted while any lease on it exists.
pub(crate) struct KeyLease {
    store: Arc<KeyStore>,
    entry: Arc<KeyEntry>,
}

impl KeyLease {
    pub fn meta(&self) -> &KeyMeta {
        &self.entry.meta
    }

    /// The compiled key, loading it on `pool` if this lease is first. Call it from a plain
    /// thread, not from inside a rayon job: it may wait for another lease's load, and a
    /// rayon thread waiting inside that load's parallel work could steal this very wait
    /// and deadlock.
    pub fn get(&self, pool: &rayon::ThreadPool) -> Result<LoadedKey, EngineError> {
        let mut s = self.entry.lock();
        let failures = s.failures;
        loop {
            match s.residency {
                Residency::Hot => {
                    if let Some(k) = &s.key {
                        return Ok(k.clone());
                    }
                }
                Residency::Loading => {
                    s = self.entry.loaded.wait(s).unwrap_or_else(|e| e.into_inner());
                    if s.failures != failures {
                        return Err(s.last_error.clone().unwrap_or(EngineError::KeyLoad {
                            id: self.entry.meta.id.clone(),
                            message: "load failed".into(),
                        }));
                    }
                    continue;
                }
                Residency::Reserved => {
                    s.residency = Residency::Loading;
                    drop(s);
                    let _span =
                        tracing::info_span!("load_key", key = %self.entry.meta.id).entered();
                    let loaded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        pool.install(|| self.store.compile(&self.entry.meta))
                    }))
                    .unwrap_or_else(|_| {
                        Err(EngineError::KeyLoad {
                            id: self.entry.meta.id.clone(),
                            message: "internal error (panic) while loading".into(),
                        })
                    });
                    s = self.entry.lock();
                    match loaded {
                        Ok(k) => {
                            s.residency = Residency::Hot;
                            s.key = Some(k.clone());
                            s.loads += 1;
                            self.entry.loaded.notify_all();
                            return Ok(k);
                        }
                        Err(e) => {
                            s.residency = Residency::Cold;
                            s.reservation = None;
                            s.failures += 1;
                            s.last_error = Some(e.clone());
                            self.entry.loaded.notify_all();
                            self.store.signal.notify();
                            return Err(e);
                        }
                    }
                }
                Residency::Cold => {}
            }
            return Err(s.last_error.clone().unwrap_or(EngineError::KeyLoad {
                id: self.entry.meta.id.clone(),
                message: "key is not loaded".into(),
            }));
        }
    }

    /// The device this partition goes to. A key sticks to the devices it is placed on
    /// (its points are resident there): the least-loaded of them is chosen, by queue
    /// length. On first use, and while every device it is on has a queue and it is on
    /// fewer than `max_devices`, it is also placed on a less-loaded device whose memory
    /// budget has room for it.
    pub fn device(
        &self,
        devices: &[crate::devices::Device],
        factory: &dyn BackendFactory,
        max_devices: usize,
    ) -> usize {
        use std::sync::atomic::Ordering::Relaxed;
        let load = |d: &crate::devices::Device| (d.queue.len(), d.keys.load(Relaxed));
        let mut s = self.entry.lock();
        let best = s
            .placements
            .iter()
            .map(|p| p.device)
            .filter(|&d| d < devices.len())
            .min_by_key(|&d| load(&devices[d]));
        if let Some(d) = best {
            let busy = !devices[d].queue.is_empty();
            if !busy || s.placements.len() >= max_devices.max(1) {
                return d;
            }
        }
        let bytes = factory.key_device_bytes(&self.entry.meta)
            + factory.partition_device_bytes(&self.entry.meta);
        let fits =
            |dev: &crate::devices::Device| dev.budget.as_ref().is_none_or(|b| b.has_room(bytes));
        let candidate = devices
            .iter()
            .filter(|dev| !s.placements.iter().any(|p| p.device == dev.index))
            .filter(|dev| best.is_none() || fits(dev))
            .min_by_key(|dev| load(dev));
        let chosen = match (best, candidate) {
            (Some(b), Some(c)) if load(c).0 < devices[b].queue.len() => c.index,
            (Some(b), _) => return b,
            (None, Some(c)) => c.index,
            (None, None) => 0,
        };
        if let Some(dev) = devices.get(chosen) {
            dev.keys.fetch_add(1, Relaxed);
        }
        s.placements.push(Placement {
            device: chosen,
            backend: None,
            reservation: None,
        });
        chosen
    }

    /// The key's backend on `device`, binding it (and reserving the device memory of its
    /// resident copy) on first use there. Call inside the device's gate: binding is
    /// device work.
    pub fn backend(
        &self,
        factory: &dyn BackendFactory,
        device: &crate::devices::Device,
        key: &LoadedKey,
    ) -> Result<BoundBackend, EngineError> {
        let mut s = self.entry.lock();
        let i = match s.placements.iter().position(|p| p.device == device.index) {
            Some(i) => i,
            None => {
                s.placements.push(Placement {
                    device: device.index,
                    backend: None,
                    reservation: None,
                });
                s.placements.len() - 1
            }
        };
        if let Some(b) = &s.placements[i].backend {
            return Ok(b.clone());
        }
        let bytes = factory.key_device_bytes(&self.entry.meta);
        if let Some(budget) = &device.budget {
            let r = budget
                .reserve_wait(bytes, Duration::from_secs(60))
                .ok_or_else(|| {
                    EngineError::Busy(format!(
                        "no room for key {:?} ({bytes} bytes) in {}",
                        self.entry.meta.id,
                        budget.name()
                    ))
                })?;
            s.placements[i].reservation = Some(r);
        }
        let err = |e: zkpipe_core::Error| EngineError::KeyLoad {
            id: self.entry.meta.id.clone(),
            message: format!("binding to device {}: {e}", device.info.name),
        };
        let b = match key {
            LoadedKey::Bn254(k) => {
                BoundBackend::Bn254(factory.bind_bn254(k, device.index).map_err(err)?)
            }
            LoadedKey::Bls12_381(k) => {
                BoundBackend::Bls12_381(factory.bind_bls12_381(k, device.index).map_err(err)?)
            }
        };
        s.placements[i].backend = Some(b.clone());
        Ok(b)
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
        self.store.signal.notify();
    }
}

#[cfg(test)]
mod tests {
    use super::valid_key_id;

    #[test]
    fn key_ids_cannot_name_other_paths() {
        for ok in ["poseidon", "bn254-multi_public", "v1.2"] {
            assert!(valid_key_id(ok), "{ok}");
        }
        for bad in ["", "..", "../x", "a/b", ".hidden", "a\\b", "x\0y", "é"] {
            assert!(!valid_key_id(bad), "{bad:?}");
        }
    }
}
