//! The fleet's job store: one Postgres database that many daemons share, as SP1's
//! cluster, RISC Zero's Bento and zkSync's prover keep theirs. Jobs and partitions are
//! rows (`migrations/`, applied at connect under Postgres's migration lock); a daemon
//! claims queued partitions with `FOR UPDATE SKIP LOCKED` and holds each under a lease
//! (`lease_until`) that it renews (`claims.rs`). A lease that lapses returns its partition
//! to the queue; a result is written only where the partition is still held by the claim
//! that proved it, so each partition finishes once (`results.rs`). Job ends are announced
//! with `NOTIFY` so that any daemon's waiters wake; they poll too, in case a notification
//! was missed (`events.rs`). Accepting jobs and ending them is `requests.rs`; reading
//! their state, `status.rs`. Priorities are kept as [`zkpipe_engine::Priority::rank`]
//! (the queue's index orders claims by it) and states by
//! [`zkpipe_engine::JobState::name`].
//!
//! Locks are taken job row first, partition rows second, by every transaction that takes
//! both, so that completions, failures and cancellations cannot deadlock.
//!
//! The engine's threads are not async: each call runs on the store's own small tokio
//! runtime and the caller blocks on its answer, like a call into SQLite.

mod claims;
mod events;
mod requests;
mod results;
mod status;

use crate::columns;
use crate::objects::Objects;
use events::{listen, Wake};
use results::{record_results, Record, ResultWriter};
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::broadcast;
use zkpipe_engine::{JobId, JobState, Priority, StoreError};

/// The schema, applied by [`PgStore::connect`].
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

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
    /// witnesses) must not hold up claims and results (lab/experiments/020-fleet-store.md,
    /// run 8: one pool of 8 shared by both cost the daemon a fifth of its proofs per
    /// second).
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

fn db(e: impl std::fmt::Display) -> StoreError {
    StoreError::Database {
        path: PATH.into(),
        message: e.to_string(),
    }
}

/// The database's name in messages.
const PATH: &str = "postgres";

/// A job state column ([`JobState::name`]) of job `job`.
fn state_of(job: i64, s: &str) -> Result<JobState, StoreError> {
    columns::state(PATH, job as JobId, s)
}

/// A priority column ([`Priority::rank`], `SMALLINT`) of job `job`.
fn priority_of(job: i64, p: i16) -> Result<Priority, StoreError> {
    columns::priority(PATH, job as JobId, p.into())
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
        // (lab/experiments/020-fleet-store.md, run 6).
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
        self.run(async move {
            requests::end_job(&pool, objects.as_ref(), id, state, error, claim).await
        })
    }
}

fn lock(held: &Held) -> MutexGuard<'_, HashMap<(JobId, usize), i64>> {
    held.lock().unwrap_or_else(|e| e.into_inner())
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

impl Drop for PgStore {
    /// Stops the runtime without waiting: the store may be dropped on an async thread
    /// (the daemon's), where a blocking shutdown would panic.
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
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
