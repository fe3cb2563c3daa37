//! How a partition ends: its proof delivered to its job, or its job failed with the
//! error, each counted in the metrics and recorded in the waterfall. Also the guard that
//! turns a panic inside a stage's work into an error.

use crate::error::EngineError;
use crate::job::PartitionProof;
use crate::job_store::StoreError;
use crate::live_job::Job;
use crate::messages::Ticket;
use crate::metrics::Metrics;
use crate::trace::{log_ms, Tracer};
use std::sync::Arc;
use std::time::{Duration, Instant};
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

    /// Delivers partitions' proofs (a tail batch's), finished at `end`: recorded in their
    /// jobs' store together (one transaction and one sync where they share a store,
    /// [`Job::partitions_done`]), then each counted and logged.
    pub fn deliver_all(&self, done: Vec<(&mut Ticket, String, String)>, end: Instant) {
        let mut tickets = Vec::with_capacity(done.len());
        let mut proofs = Vec::with_capacity(done.len());
        for (ticket, proof_json, public_json) in done {
            ticket.settle();
            let timings = ticket.trace.timings(end);
            self.metrics.observe(&timings);
            self.metrics.proofs_completed.inc();
            let total = timings.total;
            proofs.push(PartitionProof {
                proof_json,
                public_json,
                timings,
            });
            tickets.push((ticket, total));
        }
        let jobs: Vec<Arc<Job>> = tickets.iter().map(|(t, _)| Arc::clone(&t.job)).collect();
        let recorded = Job::partitions_done(
            jobs.iter()
                .zip(&tickets)
                .zip(proofs)
                .map(|((job, (t, _)), proof)| (&**job, t.index, proof))
                .collect(),
        );
        // The proofs' store writes and their sync, after the tail: part of the jobs' latency.
        let recorded_at = Instant::now();
        for ((ticket, total), r) in tickets.into_iter().zip(recorded) {
            ticket.trace.span(Stage::Record, end, recorded_at);
            self.tracer.record(ticket.trace.clone());
            Self::recorded(ticket, total, r);
        }
    }

    /// Logs how recording `ticket`'s proof went; a store failure fails its job.
    fn recorded(ticket: &Ticket, total: Duration, recorded: Result<bool, StoreError>) {
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
