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
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use zkpipe_core::msm::pippenger::BatchAffineMsm;
use zkpipe_core::{Backend, Bls12_381, Bn254, CompiledKey, CpuBackend, Curve, Error as CoreError};
use zkpipe_formats::CurveId;

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

    /// The most partitions of one key the factory's backends batch into one device pass
    /// (the largest `Backend::batch_limit` they give): each device's queue holds at least
    /// that many less one, so that a full batch can gather there.
    fn max_batch(&self) -> usize {
        1
    }

    /// Whether the device stage computes a, b, c from the witness (its backends'
    /// [`Backend::reduces_on_device`]); the reduce stage then only prepares the witness.
    fn reduces_on_device(&self) -> bool {
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

    /// Host memory the backends hold for one partition of this key during the device
    /// stage, beyond the engine's own buffers (counted in the key's `partition_bytes`).
    fn partition_host_bytes(&self, _key: &KeyMeta) -> u64 {
        0
    }

    /// How many partitions' device passes should run on one device at once (the
    /// engine's `device_passes` overrides it).
    fn passes_per_device(&self) -> usize {
        1
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

    /// The CPU MSMs' copies of their bases in the adder's form (all five MSMs of a
    /// partition may run at once): none where the adder reads arkworks' points in place.
    fn partition_host_bytes(&self, key: &KeyMeta) -> u64 {
        fn copies<E: Curve>() -> (usize, usize) {
            (E::G1Affine::msm_copy_bytes(), E::G2Affine::msm_copy_bytes())
        }
        let (g1, g2) = match key.curve {
            CurveId::Bn254 => copies::<Bn254>(),
            CurveId::Bls12_381 => copies::<Bls12_381>(),
        };
        ((3 * key.n_vars + key.domain_size) * g1 + key.n_vars * g2) as u64
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

/// One device as the engine runs it: its queue, its gate, its pool and its accounting.
pub(crate) struct Device {
    pub index: usize,
    pub info: DeviceInfo,
    /// Admits a few device passes at once, held only around device work (lesson 3).
    pub gate: PassGate,
    pub pool: rayon::ThreadPool,
    /// Device-memory budget, for devices with memory of their own.
    pub budget: Option<Arc<MemoryBudget>>,
    pub queue: PriorityQueue<crate::work::Work>,
    /// Keys placed on this device (for affinity placement).
    pub keys: AtomicUsize,
    started: Instant,
}

impl Device {
    pub fn new(
        index: usize,
        info: DeviceInfo,
        pool: rayon::ThreadPool,
        budget: Option<Arc<MemoryBudget>>,
        queue_depth: usize,
        passes: usize,
    ) -> Self {
        Self {
            index,
            info,
            gate: PassGate::new(passes),
            pool,
            budget,
            queue: PriorityQueue::new(queue_depth),
            keys: AtomicUsize::new(0),
            started: Instant::now(),
        }
    }

    /// Seconds with at least one pass running, since start.
    pub fn busy_seconds(&self) -> f64 {
        self.gate.busy().as_secs_f64()
    }

    /// Fraction of wall time since start with at least one pass running.
    pub fn busy_fraction(&self) -> f64 {
        let wall = self.started.elapsed().as_secs_f64();
        if wall > 0.0 {
            (self.busy_seconds() / wall).min(1.0)
        } else {
            0.0
        }
    }
}

/// A counting gate for device passes: at most `permits` at once. The device is busy while
/// at least one pass runs; overlapping passes count once.
pub(crate) struct PassGate {
    permits: usize,
    state: Mutex<GateState>,
    freed: Condvar,
}

#[derive(Default)]
struct GateState {
    running: usize,
    busy_since: Option<Instant>,
    busy: Duration,
}

/// One admitted pass; leaving the gate on drop.
pub(crate) struct PassPermit<'a>(&'a PassGate);

impl PassGate {
    pub fn new(permits: usize) -> Self {
        Self {
            permits: permits.max(1),
            state: Mutex::new(GateState::default()),
            freed: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for a free permit.
    pub fn enter(&self) -> PassPermit<'_> {
        let mut s = self.lock();
        while s.running >= self.permits {
            s = self.freed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.running += 1;
        if s.running == 1 {
            s.busy_since = Some(Instant::now());
        }
        PassPermit(self)
    }

    /// Time with at least one pass running, including the current stretch.
    pub fn busy(&self) -> Duration {
        let s = self.lock();
        s.busy + s.busy_since.map_or(Duration::ZERO, |t| t.elapsed())
    }
}

impl Drop for PassPermit<'_> {
    fn drop(&mut self) {
        let gate = self.0;
        let mut s = gate.lock();
        s.running -= 1;
        if s.running == 0 {
            if let Some(t) = s.busy_since.take() {
                s.busy += t.elapsed();
            }
        }
        drop(s);
        gate.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::PassGate;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn the_gate_admits_at_most_its_permits_and_counts_overlaps_once() {
        let gate = PassGate::new(2);
        let (inside, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let passes: Vec<Duration> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..6)
                .map(|_| {
                    s.spawn(|| {
                        let p = gate.enter();
                        let t = std::time::Instant::now();
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(20));
                        inside.fetch_sub(1, Ordering::SeqCst);
                        let d = t.elapsed();
                        drop(p);
                        d
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert_eq!(
            most.load(Ordering::SeqCst),
            2,
            "two passes at once, never three"
        );
        // Two passes were inside together, so busy time (their union) is less than the
        // passes' sum, and at least the longest one.
        let busy = gate.busy();
        assert!(busy < passes.iter().sum(), "{busy:?} vs {passes:?}");
        assert!(
            busy >= *passes.iter().max().unwrap(),
            "{busy:?} vs {passes:?}"
        );
    }
}
