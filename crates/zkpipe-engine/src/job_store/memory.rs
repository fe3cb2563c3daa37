//! The volatile job store: ids and request ids for one process's lifetime, nothing kept
//! across a restart. For the engine embedded in a program, benchmarks and tests.

use super::{Accepted, Fingerprint, JobStore, NewJob, StoreError, StoredJob};
use crate::job::{JobId, JobState, PartitionProof};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// See the module doc.
#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    last_id: JobId,
    requests: HashMap<String, (JobId, Fingerprint)>,
    /// The request id of each job that has one.
    request_of: HashMap<JobId, String>,
    /// Request ids of finished jobs, to forget them after the retention time.
    finished: HashMap<JobId, (Instant, String)>,
}

impl MemoryStore {
    /// An empty store; the first job is 1.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn ended(&self, job: JobId) {
        let mut i = self.lock();
        let request = i.request_of.remove(&job).unwrap_or_default();
        i.finished.insert(job, (Instant::now(), request));
    }
}

impl JobStore for MemoryStore {
    fn durable(&self) -> bool {
        false
    }

    fn accept(&self, job: &NewJob<'_>) -> Result<Accepted, StoreError> {
        let mut i = self.lock();
        if !job.request_id.is_empty() {
            if let Some(&(id, fp)) = i.requests.get(job.request_id) {
                return if fp == job.fingerprint {
                    Ok(Accepted::Existing(id))
                } else {
                    Err(StoreError::RequestIdTaken {
                        request_id: job.request_id.into(),
                        job: id,
                    })
                };
            }
        }
        i.last_id += 1;
        let id = i.last_id;
        if !job.request_id.is_empty() {
            i.requests
                .insert(job.request_id.into(), (id, job.fingerprint));
            i.request_of.insert(id, job.request_id.into());
        }
        Ok(Accepted::New(id))
    }

    fn find_request(&self, request_id: &str) -> Result<Option<(JobId, Fingerprint)>, StoreError> {
        Ok(self.lock().requests.get(request_id).copied())
    }

    fn partition_done(
        &self,
        job: JobId,
        _index: usize,
        _proof: &PartitionProof,
        last: bool,
    ) -> Result<(), StoreError> {
        if last {
            self.ended(job);
        }
        Ok(())
    }

    fn finish(&self, job: JobId, _state: JobState, _error: Option<&str>) -> Result<(), StoreError> {
        self.ended(job);
        Ok(())
    }

    fn recover(&self) -> Result<Vec<StoredJob>, StoreError> {
        Ok(Vec::new())
    }

    fn forget_finished(&self, retention: Duration) -> Result<usize, StoreError> {
        let mut i = self.lock();
        let old: Vec<(JobId, String)> = i
            .finished
            .iter()
            .filter(|(_, (at, _))| at.elapsed() >= retention)
            .map(|(&id, (_, r))| (id, r.clone()))
            .collect();
        for (id, request) in &old {
            i.finished.remove(id);
            i.requests.remove(request);
        }
        Ok(old.len())
    }
}
