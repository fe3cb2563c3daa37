//! The reduce stage: each worker takes the highest-priority admitted partition, makes sure
//! its key is loaded (the first partition of a cold key loads it, on this stage's pool),
//! computes a, b, c on the stage's own rayon pool (or, where the device computes them,
//! only turns the witness into MSM scalars), and passes it to its key's device.

use crate::engine::Shared;
use crate::work::{guarded, with_part};
use std::sync::Arc;
use std::time::Instant;
use zkpipe_core::stages::ReduceOn;

/// One reduce worker; runs until its queue is closed.
pub(crate) fn run(shared: Arc<Shared>) {
    while let Some(mut w) = shared.reduce_queue.pop() {
        if w.job.is_cancelled() {
            continue;
        }
        let start = Instant::now();
        w.trace.span("reduce_wait", w.queued_at, start);
        let Some(lease) = w.lease.as_ref() else {
            continue;
        };
        let key = match lease.get(&shared.reduce_pool) {
            Ok(k) => k,
            Err(e) => {
                shared.fail(&w, e.kind(), &e.to_string());
                continue;
            }
        };
        let loaded = Instant::now();
        w.trace.span("key_load", start, loaded);
        let on = if shared.factory.reduces_on_device() {
            ReduceOn::Device
        } else {
            ReduceOn::Cpu(shared.config.schedule)
        };
        let r = shared
            .reduce_pool
            .install(|| guarded(|| with_part!(&mut w.data, p => p.reduce(&key, on))));
        let end = Instant::now();
        w.trace.span("reduce", loaded, end);
        if let Err(e) = r {
            shared.fail_core(&w, &e);
            continue;
        }
        w.key = Some(key);
        w.device = lease.device(
            &shared.devices,
            &*shared.factory,
            shared.config.key_max_devices,
        );
        w.queued_at = end;
        let device = &shared.devices[w.device];
        if device.queue.push(w.order, w).is_err() {
            return;
        }
    }
}
