//! The durable single-node job store: one SQLite database (`jobs.sqlite3`) in the state
//! directory, in WAL mode. Every commit is on disk before the call returns, by a **group
//! commit**: SQLite commits with `synchronous = NORMAL` (the WAL frames written, not yet
//! synced), then the writer syncs the WAL file outside the connection's lock, and one sync
//! covers every commit made before it, so writers that commit at the same time share it
//! (`SqliteStore::sync_commits`). With `synchronous = FULL` each commit synced on its
//! own, under the lock: one accept and one result a job, two syncs back to back, held the
//! daemon at 270–330 jobs/s of a 2^14 key on one GPU machine, 470–580 with the state
//! directory in memory (experiment 022). A checkpoint (NORMAL syncs the WAL before it and
//! the database after) keeps the frames it moves durable; it runs every 64 MiB of WAL
//! (`checkpoint_pages`), not SQLite's 4 MiB. The database is opened in
//! exclusive locking mode: a second daemon on the same directory is refused instead of
//! running the same jobs twice.
//!
//! Witnesses are kept until their job ends; proofs until it is forgotten. A witness up to
//! [`SqliteStore::with_inline_max`] bytes is a blob in the database; a larger one is a file
//! in `witnesses/` beside it, written and synced before the row naming it commits. That
//! keeps a big job's gigabytes out of the single writer's transaction: measured on the
//! GPU machine, 1.28 GB of witnesses written inside it held every result write (and so
//! the device stage behind the tail) for 4–5 s per job (lab/experiments/018-*).
//! `AUTOINCREMENT` makes ids monotonic even after every row was deleted.

use super::{
    from_unix_ms, priority_from, state_from, timings_from, timings_text, unix_ms, Accepted,
    Fingerprint, JobStore, NewJob, StoreError, StoredJob, StoredPartition,
};
use crate::job::{JobId, JobState, PartitionProof};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

/// The database file's name in the state directory.
pub const DB_FILE: &str = "jobs.sqlite3";

/// The schema version this code reads and writes (`PRAGMA user_version`).
/// Version 2 added `partitions.witness_file`.
const SCHEMA_VERSION: i64 = 2;

/// The folder of spilled witnesses, in the state directory.
pub const WITNESS_DIR: &str = "witnesses";

/// Witnesses up to this size are kept in the database by default: 64 KiB. A larger one is
/// a file, written and synced outside the database's single writer, in parallel with other
/// accepts. At 1 MiB a 2^14 circuit's 0.5 MiB witnesses went through the writer, ~1 ms each,
/// one after another: 645–683 proofs/s at c = 64 against 721–755 as files (experiment 025).
pub const DEFAULT_INLINE_MAX: u64 = 64 << 10;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS jobs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    key_id       TEXT    NOT NULL,
    priority     INTEGER NOT NULL,
    request_id   TEXT,
    fingerprint  BLOB    NOT NULL,
    state        TEXT    NOT NULL,
    error        TEXT,
    submitted_ms INTEGER NOT NULL,
    finished_ms  INTEGER
);
CREATE UNIQUE INDEX IF NOT EXISTS jobs_request_id ON jobs (request_id)
    WHERE request_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS partitions (
    job_id      INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    idx         INTEGER NOT NULL,
    witness     BLOB,
    witness_file TEXT,
    proof_json  TEXT,
    public_json TEXT,
    timings     TEXT,
    PRIMARY KEY (job_id, idx)
);
";

/// See the module doc.
pub struct SqliteStore {
    path: PathBuf,
    /// `witnesses/` in the state directory.
    spill_dir: PathBuf,
    inline_max: u64,
    conn: Mutex<Connection>,
    /// Makes spilled file names unique within this process.
    spilled: AtomicU64,
    /// Commits so far, counted under `conn`'s lock once each is in the WAL.
    committed: AtomicU64,
    /// How many of them are known to be on disk; held while the WAL is synced.
    synced: Mutex<u64>,
    /// Syncs of the WAL so far (for tests).
    syncs: AtomicU64,
}

impl SqliteStore {
    /// Opens (creating if needed) the store in `dir`.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        let path = dir.join(DB_FILE);
        let db = |e: &dyn std::fmt::Display| StoreError::Database {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        std::fs::create_dir_all(dir).map_err(|e| db(&e))?;
        let conn = Connection::open(&path).map_err(|e| db(&e))?;
        // Exclusive locking takes the lock at the first read and keeps it; a busy
        // database means another daemon holds it.
        conn.busy_timeout(Duration::from_millis(200))
            .map_err(|e| db(&e))?;
        let setup = conn.execute_batch(
            "PRAGMA locking_mode = EXCLUSIVE;
             PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             PRAGMA foreign_keys = ON;",
        );
        if let Err(e) = setup {
            return Err(match e.sqlite_error_code() {
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
                    StoreError::InUse {
                        dir: dir.display().to_string(),
                    }
                }
                _ => db(&e),
            });
        }
        conn.pragma_update(None, "wal_autocheckpoint", checkpoint_pages())
            .map_err(|e| db(&e))?;
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| db(&e))?;
        if version > SCHEMA_VERSION {
            return Err(db(&format!(
                "schema version {version} is newer than this zkpipe understands ({SCHEMA_VERSION})"
            )));
        }
        conn.execute_batch(SCHEMA).map_err(|e| db(&e))?;
        if version == 1 {
            conn.execute_batch("ALTER TABLE partitions ADD COLUMN witness_file TEXT")
                .map_err(|e| db(&e))?;
        }
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(|e| db(&e))?;
        let spill_dir = dir.join(WITNESS_DIR);
        std::fs::create_dir_all(&spill_dir).map_err(|e| db(&e))?;
        let store = Self {
            path,
            spill_dir,
            inline_max: DEFAULT_INLINE_MAX,
            conn: Mutex::new(conn),
            spilled: AtomicU64::new(0),
            committed: AtomicU64::new(0),
            synced: Mutex::new(0),
            syncs: AtomicU64::new(0),
        };
        // The schema's writes, and the WAL's entry in the directory, on disk once.
        store.committed.store(1, Ordering::SeqCst);
        store.sync_commits(1)?;
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| store.err(e))?;
        store.remove_orphans()?;
        Ok(store)
    }

    /// Keeps witnesses up to `bytes` in the database and spills larger ones to files
    /// (default [`DEFAULT_INLINE_MAX`]; `u64::MAX` keeps every witness in the database).
    pub fn with_inline_max(mut self, bytes: u64) -> Self {
        self.inline_max = bytes;
        self
    }

    /// Deletes spilled files that no row names: left by a crash between writing them and
    /// committing their job (which then was never accepted).
    fn remove_orphans(&self) -> Result<(), StoreError> {
        let named: std::collections::HashSet<String> = {
            let conn = self.lock();
            let mut q = conn
                .prepare("SELECT witness_file FROM partitions WHERE witness_file IS NOT NULL")
                .map_err(|e| self.err(e))?;
            let names = q
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(|e| self.err(e))?
                .collect::<Result<_, _>>()
                .map_err(|e| self.err(e))?;
            names
        };
        let entries = std::fs::read_dir(&self.spill_dir).map_err(|e| self.err(e))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !named.contains(&name) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        Ok(())
    }

    /// Writes every witness above the inline limit to a file of its own (in parallel),
    /// synced with its folder entry; returns each partition's file name (`None`: inline).
    /// On failure, the files written so far are removed.
    fn spill(&self, witnesses: &[&[u8]]) -> Result<Vec<Option<String>>, StoreError> {
        let names: Vec<Option<String>> = witnesses
            .iter()
            .enumerate()
            .map(|(i, w)| {
                (w.len() as u64 > self.inline_max).then(|| {
                    let n = self.spilled.fetch_add(1, Ordering::Relaxed);
                    let nanos = SystemTime::now()
                        .duration_since(SystemTime::UNIX_EPOCH)
                        .map_or(0, |d| d.as_nanos());
                    format!("{nanos}-{}-{n}-{i}.wtns", std::process::id())
                })
            })
            .collect();
        if names.iter().all(Option::is_none) {
            return Ok(names);
        }
        let write = |name: &str, w: &[u8]| -> std::io::Result<()> {
            use std::io::Write;
            let mut f = std::fs::File::create_new(self.spill_dir.join(name))?;
            f.write_all(w)?;
            f.sync_all()
        };
        // A few writers at once: one stream rarely fills a fast disk.
        let todo: Vec<_> = names.iter().zip(witnesses).collect();
        let results: Vec<std::io::Result<()>> = std::thread::scope(|s| {
            let handles: Vec<_> = todo
                .chunks(todo.len().div_ceil(4))
                .map(|chunk| {
                    s.spawn(move || {
                        chunk
                            .iter()
                            .filter_map(|(n, w)| n.as_ref().map(|n| write(n, w)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| {
                    h.join()
                        .unwrap_or_else(|_| vec![Err(std::io::Error::other("writer panicked"))])
                })
                .collect()
        });
        let synced = results
            .into_iter()
            .collect::<std::io::Result<()>>()
            .and_then(|()| std::fs::File::open(&self.spill_dir)?.sync_all());
        if let Err(e) = synced {
            self.remove_files(names.iter().flatten());
            return Err(self.err(format!(
                "writing a witness to {}: {e}",
                self.spill_dir.display()
            )));
        }
        Ok(names)
    }

    /// Records `job` in one transaction, not yet synced: the commit's number for
    /// [`Self::sync_commits`] comes with it (0 where nothing was written). `files` names
    /// its spilled witnesses.
    fn record(
        &self,
        job: &NewJob<'_>,
        files: &[Option<String>],
    ) -> Result<(Accepted, u64), StoreError> {
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.err(e))?;
        if let Some(request) = request_column(job.request_id) {
            if let Some((id, fp)) = named_by(&tx, request).map_err(|e| self.err(e))? {
                return if fp == job.fingerprint {
                    Ok((Accepted::Existing(id as JobId), 0))
                } else {
                    Err(StoreError::RequestIdTaken {
                        request_id: request.into(),
                        job: id as JobId,
                    })
                };
            }
        }
        tx.execute(
            "INSERT INTO jobs (key_id, priority, request_id, fingerprint, state, submitted_ms)
             VALUES (?1, ?2, ?3, ?4, 'queued', ?5)",
            params![
                job.key_id,
                job.priority as i64,
                request_column(job.request_id),
                &job.fingerprint[..],
                unix_ms(SystemTime::now()),
            ],
        )
        .map_err(|e| self.err(e))?;
        let id = tx.last_insert_rowid();
        {
            let mut insert = tx
                .prepare(
                    "INSERT INTO partitions (job_id, idx, witness, witness_file)
                     VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(|e| self.err(e))?;
            for (i, (w, file)) in job.witnesses.iter().zip(files).enumerate() {
                let inline = file.is_none().then_some(w);
                insert
                    .execute(params![id, i as i64, inline, file])
                    .map_err(|e| self.err(e))?;
            }
        }
        let seq = self.commit(tx)?;
        Ok((Accepted::New(id as JobId), seq))
    }

    /// Removes spilled files (best effort: a leftover is removed at the next open).
    fn remove_files<'a>(&self, names: impl IntoIterator<Item = &'a String>) {
        for n in names {
            let _ = std::fs::remove_file(self.spill_dir.join(n));
        }
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Commits `tx` (the WAL frames written, not yet synced) and numbers the commit for
    /// [`Self::sync_commits`]. Called with the connection's lock held (`tx` borrows it).
    fn commit(&self, tx: rusqlite::Transaction<'_>) -> Result<u64, StoreError> {
        tx.commit().map_err(|e| self.err(e))?;
        Ok(self.committed.fetch_add(1, Ordering::SeqCst) + 1)
    }

    /// Runs `f` in one transaction under the connection's lock, commits, and returns once
    /// the commit is on disk (synced outside the lock, [`Self::sync_commits`]).
    fn write<T>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let (out, seq) = {
            let mut conn = self.lock();
            let tx = conn.transaction().map_err(|e| self.err(e))?;
            let out = f(&tx)?;
            (out, self.commit(tx)?)
        };
        self.sync_commits(seq)?;
        Ok(out)
    }

    /// Returns once commit `seq` is on disk. The first writer to get here syncs the WAL
    /// for every commit made so far; the writers that queue behind it meanwhile find
    /// their commits covered and return without a sync of their own (group commit). Runs
    /// without the connection's lock, so the next writers commit during the sync.
    fn sync_commits(&self, seq: u64) -> Result<(), StoreError> {
        let mut synced = self.synced.lock().unwrap_or_else(|e| e.into_inner());
        if *synced >= seq {
            return Ok(());
        }
        // Every commit counted so far has its frames in the WAL: this sync covers them.
        let through = self.committed.load(Ordering::SeqCst);
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        match std::fs::File::open(&wal) {
            Ok(f) => f
                .sync_data()
                .map_err(|e| self.err(format!("syncing the WAL: {e}")))?,
            // No WAL: a checkpoint moved every frame into the database and synced it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(self.err(format!("opening the WAL: {e}"))),
        }
        self.syncs.fetch_add(1, Ordering::Relaxed);
        *synced = through;
        Ok(())
    }

    fn err(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError::Database {
            path: self.path.display().to_string(),
            message: e.to_string(),
        }
    }
}

/// WAL pages between automatic checkpoints: 16,384 (64 MiB of 4 KiB pages), not SQLite's
/// 1,000. A checkpoint copies the WAL into the database and syncs both under the writers'
/// lock, and at 2^14 a job's witness alone is half a MiB: with 1,000 pages one ran every
/// ~8 jobs. Measured on the GPU machine, 2^14 key at c = 64: 428–469 jobs/s with 1,000
/// pages, 548–563 with 16,384, 534–573 with 65,536 (experiment 022).
/// `ZKPIPE_STORE_CHECKPOINT_PAGES=N` sets another count (a diagnostic switch).
fn checkpoint_pages() -> i64 {
    std::env::var("ZKPIPE_STORE_CHECKPOINT_PAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&p: &i64| p > 0)
        .unwrap_or(16_384)
}

fn request_column(r: &str) -> Option<&str> {
    (!r.is_empty()).then_some(r)
}

impl JobStore for SqliteStore {
    fn durable(&self) -> bool {
        true
    }

    fn accept(&self, job: &NewJob<'_>) -> Result<Accepted, StoreError> {
        let (accepted, mark) = self.accept_unsynced(job)?;
        self.make_durable(mark)?;
        Ok(accepted)
    }

    fn accept_unsynced(&self, job: &NewJob<'_>) -> Result<(Accepted, u64), StoreError> {
        // Big witnesses are written before the lock is taken, so that result writes
        // (other jobs' partitions) never wait behind them.
        let files = self.spill(&job.witnesses)?;
        let recorded = self.record(job, &files);
        if !matches!(recorded, Ok((Accepted::New(_), _))) {
            self.remove_files(files.iter().flatten());
        }
        recorded
    }

    fn make_durable(&self, mark: u64) -> Result<(), StoreError> {
        self.sync_commits(mark)
    }

    fn find_request(&self, request_id: &str) -> Result<Option<(JobId, Fingerprint)>, StoreError> {
        let found = named_by(&self.lock(), request_id).map_err(|e| self.err(e))?;
        Ok(found.map(|(id, fp)| (id as JobId, fp)))
    }

    fn partition_done(
        &self,
        job: JobId,
        index: usize,
        proof: &PartitionProof,
        last: bool,
    ) -> Result<(), StoreError> {
        let files = self.write(|tx| {
            let mut files = spilled(
                tx,
                "job_id = ?1 AND idx = ?2",
                params![job as i64, index as i64],
            )
            .map_err(|e| self.err(e))?;
            tx.execute(
                "UPDATE partitions SET witness = NULL, witness_file = NULL, proof_json = ?3,
                     public_json = ?4, timings = ?5
                 WHERE job_id = ?1 AND idx = ?2",
                params![
                    job as i64,
                    index as i64,
                    proof.proof_json,
                    proof.public_json,
                    timings_text(&proof.timings),
                ],
            )
            .map_err(|e| self.err(e))?;
            if last {
                files.extend(end(tx, job, JobState::Done, None).map_err(|e| self.err(e))?);
            }
            Ok(files)
        })?;
        // Only once the commit no longer names them.
        self.remove_files(&files);
        Ok(())
    }

    fn finish(&self, job: JobId, state: JobState, error: Option<&str>) -> Result<(), StoreError> {
        let files = self.write(|tx| end(tx, job, state, error).map_err(|e| self.err(e)))?;
        self.remove_files(&files);
        Ok(())
    }

    fn recover(&self) -> Result<Vec<StoredJob>, StoreError> {
        let conn = self.lock();
        let mut jobs_q = conn
            .prepare(
                "SELECT id, key_id, priority, request_id, state, error, submitted_ms, finished_ms
                 FROM jobs ORDER BY id",
            )
            .map_err(|e| self.err(e))?;
        let mut parts_q = conn
            .prepare(
                "SELECT witness, proof_json, public_json, timings, witness_file FROM partitions
                 WHERE job_id = ?1 ORDER BY idx",
            )
            .map_err(|e| self.err(e))?;
        let rows = jobs_q
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, Option<String>>(5)?,
                    r.get::<_, i64>(6)?,
                    r.get::<_, Option<i64>>(7)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (id, key_id, priority, request_id, state, error, submitted, finished) =
                row.map_err(|e| self.err(e))?;
            let state = state_from(&state)
                .ok_or_else(|| self.err(format!("job {id}: unknown state {state:?}")))?;
            let partitions = parts_q
                .query_map([id], |r| {
                    let witness: Option<Vec<u8>> = r.get(0)?;
                    let proof: Option<String> = r.get(1)?;
                    let public: Option<String> = r.get(2)?;
                    let timings: Option<String> = r.get(3)?;
                    let file: Option<String> = r.get(4)?;
                    Ok(match (witness, proof, public, file) {
                        (_, Some(proof_json), Some(public_json), _) => {
                            Stored::Ready(StoredPartition::Proved(PartitionProof {
                                proof_json,
                                public_json,
                                timings: timings_from(timings.as_deref().unwrap_or("")),
                            }))
                        }
                        (Some(w), ..) => Stored::Ready(StoredPartition::Pending(w)),
                        (_, _, _, Some(f)) => Stored::Spilled(f),
                        _ => Stored::Ready(StoredPartition::Dropped),
                    })
                })
                .map_err(|e| self.err(e))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| self.err(e))?
                .into_iter()
                .map(|p| match p {
                    Stored::Ready(p) => Ok(p),
                    Stored::Spilled(f) => std::fs::read(self.spill_dir.join(&f))
                        .map(StoredPartition::Pending)
                        .map_err(|e| self.err(format!("job {id}: witness file {f}: {e}"))),
                })
                .collect::<Result<Vec<_>, _>>()?;
            out.push(StoredJob {
                id: id as JobId,
                key_id,
                priority: priority_from(priority),
                request_id: request_id.unwrap_or_default(),
                state,
                error,
                submitted: from_unix_ms(submitted),
                finished: finished.map(from_unix_ms),
                partitions,
            });
        }
        Ok(out)
    }

    fn forget_finished(&self, retention: Duration) -> Result<usize, StoreError> {
        let cutoff = unix_ms(SystemTime::now()) - retention.as_millis() as i64;
        self.write(|tx| {
            tx.execute(
                "DELETE FROM jobs WHERE finished_ms IS NOT NULL AND finished_ms <= ?1",
                [cutoff],
            )
            .map_err(|e| self.err(e))
        })
    }
}

/// The job a request id names and its fingerprint (a wrong-length one reads as zeros,
/// which no request hashes to).
fn named_by(conn: &Connection, request_id: &str) -> rusqlite::Result<Option<(i64, Fingerprint)>> {
    conn.query_row(
        "SELECT id, fingerprint FROM jobs WHERE request_id = ?1",
        [request_id],
        |r| {
            let fp: Vec<u8> = r.get(1)?;
            Ok((r.get(0)?, fp.try_into().unwrap_or_default()))
        },
    )
    .optional()
}

/// A partition row as read, before a spilled witness is read from its file.
enum Stored {
    Ready(StoredPartition),
    Spilled(String),
}

/// The spilled witness files of the partitions `filter` selects.
fn spilled(
    tx: &rusqlite::Transaction<'_>,
    filter: &str,
    args: impl rusqlite::Params,
) -> rusqlite::Result<Vec<String>> {
    let sql =
        format!("SELECT witness_file FROM partitions WHERE witness_file IS NOT NULL AND {filter}");
    let mut q = tx.prepare(&sql)?;
    let names = q.query_map(args, |r| r.get(0))?.collect();
    names
}

/// Ends a job (only once: an ended job is left as it is) and drops its witnesses; returns
/// the spilled files to remove once the transaction commits.
fn end(
    tx: &rusqlite::Transaction<'_>,
    job: JobId,
    state: JobState,
    error: Option<&str>,
) -> rusqlite::Result<Vec<String>> {
    let n = tx.execute(
        "UPDATE jobs SET state = ?2, error = ?3, finished_ms = ?4
         WHERE id = ?1 AND finished_ms IS NULL",
        params![job as i64, state.name(), error, unix_ms(SystemTime::now())],
    )?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let files = spilled(tx, "job_id = ?1", [job as i64])?;
    tx.execute(
        "UPDATE partitions SET witness = NULL, witness_file = NULL WHERE job_id = ?1",
        [job as i64],
    )?;
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::Priority;

    fn new_job<'a>(request_id: &'a str, witnesses: Vec<&'a [u8]>) -> NewJob<'a> {
        NewJob {
            key_shape: String::new(),
            key_id: "k",
            priority: Priority::High,
            request_id,
            fingerprint: super::super::fingerprint("k", &witnesses),
            witnesses,
        }
    }

    fn proof(s: &str) -> PartitionProof {
        PartitionProof {
            proof_json: format!("proof {s}"),
            public_json: format!("public {s}"),
            timings: crate::job::ProofTimings {
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
        assert_eq!(s.forget_finished(Duration::ZERO).unwrap(), 2);
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

    fn spilled_files(dir: &Path) -> Vec<String> {
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
}
