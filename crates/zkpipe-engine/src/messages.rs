//! The messages stages pass each other, one per partition, over bounded priority queues:
//!
//! ```text
//!   Queued ──admission──► Admitted ──synthesize──► Synthesized ──reduce──► Reduced
//!          └─(a witness: nothing to synthesize)──────► Synthesized
//!   Reduced ──device──► Proved ──tail──► Checked ──deliver──► job
//! ```
//!
//! Each carries exactly what the next stage needs and nothing optional. Every message
//! holds its partition's [`Ticket`]: a ticket dropped without an outcome (a bug, a queue
//! closed under it) fails its job instead of leaving it Running, unless the job was
//! cancelled. Dropping a message gives everything it holds back (buffers, memory, the key).

use crate::curves::{AtDevice, AtReduce, AtTail, LoadedKey, Partition};
use crate::error::EngineError;
use crate::keys::entry::KeyEntry;
use crate::keys::lease::KeyLease;
use crate::live_job::Job;
use crate::memory::Reservation;
use crate::queue::{Order, PriorityQueue};
use crate::trace::PartitionTrace;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;
use zkpipe_core::Stage;
use zkpipe_witness::{Generator, Inputs};

/// A partition's identity and bookkeeping (see the module doc).
pub(crate) struct Ticket {
    pub job: Arc<Job>,
    pub index: usize,
    pub order: Order,
    pub trace: PartitionTrace,
    /// When it entered the queue it is in (for wait spans).
    pub queued_at: Instant,
    /// The stage it is in or queued for, for a lost partition's error.
    pub stage: &'static str,
    settled: bool,
    pending: Arc<AtomicUsize>,
}

impl Ticket {
    /// A ticket for partition `index` of `job`, counted in `pending` until dropped.
    pub fn new(job: Arc<Job>, index: usize, order: Order, pending: Arc<AtomicUsize>) -> Self {
        let trace = PartitionTrace::new(job.id, index, job.key_id.clone(), job.submitted);
        Self {
            queued_at: job.submitted,
            job,
            index,
            order,
            trace,
            stage: "admission",
            settled: false,
            pending,
        }
    }

    /// Records the wait since it was queued as span `wait`, ending now; returns now.
    pub fn end_wait(&mut self, wait: Stage) -> Instant {
        let now = Instant::now();
        self.trace.span(wait, self.queued_at, now);
        now
    }

    /// Marks it queued for `stage` from `at`.
    pub fn queued_for(&mut self, stage: &'static str, at: Instant) {
        self.stage = stage;
        self.queued_at = at;
    }

    /// Logs that the partition finished `stage`, which ran from `start` to `end`.
    pub fn log_stage_done(&self, stage: &'static str, start: Instant, end: Instant) {
        tracing::info!(
            job = self.job.id,
            partition = self.index,
            stage,
            ms = crate::trace::log_ms(end - start),
            "stage done"
        );
    }

    /// Whether its job was cancelled or failed (the partition is dropped).
    pub fn is_cancelled(&self) -> bool {
        self.job.is_cancelled()
    }

    /// Its outcome was delivered to the job (a proof or an error).
    pub fn settle(&mut self) {
        self.settled = true;
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.pending.fetch_sub(1, Ordering::AcqRel);
        if !self.settled && !self.job.is_cancelled() {
            let e = EngineError::Lost {
                partition: self.index,
                stage: self.stage,
            };
            let msg = format!("partition {}: {e}", self.index);
            tracing::error!(job = self.job.id, "{msg}");
            self.job.fail(msg);
        }
    }
}

/// What a partition was submitted with.
pub(crate) enum PartitionInput {
    /// A witness, parsed and checked against its key: nothing to synthesize.
    Witness(Partition<AtReduce>),
    /// Something the synthesis stage makes the witness from, once admitted.
    Synthesize(ToSynthesize),
}

/// What the synthesis stage makes an admitted partition's witness from.
pub(crate) enum ToSynthesize {
    /// The circuit's inputs, for the key's witness generator.
    Inputs(CircuitInputs),
    /// A witness packed as the job store keeps it ([`zkpipe_formats::packed_wtns`]),
    /// checked against its key (curve, count, every value below the modulus) and kept
    /// packed until it is admitted: the synthesis stage converts it then, so its field
    /// elements (1.07 GB for a 2^25 SHA-256-valued partition, against 47.6 MB packed)
    /// exist only under the host budget's reservation.
    Packed(Vec<u8>),
}

/// A partition's circuit inputs and the generator that turns them into its witness.
pub(crate) struct CircuitInputs {
    pub inputs: Inputs,
    pub generator: Arc<Generator>,
}

/// Submitted, waiting for admission: the partition and its key's entry.
pub(crate) struct Queued {
    pub input: PartitionInput,
    pub entry: Arc<KeyEntry>,
    pub ticket: Ticket,
}

/// Admitted with circuit inputs or a packed witness: a lease on its key and its host
/// memory reserved (the witness it will compute or convert included), queued for the
/// synthesis stage.
pub(crate) struct Admitted {
    pub inputs: ToSynthesize,
    pub lease: KeyLease,
    pub host: Reservation,
    pub ticket: Ticket,
}

/// A partition with its witness (computed, or submitted as one), queued for reduce.
pub(crate) struct Synthesized {
    pub data: Partition<AtReduce>,
    pub lease: KeyLease,
    pub host: Reservation,
    pub ticket: Ticket,
}

/// Reduced with a loaded key, queued for the device whose queue holds it.
pub(crate) struct Reduced {
    pub data: Partition<AtDevice>,
    pub key: Arc<dyn LoadedKey>,
    pub lease: KeyLease,
    pub host: Reservation,
    pub ticket: Ticket,
}

/// Through its device pass, queued for the tail.
pub(crate) struct Proved {
    pub data: Partition<AtTail>,
    pub key: Arc<dyn LoadedKey>,
    pub lease: KeyLease,
    pub host: Reservation,
    pub ticket: Ticket,
}

/// Through its tail (assembled, self-checked, as JSON, or failed there), queued to be
/// recorded in its job.
pub(crate) struct Checked {
    pub data: Partition<AtTail>,
    pub lease: KeyLease,
    pub host: Reservation,
    pub ticket: Ticket,
    /// The proof and public inputs as snarkjs JSON, or why the tail failed.
    pub outcome: Result<(String, String), zkpipe_core::Error>,
    /// When its tail started and ended.
    pub start: Instant,
    pub end: Instant,
}

/// What every message says about itself, for cancellation and queue order.
pub(crate) trait Message {
    fn ticket(&self) -> &Ticket;
}

/// Queues `m` on `queue` in its ticket's order (waiting while the queue is full); gives
/// it back if the queue is closed.
pub(crate) fn send<M: Message>(queue: &PriorityQueue<M>, m: M) -> Result<(), M> {
    let order = m.ticket().order;
    queue.push(order, m)
}

macro_rules! message {
    ($($t:ty),*) => {$(
        impl Message for $t {
            fn ticket(&self) -> &Ticket {
                &self.ticket
            }
        }
    )*};
}
message!(Queued, Admitted, Synthesized, Reduced, Proved, Checked);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{JobState, Priority};

    fn ticket(job: &Arc<Job>, pending: &Arc<AtomicUsize>) -> Ticket {
        pending.fetch_add(1, Ordering::AcqRel);
        let order = Order {
            priority: 0,
            seq: 0,
        };
        Ticket::new(Arc::clone(job), 0, order, Arc::clone(pending))
    }

    fn store() -> Arc<dyn crate::job_store::JobStore> {
        Arc::new(crate::job_store::MemoryStore::new())
    }

    /// A partition dropped without an outcome fails its job (never leaves it Running),
    /// unless the job was cancelled; one whose outcome was delivered changes nothing.
    #[test]
    fn a_ticket_dropped_without_an_outcome_fails_its_job_unless_cancelled() {
        let pending = Arc::new(AtomicUsize::new(0));
        let job = Arc::new(Job::new(
            1,
            "k".into(),
            Priority::Normal,
            String::new(),
            1,
            store(),
        ));
        let mut t = ticket(&job, &pending);
        t.queued_for("device", Instant::now());
        drop(t);
        let s = job.snapshot();
        assert_eq!(s.state, JobState::Failed);
        assert_eq!(
            s.error.as_deref(),
            Some("partition 0: lost in the device stage (internal error)")
        );
        assert_eq!(pending.load(Ordering::Acquire), 0);

        let job = Arc::new(Job::new(
            2,
            "k".into(),
            Priority::Normal,
            String::new(),
            1,
            store(),
        ));
        job.cancel().unwrap();
        drop(ticket(&job, &pending));
        assert_eq!(job.snapshot().state, JobState::Cancelled);

        let job = Arc::new(Job::new(
            3,
            "k".into(),
            Priority::Normal,
            String::new(),
            2,
            store(),
        ));
        let mut t = ticket(&job, &pending);
        t.settle();
        drop(t);
        assert_eq!(job.snapshot().state, JobState::Queued);
        assert_eq!(pending.load(Ordering::Acquire), 0);
    }
}
