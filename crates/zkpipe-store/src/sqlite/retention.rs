//! Forgetting finished jobs within the retention's bounds. The store keeps a ledger of
//! its finished jobs (when each ended, its results' bytes), read from the database at open
//! and entered as each job ends, so that the count and byte bounds cost the jobs forgotten,
//! not a count of every row. What the ledger forgets is one range of the index on
//! `finished_ms` (`schema.rs`): the delete never scans the table, and runs only when there
//! is something to delete.

use super::SqliteStore;
use rusqlite::{params, Connection};
use std::time::SystemTime;
use zkpipe_engine::job_store::{Ledger, Retention};
use zkpipe_engine::{JobId, StoreError};

/// Deletes the finished jobs up to and including (`?1` = `finished_ms`, `?2` = `id`), the
/// newest the ledger forgot; their partitions go with them (`ON DELETE CASCADE`).
pub(super) const FORGET: &str = "DELETE FROM jobs
     WHERE finished_ms IS NOT NULL AND finished_ms <= ?1 AND (finished_ms < ?1 OR id <= ?2)";

/// A job's bytes as [`zkpipe_engine::job_store::retention::result_bytes`] counts them:
/// its proofs' JSON and its error.
const BYTES: &str = "coalesce(length(CAST(error AS BLOB)), 0) + coalesce((
         SELECT sum(length(CAST(proof_json AS BLOB)) + length(CAST(public_json AS BLOB)))
         FROM partitions WHERE job_id = jobs.id), 0)";

/// A job that ended in a transaction: when (milliseconds since the epoch) and its bytes,
/// for the ledger once the transaction commits.
pub(super) struct Ended {
    pub at_ms: i64,
    pub id: JobId,
    pub bytes: u64,
}

/// Job `id`'s bytes, read as it ends.
pub(super) fn bytes_of(conn: &Connection, id: JobId) -> rusqlite::Result<u64> {
    let sql = format!("SELECT {BYTES} FROM jobs WHERE id = ?1");
    let n: i64 = conn
        .prepare_cached(&sql)?
        .query_row([id as i64], |r| r.get(0))?;
    Ok(n.max(0) as u64)
}

/// The ledger of the finished jobs in the database (at open).
pub(super) fn ledger(conn: &Connection) -> rusqlite::Result<Ledger<i64>> {
    let sql = format!("SELECT id, finished_ms, {BYTES} FROM jobs WHERE finished_ms IS NOT NULL");
    let mut q = conn.prepare(&sql)?;
    let mut ledger = Ledger::default();
    let rows = q.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, i64>(2)?,
        ))
    })?;
    for row in rows {
        let (id, at, bytes) = row?;
        ledger.ended(id as JobId, at, bytes.max(0) as u64);
    }
    Ok(ledger)
}

impl SqliteStore {
    /// Enters a job that ended (its transaction committed) in the ledger.
    pub(super) fn entered(&self, ended: Option<Ended>) {
        if let Some(e) = ended {
            let mut ledger = self.finished.lock().unwrap_or_else(|e| e.into_inner());
            ledger.ended(e.id, e.at_ms, e.bytes);
        }
    }

    /// Forgets the finished jobs beyond `r`, the oldest first (see the module doc).
    pub(super) fn forget(&self, r: &Retention) -> Result<usize, StoreError> {
        let now = crate::columns::unix_ms(SystemTime::now());
        let too_old = now.checked_sub(i64::try_from(r.time.as_millis()).unwrap_or(i64::MAX));
        let old = {
            let mut ledger = self.finished.lock().unwrap_or_else(|e| e.into_inner());
            ledger.forget(too_old, r)
        };
        let Some(&(at, id)) = old.last() else {
            return Ok(0);
        };
        self.write(|tx| {
            tx.execute(FORGET, params![at, id as i64])
                .map_err(|e| self.err(e))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::unix_ms;
    use std::time::Duration;
    use zkpipe_engine::job_store::{fingerprint, Accepted, JobStore, NewJob};
    use zkpipe_engine::{JobState, PartitionProof, Priority};

    /// Accepts a job of `partitions` partitions under `request` ("" for none).
    fn accept(s: &SqliteStore, request: &str, partitions: usize) -> JobId {
        let witnesses: Vec<&[u8]> = vec![&b"w"[..]; partitions];
        let job = NewJob {
            key_id: "k",
            priority: Priority::Normal,
            request_id: request,
            fingerprint: fingerprint("k", &witnesses),
            key_shape: String::new(),
            witnesses,
            packed: false,
            staged: Vec::new(),
        };
        match s.accept(&job).unwrap() {
            Accepted::New(id) => id,
            Accepted::Existing(id) => panic!("job {id} again"),
        }
    }

    /// A proof of `bytes` bytes of JSON.
    fn proof(bytes: usize) -> PartitionProof {
        PartitionProof {
            proof_json: "p".repeat(bytes - 2),
            public_json: "[]".into(),
            timings: Default::default(),
        }
    }

    /// Returns once the clock's millisecond has moved on, so that the next end is later
    /// than the one before (ends are ordered by `finished_ms`, then by id).
    fn next_ms() {
        let t = unix_ms(SystemTime::now());
        while unix_ms(SystemTime::now()) == t {
            std::hint::spin_loop();
        }
    }

    /// Ends `job` (done, its one partition proved with `bytes` bytes), a millisecond after
    /// the one before.
    fn done(s: &SqliteStore, job: JobId, bytes: usize) {
        next_ms();
        s.partition_done(job, 0, &proof(bytes), true).unwrap();
    }

    fn bounds(jobs: usize, bytes: u64) -> Retention {
        Retention {
            time: Duration::from_secs(3600),
            jobs,
            bytes,
        }
    }

    fn ids(s: &SqliteStore) -> Vec<JobId> {
        s.recover().unwrap().iter().map(|j| j.id).collect()
    }

    /// The count bound forgets the jobs that ended first (not the lowest ids), and only
    /// as many as it must; an unfinished job stays, however old. The ledger is read back
    /// at open: the bound holds across a restart.
    #[test]
    fn the_count_bound_forgets_the_oldest_finished_jobs_only() {
        let dir = tempfile::tempdir().unwrap();
        let s = SqliteStore::open(dir.path()).unwrap();
        let unfinished = accept(&s, "r0", 1);
        let jobs: Vec<JobId> = (1..5).map(|i| accept(&s, &format!("r{i}"), 1)).collect();
        // Ends: 4, 2 (failed), 5, 3.
        done(&s, jobs[2], 10);
        next_ms();
        s.finish(jobs[0], JobState::Failed, Some("boom")).unwrap();
        done(&s, jobs[3], 10);
        done(&s, jobs[1], 10);
        assert_eq!(s.forget_finished(&bounds(4, u64::MAX)).unwrap(), 0);
        assert_eq!(s.forget_finished(&bounds(2, u64::MAX)).unwrap(), 2);
        assert_eq!(ids(&s), [unfinished, jobs[1], jobs[3]]);
        assert_eq!(
            s.find_request("r3").unwrap(),
            None,
            "forgotten with its job"
        );
        assert!(s.find_request("r0").unwrap().is_some());
        drop(s);
        let s = SqliteStore::open(dir.path()).unwrap();
        assert_eq!(s.forget_finished(&bounds(1, u64::MAX)).unwrap(), 1);
        assert_eq!(ids(&s), [unfinished, jobs[1]], "5 ended before 3");
        assert_eq!(
            s.forget_finished(&Retention::time(Duration::ZERO)).unwrap(),
            1
        );
        assert_eq!(ids(&s), [unfinished]);
    }

    /// The byte bound counts each finished job's proofs and error and forgets the oldest
    /// until the rest fit; an unfinished job's proofs neither count nor go.
    #[test]
    fn the_byte_bound_forgets_the_oldest_finished_jobs_only() {
        let dir = tempfile::tempdir().unwrap();
        let s = SqliteStore::open(dir.path()).unwrap();
        let unfinished = accept(&s, "", 2);
        s.partition_done(unfinished, 0, &proof(1000), false)
            .unwrap();
        let jobs: Vec<JobId> = (0..4).map(|_| accept(&s, "", 1)).collect();
        // Ends (bytes): jobs[2] (100), jobs[0] (300), jobs[1] (96 + "boom"), jobs[3] (100).
        done(&s, jobs[2], 100);
        done(&s, jobs[0], 300);
        next_ms();
        s.partition_done(jobs[1], 0, &proof(96), false).unwrap();
        s.finish(jobs[1], JobState::Failed, Some("boom")).unwrap();
        done(&s, jobs[3], 100);
        assert_eq!(
            s.forget_finished(&bounds(9, 600)).unwrap(),
            0,
            "600 bytes fit"
        );
        // 600 > 250: forgetting jobs[2] leaves 500, then jobs[0] leaves 200.
        assert_eq!(s.forget_finished(&bounds(9, 250)).unwrap(), 2);
        assert_eq!(ids(&s), [unfinished, jobs[1], jobs[3]]);
        assert_eq!(s.forget_finished(&bounds(9, 1)).unwrap(), 2);
        assert_eq!(ids(&s), [unfinished]);
    }

    /// The delete is a search of the index on `finished_ms`, not a scan of the table,
    /// and a database without the index (an older version's) gets it at open.
    #[test]
    fn forgetting_searches_the_index_which_every_open_makes() {
        let dir = tempfile::tempdir().unwrap();
        let s = SqliteStore::open(dir.path()).unwrap();
        let plan = |s: &SqliteStore| -> Vec<String> {
            let conn = s.lock();
            let mut q = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {FORGET}"))
                .unwrap();
            let rows = q
                .query_map(params![1, 1], |r| r.get::<_, String>(3))
                .unwrap();
            rows.collect::<Result<_, _>>().unwrap()
        };
        let p = plan(&s);
        assert!(
            // SQLite words it "USING INDEX" or "USING COVERING INDEX", by version.
            p.iter().any(|d| d.starts_with("SEARCH jobs USING")
                && d.contains("INDEX jobs_finished (")
                && d.contains("finished_ms<?")),
            "{p:?}"
        );
        assert!(!p.iter().any(|d| d.starts_with("SCAN")), "{p:?}");
        s.lock().execute_batch("DROP INDEX jobs_finished").unwrap();
        assert!(
            plan(&s).iter().any(|d| d.starts_with("SCAN")),
            "without it, a scan"
        );
        drop(s);
        let s = SqliteStore::open(dir.path()).unwrap();
        assert!(plan(&s).iter().any(|d| d.contains("jobs_finished")));
    }
}
