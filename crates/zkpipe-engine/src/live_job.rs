//! A job in flight: shared by the engine's stages and its waiters, which can watch its
//! state. Every change of its outcome is written to the job store before it is published
//! here, so that what a waiter saw survives a crash.

use crate::job::{JobId, JobSnapshot, JobState, PartitionProof, Priority};
use crate::job_store::retention::{result_bytes, Ledger};
use crate::job_store::{Claim, DonePartition, JobStore, StoreError, StoredJob, StoredPartition};
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
    #[cfg(test)]
    pub fn partition_done(&self, index: usize, proof: PartitionProof) -> Result<bool, StoreError> {
        let mut out = Self::partitions_done(vec![(self, index, proof)]);
        out.pop().unwrap_or(Ok(false))
    }

    /// Records proved partitions of any jobs (a tail batch's), each as one would alone:
    /// in the store first, under its job's lock; each returns true when it was its job's
    /// last. Those whose jobs share a store are recorded with one
    /// [`JobStore::partitions_done`] (one transaction, one sync), one partition per job a
    /// call so that a call knows which is a job's last. Outcomes in order.
    pub fn partitions_done(
        done: Vec<(&Job, usize, PartitionProof)>,
    ) -> Vec<Result<bool, StoreError>> {
        let mut out: Vec<Option<Result<bool, StoreError>>> = done.iter().map(|_| None).collect();
        let (jobs, mut proofs): (Vec<(&Job, usize)>, Vec<Option<PartitionProof>>) = done
            .into_iter()
            .map(|(job, index, proof)| ((job, index), Some(proof)))
            .unzip();
        let mut left: Vec<usize> = (0..jobs.len()).collect();
        while let Some(&first) = left.first() {
            let store = &jobs[first].0.store;
            let (mut call, mut rest) = (Vec::new(), Vec::new());
            for i in left {
                let job = jobs[i].0;
                let taken = call.iter().any(|&c: &usize| std::ptr::eq(jobs[c].0, job));
                if Arc::ptr_eq(&job.store, store) && !taken {
                    call.push(i);
                } else {
                    rest.push(i);
                }
            }
            Self::record_together(&jobs, &call, &mut proofs, &mut out);
            left = rest;
        }
        out.into_iter().map(|o| o.unwrap_or(Ok(false))).collect()
    }

    /// One store call for partitions `call` of `jobs` (distinct jobs of one store), every
    /// job's lock held across it (taken in address order, so two batches never wait on
    /// each other); fills their `out`.
    fn record_together(
        jobs: &[(&Job, usize)],
        call: &[usize],
        proofs: &mut [Option<PartitionProof>],
        out: &mut [Option<Result<bool, StoreError>>],
    ) {
        let Some(store) = call.first().map(|&i| Arc::clone(&jobs[i].0.store)) else {
            return;
        };
        let mut order = call.to_vec();
        order.sort_by_key(|&i| jobs[i].0 as *const Job as usize);
        let mut guards: Vec<(usize, std::sync::MutexGuard<'_, Inner>)> =
            order.iter().map(|&i| (i, jobs[i].0.lock())).collect();
        // Recorded in the batch's order.
        guards.sort_by_key(|(i, _)| *i);
        // (guard, whether the job's last) of each partition to record.
        let mut todo = Vec::new();
        let mut items = Vec::new();
        for (g, (i, inner)) in guards.iter().enumerate() {
            let (job, index) = jobs[*i];
            let proof = match &proofs[*i] {
                Some(p)
                    if !inner.state.is_final() && matches!(inner.proofs.get(index), Some(None)) =>
                {
                    p
                }
                _ => {
                    out[*i] = Some(Ok(false));
                    continue;
                }
            };
            // Every change of `remaining` happens under the lock, so this is the last one.
            let last = job.remaining.load(Ordering::Acquire) == 1;
            todo.push((g, last));
            items.push(DonePartition {
                job: job.id,
                index,
                proof,
                last,
            });
        }
        let mut results = store.partitions_done(&items).into_iter();
        drop(items);
        for (g, last) in todo {
            let (i, inner) = &mut guards[g];
            let (job, index) = jobs[*i];
            let r = results.next().unwrap_or_else(|| {
                Err(StoreError::Config(
                    "the store returned fewer outcomes than records".into(),
                ))
            });
            out[*i] = Some(r.map(|()| {
                inner.proofs[index] = proofs[*i].take();
                job.remaining.fetch_sub(1, Ordering::AcqRel);
                if last {
                    job.set(inner, JobState::Done);
                }
                last
            }));
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::ProofTimings;
    use crate::job_store::{Accepted, Fingerprint, NewJob, Retention};

    /// Records each batch it is given; refuses job 2's proofs.
    #[derive(Default)]
    struct Batches(Mutex<Vec<Vec<(JobId, usize, bool)>>>);

    impl JobStore for Batches {
        fn durable(&self) -> bool {
            true
        }
        fn accept(&self, _job: &NewJob<'_>) -> Result<Accepted, StoreError> {
            Ok(Accepted::New(1))
        }
        fn find_request(&self, _r: &str) -> Result<Option<(JobId, Fingerprint)>, StoreError> {
            Ok(None)
        }
        fn partition_done(
            &self,
            job: JobId,
            _index: usize,
            _proof: &PartitionProof,
            _last: bool,
        ) -> Result<(), StoreError> {
            match job {
                2 => Err(StoreError::Config("refused".into())),
                _ => Ok(()),
            }
        }
        fn partitions_done(&self, done: &[DonePartition<'_>]) -> Vec<Result<(), StoreError>> {
            let batch = done.iter().map(|d| (d.job, d.index, d.last)).collect();
            self.0.lock().unwrap().push(batch);
            done.iter()
                .map(|d| self.partition_done(d.job, d.index, d.proof, d.last))
                .collect()
        }
        fn finish(&self, _j: JobId, _s: JobState, _e: Option<&str>) -> Result<(), StoreError> {
            Ok(())
        }
        fn recover(&self) -> Result<Vec<StoredJob>, StoreError> {
            Ok(Vec::new())
        }
        fn forget_finished(&self, _retention: &Retention) -> Result<usize, StoreError> {
            Ok(0)
        }
    }

    fn proof() -> PartitionProof {
        PartitionProof {
            proof_json: "p".into(),
            public_json: "[]".into(),
            timings: ProofTimings::default(),
        }
    }

    /// A batch with both partitions of job 1 records them in two store calls (so the
    /// second knows it is the last), ends job 1 once; job 2's refused record fails alone,
    /// at its place, and leaves job 2 as it was; job 3 is done.
    #[test]
    fn a_batch_records_each_job_once_per_call_and_a_refused_record_fails_alone() {
        let store = Arc::new(Batches::default());
        let dyn_store: Arc<dyn JobStore> = store.clone();
        let job = |id, parts| {
            Job::new(
                id,
                "k".into(),
                Priority::Normal,
                String::new(),
                parts,
                Arc::clone(&dyn_store),
            )
        };
        let (a, b, c) = (job(1, 2), job(2, 1), job(3, 1));
        let out = Job::partitions_done(vec![
            (&a, 0, proof()),
            (&b, 0, proof()),
            (&a, 1, proof()),
            (&c, 0, proof()),
            (&c, 0, proof()),
        ]);
        let ok: Vec<Option<bool>> = out.iter().map(|r| r.as_ref().ok().copied()).collect();
        assert_eq!(ok, [Some(false), None, Some(true), Some(true), Some(false)]);
        assert!(matches!(&out[1], Err(StoreError::Config(m)) if m == "refused"));
        let batches = store.0.lock().unwrap().clone();
        assert_eq!(
            batches,
            [
                vec![(1, 0, false), (2, 0, true), (3, 0, true)],
                vec![(1, 1, true)]
            ]
        );
        let (sa, sb, sc) = (a.snapshot(), b.snapshot(), c.snapshot());
        assert_eq!((sa.state, sa.partitions_done), (JobState::Done, 2));
        assert_eq!((sb.state, sb.partitions_done), (JobState::Queued, 0));
        assert_eq!((sc.state, sc.partitions_done), (JobState::Done, 1));
    }
}
