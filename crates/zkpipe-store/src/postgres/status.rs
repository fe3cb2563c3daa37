//! What the fleet store tells about jobs: one job with its proofs, a listing, a
//! cancellation, and the queue's depth per key and priority.

use super::{db, job_id, priority_of, state_of, PgStore};
use crate::columns::timings_from;
use sqlx::{PgPool, Row};
use zkpipe_engine::job_store::{CancelOutcome, QueueDepth};
use zkpipe_engine::{JobId, JobSnapshot, JobState, PartitionProof, StoreError};

/// A job row as callers see it, with its proofs when it is done and `proofs` is set.
async fn snapshot(
    pool: &PgPool,
    row: &sqlx::postgres::PgRow,
    proofs: bool,
) -> Result<JobSnapshot, StoreError> {
    let id: i64 = row.get("id");
    let state = state_of(id, row.get("state"))?;
    let proofs = if proofs && state == JobState::Done {
        sqlx::query(
            "SELECT proof_json, public_json, timings FROM zkpipe_partitions
              WHERE job_id = $1 ORDER BY idx",
        )
        .bind(id)
        .fetch_all(pool)
        .await
        .map_err(db)?
        .iter()
        .map(|r| PartitionProof {
            proof_json: r.get::<Option<String>, _>(0).unwrap_or_default(),
            public_json: r.get::<Option<String>, _>(1).unwrap_or_default(),
            timings: timings_from(r.get::<Option<&str>, _>(2).unwrap_or("")),
        })
        .collect()
    } else {
        Vec::new()
    };
    Ok(JobSnapshot {
        id: id as JobId,
        key_id: row.get("key_id"),
        priority: priority_of(id, row.get("priority"))?,
        state,
        partitions: row.get::<i32, _>("partitions") as usize,
        partitions_done: row.get::<i32, _>("partitions_done") as usize,
        proofs,
        error: row.get("error"),
        request_id: row
            .get::<Option<String>, _>("request_id")
            .unwrap_or_default(),
        finished_at: None,
    })
}

const JOB_COLUMNS: &str =
    "id, key_id, priority, request_id, state, error, partitions, partitions_done";

impl PgStore {
    /// See [`zkpipe_engine::SharedQueue::job`].
    pub(super) fn job_status(&self, id: JobId) -> Result<Option<JobSnapshot>, StoreError> {
        let pool = self.requests.clone();
        self.run(async move {
            let row = sqlx::query(&format!(
                "SELECT {JOB_COLUMNS} FROM zkpipe_jobs WHERE id = $1"
            ))
            .bind(job_id(id))
            .fetch_optional(&pool)
            .await
            .map_err(db)?;
            match row {
                Some(r) => Ok(Some(snapshot(&pool, &r, true).await?)),
                None => Ok(None),
            }
        })
    }

    /// See [`zkpipe_engine::SharedQueue::jobs`].
    pub(super) fn job_list(&self, limit: usize) -> Result<Vec<JobSnapshot>, StoreError> {
        let pool = self.requests.clone();
        self.run(async move {
            let rows = sqlx::query(&format!(
                "(SELECT {JOB_COLUMNS} FROM zkpipe_jobs WHERE finished_at IS NULL
                   ORDER BY id DESC LIMIT $1)
                 UNION
                 (SELECT {JOB_COLUMNS} FROM zkpipe_jobs ORDER BY id DESC LIMIT $1)
                 ORDER BY id DESC"
            ))
            .bind(limit as i64)
            .fetch_all(&pool)
            .await
            .map_err(db)?;
            let mut out = Vec::with_capacity(rows.len());
            for r in &rows {
                out.push(snapshot(&pool, r, false).await?);
            }
            Ok(out)
        })
    }

    /// See [`zkpipe_engine::SharedQueue::cancel`].
    pub(super) fn cancel_job(&self, id: JobId) -> Result<CancelOutcome, StoreError> {
        Ok(match self.end_job(id, JobState::Cancelled, None, None)? {
            None => CancelOutcome::Unknown,
            Some(s) if s.is_final() => CancelOutcome::Finished(s),
            Some(_) => CancelOutcome::Cancelled,
        })
    }

    /// See [`zkpipe_engine::SharedQueue::depths`].
    pub(super) fn queue_depths(&self) -> Result<Vec<QueueDepth>, StoreError> {
        let pool = self.pool.clone();
        self.run(async move {
            let rows = sqlx::query(
                "SELECT key_id, priority,
                        count(*) FILTER (WHERE state = 'queued'),
                        count(*) FILTER (WHERE state = 'claimed'),
                        min(job_id)
                   FROM zkpipe_partitions WHERE state IN ('queued', 'claimed')
               GROUP BY key_id, priority",
            )
            .fetch_all(&pool)
            .await
            .map_err(db)?;
            rows.iter()
                .map(|r| {
                    Ok(QueueDepth {
                        key_id: r.get(0),
                        // A job of that priority names it in the error.
                        priority: priority_of(r.get(4), r.get(1))?,
                        queued: r.get::<i64, _>(2) as u64,
                        claimed: r.get::<i64, _>(3) as u64,
                    })
                })
                .collect()
        })
    }
}
