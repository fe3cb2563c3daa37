//! The durable single-node job store: one SQLite database (`jobs.sqlite3`) in the state
//! directory, in WAL mode. Every commit is on disk before the call returns, by a **group
//! commit** (`commit.rs`): SQLite commits with `synchronous = NORMAL` (the WAL frames
//! written, not yet synced), then the writer syncs the WAL file outside the connection's
//! lock, and one sync covers every commit made before it, so writers that commit at the
//! same time share it. Accepts are grouped before that: one transaction records every job
//! that queued while the previous group was being recorded, their spilled witnesses synced
//! by their submitters already. With `synchronous = FULL` each commit synced on its own, under the
//! lock: one accept and one result a job, two syncs back to back, held the daemon at
//! 270–330 jobs/s of a 2^14 key on one GPU machine, 470–580 with the state directory in
//! memory (lab/experiments/022-montgomery-witness-and-group-commit.md). A checkpoint
//! (NORMAL syncs the WAL before it and the database after) keeps the frames it moves
//! durable; it runs every [`SqliteOptions::checkpoint_pages`] of WAL, not SQLite's 4 MiB.
//! The database is opened in exclusive locking mode: a second daemon on the same
//! directory is refused instead of running the same jobs twice.
//!
//! Witnesses are kept until their job ends; proofs until it is forgotten. A witness up to
//! [`SqliteOptions::inline_max`] bytes is a blob in the database; a larger one is a file
//! in `witnesses/` beside it (`spill.rs`). `AUTOINCREMENT` makes ids monotonic even after
//! every row was deleted (`schema.rs`).
//!
//! The state directory is 0700 and every file in it 0600 (the database's WAL takes the
//! database file's mode), whatever the umask: witnesses are private.

mod commit;
#[cfg(test)]
mod group_tests;
#[cfg(test)]
mod packed_tests;
mod retention;
mod schema;
mod spill;
mod staging;
mod store;
#[cfg(test)]
mod tests;

use crate::private;
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use zkpipe_engine::job_store::Ledger;
use zkpipe_engine::StoreError;

/// The database file's name in the state directory.
pub const DB_FILE: &str = "jobs.sqlite3";

/// The folder of spilled witnesses, in the state directory.
pub const WITNESS_DIR: &str = "witnesses";

/// Witnesses up to this size are kept in the database by default: 64 KiB. A larger one is
/// a file, written and synced outside the database's single writer, in parallel with other
/// accepts. At 1 MiB a 2^14 circuit's 0.5 MiB witnesses went through the writer, ~1 ms each,
/// one after another: 645–683 proofs/s at c = 64 against 721–755 as files
/// (lab/experiments/025-daemon-host-path.md).
pub const DEFAULT_INLINE_MAX: u64 = 64 << 10;

/// WAL pages between automatic checkpoints by default: 16,384 (64 MiB of 4 KiB pages),
/// not SQLite's 1,000. A checkpoint copies the WAL into the database and syncs both under
/// the writers' lock, and at 2^14 a job's witness alone is half a MiB: with 1,000 pages
/// one ran every ~8 jobs. Measured on the GPU machine, 2^14 key at c = 64: 428–469 jobs/s
/// with 1,000 pages, 548–563 with 16,384, 534–573 with 65,536
/// (lab/experiments/022-montgomery-witness-and-group-commit.md).
pub const DEFAULT_CHECKPOINT_PAGES: u32 = 16_384;

/// How [`SqliteStore::open_with`] opens a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqliteOptions {
    /// Whether a spilled witness is synced before its job is acknowledged (default true):
    /// an accepted job then survives a power cut. False writes it without a sync: the job
    /// survives a crash of the daemon (the kernel keeps the bytes) but not a power cut or
    /// a kernel crash, after which a job whose witness file did not reach the disk is
    /// failed at the next open, by name. A witness file removed before the kernel writes
    /// it back, as a small job's often is, then never reaches the disk: on 2 × H200 the
    /// synced witnesses held two GPUs to 1.18× one, 1.62× without the syncs
    /// (lab/experiments/042h-disk-bound-accepts.md).
    pub witness_sync: bool,
    /// Witnesses up to this many bytes are kept in the database; larger ones are files
    /// (`u64::MAX` keeps every witness in the database). Default [`DEFAULT_INLINE_MAX`].
    pub inline_max: u64,
    /// WAL pages between automatic checkpoints (at least 1). Default
    /// [`DEFAULT_CHECKPOINT_PAGES`].
    pub checkpoint_pages: u32,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            witness_sync: true,
            inline_max: DEFAULT_INLINE_MAX,
            checkpoint_pages: DEFAULT_CHECKPOINT_PAGES,
        }
    }
}

/// See the module doc.
pub struct SqliteStore {
    path: PathBuf,
    /// `witnesses/` in the state directory.
    spill_dir: PathBuf,
    inline_max: u64,
    /// [`SqliteOptions::witness_sync`].
    witness_sync: bool,
    conn: Mutex<Connection>,
    /// Makes spilled file names unique within this process.
    spilled: AtomicU64,
    /// Records (jobs accepted, results, ends) committed so far, counted under `conn`'s
    /// lock once each is in the WAL.
    committed: AtomicU64,
    /// Jobs queued for the next group (`commit.rs`).
    intake: Mutex<Vec<Arc<commit::Pending>>>,
    /// Held by a group's leader while it records the group.
    grouping: Mutex<()>,
    /// Groups recorded so far (for tests).
    groups: AtomicU64,
    /// Sync rounds of spilled witnesses so far, one per job with any (for tests).
    file_syncs: AtomicU64,
    /// Tests: syncs of spilled witnesses fail.
    #[cfg(test)]
    fail_file_sync: std::sync::atomic::AtomicBool,
    /// Tests: WAL syncs fail.
    #[cfg(test)]
    fail_wal_sync: std::sync::atomic::AtomicBool,
    /// Tests: a group's leader stops (panics) between its commit and the outcomes.
    #[cfg(test)]
    abort_group: std::sync::atomic::AtomicBool,
    /// Tests: the record of the job under this request id fails after its job row.
    #[cfg(test)]
    fail_accept_of: Mutex<Option<String>>,
    /// Tests: recording a proof of this job fails after its partition's row.
    #[cfg(test)]
    fail_proof_of: AtomicU64,
    /// How many of them are known to be on disk; held while the WAL is synced.
    synced: Mutex<u64>,
    /// Syncs of the WAL so far (for tests).
    syncs: AtomicU64,
    /// The finished jobs, by when they ended (`retention.rs`).
    finished: Mutex<Ledger<i64>>,
}

impl SqliteStore {
    /// Opens (creating if needed) the store in `dir`, with the default options.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        Self::open_with(dir, &SqliteOptions::default())
    }

    /// Opens (creating if needed) the store in `dir`. The directory is created 0700, or
    /// made 0700 if it exists, and the database and its WAL are 0600.
    pub fn open_with(dir: &Path, options: &SqliteOptions) -> Result<Self, StoreError> {
        let path = dir.join(DB_FILE);
        let db = |e: &dyn std::fmt::Display| StoreError::Database {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        private::dir(dir).map_err(|e| db(&e))?;
        // SQLite creates the WAL (and a shared-memory file, if one is used) with the
        // database file's mode: the database is made 0600 before SQLite opens it, and
        // files an earlier version left more open are narrowed.
        private::file(&path, true).map_err(|e| db(&e))?;
        for suffix in ["-wal", "-shm"] {
            private::file(&sibling(&path, suffix), false).map_err(|e| db(&e))?;
        }
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
        conn.pragma_update(
            None,
            "wal_autocheckpoint",
            i64::from(options.checkpoint_pages.max(1)),
        )
        .map_err(|e| db(&e))?;
        schema::apply(&conn).map_err(|e| db(&e))?;
        let finished = retention::ledger(&conn).map_err(|e| db(&e))?;
        let spill_dir = dir.join(WITNESS_DIR);
        private::dir(&spill_dir).map_err(|e| db(&e))?;
        let store = Self {
            path,
            spill_dir,
            inline_max: options.inline_max,
            witness_sync: options.witness_sync,
            conn: Mutex::new(conn),
            spilled: AtomicU64::new(0),
            committed: AtomicU64::new(0),
            intake: Mutex::new(Vec::new()),
            grouping: Mutex::new(()),
            groups: AtomicU64::new(0),
            file_syncs: AtomicU64::new(0),
            #[cfg(test)]
            fail_file_sync: Default::default(),
            #[cfg(test)]
            fail_wal_sync: Default::default(),
            #[cfg(test)]
            abort_group: Default::default(),
            #[cfg(test)]
            fail_accept_of: Default::default(),
            #[cfg(test)]
            fail_proof_of: Default::default(),
            synced: Mutex::new(0),
            syncs: AtomicU64::new(0),
            finished: Mutex::new(finished),
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
    /// (as [`SqliteOptions::inline_max`]).
    pub fn with_inline_max(mut self, bytes: u64) -> Self {
        self.inline_max = bytes;
        self
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn err(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError::Database {
            path: self.path.display().to_string(),
            message: e.to_string(),
        }
    }
}

/// The database's `-wal` or `-shm` file.
fn sibling(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}
