//! The fleet's shared job store on a real Postgres (started by the test, see
//! `tests/support/postgres.rs`): claims never overlap, even when daemons race for them; a lapsed
//! lease returns its partition and the old claim's result is refused, so a partition
//! finishes once; cancellation, request ids, priorities, hot keys and the object store
//! for large witnesses work across daemons; finished jobs are forgotten beyond the count
//! and byte bounds, oldest first.

use crate::support::TempPostgres;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use zkpipe_engine::job_store::{
    Accepted, CancelOutcome, NewJob, Retention, ServedKey, SharedQueue, StoreError,
};
use zkpipe_engine::{JobState, JobStore, PartitionProof, Priority};
use zkpipe_formats::packed_wtns::{pack, MAGIC};
use zkpipe_store::testing::wtns;
use zkpipe_store::{PgOptions, PgStore};

const LEASE: Duration = Duration::from_secs(30);

fn store(pg: &TempPostgres, daemon: &str) -> Arc<PgStore> {
    store_with(pg, daemon, None, 1 << 20)
}

fn store_with(
    pg: &TempPostgres,
    daemon: &str,
    objects: Option<String>,
    inline_max: u64,
) -> Arc<PgStore> {
    Arc::new(
        PgStore::connect(&PgOptions {
            url: pg.url.clone(),
            daemon: daemon.into(),
            objects,
            inline_max,
            connections: 4,
        })
        .unwrap(),
    )
}

fn key(id: &str, hot: bool) -> ServedKey {
    ServedKey {
        id: id.into(),
        shape: format!("shape-of-{id}"),
        hot,
    }
}

fn accept(
    s: &PgStore,
    key_id: &str,
    priority: Priority,
    request_id: &str,
    witnesses: &[&[u8]],
) -> Result<Accepted, StoreError> {
    let fp = zkpipe_engine::job_store::fingerprint(key_id, witnesses);
    s.accept(&NewJob {
        key_id,
        priority,
        request_id,
        fingerprint: fp,
        key_shape: format!("shape-of-{key_id}"),
        witnesses: witnesses.to_vec(),
        packed: false,
        staged: Vec::new(),
    })
}

fn new_id(a: Accepted) -> u64 {
    match a {
        Accepted::New(id) => id,
        Accepted::Existing(id) => panic!("job {id} was not new"),
    }
}

fn proof(text: &str) -> PartitionProof {
    PartitionProof {
        proof_json: text.into(),
        public_json: "[]".into(),
        timings: Default::default(),
    }
}

#[test]
fn racing_daemons_never_claim_one_partition_twice() {
    let pg = TempPostgres::start();
    let daemons: Vec<Arc<PgStore>> = (0..4).map(|i| store(&pg, &format!("d{i}"))).collect();
    let keys = [key("k", false)];
    let witness: &[u8] = b"w";
    for _ in 0..50 {
        new_id(accept(&daemons[0], "k", Priority::Normal, "", &[witness; 4]).unwrap());
    }
    // Four daemons, two threads each, claim in small batches until the queue is empty.
    let claims: Vec<Vec<(u64, usize)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let d = Arc::clone(&daemons[t % 4]);
                let keys = keys.clone();
                s.spawn(move || {
                    let mut mine = Vec::new();
                    loop {
                        let got = d.claim(&keys, 3, LEASE).unwrap();
                        if got.is_empty() {
                            return mine;
                        }
                        mine.extend(got.iter().map(|c| (c.job, c.index)));
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let all: Vec<(u64, usize)> = claims.iter().flatten().copied().collect();
    let unique: HashSet<(u64, usize)> = all.iter().copied().collect();
    assert_eq!(all.len(), 200, "every partition claimed");
    assert_eq!(unique.len(), 200, "no partition claimed twice");
    assert!(
        claims.iter().filter(|c| !c.is_empty()).count() > 1,
        "the claims were spread"
    );
    let depth = daemons[0].depths().unwrap();
    assert_eq!((depth[0].queued, depth[0].claimed), (0, 200));
}

/// The lease renewal and the result writer lock a daemon's partitions in one order: a
/// renewal running all the while results are written fails none of them. (Unordered, the
/// two deadlocked under load, and Postgres rolled the result write back: its partitions
/// waited out their leases.)
#[test]
fn renewing_leases_while_results_are_written_loses_no_result() {
    let pg = TempPostgres::start();
    let a = store(&pg, "a");
    let witnesses: [&[u8]; 16] = [b"w"; 16];
    let jobs: Vec<u64> = (0..40)
        .map(|_| new_id(accept(&a, "k", Priority::Normal, "", &witnesses).unwrap()))
        .collect();
    let mut claimed = Vec::new();
    loop {
        let got = a.claim(&[key("k", false)], 64, LEASE).unwrap();
        if got.is_empty() {
            break;
        }
        claimed.extend(got);
    }
    assert_eq!(claimed.len(), 640);
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let renewals = s.spawn(|| {
            let mut n = 0;
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                assert_eq!(a.renew(LEASE).unwrap(), [], "no claim lost");
                n += 1;
            }
            n
        });
        // Last claimed first: the other way round from the renewal's scan.
        for c in claimed.iter().rev() {
            a.partition_done(c.job, c.index, &proof("p"), false)
                .unwrap();
        }
        assert!(a.flush_results(Duration::from_secs(60)));
        done.store(true, std::sync::atomic::Ordering::Release);
        assert!(renewals.join().unwrap() > 0);
    });
    for j in jobs {
        assert_eq!(a.job(j).unwrap().unwrap().state, JobState::Done, "job {j}");
    }
}

#[test]
fn a_lapsed_lease_moves_the_partition_and_the_old_result_is_refused() {
    let pg = TempPostgres::start();
    let (a, b) = (store(&pg, "a"), store(&pg, "b"));
    let keys = [key("k", false)];
    let job = new_id(accept(&a, "k", Priority::Normal, "", &[b"w0", b"w1"]).unwrap());
    let short = Duration::from_millis(300);
    let held = a.claim(&keys, 1, short).unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(a.witness(&held[0]).unwrap(), b"w0");
    assert_eq!(a.reap().unwrap(), 0, "a live lease is not reaped");
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(b.reap().unwrap(), 1, "the lapsed lease is returned");
    // b takes both partitions now (the first one again).
    let got = b.claim(&keys, 5, LEASE).unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(
        a.renew(LEASE).unwrap(),
        vec![(job, 0)],
        "a no longer holds it"
    );
    // a's result comes late: refused. b's are recorded, and the job is done once.
    a.partition_done(job, 0, &proof("from a"), true).unwrap();
    assert_eq!(a.results_refused(), 1);
    for c in &got {
        b.partition_done(
            c.job,
            c.index,
            &proof(&format!("from b {}", c.index)),
            false,
        )
        .unwrap();
    }
    assert!(b.flush_results(Duration::from_secs(10)));
    let s = a.job(job).unwrap().unwrap();
    assert_eq!((s.state, s.partitions_done), (JobState::Done, 2));
    assert_eq!(s.proofs[0].proof_json, "from b 0");
    let rows = pg.query(&format!(
        "SELECT idx, done_by, attempts FROM zkpipe_partitions WHERE job_id = {job} ORDER BY idx"
    ));
    assert_eq!(rows, ["0|b|2", "1|b|1"]);
    // Recording again under the same claim changes nothing.
    b.partition_done(job, 1, &proof("again"), true).unwrap();
    assert!(b.flush_results(Duration::from_secs(10)));
    assert_eq!(b.results_refused(), 1);
}

#[test]
fn cancel_and_request_ids_work_from_any_daemon() {
    let pg = TempPostgres::start();
    let (a, b) = (store(&pg, "a"), store(&pg, "b"));
    let keys = [key("k", false)];
    let job = new_id(accept(&a, "k", Priority::Normal, "req-1", &[b"w0", b"w1"]).unwrap());
    assert_eq!(
        accept(&b, "k", Priority::Normal, "req-1", &[b"w0", b"w1"]).unwrap(),
        Accepted::Existing(job)
    );
    assert!(matches!(
        accept(&b, "k", Priority::Normal, "req-1", &[b"other"]),
        Err(StoreError::RequestIdTaken { job: j, .. }) if j == job
    ));
    let held = a.claim(&keys, 1, LEASE).unwrap();
    assert_eq!(held.len(), 1);
    assert_eq!(a.job(job).unwrap().unwrap().state, JobState::Running);
    let mut events = a.job_events();
    assert_eq!(b.cancel(job).unwrap(), CancelOutcome::Cancelled);
    assert_eq!(
        b.cancel(job).unwrap(),
        CancelOutcome::Finished(JobState::Cancelled)
    );
    assert_eq!(b.cancel(9999).unwrap(), CancelOutcome::Unknown);
    // The daemon holding a partition hears of it, and its renewal drops it.
    let heard = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async { tokio::time::timeout(Duration::from_secs(10), events.recv()).await })
    })
    .join()
    .unwrap();
    assert_eq!(heard.unwrap().unwrap(), job);
    assert_eq!(a.renew(LEASE).unwrap(), vec![(job, 0)]);
    assert!(
        b.claim(&keys, 5, LEASE).unwrap().is_empty(),
        "nothing left to claim"
    );
    let s = b.job(job).unwrap().unwrap();
    assert_eq!((s.state, s.proofs.len()), (JobState::Cancelled, 0));
}

#[test]
fn priority_first_then_hot_keys_then_age() {
    let pg = TempPostgres::start();
    let s = store(&pg, "a");
    let low = new_id(accept(&s, "cold", Priority::Low, "", &[b"w"]).unwrap());
    let normal_cold = new_id(accept(&s, "cold", Priority::Normal, "", &[b"w"]).unwrap());
    let normal_hot = new_id(accept(&s, "hot", Priority::Normal, "", &[b"w"]).unwrap());
    let high = new_id(accept(&s, "cold", Priority::High, "", &[b"w"]).unwrap());
    let other = new_id(accept(&s, "not-served", Priority::Critical, "", &[b"w"]).unwrap());
    let keys = [key("cold", false), key("hot", true)];
    let order: Vec<u64> = (0..5)
        .flat_map(|_| s.claim(&keys, 1, LEASE).unwrap())
        .map(|c| c.job)
        .collect();
    assert_eq!(order, [high, normal_hot, normal_cold, low]);
    // A key of the same id and another shape is not served either.
    assert!(s
        .claim(
            &[ServedKey {
                id: "not-served".into(),
                shape: "other".into(),
                hot: true
            }],
            1,
            LEASE
        )
        .unwrap()
        .is_empty());
    assert_eq!(s.job(other).unwrap().unwrap().state, JobState::Queued);
}

#[test]
fn large_witnesses_go_to_the_object_store_and_leave_with_their_job() {
    let pg = TempPostgres::start();
    let objects = tempfile::tempdir().unwrap();
    let url = format!("file://{}", objects.path().display());
    let (a, b) = (
        store_with(&pg, "a", Some(url.clone()), 16),
        store_with(&pg, "b", Some(url), 16),
    );
    let big = vec![7u8; 1000];
    let job = new_id(accept(&a, "k", Priority::Normal, "", &[&big, b"small"]).unwrap());
    let files = || walk(objects.path());
    assert_eq!(
        files(),
        1,
        "one witness over inline_max went to the object store"
    );
    let rows = pg.query(
        "SELECT idx, witness IS NULL, witness_object IS NULL FROM zkpipe_partitions ORDER BY idx",
    );
    assert_eq!(rows, ["0|t|f", "1|f|t"]);
    let got = b.claim(&[key("k", false)], 5, LEASE).unwrap();
    assert_eq!(
        b.witness(&got[0]).unwrap(),
        big,
        "read back whole, by another daemon"
    );
    assert_eq!(b.witness(&got[1]).unwrap(), b"small");
    for c in &got {
        b.partition_done(c.job, c.index, &proof("p"), false)
            .unwrap();
    }
    assert!(b.flush_results(Duration::from_secs(10)));
    assert_eq!(b.job(job).unwrap().unwrap().state, JobState::Done);
    assert_eq!(files(), 0, "the witness object left with its partition");
    // A witness object that is gone is an error naming it (the claim stage fails the job
    // with it, under the claim that holds the partition).
    let lost = new_id(accept(&a, "k", Priority::High, "", &[&big]).unwrap());
    std::fs::remove_dir_all(objects.path().join("zkpipe")).unwrap();
    let got = b.claim(&[key("k", false)], 5, LEASE).unwrap();
    assert_eq!(got.iter().map(|c| c.job).collect::<Vec<_>>(), [lost]);
    let e = b.witness(&got[0]).unwrap_err().to_string();
    assert!(e.contains(&format!("zkpipe/jobs/{lost}/0.witness")), "{e}");
    b.finish(lost, JobState::Failed, Some(&e)).unwrap();
    let s = b.job(lost).unwrap().unwrap();
    assert_eq!(
        (s.state, s.error.as_deref()),
        (JobState::Failed, Some(e.as_str()))
    );
    // An unusable object store URL is refused when the store opens.
    let bad = PgStore::connect(&PgOptions {
        url: pg.url.clone(),
        daemon: "c".into(),
        objects: Some("ftp://x".into()),
        inline_max: 16,
        connections: 2,
    });
    assert!(matches!(bad, Err(StoreError::Config(m)) if m.contains("not a file:// or s3:// URL")));
}

/// Every file's bytes under `dir`.
fn contents(dir: &std::path::Path) -> Vec<Vec<u8>> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            all.extend(contents(&p));
        } else {
            all.push(std::fs::read(p).unwrap());
        }
    }
    all
}

#[test]
fn witnesses_of_bits_are_stored_packed_and_read_back_as_stored() {
    let pg = TempPostgres::start();
    let objects = tempfile::tempdir().unwrap();
    let url = format!("file://{}", objects.path().display());
    let (a, b) = (
        store_with(&pg, "a", Some(url.clone()), 64 << 10),
        store_with(&pg, "b", Some(url), 64 << 10),
    );
    // 625 KiB of bits packs to ~30 KiB and goes inline; 94 KiB of full-size values does
    // not pack and goes to the object store as it came; 6 MiB of bits goes there packed.
    let (bits, full, many_bits) = (wtns(20_000, true), wtns(3_000, false), wtns(200_000, true));
    let job = new_id(accept(&a, "k", Priority::Normal, "", &[&bits, &full, &many_bits]).unwrap());
    let rows = pg.query(&format!(
        "SELECT idx, coalesce(length(witness), 0) < {}, witness_object IS NULL,
                coalesce(substring(witness from 1 for 4) = 'zkpw'::bytea, false)
           FROM zkpipe_partitions WHERE job_id = {job} ORDER BY idx",
        bits.len() / 10
    ));
    assert_eq!(rows, ["0|t|t|t", "1|t|f|f", "2|t|f|f"]);
    let mut stored = contents(objects.path());
    stored.sort_by_key(Vec::len);
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[0], full, "a witness that does not pack, as it came");
    assert!(stored[1].starts_with(MAGIC) && stored[1].len() * 10 < many_bits.len());
    let got = b.claim(&[key("k", false)], 5, LEASE).unwrap();
    let read: Vec<Vec<u8>> = got.iter().map(|c| b.witness(c).unwrap()).collect();
    assert_eq!(
        read,
        [pack(&bits).unwrap(), full, pack(&many_bits).unwrap()],
        "each as stored, by another daemon (its engine reads them packed)"
    );
}

#[test]
fn a_restarted_daemon_gives_back_what_it_held() {
    let pg = TempPostgres::start();
    let a = store(&pg, "a");
    let job = new_id(accept(&a, "k", Priority::Normal, "", &[b"w"]).unwrap());
    assert_eq!(a.claim(&[key("k", false)], 1, LEASE).unwrap().len(), 1);
    drop(a); // killed, holding its claim for 30 s
    let again = store(&pg, "a");
    assert!(again.recover().unwrap().is_empty());
    let rows = pg.query(&format!(
        "SELECT state, owner IS NULL FROM zkpipe_partitions WHERE job_id = {job}"
    ));
    assert_eq!(rows, ["queued|t"], "back in the queue at once");
    assert!(matches!(
        PgStore::connect(&PgOptions {
            url: "mysql://x".into(),
            daemon: "a".into(),
            objects: None,
            inline_max: 0,
            connections: 2,
        }),
        Err(StoreError::Config(_))
    ));
}

fn walk(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p)
            } else {
                1
            }
        })
        .sum()
}

/// A priority or state this version does not know is an error naming the job, wherever
/// it is read (a job's status, a listing, the queue's depths, a claim), not a default; a
/// claim that meets one leaves its partitions queued.
#[test]
fn an_unknown_stored_priority_or_state_is_an_error() {
    let pg = TempPostgres::start();
    let s = store(&pg, "a");
    let job = new_id(accept(&s, "k", Priority::High, "", &[b"w"]).unwrap());
    let unknown = |e: StoreError, shown: &str| match e {
        StoreError::Unknown { job: j, .. } if j == job => {
            assert!(e.to_string().contains(shown), "{e}")
        }
        e => panic!("expected Unknown for job {job}, got {e}"),
    };
    pg.query("UPDATE zkpipe_jobs SET priority = 9");
    pg.query("UPDATE zkpipe_partitions SET priority = 9");
    unknown(s.job(job).unwrap_err(), "priority \"9\"");
    unknown(s.jobs(10).unwrap_err(), "priority \"9\"");
    unknown(s.depths().unwrap_err(), "priority \"9\"");
    unknown(
        s.claim(&[key("k", false)], 1, LEASE).unwrap_err(),
        "priority \"9\"",
    );
    let rows = pg.query("SELECT state, claim IS NULL FROM zkpipe_partitions");
    assert_eq!(rows, ["queued|t"], "the failed claim was rolled back");
    pg.query("UPDATE zkpipe_jobs SET priority = 2, state = 'paused'");
    unknown(s.job(job).unwrap_err(), "job state \"paused\"");
    unknown(s.cancel(job).unwrap_err(), "job state \"paused\"");
}

/// `pipeline.retain_jobs` and `pipeline.retain_bytes` hold in the shared store too: the
/// oldest finished jobs go first (by their end, not their id), an unfinished job never
/// goes, and a forgotten job's request id is free again.
#[test]
fn finished_jobs_beyond_the_count_or_the_bytes_are_forgotten_oldest_first() {
    let pg = TempPostgres::start();
    let s = store(&pg, "a");
    let job = |r: &str| new_id(accept(&s, "k", Priority::Normal, r, &[b"w"]).unwrap());
    let unfinished = job("r0");
    let jobs: Vec<u64> = (1..=4).map(|i| job(&format!("r{i}"))).collect();
    // A daemon fails only jobs whose partitions it holds: it claims all five. Ends,
    // oldest first: jobs[2], jobs[0], jobs[3], jobs[1]; each failed with a 100-byte
    // error, which is what it holds.
    assert_eq!(s.claim(&[key("k", true)], 5, LEASE).unwrap().len(), 5);
    for &j in &[jobs[2], jobs[0], jobs[3], jobs[1]] {
        s.finish(j, JobState::Failed, Some(&"e".repeat(100)))
            .unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    let bounds = |jobs: usize, bytes: u64| Retention {
        time: Duration::from_secs(3600),
        jobs,
        bytes,
    };
    let kept = |s: &PgStore| -> Vec<u64> {
        [unfinished, jobs[0], jobs[1], jobs[2], jobs[3]]
            .into_iter()
            .filter(|&j| s.job(j).unwrap().is_some())
            .collect()
    };
    assert_eq!(s.forget_finished(&bounds(4, u64::MAX)).unwrap(), 0);
    assert_eq!(s.forget_finished(&bounds(2, u64::MAX)).unwrap(), 2);
    assert_eq!(kept(&s), [unfinished, jobs[1], jobs[3]]);
    assert_eq!(
        s.find_request("r3").unwrap(),
        None,
        "forgotten with its job"
    );
    // 200 bytes held: a 150-byte bound forgets the older of the two, 1 byte both.
    assert_eq!(s.forget_finished(&bounds(9, 150)).unwrap(), 1);
    assert_eq!(kept(&s), [unfinished, jobs[1]]);
    assert_eq!(s.forget_finished(&bounds(9, 1)).unwrap(), 1);
    assert_eq!(kept(&s), [unfinished]);
    assert_eq!(
        new_id(accept(&s, "k", Priority::Normal, "r3", &[b"v"]).unwrap()),
        jobs[3] + 1
    );
}
