//! The SQLite store's records: accepting jobs (a group's rows and their partitions' in one
//! transaction, `commit.rs`), a partition's proof, a job's end, reading everything back at start, and
//! forgetting what ended long ago.

use super::commit::{GroupError, Pending};
use super::retention::{bytes_of, Ended};
use super::SqliteStore;
use crate::columns::{self, from_unix_ms, timings_from, timings_text, unix_ms};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::SystemTime;
use zkpipe_engine::job::PartitionProof;
use zkpipe_engine::job_store::{
    self, Accepted, Fingerprint, JobStore, NewJob, ProvedPartition, Retention, StagingWitness,
    StoredJob, StoredPartition,
};
use zkpipe_engine::{JobId, JobState, StoreError};
use zkpipe_formats::packed_wtns;

impl SqliteStore {
    /// Records a group's jobs in one transaction, commits it (not yet synced), and sets
    /// every job's outcome: its record with the commit's number for
    /// [`Self::sync_commits`], or why it failed.
    pub(super) fn record_group(&self, group: &[Arc<Pending>]) {
        if group.is_empty() {
            return;
        }
        let mut conn = self.lock();
        let committed = (|| -> Result<_, StoreError> {
            let begin = TransactionBehavior::Immediate;
            let mut tx = conn
                .transaction_with_behavior(begin)
                .map_err(|e| self.err(e))?;
            let outcomes = match self.record_jobs(&mut tx, group, false)? {
                Some(outcomes) => outcomes,
                None => {
                    // A job's record failed part-way: the group again, each job in a
                    // savepoint of its own, so that its failure leaves the others'.
                    drop(tx);
                    tx = conn
                        .transaction_with_behavior(begin)
                        .map_err(|e| self.err(e))?;
                    self.record_jobs(&mut tx, group, true)?.unwrap_or_default()
                }
            };
            let new = outcomes
                .iter()
                .filter(|o| matches!(o, Ok(Accepted::New(_))))
                .count() as u64;
            Ok((self.commit(tx, new)?, outcomes))
        })();
        drop(conn);
        self.groups.fetch_add(1, Ordering::Relaxed);
        #[cfg(test)]
        if self.abort_group.load(Ordering::SeqCst) {
            panic!("injected: the leader stops before answering its group");
        }
        match committed {
            Ok((seq, outcomes)) => {
                for (job, out) in group.iter().zip(outcomes) {
                    job.set(out.map(|a| (a, seq)));
                }
            }
            Err(e) => {
                let message = e.to_string();
                for job in group {
                    job.set(Err(self.err(&message)));
                }
            }
        }
    }

    /// Records `group`'s jobs in `tx`: each in a savepoint of its own when `savepoints`,
    /// else none (a savepoint each cost the one writer time it is short of, and most
    /// groups fail nowhere): then `None` at the first job whose record failed part-way
    /// (a taken request id writes nothing), the transaction to be dropped.
    fn record_jobs(
        &self,
        tx: &mut rusqlite::Transaction<'_>,
        group: &[Arc<Pending>],
        savepoints: bool,
    ) -> Result<Option<Vec<Result<Accepted, StoreError>>>, StoreError> {
        let mut outcomes = Vec::with_capacity(group.len());
        for job in group {
            let out = if savepoints {
                let sp = tx.savepoint().map_err(|e| self.err(e))?;
                let out = self.record(&sp, job);
                if out.is_ok() {
                    sp.commit().map_err(|e| self.err(e))?;
                }
                out
            } else {
                let out = self.record(tx, job);
                if matches!(&out, Err(e) if !matches!(e, StoreError::RequestIdTaken { .. })) {
                    return Ok(None);
                }
                out
            };
            outcomes.push(out);
        }
        Ok(Some(outcomes))
    }

    /// Records one job of a group (its row and its partitions'), or finds the job its
    /// request id names.
    fn record(&self, tx: &Connection, job: &Pending) -> Result<Accepted, StoreError> {
        if let Some(request) = request_column(&job.request_id) {
            if let Some((id, fp)) = named_by(tx, request).map_err(|e| self.err(e))? {
                return if fp == job.fingerprint {
                    Ok(Accepted::Existing(id as JobId))
                } else {
                    Err(StoreError::RequestIdTaken {
                        request_id: request.into(),
                        job: id as JobId,
                    })
                };
            }
        }
        tx.prepare_cached(
            "INSERT INTO jobs (key_id, priority, request_id, fingerprint, state, submitted_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .and_then(|mut q| {
            q.execute(params![
                job.key_id,
                job.priority,
                request_column(&job.request_id),
                &job.fingerprint[..],
                JobState::Queued.name(),
                unix_ms(SystemTime::now()),
            ])
        })
        .map_err(|e| self.err(e))?;
        let id = tx.last_insert_rowid();
        #[cfg(test)]
        if self.fail_accept_of.lock().unwrap().as_deref() == Some(job.request_id.as_str()) {
            return Err(self.err("injected: the job's record fails after its row"));
        }
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO partitions (job_id, idx, witness, witness_file)
                 VALUES (?1, ?2, ?3, ?4)",
            )
            .map_err(|e| self.err(e))?;
        for (i, (inline, file)) in job.inline.iter().zip(&job.files).enumerate() {
            insert
                .execute(params![id, i as i64, inline, file])
                .map_err(|e| self.err(e))?;
        }
        Ok(Accepted::New(id as JobId))
    }
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
        // Big witnesses are written and synced before the job queues, in parallel with
        // other accepts, so that result writes (other jobs' partitions) never wait
        // behind them and a group's leader has only rows to record (`commit.rs`).
        // Witnesses staged as they arrived are written and synced already.
        let staged: Vec<_> = (0..job.witnesses.len()).map(|i| job.staged(i)).collect();
        // Each witness as stored: packed where that halves it (a circom witness's 0s and
        // 1s), so there are fewer bytes to write and sync, and more of them inline.
        let packed: Vec<Option<Vec<u8>>> = job
            .witnesses
            .iter()
            .zip(&staged)
            .map(|(w, s)| {
                if s.is_some() || job.packed {
                    None
                } else {
                    packed_wtns::pack(w)
                }
            })
            .collect();
        let stored: Vec<&[u8]> = job
            .witnesses
            .iter()
            .zip(&packed)
            .map(|(&w, p)| p.as_deref().unwrap_or(w))
            .collect();
        let spilled = self.spill(&stored, |i| staged[i].is_some())?;
        let names: Vec<&String> = spilled.iter().flatten().collect();
        let synced = if names.is_empty() && staged.iter().any(Option::is_some) {
            self.sync_dir()
        } else {
            self.sync_files(&names)
        };
        if let Err(e) = synced {
            self.remove_files(names);
            return Err(self.err(format!("syncing witness files: {e}")));
        }
        let files = spilled
            .iter()
            .zip(&staged)
            .map(|(f, s)| f.clone().or_else(|| s.map(|s| s.name().to_string())))
            .collect();
        let pending = Arc::new(Pending::new(job, &stored, files));
        let keep_staged = || staged.iter().flatten().for_each(|s| s.keep());
        // A staged file that ends up named by no job is removed by its owner (the
        // engine's request) when dropped; only the files spilled here are removed here.
        match self.join_group(Arc::clone(&pending)) {
            Ok(recorded @ (Accepted::New(_), _)) => {
                keep_staged();
                Ok(recorded)
            }
            Ok(existing) => {
                self.remove_files(spilled.iter().flatten());
                Ok(existing)
            }
            Err(GroupError::Failed(e)) => {
                self.remove_files(spilled.iter().flatten());
                Err(e)
            }
            Err(GroupError::Lost(e)) => {
                // Whether the commit named them is unknown: the next open decides.
                keep_staged();
                Err(e)
            }
        }
    }

    fn stage(&self, bytes: u64) -> Result<Option<Box<dyn StagingWitness>>, StoreError> {
        Ok(self
            .stage_file(bytes)?
            .map(|s| Box::new(s) as Box<dyn StagingWitness>))
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
        let record = ProvedPartition {
            job,
            index,
            proof,
            last,
        };
        let (files, ended) = self.write(|tx| self.record_proof(tx, &record))?;
        // Only once the commit no longer names them.
        self.remove_files(&files);
        self.entered(ended);
        Ok(())
    }

    /// All in one transaction, one commit and one sync: a transaction each kept two
    /// GPUs' small proofs at ~3,200 a second (lab/experiments/042l-result-batches.md).
    /// If it fails (nothing of it is recorded), one by one, to tell which failed.
    fn partitions_done(&self, done: &[ProvedPartition<'_>]) -> Result<(), (usize, StoreError)> {
        if done.len() > 1 {
            let together = self.write(|tx| {
                let mut all = Vec::with_capacity(done.len());
                for d in done {
                    all.push(self.record_proof(tx, d)?);
                }
                Ok(all)
            });
            if let Ok(all) = together {
                for (files, ended) in all {
                    self.remove_files(&files);
                    self.entered(ended);
                }
                return Ok(());
            }
        }
        job_store::one_by_one(self, done)
    }

    fn finish(&self, job: JobId, state: JobState, error: Option<&str>) -> Result<(), StoreError> {
        let (files, ended) =
            self.write(|tx| end(tx, job, state, error).map_err(|e| self.err(e)))?;
        self.remove_files(&files);
        self.entered(ended);
        Ok(())
    }

    fn recover(&self) -> Result<Vec<StoredJob>, StoreError> {
        let (mut jobs, lost) = self.read_back()?;
        // Without witness syncs a power cut can leave a job whose witness never reached
        // the disk: it ends as failed, by name, instead of stopping the daemon's start.
        for (at, message) in lost {
            let job = &mut jobs[at];
            self.finish(job.id, JobState::Failed, Some(&message))?;
            job.state = JobState::Failed;
            job.error = Some(message);
            job.finished = Some(SystemTime::now());
            for p in &mut job.partitions {
                if matches!(p, StoredPartition::Pending(_)) {
                    *p = StoredPartition::Dropped;
                }
            }
        }
        Ok(jobs)
    }

    fn forget_finished(&self, retention: &Retention) -> Result<usize, StoreError> {
        self.forget(retention)
    }
}

/// Jobs read back whose witness file is missing (without witness syncs): each one's index
/// in the jobs read, and why it fails.
type Lost = Vec<(usize, String)>;

impl SqliteStore {
    /// Every job as stored, and those whose witness file is missing while witnesses are not
    /// synced. With witness syncs on, a missing file is an error: the store lost what it
    /// had synced.
    fn read_back(&self) -> Result<(Vec<StoredJob>, Lost), StoreError> {
        let conn = self.lock();
        let mut lost = Vec::new();
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
            let path = self.path.display().to_string();
            let state = columns::state(&path, id as JobId, &state)?;
            let priority = columns::priority(&path, id as JobId, priority)?;
            let mut missing = None;
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
                        (Some(w), ..) => Stored::Inline(w),
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
                    // As stored: the engine reads a packed witness as it is.
                    Stored::Inline(w) => Ok(StoredPartition::Pending(w)),
                    Stored::Spilled(f) => match std::fs::read(self.spill_dir.join(&f)) {
                        Ok(w) => Ok(StoredPartition::Pending(w)),
                        Err(e)
                            if !self.witness_sync && e.kind() == std::io::ErrorKind::NotFound =>
                        {
                            missing = Some(f);
                            Ok(StoredPartition::Dropped)
                        }
                        Err(e) => Err(self.err(format!("job {id}: witness file {f}: {e}"))),
                    },
                })
                .collect::<Result<Vec<_>, _>>()?;
            out.push(StoredJob {
                id: id as JobId,
                key_id,
                priority,
                request_id: request_id.unwrap_or_default(),
                state,
                error,
                submitted: from_unix_ms(submitted),
                finished: finished.map(from_unix_ms),
                partitions,
            });
            if let Some(f) = missing {
                lost.push((
                    out.len() - 1,
                    format!(
                        "its witness file {f} is missing: witnesses are written without a sync \
                         (witness_sync off) and the host stopped before it reached the disk"
                    ),
                ));
            }
        }
        Ok((out, lost))
    }
}

/// The job a request id names and its fingerprint (a wrong-length one reads as zeros,
/// which no request hashes to).
fn named_by(conn: &Connection, request_id: &str) -> rusqlite::Result<Option<(i64, Fingerprint)>> {
    conn.prepare_cached("SELECT id, fingerprint FROM jobs WHERE request_id = ?1")?
        .query_row([request_id], |r| {
            let fp: Vec<u8> = r.get(1)?;
            Ok((r.get(0)?, fp.try_into().unwrap_or_default()))
        })
        .optional()
}

/// A partition row as read, before a spilled witness is read from its file.
enum Stored {
    Ready(StoredPartition),
    /// A witness in its row, as stored (maybe packed).
    Inline(Vec<u8>),
    /// A witness in a file of its own, as stored (maybe packed).
    Spilled(String),
}

impl SqliteStore {
    /// Records a partition's proof (and ends its job when it is the last), dropping its
    /// witness; returns the spilled files to remove once the transaction commits, and
    /// the job's end for the ledger.
    fn record_proof(
        &self,
        tx: &rusqlite::Transaction<'_>,
        d: &ProvedPartition<'_>,
    ) -> Result<(Vec<String>, Option<Ended>), StoreError> {
        let (job, index) = (d.job as i64, d.index as i64);
        let mut files = spilled(tx, "job_id = ?1 AND idx = ?2", params![job, index])
            .map_err(|e| self.err(e))?;
        tx.prepare_cached(
            "UPDATE partitions SET witness = NULL, witness_file = NULL, proof_json = ?3,
                 public_json = ?4, timings = ?5
             WHERE job_id = ?1 AND idx = ?2",
        )
        .and_then(|mut q| {
            q.execute(params![
                job,
                index,
                d.proof.proof_json,
                d.proof.public_json,
                timings_text(&d.proof.timings),
            ])
        })
        .map_err(|e| self.err(e))?;
        #[cfg(test)]
        if self.fail_proof_of.load(Ordering::SeqCst) == d.job {
            return Err(self.err("injected: the proof's record fails after its row"));
        }
        let mut ended = None;
        if d.last {
            let (f, e) = end(tx, d.job, JobState::Done, None).map_err(|e| self.err(e))?;
            files.extend(f);
            ended = e;
        }
        Ok((files, ended))
    }
}

/// The spilled witness files of the partitions `filter` selects.
fn spilled(
    tx: &rusqlite::Transaction<'_>,
    filter: &str,
    args: impl rusqlite::Params,
) -> rusqlite::Result<Vec<String>> {
    let sql =
        format!("SELECT witness_file FROM partitions WHERE witness_file IS NOT NULL AND {filter}");
    let mut q = tx.prepare_cached(&sql)?;
    let names = q.query_map(args, |r| r.get(0))?.collect();
    names
}

/// Ends a job (only once: an ended job is left as it is) and drops its witnesses; returns
/// the spilled files to remove once the transaction commits, and the end for the ledger.
fn end(
    tx: &rusqlite::Transaction<'_>,
    job: JobId,
    state: JobState,
    error: Option<&str>,
) -> rusqlite::Result<(Vec<String>, Option<Ended>)> {
    let at_ms = unix_ms(SystemTime::now());
    let n = tx
        .prepare_cached(
            "UPDATE jobs SET state = ?2, error = ?3, finished_ms = ?4
             WHERE id = ?1 AND finished_ms IS NULL",
        )?
        .execute(params![job as i64, state.name(), error, at_ms])?;
    if n == 0 {
        return Ok((Vec::new(), None));
    }
    let ended = Ended {
        at_ms,
        id: job,
        bytes: bytes_of(tx, job)?,
    };
    let files = spilled(tx, "job_id = ?1", [job as i64])?;
    tx.prepare_cached(
        "UPDATE partitions SET witness = NULL, witness_file = NULL WHERE job_id = ?1",
    )?
    .execute([job as i64])?;
    Ok((files, Some(ended)))
}
