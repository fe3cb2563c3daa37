//! The engine's devices: for each device the [`zkpipe_core::Devices`] lists, its queue of
//! reduced partitions, its gate, its thread pool and its memory accounting.

use crate::config::EngineConfig;
use crate::error::EngineError;
use crate::gate::PassGate;
use crate::keys::lease::KeyLease;
use crate::keys::placement::DeviceLoad;
use crate::memory::{MemoryBudget, Signal};
use crate::messages::Reduced;
use crate::queue::PriorityQueue;
use crate::threads::StagePools;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;
use zkpipe_core::{DeviceInfo, Devices};

/// The engine's devices: one per device `kind` lists, each with its memory budget (the
/// configured limit, else what the device reports), its own pool made by `pool`, and a
/// queue that holds a full batch whatever `queue_depth` says (a batch is the worker's
/// partition plus what is queued for the device).
pub(crate) fn build_devices(
    config: &EngineConfig,
    kind: &dyn Devices,
    signal: &Arc<Signal>,
    pools: &StagePools,
) -> Result<Arc<[Arc<Device>]>, EngineError> {
    let infos = kind.list();
    if infos.is_empty() {
        return Err(EngineError::Config(
            "the device kind lists no devices".into(),
        ));
    }
    let max_batch = kind.max_batch();
    let batch = config.device_batch.map_or(max_batch, |c| c.min(max_batch));
    let queue = config.queue_depth.max(batch.saturating_sub(1));
    let passes = config
        .device_passes
        .unwrap_or_else(|| kind.passes_per_device());
    let mut devices = Vec::with_capacity(infos.len());
    for (i, info) in infos.into_iter().enumerate() {
        let budget = config
            .device_memory_limit
            .or(info.memory_total)
            .map(|l| MemoryBudget::new(format!("{} memory", info.name), l, Arc::clone(signal)));
        let p = pools.get("device", config.device.threads)?;
        devices.push(Arc::new(Device::new(i, info, p, budget, queue, passes)));
    }
    Ok(devices.into())
}

/// The device a partition of `lease`'s key goes to ([`KeyLease::place`] over the devices'
/// loads), counting a new placement in that device's keys.
pub(crate) fn place(
    lease: &KeyLease,
    devices: &[Arc<Device>],
    kind: &dyn Devices,
    max_devices: usize,
) -> Option<Arc<Device>> {
    let (shape, opts) = (&lease.meta().shape, &lease.meta().bind);
    let bytes = kind.key_device_bytes(shape, opts) + kind.partition_device_bytes(shape, opts);
    let loads: Vec<_> = devices.iter().map(|d| d.load(bytes)).collect();
    let (index, new) = lease.place(&loads, max_devices);
    let d = devices.get(index)?;
    if new {
        d.keys.fetch_add(1, Ordering::Relaxed);
    }
    Some(Arc::clone(d))
}

/// One device as the engine runs it.
pub(crate) struct Device {
    pub index: usize,
    pub info: DeviceInfo,
    /// Admits a few device passes at once, held only around device work.
    pub gate: PassGate,
    pub pool: Arc<rayon::ThreadPool>,
    /// Device-memory budget, for devices with memory of their own.
    pub budget: Option<Arc<MemoryBudget>>,
    pub queue: PriorityQueue<Reduced>,
    /// Keys placed on this device (for placement).
    pub keys: AtomicUsize,
    started: Instant,
}

impl Device {
    pub fn new(
        index: usize,
        info: DeviceInfo,
        pool: Arc<rayon::ThreadPool>,
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

    /// Its load, for placing a key needing `bytes` of its memory.
    pub fn load(&self, bytes: u64) -> DeviceLoad {
        DeviceLoad {
            queued: self.queue.len(),
            keys: self.keys.load(Ordering::Relaxed),
            room: self.budget.as_ref().is_none_or(|b| b.has_room(bytes)),
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

    /// Device bytes reserved now.
    pub fn memory_reserved(&self) -> u64 {
        self.budget.as_ref().map_or(0, |b| b.used())
    }
}
