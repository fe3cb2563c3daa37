//! The jobs the engine knows: active ones and finished ones kept within the retention's
//! bounds (time, count, bytes), and the count of partitions in flight. The job store
//! behind it gives the ids and remembers the request ids.

use crate::error::EngineError;
use crate::job::{JobId, JobSnapshot, JobState};
use crate::job_store::{Accepted, Fingerprint, JobStore, Ledger, NewJob, Retention};
use crate::live_job::Job;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The table (see the module doc).
pub(crate) struct JobTable {
    jobs: Mutex<HashMap<JobId, Arc<Job>>>,
    pub store: Arc<dyn JobStore>,
    /// Held by a registration with a request id from its request-id check to the job's
    /// insertion (not through the store's sync, `JobStore::make_durable`, which follows),
    /// so that two registrations of one request id cannot both pass the check.
    registering: Mutex<()>,
    /// Taken by a registration with witnesses of [`EXCLUSIVE_BYTES`] or more for its
    /// store write: big submissions are first come, first served, [`BIG_WRITERS`] at a
    /// time, each writing at nearly the disk's full speed. Without a bound
    /// (lab/experiments/018h-submission-path.md) 16 jobs of 1.28 GB wrote side by side,
    /// all were accepted together 16–23 s in, and the GPU waited: 0.307 s per proof
    /// against 0.246 one at a time, at c = 16 on one H100.
    big_writers: WriterSlots,
    /// Partitions accepted and not finished (each message's ticket holds one), and those
    /// of streamed jobs being received (their header's [`Reservation`]).
    pub pending: Arc<AtomicUsize>,
    /// The finished jobs in the table, in the order they ended: each job enters it as it
    /// ends ([`Job::track_end`]), so that forgetting never looks at the jobs kept.
    finished: Arc<Mutex<Ledger<Instant>>>,
    /// When the store last forgot finished jobs.
    store_forgot: Mutex<Option<Instant>>,
    /// Whether the store is shared by a fleet (jobs go there, not to this engine).
    pub shared: bool,
}

/// Witness bytes from which a registration takes one of the [`BIG_WRITERS`] slots (see
/// `JobTable::big_writers`); smaller jobs register side by side.
const EXCLUSIVE_BYTES: usize = 16 << 20;

/// Big registrations that write at once. One at a time held 10-partition 2^22 jobs
/// (1.28 GB, ~1 s to write and sync each) to one job a second whatever the GPU count: on
/// 4 × H200 the registrations waited 5 s (2 GPUs) and 10 s (4 GPUs) for the lock and 2 and
/// 4 GPUs proved 7.7 proofs/s alike (lab/experiments/042e-accept-path.md); that host's
/// disk wrote 1.2 GB/s with one writer and 1.8 GB/s with four.
const BIG_WRITERS: usize = 2;

/// A counting semaphore: at most `max` holders at once, the others wait their turn.
struct WriterSlots {
    taken: Mutex<usize>,
    freed: std::sync::Condvar,
    max: usize,
}

/// A slot of [`WriterSlots`], given back when dropped.
struct WriterSlot<'a>(&'a WriterSlots);

impl WriterSlots {
    fn new(max: usize) -> Self {
        Self {
            taken: Mutex::new(0),
            freed: std::sync::Condvar::new(),
            max: max.max(1),
        }
    }

    fn take(&self) -> WriterSlot<'_> {
        let mut taken = lock(&self.taken);
        while *taken >= self.max {
            taken = self.freed.wait(taken).unwrap_or_else(|e| e.into_inner());
        }
        *taken += 1;
        WriterSlot(self)
    }
}

impl Drop for WriterSlot<'_> {
    fn drop(&mut self) {
        *lock(&self.0.taken) -= 1;
        self.0.freed.notify_one();
    }
}

/// Partitions counted in [`JobTable::pending`] for a job not registered yet (a streamed
/// job's, from its header until it is registered), given back when dropped: a stream
/// that fails, is refused or names an earlier job frees its place at once.
#[derive(Debug)]
pub(crate) struct Reservation {
    pending: Arc<AtomicUsize>,
    partitions: usize,
}

impl Reservation {
    /// A reservation of nothing (a job that `pending` does not count: a fleet's, which
    /// the shared store takes).
    pub fn none() -> Self {
        Self {
            pending: Arc::default(),
            partitions: 0,
        }
    }

    /// Leaves the count to the registered job's tickets (each gives one back).
    fn hand_over(mut self) {
        self.partitions = 0;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.partitions > 0 {
            self.pending.fetch_sub(self.partitions, Ordering::AcqRel);
        }
    }
}

/// How often a shared store is asked to forget finished jobs: every daemon of the fleet
/// asks.
const SHARED_FORGET_EVERY: Duration = Duration::from_secs(10);

/// How a registration went.
pub(crate) enum Registered {
    /// A new job, and how long its registration's steps took.
    New(Arc<Job>, RegisterTimes),
    /// The request id names this earlier job.
    Existing(JobId),
}

/// Where a new job's registration spent its time (logged with "job accepted"): waiting for
/// the registration lock, recording the job in the store (its connection's lock
/// included), and waiting for the record to be on disk.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RegisterTimes {
    pub lock_wait: Duration,
    pub record: Duration,
    pub sync: Duration,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl JobTable {
    pub fn new(store: Arc<dyn JobStore>) -> Self {
        Self {
            jobs: Mutex::new(HashMap::new()),
            registering: Mutex::new(()),
            big_writers: WriterSlots::new(BIG_WRITERS),
            pending: Arc::new(AtomicUsize::new(0)),
            finished: Arc::default(),
            store_forgot: Mutex::new(None),
            shared: Arc::clone(&store).shared().is_some(),
            store,
        }
    }

    /// The job `id`.
    pub fn get(&self, id: JobId) -> Result<Arc<Job>, EngineError> {
        lock(&self.jobs)
            .get(&id)
            .cloned()
            .ok_or(EngineError::UnknownJob(id))
    }

    /// The job a request id names if it was recorded from the same request (the same
    /// fingerprint); refused if it was another request. Empty request id: none.
    pub fn by_request(
        &self,
        request_id: &str,
        fingerprint: &Fingerprint,
    ) -> Result<Option<JobId>, EngineError> {
        if request_id.is_empty() {
            return Ok(None);
        }
        match self.store.find_request(request_id).map_err(store_error)? {
            Some((id, fp)) if fp == *fingerprint => Ok(Some(id)),
            Some((id, _)) => Err(EngineError::RequestIdTaken {
                request_id: request_id.into(),
                job: id,
            }),
            None => Ok(None),
        }
    }

    /// Records a job in the store (its witnesses with it) and registers it. Its
    /// partitions are counted in `pending` by `held` (a streamed job's, taken at its
    /// header by [`JobTable::reserve`], of as many partitions) or else here, refused if
    /// more than `max_pending` would be in flight. A registered job's tickets take the
    /// count over; a job not registered gives it back.
    pub fn register(
        &self,
        new: &NewJob<'_>,
        max_pending: usize,
        held: Option<Reservation>,
    ) -> Result<Registered, EngineError> {
        let partitions = new.witnesses.len();
        let t0 = Instant::now();
        let (job, reserved, mark, lock_wait, record) = {
            // A small job without a request id registers without the lock: there is
            // nothing to deduplicate, its partitions are counted by an atomic reservation,
            // and its write is short. Under the lock, 64 clients' 2^14 accepts queued for
            // 16–40 ms behind each other's ~1 ms store writes
            // (lab/experiments/025-daemon-host-path.md).
            let witness_bytes: usize = new.witnesses.iter().map(|w| w.len()).sum();
            let _writing = (witness_bytes >= EXCLUSIVE_BYTES).then(|| self.big_writers.take());
            let _registering = (!new.request_id.is_empty()).then(|| lock(&self.registering));
            let locked = Instant::now();
            if let Some(id) = self.by_request(new.request_id, &new.fingerprint)? {
                return Ok(Registered::Existing(id));
            }
            let reserved = match held {
                Some(h) => h,
                None => self.reserve(partitions, max_pending)?,
            };
            let (accepted, mark) = self.store.accept_unsynced(new).map_err(store_error)?;
            let id = match accepted {
                Accepted::Existing(id) => return Ok(Registered::Existing(id)),
                Accepted::New(id) => id,
            };
            let job = Arc::new(Job::new(
                id,
                new.key_id.to_string(),
                new.priority,
                new.request_id.to_string(),
                partitions,
                Arc::clone(&self.store),
            ));
            job.track_end(&self.finished);
            lock(&self.jobs).insert(id, Arc::clone(&job));
            (job, reserved, mark, locked - t0, locked.elapsed())
        };
        let synced = Instant::now();
        // On disk before the submitter hears of it; outside the lock, so that the accepts
        // queued behind this one record meanwhile and share its sync (group commit). A job
        // whose sync failed is taken back (never queued) and the submitter gets the error.
        if let Err(e) = self.store.make_durable(mark) {
            lock(&self.jobs).remove(&job.id);
            drop(reserved);
            let _ = self
                .store
                .finish(job.id, JobState::Failed, Some(&e.to_string()));
            return Err(store_error(e));
        }
        let times = RegisterTimes {
            lock_wait,
            record,
            sync: synced.elapsed(),
        };
        // The job's tickets, made as it is queued, hold its partitions from now on.
        reserved.hand_over();
        Ok(Registered::New(job, times))
    }

    /// Counts `partitions` more in flight, or refuses if that would pass `max_pending`
    /// (one atomic step, so that concurrent registrations and stream headers cannot both
    /// pass the check); the count is given back when the reservation is dropped.
    pub fn reserve(
        &self,
        partitions: usize,
        max_pending: usize,
    ) -> Result<Reservation, EngineError> {
        self.pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| {
                (p + partitions <= max_pending).then_some(p + partitions)
            })
            .map(|_| Reservation {
                pending: Arc::clone(&self.pending),
                partitions,
            })
            .map_err(|pending| {
                EngineError::Busy(format!(
                    "{pending} partitions pending, at most {max_pending} (pipeline.max_pending_partitions); retry later"
                ))
            })
    }

    /// Registers a job read back from the store (its partitions to run are counted in
    /// `pending` when they are queued).
    pub fn restore(&self, job: Arc<Job>) {
        job.track_end(&self.finished);
        lock(&self.jobs).insert(job.id, job);
    }

    /// Every job without its proofs ([`Job::summary`]), newest first. The table's lock is
    /// held only to copy the handles, not while each job is read.
    pub fn summaries(&self) -> Vec<JobSnapshot> {
        let mut jobs: Vec<JobSnapshot> = self.all().iter().map(|j| j.summary()).collect();
        jobs.sort_by_key(|j| std::cmp::Reverse(j.id));
        jobs
    }

    /// Every job.
    pub fn all(&self) -> Vec<Arc<Job>> {
        lock(&self.jobs).values().cloned().collect()
    }

    /// Forgets finished jobs beyond `retention` (the oldest first), here and in the store
    /// (a shared one at most every [`SHARED_FORGET_EVERY`]); returns how many were
    /// forgotten here.
    pub fn forget_finished(&self, retention: &Retention) -> usize {
        let too_old = Instant::now().checked_sub(retention.time);
        let old = lock(&self.finished).forget(too_old, retention);
        if !old.is_empty() {
            let mut jobs = lock(&self.jobs);
            for (_, id) in &old {
                jobs.remove(id);
            }
        }
        {
            let mut last = lock(&self.store_forgot);
            if self.shared && last.is_some_and(|t| t.elapsed() < SHARED_FORGET_EVERY) {
                return old.len();
            }
            *last = Some(Instant::now());
        }
        if let Err(e) = self.store.forget_finished(retention) {
            tracing::warn!("forgetting finished jobs: {e}");
        }
        old.len()
    }

    /// Partitions accepted and not finished, or reserved by a stream being received.
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }
}

/// A job store failure as the engine reports it.
pub(crate) fn store_error(e: crate::job_store::StoreError) -> EngineError {
    match e {
        crate::job_store::StoreError::RequestIdTaken { request_id, job } => {
            EngineError::RequestIdTaken { request_id, job }
        }
        e => EngineError::Store(Arc::new(e)),
    }
}

#[cfg(test)]
mod tests;
