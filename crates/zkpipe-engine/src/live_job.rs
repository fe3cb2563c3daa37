//! A job in flight: shared by the engine's stages and its waiters, which can watch its
//! state. Every change of its outcome is written to the job store before it is published
//! here, so that what a waiter saw survives a crash.

use crate::job::{JobId, JobSnapshot, JobState, PartitionProof, Priority};
use crate::job_store::retention::{result_bytes, Ledger};
use crate::job_store::{Claim, JobStore, ProvedPartition, StoreError, StoredJob, StoredPartition};
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
        self.proved(&mut i, index, proof, last);
        Ok(last)
    }

    /// Publishes a partition's proof the store recorded (with the job's lock held).
    fn proved(&self, i: &mut Inner, index: usize, proof: PartitionProof, last: bool) {
        i.proofs[index] = Some(proof);
        self.remaining.fetch_sub(1, Ordering::AcqRel);
        if last {
            self.set(i, JobState::Done);
        }
    }

    /// Records proved partitions of one or more jobs with one store call, which commits
    /// and syncs them together where the store can (a tail batch's results cost one
    /// transaction, not one each): per partition, what [`Job::partition_done`] returns.
    /// Partitions the store did not get to (after one failed) are recorded one by one.
    pub fn partitions_done(
        done: Vec<(Arc<Job>, usize, PartitionProof)>,
    ) -> Vec<Result<bool, StoreError>> {
        let Some(store) = done.first().map(|d| Arc::clone(&d.0.store)) else {
            return Vec::new();
        };
        let same_store = done
            .iter()
            .all(|d| std::ptr::addr_eq(Arc::as_ptr(&d.0.store), Arc::as_ptr(&store)));
        if done.len() == 1 || !same_store {
            return done
                .into_iter()
                .map(|(job, index, proof)| job.partition_done(index, proof))
                .collect();
        }
        let n = done.len();
        let mut owners = Vec::with_capacity(n);
        let mut indexes = Vec::with_capacity(n);
        let mut proofs = Vec::with_capacity(n);
        for (job, index, proof) in done {
            owners.push(job);
            indexes.push(index);
            proofs.push(proof);
        }
        // Every job's lock, taken in one order (a fleet's claimed partitions of one job
        // are jobs of their own, hence the address) so that two deliverers never wait
        // for each other; `slots[k]`: partition k's job among them.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&k| (owners[k].id, Arc::as_ptr(&owners[k]) as usize));
        let mut jobs: Vec<&Job> = Vec::new();
        let mut slots = vec![0; n];
        for k in order {
            if jobs.last().is_none_or(|j| !std::ptr::eq(*j, &*owners[k])) {
                jobs.push(&owners[k]);
            }
            slots[k] = jobs.len() - 1;
        }
        let mut guards: Vec<_> = jobs.iter().map(|j| j.lock()).collect();
        // What to record, each `last` as if recorded one after another; a partition
        // already proved (or twice in the batch), or of an ended job, is not.
        let mut out: Vec<Option<Result<bool, StoreError>>> = (0..n).map(|_| None).collect();
        let mut taken = vec![0usize; jobs.len()];
        let mut chosen: Vec<usize> = Vec::new();
        let mut records = Vec::new();
        for k in 0..n {
            let (s, index) = (slots[k], indexes[k]);
            let i = &guards[s];
            let twice = chosen.iter().any(|&c| slots[c] == s && indexes[c] == index);
            if i.state.is_final() || i.proofs.get(index).is_none_or(|p| p.is_some()) || twice {
                out[k] = Some(Ok(false));
                continue;
            }
            // Every change of `remaining` happens under the locks held here.
            let remaining = owners[k].remaining.load(Ordering::Acquire) - taken[s];
            taken[s] += 1;
            chosen.push(k);
            records.push(ProvedPartition {
                job: owners[k].id,
                index,
                proof: &proofs[k],
                last: remaining == 1,
            });
        }
        let recorded = match store.partitions_done(&records) {
            Ok(()) => records.len(),
            Err((failed, e)) => {
                // The store names one of the partitions it was given (past the end: the
                // last), so that no error is lost.
                let failed = failed.min(chosen.len().saturating_sub(1));
                if let Some(&k) = chosen.get(failed) {
                    out[k] = Some(Err(e));
                }
                failed
            }
        };
        let lasts: Vec<bool> = records.iter().map(|r| r.last).collect();
        drop(records);
        for (&k, last) in chosen.iter().zip(lasts).take(recorded) {
            let proof = std::mem::take(&mut proofs[k]);
            owners[k].proved(&mut guards[slots[k]], indexes[k], proof, last);
            out[k] = Some(Ok(last));
        }
        drop(guards);
        // After a failure, the rest one by one: the failed partition still counts as
        // remaining, so none of them ends its job by mistake.
        out.into_iter()
            .zip(proofs)
            .enumerate()
            .map(|(k, (o, proof))| match o {
                Some(o) => o,
                None => owners[k].partition_done(indexes[k], proof),
            })
            .collect()
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
    use crate::job_store::{Accepted, Fingerprint, NewJob, Retention};

    /// Keeps every record it is handed, call by call; fails one partition's.
    #[derive(Default)]
    struct Calls {
        calls: Mutex<Vec<Vec<(JobId, usize, bool)>>>,
        fail: Option<(JobId, usize)>,
    }

    impl Calls {
        fn record(&self, d: &ProvedPartition<'_>) -> Result<(), StoreError> {
            if self.fail == Some((d.job, d.index)) {
                return Err(StoreError::Database {
                    path: "test".into(),
                    message: format!("job {} cannot be written", d.job),
                });
            }
            let mut calls = self.calls.lock().unwrap();
            calls.last_mut().unwrap().push((d.job, d.index, d.last));
            Ok(())
        }
    }

    impl JobStore for Calls {
        fn durable(&self) -> bool {
            true
        }
        fn accept(&self, _job: &NewJob<'_>) -> Result<Accepted, StoreError> {
            unreachable!("the tests make their jobs")
        }
        fn find_request(&self, _r: &str) -> Result<Option<(JobId, Fingerprint)>, StoreError> {
            Ok(None)
        }
        fn partition_done(
            &self,
            job: JobId,
            index: usize,
            proof: &PartitionProof,
            last: bool,
        ) -> Result<(), StoreError> {
            self.calls.lock().unwrap().push(Vec::new());
            self.record(&ProvedPartition {
                job,
                index,
                proof,
                last,
            })
        }
        /// Records in order up to the failing one, as a store that cannot commit them
        /// together would.
        fn partitions_done(&self, done: &[ProvedPartition<'_>]) -> Result<(), (usize, StoreError)> {
            self.calls.lock().unwrap().push(Vec::new());
            for (n, d) in done.iter().enumerate() {
                self.record(d).map_err(|e| (n, e))?;
            }
            Ok(())
        }
        fn finish(&self, _job: JobId, _s: JobState, _e: Option<&str>) -> Result<(), StoreError> {
            Ok(())
        }
        fn recover(&self) -> Result<Vec<StoredJob>, StoreError> {
            Ok(Vec::new())
        }
        fn forget_finished(&self, _r: &Retention) -> Result<usize, StoreError> {
            Ok(0)
        }
    }

    fn job(id: JobId, partitions: usize, store: &Arc<Calls>) -> Arc<Job> {
        let store: Arc<dyn JobStore> = Arc::clone(store) as Arc<dyn JobStore>;
        Arc::new(Job::new(
            id,
            "k".into(),
            Priority::Normal,
            String::new(),
            partitions,
            store,
        ))
    }

    fn proved(job: &Arc<Job>, index: usize) -> (Arc<Job>, usize, PartitionProof) {
        let proof = PartitionProof {
            proof_json: format!("{} {index}", job.id),
            public_json: "[]".into(),
            timings: Default::default(),
        };
        (Arc::clone(job), index, proof)
    }

    fn outcomes(r: Vec<Result<bool, StoreError>>) -> Vec<Result<bool, String>> {
        r.into_iter()
            .map(|o| o.map_err(|e| e.to_string()))
            .collect()
    }

    /// A batch of proofs of two jobs is one store call; each job's last partition in it
    /// ends the job (as if recorded one after another), and a partition delivered twice
    /// is recorded once.
    #[test]
    fn a_batch_is_one_store_call_that_ends_each_job_at_its_last_partition() {
        let store = Arc::new(Calls::default());
        let (a, b) = (job(1, 3, &store), job(2, 1, &store));
        let batch = vec![
            proved(&a, 0),
            proved(&b, 0),
            proved(&a, 2),
            proved(&a, 0),
            proved(&a, 1),
        ];
        let got = outcomes(Job::partitions_done(batch));
        assert_eq!(got, [Ok(false), Ok(true), Ok(false), Ok(false), Ok(true)]);
        let calls = store.calls.lock().unwrap().clone();
        assert_eq!(
            calls,
            [vec![
                (1, 0, false),
                (2, 0, true),
                (1, 2, false),
                (1, 1, true)
            ]]
        );
        for j in [&a, &b] {
            let s = j.snapshot();
            assert_eq!((s.state, s.partitions_done), (JobState::Done, s.partitions));
        }
    }

    /// When the store fails a partition, those before it are recorded, it is the one
    /// that fails, and those after it are recorded one by one; the failed job's later
    /// partition does not end it (its failed partition still counts).
    #[test]
    fn after_a_failed_proof_the_rest_are_recorded_one_by_one() {
        let store = Arc::new(Calls {
            fail: Some((1, 0)),
            ..Calls::default()
        });
        let (a, b, c) = (job(1, 2, &store), job(2, 1, &store), job(3, 1, &store));
        let got = outcomes(Job::partitions_done(vec![
            proved(&c, 0),
            proved(&a, 0),
            proved(&b, 0),
            proved(&a, 1),
        ]));
        assert_eq!(got[0], Ok(true));
        assert!(matches!(&got[1], Err(e) if e.contains("job 1 cannot be written")));
        assert_eq!(got[2..], [Ok(true), Ok(false)]);
        let calls = store.calls.lock().unwrap().clone();
        assert_eq!(
            calls,
            [vec![(3, 0, true)], vec![(2, 0, true)], vec![(1, 1, false)]]
        );
        assert_eq!(b.snapshot().state, JobState::Done);
        assert_eq!(c.snapshot().state, JobState::Done);
        let s = a.snapshot();
        assert_eq!((s.state, s.partitions_done), (JobState::Queued, 1));
    }
}
