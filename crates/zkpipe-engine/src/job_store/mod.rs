//! Where jobs are recorded so that they outlive the process: every accepted job with its
//! witnesses, each proved partition, and how the job ended. The engine writes here
//! *before* it tells anyone (a waiter that saw "done" will see "done" after a crash), and
//! on start it reads back what was left: unfinished jobs run again, finished ones can
//! still be awaited.
//!
//! [`JobStore`] is the seam; [`MemoryStore`] is the volatile store for embedded use and
//! tests. The durable stores live outside the engine, in the `zkpipe-store` crate (as the
//! CUDA device set lives outside core behind `Devices`): SQLite for one daemon, Postgres
//! for a fleet. Job ids come from the store, so they are never reused, across restarts
//! too. A store keeps priorities by [`Priority::rank`] and states by [`JobState::name`];
//! a value it cannot read back is a [`StoreError::Unknown`], never a default.
//!
//! A store that several daemons share is also a [`SharedQueue`]: there the store *is* the
//! queue, and a daemon runs the partitions it claims, not the ones submitted to it
//! (docs/fleet.md).

mod memory;
pub mod retention;
pub mod staged;

pub use memory::MemoryStore;
pub use retention::{Ledger, Retention};
pub use staged::{PartitionBytes, Staged, StagedWitness, StagingWitness};

use crate::job::{JobId, JobSnapshot, JobState, PartitionProof, Priority, UnknownName};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// What a request is, for telling "the same request again" from "another request under
/// the same request id": SHA-256 over the key id and every witness.
pub type Fingerprint = [u8; 32];

/// The fingerprint of a request for `key_id` with `witnesses`.
pub fn fingerprint<W: AsRef<[u8]>>(key_id: &str, witnesses: &[W]) -> Fingerprint {
    let mut h = Sha256::new();
    // Lengths first, so that no two different requests hash the same concatenation.
    h.update((key_id.len() as u64).to_le_bytes());
    h.update(key_id.as_bytes());
    h.update((witnesses.len() as u64).to_le_bytes());
    for w in witnesses {
        h.update((w.as_ref().len() as u64).to_le_bytes());
        h.update(w.as_ref());
    }
    h.finalize().into()
}

/// A job to record.
pub struct NewJob<'a> {
    /// The key id.
    pub key_id: &'a str,
    /// Its priority.
    pub priority: Priority,
    /// The caller's request id ("" for none).
    pub request_id: &'a str,
    /// See [`Fingerprint`].
    pub fingerprint: Fingerprint,
    /// The key's shape ([`shape_tag`]): a shared store lets only daemons holding a key
    /// of this id and shape claim the job.
    pub key_shape: String,
    /// One `.wtns` file per partition, or its packed form
    /// ([`zkpipe_formats::packed_wtns`]).
    pub witnesses: Vec<&'a [u8]>,
    /// Whether the caller packed each witness already where that halves it (the engine
    /// does at submit): a store then records the bytes as they are instead of scanning
    /// them again.
    pub packed: bool,
    /// Empty, or one per partition: the store's file holding that witness already
    /// ([`JobStore::stage`]), which it records instead of writing the bytes again.
    pub staged: Vec<Option<&'a dyn StagedWitness>>,
}

impl NewJob<'_> {
    /// The store's file holding partition `i`'s witness already, if any.
    pub fn staged(&self, i: usize) -> Option<&dyn StagedWitness> {
        self.staged.get(i).copied().flatten()
    }
}

/// Records `done` with [`JobStore::partition_done`], one after another, as
/// [`JobStore::partitions_done`] does by default (and a store's own does where its batch
/// fails): `Err((n, e))` after the first `n`.
pub fn one_by_one<S: JobStore + ?Sized>(
    store: &S,
    done: &[ProvedPartition<'_>],
) -> Result<(), (usize, StoreError)> {
    for (n, d) in done.iter().enumerate() {
        store
            .partition_done(d.job, d.index, d.proof, d.last)
            .map_err(|e| (n, e))?;
    }
    Ok(())
}

/// A partition's proof to record with [`JobStore::partitions_done`].
#[derive(Debug, Clone, Copy)]
pub struct ProvedPartition<'a> {
    /// Its job.
    pub job: JobId,
    /// Its index in the job.
    pub index: usize,
    /// The proof.
    pub proof: &'a PartitionProof,
    /// Whether it is the job's last: recording it also ends the job as done.
    pub last: bool,
}

/// A key's shape as the shared store records it: curve and sizes. Two daemons holding
/// files of one key id with different shapes do not run each other's jobs.
pub fn shape_tag(shape: &zkpipe_core::KeyShape) -> String {
    format!(
        "{}/vars={}/public={}/domain={}/coefficients={}",
        shape.curve.snarkjs_name(),
        shape.n_vars,
        shape.n_public,
        shape.domain_size,
        shape.n_coefficients
    )
}

/// How [`JobStore::accept`] went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepted {
    /// Recorded under a new id.
    New(JobId),
    /// The request id already names this job, recorded from the same request.
    Existing(JobId),
}

/// A job read back by [`JobStore::recover`].
#[derive(Debug, Clone)]
pub struct StoredJob {
    /// Its id.
    pub id: JobId,
    /// The key id.
    pub key_id: String,
    /// Its priority.
    pub priority: Priority,
    /// The caller's request id ("" for none).
    pub request_id: String,
    /// `Queued` for an unfinished job (whether or not it had started), else how it ended.
    pub state: JobState,
    /// Why it failed, if it did.
    pub error: Option<String>,
    /// When it was accepted.
    pub submitted: SystemTime,
    /// When it ended, if it did.
    pub finished: Option<SystemTime>,
    /// Its partitions in order.
    pub partitions: Vec<StoredPartition>,
}

/// One partition of a [`StoredJob`].
#[derive(Debug, Clone)]
pub enum StoredPartition {
    /// Not proved yet: its witness (or circuit inputs) as stored: a `.wtns` may be
    /// packed ([`zkpipe_formats::packed_wtns`]), which the engine reads as it is, so a
    /// store need not unpack it.
    Pending(Vec<u8>),
    /// Proved.
    Proved(PartitionProof),
    /// Neither (the job ended without it: failed or cancelled).
    Dropped,
}

/// Why the store could not do something.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The request id names a job recorded from a different request.
    #[error("request id {request_id:?} already names job {job}, submitted with a different key or witnesses")]
    RequestIdTaken {
        /// The request id.
        request_id: String,
        /// The job it names.
        job: JobId,
    },
    /// The state directory is used by another process.
    #[error("state directory {dir}: in use by another zkpipe daemon")]
    InUse {
        /// The directory.
        dir: String,
    },
    /// A shared store's setting is unusable (its URL, its object store).
    #[error("job store: {0}")]
    Config(String),
    /// The database failed or holds something this version does not understand.
    #[error("job store {path}: {message}")]
    Database {
        /// The database file.
        path: String,
        /// What failed.
        message: String,
    },
    /// A stored job holds a priority or state this version does not know (written by a
    /// newer version, or damaged).
    #[error("job store {path}: job {job}: {source}")]
    Unknown {
        /// The database.
        path: String,
        /// The job.
        job: JobId,
        /// The value.
        #[source]
        source: UnknownName,
    },
}

/// The job store (see the module doc). Every method that records something returns only
/// once it is durable (for a durable store).
pub trait JobStore: Send + Sync {
    /// Whether what is recorded survives the process. The engine keeps unfinished jobs
    /// for the next start when it shuts down over a durable store, and cancels them
    /// otherwise.
    fn durable(&self) -> bool;

    /// Records a new job and its witnesses, or finds the job its request id names.
    fn accept(&self, job: &NewJob<'_>) -> Result<Accepted, StoreError>;

    /// As [`Self::accept`], but the record may not be durable until [`Self::make_durable`]
    /// is called with the returned mark: a caller that holds a lock around the record
    /// calls it after letting go, so that the records behind this one need not wait for
    /// its sync. The default is `accept` (durable at once; mark 0).
    fn accept_unsynced(&self, job: &NewJob<'_>) -> Result<(Accepted, u64), StoreError> {
        self.accept(job).map(|a| (a, 0))
    }

    /// A file for a witness of `bytes` that is about to arrive in chunks, for a job not
    /// yet accepted ([`staged`]); `None` (the default) where this store does not keep
    /// witnesses in files of its own, or not one of this size: the caller then holds it
    /// in memory.
    fn stage(&self, _bytes: u64) -> Result<Option<Box<dyn StagingWitness>>, StoreError> {
        Ok(None)
    }

    /// Returns once every record up to `mark` ([`Self::accept_unsynced`]) is durable.
    fn make_durable(&self, _mark: u64) -> Result<(), StoreError> {
        Ok(())
    }

    /// The job a request id names and its fingerprint, if any.
    fn find_request(&self, request_id: &str) -> Result<Option<(JobId, Fingerprint)>, StoreError>;

    /// Records partition `index`'s proof; `last` also ends the job as done.
    fn partition_done(
        &self,
        job: JobId,
        index: usize,
        proof: &PartitionProof,
        last: bool,
    ) -> Result<(), StoreError>;

    /// Records several partitions' proofs in order, as [`Self::partition_done`] would one
    /// after another; a store that can commit them together (one transaction, one sync)
    /// does. `Err((n, e))`: the first `n` are recorded, the next failed with `e`, and the
    /// rest were not tried.
    fn partitions_done(&self, done: &[ProvedPartition<'_>]) -> Result<(), (usize, StoreError)> {
        one_by_one(self, done)
    }

    /// Ends the job as failed or cancelled (its witnesses are dropped).
    fn finish(&self, job: JobId, state: JobState, error: Option<&str>) -> Result<(), StoreError>;

    /// Every job recorded and not forgotten, oldest first.
    fn recover(&self) -> Result<Vec<StoredJob>, StoreError>;

    /// Forgets finished jobs (their request ids too) beyond `retention`: those that ended
    /// longer than its time ago, and the oldest beyond its count or bytes; never an
    /// unfinished job. Returns how many.
    fn forget_finished(&self, retention: &Retention) -> Result<usize, StoreError>;

    /// The queue several daemons share, if this store is one: the engine then claims its
    /// work from it instead of running what is submitted to it.
    fn shared(self: Arc<Self>) -> Option<Arc<dyn SharedQueue>> {
        None
    }
}

/// A key a daemon can serve, for [`SharedQueue::claim`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedKey {
    /// Its id.
    pub id: String,
    /// Its [`shape_tag`].
    pub shape: String,
    /// Whether it is resident here (claimed first, at equal priority).
    pub hot: bool,
}

/// A partition claimed from a [`SharedQueue`], held under a lease until its result is
/// recorded (with [`JobStore::partition_done`] or [`JobStore::finish`]).
#[derive(Debug, Clone)]
pub struct Claim {
    /// Its job.
    pub job: JobId,
    /// Its index in the job.
    pub index: usize,
    /// The job's partitions.
    pub partitions: usize,
    /// The key id.
    pub key_id: String,
    /// The job's priority.
    pub priority: Priority,
    /// The job's request id ("" for none).
    pub request_id: String,
    /// When the job was accepted (by whichever daemon).
    pub submitted: SystemTime,
    /// Where its witness (or circuit inputs) is, for [`SharedQueue::witness`]: the
    /// object's name in the object store, or `None` for the database.
    pub witness_object: Option<String>,
}

/// How [`SharedQueue::cancel`] went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// Cancelled now.
    Cancelled,
    /// It had already ended in this state.
    Finished(JobState),
    /// No such job.
    Unknown,
}

/// Partitions queued in a [`SharedQueue`], per key and priority.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueDepth {
    /// The key id.
    pub key_id: String,
    /// The priority.
    pub priority: Priority,
    /// Queued (unclaimed) partitions.
    pub queued: u64,
    /// Claimed (running somewhere) partitions.
    pub claimed: u64,
}

/// A job queue that several daemons share (docs/fleet.md): jobs accepted by any daemon,
/// partitions claimed under leases by the daemons that can run them, results and states
/// readable by all. A lease that lapses puts its partition back in the queue; a result is
/// recorded only under the claim that still holds it, so a partition finishes once.
pub trait SharedQueue: Send + Sync {
    /// This daemon's name in the queue (a claim's owner).
    fn daemon(&self) -> &str;

    /// Claims up to `max` queued partitions of the `keys` this daemon serves: highest
    /// priority first, then hot keys, then oldest job. Each is held for `lease`.
    fn claim(
        &self,
        keys: &[ServedKey],
        max: usize,
        lease: Duration,
    ) -> Result<Vec<Claim>, StoreError>;

    /// The witness or circuit inputs of a claimed partition, as stored (a packed witness
    /// as it is: see [`StoredPartition::Pending`]); read apart from the claim, so that
    /// many are read at once.
    fn witness(&self, claim: &Claim) -> Result<Vec<u8>, StoreError>;

    /// Extends the leases of the partitions this daemon holds to `lease` from now;
    /// returns those it no longer holds (their job ended, or their lease lapsed and
    /// another daemon claimed them), which it forgets.
    fn renew(&self, lease: Duration) -> Result<Vec<(JobId, usize)>, StoreError>;

    /// Puts every partition whose lease lapsed back in the queue; returns how many.
    fn reap(&self) -> Result<usize, StoreError>;

    /// Puts every partition this daemon holds back in the queue (it stops); returns how
    /// many.
    fn release(&self) -> Result<usize, StoreError>;

    /// A job's state, whichever daemon accepted or runs it.
    fn job(&self, id: JobId) -> Result<Option<JobSnapshot>, StoreError>;

    /// The newest `limit` unfinished jobs and the newest `limit` jobs, newest first,
    /// without their proofs (a listing).
    fn jobs(&self, limit: usize) -> Result<Vec<JobSnapshot>, StoreError>;

    /// Cancels a job: its queued and claimed partitions are dropped (a daemon running one
    /// learns it from the job's event or its next renewal).
    fn cancel(&self, id: JobId) -> Result<CancelOutcome, StoreError>;

    /// Partitions queued and claimed, per key and priority.
    fn depths(&self) -> Result<Vec<QueueDepth>, StoreError>;

    /// The ids of jobs that ended (done, failed, cancelled) anywhere, as they end. May
    /// miss some (a dropped connection): waiters also poll.
    fn job_events(&self) -> tokio::sync::broadcast::Receiver<JobId>;

    /// A token for [`SharedQueue::wait_for_work`], taken before looking at the queue, so
    /// that what happens between the look and the wait is not missed.
    fn work_seen(&self) -> u64;

    /// Blocks up to `timeout` or until, since `seen` was taken, work may have been
    /// queued, a job ended, or a result of this daemon was written.
    fn wait_for_work(&self, seen: u64, timeout: Duration);

    /// Wakes [`SharedQueue::wait_for_work`] now (the engine stops).
    fn interrupt(&self);

    /// Results this daemon proved but could not record because its claim was gone.
    fn results_refused(&self) -> u64;
}
