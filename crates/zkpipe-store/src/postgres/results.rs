//! The result writer: proofs the tail hands over are recorded in batches, each in one
//! transaction, and only where the claim that proved a partition still holds it.

use super::events::{Wake, CHANNEL};
use super::{db, job_id, lock, Held};
use crate::objects::Objects;
use sqlx::{PgPool, Row};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use zkpipe_engine::JobId;

/// A proved partition for the result writer.
pub(super) struct Record {
    pub(super) job: JobId,
    pub(super) index: usize,
    pub(super) claim: i64,
    pub(super) proof_json: String,
    pub(super) public_json: String,
    pub(super) timings: String,
}

/// Most results one write commits together.
const RECORD_BATCH: usize = 64;

/// What the result writer needs of the store.
pub(super) struct ResultWriter {
    pub(super) pool: PgPool,
    pub(super) objects: Option<Objects>,
    pub(super) daemon: String,
    pub(super) held: Held,
    pub(super) refused: Arc<AtomicU64>,
    pub(super) wake: Arc<Wake>,
    pub(super) pending: Arc<AtomicUsize>,
}

/// The result writer: takes the results the tail hands over and records each batch of
/// up to [`RECORD_BATCH`] in one transaction, so that many proofs share one durable
/// commit and the tail's threads never wait for the database.
pub(super) async fn record_results(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Record>,
    w: ResultWriter,
) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while batch.len() < RECORD_BATCH {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        // Job rows are locked in id order: two writers never wait on each other in a cycle.
        batch.sort_by_key(|r| (r.job, r.index));
        let mut written = write_results(&w, &batch).await;
        // A deadlock's victim is rolled back whole: write it again rather than let its
        // leases lapse (the rows are locked in one order, so this is a guard).
        for _ in 1..WRITE_ATTEMPTS {
            match &written {
                Err(e) if is_deadlock(e) => written = write_results(&w, &batch).await,
                _ => break,
            }
        }
        match written.map_err(db) {
            Ok((outcomes, objects)) => {
                for (r, outcome) in batch.iter().zip(outcomes) {
                    match outcome {
                        // One line per partition that finished (the fleet test counts them).
                        Some(done) => {
                            tracing::info!(
                                job = r.job,
                                partition = r.index,
                                "partition recorded in the shared store"
                            );
                            if done {
                                tracing::info!(
                                    job = r.job,
                                    "job done (the shared store's last partition)"
                                );
                            }
                        }
                        None => {
                            w.refused.fetch_add(1, Ordering::Relaxed);
                            tracing::warn!(
                                job = r.job,
                                partition = r.index,
                                "result dropped: the partition's lease lapsed or its job ended"
                            );
                        }
                    }
                }
                if let Some(o) = &w.objects {
                    o.delete(&objects).await;
                }
            }
            Err(e) => tracing::error!(
                partitions = batch.len(),
                "recording results: {e}; their leases will lapse and they run again"
            ),
        }
        {
            let mut held = lock(&w.held);
            for r in &batch {
                if held.get(&(r.job, r.index)) == Some(&r.claim) {
                    held.remove(&(r.job, r.index));
                }
            }
        }
        w.pending.fetch_sub(batch.len(), Ordering::AcqRel);
        w.wake.notify();
    }
}

/// Times a batch is written when Postgres picks its transaction as a deadlock's victim.
const WRITE_ATTEMPTS: usize = 3;

/// Whether `e` is Postgres's `deadlock_detected` (SQLSTATE 40P01).
fn is_deadlock(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|c| c == "40P01")
}

/// Writes a batch of results in one transaction; returns, per result, whether it ended
/// its job (`None`: refused, its claim no longer holds the partition), and the witness
/// objects to delete. A fixed number of statements whatever the batch's size (one per
/// result cost ~4 round trips each, and the write's latency is part of every job's).
async fn write_results(
    w: &ResultWriter,
    batch: &[Record],
) -> Result<(Vec<Option<bool>>, Vec<String>), sqlx::Error> {
    let jobs: Vec<i64> = batch.iter().map(|r| job_id(r.job)).collect();
    let indices: Vec<i32> = batch.iter().map(|r| r.index as i32).collect();
    let mut tx = w.pool.begin().await?;
    // The job rows first, in id order, then the partitions' in (job, index) order, as
    // the lease renewal locks them: no two writers wait on each other in a cycle.
    sqlx::query("SELECT 1 FROM zkpipe_jobs WHERE id = ANY($1) ORDER BY id FOR UPDATE")
        .bind(&jobs)
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "SELECT 1 FROM zkpipe_partitions
          WHERE (job_id, idx) IN (SELECT * FROM UNNEST($1::int8[], $2::int4[]))
          ORDER BY job_id, idx
            FOR UPDATE",
    )
    .bind(&jobs)
    .bind(&indices)
    .execute(&mut *tx)
    .await?;
    // Each result lands only where its claim still holds its partition; each job counts
    // the partitions that landed, and ends with its last.
    let rows = sqlx::query(
        "WITH r AS (
             SELECT * FROM UNNEST($1::int8[], $2::int4[], $3::int8[], $4::text[], $5::text[], $6::text[])
                 AS r(job_id, idx, claim, proof, public, timings)
         ), landed AS (
             UPDATE zkpipe_partitions p
                SET state = 'done', done_by = $7, proof_json = r.proof, public_json = r.public,
                    timings = r.timings, witness = NULL, lease_until = NULL
               FROM r
              WHERE p.job_id = r.job_id AND p.idx = r.idx AND p.claim = r.claim
                AND p.state = 'claimed'
          RETURNING p.job_id, p.idx, p.witness_object
         ), counted AS (
             SELECT job_id, count(*)::int4 AS n FROM landed GROUP BY job_id
         ), jobs AS (
             UPDATE zkpipe_jobs j
                SET partitions_done = j.partitions_done + c.n,
                    state = CASE WHEN j.partitions_done + c.n = j.partitions THEN 'done' ELSE 'running' END,
                    finished_at = CASE WHEN j.partitions_done + c.n = j.partitions THEN now() END
               FROM counted c
              WHERE j.id = c.job_id
          RETURNING j.id, j.state
         )
         SELECT landed.job_id, landed.idx, landed.witness_object, jobs.state
           FROM landed JOIN jobs ON jobs.id = landed.job_id",
    )
    .bind(&jobs)
    .bind(&indices)
    .bind(batch.iter().map(|r| r.claim).collect::<Vec<_>>())
    .bind(batch.iter().map(|r| r.proof_json.as_str()).collect::<Vec<_>>())
    .bind(batch.iter().map(|r| r.public_json.as_str()).collect::<Vec<_>>())
    .bind(batch.iter().map(|r| r.timings.as_str()).collect::<Vec<_>>())
    .bind(&w.daemon)
    .fetch_all(&mut *tx)
    .await?;
    let mut landed: HashMap<(i64, i32), bool> = HashMap::with_capacity(rows.len());
    let mut objects = Vec::new();
    let mut ended = Vec::new();
    for row in &rows {
        let (job, idx): (i64, i32) = (row.get(0), row.get(1));
        objects.extend(row.get::<Option<String>, _>(2));
        let done = row.get::<&str, _>(3) == "done";
        if done && !ended.contains(&job) {
            ended.push(job);
        }
        landed.insert((job, idx), done);
    }
    if !ended.is_empty() {
        sqlx::query("SELECT pg_notify($1, 'job:' || id) FROM UNNEST($2::int8[]) AS id")
            .bind(CHANNEL)
            .bind(&ended)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    // A job that ended is reported once, at its last result in the batch.
    let mut outcomes: Vec<Option<bool>> = batch
        .iter()
        .map(|r| landed.get(&(job_id(r.job), r.index as i32)).copied())
        .collect();
    let mut reported = Vec::new();
    for (r, o) in batch.iter().zip(outcomes.iter_mut()).rev() {
        if *o == Some(true) {
            if reported.contains(&r.job) {
                *o = Some(false);
            } else {
                reported.push(r.job);
            }
        }
    }
    Ok((outcomes, objects))
}
