//! The device stage: per device, a few workers queue for the device. A worker reserves the
//! partition's device memory, enters the device's gate (which admits `device_passes`
//! partitions at once, 1 unless the backend asks for more), runs the quotient and the G1
//! MSMs (and the G2 MSM if the backend does it), and leaves before handing the partition
//! to the tail, so the next partition's device work overlaps this one's tail. Time with
//! at least one pass inside is the device's busy time.

use crate::devices::Device;
use crate::engine::Shared;
use crate::error::EngineError;
use crate::work::{guarded, with_part};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One worker of device `index`; runs until its queue is closed.
pub(crate) fn run(shared: Arc<Shared>, index: usize) {
    let device: &Device = &shared.devices[index];
    while let Some(mut w) = device.queue.pop() {
        if w.job.is_cancelled() {
            continue;
        }
        let (Some(lease), Some(key)) = (w.lease.as_ref(), w.key.clone()) else {
            continue;
        };
        // Device memory for this partition, if the device has a budget.
        let _device_mem = match &device.budget {
            Some(b) => {
                let bytes = shared.factory.partition_device_bytes(lease.meta());
                loop {
                    if let Some(r) = b.reserve_wait(bytes, Duration::from_millis(200)) {
                        break Some(r);
                    }
                    if w.job.is_cancelled() || shared.is_shutting_down() {
                        break None;
                    }
                }
            }
            None => None,
        };
        if w.job.is_cancelled() {
            continue;
        }
        let permit = device.gate.enter();
        let start = Instant::now();
        w.trace.span("device_wait", w.queued_at, start);
        let backend = lease.backend(&*shared.factory, device, &key);
        let g2 = shared.factory.g2_on_device();
        let r: Result<(), EngineError> = backend.and_then(|b| {
            device
                .pool
                .install(|| guarded(|| with_part!(&mut w.data, p => p.device(&key, &b, g2))))
                .map_err(|e| EngineError::InvalidRequest(e.to_string()))
        });
        let end = Instant::now();
        drop(permit);
        shared
            .tracer
            .device_span(index, w.job.id, w.index, start, end);
        w.trace.span("device", start, end);
        drop(_device_mem);
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
