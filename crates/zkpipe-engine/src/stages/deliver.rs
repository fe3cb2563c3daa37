//! The deliver stage: records each checked proof (or its tail's error) in its job, on
//! threads of its own that mostly wait for the job store's sync. The tail's workers go on
//! to their next batch meanwhile; many deliveries at once share one sync (the store's
//! group commit). Plain threads blocked on the queue, not a rayon pool: a rayon thread
//! spins for a while after each task, and these tasks are a thousand small waits a second.

use crate::messages::Checked;
use crate::outcome::Outcomes;
use crate::queue::PriorityQueue;
use std::sync::Arc;
use zkpipe_core::Stage;

/// The deliver stage: workers taking checked proofs off one queue.
pub(crate) struct Deliver {
    pub input: Arc<PriorityQueue<Checked>>,
    pub outcomes: Arc<Outcomes>,
}

impl Deliver {
    /// One worker; runs until its input queue is closed and empty.
    pub fn run(&self) {
        while let Some(c) = self.input.pop() {
            self.finish(c);
        }
    }

    /// Records one partition's outcome and its tail's span.
    pub fn finish(&self, c: Checked) {
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
                self.outcomes.deliver(&mut ticket, proof, public, end);
            }
            Err(e) => self.outcomes.fail_proving(&mut ticket, "tail", e),
        }
        // The buffers go back before the memory and the key are released.
        drop(data);
        drop((lease, host));
    }
}
