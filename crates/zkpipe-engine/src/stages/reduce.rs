//! The reduce stage: each worker takes the highest-priority partition with a witness, makes sure
//! its key is loaded (the first partition of a cold key loads it, on this stage's pool),
//! computes a, b, c on the stage's pool (or, where the device computes them, only turns
//! the witness into MSM scalars), places it on one of its key's devices and queues it there.

use crate::devices::{place, Device};
use crate::messages::{Reduced, Synthesized};
use crate::outcome::{guarded, Outcomes};
use crate::queue::PriorityQueue;
use std::sync::Arc;
use std::time::Instant;
use zkpipe_core::reduce::RowSchedule;
use zkpipe_core::stages::ReduceOn;
use zkpipe_core::Devices;
use zkpipe_core::Stage;

/// The reduce stage: a few workers sharing one rayon pool.
pub(crate) struct Reduce {
    pub input: Arc<PriorityQueue<Synthesized>>,
    pub devices: Arc<[Arc<Device>]>,
    /// The devices' kind: its capabilities decide where a, b, c are computed, its sizes
    /// where a key fits.
    pub kind: Arc<dyn Devices>,
    pub pool: Arc<rayon::ThreadPool>,
    /// How rows are spread over the pool's threads.
    pub schedule: RowSchedule,
    /// Most devices one key is placed on.
    pub max_devices: usize,
    pub outcomes: Arc<Outcomes>,
}

impl Reduce {
    /// One worker; runs until its input queue is closed.
    pub fn run(&self) {
        while let Some(a) = self.input.pop() {
            let Synthesized {
                data,
                lease,
                host,
                mut ticket,
            } = a;
            if ticket.is_cancelled() {
                continue;
            }
            let start = ticket.end_wait(Stage::ReduceWait);
            let key = match lease.get(&self.pool) {
                Ok(k) => k,
                Err(e) => {
                    self.outcomes.fail(&mut ticket, e);
                    continue;
                }
            };
            let loaded = Instant::now();
            ticket.trace.span(Stage::KeyLoad, start, loaded);
            let meta = lease.meta();
            let caps = self.kind.caps(&meta.shape, &meta.bind);
            let on = ReduceOn::for_caps(caps, self.schedule);
            let scalars = caps.wants_scalars();
            let r = self
                .pool
                .install(|| guarded(|| key.reduce(data, on, scalars)));
            let end = Instant::now();
            ticket.trace.span(Stage::Reduce, loaded, end);
            let data = match r {
                Ok(data) => data,
                Err(e) => {
                    self.outcomes.fail_proving(&mut ticket, "reduce", e);
                    continue;
                }
            };
            ticket.log_stage_done("reduce", loaded, end);
            let Some(route) = place(&lease, &self.devices, &*self.kind, self.max_devices) else {
                let partition = ticket.index;
                let lost = crate::error::EngineError::Lost {
                    partition,
                    stage: "reduce",
                };
                self.outcomes.fail(&mut ticket, lost);
                continue;
            };
            ticket.queued_for("device", end);
            let reduced = Reduced {
                data,
                key,
                lease,
                host,
                ticket,
            };
            if !route.send(reduced) {
                return;
            }
        }
    }
}
