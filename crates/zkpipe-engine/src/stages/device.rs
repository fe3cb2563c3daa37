//! The device stage: per device, a few workers queue for the device. A worker reserves
//! the partition's device memory, enters the device's gate (which admits a few passes at
//! once), binds the key to the device on first use, runs the device pass, and leaves the
//! gate before handing the partition to the tail, so the next partition's device work
//! overlaps this one's tail. Time with at least one pass inside is the device's busy time.
//!
//! Where the bound key's device batches proofs (its `batch_limit` above 1, capped by the
//! engine's `device_batch`), the worker, once inside the gate, also takes queued
//! partitions of the same loaded key and runs them all in one pass: several small proofs
//! then share one batched MSM over the key's resident points, and the gate is entered
//! once for the batch.
//!
//! A pass that enters while another is on the device takes its batch only once it is a
//! share (`device_overlap_share`) of the batch on the device, or once that pass leaves:
//! under load, two overlapping passes would otherwise split what is queued into small
//! batches, while at low load a small pass still overlaps a small one.
//!
//! Across devices: a worker whose device's queue is empty takes queued work from a more
//! loaded device ([`crate::devices::take_over`], the key copied to its device if it is
//! not there yet), and a pass gathers its batch from its own queue first, then from the
//! other devices' queues (partitions of the same key, which is bound here): whichever
//! device frees first takes a full batch, instead of each device taking the half of what
//! waits that was routed to it. Nothing else is shared between devices: each has its own
//! queue, gate, pool and workers.

use crate::curves::{AtDevice, AtTail, DeviceKey, LoadedKey, Partition};
use crate::devices::{take_over, Device, Routed};
use crate::error::EngineError;
use crate::gate::PassPermit;
use crate::keys::lease::KeyLease;
use crate::memory::Reservation;
use crate::messages::{send, Proved, Reduced, Ticket};
use crate::outcome::{guarded, Outcomes};
use crate::queue::{Popped, PriorityQueue};
use crate::stages::tail::Tail;
use crate::trace::log_ms;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zkpipe_core::Stage;
use zkpipe_core::{Devices, Error as CoreError};

/// How often a pass waiting for its batch looks at the queue again
/// ([`DeviceStage::take_batch`]).
const GATHER_POLL: Duration = Duration::from_micros(200);

/// Shortest and longest wait of an idle worker on its own queue between looks at the
/// other devices' queues: it looks at once when its queue runs dry, then less and less
/// often (a partition routed to its device wakes it at once).
const IDLE_POLL: (Duration, Duration) = (Duration::from_micros(250), Duration::from_millis(20));

/// A partition taken for a device pass, with the device memory reserved for it.
type Taken = (Routed, Option<Reservation>);

/// A [`Reduced`] message while its partition is in the pass: the rest of it, to carry
/// the partition on (as a [`Proved`]) or fail its job.
struct InPass {
    key: Arc<dyn LoadedKey>,
    lease: KeyLease,
    host: Reservation,
    ticket: Ticket,
}

impl InPass {
    /// `r`'s partition, and the rest of it.
    fn split(r: Reduced) -> (Partition<AtDevice>, Self) {
        let Reduced {
            data,
            key,
            lease,
            host,
            ticket,
        } = r;
        let rest = Self {
            key,
            lease,
            host,
            ticket,
        };
        (data, rest)
    }
}

/// The device stage of one device: a few workers sharing the device's gate and pool.
pub(crate) struct DeviceStage {
    pub device: Arc<Device>,
    /// Every device (this one included), whose queues an idle worker takes work from.
    pub devices: Arc<[Arc<Device>]>,
    /// Most devices one key is placed on (`key_max_devices`).
    pub max_devices: usize,
    /// This device's batch-size histogram, looked up once.
    pub batch_size: prometheus::Histogram,
    /// The devices' kind: binds keys, sizes their memory.
    pub kind: Arc<dyn Devices>,
    /// Caps the bound key's batch limit (`None`: no cap).
    pub batch_cap: Option<usize>,
    /// How large a batch must be, as a share of the partitions on the device, to start
    /// beside them (0: at once).
    pub overlap_share: f64,
    pub output: Arc<PriorityQueue<Proved>>,
    /// Where the gate is kept through the tail (`release_before_tail = false`, the
    /// baseline to measure against): the tail this worker runs itself before leaving it.
    pub inline_tail: Option<Arc<Tail>>,
    pub outcomes: Arc<Outcomes>,
}

impl DeviceStage {
    /// One worker; runs until the device's queue is closed.
    pub fn run(&self) {
        let device = &*self.device;
        while let Some(routed) = self.next() {
            let (r, slot) = routed.into_parts();
            if r.ticket.is_cancelled() {
                continue;
            }
            let meta = r.lease.meta();
            let bytes = self.kind.partition_device_bytes(&meta.shape, &meta.bind);
            let Some(device_mem) = self.reserve(&r, bytes) else {
                continue;
            };
            let mut permit = device.gate.enter();
            let key = Arc::clone(&r.key);
            let bound = r.lease.bind(
                &key,
                &*self.kind,
                device.index,
                &device.info.name,
                device.budget.as_ref(),
            );
            let limit = bound.as_ref().map_or(1, |b| self.batch_limit(&**b));
            let more = self.take_batch(&mut permit, &key, bytes, limit);
            // The device span starts here: the wait for a batch is part of `device_wait`
            // (as is binding the key to the device, once per key and device).
            let start = Instant::now();
            let mut slots = vec![slot];
            let mut batch: Vec<(Reduced, Option<Reservation>)> = vec![(r, device_mem)];
            for (routed, mem) in more {
                let (r, slot) = routed.into_parts();
                slots.push(slot);
                batch.push((r, mem));
            }
            let (reduced, device_mem): (Vec<Reduced>, Vec<Option<Reservation>>) =
                batch.into_iter().unzip();
            let (data, in_pass): (Vec<Partition<AtDevice>>, Vec<InPass>) =
                reduced.into_iter().map(InPass::split).unzip();
            let results: Vec<Result<Partition<AtTail>, EngineError>> = match &bound {
                Ok(b) => {
                    self.batch_size.observe(data.len() as f64);
                    self.pass(data, &in_pass, &**b)
                }
                Err(e) => data.into_iter().map(|_| Err(e.clone())).collect(),
            };
            let end = Instant::now();
            // The partitions leave the device's load with their device memory.
            drop((device_mem, slots));
            let proved: Vec<Proved> = in_pass
                .into_iter()
                .zip(results)
                .filter_map(|(r, result)| self.finish(r, result, start, end))
                .collect();
            // A streamed binding is pinned after its pass, outside the gate (inside it
            // only where the tail stays there too), through a lease of the batch: a no-op
            // once pinned.
            let pin = |proved: &[Proved]| {
                if bound.as_ref().is_ok_and(|b| b.pinnable_bytes() > 0) {
                    if let Some(p) = proved.first() {
                        p.lease.pin(device.index);
                    }
                }
            };
            match &self.inline_tail {
                Some(tail) => {
                    pin(&proved);
                    tail.process(proved, None)
                }
                None => {
                    drop(permit);
                    pin(&proved);
                    for p in proved {
                        // A closed queue drops it: the engine is shutting down and its job
                        // was cancelled.
                        let _ = send(&self.output, p);
                    }
                }
            }
        }
    }

    /// The next partition for this device: from its own queue, else taken over from a
    /// more loaded device's; `None` once its queue is closed and empty.
    fn next(&self) -> Option<Routed> {
        if self.devices.len() == 1 {
            return self.device.queue.pop();
        }
        let mut wait = Duration::ZERO;
        loop {
            match self.device.queue.pop_wait(wait) {
                Popped::Item(r) => return Some(r),
                Popped::Closed => return None,
                Popped::Empty => {}
            }
            let taken = take_over(&self.device, &self.devices, &*self.kind, self.max_devices);
            if taken.is_some() {
                return taken;
            }
            wait = (wait * 2).clamp(IDLE_POLL.0, IDLE_POLL.1);
        }
    }

    /// Device memory for `r`'s pass, if the device has a budget: waits for room, giving
    /// up (`None`) if the job is cancelled or the queue closed meanwhile.
    fn reserve(&self, r: &Reduced, bytes: u64) -> Option<Option<Reservation>> {
        let Some(b) = &self.device.budget else {
            return Some(None);
        };
        loop {
            if let Some(res) = b.reserve_wait(bytes, Duration::from_millis(200)) {
                return Some(Some(res));
            }
            if r.ticket.is_cancelled() || self.device.queue.is_closed() {
                return None;
            }
        }
    }

    /// Partitions of `bound`'s key one pass may take: the device's limit, capped by the
    /// engine's `device_batch`. A device that panics here gets no batches.
    fn batch_limit(&self, bound: &dyn DeviceKey) -> usize {
        let limit = guarded(|| Ok(bound.caps().batch_limit)).unwrap_or(1);
        self.batch_cap.map_or(limit, |cap| limit.min(cap))
    }

    /// The partitions that join the worker's own in its pass, at most `limit` in all. With
    /// another pass on the device, a batch smaller than `overlap_share` of that pass's
    /// waits for more to queue or for the device to free (see [`PassPermit::take_batch`]);
    /// alone, it takes what is queued at once. What is queued counts on every device's
    /// queue: a pass takes partitions of its key from the others' too ([`Self::take_more`]).
    fn take_batch(
        &self,
        permit: &mut PassPermit<'_>,
        key: &Arc<dyn LoadedKey>,
        bytes: u64,
        limit: usize,
    ) -> Vec<Taken> {
        let device = &*self.device;
        let ours =
            |r: &Routed| Arc::ptr_eq(&r.reduced.key, key) && !r.reduced.ticket.is_cancelled();
        permit.take_batch(1, GATHER_POLL, |on_device, alone| {
            if limit <= 1 {
                return Some(Vec::new());
            }
            let want = ((self.overlap_share * on_device as f64).ceil() as usize).min(limit);
            let ready = alone
                || want <= 1
                || device.queue.is_closed()
                || 1 + self
                    .devices
                    .iter()
                    .map(|d| d.queue.count(ours))
                    .sum::<usize>()
                    >= want;
            ready.then(|| self.take_more(key, bytes, limit - 1))
        })
    }

    /// Up to `max` more queued partitions of the same loaded key, best first, from this
    /// device's queue, then from the other devices' (the key is bound here, and a
    /// partition waiting there would otherwise wait for its device to free), each with its
    /// `bytes` of device memory reserved without waiting: where the budget has no room for
    /// one more, the batch is smaller, so a worker never waits for memory while it holds
    /// the gate and its batch's reservations. Cancelled partitions are left for `pop` to
    /// drop.
    fn take_more(&self, key: &Arc<dyn LoadedKey>, bytes: u64, max: usize) -> Vec<Taken> {
        let device = &self.device;
        let mut full = false;
        let mut taken: Vec<Taken> = Vec::new();
        let n = self.devices.len();
        // Its own queue first, then the others in index order after it.
        for d in (0..n).map(|i| &self.devices[(device.index + i) % n]) {
            if full || taken.len() >= max {
                break;
            }
            let more = d.queue.take_matching(max - taken.len(), |r| {
                let same = Arc::ptr_eq(&r.reduced.key, key);
                if full || !same || r.reduced.ticket.is_cancelled() {
                    return None;
                }
                match &device.budget {
                    Some(b) => {
                        let res = b.try_reserve(bytes);
                        full = res.is_none();
                        res.map(Some)
                    }
                    None => Some(None),
                }
            });
            taken.extend(more.into_iter().map(|(mut r, mem)| {
                r.move_to(device);
                (r, mem)
            }));
        }
        // A job cancelled since: its partitions go now, as they would from `pop`.
        taken.retain(|(r, _)| !r.reduced.ticket.is_cancelled());
        taken
    }

    /// The device pass of `data` (the partitions of `in_pass`) on the device's pool,
    /// results in order.
    fn pass(
        &self,
        data: Vec<Partition<AtDevice>>,
        in_pass: &[InPass],
        bound: &dyn DeviceKey,
    ) -> Vec<Result<Partition<AtTail>, EngineError>> {
        let indices: Vec<usize> = in_pass.iter().map(|r| r.ticket.index).collect();
        let failed = |partition: usize, e: CoreError| EngineError::Proving {
            partition,
            stage: "device",
            source: Arc::new(e),
        };
        // A streamed key's passes wait for each other here, on this worker's own thread.
        let _one = (!bound.in_core()).then(|| {
            self.device
                .streamed_pass
                .lock()
                .unwrap_or_else(|e| e.into_inner())
        });
        match self
            .device
            .pool
            .install(|| guarded(|| Ok(bound.pass(data))))
        {
            Ok(results) => results
                .into_iter()
                .zip(&indices)
                .map(|(r, &i)| r.map_err(|e| failed(i, e)))
                .collect(),
            // A panic inside the pass leaves no partition's result to trust.
            Err(e) => {
                let e = Arc::new(e);
                indices
                    .iter()
                    .map(|&partition| {
                        Err(EngineError::Proving {
                            partition,
                            stage: "device",
                            source: Arc::clone(&e),
                        })
                    })
                    .collect()
            }
        }
    }

    /// Records the pass in `r`'s waterfall; the partition for the tail, or its job failed.
    fn finish(
        &self,
        r: InPass,
        result: Result<Partition<AtTail>, EngineError>,
        start: Instant,
        end: Instant,
    ) -> Option<Proved> {
        let InPass {
            key,
            lease,
            host,
            mut ticket,
        } = r;
        self.outcomes.tracer.device_span(
            self.device.index,
            ticket.job.id,
            ticket.index,
            start,
            end,
        );
        ticket
            .trace
            .span(Stage::DeviceWait, ticket.queued_at, start);
        ticket.trace.span(Stage::Device, start, end);
        let data = match result {
            Ok(data) => data,
            Err(e) => {
                self.outcomes.fail(&mut ticket, e);
                return None;
            }
        };
        tracing::info!(job = ticket.job.id, partition = ticket.index, stage = "device", device = %self.device.info.name, ms = log_ms(end - start), wait_ms = log_ms(start - ticket.queued_at), "stage done");
        ticket.queued_for("tail", end);
        Some(Proved {
            data,
            key,
            lease,
            host,
            ticket,
        })
    }
}
