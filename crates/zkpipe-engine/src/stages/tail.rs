//! The tail stage, on its own pool: the G2 MSM when the device leaves it to the CPU,
//! assembly with fresh randomness, the self-check (several proofs of one key checked
//! together), and snarkjs JSON. Passes each proof on to be recorded in its job
//! ([`crate::stages::deliver`]).
//!
//! A batch that leaves other proofs waiting for the tail runs on its worker's thread
//! alone, so that under load the tail computes on its workers' threads as well as its
//! pool's (which the workers only waited for before: a proof's wait for the tail fell
//! from ~32 to 2–4 ms on one H200 with 16 cores). A batch that empties the queue is
//! spread over the pool, so that a lone proof is back as soon
//! (lab/experiments/042s-solo-tail.md).

use crate::curves::{AtTail, Partition};
use crate::messages::{send, Checked, Proved};
use crate::outcome::{guarded, Outcomes};
use crate::queue::PriorityQueue;
use crate::stages::deliver::Deliver;
use std::sync::Arc;
use std::time::Instant;
use zkpipe_core::Error as CoreError;
use zkpipe_core::Stage;

/// The tail stage: a few workers sharing one rayon pool.
pub(crate) struct Tail {
    pub input: Arc<PriorityQueue<Proved>>,
    pub pool: Arc<rayon::ThreadPool>,
    /// Where checked proofs go to be recorded (its input queue): a worker goes on to its
    /// next batch while they wait for their records' syncs. Once that queue is closed
    /// (the engine shutting down) the worker records them itself.
    pub deliver: Arc<Deliver>,
    /// Verify every proof before delivering it.
    pub self_check: bool,
    /// Most proofs of one key a worker takes at once (`tail.batch`).
    pub batch: usize,
    /// Spread every batch over the pool, even while other proofs wait (`tail.always_spread`).
    pub always_spread: bool,
    pub outcomes: Arc<Outcomes>,
}

impl Tail {
    /// One worker; runs until its input queue is closed. With the partition it popped it
    /// takes queued ones of the same key (a device batch leaves the device together), up
    /// to `batch`, never waiting for more.
    pub fn run(&self) {
        // This thread as a pool of its own: a batch installed there runs here, on one core
        // (rayon's joins inline, one multi-Miller loop). rayon keeps such a pool's
        // registry for the rest of the process: one per worker. None if rayon refuses,
        // and then every batch is spread.
        let solo = (!self.always_spread)
            .then(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .use_current_thread()
                    .build()
                    .ok()
            })
            .flatten();
        while let Some(p) = self.input.pop() {
            let mut batch = vec![p];
            if self.batch > 1 {
                let key = Arc::clone(&batch[0].key);
                let more = self.input.take_matching(self.batch - 1, |q| {
                    (Arc::ptr_eq(&q.key, &key) && !q.ticket.is_cancelled()).then_some(())
                });
                batch.extend(more.into_iter().map(|(q, ())| q));
            }
            let alone = solo.as_ref().filter(|_| !self.input.is_empty());
            self.process(batch, alone);
        }
    }

    /// The tail of partitions of one key, their self-checks together, on `solo` if given
    /// (the calling thread's own pool), else spread over the tail's pool (also run by a
    /// device worker that keeps the device's gate through the tail,
    /// `device.release_before_tail = false`).
    pub fn process(&self, batch: Vec<Proved>, solo: Option<&rayon::ThreadPool>) {
        let mut batch: Vec<Proved> = batch
            .into_iter()
            .filter(|p| !p.ticket.is_cancelled())
            .collect();
        let Some(key) = batch.first().map(|p| Arc::clone(&p.key)) else {
            return;
        };
        let metrics = &self.outcomes.metrics;
        metrics.tail_batch_size.observe(batch.len() as f64);
        let on = if solo.is_some() { "alone" } else { "pool" };
        metrics.tail_batches.with_label_values(&[on]).inc();
        let starts: Vec<Instant> = batch
            .iter_mut()
            .map(|p| p.ticket.end_wait(Stage::TailWait))
            .collect();
        let results = {
            // The self-check's pairings (and a G2 MSM on the CPU) are a bandwidth burst.
            let _burst = zkpipe_core::throttle::burst();
            let data: Vec<&Partition<AtTail>> = batch.iter().map(|p| &p.data).collect();
            solo.unwrap_or(&self.pool)
                .install(|| guarded(|| Ok(key.tail(&data, self.self_check))))
        };
        let end = Instant::now();
        // A panic leaves no proof of the batch to trust.
        let results = results.unwrap_or_else(|e| {
            let msg = e.to_string();
            (0..batch.len())
                .map(|_| {
                    Err(CoreError::Backend {
                        backend: "engine",
                        message: msg.clone(),
                    })
                })
                .collect()
        });
        for ((p, start), outcome) in batch.into_iter().zip(starts).zip(results) {
            let Proved {
                data,
                key: _,
                lease,
                host,
                ticket,
            } = p;
            let checked = Checked {
                data,
                lease,
                host,
                ticket,
                outcome,
                start,
                end,
            };
            if let Err(c) = send(&self.deliver.input, checked) {
                self.deliver.finish(vec![c]);
            }
        }
    }
}
