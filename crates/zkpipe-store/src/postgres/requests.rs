//! The fleet store's side of the engine's [`JobStore`]: accepting a job (its witnesses
//! inline or in the object store), handing a proof to the result writer, ending a job,
//! finding a request id, forgetting what ended long ago.

use super::events::notify;
use super::results::Record;
use super::{db, job_id, secs, state_of, PgStore};
use crate::columns::timings_text;
use crate::objects::Objects;
use sqlx::{PgPool, Row};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use zkpipe_engine::job_store::{
    Accepted, Fingerprint, JobStore, NewJob, Retention, SharedQueue, StoredJob,
};
use zkpipe_engine::{JobId, JobState, PartitionProof, StoreError};
use zkpipe_formats::packed_wtns;

impl JobStore for PgStore {
    fn durable(&self) -> bool {
        true
    }

    fn accept(&self, job: &NewJob<'_>) -> Result<Accepted, StoreError> {
        let pool = self.requests.clone();
        let objects = self.objects.clone();
        let inline_max = self.inline_max;
        let key_id = job.key_id.to_string();
        let shape = job.key_shape.clone();
        let priority = i16::from(job.priority.rank());
        let request = (!job.request_id.is_empty()).then(|| job.request_id.to_string());
        let fingerprint = job.fingerprint.to_vec();
        // Each witness as stored: packed where that halves it (a circom witness's 0s and
        // 1s), so more of them fit inline and fewer bytes reach the object store; the
        // claiming daemon's engine reads them packed (`claims.rs`). A SHA-256 circuit's
        // 2^14 witness packs from 512 KiB to ~23 KiB (lab/experiments/042m-fleet-accepts.md).
        let witnesses: Vec<Vec<u8>> = job
            .witnesses
            .iter()
            .map(|w| match job.packed {
                true => w.to_vec(),
                false => packed_wtns::pack(w).unwrap_or_else(|| w.to_vec()),
            })
            .collect();
        let daemon = self.daemon.clone();
        self.run(async move {
            let (rows, written) = place(&pool, objects.as_ref(), inline_max, witnesses).await?;
            let job = JobRow {
                key_id: &key_id,
                shape: &shape,
                priority,
                request: request.as_deref(),
                fingerprint: &fingerprint,
                daemon: &daemon,
            };
            let accepted = insert(&pool, &job, &rows).await;
            // Objects written for a job that was not recorded (an error, or a request id
            // already taken) are named by no row: removed here.
            if !matches!(accepted, Ok(Accepted::New(_))) {
                if let Some(o) = &objects {
                    o.delete(&written).await;
                }
            }
            accepted
        })
    }

    fn find_request(&self, request_id: &str) -> Result<Option<(JobId, Fingerprint)>, StoreError> {
        let pool = self.requests.clone();
        let request = request_id.to_string();
        self.run(async move { find_request(&pool, &request).await })
    }

    /// Queues the proof of a partition this daemon claimed for the result writer, which
    /// records it if the claim still holds the partition (else the result is dropped and
    /// counted: another daemon owns the partition now, or its job ended). `last` is the
    /// fleet's to decide, not this daemon's. The claim stays held, its lease renewed,
    /// until the write commits; a write that fails lets the lease lapse, so the partition
    /// runs again: nothing a client saw is lost, since the store is what clients read.
    fn partition_done(
        &self,
        job: JobId,
        index: usize,
        proof: &PartitionProof,
        _last: bool,
    ) -> Result<(), StoreError> {
        let Some(claim) = self.held().get(&(job, index)).copied() else {
            self.refused.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                job,
                partition = index,
                "result dropped: this daemon no longer holds the partition"
            );
            return Ok(());
        };
        self.pending_records.fetch_add(1, Ordering::AcqRel);
        let record = Record {
            job,
            index,
            claim,
            proof_json: proof.proof_json.clone(),
            public_json: proof.public_json.clone(),
            timings: timings_text(&proof.timings),
        };
        if self.records.send(record).is_err() {
            self.pending_records.fetch_sub(1, Ordering::AcqRel);
            return Err(db("the store's result writer stopped"));
        }
        Ok(())
    }

    /// Fails the job of a partition this daemon holds (a cancellation here only follows
    /// one recorded in the store already).
    fn finish(&self, job: JobId, state: JobState, error: Option<&str>) -> Result<(), StoreError> {
        let claims: Vec<((JobId, usize), i64)> = {
            let mut held = self.held();
            let mine: Vec<_> = held
                .iter()
                .filter(|((j, _), _)| *j == job)
                .map(|(k, c)| (*k, *c))
                .collect();
            for (k, _) in &mine {
                held.remove(k);
            }
            mine
        };
        self.wake.notify();
        if state != JobState::Failed {
            return Ok(());
        }
        // Any claim of the job that still holds its partition may fail it.
        for (_, claim) in claims {
            let before = self.end_job(job, state, error.map(String::from), Some(claim))?;
            if before.is_some_and(|s| !s.is_final()) {
                break;
            }
        }
        Ok(())
    }

    /// Gives back what this daemon's earlier run held; nothing is run from here (the
    /// claimer takes work from the queue).
    fn recover(&self) -> Result<Vec<StoredJob>, StoreError> {
        let n = self.release()?;
        if n > 0 {
            tracing::info!(
                partitions = n,
                "partitions held by this daemon's earlier run given back to the queue"
            );
        }
        Ok(Vec::new())
    }

    fn forget_finished(&self, retention: &Retention) -> Result<usize, StoreError> {
        let pool = self.pool.clone();
        let r = *retention;
        self.run(async move {
            // By time: one range of the index on finished_at.
            let old = sqlx::query(
                "DELETE FROM zkpipe_jobs WHERE finished_at < now() - make_interval(secs => $1)",
            )
            .bind(secs(r.time))
            .execute(&pool)
            .await
            .map_err(db)?
            .rows_affected();
            // By count and bytes: the finished jobs newest first, with running totals; every
            // daemon of the fleet asks (the engine, every 10 s), and the first to delete
            // leaves the others nothing to do.
            let over = sqlx::query(FORGET_BEYOND)
                .bind(i64::try_from(r.jobs).unwrap_or(i64::MAX))
                .bind(i64::try_from(r.bytes).unwrap_or(i64::MAX))
                .execute(&pool)
                .await
                .map_err(db)?
                .rows_affected();
            Ok((old + over) as usize)
        })
    }

    fn shared(self: Arc<Self>) -> Option<Arc<dyn SharedQueue>> {
        Some(self)
    }
}

/// Deletes the finished jobs beyond the newest `$1` or beyond `$2` bytes of results (proof
/// and public JSON, error), as [`zkpipe_engine::job_store::retention::result_bytes`]
/// counts them.
const FORGET_BEYOND: &str = "DELETE FROM zkpipe_jobs WHERE id IN (
    SELECT id FROM (
        SELECT j.id,
               row_number() OVER w AS n,
               sum(coalesce(octet_length(j.error), 0) + coalesce(b.bytes, 0)) OVER w AS total
        FROM zkpipe_jobs j
        LEFT JOIN LATERAL (
            SELECT sum(octet_length(p.proof_json) + octet_length(p.public_json)) AS bytes
            FROM zkpipe_partitions p WHERE p.job_id = j.id
        ) b ON true
        WHERE j.finished_at IS NOT NULL
        WINDOW w AS (ORDER BY j.finished_at DESC, j.id DESC)
    ) ranked
    WHERE n > $1 OR total > $2)";

/// A new job's partitions as their rows will hold them: the job id when witnesses went to
/// the object store under it (else the row takes the sequence's next), and each
/// witness inline or by its object's name.
struct PartitionRows {
    reserved: Option<i64>,
    idx: Vec<i32>,
    inline: Vec<Option<Vec<u8>>>,
    object: Vec<Option<String>>,
}

/// What a new job's row holds besides its partitions.
struct JobRow<'a> {
    key_id: &'a str,
    shape: &'a str,
    priority: i16,
    request: Option<&'a str>,
    fingerprint: &'a [u8],
    daemon: &'a str,
}

/// Puts each witness over `inline_max` in the object store (written and synced, all at
/// once), named under a job id taken from the sequence first, before any transaction
/// opens: a pooled connection is then held for the rows and the commit only, not for the
/// object store's writes and syncs, which held it for most of an accept
/// (lab/experiments/042m-fleet-accepts.md). Returns the rows and the objects written
/// (none are left behind when a write fails).
async fn place(
    pool: &PgPool,
    objects: Option<&Objects>,
    inline_max: u64,
    witnesses: Vec<Vec<u8>>,
) -> Result<(PartitionRows, Vec<String>), StoreError> {
    let large = |w: &Vec<u8>| objects.is_some() && w.len() as u64 > inline_max;
    let reserved: Option<i64> = match witnesses.iter().any(large) {
        true => Some(
            sqlx::query_scalar("SELECT nextval(pg_get_serial_sequence('zkpipe_jobs', 'id'))")
                .fetch_one(pool)
                .await
                .map_err(db)?,
        ),
        false => None,
    };
    let mut rows = PartitionRows {
        reserved,
        idx: (0..witnesses.len() as i32).collect(),
        inline: Vec::with_capacity(witnesses.len()),
        object: Vec::with_capacity(witnesses.len()),
    };
    let mut puts = tokio::task::JoinSet::new();
    for (i, w) in witnesses.into_iter().enumerate() {
        match (objects, reserved) {
            (Some(o), Some(id)) if large(&w) => {
                let (o, name) = (o.clone(), o.name(id, i));
                rows.object.push(Some(name.clone()));
                rows.inline.push(None);
                puts.spawn(async move { o.put(&name, w).await });
            }
            _ => {
                rows.inline.push(Some(w));
                rows.object.push(None);
            }
        }
    }
    let written: Vec<String> = rows.object.iter().flatten().cloned().collect();
    let mut failed = None;
    while let Some(put) = puts.join_next().await {
        let put = put.unwrap_or_else(|e| Err(db(format!("writing a witness object: {e}"))));
        if let Err(e) = put {
            failed.get_or_insert(e);
        }
    }
    if let Some(e) = failed {
        // A write failed, so there is an object store to remove the others from.
        if let Some(o) = objects {
            o.delete(&written).await;
        }
        return Err(e);
    }
    Ok((rows, written))
}

/// Records a new job and its partitions in one durable transaction, and wakes the
/// fleet's claimers; an existing job when its request id is taken by the same request.
async fn insert(
    pool: &PgPool,
    job: &JobRow<'_>,
    rows: &PartitionRows,
) -> Result<Accepted, StoreError> {
    let mut tx = pool.begin().await.map_err(db)?;
    let row = sqlx::query(
        "INSERT INTO zkpipe_jobs
             (id, key_id, key_shape, priority, request_id, fingerprint, state, partitions, submitted_by)
         VALUES (COALESCE($8, nextval(pg_get_serial_sequence('zkpipe_jobs', 'id'))),
                 $1, $2, $3, $4, $5, 'queued', $6, $7)
         ON CONFLICT (request_id) WHERE request_id IS NOT NULL DO NOTHING
         RETURNING id",
    )
    .bind(job.key_id)
    .bind(job.shape)
    .bind(job.priority)
    .bind(job.request)
    .bind(job.fingerprint)
    .bind(rows.idx.len() as i32)
    .bind(job.daemon)
    .bind(rows.reserved)
    .fetch_optional(&mut *tx)
    .await
    .map_err(db)?;
    let Some(row) = row else {
        // The request id is taken (by this request or another).
        drop(tx);
        let request = job.request.unwrap_or_default();
        return match find_request(pool, request).await? {
            Some((id, fp)) if fp[..] == job.fingerprint[..] => Ok(Accepted::Existing(id)),
            Some((id, _)) => Err(StoreError::RequestIdTaken {
                request_id: request.to_string(),
                job: id,
            }),
            None => Err(db("request id vanished while accepting")),
        };
    };
    let id: i64 = row.get(0);
    sqlx::query(
        "INSERT INTO zkpipe_partitions (job_id, idx, key_id, key_shape, priority, state, witness, witness_object)
         SELECT $1, t.i, $2, $3, $4, 'queued', t.w, t.o
           FROM UNNEST($5::int4[], $6::bytea[], $7::text[]) AS t(i, w, o)",
    )
    .bind(id)
    .bind(job.key_id)
    .bind(job.shape)
    .bind(job.priority)
    .bind(&rows.idx)
    .bind(&rows.inline)
    .bind(&rows.object)
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    notify(&mut tx, "work").await?;
    tx.commit().await.map_err(db)?;
    Ok(Accepted::New(id as JobId))
}

async fn find_request(
    pool: &PgPool,
    request_id: &str,
) -> Result<Option<(JobId, Fingerprint)>, StoreError> {
    let row = sqlx::query("SELECT id, fingerprint FROM zkpipe_jobs WHERE request_id = $1")
        .bind(request_id)
        .fetch_optional(pool)
        .await
        .map_err(db)?;
    Ok(row.map(|r| {
        let fp: Vec<u8> = r.get(1);
        let mut f = Fingerprint::default();
        if fp.len() == f.len() {
            f.copy_from_slice(&fp);
        }
        (r.get::<i64, _>(0) as JobId, f)
    }))
}

/// See [`PgStore::end_job`].
pub(super) async fn end_job(
    pool: &PgPool,
    objects: Option<&Objects>,
    id: JobId,
    state: JobState,
    error: Option<String>,
    claim: Option<i64>,
) -> Result<Option<JobState>, StoreError> {
    let mut tx = pool.begin().await.map_err(db)?;
    let id = job_id(id);
    let Some(row) = sqlx::query("SELECT state FROM zkpipe_jobs WHERE id = $1 FOR UPDATE")
        .bind(id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db)?
    else {
        return Ok(None);
    };
    let before = state_of(id, row.get(0))?;
    if before.is_final() {
        return Ok(Some(before));
    }
    if let Some(claim) = claim {
        let holds = sqlx::query(
                "SELECT 1 FROM zkpipe_partitions WHERE job_id = $1 AND claim = $2 AND state = 'claimed'",
            )
            .bind(id)
            .bind(claim)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?;
        if holds.is_none() {
            // Not ours any more: whoever holds it now decides.
            return Ok(Some(before));
        }
    }
    sqlx::query("UPDATE zkpipe_jobs SET state = $2, error = $3, finished_at = now() WHERE id = $1")
        .bind(id)
        .bind(state.name())
        .bind(error)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    let dropped = sqlx::query(
        "UPDATE zkpipe_partitions
                SET state = 'dropped', witness = NULL, claim = NULL, lease_until = NULL
              WHERE job_id = $1 AND state IN ('queued', 'claimed')
          RETURNING witness_object",
    )
    .bind(id)
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?;
    notify(&mut tx, &format!("job:{id}")).await?;
    tx.commit().await.map_err(db)?;
    if let Some(o) = objects {
        let names: Vec<String> = dropped.iter().filter_map(|r| r.get(0)).collect();
        o.delete(&names).await;
    }
    Ok(Some(before))
}
