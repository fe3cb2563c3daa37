//! The jobs the engine knows: active ones and finished ones kept for their retention
//! time, with the request ids that name them and the count of partitions in flight.

use crate::error::EngineError;
use crate::job::{Job, JobId, JobSnapshot, Priority};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The table (see the module doc).
pub(crate) struct JobTable {
    jobs: Mutex<HashMap<JobId, Arc<Job>>>,
    requests: Mutex<HashMap<String, JobId>>,
    next: AtomicU64,
    /// Partitions accepted and not finished (each message's ticket holds one).
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
    pub fn new() -> Self {
        Self {
            jobs: Mutex::new(HashMap::new()),
            requests: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
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

    /// The job a request id names, if any (empty: none).
    pub fn by_request(&self, request_id: &str) -> Option<JobId> {
        if request_id.is_empty() {
            return None;
        }
        lock(&self.requests).get(request_id).copied()
    }

    /// Registers a job of `partitions` for `key_id`, atomically with respect to other
    /// registrations of the same request id; refused if more than `max_pending`
    /// partitions would be in flight.
    pub fn register(
        &self,
        key_id: &str,
        priority: Priority,
        request_id: &str,
        partitions: usize,
        max_pending: usize,
    ) -> Result<Registered, EngineError> {
        let mut requests = lock(&self.requests);
        if let Some(&id) = (!request_id.is_empty())
            .then(|| requests.get(request_id))
            .flatten()
        {
            return Ok(Registered::Existing(id));
        }
        let pending = self.pending.load(Ordering::Acquire);
        if pending + partitions > max_pending {
            return Err(EngineError::Busy(format!(
                "{pending} partitions pending, at most {max_pending} (max_pending_partitions)"
            )));
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let job = Arc::new(Job::new(
            id,
            key_id.to_string(),
            priority,
            request_id.to_string(),
            partitions,
        ));
        lock(&self.jobs).insert(id, Arc::clone(&job));
        if !request_id.is_empty() {
            requests.insert(request_id.to_string(), id);
        }
        self.pending.fetch_add(partitions, Ordering::AcqRel);
        Ok(Registered::New(job))
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

    /// Forgets jobs finished longer than `retention` ago, and their request ids.
    pub fn forget_finished(&self, retention: Duration) {
        let mut forgotten = Vec::new();
        lock(&self.jobs).retain(|_, j| {
            let keep = j.finished_at().is_none_or(|t| t.elapsed() < retention);
            if !keep {
                forgotten.push(j.request_id.clone());
            }
            keep
        });
        if !forgotten.is_empty() {
            let mut r = lock(&self.requests);
            for id in forgotten {
                r.remove(&id);
            }
        }
    }

    /// Partitions accepted and not finished.
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }
}
