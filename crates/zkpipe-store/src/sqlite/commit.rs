//! The SQLite store's group commit, in two stages that overlap.
//!
//! **Accepts.** A submitter writes and syncs its spilled witnesses (in parallel with the
//! other submitters: concurrent syncs share the filesystem's journal commits), then queues
//! its job; whichever submitter then takes the group lock first is the group's leader: it
//! takes every job queued meanwhile, records them in one transaction and commits it. A
//! file is on disk before the commit that names it can be: a crash never leaves a row
//! naming a missing witness. The leader syncs no files: when it synced the group's files
//! (a few at once), a group of 10–60 jobs waited for rounds of syncs in turn, and job
//! accept p50 went from 6.5 to 42 ms on 2 × H200 (lab/experiments/042-gpu-scaling.md).
//!
//! **Syncs.** A commit is written to the WAL, not synced (`synchronous = NORMAL`), and
//! numbered. [`SqliteStore::sync_commits`] syncs the WAL outside the connection's lock, and
//! one sync covers every commit numbered before it, so writers that commit at the same
//! time share it; the next group records while this one syncs. A job is acknowledged only
//! once the sync that covers it returned: the engine calls `make_durable` before it
//! answers the submitter.

use super::{sibling, SqliteStore};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, TryLockError};
use std::time::Duration;
use zkpipe_engine::job_store::{Accepted, Fingerprint, NewJob};
use zkpipe_engine::StoreError;

/// A job queued for the next group: what the leader records, and how it went.
pub(super) struct Pending {
    pub(super) key_id: String,
    pub(super) priority: i64,
    pub(super) request_id: String,
    pub(super) fingerprint: Fingerprint,
    /// Per partition: the witness when it is kept in the database, else `None`.
    pub(super) inline: Vec<Option<Vec<u8>>>,
    /// Per partition: the spilled file's name (synced already), else `None`.
    pub(super) files: Vec<Option<String>>,
    /// Set by the leader: the record (and its commit's number), or why it failed; and
    /// whether this job's submitter is asked to lead the next group.
    state: Mutex<Outcome>,
    /// Wakes the submitter when either is set.
    wake: Condvar,
}

/// What a queued job's submitter waits for.
#[derive(Default)]
struct Outcome {
    result: Option<Result<(Accepted, u64), StoreError>>,
    lead: bool,
}

impl Pending {
    /// The job to record, each witness as stored (`witnesses`: packed where that
    /// halves it), the spilled ones named by `files` (synced already).
    pub(super) fn new(job: &NewJob<'_>, witnesses: &[&[u8]], files: Vec<Option<String>>) -> Self {
        Self {
            key_id: job.key_id.to_string(),
            priority: i64::from(job.priority.rank()),
            request_id: job.request_id.to_string(),
            fingerprint: job.fingerprint,
            inline: witnesses
                .iter()
                .zip(&files)
                .map(|(w, f)| f.is_none().then(|| w.to_vec()))
                .collect(),
            files,
            state: Mutex::new(Outcome::default()),
            wake: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Outcome> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets the job's outcome and wakes its submitter.
    pub(super) fn set(&self, outcome: Result<(Accepted, u64), StoreError>) {
        self.lock().result = Some(outcome);
        self.wake.notify_one();
    }

    /// Asks the job's submitter to lead the next group.
    fn ask_to_lead(&self) {
        self.lock().lead = true;
        self.wake.notify_one();
    }

    /// Waits until the job has an outcome (returned) or its submitter is asked to lead
    /// (`None`), [`LEAD_CHECK`] at most.
    fn wait(&self) -> Option<Result<(Accepted, u64), StoreError>> {
        let mut state = self.lock();
        if state.result.is_none() && !state.lead {
            state = self
                .wake
                .wait_timeout(state, LEAD_CHECK)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        state.lead = false;
        state.result.take()
    }
}

/// How long a queued submitter waits before it checks whether a group needs a leader:
/// a safety net, since a leader that ends asks the next queued job's submitter to lead.
const LEAD_CHECK: Duration = Duration::from_millis(5);

impl SqliteStore {
    /// Queues `job` for a group and returns once a group recorded it (committed, not yet
    /// synced: see [`Self::sync_commits`]). A job whose group never reported (its leader
    /// panicked) is [`GroupError::Lost`]: its files are left to the next open, which keeps
    /// them if the commit named them.
    pub(super) fn join_group(&self, job: Arc<Pending>) -> Result<(Accepted, u64), GroupError> {
        self.intake
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Arc::clone(&job));
        loop {
            let leader = match self.grouping.try_lock() {
                Ok(leader) => leader,
                Err(TryLockError::Poisoned(e)) => e.into_inner(),
                // A group is being recorded. Its submitters wake on their own outcome,
                // all at once: none waits for the group lock to learn it.
                Err(TryLockError::WouldBlock) => match job.wait() {
                    Some(out) => return out.map_err(GroupError::Failed),
                    None => continue,
                },
            };
            let group = std::mem::take(&mut *self.intake.lock().unwrap_or_else(|e| e.into_inner()));
            self.record_group(&group);
            drop(leader);
            // A job queued while this group was recorded leads the next one (it queued
            // before it tried the group lock, so it is seen here or found the lock free).
            let next = self
                .intake
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .first()
                .cloned();
            if let Some(next) = next {
                next.ask_to_lead();
            }
            // This job was in this group, or answered by an earlier one before it let go
            // of the lock; else that leader stopped without answering.
            return match job.wait() {
                Some(out) => out.map_err(GroupError::Failed),
                None => Err(GroupError::Lost(self.err(
                    "the job's group ended without recording it (its leader stopped)",
                ))),
            };
        }
    }

    /// Commits `tx` (the WAL frames written, not yet synced), which recorded `records`
    /// jobs or results, and numbers it for [`Self::sync_commits`]: the number of the last
    /// record so far. Called with the connection's lock held (`tx` borrows it).
    pub(super) fn commit(
        &self,
        tx: rusqlite::Transaction<'_>,
        records: u64,
    ) -> Result<u64, StoreError> {
        tx.commit().map_err(|e| self.err(e))?;
        Ok(self.committed.fetch_add(records, Ordering::SeqCst) + records)
    }

    /// Runs `f` in one transaction under the connection's lock, commits, and returns once
    /// the commit is on disk (synced outside the lock, [`Self::sync_commits`]).
    pub(super) fn write<T>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let (out, seq) = {
            let mut conn = self.lock();
            let tx = conn.transaction().map_err(|e| self.err(e))?;
            let out = f(&tx)?;
            (out, self.commit(tx, 1)?)
        };
        self.sync_commits(seq)?;
        Ok(out)
    }

    /// Returns once commit `seq` is on disk. The first writer to get here syncs the WAL
    /// for every commit made so far; the writers that queue behind it meanwhile find
    /// their commits covered and return without a sync of their own (group commit). Runs
    /// without the connection's lock, so the next writers commit during the sync.
    pub(super) fn sync_commits(&self, seq: u64) -> Result<(), StoreError> {
        let mut synced = self.synced.lock().unwrap_or_else(|e| e.into_inner());
        if *synced >= seq {
            return Ok(());
        }
        // Every commit counted so far has its frames in the WAL: this sync covers them.
        let through = self.committed.load(Ordering::SeqCst);
        #[cfg(test)]
        if self.fail_wal_sync.load(Ordering::SeqCst) {
            return Err(self.err("syncing the WAL: injected failure"));
        }
        let wal = sibling(&self.path, "-wal");
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
}

/// Why [`SqliteStore::join_group`] returned no record.
pub(super) enum GroupError {
    /// The job was not recorded: its spilled files can go.
    Failed(StoreError),
    /// Nobody knows whether it was: its files stay (the next open removes them if no row
    /// names them).
    Lost(StoreError),
}
