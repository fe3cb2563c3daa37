use super::*;
use crate::job::{PartitionProof, Priority};
use crate::job_store::{StoreError, StoredJob};
use std::time::SystemTime;

/// Big registrations write [`BIG_WRITERS`] at a time: a third waits until one of two
/// holders gives its slot back, then goes on.
#[test]
fn big_writers_take_turns_two_at_a_time() {
    let slots = WriterSlots::new(2);
    let (a, b) = (slots.take(), slots.take());
    std::thread::scope(|s| {
        let third = s.spawn(|| {
            let c = slots.take();
            let taken = *lock(&slots.taken);
            drop(c);
            taken
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(!third.is_finished(), "a third writer got in beside two");
        drop(a);
        assert_eq!(third.join().unwrap(), 2, "the freed slot went to the third");
    });
    drop(b);
    assert_eq!(*lock(&slots.taken), 0);
}

/// A store that records what a durable store would (each job's id and state) and
/// reads it back, so that the table's records can be checked without a database.
#[derive(Default)]
struct Recorded(Mutex<Vec<JobState>>);

impl JobStore for Recorded {
    fn durable(&self) -> bool {
        true
    }
    fn accept(&self, _job: &NewJob<'_>) -> Result<Accepted, StoreError> {
        let mut jobs = self.0.lock().unwrap();
        jobs.push(JobState::Queued);
        Ok(Accepted::New(jobs.len() as JobId))
    }
    fn find_request(&self, _r: &str) -> Result<Option<(JobId, Fingerprint)>, StoreError> {
        Ok(None)
    }
    fn partition_done(
        &self,
        job: JobId,
        _index: usize,
        _proof: &PartitionProof,
        last: bool,
    ) -> Result<(), StoreError> {
        if last {
            self.finish(job, JobState::Done, None)?;
        }
        Ok(())
    }
    fn finish(&self, job: JobId, state: JobState, _error: Option<&str>) -> Result<(), StoreError> {
        if let Some(s) = self.0.lock().unwrap().get_mut(job as usize - 1) {
            *s = state;
        }
        Ok(())
    }
    fn recover(&self) -> Result<Vec<StoredJob>, StoreError> {
        let jobs = self.0.lock().unwrap();
        Ok(jobs
            .iter()
            .enumerate()
            .map(|(i, &state)| StoredJob {
                id: i as JobId + 1,
                key_id: "k".into(),
                priority: Priority::Normal,
                request_id: String::new(),
                state,
                error: None,
                submitted: SystemTime::UNIX_EPOCH,
                finished: None,
                partitions: Vec::new(),
            })
            .collect())
    }
    fn forget_finished(&self, _retention: &Retention) -> Result<usize, StoreError> {
        Ok(0)
    }
}

/// A store whose records never become durable: every sync fails.
struct NoSync(Recorded);

impl JobStore for NoSync {
    fn durable(&self) -> bool {
        true
    }
    fn accept(&self, job: &NewJob<'_>) -> Result<Accepted, StoreError> {
        self.0.accept(job)
    }
    fn make_durable(&self, _mark: u64) -> Result<(), StoreError> {
        Err(StoreError::Database {
            path: "test".into(),
            message: "the disk is gone".into(),
        })
    }
    fn find_request(&self, r: &str) -> Result<Option<(JobId, Fingerprint)>, StoreError> {
        self.0.find_request(r)
    }
    fn partition_done(
        &self,
        job: JobId,
        index: usize,
        proof: &PartitionProof,
        last: bool,
    ) -> Result<(), StoreError> {
        self.0.partition_done(job, index, proof, last)
    }
    fn finish(&self, job: JobId, state: JobState, error: Option<&str>) -> Result<(), StoreError> {
        self.0.finish(job, state, error)
    }
    fn recover(&self) -> Result<Vec<StoredJob>, StoreError> {
        self.0.recover()
    }
    fn forget_finished(&self, retention: &Retention) -> Result<usize, StoreError> {
        self.0.forget_finished(retention)
    }
}

/// A job of two small partitions, without a request id.
fn two_partitions() -> NewJob<'static> {
    NewJob {
        key_id: "k",
        priority: Priority::Normal,
        request_id: "",
        fingerprint: Fingerprint::default(),
        key_shape: String::new(),
        witnesses: vec![b"w0", b"w1"],
        packed: false,
        staged: Vec::new(),
    }
}

/// A one-partition job without a request id.
fn one_partition() -> NewJob<'static> {
    NewJob {
        witnesses: vec![&b"w"[..]],
        packed: false,
        staged: Vec::new(),
        ..two_partitions()
    }
}

/// Registers `n` jobs of `partitions` partitions each.
fn jobs(table: &JobTable, n: usize, partitions: usize) -> Vec<Arc<Job>> {
    let new = NewJob {
        witnesses: vec![&b"w"[..]; partitions],
        packed: false,
        staged: Vec::new(),
        ..two_partitions()
    };
    (0..n)
        .map(|_| match table.register(&new, 1 << 20, None) {
            Ok(Registered::New(job, _)) => job,
            _ => panic!("not registered"),
        })
        .collect()
}

/// A proof of `bytes` bytes of JSON.
fn proof(bytes: usize) -> PartitionProof {
    PartitionProof {
        proof_json: "p".repeat(bytes - 2),
        public_json: "[]".into(),
        timings: Default::default(),
    }
}

/// Proves `job`'s partition `index` with a proof of `bytes` bytes, once the clock has
/// moved on from the end before (ends are ordered by time, then by id).
fn prove(job: &Job, index: usize, bytes: usize) {
    let t = Instant::now();
    while Instant::now() == t {
        std::hint::spin_loop();
    }
    job.partition_done(index, proof(bytes)).unwrap();
}

fn ids(table: &JobTable) -> Vec<JobId> {
    let mut ids: Vec<JobId> = table.summaries().iter().map(|j| j.id).collect();
    ids.sort();
    ids
}

fn bounds(jobs: usize, bytes: u64) -> Retention {
    Retention {
        time: Duration::from_secs(3600),
        jobs,
        bytes,
    }
}

/// The count bound forgets the jobs that ended first (not the lowest ids), only as
/// many as it must, and never an unfinished job; the store forgets them too (their
/// request ids are free again).
#[test]
fn the_count_bound_forgets_the_oldest_finished_jobs_only() {
    let table = JobTable::new(Arc::new(crate::job_store::MemoryStore::new()));
    let j = jobs(&table, 5, 1);
    let taken = NewJob {
        request_id: "r",
        ..one_partition()
    };
    let Ok(Registered::New(named, _)) = table.register(&taken, 1 << 20, None) else {
        panic!("not registered")
    };
    // j[0] never ends; then the ends: named, j[3], j[1] (failed), j[4], j[2].
    prove(&named, 0, 10);
    prove(&j[3], 0, 10);
    assert!(j[1].fail("boom".into()));
    prove(&j[4], 0, 10);
    prove(&j[2], 0, 10);
    assert_eq!(table.forget_finished(&bounds(5, u64::MAX)), 0);
    assert_eq!(table.forget_finished(&bounds(2, u64::MAX)), 3);
    assert_eq!(ids(&table), [j[0].id, j[2].id, j[4].id]);
    assert!(matches!(
        table.get(named.id),
        Err(EngineError::UnknownJob(_))
    ));
    assert_eq!(table.by_request("r", &taken.fingerprint).unwrap(), None);
    assert_eq!(table.forget_finished(&Retention::time(Duration::ZERO)), 2);
    assert_eq!(ids(&table), [j[0].id], "the unfinished job stays");
    assert_eq!(table.summaries()[0].state, JobState::Queued);
}

/// The byte bound counts each finished job's proofs and error and forgets the oldest
/// until the rest fit; an unfinished job's proofs neither count nor go. A status
/// listing carries no proofs.
#[test]
fn the_byte_bound_forgets_the_oldest_finished_jobs_only() {
    let table = JobTable::new(Arc::new(crate::job_store::MemoryStore::new()));
    let unfinished = jobs(&table, 1, 2).remove(0);
    prove(&unfinished, 0, 1000);
    let j = jobs(&table, 4, 1);
    // Ends (bytes): j[2] (100), j[0] (300), j[1] (96), j[3] (100).
    prove(&j[2], 0, 100);
    prove(&j[0], 0, 300);
    prove(&j[1], 0, 96);
    assert!(table.get(j[1].id).unwrap().summary().proofs.is_empty());
    assert_eq!(table.get(j[1].id).unwrap().snapshot().proofs.len(), 1);
    prove(&j[3], 0, 100);
    assert!(table.summaries().iter().all(|s| s.proofs.is_empty()));
    assert_eq!(table.forget_finished(&bounds(9, 600)), 0, "600 bytes fit");
    // 596 > 250: forgetting j[2] leaves 496, then j[0] leaves 196.
    assert_eq!(table.forget_finished(&bounds(9, 250)), 2);
    assert_eq!(ids(&table), [unfinished.id, j[1].id, j[3].id]);
    assert_eq!(table.forget_finished(&bounds(9, 1)), 2);
    assert_eq!(ids(&table), [unfinished.id]);
}

/// A job whose record could not be made durable is refused with the store's error
/// and taken back: not in the table, its partitions not pending, ended in the store.
#[test]
fn a_job_that_cannot_be_made_durable_is_refused_and_taken_back() {
    let table = JobTable::new(Arc::new(NoSync(Recorded::default())));
    let r = table.register(&two_partitions(), 16, None);
    assert!(
        matches!(&r, Err(e) if e.to_string().contains("the disk is gone")),
        "{:?}",
        r.as_ref().err()
    );
    assert_eq!(table.pending.load(Ordering::SeqCst), 0);
    assert!(matches!(table.get(1), Err(EngineError::UnknownJob(1))));
    let stored = table.store.recover().unwrap();
    let states: Vec<JobState> = stored.iter().map(|j| j.state).collect();
    assert_eq!(states, [JobState::Failed], "recorded, then ended");
}

/// Small anonymous jobs register without the lock, side by side: the pending limit
/// still holds exactly (2 partitions each, a limit of 10: 5 accepted, the rest Busy),
/// and every accepted job is in the table and in the store.
#[test]
fn concurrent_registrations_never_pass_the_pending_limit() {
    let table = JobTable::new(Arc::new(Recorded::default()));
    let results: Vec<Result<Registered, EngineError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..16)
            .map(|_| s.spawn(|| table.register(&two_partitions(), 10, None)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let accepted: Vec<JobId> = results
        .iter()
        .filter_map(|r| match r {
            Ok(Registered::New(job, _)) => Some(job.id),
            _ => None,
        })
        .collect();
    let busy = results
        .iter()
        .filter(|r| matches!(r, Err(EngineError::Busy(_))))
        .count();
    assert_eq!((accepted.len(), busy), (5, 11));
    assert_eq!(table.pending.load(Ordering::SeqCst), 10);
    for id in &accepted {
        assert!(table.get(*id).is_ok(), "job {id} in the table");
    }
    assert_eq!(table.store.recover().unwrap().len(), 5);
}
