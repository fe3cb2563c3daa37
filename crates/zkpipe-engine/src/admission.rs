//! Admission: the one place partitions enter the pipeline. The admission loop looks at
//! the highest-priority waiting partition and admits it only when its host-memory
//! reservation (plus its key's, if the key is cold) fits the budget, evicting idle keys to
//! make room. If the head does not fit, nothing behind it is admitted either, so a large
//! job cannot be starved by a stream of small ones. Jobs that could never fit were already
//! refused at submit.

use crate::engine::Shared;
use crate::work::Work;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs until the engine shuts down.
pub(crate) fn run(shared: Arc<Shared>) {
    loop {
        if shared.shutdown.load(Ordering::Acquire) {
            return;
        }
        let seen = shared.signal.generation();
        let mut blocked = None;
        let admitted = shared.admission.pop_if(|w: &mut Work| {
            if w.job.is_cancelled() {
                return true;
            }
            let Some(entry) = w.entry.take() else {
                return true;
            };
            match shared.keys.try_lease(&entry, entry.meta.partition_bytes) {
                Some((lease, host)) => {
                    w.lease = Some(lease);
                    w.host = Some(host);
                    true
                }
                None => {
                    blocked = Some(entry.meta.host_bytes + entry.meta.partition_bytes);
                    w.entry = Some(entry);
                    false
                }
            }
        });
        match admitted {
            Some(mut w) => {
                if w.job.is_cancelled() || w.lease.is_none() {
                    continue; // dropping it frees everything
                }
                let now = Instant::now();
                w.trace.span("queued", w.queued_at, now);
                w.queued_at = now;
                w.job.mark_running();
                if shared.reduce_queue.push(w.order, w).is_err() {
                    return;
                }
            }
            None => {
                if let Some(bytes) = blocked {
                    if shared.keys.evict_for(bytes) {
                        continue;
                    }
                }
                shared.signal.wait_past(seen, Duration::from_millis(100));
            }
        }
    }
}
