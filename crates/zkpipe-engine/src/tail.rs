//! The tail stage, on its own pool: the G2 MSM when the device leaves it to the CPU,
//! assembly with fresh randomness, the self-check, and snarkjs JSON. Delivers the proof
//! to its job and records the partition's waterfall.

use crate::engine::Shared;
use crate::job::PartitionProof;
use crate::work::{guarded, with_part};
use std::sync::Arc;
use std::time::Instant;

/// One tail worker; runs until its queue is closed.
pub(crate) fn run(shared: Arc<Shared>) {
    while let Some(mut w) = shared.tail_queue.pop() {
        if w.job.is_cancelled() {
            continue;
        }
        let Some(key) = w.key.clone() else {
            continue;
        };
        let start = Instant::now();
        w.trace.span("tail_wait", w.queued_at, start);
        let self_check = shared.config.self_check;
        let r = shared
            .tail_pool
            .install(|| guarded(|| with_part!(&mut w.data, p => p.tail(&key, self_check))));
        let end = Instant::now();
        w.trace.span("tail", start, end);
        match r {
            Ok((proof_json, public_json)) => {
                let timings = w.trace.timings(end);
                shared.metrics.observe(&timings);
                shared.metrics.proofs_completed.inc();
                shared.tracer.record(w.trace.clone());
                w.job.partition_done(
                    w.index,
                    PartitionProof {
                        proof_json,
                        public_json,
                        timings,
                    },
                );
            }
            Err(e) => shared.fail_core(&w, &e),
        }
    }
}
