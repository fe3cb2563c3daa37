//! The device stage: per device, a few workers queue for the device. A worker reserves the
//! partition's device memory, enters the device's gate (which admits `device_passes`
//! partitions at once, 1 unless the backend asks for more), runs the quotient and the G1
//! MSMs (and the G2 MSM if the backend does it), and leaves before handing the partition
//! to the tail, so the next partition's device work overlaps this one's tail. Time with
//! at least one pass inside is the device's busy time.
//!
//! Where the backend batches proofs of one key (its `batch_limit` for the key above 1,
//! capped by `device_batch`), the worker, once inside the gate, also takes queued
//! partitions of the same loaded key and runs them all in one pass: several small proofs
//! then share one batched MSM over the key's resident points, and the gate is entered
//! once for the batch.

use crate::devices::Device;
use crate::engine::Shared;
use crate::error::EngineError;
use crate::keys::{BoundBackend, LoadedKey};
use crate::memory::Reservation;
use crate::work::{device_batch, guarded, with_part, CurveData, Work};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A partition taken for a device pass, with the device memory reserved for it.
type Taken = (Work, Option<Reservation>);

/// One worker of device `index`; runs until its queue is closed.
pub(crate) fn run(shared: Arc<Shared>, index: usize) {
    let device: &Device = &shared.devices[index];
    while let Some(w) = device.queue.pop() {
        if w.job.is_cancelled() {
            continue;
        }
        let (Some(lease), Some(key)) = (w.lease.as_ref(), w.key.clone()) else {
            continue;
        };
        let bytes = shared.factory.partition_device_bytes(lease.meta());
        // Device memory for this partition, if the device has a budget.
        let device_mem = match &device.budget {
            Some(b) => loop {
                if let Some(r) = b.reserve_wait(bytes, Duration::from_millis(200)) {
                    break Some(r);
                }
                if w.job.is_cancelled() || shared.is_shutting_down() {
                    break None;
                }
            },
            None => None,
        };
        if w.job.is_cancelled() {
            continue;
        }
        let permit = device.gate.enter();
        let start = Instant::now();
        let backend = lease.backend(&*shared.factory, device, &key);
        let mut batch: Vec<Taken> = vec![(w, device_mem)];
        if let Ok(b) = &backend {
            let limit = batch_limit(&shared, b, &key);
            if limit > 1 {
                batch.extend(take_more(device, &key, bytes, limit - 1));
            }
        }
        let g2 = shared.factory.g2_on_device();
        let results: Vec<Result<(), EngineError>> = match backend {
            Ok(b) => {
                shared
                    .metrics
                    .device_batch_size
                    .with_label_values(&[device.info.name.as_str()])
                    .observe(batch.len() as f64);
                pass(device, &mut batch, &key, &b, g2)
            }
            Err(e) => batch.iter().map(|_| Err(e.clone())).collect(),
        };
        let end = Instant::now();
        drop(permit);
        let (mut works, device_mem): (Vec<Work>, Vec<Option<Reservation>>) =
            batch.into_iter().unzip();
        for w in &mut works {
            shared
                .tracer
                .device_span(index, w.job.id, w.index, start, end);
            w.trace.span("device_wait", w.queued_at, start);
            w.trace.span("device", start, end);
        }
        drop(device_mem);
        for (mut w, r) in works.into_iter().zip(results) {
            match r {
                Ok(()) => {}
                Err(EngineError::InvalidRequest(msg)) => {
                    shared.fail(&w, "proving", &msg);
                    continue;
                }
                Err(e) => {
                    shared.fail(&w, e.kind(), &e.to_string());
                    continue;
                }
            }
            w.queued_at = end;
            if shared.tail_queue.push(w.order, w).is_err() {
                return;
            }
        }
    }
}

/// Partitions of `key` one pass may take on this device: the backend's limit, capped by
/// the engine's `device_batch`. A backend that panics here gets no batches.
fn batch_limit(shared: &Shared, backend: &BoundBackend, key: &LoadedKey) -> usize {
    let limit = guarded(|| Ok(backend.batch_limit(key))).unwrap_or(1);
    shared
        .config
        .device_batch
        .map_or(limit, |cap| limit.min(cap))
}

/// Up to `max` more queued partitions of the same loaded key, best first, each with its
/// `bytes` of device memory reserved without waiting: where the budget has no room for one
/// more, the batch is smaller, so a worker never waits for memory while it holds the gate
/// and its batch's reservations. Cancelled partitions are left for `pop` to drop.
fn take_more(device: &Device, key: &LoadedKey, bytes: u64, max: usize) -> Vec<Taken> {
    let mut full = false;
    let mut taken = device.queue.take_matching(max, |w| {
        let same = w.lease.is_some()
            && w.device == device.index
            && w.key.as_ref().is_some_and(|k| k.same(key));
        if full || !same || w.job.is_cancelled() {
            return None;
        }
        match &device.budget {
            Some(b) => {
                let r = b.try_reserve(bytes);
                full = r.is_none();
                r.map(Some)
            }
            None => Some(None),
        }
    });
    // A job cancelled since: its partitions go now, as they would from `pop`.
    taken.retain(|(w, _)| !w.job.is_cancelled());
    taken
}

/// Runs the device pass of `batch` on the device's pool, results in order. A lone
/// partition takes the single-proof path, exactly as without batching, so a backend's
/// batch code only runs for real batches.
fn pass(
    device: &Device,
    batch: &mut [Taken],
    key: &LoadedKey,
    backend: &BoundBackend,
    g2: bool,
) -> Vec<Result<(), EngineError>> {
    let failed = |e: zkpipe_core::Error| EngineError::InvalidRequest(e.to_string());
    if let [(w, _)] = batch {
        let r = device
            .pool
            .install(|| guarded(|| with_part!(&mut w.data, p => p.device(key, backend, g2))));
        return vec![r.map_err(failed)];
    }
    let mut data: Vec<&mut CurveData> = batch.iter_mut().map(|(w, _)| &mut w.data).collect();
    match device
        .pool
        .install(|| guarded(|| Ok(device_batch(&mut data, key, backend, g2))))
    {
        Ok(results) => results.into_iter().map(|r| r.map_err(failed)).collect(),
        // A panic inside the pass leaves no partition's result to trust.
        Err(e) => {
            let msg = e.to_string();
            data.iter()
                .map(|_| Err(EngineError::InvalidRequest(msg.clone())))
                .collect()
        }
    }
}
