//! The fleet store's side of the engine's [`SharedQueue`]: claiming queued partitions
//! under leases, reading a claim's witness, renewing, reaping and releasing leases; the
//! jobs' state (`status.rs`) and the events (`events.rs`) answer the rest.

use super::events::notify;
use super::{db, job_id, priority_of, secs, PgStore};
use crate::columns::from_unix_ms;
use sqlx::{PgPool, Row};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::broadcast;
use zkpipe_engine::job_store::{CancelOutcome, Claim, QueueDepth, ServedKey, SharedQueue};
use zkpipe_engine::{JobId, JobSnapshot, StoreError};

impl SharedQueue for PgStore {
    fn daemon(&self) -> &str {
        &self.daemon
    }

    fn claim(
        &self,
        keys: &[ServedKey],
        max: usize,
        lease: Duration,
    ) -> Result<Vec<Claim>, StoreError> {
        if max == 0 || keys.is_empty() {
            return Ok(Vec::new());
        }
        let pool = self.pool.clone();
        let ids: Vec<String> = keys.iter().map(|k| k.id.clone()).collect();
        let shapes: Vec<String> = keys.iter().map(|k| k.shape.clone()).collect();
        let hot: Vec<String> = keys
            .iter()
            .filter(|k| k.hot)
            .map(|k| k.id.clone())
            .collect();
        let daemon = self.daemon.clone();
        let claims = self.run(async move {
            let mut tx = pool.begin().await.map_err(db)?;
            lazy_commit(&mut tx).await?;
            let rows = sqlx::query(
                "WITH served AS (
                     SELECT * FROM UNNEST($1::text[], $2::text[]) AS s(key_id, key_shape)
                 ), picked AS (
                     SELECT p.job_id, p.idx FROM zkpipe_partitions p
                       JOIN served s ON s.key_id = p.key_id AND s.key_shape = p.key_shape
                      WHERE p.state = 'queued'
                      ORDER BY p.priority DESC, (p.key_id = ANY($3)) DESC, p.job_id, p.idx
                      LIMIT $4
                        FOR UPDATE OF p SKIP LOCKED
                 )
                 UPDATE zkpipe_partitions p
                    SET state = 'claimed', claim = nextval('zkpipe_claims'), owner = $5,
                        lease_until = now() + make_interval(secs => $6),
                        attempts = p.attempts + 1
                   FROM picked
                  WHERE p.job_id = picked.job_id AND p.idx = picked.idx
              RETURNING p.job_id, p.idx, p.claim, p.witness_object",
            )
            .bind(&ids)
            .bind(&shapes)
            .bind(&hot)
            .bind(max as i64)
            .bind(&daemon)
            .bind(secs(lease))
            .fetch_all(&mut *tx)
            .await
            .map_err(db)?;
            if rows.is_empty() {
                return Ok(Vec::new());
            }
            let jobs: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
            // Partition rows are locked here and job rows after them: the other order
            // from completions and cancellations, so the job rows are only taken where
            // free (a job row that is locked is being completed or ended, which sets
            // its state anyway).
            sqlx::query(
                "UPDATE zkpipe_jobs SET state = 'running'
                  WHERE id IN (SELECT id FROM zkpipe_jobs WHERE id = ANY($1) AND state = 'queued'
                                  FOR UPDATE SKIP LOCKED)",
            )
            .bind(&jobs)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
            let info = sqlx::query(
                "SELECT id, partitions, key_id, priority, request_id,
                        (extract(epoch FROM submitted_at) * 1000)::int8
                   FROM zkpipe_jobs WHERE id = ANY($1)",
            )
            .bind(&jobs)
            .fetch_all(&mut *tx)
            .await
            .map_err(db)?;
            let info: HashMap<i64, &sqlx::postgres::PgRow> =
                info.iter().map(|r| (r.get::<i64, _>(0), r)).collect();
            let mut claims = Vec::with_capacity(rows.len());
            for r in &rows {
                let job: i64 = r.get(0);
                let Some(j) = info.get(&job) else { continue };
                let claim: i64 = r.get(2);
                claims.push((
                    claim,
                    Claim {
                        job: job as JobId,
                        index: r.get::<i32, _>(1) as usize,
                        partitions: j.get::<i32, _>(1) as usize,
                        key_id: j.get(2),
                        priority: priority_of(job, j.get(3))?,
                        request_id: j.get::<Option<String>, _>(4).unwrap_or_default(),
                        submitted: from_unix_ms(j.get(5)),
                        witness_object: r.get(3),
                    },
                ));
            }
            // Only once every row was read back: a priority this version does not know
            // leaves the claims to the transaction's rollback, not to lapsing leases.
            tx.commit().await.map_err(db)?;
            Ok(claims)
        })?;
        let mut held = self.held();
        Ok(claims
            .into_iter()
            .map(|(claim, c)| {
                held.insert((c.job, c.index), claim);
                c
            })
            .collect())
    }

    fn witness(&self, claim: &Claim) -> Result<Vec<u8>, StoreError> {
        // As stored: packed at accept where that halved it (`requests.rs`), which the
        // engine reads without unpacking (a 2^25 partition's 47.6 MB, not 1.07 GB).
        self.stored_witness(claim)
    }

    fn renew(&self, lease: Duration) -> Result<Vec<(JobId, usize)>, StoreError> {
        let claims: Vec<i64> = self.held().values().copied().collect();
        if claims.is_empty() {
            return Ok(Vec::new());
        }
        let pool = self.pool.clone();
        let kept: Vec<i64> = self.run(async move {
            let mut tx = pool.begin().await.map_err(db)?;
            lazy_commit(&mut tx).await?;
            // Rows locked in (job, index) order, as the result writer locks them: two
            // unordered updates of the same rows deadlocked, and Postgres failed the
            // result write (lab/experiments/042m-fleet-accepts.md). A partition whose
            // result the writer recorded meanwhile (done under this claim, not yet out of
            // `held`) is kept, not lost.
            let kept = sqlx::query_scalar(
                "WITH held AS (
                     SELECT job_id, idx, claim, state FROM zkpipe_partitions
                      WHERE claim = ANY($1) AND state IN ('claimed', 'done')
                      ORDER BY job_id, idx
                        FOR UPDATE
                 ), renewed AS (
                     UPDATE zkpipe_partitions p SET lease_until = now() + make_interval(secs => $2)
                       FROM held h
                      WHERE p.job_id = h.job_id AND p.idx = h.idx AND h.state = 'claimed'
                  RETURNING p.claim
                 )
                 SELECT claim FROM renewed
                 UNION ALL
                 SELECT claim FROM held WHERE state = 'done'",
            )
            .bind(&claims)
            .bind(secs(lease))
            .fetch_all(&mut *tx)
            .await
            .map_err(db)?;
            tx.commit().await.map_err(db)?;
            Ok(kept)
        })?;
        let kept: std::collections::HashSet<i64> = kept.into_iter().collect();
        let mut held = self.held();
        let lost: Vec<(JobId, usize)> = held
            .iter()
            .filter(|(_, c)| !kept.contains(c))
            .map(|(k, _)| *k)
            .collect();
        for k in &lost {
            held.remove(k);
        }
        Ok(lost)
    }

    fn reap(&self) -> Result<usize, StoreError> {
        let pool = self.pool.clone();
        self.run(async move {
            requeue(
                &pool,
                "(job_id, idx) IN (
                     SELECT job_id, idx FROM zkpipe_partitions
                      WHERE state = 'claimed' AND lease_until < now()
                        FOR UPDATE SKIP LOCKED)",
                None,
            )
            .await
        })
    }

    fn release(&self) -> Result<usize, StoreError> {
        // Results proved here are written before their partitions are given back.
        if !self.flush_results(Duration::from_secs(10)) {
            tracing::warn!("results still being written after 10 s: their partitions run again");
        }
        let pool = self.pool.clone();
        let daemon = self.daemon.clone();
        let n = self.run(async move {
            requeue(&pool, "owner = $1 AND state = 'claimed'", Some(daemon)).await
        })?;
        self.held().clear();
        Ok(n)
    }

    fn job(&self, id: JobId) -> Result<Option<JobSnapshot>, StoreError> {
        self.job_status(id)
    }

    fn jobs(&self, limit: usize) -> Result<Vec<JobSnapshot>, StoreError> {
        self.job_list(limit)
    }

    fn cancel(&self, id: JobId) -> Result<CancelOutcome, StoreError> {
        self.cancel_job(id)
    }

    fn depths(&self) -> Result<Vec<QueueDepth>, StoreError> {
        self.queue_depths()
    }

    fn job_events(&self) -> broadcast::Receiver<JobId> {
        self.events.subscribe()
    }

    fn work_seen(&self) -> u64 {
        self.wake.generation()
    }

    fn wait_for_work(&self, seen: u64, timeout: Duration) {
        self.wake.wait_past(seen, timeout);
    }

    fn interrupt(&self) {
        self.wake.notify();
    }

    fn results_refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

/// Puts the claimed partitions that `condition` selects (`$1`: `owner`, if given) back in
/// the queue, and says so to the fleet; returns how many. A lost requeue (see
/// [`lazy_commit`]) only leaves a lease to lapse.
async fn requeue(
    pool: &PgPool,
    condition: &str,
    owner: Option<String>,
) -> Result<usize, StoreError> {
    let mut tx = pool.begin().await.map_err(db)?;
    lazy_commit(&mut tx).await?;
    let sql = format!(
        "UPDATE zkpipe_partitions
            SET state = 'queued', claim = NULL, owner = NULL, lease_until = NULL
          WHERE {condition}"
    );
    let mut q = sqlx::query(&sql);
    if let Some(owner) = owner {
        q = q.bind(owner);
    }
    let n = q.execute(&mut *tx).await.map_err(db)?.rows_affected() as usize;
    if n > 0 {
        notify(&mut tx, "work").await?;
    }
    tx.commit().await.map_err(db)?;
    Ok(n)
}

/// Lets this transaction commit without waiting for its WAL to reach disk. Only for
/// claims, lease renewals and partitions put back in the queue: if a crash loses one, the
/// partition is simply queued again (or its lease ends sooner) and whatever was proved
/// under a lost claim is refused and proved again. Results, accepted jobs and job ends
/// are always durable before they are answered.
async fn lazy_commit(tx: &mut sqlx::Transaction<'_, sqlx::Postgres>) -> Result<(), StoreError> {
    sqlx::query("SET LOCAL synchronous_commit = off")
        .execute(&mut **tx)
        .await
        .map(drop)
        .map_err(db)
}

impl PgStore {
    /// A claimed partition's witness as stored: from the object store, or its row.
    fn stored_witness(&self, claim: &Claim) -> Result<Vec<u8>, StoreError> {
        if let Some(name) = &claim.witness_object {
            let Some(o) = self.objects.clone() else {
                return Err(StoreError::Config(format!(
                    "the witness is in an object store ({name}) and this daemon has no store.objects"
                )));
            };
            let name = name.clone();
            return self.run(async move { o.get(&name).await });
        }
        let Some(held) = self.held().get(&(claim.job, claim.index)).copied() else {
            return Err(db("the partition is no longer held here"));
        };
        let pool = self.pool.clone();
        let (job, index) = (job_id(claim.job), claim.index as i32);
        self.run(async move {
            sqlx::query_scalar::<_, Option<Vec<u8>>>(
                "SELECT witness FROM zkpipe_partitions WHERE job_id = $1 AND idx = $2 AND claim = $3",
            )
            .bind(job)
            .bind(index)
            .bind(held)
            .fetch_optional(&pool)
            .await
            .map_err(db)?
            .flatten()
            .ok_or_else(|| db("the partition is no longer held here"))
        })
    }
}
