//! The tail stage, on its own pool: the G2 MSM when the device leaves it to the CPU,
//! assembly with fresh randomness, the self-check, and snarkjs JSON. Delivers the proof
//! to its job and records the partition's waterfall.

use crate::messages::Proved;
use crate::outcome::{guarded, Outcomes};
use crate::queue::PriorityQueue;
use std::sync::Arc;
use std::time::Instant;

/// The tail stage: a few workers sharing one rayon pool.
pub(crate) struct Tail {
    pub input: Arc<PriorityQueue<Proved>>,
    pub pool: Arc<rayon::ThreadPool>,
    /// Verify every proof before delivering it.
    pub self_check: bool,
    pub outcomes: Arc<Outcomes>,
}

impl Tail {
    /// One worker; runs until its input queue is closed.
    pub fn run(&self) {
        while let Some(p) = self.input.pop() {
            self.process(p);
        }
    }

    /// The tail of one partition (also run by a device worker that keeps the device's
    /// gate through the tail, `device.release_before_tail = false`).
    pub fn process(&self, p: Proved) {
        let Proved {
            mut data,
            key,
            lease,
            host,
            mut ticket,
        } = p;
        if ticket.is_cancelled() {
            return;
        }
        let start = ticket.end_wait("tail_wait");
        let r = {
            // The self-check's pairings (and a G2 MSM on the CPU) are a bandwidth burst.
            let _burst = zkpipe_core::throttle::burst();
            self.pool
                .install(|| guarded(|| key.tail(&mut data, self.self_check)))
        };
        let end = Instant::now();
        ticket.trace.span("tail", start, end);
        if r.is_ok() {
            ticket.log_stage_done("tail", start, end);
        }
        match r {
            Ok((proof, public)) => self.outcomes.deliver(&mut ticket, proof, public, end),
            Err(e) => self.outcomes.fail_proving(&mut ticket, "tail", e),
        }
        // The buffers go back before the memory and the key are released.
        drop(data);
        drop((lease, host));
    }
}
