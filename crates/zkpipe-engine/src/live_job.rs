//! A job in flight: shared by the engine's stages and its waiters, which can watch its
//! state. Every change of its outcome is written to the job store before it is published
//! here, so that what a waiter saw survives a crash.

use crate::job::{JobId, JobSnapshot, JobState, PartitionProof, Priority};
use crate::job_store::retention::{result_bytes, Ledger};
use crate::job_store::{Claim, JobStore, StoreError, StoredJob, StoredPartition};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

struct Inner {
    state: JobState,
    proofs: Vec<Option<PartitionProof>>,
    error: Option<String>,
    finished_at: Option<Instant>,
}

/// See the module doc.
pub(crate) struct Job {
    pub id: JobId,
    pub key_id: String,
    pub priority: Priority,
    pub request_id: String,
    pub submitted: Instant,
    store: Arc<dyn JobStore>,
    cancelled: AtomicBool,
    /// One partition claimed from a fleet's shared store (see [`Job::claimed`]).
    pub claimed: bool,
    /// Left unfinished in a durable store at shutdown, for the next start.
    abandoned: AtomicBool,
    remaining: AtomicUsize,
    inner: Mutex<Inner>,
    cond: Condvar,
    watch: tokio::sync::watch::Sender<JobState>,
    /// The ledger told of the job's end (the job table's, see [`Job::track_end`]).
    ledger: OnceLock<Arc<Mutex<Ledger<Instant>>>>,
}

/// `Instant::now()` moved back by how long ago `t` was (clamped at now).
fn instant_of(t: SystemTime) -> Instant {
    let ago = SystemTime::now().duration_since(t).unwrap_or_default();
    Instant::now().checked_sub(ago).unwrap_or_else(Instant::now)
}

impl Job {
    pub fn new(
        id: JobId,
        key_id: String,
        priority: Priority,
        request_id: String,
        partitions: usize,
        store: Arc<dyn JobStore>,
    ) -> Self {
        Self::with(
            id,
            key_id,
            priority,
            request_id,
            Instant::now(),
            store,
            Inner {
                state: JobState::Queued,
                proofs: vec![None; partitions],
                error: None,
                finished_at: None,
            },
        )
    }

    /// A job read back from the store: finished, or unfinished with the partitions
    /// proved before the restart already in place.
    pub fn recovered(stored: &StoredJob, store: Arc<dyn JobStore>) -> Self {
        let proofs = stored
            .partitions
            .iter()
            .map(|p| match p {
                StoredPartition::Proved(p) => Some(p.clone()),
                _ => None,
            })
            .collect();
        let inner = Inner {
            state: stored.state,
            proofs,
            error: stored.error.clone(),
            finished_at: stored.finished.map(instant_of),
        };
        Self::with(
            stored.id,
            stored.key_id.clone(),
            stored.priority,
            stored.request_id.clone(),
            instant_of(stored.submitted),
            store,
            inner,
        )
    }

    /// One partition of a fleet's job, claimed from the shared store: a job of its own
    /// here, whose one partition to run is `claim.index` (the others run wherever they
    /// were claimed; the store decides when the whole job is done).
    pub fn claimed(claim: &Claim, store: Arc<dyn JobStore>) -> Self {
        let inner = Inner {
            state: JobState::Running,
            proofs: vec![None; claim.partitions],
            error: None,
            finished_at: None,
        };
        let job = Self::with(
            claim.job,
            claim.key_id.clone(),
            claim.priority,
            claim.request_id.clone(),
            instant_of(claim.submitted),
            store,
            inner,
        );
        job.remaining.store(1, Ordering::Release);
        Self {
            claimed: true,
            ..job
        }
    }

    fn with(
        id: JobId,
        key_id: String,
        priority: Priority,
        request_id: String,
        submitted: Instant,
        store: Arc<dyn JobStore>,
        inner: Inner,
    ) -> Self {
        let remaining = inner.proofs.iter().filter(|p| p.is_none()).count();
        let state = inner.state;
        Self {
            id,
            key_id,
            priority,
            request_id,
            submitted,
            store,
            cancelled: AtomicBool::new(state.is_final()),
            claimed: false,
            abandoned: AtomicBool::new(false),
            remaining: AtomicUsize::new(remaining),
            inner: Mutex::new(inner),
            cond: Condvar::new(),
            watch: tokio::sync::watch::channel(state).0,
            ledger: OnceLock::new(),
        }
    }

    /// Enters the job in `ledger` when it ends, or now if it has ended.
    pub fn track_end(&self, ledger: &Arc<Mutex<Ledger<Instant>>>) {
        // Under the job's lock, as `set`, so that an end is entered once.
        let i = self.lock();
        if self.ledger.set(Arc::clone(ledger)).is_ok() {
            self.enter_end(&i);
        }
    }

    fn enter_end(&self, i: &Inner) {
        if let (Some(at), Some(ledger)) = (i.finished_at, self.ledger.get()) {
            let bytes = result_bytes(i.proofs.iter().flatten(), i.error.as_deref());
            let mut l = ledger.lock().unwrap_or_else(|e| e.into_inner());
            l.ended(self.id, at, bytes);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, inner: &mut Inner, state: JobState) {
        inner.state = state;
        if state.is_final() {
            inner.finished_at = Some(Instant::now());
            self.enter_end(inner);
        }
        self.watch.send_replace(state);
        self.cond.notify_all();
    }

    /// Whether stages should drop this job's partitions at their next boundary.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// Marks the job running (first partition admitted).
    pub fn mark_running(&self) {
        let mut i = self.lock();
        if i.state == JobState::Queued {
            self.set(&mut i, JobState::Running);
        }
    }

    /// Records a proved partition, in the store first; returns true when it was the
    /// last one (the job is done). A store failure is returned and nothing changes.
    pub fn partition_done(&self, index: usize, proof: PartitionProof) -> Result<bool, StoreError> {
        let mut i = self.lock();
        if i.state.is_final() || i.proofs.get(index).is_none_or(|p| p.is_some()) {
            return Ok(false);
        }
        // Every change of `remaining` happens under the lock, so this is the last one.
        let last = self.remaining.load(Ordering::Acquire) == 1;
        self.store.partition_done(self.id, index, &proof, last)?;
        i.proofs[index] = Some(proof);
        self.remaining.fetch_sub(1, Ordering::AcqRel);
        if last {
            self.set(&mut i, JobState::Done);
        }
        Ok(last)
    }

    /// Ends the job as `state` in the store, then here. A store failure is logged: the
    /// job still ends here (it would run again after a crash).
    fn end(&self, i: &mut Inner, state: JobState) {
        if let Err(e) = self.store.finish(self.id, state, i.error.as_deref()) {
            tracing::error!(job = self.id, "recording the job as {}: {e}", state.name());
        }
        self.set(i, state);
    }

    /// Fails the job (first failure wins) and cancels its other partitions. An abandoned
    /// job is not failed: its partitions were dropped on purpose (the engine stops, or a
    /// fleet's claim was lost).
    pub fn fail(&self, error: String) -> bool {
        self.cancelled.store(true, Ordering::Release);
        if self.is_abandoned() {
            return false;
        }
        let mut i = self.lock();
        if i.state.is_final() {
            return false;
        }
        i.error = Some(error);
        self.end(&mut i, JobState::Failed);
        true
    }

    /// Cancels the job; `Err(state)` if it had already finished.
    pub fn cancel(&self) -> Result<(), JobState> {
        let mut i = self.lock();
        if i.state.is_final() {
            return Err(i.state);
        }
        self.cancelled.store(true, Ordering::Release);
        self.end(&mut i, JobState::Cancelled);
        Ok(())
    }

    /// Stops working on an unfinished job without ending it (the engine shuts down over a
    /// durable store, which runs it at the next start); wakes its waiters. Returns
    /// whether it was unfinished.
    pub fn abandon(&self) -> bool {
        let i = self.lock();
        if i.state.is_final() {
            return false;
        }
        self.cancelled.store(true, Ordering::Release);
        self.abandoned.store(true, Ordering::Release);
        self.watch.send_replace(i.state);
        self.cond.notify_all();
        true
    }

    /// Whether the engine stopped working on it unfinished (see [`Job::abandon`]).
    pub fn is_abandoned(&self) -> bool {
        self.abandoned.load(Ordering::Acquire)
    }

    /// When it reached a final state.
    pub fn finished_at(&self) -> Option<Instant> {
        self.lock().finished_at
    }

    pub fn snapshot(&self) -> JobSnapshot {
        self.snapshot_with(true)
    }

    /// Its state without its proofs (`proofs` empty), for a listing.
    pub fn summary(&self) -> JobSnapshot {
        self.snapshot_with(false)
    }

    fn snapshot_with(&self, proofs: bool) -> JobSnapshot {
        let i = self.lock();
        let done = i.proofs.iter().filter(|p| p.is_some()).count();
        JobSnapshot {
            id: self.id,
            key_id: self.key_id.clone(),
            priority: self.priority,
            state: i.state,
            partitions: i.proofs.len(),
            partitions_done: done,
            proofs: if proofs && i.state == JobState::Done {
                i.proofs.iter().flatten().cloned().collect()
            } else {
                Vec::new()
            },
            error: i.error.clone(),
            request_id: self.request_id.clone(),
            finished_at: i.finished_at,
        }
    }

    /// Blocks until the job is final or `timeout` passes.
    pub fn wait(&self, timeout: Duration) -> JobSnapshot {
        let i = self.lock();
        drop(
            self.cond
                .wait_timeout_while(i, timeout, |i| !i.state.is_final() && !self.is_abandoned()),
        );
        self.snapshot()
    }

    /// Waits (async) until the job is final or abandoned, or `timeout` passes.
    pub async fn wait_async(&self, timeout: Duration) -> JobSnapshot {
        let mut rx = self.watch.subscribe();
        let _ = tokio::time::timeout(
            timeout,
            rx.wait_for(|s| s.is_final() || self.is_abandoned()),
        )
        .await;
        self.snapshot()
    }
}
