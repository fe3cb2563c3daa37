//! The volatile job store: ids and request ids for one process's lifetime, nothing kept
//! across a restart. For the engine embedded in a program, benchmarks and tests.

use super::retention::{result_bytes, Ledger, Retention};
use super::{Accepted, Fingerprint, JobStore, NewJob, StoreError, StoredJob};
use crate::job::{JobId, JobState, PartitionProof};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

/// See the module doc.
#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    last_id: JobId,
    requests: HashMap<String, (JobId, Fingerprint)>,
    /// The request id of each job that has one, until it is forgotten.
    request_of: HashMap<JobId, String>,
    /// The bytes of each unfinished job's proofs so far (its size once it ends).
    bytes: HashMap<JobId, u64>,
    /// Finished jobs, to forget their request ids within the retention's bounds.
    finished: Ledger<Instant>,
}

impl MemoryStore {
    /// An empty store; the first job is 1.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn ended(&self, job: JobId, error: Option<&str>) {
        let mut i = self.lock();
        let bytes = i.bytes.remove(&job).unwrap_or(0) + result_bytes([], error);
        i.finished.ended(job, Instant::now(), bytes);
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
        proof: &PartitionProof,
        last: bool,
    ) -> Result<(), StoreError> {
        *self.lock().bytes.entry(job).or_default() += result_bytes([proof], None);
        if last {
            self.ended(job, None);
        }
        Ok(())
    }

    fn finish(&self, job: JobId, _state: JobState, error: Option<&str>) -> Result<(), StoreError> {
        self.ended(job, error);
        Ok(())
    }

    fn recover(&self) -> Result<Vec<StoredJob>, StoreError> {
        Ok(Vec::new())
    }

    fn forget_finished(&self, retention: &Retention) -> Result<usize, StoreError> {
        let mut i = self.lock();
        let too_old = Instant::now().checked_sub(retention.time);
        let old = i.finished.forget(too_old, retention);
        for (_, id) in &old {
            if let Some(request) = i.request_of.remove(id) {
                i.requests.remove(&request);
            }
        }
        Ok(old.len())
    }
}
