//! The deliver stage: records checked proofs (or their tail's errors) in their jobs, on
//! threads of its own that mostly wait for the job store's sync. The tail's workers go on
//! to their next batch meanwhile. A worker takes every proof queued when it wakes (a tail
//! batch arrives at once) and records them with one store call: one transaction and one
//! sync for all, where a transaction each held two GPUs' small proofs at the store's
//! writer (lab/experiments/042l-result-batches.md); deliveries at once still share a sync
//! (the store's group commit). Plain threads blocked on the queue, not a rayon pool: a
//! rayon thread spins for a while after each task, and these tasks are a thousand small
//! waits a second.

use crate::messages::Checked;
use crate::outcome::{Delivery, Outcomes};
use crate::queue::PriorityQueue;
use std::sync::Arc;
use zkpipe_core::Stage;

/// Most proofs a worker records at once: a few tail batches.
pub(crate) const DELIVER_BATCH: usize = 64;

/// The deliver stage: workers taking checked proofs off one queue.
pub(crate) struct Deliver {
    pub input: Arc<PriorityQueue<Checked>>,
    pub outcomes: Arc<Outcomes>,
}

impl Deliver {
    /// One worker; runs until its input queue is closed and empty.
    pub fn run(&self) {
        while let Some(first) = self.input.pop() {
            let mut batch = vec![first];
            let more = self.input.take_matching(DELIVER_BATCH - 1, |_| Some(()));
            batch.extend(more.into_iter().map(|(c, ())| c));
            self.finish(batch);
        }
    }

    /// Records partitions' outcomes and their tails' spans.
    pub fn finish(&self, batch: Vec<Checked>) {
        let mut tickets = Vec::with_capacity(batch.len());
        let mut proofs = Vec::with_capacity(batch.len());
        let mut held = Vec::with_capacity(batch.len());
        for c in batch {
            let Checked {
                data,
                lease,
                host,
                mut ticket,
                outcome,
                start,
                end,
            } = c;
            ticket.trace.span(Stage::Tail, start, end);
            match outcome {
                Ok((proof, public)) => {
                    ticket.log_stage_done("tail", start, end);
                    tickets.push(ticket);
                    proofs.push((proof, public, end));
                }
                Err(e) => self.outcomes.fail_proving(&mut ticket, "tail", e),
            }
            held.push((data, lease, host));
        }
        let deliveries = tickets
            .iter_mut()
            .zip(proofs)
            .map(|(ticket, (proof_json, public_json, end))| Delivery {
                ticket,
                proof_json,
                public_json,
                end,
            })
            .collect();
        self.outcomes.deliver(deliveries);
        // The buffers go back before the memory and the key are released.
        for (data, lease, host) in held {
            drop(data);
            drop((lease, host));
        }
    }
}
