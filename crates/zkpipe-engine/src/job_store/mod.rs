//! Where jobs are recorded so that they outlive the process: every accepted job with its
//! witnesses, each proved partition, and how the job ended. The engine writes here
//! *before* it tells anyone (a waiter that saw "done" will see "done" after a crash), and
//! on start it reads back what was left: unfinished jobs run again, finished ones can
//! still be awaited.
//!
//! [`JobStore`] is the seam; [`SqliteStore`] is the durable single-node store the daemon
//! uses, [`MemoryStore`] the volatile one for embedded use and tests. Job ids come from
//! the store, so they are never reused, across restarts too.

mod memory;
mod sqlite;

pub use memory::MemoryStore;
pub use sqlite::SqliteStore;

use crate::job::{JobId, JobState, PartitionProof, Priority};
use sha2::{Digest, Sha256};
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
    /// One `.wtns` file per partition.
    pub witnesses: Vec<&'a [u8]>,
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
    /// Not proved yet: its witness.
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
    /// The database failed or holds something this version does not understand.
    #[error("job store {path}: {message}")]
    Database {
        /// The database file.
        path: String,
        /// What failed.
        message: String,
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

    /// Ends the job as failed or cancelled (its witnesses are dropped).
    fn finish(&self, job: JobId, state: JobState, error: Option<&str>) -> Result<(), StoreError>;

    /// Every job recorded and not forgotten, oldest first.
    fn recover(&self) -> Result<Vec<StoredJob>, StoreError>;

    /// Forgets jobs that ended longer than `retention` ago (their request ids too);
    /// returns how many.
    fn forget_finished(&self, retention: Duration) -> Result<usize, StoreError>;
}

/// A duration as whole milliseconds since the Unix epoch, for the stores' columns.
pub(crate) fn unix_ms(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The inverse of [`unix_ms`].
pub(crate) fn from_unix_ms(ms: i64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)
}
