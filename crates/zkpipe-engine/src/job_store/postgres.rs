//! The fleet's job store: one Postgres database that many daemons share, as SP1's
//! cluster, RISC Zero's Bento and zkSync's prover keep theirs. Jobs and partitions are
//! rows (`migrations/`, applied at connect under Postgres's migration lock); a daemon
//! claims queued partitions with `FOR UPDATE SKIP LOCKED` and holds each under a lease
//! (`lease_until`) that it renews. A lease that lapses returns its partition to the queue;
//! a result is written only where the partition is still held by the claim that proved
//! it, so each partition finishes once. Job ends are announced with `NOTIFY` so that any
//! daemon's waiters wake; they poll too, in case a notification was missed.
//!
//! Locks are taken job row first, partition rows second, by every transaction that takes
//! both, so that completions, failures and cancellations cannot deadlock.
//!
//! The engine's threads are not async: each call runs on the store's own small tokio
//! runtime and the caller blocks on its answer, like a call into SQLite.

use super::objects::Objects;
use super::{
    priority_from, state_from, timings_from, timings_text, Accepted, CancelOutcome, Claim,
    Fingerprint, JobStore, NewJob, QueueDepth, ServedKey, SharedQueue, StoreError, StoredJob,
};
use crate::job::{JobId, JobSnapshot, JobState, PartitionProof, Priority};
use sqlx::postgres::{PgListener, PgPoolOptions};
use sqlx::{PgPool, Row};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::broadcast;

/// The schema, applied by [`PgStore::connect`].
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// The notification channel: `work` when partitions were queued, `job:ID` when a job
/// ended.
const CHANNEL: &str = "zkpipe_events";

/// How to reach the shared store.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// `postgres://user:password@host:port/database`.
    pub url: String,
    /// This daemon's name in the queue: unique in the fleet and the same across its
    /// restarts (a restarted daemon gives back what its earlier run held).
    pub daemon: String,
    /// Where witnesses larger than `inline_max` go (`file:///dir` or `s3://bucket/prefix`);
    /// without it every witness is kept in the database.
    pub objects: Option<String>,
    /// The largest witness kept in the database when `objects` is set.
    pub inline_max: u64,
    /// Connections in each of this daemon's two pools: one for its proving (claims,
    /// witnesses, leases, results), one for its clients' requests (submissions, status,
    /// awaits).
    pub connections: u32,
}

/// See the module doc.
pub struct PgStore {
    /// The proving path's connections.
    pool: PgPool,
    /// The clients' requests' connections: a burst of submissions (each writing its
    /// witnesses) must not hold up claims and results (experiment 020, run 8: one pool of
    /// 8 shared by both cost the daemon a fifth of its proofs per second).
    requests: PgPool,
    /// Taken out when the store is dropped (see its `Drop`).
    rt: Option<tokio::runtime::Runtime>,
    daemon: String,
    objects: Option<Objects>,
    inline_max: u64,
    /// The claim holding each partition this daemon runs (or whose result is being
    /// written).
    held: Held,
    events: broadcast::Sender<JobId>,
    wake: Arc<Wake>,
    refused: Arc<AtomicU64>,
    /// Results on their way to the result writer ([`record_results`]).
    records: tokio::sync::mpsc::UnboundedSender<Record>,
    pending_records: Arc<AtomicUsize>,
}

type Held = Arc<Mutex<HashMap<(JobId, usize), i64>>>;

/// A proved partition for the result writer.
struct Record {
    job: JobId,
    index: usize,
    claim: i64,
    proof_json: String,
    public_json: String,
    timings: String,
}

/// Most results one write commits together.
const RECORD_BATCH: usize = 64;

/// A wake-up the claimer waits on: a generation counter under a condition variable.
#[derive(Default)]
struct Wake {
    generation: Mutex<u64>,
    cond: Condvar,
}

impl Wake {
    fn notify(&self) {
        *self.generation.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.cond.notify_all();
    }

    fn generation(&self) -> u64 {
        *self.generation.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until the generation moves past `seen` (at once if it already has).
    fn wait_past(&self, seen: u64, timeout: Duration) {
        let g = self.generation.lock().unwrap_or_else(|e| e.into_inner());
        drop(self.cond.wait_timeout_while(g, timeout, |g| *g == seen));
    }
}

fn db(e: impl std::fmt::Display) -> StoreError {
    StoreError::Database {
        path: "postgres".into(),
        message: e.to_string(),
    }
}

/// A job state column; the schema allows no other values than the states' names.
fn state_of(s: &str) -> JobState {
    state_from(s).unwrap_or(JobState::Queued)
}

/// A priority column (`SMALLINT`).
fn priority_of(p: i16) -> Priority {
    priority_from(p.into())
}

fn job_id(id: JobId) -> i64 {
    i64::try_from(id).unwrap_or(i64::MAX)
}

/// Lease lengths as Postgres intervals (seconds, fractional).
fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

impl PgStore {
    /// Connects, applies the schema's migrations, and starts listening for the fleet's
    /// events.
    pub fn connect(o: &PgOptions) -> Result<Self, StoreError> {
        if !(o.url.starts_with("postgres://") || o.url.starts_with("postgresql://")) {
            return Err(StoreError::Config(format!(
                "store.url {:?} is not a postgres:// URL",
                redact(&o.url)
            )));
        }
        if o.daemon.is_empty() {
            return Err(StoreError::Config("store.daemon is empty".into()));
        }
        let objects = o.objects.as_deref().map(Objects::open).transpose()?;
        // Every call of the daemon's threads runs here, witnesses (hundreds of KiB each)
        // encoded and decoded on these threads: two were the claim stage's limit at 2^14
        // (experiment 020, run 6).
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads((cores / 2).clamp(2, 8))
            .thread_name("zkpipe-pg")
            .enable_all()
            .build()
            .map_err(db)?;
        let url = o.url.clone();
        let connections = o.connections.max(2);
        let pools = block(&rt, async move {
            let options = PgPoolOptions::new()
                .max_connections(connections)
                .acquire_timeout(Duration::from_secs(10));
            let pool = options
                .clone()
                .connect(&url)
                .await
                .map_err(|e| StoreError::Database {
                    path: redact(&url),
                    message: e.to_string(),
                })?;
            let requests = options.connect_lazy_with((*pool.connect_options()).clone());
            MIGRATOR
                .run(&pool)
                .await
                .map_err(|e| StoreError::Database {
                    path: redact(&url),
                    message: format!("applying the schema: {e}"),
                })?;
            Ok((pool, requests))
        });
        let (pool, requests) = match pools {
            Ok(p) => p,
            Err(e) => {
                rt.shutdown_background();
                return Err(e);
            }
        };
        let (events, _) = broadcast::channel(1024);
        let wake = Arc::new(Wake::default());
        rt.spawn(listen(pool.clone(), events.clone(), Arc::clone(&wake)));
        let (records, rx) = tokio::sync::mpsc::unbounded_channel();
        let mut store = Self {
            pool,
            requests,
            rt: None,
            daemon: o.daemon.clone(),
            objects,
            inline_max: o.inline_max,
            held: Held::default(),
            events,
            wake,
            refused: Arc::default(),
            records,
            pending_records: Arc::default(),
        };
        rt.spawn(record_results(
            rx,
            ResultWriter {
                pool: store.pool.clone(),
                objects: store.objects.clone(),
                daemon: store.daemon.clone(),
                held: Arc::clone(&store.held),
                refused: Arc::clone(&store.refused),
                wake: Arc::clone(&store.wake),
                pending: Arc::clone(&store.pending_records),
            },
        ));
        store.rt = Some(rt);
        Ok(store)
    }

    fn held(&self) -> MutexGuard<'_, HashMap<(JobId, usize), i64>> {
        lock(&self.held)
    }

    /// Waits up to `timeout` until every result handed to the store is written (or
    /// refused); returns whether they all were.
    pub fn flush_results(&self, timeout: Duration) -> bool {
        let end = std::time::Instant::now() + timeout;
        loop {
            let seen = self.wake.generation();
            if self.pending_records.load(Ordering::Acquire) == 0 {
                return true;
            }
            let left = end.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            self.wake
                .wait_past(seen, left.min(Duration::from_millis(50)));
        }
    }

    /// Runs `f` on the store's runtime and waits for it.
    fn run<T: Send + 'static>(
        &self,
        f: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        match &self.rt {
            Some(rt) => block(rt, f),
            None => Err(db("the store is closed")),
        }
    }

    /// Ends job `id` as `state` (failed or cancelled) unless it has ended; with `claim`,
    /// only while that claim still holds its partition. Returns the job's state before.
    fn end_job(
        &self,
        id: JobId,
        state: JobState,
        error: Option<String>,
        claim: Option<i64>,
    ) -> Result<Option<JobState>, StoreError> {
        let pool = self.pool.clone();
        let objects = self.objects.clone();
        self.run(async move { end_job(&pool, objects.as_ref(), id, state, error, claim).await })
    }
}

fn lock(held: &Held) -> MutexGuard<'_, HashMap<(JobId, usize), i64>> {
    held.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the result writer needs of the store.
struct ResultWriter {
    pool: PgPool,
    objects: Option<Objects>,
    daemon: String,
    held: Held,
    refused: Arc<AtomicU64>,
    wake: Arc<Wake>,
    pending: Arc<AtomicUsize>,
}

/// The result writer: takes the results the tail hands over and records each batch of
/// up to [`RECORD_BATCH`] in one transaction, so that many proofs share one durable
/// commit and the tail's threads never wait for the database.
async fn record_results(mut rx: tokio::sync::mpsc::UnboundedReceiver<Record>, w: ResultWriter) {
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
        match write_results(&w, &batch).await {
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

/// Writes a batch of results in one transaction; returns, per result, whether it ended
/// its job (`None`: refused, its claim no longer holds the partition), and the witness
/// objects to delete. A fixed number of statements whatever the batch's size (one per
/// result cost ~4 round trips each, and the write's latency is part of every job's).
async fn write_results(
    w: &ResultWriter,
    batch: &[Record],
) -> Result<(Vec<Option<bool>>, Vec<String>), StoreError> {
    let jobs: Vec<i64> = batch.iter().map(|r| job_id(r.job)).collect();
    let mut tx = w.pool.begin().await.map_err(db)?;
    // The job rows first, in id order (see the module doc on lock order).
    sqlx::query("SELECT 1 FROM zkpipe_jobs WHERE id = ANY($1) ORDER BY id FOR UPDATE")
        .bind(&jobs)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
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
    .bind(batch.iter().map(|r| r.index as i32).collect::<Vec<_>>())
    .bind(batch.iter().map(|r| r.claim).collect::<Vec<_>>())
    .bind(batch.iter().map(|r| r.proof_json.as_str()).collect::<Vec<_>>())
    .bind(batch.iter().map(|r| r.public_json.as_str()).collect::<Vec<_>>())
    .bind(batch.iter().map(|r| r.timings.as_str()).collect::<Vec<_>>())
    .bind(&w.daemon)
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?;
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
            .await
            .map_err(db)?;
    }
    tx.commit().await.map_err(db)?;
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

/// See [`PgStore::end_job`].
async fn end_job(
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
    let before = state_of(row.get::<&str, _>(0));
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

/// Runs `f` on `rt` from a thread that may itself be a runtime's worker (the daemon's
/// gRPC handlers call the engine directly): the future is spawned, and the answer comes
/// back over a channel, never through a nested `block_on`.
fn block<T: Send + 'static>(
    rt: &tokio::runtime::Runtime,
    f: impl Future<Output = Result<T, StoreError>> + Send + 'static,
) -> Result<T, StoreError> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    rt.spawn(async move {
        let _ = tx.send(f.await);
    });
    rx.recv()
        .map_err(|_| db("the store's runtime stopped"))
        .and_then(|r| r)
}

/// `url` without its password, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..s + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
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

async fn notify(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    payload: &str,
) -> Result<(), StoreError> {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(payload)
        .execute(&mut **tx)
        .await
        .map(drop)
        .map_err(db)
}

/// Listens for the fleet's events for as long as the runtime lives, reconnecting after
/// a failure (notifications sent meanwhile are lost; waiters and the claimer poll).
async fn listen(pool: PgPool, events: broadcast::Sender<JobId>, wake: Arc<Wake>) {
    loop {
        let listener = async {
            let mut l = PgListener::connect_with(&pool).await?;
            l.listen(CHANNEL).await?;
            loop {
                let n = l.recv().await?;
                if let Some(id) = n.payload().strip_prefix("job:") {
                    if let Ok(id) = id.parse() {
                        let _ = events.send(id);
                    }
                }
                wake.notify();
            }
            #[allow(unreachable_code)]
            Ok::<(), sqlx::Error>(())
        };
        if let Err(e) = listener.await {
            tracing::warn!("job store: listening for events: {e}; retrying in 1 s");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

impl Drop for PgStore {
    /// Stops the runtime without waiting: the store may be dropped on an async thread
    /// (the daemon's), where a blocking shutdown would panic.
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

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
        let priority = job.priority as i16;
        let request = (!job.request_id.is_empty()).then(|| job.request_id.to_string());
        let fingerprint = job.fingerprint.to_vec();
        let witnesses: Vec<Vec<u8>> = job.witnesses.iter().map(|w| w.to_vec()).collect();
        let daemon = self.daemon.clone();
        self.run(async move {
            let mut tx = pool.begin().await.map_err(db)?;
            let row = sqlx::query(
                "INSERT INTO zkpipe_jobs
                     (key_id, key_shape, priority, request_id, fingerprint, state, partitions, submitted_by)
                 VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7)
                 ON CONFLICT (request_id) WHERE request_id IS NOT NULL DO NOTHING
                 RETURNING id",
            )
            .bind(&key_id)
            .bind(&shape)
            .bind(priority)
            .bind(&request)
            .bind(&fingerprint)
            .bind(witnesses.len() as i32)
            .bind(&daemon)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?;
            let Some(row) = row else {
                // The request id is taken (by this request or another).
                drop(tx);
                let request = request.unwrap_or_default();
                let r = find_request(&pool, &request).await?;
                return match r {
                    Some((id, fp)) if fp[..] == fingerprint[..] => Ok(Accepted::Existing(id)),
                    Some((id, _)) => Err(StoreError::RequestIdTaken {
                        request_id: request,
                        job: id,
                    }),
                    None => Err(db("request id vanished while accepting")),
                };
            };
            let id: i64 = row.get(0);
            let mut idx = Vec::with_capacity(witnesses.len());
            let mut inline = Vec::with_capacity(witnesses.len());
            let mut object = Vec::with_capacity(witnesses.len());
            let mut written = Vec::new();
            for (i, w) in witnesses.into_iter().enumerate() {
                idx.push(i as i32);
                match &objects {
                    Some(o) if w.len() as u64 > inline_max => {
                        let name = o.name(id, i);
                        // Written before the row that names it commits.
                        if let Err(e) = o.put(&name, w).await {
                            o.delete(&written).await;
                            return Err(e);
                        }
                        written.push(name.clone());
                        inline.push(None);
                        object.push(Some(name));
                    }
                    _ => {
                        inline.push(Some(w));
                        object.push(None);
                    }
                }
            }
            let insert = sqlx::query(
                "INSERT INTO zkpipe_partitions (job_id, idx, key_id, key_shape, priority, state, witness, witness_object)
                 SELECT $1, t.i, $2, $3, $4, 'queued', t.w, t.o
                   FROM UNNEST($5::int4[], $6::bytea[], $7::text[]) AS t(i, w, o)",
            )
            .bind(id)
            .bind(&key_id)
            .bind(&shape)
            .bind(priority)
            .bind(&idx)
            .bind(&inline)
            .bind(&object)
            .execute(&mut *tx)
            .await;
            let committed = match insert {
                Ok(_) => match notify(&mut tx, "work").await {
                    Ok(()) => tx.commit().await.map_err(db),
                    Err(e) => Err(e),
                },
                Err(e) => Err(db(e)),
            };
            if let Err(e) = committed {
                if let Some(o) = &objects {
                    o.delete(&written).await;
                }
                return Err(e);
            }
            Ok(Accepted::New(id as JobId))
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

    fn forget_finished(&self, retention: Duration) -> Result<usize, StoreError> {
        let pool = self.pool.clone();
        self.run(async move {
            sqlx::query(
                "DELETE FROM zkpipe_jobs WHERE finished_at < now() - make_interval(secs => $1)",
            )
            .bind(secs(retention))
            .execute(&pool)
            .await
            .map(|r| r.rows_affected() as usize)
            .map_err(db)
        })
    }

    fn shared(self: Arc<Self>) -> Option<Arc<dyn SharedQueue>> {
        Some(self)
    }
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

/// A job row as callers see it, with its proofs when it is done and `proofs` is set.
async fn snapshot(
    pool: &PgPool,
    row: &sqlx::postgres::PgRow,
    proofs: bool,
) -> Result<JobSnapshot, StoreError> {
    let id: i64 = row.get("id");
    let state = state_of(row.get::<&str, _>("state"));
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
        priority: priority_of(row.get("priority")),
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
            tx.commit().await.map_err(db)?;
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
                        priority: priority_of(j.get(3)),
                        request_id: j.get::<Option<String>, _>(4).unwrap_or_default(),
                        submitted: super::from_unix_ms(j.get(5)),
                        witness_object: r.get(3),
                    },
                ));
            }
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

    fn renew(&self, lease: Duration) -> Result<Vec<(JobId, usize)>, StoreError> {
        let claims: Vec<i64> = self.held().values().copied().collect();
        if claims.is_empty() {
            return Ok(Vec::new());
        }
        let pool = self.pool.clone();
        let kept: Vec<i64> = self.run(async move {
            let mut tx = pool.begin().await.map_err(db)?;
            lazy_commit(&mut tx).await?;
            let kept = sqlx::query_scalar(
                "UPDATE zkpipe_partitions SET lease_until = now() + make_interval(secs => $2)
                  WHERE claim = ANY($1) AND state = 'claimed'
              RETURNING claim",
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

    fn jobs(&self, limit: usize) -> Result<Vec<JobSnapshot>, StoreError> {
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

    fn cancel(&self, id: JobId) -> Result<CancelOutcome, StoreError> {
        Ok(match self.end_job(id, JobState::Cancelled, None, None)? {
            None => CancelOutcome::Unknown,
            Some(s) if s.is_final() => CancelOutcome::Finished(s),
            Some(_) => CancelOutcome::Cancelled,
        })
    }

    fn depths(&self) -> Result<Vec<QueueDepth>, StoreError> {
        let pool = self.pool.clone();
        self.run(async move {
            let rows = sqlx::query(
                "SELECT key_id, priority,
                        count(*) FILTER (WHERE state = 'queued'),
                        count(*) FILTER (WHERE state = 'claimed')
                   FROM zkpipe_partitions WHERE state IN ('queued', 'claimed')
               GROUP BY key_id, priority",
            )
            .fetch_all(&pool)
            .await
            .map_err(db)?;
            Ok(rows
                .iter()
                .map(|r| QueueDepth {
                    key_id: r.get(0),
                    priority: priority_of(r.get(1)),
                    queued: r.get::<i64, _>(2) as u64,
                    claimed: r.get::<i64, _>(3) as u64,
                })
                .collect())
        })
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

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn urls_lose_their_password_in_messages() {
        assert_eq!(
            redact("postgres://zk:secret@db:5432/zkpipe"),
            "postgres://zk:***@db:5432/zkpipe"
        );
        assert_eq!(redact("postgres://zk@db/zkpipe"), "postgres://zk@db/zkpipe");
    }
}
