//! The SQLite store's tests: durability across reopening, ids, request ids, spilled
//! witnesses, schema upgrades, the typed options, and stored values this version does not
//! know (the group commit's are in `group_tests.rs`).

use super::schema::SCHEMA;
use super::*;
use rusqlite::Connection;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;
use zkpipe_engine::job_store::{
    fingerprint, Accepted, JobStore, NewJob, Retention, StoredPartition,
};
use zkpipe_engine::{JobState, PartitionProof, Priority, ProofTimings, StoreError};

pub(super) fn new_job<'a>(request_id: &'a str, witnesses: Vec<&'a [u8]>) -> NewJob<'a> {
    NewJob {
        key_shape: String::new(),
        key_id: "k",
        priority: Priority::High,
        request_id,
        fingerprint: fingerprint("k", &witnesses),
        witnesses,
        packed: false,
        staged: Vec::new(),
    }
}

pub(super) fn proof(s: &str) -> PartitionProof {
    PartitionProof {
        proof_json: format!("proof {s}"),
        public_json: format!("public {s}"),
        timings: ProofTimings {
            total: Duration::from_millis(12),
            ..Default::default()
        },
    }
}

#[test]
fn jobs_survive_reopening_and_ids_are_never_reused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = SqliteStore::open(dir.path()).unwrap();
        assert_eq!(
            s.accept(&new_job("r1", vec![b"w0", b"w1"])).unwrap(),
            Accepted::New(1)
        );
        assert_eq!(
            s.accept(&new_job("", vec![b"x"])).unwrap(),
            Accepted::New(2)
        );
        s.partition_done(1, 0, &proof("a"), false).unwrap();
        s.finish(2, JobState::Failed, Some("boom")).unwrap();
    }
    let s = SqliteStore::open(dir.path()).unwrap();
    let jobs = s.recover().unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0].state, JobState::Queued);
    assert_eq!(jobs[0].priority, Priority::High);
    assert_eq!(jobs[0].request_id, "r1");
    assert!(
        matches!(&jobs[0].partitions[0], StoredPartition::Proved(p) if p.proof_json == "proof a" && p.timings.total == Duration::from_millis(12))
    );
    assert!(matches!(&jobs[0].partitions[1], StoredPartition::Pending(w) if w == b"w1"));
    assert_eq!(jobs[1].state, JobState::Failed);
    assert_eq!(jobs[1].error.as_deref(), Some("boom"));
    assert!(matches!(jobs[1].partitions[0], StoredPartition::Dropped));

    // The same request again is the same job; another request under its id is refused.
    assert_eq!(
        s.accept(&new_job("r1", vec![b"w0", b"w1"])).unwrap(),
        Accepted::Existing(1)
    );
    assert!(matches!(
        s.accept(&new_job("r1", vec![b"other"])),
        Err(StoreError::RequestIdTaken { job: 1, .. })
    ));

    // Forgetting every job does not make ids restart.
    s.partition_done(1, 1, &proof("b"), true).unwrap();
    assert_eq!(
        s.forget_finished(&Retention::time(Duration::ZERO)).unwrap(),
        2
    );
    assert!(s.recover().unwrap().is_empty());
    assert_eq!(s.find_request("r1").unwrap(), None);
    assert_eq!(
        s.accept(&new_job("r1", vec![b"z"])).unwrap(),
        Accepted::New(3)
    );
}

#[test]
fn a_job_ends_once() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(dir.path()).unwrap();
    s.accept(&new_job("", vec![b"w"])).unwrap();
    s.finish(1, JobState::Cancelled, None).unwrap();
    s.partition_done(1, 0, &proof("late"), true).unwrap();
    let jobs = s.recover().unwrap();
    assert_eq!(jobs[0].state, JobState::Cancelled);
}

/// Writers that commit while a sync is under way share the next one: eight accepts
/// made while the test holds the sync's lock (as a writer syncing would) are all
/// covered by one more sync, and every one of them is there after reopening.
#[test]
fn commits_made_during_a_sync_share_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(dir.path()).unwrap();
    let (syncs, committed) = (
        s.syncs.load(Ordering::SeqCst),
        s.committed.load(Ordering::SeqCst),
    );
    let names: Vec<String> = (0..8).map(|i| format!("g{i}")).collect();
    let mut ids: Vec<Accepted> = std::thread::scope(|scope| {
        let held = s.synced.lock().unwrap();
        let store = &s;
        let writers: Vec<_> = names
            .iter()
            .map(|n| scope.spawn(move || store.accept(&new_job(n, vec![b"w"])).unwrap()))
            .collect();
        while s.committed.load(Ordering::SeqCst) < committed + 8 {
            std::thread::yield_now();
        }
        drop(held);
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert_eq!(
        s.syncs.load(Ordering::SeqCst),
        syncs + 1,
        "one sync for the eight"
    );
    ids.sort_by_key(|a| match a {
        Accepted::New(id) | Accepted::Existing(id) => *id,
    });
    assert_eq!(ids, (1..=8).map(Accepted::New).collect::<Vec<_>>());
    drop(s);
    let s = SqliteStore::open(dir.path()).unwrap();
    assert_eq!(s.recover().unwrap().len(), 8);
}

#[test]
fn a_second_store_on_the_same_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _first = SqliteStore::open(dir.path()).unwrap();
    match SqliteStore::open(dir.path()) {
        Err(StoreError::InUse { .. }) => {}
        Err(e) => panic!("expected InUse, got {e}"),
        Ok(_) => panic!("a second store opened the same directory"),
    }
}

pub(super) fn spilled_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.join(WITNESS_DIR))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn big_witnesses_are_files_that_survive_reopening_and_go_when_proved() {
    let dir = tempfile::tempdir().unwrap();
    let big = vec![7u8; 100];
    {
        let s = SqliteStore::open(dir.path()).unwrap().with_inline_max(10);
        s.accept(&new_job("", vec![b"small", &big, &big])).unwrap();
        assert_eq!(
            spilled_files(dir.path()).len(),
            2,
            "two witnesses above 10 bytes"
        );
        s.partition_done(1, 1, &proof("a"), false).unwrap();
        assert_eq!(
            spilled_files(dir.path()).len(),
            1,
            "a proved partition's file goes"
        );
    }
    // Reopened with everything inline: what was spilled is still read from its file.
    let s = SqliteStore::open(dir.path())
        .unwrap()
        .with_inline_max(u64::MAX);
    let jobs = s.recover().unwrap();
    assert!(matches!(&jobs[0].partitions[0], StoredPartition::Pending(w) if w == b"small"));
    assert!(matches!(&jobs[0].partitions[1], StoredPartition::Proved(_)));
    assert!(matches!(&jobs[0].partitions[2], StoredPartition::Pending(w) if *w == big));
    s.finish(1, JobState::Failed, Some("x")).unwrap();
    assert!(
        spilled_files(dir.path()).is_empty(),
        "an ended job's files go"
    );
}

#[test]
fn unnamed_files_are_removed_at_open_and_a_repeated_request_leaves_none() {
    let dir = tempfile::tempdir().unwrap();
    let big = vec![1u8; 64];
    {
        let s = SqliteStore::open(dir.path()).unwrap().with_inline_max(8);
        s.accept(&new_job("r", vec![&big])).unwrap();
        assert_eq!(
            s.accept(&new_job("r", vec![&big])).unwrap(),
            Accepted::Existing(1)
        );
        assert_eq!(
            spilled_files(dir.path()).len(),
            1,
            "the repeat wrote nothing lasting"
        );
    }
    // What a crash before a commit leaves behind.
    std::fs::write(dir.path().join(WITNESS_DIR).join("orphan.wtns"), b"x").unwrap();
    let s = SqliteStore::open(dir.path()).unwrap();
    assert_eq!(spilled_files(dir.path()).len(), 1);
    assert!(
        matches!(&s.recover().unwrap()[0].partitions[0], StoredPartition::Pending(w) if *w == big)
    );
}

#[test]
fn a_missing_witness_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(dir.path()).unwrap().with_inline_max(0);
    s.accept(&new_job("", vec![b"w"])).unwrap();
    for f in spilled_files(dir.path()) {
        std::fs::remove_file(dir.path().join(WITNESS_DIR).join(f)).unwrap();
    }
    let e = s.recover().unwrap_err().to_string();
    assert!(e.contains("job 1: witness file"), "{e}");
}

#[test]
fn a_version_1_database_is_upgraded_in_place() {
    let dir = tempfile::tempdir().unwrap();
    {
        let conn = Connection::open(dir.path().join(DB_FILE)).unwrap();
        let v1 = SCHEMA.replace("    witness_file TEXT,\n", "");
        assert_ne!(v1, SCHEMA);
        conn.execute_batch(&v1).unwrap();
        conn.execute_batch(
            "INSERT INTO jobs (key_id, priority, fingerprint, state, submitted_ms)
             VALUES ('k', 1, x'00', 'queued', 0);
             INSERT INTO partitions (job_id, idx, witness) VALUES (1, 0, x'0102');
             PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    let s = SqliteStore::open(dir.path()).unwrap();
    let jobs = s.recover().unwrap();
    assert!(matches!(&jobs[0].partitions[0], StoredPartition::Pending(w) if w == &[1, 2]));
    s.partition_done(1, 0, &proof("a"), true).unwrap();
    assert_eq!(s.recover().unwrap()[0].state, JobState::Done);
}

/// A priority or state this version does not know is an error naming the job, not a
/// default (an unknown priority used to read as normal).
#[test]
fn an_unknown_stored_priority_or_state_is_an_error() {
    for (column, value, shown) in [
        ("priority", "7", "priority \"7\""),
        ("state", "'paused'", "job state \"paused\""),
    ] {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = SqliteStore::open(dir.path()).unwrap();
            s.accept(&new_job("", vec![b"w"])).unwrap();
            s.lock()
                .execute(&format!("UPDATE jobs SET {column} = {value}"), [])
                .unwrap();
        }
        let s = SqliteStore::open(dir.path()).unwrap();
        match s.recover() {
            Err(e @ StoreError::Unknown { job: 1, .. }) => {
                assert!(e.to_string().contains(shown), "{e}")
            }
            Err(e) => panic!("expected Unknown, got {e}"),
            Ok(_) => panic!("a {column} of {value} was read back"),
        }
    }
}

/// The checkpoint interval is an option of the store, not the environment's.
#[test]
fn the_checkpoint_interval_is_an_option() {
    let dir = tempfile::tempdir().unwrap();
    let pages = |s: &SqliteStore| -> i64 {
        s.lock()
            .query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0))
            .unwrap()
    };
    let s = SqliteStore::open(dir.path()).unwrap();
    assert_eq!(pages(&s), i64::from(DEFAULT_CHECKPOINT_PAGES));
    drop(s);
    let options = SqliteOptions {
        checkpoint_pages: 1_000,
        ..SqliteOptions::default()
    };
    let s = SqliteStore::open_with(dir.path(), &options).unwrap();
    assert_eq!(pages(&s), 1_000);
}

/// A witness staged chunk by chunk.
fn stage(s: &SqliteStore, w: &[u8]) -> Box<dyn zkpipe_engine::job_store::StagedWitness> {
    let mut staging = s
        .stage(w.len() as u64)
        .unwrap()
        .expect("a big witness is staged");
    for chunk in w.chunks(7) {
        staging.write(chunk).unwrap();
    }
    staging.finish().unwrap()
}

/// A job naming staged witnesses records their files as they are (nothing written
/// again): they survive reopening and go when proved; staged files no job names go
/// when dropped (written whole or not), and a small witness is not staged.
#[test]
fn staged_witnesses_are_recorded_in_place_and_unnamed_ones_go() {
    let dir = tempfile::tempdir().unwrap();
    let a: Vec<u8> = (0..100u8).collect();
    let b = vec![9u8; 50];
    {
        let s = SqliteStore::open(dir.path()).unwrap().with_inline_max(10);
        assert!(s.stage(10).unwrap().is_none(), "a witness kept inline");
        let (sa, sb) = (stage(&s, &a), stage(&s, &b));
        assert_eq!(sa.bytes(), &a[..]);
        assert_eq!(spilled_files(dir.path()).len(), 2);
        let mut job = new_job("r", vec![b"small", sa.bytes(), sb.bytes()]);
        job.staged = vec![None, Some(sa.as_ref()), Some(sb.as_ref())];
        assert_eq!(s.accept(&job).unwrap(), Accepted::New(1));
        let names = vec![sa.name().to_string(), sb.name().to_string()];
        drop((sa, sb));
        let mut found = spilled_files(dir.path());
        found.sort();
        let mut want = names.clone();
        want.sort();
        assert_eq!(found, want, "the job's staged files, no copies");

        // The same request again, staged anew: the existing job, the new file gone.
        let again = stage(&s, &a);
        let mut job = new_job("r", vec![b"small", again.bytes(), &b]);
        job.staged = vec![None, Some(again.as_ref()), None];
        assert_eq!(s.accept(&job).unwrap(), Accepted::Existing(1));
        drop(again);
        assert_eq!(spilled_files(dir.path()).len(), 2);

        // Staged and never named, finished or not: nothing stays.
        drop(stage(&s, &a));
        let mut half = s.stage(100).unwrap().unwrap();
        half.write(&a[..40]).unwrap();
        assert_eq!(spilled_files(dir.path()).len(), 3);
        drop(half);
        assert_eq!(spilled_files(dir.path()).len(), 2);
        s.partition_done(1, 1, &proof("a"), false).unwrap();
        assert_eq!(spilled_files(dir.path()), [names[1].clone()]);
    }
    let s = SqliteStore::open(dir.path()).unwrap();
    let jobs = s.recover().unwrap();
    assert!(matches!(&jobs[0].partitions[0], StoredPartition::Pending(w) if w == b"small"));
    assert!(matches!(&jobs[0].partitions[1], StoredPartition::Proved(_)));
    assert!(matches!(&jobs[0].partitions[2], StoredPartition::Pending(w) if *w == b));
}

/// Without witness syncs, spilled and staged witnesses are written but not synced: a job
/// is still there after reopening (the process went, the kernel kept the bytes), and a job
/// whose witness file is gone (a power cut before it reached the disk) ends as failed, by
/// name, while the others recover.
#[test]
fn without_witness_syncs_a_lost_witness_fails_its_job_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteOptions {
        witness_sync: false,
        inline_max: 8,
        ..SqliteOptions::default()
    };
    let big: Vec<Vec<u8>> = (0..3u8).map(|i| vec![i; 100]).collect();
    {
        let s = SqliteStore::open_with(dir.path(), &options).unwrap();
        for w in &big[..2] {
            s.accept(&new_job("", vec![w])).unwrap();
        }
        let staged = stage(&s, &big[2]);
        let mut job = new_job("", vec![staged.bytes()]);
        job.staged = vec![Some(staged.as_ref())];
        s.accept(&job).unwrap();
        assert_eq!(s.file_syncs.load(Ordering::SeqCst), 0, "no witness synced");
        assert_eq!(spilled_files(dir.path()).len(), 3);
    }
    let s = SqliteStore::open_with(dir.path(), &options).unwrap();
    let jobs = s.recover().unwrap();
    for (j, w) in jobs.iter().zip(&big) {
        assert!(matches!(&j.partitions[0], StoredPartition::Pending(x) if x == w));
    }
    drop(s);
    // Job 2's witness never reached the disk.
    let names = spilled_files(dir.path());
    let conn = Connection::open(dir.path().join(DB_FILE)).unwrap();
    let file: String = conn
        .query_row(
            "SELECT witness_file FROM partitions WHERE job_id = 2",
            [],
            |r| r.get(0),
        )
        .unwrap();
    drop(conn);
    assert!(names.contains(&file));
    std::fs::remove_file(dir.path().join(WITNESS_DIR).join(&file)).unwrap();
    let s = SqliteStore::open_with(dir.path(), &options).unwrap();
    let jobs = s.recover().unwrap();
    assert_eq!(jobs[1].state, JobState::Failed);
    let e = jobs[1].error.as_deref().unwrap();
    assert!(e.contains(&file) && e.contains("witness_sync off"), "{e}");
    assert!(matches!(jobs[1].partitions[0], StoredPartition::Dropped));
    assert!(matches!(&jobs[0].partitions[0], StoredPartition::Pending(x) if *x == big[0]));
    assert!(matches!(&jobs[2].partitions[0], StoredPartition::Pending(x) if *x == big[2]));
    // Ended in the store too: the next start finds it failed, not pending.
    drop(s);
    let s = SqliteStore::open_with(dir.path(), &options).unwrap();
    assert_eq!(s.recover().unwrap()[1].state, JobState::Failed);
    // With syncs on, a missing file stays an error (a_missing_witness_file_is_named).
}
