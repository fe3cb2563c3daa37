//! The SQLite store's group commit (`commit.rs`): accepts queued behind a group are
//! recorded and synced together, a job whose record fails leaves the rest of its group,
//! nothing is acknowledged before its sync, a leader that stops acknowledges nothing,
//! witness files that cannot be synced leave no record, and a batch of proofs is one
//! commit and one sync (or, failing, recorded up to the one that failed).

use super::tests::{new_job, proof, spilled_files};
use super::*;
use std::sync::atomic::{AtomicU64, Ordering};
use zkpipe_engine::job_store::{Accepted, JobStore, ProvedPartition, StoredPartition};
use zkpipe_engine::{JobState, StoreError};

/// Accepts that queue while a group is being recorded are the next group: eight accepts
/// of spilled witnesses made while the test holds the group lock (as a leader recording
/// would) each sync their own files before they queue, are recorded in one transaction,
/// covered by one WAL sync, and every one is there, witness and all, after reopening.
#[test]
fn accepts_queued_behind_a_group_are_recorded_and_synced_together() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(dir.path()).unwrap().with_inline_max(8);
    let count = |c: &AtomicU64| c.load(Ordering::SeqCst);
    let (groups, file_syncs, syncs) = (count(&s.groups), count(&s.file_syncs), count(&s.syncs));
    let witnesses: Vec<Vec<u8>> = (0..8u8).map(|i| vec![i; 100]).collect();
    let names: Vec<String> = (0..8).map(|i| format!("g{i}")).collect();
    let mut ids: Vec<Accepted> = std::thread::scope(|scope| {
        let held = s.grouping.lock().unwrap();
        let store = &s;
        let writers: Vec<_> = names
            .iter()
            .zip(&witnesses)
            .map(|(n, w)| scope.spawn(move || store.accept(&new_job(n, vec![w])).unwrap()))
            .collect();
        while s.intake.lock().unwrap().len() < 8 {
            std::thread::yield_now();
        }
        drop(held);
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert_eq!(
        count(&s.groups),
        groups + 1,
        "one transaction for the eight"
    );
    assert_eq!(
        count(&s.file_syncs),
        file_syncs + 8,
        "each job synced its own files"
    );
    assert_eq!(count(&s.syncs), syncs + 1, "one WAL sync for the eight");
    ids.sort_by_key(|a| match a {
        Accepted::New(id) | Accepted::Existing(id) => *id,
    });
    assert_eq!(ids, (1..=8).map(Accepted::New).collect::<Vec<_>>());
    drop(s);
    let s = SqliteStore::open(dir.path()).unwrap();
    let jobs = s.recover().unwrap();
    assert_eq!(jobs.len(), 8);
    for j in &jobs {
        let i: usize = j.request_id[1..].parse().unwrap();
        assert!(
            matches!(&j.partitions[0], StoredPartition::Pending(w) if *w == witnesses[i]),
            "job {} has its own witness",
            j.id
        );
    }
}

/// Many submitters at once, inline and spilled witnesses, some under a request id sent
/// twice: every job is stored once, with its own witnesses, and no more groups than jobs.
#[test]
fn concurrent_submitters_all_get_their_jobs_stored() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(dir.path()).unwrap().with_inline_max(64);
    let groups = s.groups.load(Ordering::SeqCst);
    let (threads, each) = (16usize, 4usize);
    let witness = |t: usize, j: usize| -> Vec<u8> {
        let len = if (t + j).is_multiple_of(2) { 32 } else { 200 };
        (0..len).map(|k| (t * 31 + j * 7 + k) as u8).collect()
    };
    std::thread::scope(|scope| {
        for t in 0..threads {
            let store = &s;
            scope.spawn(move || {
                for j in 0..each {
                    let w = witness(t, j);
                    let name = format!("{t}-{j}");
                    let first = store.accept(&new_job(&name, vec![&w, b"tail"])).unwrap();
                    assert!(matches!(first, Accepted::New(_)), "{name}");
                    let again = store.accept(&new_job(&name, vec![&w, b"tail"])).unwrap();
                    assert_eq!(
                        Accepted::Existing(match first {
                            Accepted::New(id) | Accepted::Existing(id) => id,
                        }),
                        again,
                        "{name}"
                    );
                }
            });
        }
    });
    assert!(s.groups.load(Ordering::SeqCst) - groups <= (threads * each * 2) as u64);
    drop(s);
    let s = SqliteStore::open(dir.path()).unwrap();
    let jobs = s.recover().unwrap();
    assert_eq!(jobs.len(), threads * each);
    for job in &jobs {
        let (t, j) = job.request_id.split_once('-').unwrap();
        let w = witness(t.parse().unwrap(), j.parse().unwrap());
        assert!(matches!(&job.partitions[0], StoredPartition::Pending(x) if *x == w));
        assert!(matches!(&job.partitions[1], StoredPartition::Pending(x) if x == b"tail"));
    }
    assert_eq!(
        spilled_files(dir.path()).len(),
        threads * each / 2,
        "no leftovers"
    );
}

/// A job is acknowledged only once the sync that covers it returned: while WAL syncs
/// fail (as a crash between a group's commit and its sync would stop them), no accept
/// returns a job, alone or in a group; once they work again, accepts do.
#[test]
fn no_accept_is_acknowledged_before_its_sync() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(dir.path()).unwrap().with_inline_max(8);
    s.fail_wal_sync.store(true, Ordering::SeqCst);
    let big = vec![3u8; 100];
    let results: Vec<Result<Accepted, StoreError>> = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..8usize)
            .map(|i| {
                let (store, big) = (&s, &big);
                let w: &[u8] = if i.is_multiple_of(2) { big } else { b"w" };
                scope.spawn(move || store.accept(&new_job("", vec![w])))
            })
            .collect();
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    for r in &results {
        match r {
            Err(e) => assert!(e.to_string().contains("syncing the WAL"), "{e}"),
            Ok(a) => panic!("{a:?} acknowledged without its sync"),
        }
    }
    // The engine's path: recorded, then refused at the sync.
    let (recorded, mark) = s.accept_unsynced(&new_job("", vec![b"x"])).unwrap();
    assert!(matches!(recorded, Accepted::New(_)));
    assert!(s.make_durable(mark).is_err());
    s.fail_wal_sync.store(false, Ordering::SeqCst);
    assert!(s.make_durable(mark).is_ok());
    assert!(matches!(
        s.accept(&new_job("", vec![&big])),
        Ok(Accepted::New(_))
    ));
}

/// A leader that stops between its group's commit and the sync (here: panics) answers
/// none of the group's jobs with a record, and leaves their witness files for the next
/// open, which reads back whatever the commit named.
#[test]
fn a_group_whose_leader_stops_acknowledges_none_of_its_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let big: Vec<Vec<u8>> = (0..4u8).map(|i| vec![i; 100]).collect();
    {
        let s = SqliteStore::open(dir.path()).unwrap().with_inline_max(8);
        s.abort_group.store(true, Ordering::SeqCst);
        let results: Vec<Result<Result<Accepted, StoreError>, _>> = std::thread::scope(|scope| {
            let held = s.grouping.lock().unwrap();
            let writers: Vec<_> = big
                .iter()
                .map(|w| {
                    let store = &s;
                    scope.spawn(move || store.accept(&new_job("", vec![w])))
                })
                .collect();
            while s.intake.lock().unwrap().len() < 4 {
                std::thread::yield_now();
            }
            drop(held);
            writers.into_iter().map(|w| w.join()).collect()
        });
        assert_eq!(
            results.iter().filter(|r| r.is_err()).count(),
            1,
            "the leader stopped"
        );
        for r in results.into_iter().flatten() {
            match r {
                Err(e) => assert!(e.to_string().contains("without recording"), "{e}"),
                Ok(a) => panic!("{a:?} acknowledged by a group that never synced"),
            }
        }
        assert_eq!(spilled_files(dir.path()).len(), 4, "the files stay");
    }
    // Committed, never acknowledged: the next start finds the jobs whole.
    let s = SqliteStore::open(dir.path()).unwrap();
    let jobs = s.recover().unwrap();
    let mut found: Vec<Vec<u8>> = jobs
        .iter()
        .map(|j| match &j.partitions[0] {
            StoredPartition::Pending(w) => w.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    found.sort();
    assert_eq!(found, big);
}

/// A job's witness files are synced before the commit that names them: when their sync
/// fails, the job is not recorded and its files are removed.
#[test]
fn witness_files_that_cannot_be_synced_leave_no_record() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(dir.path()).unwrap().with_inline_max(8);
    s.fail_file_sync.store(true, Ordering::SeqCst);
    let e = s.accept(&new_job("r", vec![&[5u8; 100]])).unwrap_err();
    assert!(e.to_string().contains("syncing witness files"), "{e}");
    assert!(s.recover().unwrap().is_empty());
    assert!(spilled_files(dir.path()).is_empty());
    assert_eq!(s.find_request("r").unwrap(), None);
    s.fail_file_sync.store(false, Ordering::SeqCst);
    assert_eq!(
        s.accept(&new_job("r", vec![&[5u8; 100]])).unwrap(),
        Accepted::New(1)
    );
}

/// A group is recorded without a savepoint each; when one job's record fails part-way,
/// the group is recorded again with them, so the failed job leaves no row and the others
/// are accepted, all in one group.
#[test]
fn a_job_whose_record_fails_leaves_the_rest_of_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(dir.path()).unwrap();
    *s.fail_accept_of.lock().unwrap() = Some("bad".into());
    let groups = s.groups.load(Ordering::SeqCst);
    let names = ["g0", "bad", "g2"];
    let results: Vec<(&str, Result<Accepted, StoreError>)> = std::thread::scope(|scope| {
        let held = s.grouping.lock().unwrap();
        let store = &s;
        let writers: Vec<_> = names
            .iter()
            .map(|&n| scope.spawn(move || (n, store.accept(&new_job(n, vec![&[1u8; 4]])))))
            .collect();
        while s.intake.lock().unwrap().len() < names.len() {
            std::thread::yield_now();
        }
        drop(held);
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert_eq!(s.groups.load(Ordering::SeqCst), groups + 1, "one group");
    for (name, r) in &results {
        match (*name, r) {
            ("bad", Err(e)) => assert!(e.to_string().contains("injected"), "{e}"),
            ("bad", Ok(a)) => panic!("the failed job was accepted: {a:?}"),
            (_, r) => assert!(matches!(r, Ok(Accepted::New(_))), "{name}: {r:?}"),
        }
    }
    drop(s);
    let s = SqliteStore::open(dir.path()).unwrap();
    let mut kept: Vec<String> = s
        .recover()
        .unwrap()
        .into_iter()
        .map(|j| j.request_id)
        .collect();
    kept.sort();
    assert_eq!(kept, ["g0", "g2"]);
}

/// Five jobs' proofs recorded with one call are one commit covered by one WAL sync, and
/// every job is done after reopening, its witness file gone.
#[test]
fn a_batch_of_proofs_is_one_commit_and_one_sync() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(dir.path()).unwrap().with_inline_max(8);
    let ids: Vec<u64> = (0..5u8)
        .map(|i| match s.accept(&new_job("", vec![&[i; 100]])).unwrap() {
            Accepted::New(id) => id,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(spilled_files(dir.path()).len(), 5);
    let proofs: Vec<_> = ids.iter().map(|id| proof(&id.to_string())).collect();
    let done: Vec<ProvedPartition<'_>> = ids
        .iter()
        .zip(&proofs)
        .map(|(&job, proof)| ProvedPartition {
            job,
            index: 0,
            proof,
            last: true,
        })
        .collect();
    let syncs = s.syncs.load(Ordering::SeqCst);
    s.partitions_done(&done).map_err(|(_, e)| e).unwrap();
    assert_eq!(
        s.syncs.load(Ordering::SeqCst),
        syncs + 1,
        "one sync for five"
    );
    assert!(spilled_files(dir.path()).is_empty(), "the witnesses went");
    drop(s);
    let s = SqliteStore::open(dir.path()).unwrap();
    for j in s.recover().unwrap() {
        assert_eq!(j.state, JobState::Done, "job {}", j.id);
        assert!(
            matches!(&j.partitions[0], StoredPartition::Proved(p) if p.proof_json == format!("proof {}", j.id)),
            "job {} has its own proof",
            j.id
        );
    }
}

/// When the batch's transaction fails, the proofs are recorded one by one up to the one
/// that fails: `Err((n, e))` says how many were, and those after it were not tried.
#[test]
fn a_failed_proof_in_a_batch_records_those_before_it_only() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(dir.path()).unwrap();
    let ids: Vec<u64> = (0..5u8)
        .map(|i| match s.accept(&new_job("", vec![&[i; 4]])).unwrap() {
            Accepted::New(id) => id,
            other => panic!("{other:?}"),
        })
        .collect();
    s.fail_proof_of.store(ids[2], Ordering::SeqCst);
    let p = proof("p");
    let done: Vec<ProvedPartition<'_>> = ids
        .iter()
        .map(|&job| ProvedPartition {
            job,
            index: 0,
            proof: &p,
            last: true,
        })
        .collect();
    let (n, e) = s.partitions_done(&done).unwrap_err();
    assert_eq!(n, 2);
    assert!(e.to_string().contains("injected"), "{e}");
    let states: Vec<JobState> = s.recover().unwrap().iter().map(|j| j.state).collect();
    use JobState::{Done, Queued};
    assert_eq!(states, [Done, Done, Queued, Queued, Queued]);
}
