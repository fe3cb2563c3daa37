//! The engine's devices: for each device the [`zkpipe_core::Devices`] lists, its queue of
//! reduced partitions, its gate, its thread pool and its memory accounting, each its own:
//! devices share no lock or thread on the way to a pass.
//!
//! Scheduling across devices: a partition is routed to the least loaded device holding
//! its key, or to a copy on a less loaded device ([`place`]); load is what is routed to a
//! device and not through its pass yet, counted from the moment of routing ([`Slot`]), so
//! a key with a pass running gets a copy on an idle device before its own device has a
//! queue. A device whose queue is empty takes queued work from a more loaded one
//! ([`take_over`]), and a pass gathers its batch from every device's queue (the device
//! stage), so an idle device takes a full batch rather than leave it split between
//! queues.

use crate::config::EngineConfig;
use crate::error::EngineError;
use crate::gate::PassGate;
use crate::keys::lease::KeyLease;
use crate::keys::placement::{self, DeviceLoad, Placement};
use crate::memory::{MemoryBudget, Signal};
use crate::messages::{send, Message, Reduced, Ticket};
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
        // The limit, never more than the device has for zkpipe (a GPU's free memory when
        // it was opened), which is the budget without one.
        let limit = match (config.device_memory_limit, info.memory_total) {
            (Some(limit), Some(has)) => Some(limit.min(has)),
            (limit, has) => limit.or(has),
        };
        let budget = limit
            .map(|l| MemoryBudget::new(format!("{} memory", info.name), l, Arc::clone(signal)));
        let p = pools.get("device", config.device.threads)?;
        devices.push(Arc::new(Device::new(i, info, p, budget, queue, passes)));
    }
    Ok(devices.into())
}

/// Device memory a copy of `lease`'s key and one of its partitions take on a device of
/// `kind`: what a device needs room for to take the key on.
fn copy_bytes(lease: &KeyLease, kind: &dyn Devices) -> u64 {
    let (shape, opts) = (&lease.meta().shape, &lease.meta().bind);
    kind.key_device_bytes(shape, opts) + kind.partition_device_bytes(shape, opts)
}

/// The device a partition of `lease`'s key goes to ([`placement::place`] over the
/// devices' loads, under the key's lock), counted there from now on, and a new placement
/// counted in that device's keys.
pub(crate) fn place(
    lease: &KeyLease,
    devices: &[Arc<Device>],
    kind: &dyn Devices,
    max_devices: usize,
) -> Option<Route> {
    let bytes = copy_bytes(lease, kind);
    let mut slot = None;
    let (index, new) = lease.place_with(|placed| {
        let loads: Vec<_> = devices.iter().map(|d| d.load(bytes)).collect();
        let p = placement::place(placed, &loads, max_devices);
        let (Placement::Placed(d) | Placement::New(d)) = p;
        slot = Some(Slot::new(devices.get(d)?));
        Some(p)
    })?;
    let device = devices.get(index)?;
    if new {
        device.keys.fetch_add(1, Ordering::Relaxed);
    }
    Some(Route {
        device: Arc::clone(device),
        slot: slot?,
    })
}

/// The devices a preloaded key is bound to: the one its first partition would go to,
/// then every other device with room for a copy and a partition, up to `max_devices`
/// (so the first burst of jobs finds it hot on every device it may use). Each is counted
/// in its device's keys.
pub(crate) fn preload_targets(
    lease: &KeyLease,
    devices: &[Arc<Device>],
    kind: &dyn Devices,
    max_devices: usize,
) -> Vec<Arc<Device>> {
    let Some(first) = place(lease, devices, kind, max_devices) else {
        return Vec::new();
    };
    let bytes = copy_bytes(lease, kind);
    let mut targets = vec![Arc::clone(&first.device)];
    drop(first);
    for d in devices.iter() {
        let room = d.budget.as_ref().is_none_or(|b| b.has_room(bytes));
        let taken =
            lease.place_with(|placed| placement::take_over(placed, d.index, room, max_devices));
        if let Some((_, new)) = taken {
            if new {
                d.keys.fetch_add(1, Ordering::Relaxed);
            }
            if !targets.iter().any(|t| t.index == d.index) {
                targets.push(Arc::clone(d));
            }
        }
    }
    targets
}

/// For `device`, whose own queue is empty: the first queued partition (highest priority
/// first) of another device more loaded than it by at least two, most loaded first, whose
/// key `device` holds or has room (and `max_devices`) to take a copy of. The partition is
/// counted on `device` from now on.
pub(crate) fn take_over(
    device: &Arc<Device>,
    devices: &[Arc<Device>],
    kind: &dyn Devices,
    max_devices: usize,
) -> Option<Routed> {
    let mine = device.assigned();
    let mut victims: Vec<&Arc<Device>> = devices
        .iter()
        .filter(|d| d.index != device.index && d.assigned() > mine + 1)
        .collect();
    victims.sort_by_key(|d| std::cmp::Reverse(d.assigned()));
    for v in victims {
        let mut new = false;
        let taken = v.queue.take_matching(1, |r: &Routed| {
            let lease = &r.reduced.lease;
            if r.reduced.ticket.is_cancelled() {
                return None;
            }
            let room = device
                .budget
                .as_ref()
                .is_none_or(|b| b.has_room(copy_bytes(lease, kind)));
            let (_, n) = lease.place_with(|placed| {
                placement::take_over(placed, device.index, room, max_devices)
            })?;
            new = n;
            Some(())
        });
        if let Some((mut r, ())) = taken.into_iter().next() {
            if new {
                device.keys.fetch_add(1, Ordering::Relaxed);
            }
            r.move_to(device);
            return Some(r);
        }
    }
    None
}

/// A partition counted in one device's `assigned`, from the moment it is routed there
/// until its pass ends (or it is dropped): what placement reads as the device's load.
pub(crate) struct Slot(Arc<Device>);

impl Slot {
    fn new(device: &Arc<Device>) -> Self {
        device.assigned.fetch_add(1, Ordering::AcqRel);
        Self(Arc::clone(device))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.assigned.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The device a partition goes to, with the partition already counted there.
pub(crate) struct Route {
    pub device: Arc<Device>,
    slot: Slot,
}

impl Route {
    /// Queues `reduced` for the device, waiting while its queue is full; false if the
    /// queue is closed (the engine is stopping: the partition is dropped).
    pub fn send(self, reduced: Reduced) -> bool {
        let Route { device, slot } = self;
        send(&device.queue, Routed { reduced, slot }).is_ok()
    }
}

/// A reduced partition queued for a device, counted there.
pub(crate) struct Routed {
    pub reduced: Reduced,
    slot: Slot,
}

impl Routed {
    /// Counts it on `device` instead (taken from another device's queue).
    pub fn move_to(&mut self, device: &Arc<Device>) {
        if self.slot.0.index != device.index {
            self.slot = Slot::new(device);
        }
    }

    /// The partition, and its count on the device (held until its pass ends).
    pub fn into_parts(self) -> (Reduced, Slot) {
        (self.reduced, self.slot)
    }
}

impl Message for Routed {
    fn ticket(&self) -> &Ticket {
        &self.reduced.ticket
    }
}

/// One device as the engine runs it.
pub(crate) struct Device {
    pub index: usize,
    pub info: DeviceInfo,
    /// Admits a few device passes at once, held only around device work.
    pub gate: PassGate,
    pub pool: Arc<rayon::ThreadPool>,
    /// Held by a pass of a key that streams, around the pool's `install`: its passes run
    /// one at a time (the plan's budget holds one batch), and a pass waiting for another
    /// must not wait inside the pool, where a pool thread busy with the first pass's
    /// parallel work may steal the waiting pass and block under its own lock.
    pub streamed_pass: std::sync::Mutex<()>,
    /// Device-memory budget, for devices with memory of their own.
    pub budget: Option<Arc<MemoryBudget>>,
    pub queue: PriorityQueue<Routed>,
    /// Keys placed on this device (for placement).
    pub keys: AtomicUsize,
    /// Partitions routed here and not through their pass yet ([`Slot`]).
    assigned: AtomicUsize,
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
            streamed_pass: std::sync::Mutex::new(()),
            budget,
            queue: PriorityQueue::new(queue_depth),
            keys: AtomicUsize::new(0),
            assigned: AtomicUsize::new(0),
            started: Instant::now(),
        }
    }

    /// Its load, for placing a key needing `bytes` of its memory.
    pub fn load(&self, bytes: u64) -> DeviceLoad {
        DeviceLoad {
            assigned: self.assigned(),
            keys: self.keys.load(Ordering::Relaxed),
            room: self.budget.as_ref().is_none_or(|b| b.has_room(bytes)),
        }
    }

    /// Partitions routed here and not through their pass yet: queued, waiting for the
    /// gate, or in a pass.
    pub fn assigned(&self) -> usize {
        self.assigned.load(Ordering::Acquire)
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
