//! Devices and the backend factory seam.
//!
//! A [`BackendFactory`] says which devices exist and binds a compiled key to one of them,
//! returning the [`Backend`] that runs that key's quotient and MSMs there (for a GPU: the
//! key's points uploaded once and kept resident). The engine calls it once per (key,
//! device) and drops the binding when the key is evicted. [`CpuFactory`] is the reference:
//! one device, the CPU, whose work runs on the device stage's own thread pool.

use crate::keys::KeyMeta;
use crate::memory::MemoryBudget;
use crate::queue::PriorityQueue;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use zkpipe_core::{Backend, Bls12_381, Bn254, CompiledKey, CpuBackend, Error as CoreError};

/// What a factory says about one of its devices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Name for status and metrics ("cpu", "cuda:0").
    pub name: String,
    /// Device memory in bytes, if the device has memory of its own.
    pub memory_total: Option<u64>,
}

/// Makes backends for (key, device) pairs; see the module doc.
pub trait BackendFactory: Send + Sync {
    /// The devices, in index order. At least one.
    fn devices(&self) -> Vec<DeviceInfo>;

    /// Whether the device stage also computes the G2 MSM (else the tail does, on the CPU).
    fn g2_on_device(&self) -> bool {
        false
    }

    /// Device memory a key's resident copy takes on a device.
    fn key_device_bytes(&self, _key: &KeyMeta) -> u64 {
        0
    }

    /// Device memory one partition of this key needs while in the device stage.
    fn partition_device_bytes(&self, _key: &KeyMeta) -> u64 {
        0
    }

    /// Binds a BN254 key to `device`.
    fn bind_bn254(
        &self,
        key: &Arc<CompiledKey<Bn254>>,
        device: usize,
    ) -> Result<Arc<dyn Backend<Bn254>>, CoreError>;

    /// Binds a BLS12-381 key to `device`.
    fn bind_bls12_381(
        &self,
        key: &Arc<CompiledKey<Bls12_381>>,
        device: usize,
    ) -> Result<Arc<dyn Backend<Bls12_381>>, CoreError>;
}

/// The CPU as the only device (arkworks + rayon on the device stage's pool).
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuFactory;

impl BackendFactory for CpuFactory {
    fn devices(&self) -> Vec<DeviceInfo> {
        vec![DeviceInfo {
            name: "cpu".into(),
            memory_total: None,
        }]
    }

    fn bind_bn254(
        &self,
        _key: &Arc<CompiledKey<Bn254>>,
        _device: usize,
    ) -> Result<Arc<dyn Backend<Bn254>>, CoreError> {
        Ok(Arc::new(CpuBackend))
    }

    fn bind_bls12_381(
        &self,
        _key: &Arc<CompiledKey<Bls12_381>>,
        _device: usize,
    ) -> Result<Arc<dyn Backend<Bls12_381>>, CoreError> {
        Ok(Arc::new(CpuBackend))
    }
}

/// One device as the engine runs it: its queue, its lock, its pool and its accounting.
pub(crate) struct Device {
    pub index: usize,
    pub info: DeviceInfo,
    /// Held only around device work (lesson 3).
    pub lock: Mutex<()>,
    pub pool: rayon::ThreadPool,
    /// Device-memory budget, for devices with memory of their own.
    pub budget: Option<Arc<MemoryBudget>>,
    pub queue: PriorityQueue<crate::work::Work>,
    /// Keys placed on this device (for affinity placement).
    pub keys: AtomicUsize,
    busy_ns: AtomicU64,
    started: Instant,
}

impl Device {
    pub fn new(
        index: usize,
        info: DeviceInfo,
        pool: rayon::ThreadPool,
        budget: Option<Arc<MemoryBudget>>,
        queue_depth: usize,
    ) -> Self {
        Self {
            index,
            info,
            lock: Mutex::new(()),
            pool,
            budget,
            queue: PriorityQueue::new(queue_depth),
            keys: AtomicUsize::new(0),
            busy_ns: AtomicU64::new(0),
            started: Instant::now(),
        }
    }

    /// Adds time spent holding the lock.
    pub fn add_busy(&self, d: std::time::Duration) {
        self.busy_ns
            .fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Seconds the lock was held since start.
    pub fn busy_seconds(&self) -> f64 {
        self.busy_ns.load(Ordering::Relaxed) as f64 / 1e9
    }

    /// Fraction of wall time since start that the lock was held.
    pub fn busy_fraction(&self) -> f64 {
        let wall = self.started.elapsed().as_secs_f64();
        if wall > 0.0 {
            (self.busy_seconds() / wall).min(1.0)
        } else {
            0.0
        }
    }
}
