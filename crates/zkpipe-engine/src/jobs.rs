//! The jobs the engine knows: active ones and finished ones kept for their retention
//! time, and the count of partitions in flight. The job store behind it gives the ids
//! and remembers the request ids.

use crate::error::EngineError;
use crate::job::{JobId, JobSnapshot};
use crate::job_store::{Accepted, Fingerprint, JobStore, NewJob};
use crate::live_job::Job;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The table (see the module doc).
pub(crate) struct JobTable {
    jobs: Mutex<HashMap<JobId, Arc<Job>>>,
    pub store: Arc<dyn JobStore>,
    /// Partitions accepted and not finished (each message's ticket holds one), plus
    /// those of registrations under way.
    pub pending: Arc<AtomicUsize>,
}

/// How a registration went.
pub(crate) enum Registered {
    /// A new job.
    New(Arc<Job>),
    /// The request id names this earlier job.
    Existing(JobId),
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl JobTable {
    pub fn new(store: Arc<dyn JobStore>) -> Self {
        Self {
            jobs: Mutex::new(HashMap::new()),
            store,
            pending: Arc::new(AtomicUsize::new(0)),
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

    /// Records a job in the store (its witnesses with it) and registers it; refused if
    /// more than `max_pending` partitions would be in flight.
    ///
    /// No lock is held while the store writes: a job's partitions are reserved in
    /// `pending` first (so concurrent registrations never pass `max_pending` together),
    /// and the store itself settles two submissions of one request id. Big submissions
    /// are therefore accepted side by side, not one after another's fsync.
    pub fn register(
        &self,
        new: &NewJob<'_>,
        max_pending: usize,
    ) -> Result<Registered, EngineError> {
        let partitions = new.witnesses.len();
        if let Some(id) = self.by_request(new.request_id, &new.fingerprint)? {
            return Ok(Registered::Existing(id));
        }
        self.pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| {
                (p + partitions <= max_pending).then_some(p + partitions)
            })
            .map_err(|pending| {
                EngineError::Busy(format!(
                    "{pending} partitions pending, at most {max_pending} (max_pending_partitions)"
                ))
            })?;
        let unreserve = || self.pending.fetch_sub(partitions, Ordering::AcqRel);
        let id = match self.store.accept(new) {
            Ok(Accepted::New(id)) => id,
            Ok(Accepted::Existing(id)) => {
                unreserve();
                return Ok(Registered::Existing(id));
            }
            Err(e) => {
                unreserve();
                return Err(store_error(e));
            }
        };
        let job = Arc::new(Job::new(
            id,
            new.key_id.to_string(),
            new.priority,
            new.request_id.to_string(),
            partitions,
            Arc::clone(&self.store),
        ));
        lock(&self.jobs).insert(id, Arc::clone(&job));
        Ok(Registered::New(job))
    }

    /// Registers a job read back from the store (its partitions to run are counted in
    /// `pending` when they are queued).
    pub fn restore(&self, job: Arc<Job>) {
        lock(&self.jobs).insert(job.id, job);
    }

    /// Every job, newest first.
    pub fn snapshots(&self) -> Vec<JobSnapshot> {
        let mut jobs: Vec<JobSnapshot> = lock(&self.jobs).values().map(|j| j.snapshot()).collect();
        jobs.sort_by_key(|j| std::cmp::Reverse(j.id));
        jobs
    }

    /// Every job.
    pub fn all(&self) -> Vec<Arc<Job>> {
        lock(&self.jobs).values().cloned().collect()
    }

    /// Forgets jobs finished longer than `retention` ago, here and in the store.
    pub fn forget_finished(&self, retention: Duration) {
        lock(&self.jobs).retain(|_, j| j.finished_at().is_none_or(|t| t.elapsed() < retention));
        if let Err(e) = self.store.forget_finished(retention) {
            tracing::warn!("forgetting finished jobs: {e}");
        }
    }

    /// Partitions accepted and not finished.
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
mod tests {
    use super::*;
    use crate::job::{JobState, PartitionProof, Priority};
    use crate::job_store::{MemoryStore, StoreError, StoredJob};
    use std::sync::Condvar;
    use std::time::Instant;

    /// A store whose `accept` waits (up to 10 s) until a second caller is inside it too,
    /// so it records how many registrations ever reach it at once.
    struct Overlapping {
        inner: MemoryStore,
        inside: Mutex<(usize, usize)>, // (now, most)
        arrived: Condvar,
    }

    impl JobStore for Overlapping {
        fn durable(&self) -> bool {
            false
        }
        fn accept(&self, job: &NewJob<'_>) -> Result<Accepted, StoreError> {
            let deadline = Instant::now() + Duration::from_secs(10);
            let mut g = lock(&self.inside);
            g.0 += 1;
            g.1 = g.1.max(g.0);
            self.arrived.notify_all();
            while g.1 < 2 && Instant::now() < deadline {
                g = self
                    .arrived
                    .wait_timeout(g, Duration::from_millis(50))
                    .unwrap()
                    .0;
            }
            g.0 -= 1;
            drop(g);
            self.inner.accept(job)
        }
        fn find_request(&self, r: &str) -> Result<Option<(JobId, Fingerprint)>, StoreError> {
            self.inner.find_request(r)
        }
        fn partition_done(
            &self,
            job: JobId,
            index: usize,
            proof: &PartitionProof,
            last: bool,
        ) -> Result<(), StoreError> {
            self.inner.partition_done(job, index, proof, last)
        }
        fn finish(
            &self,
            job: JobId,
            state: JobState,
            error: Option<&str>,
        ) -> Result<(), StoreError> {
            self.inner.finish(job, state, error)
        }
        fn recover(&self) -> Result<Vec<StoredJob>, StoreError> {
            self.inner.recover()
        }
        fn forget_finished(&self, retention: Duration) -> Result<usize, StoreError> {
            self.inner.forget_finished(retention)
        }
    }

    fn overlapping() -> Overlapping {
        Overlapping {
            inner: MemoryStore::new(),
            inside: Mutex::new((0, 0)),
            arrived: Condvar::new(),
        }
    }

    #[test]
    fn registrations_reach_the_store_together_and_never_pass_max_pending() {
        let store = Arc::new(overlapping());
        let table = JobTable::new(Arc::clone(&store) as Arc<dyn JobStore>);
        let witness = [0u8; 8];
        let outcomes: Vec<Result<Registered, EngineError>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        let new = NewJob {
                            key_id: "k",
                            priority: Priority::Normal,
                            request_id: "",
                            fingerprint: Fingerprint::default(),
                            witnesses: vec![&witness[..]],
                        };
                        table.register(&new, 3)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let accepted = outcomes
            .iter()
            .filter(|o| matches!(o, Ok(Registered::New(_))))
            .count();
        let busy = outcomes
            .iter()
            .filter(|o| matches!(o, Err(EngineError::Busy(_))))
            .count();
        assert_eq!((accepted, busy), (3, 5));
        assert_eq!(table.pending(), 3);
        assert_eq!(table.all().len(), 3);
        assert!(
            lock(&store.inside).1 >= 2,
            "registrations reached the store one at a time"
        );
    }

    #[test]
    fn a_repeated_request_gives_its_reservation_back() {
        // Two submissions of one request id at once: both pass the early lookup, the
        // store records one, and the other's reserved partitions are given back.
        let table = JobTable::new(Arc::new(overlapping()) as Arc<dyn JobStore>);
        let witness = [0u8; 8];
        let new = NewJob {
            key_id: "k",
            priority: Priority::Normal,
            request_id: "r1",
            fingerprint: [1; 32],
            witnesses: vec![&witness[..], &witness[..]],
        };
        let outcomes: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..2)
                .map(|_| s.spawn(|| table.register(&new, 4)))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let new_ids: Vec<JobId> = outcomes
            .iter()
            .filter_map(|o| match o {
                Ok(Registered::New(j)) => Some(j.id),
                _ => None,
            })
            .collect();
        let existing: Vec<JobId> = outcomes
            .iter()
            .filter_map(|o| match o {
                Ok(Registered::Existing(id)) => Some(*id),
                _ => None,
            })
            .collect();
        assert_eq!(new_ids.len(), 1);
        assert_eq!(existing, new_ids);
        assert_eq!(table.pending(), 2);
        // Another request under the same id is refused and reserves nothing.
        let other = NewJob {
            fingerprint: [2; 32],
            ..new
        };
        assert!(matches!(
            table.register(&other, 4),
            Err(EngineError::RequestIdTaken { .. })
        ));
        assert_eq!(table.pending(), 2);
    }
}
