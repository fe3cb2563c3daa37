//! How a partition ends: its proof delivered to its job, or its job failed with the
//! error, each counted in the metrics and recorded in the waterfall. Also the guard that
//! turns a panic inside a stage's work into an error.

use crate::error::EngineError;
use crate::job::PartitionProof;
use crate::live_job::Job;
use crate::messages::Ticket;
use crate::metrics::Metrics;
use crate::trace::{log_ms, Tracer};
use std::sync::Arc;
use std::time::Instant;
use zkpipe_core::{Error as CoreError, Stage};

/// Where outcomes are reported; shared by every stage.
pub(crate) struct Outcomes {
    pub metrics: Arc<Metrics>,
    pub tracer: Arc<Tracer>,
}

impl Outcomes {
    /// Fails `ticket`'s job with `error` (the partition's resources go with its message).
    pub fn fail(&self, ticket: &mut Ticket, error: EngineError) {
        ticket.settle();
        self.metrics
            .proofs_failed
            .with_label_values(&[error.kind()])
            .inc();
        let msg = format!("partition {}: {error}", ticket.index);
        // Only the first failure fails the job; later ones are its other partitions.
        if ticket.job.fail(msg.clone()) {
            tracing::warn!(job = ticket.job.id, stage = ticket.stage, error = %msg, "job failed");
        }
        self.tracer.record(ticket.trace.clone());
    }

    /// Fails `ticket`'s job with a proving error from `stage`.
    pub fn fail_proving(&self, ticket: &mut Ticket, stage: &'static str, e: CoreError) {
        let partition = ticket.index;
        self.fail(
            ticket,
            EngineError::Proving {
                partition,
                stage,
                source: Arc::new(e),
            },
        );
    }

    /// Delivers the partitions' proofs, recorded in their jobs with one store call (one
    /// transaction and sync for all where the store can, [`Job::partitions_done`]).
    pub fn deliver(&self, deliveries: Vec<Delivery<'_>>) {
        let mut proved = Vec::with_capacity(deliveries.len());
        let mut tickets = Vec::with_capacity(deliveries.len());
        for d in deliveries {
            d.ticket.settle();
            let timings = d.ticket.trace.timings(d.end);
            self.metrics.observe(&timings);
            self.metrics.proofs_completed.inc();
            let total = timings.total;
            let proof = PartitionProof {
                proof_json: d.proof_json,
                public_json: d.public_json,
                timings,
            };
            proved.push((Arc::clone(&d.ticket.job), d.ticket.index, proof));
            tickets.push((d.ticket, d.end, total));
        }
        let recorded = Job::partitions_done(proved);
        let at = Instant::now();
        for ((ticket, end, total), recorded) in tickets.into_iter().zip(recorded) {
            // The proof's store write and its sync, after the tail: part of the job's latency.
            ticket.trace.span(Stage::Record, end, at);
            self.tracer.record(ticket.trace.clone());
            let job = &ticket.job;
            match recorded {
                // A fleet's claimed partition: the shared store logs its job's end.
                Ok(true) if job.claimed => {}
                Ok(true) => {
                    // Once per job; the snapshot's copy of its proofs is small beside proving them.
                    let partitions = job.snapshot().partitions;
                    tracing::info!(job = job.id, key = %job.key_id, partitions, total_ms = log_ms(total), "job done");
                }
                Ok(false) => {}
                Err(e) => {
                    let msg = format!("partition {}: recording its proof: {e}", ticket.index);
                    tracing::error!(job = job.id, "{msg}");
                    job.fail(msg);
                }
            }
        }
    }
}

/// A partition's proof to deliver, finished at `end`.
pub(crate) struct Delivery<'a> {
    pub ticket: &'a mut Ticket,
    pub proof_json: String,
    pub public_json: String,
    pub end: Instant,
}

/// Runs `f`, turning a panic into an error so that a bug fails one job instead of killing
/// a stage worker (and leaving its jobs waiting forever).
pub(crate) fn guarded<T>(f: impl FnOnce() -> Result<T, CoreError>) -> Result<T, CoreError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Err(CoreError::Backend {
            backend: "engine",
            message: format!("internal error (panic): {what}"),
        })
    })
}
