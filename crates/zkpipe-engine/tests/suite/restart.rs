//! Jobs kept in a durable store ([`zkpipe_store::SqliteStore`]) across a restart: the
//! unfinished ones run again, from their witnesses as the store kept them (packed, where
//! that halved them).

use crate::support::*;
use std::sync::Arc;
use std::time::Duration;
use zkpipe_engine::{Engine, EngineError, JobState, Priority, SubmitRequest};
use zkpipe_formats::packed_wtns;
use zkpipe_store::sqlite::WITNESS_DIR;
use zkpipe_store::SqliteStore;

/// Jobs accepted over a durable store outlive the engine: the unfinished ones run after a
/// restart (the partitions proved before it are kept), finished ones can still be
/// awaited, request ids still name their jobs and ids go on from the last one.
#[test]
fn jobs_in_a_durable_store_survive_a_restart() {
    let dir = key_dir();
    let state = tempfile::tempdir().unwrap();
    let slow = || TestDevices {
        pass_delay: Duration::from_millis(150),
        ..TestDevices::default()
    };
    let store = || Arc::new(zkpipe_store::SqliteStore::open(state.path()).unwrap());
    let engine = Engine::start_with(config(dir.path()), Arc::new(slow()), store()).unwrap();
    let mut first = request("bn254-poseidon", 1, Priority::Critical);
    first.request_id = "first".into();
    let done = engine.submit(first.clone()).unwrap().job_id;
    let mut jobs = Vec::new();
    for i in 0..6 {
        let mut r = request(KEYS[i % 4].0, 3, Priority::Normal);
        r.request_id = format!("job-{i}");
        jobs.push(engine.submit(r).unwrap().job_id);
    }
    check_job(&engine, dir.path(), done);
    engine.shutdown();
    // A waiter on a job the stopped engine kept is told so, not left waiting.
    assert!(matches!(
        engine.wait(*jobs.last().unwrap(), Duration::from_secs(1)),
        Err(EngineError::ShuttingDown)
    ));
    let unfinished = jobs
        .iter()
        .filter(|&&j| !engine.job_status(j).unwrap().state.is_final())
        .count();
    assert!(unfinished > 0, "the test stopped the engine too late");
    drop(engine);

    let engine = Engine::start_with(config(dir.path()), Arc::new(slow()), store()).unwrap();
    check_job(&engine, dir.path(), done);
    for &j in &jobs {
        check_job(&engine, dir.path(), j);
    }
    let again = engine.submit(first).unwrap();
    assert_eq!((again.job_id, again.existing), (done, true));
    let next = engine
        .submit(request("bls-poseidon", 1, Priority::Normal))
        .unwrap();
    assert_eq!(next.job_id, jobs.last().unwrap() + 1, "ids go on");
    check_job(&engine, dir.path(), next.job_id);
    engine.shutdown();
}

/// Witnesses the store kept packed (those sent packed, and those it packed itself) are
/// read packed after a restart and prove; one whose file was damaged meanwhile fails its
/// own job in one line naming the partition, and the rest of the store still resumes.
#[test]
fn packed_witnesses_resume_and_a_damaged_one_fails_only_its_job() {
    let dir = key_dir();
    let raw = sha_key(dir.path());
    let packed = packed_wtns::pack(&raw).expect("0s and 1s pack");
    let state = tempfile::tempdir().unwrap();
    // Every witness in a file of its own, so that one can be damaged.
    let store = || Arc::new(SqliteStore::open(state.path()).unwrap().with_inline_max(0));
    let slow = || TestDevices {
        pass_delay: Duration::from_millis(300),
        ..TestDevices::default()
    };
    let engine = Engine::start_with(config(dir.path()), Arc::new(slow()), store()).unwrap();
    // A job in front that holds the device while the others are accepted.
    engine
        .submit(request("bn254-multi", 4, Priority::Critical))
        .unwrap();
    let submit = |w: &[u8]| {
        engine
            .submit(SubmitRequest {
                key_id: "bn254-sha".into(),
                witnesses: vec![w.to_vec(); 2],
                priority: Priority::Low,
                request_id: String::new(),
            })
            .unwrap()
            .job_id
    };
    let jobs = [submit(&packed), submit(&raw), submit(&packed)];
    engine.shutdown();
    assert!(
        jobs.iter()
            .all(|&j| !engine.job_status(j).unwrap().state.is_final()),
        "the test stopped the engine too late"
    );
    drop(engine);

    // Six witness files, all packed; one of them loses its last byte.
    let stored: Vec<_> = std::fs::read_dir(state.path().join(WITNESS_DIR))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| std::fs::read(p).unwrap() == packed)
        .collect();
    assert_eq!(stored.len(), 6, "{stored:?}");
    std::fs::write(&stored[3], &packed[..packed.len() - 1]).unwrap();

    let engine = Engine::start_with(config(dir.path()), Arc::new(slow()), store()).unwrap();
    let mut failed = Vec::new();
    for &j in &jobs {
        let s = engine.wait(j, Duration::from_secs(300)).unwrap();
        match s.state {
            JobState::Failed => failed.push(s.error.unwrap_or_default()),
            _ => check_job(&engine, dir.path(), j),
        }
    }
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(
        failed[0].starts_with("after a restart: partition ")
            && failed[0].contains("malformed witness")
            && !failed[0].contains('\n'),
        "{}",
        failed[0]
    );
    engine.shutdown();
}
