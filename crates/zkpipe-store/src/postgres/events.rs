//! The fleet's events: `NOTIFY` on one channel when partitions are queued (`work`) and
//! when a job ends (`job:ID`), one listener per daemon that wakes its claimer and its
//! waiters, and the wake-up the claimer waits on.

use super::db;
use sqlx::postgres::PgListener;
use sqlx::PgPool;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use tokio::sync::broadcast;
use zkpipe_engine::{JobId, StoreError};

/// The notification channel: `work` when partitions were queued, `job:ID` when a job
/// ended.
pub(super) const CHANNEL: &str = "zkpipe_events";

/// A wake-up the claimer waits on: a generation counter under a condition variable.
#[derive(Default)]
pub(super) struct Wake {
    generation: Mutex<u64>,
    cond: Condvar,
}

impl Wake {
    pub(super) fn notify(&self) {
        *self.generation.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.cond.notify_all();
    }

    pub(super) fn generation(&self) -> u64 {
        *self.generation.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until the generation moves past `seen` (at once if it already has).
    pub(super) fn wait_past(&self, seen: u64, timeout: Duration) {
        let g = self.generation.lock().unwrap_or_else(|e| e.into_inner());
        drop(self.cond.wait_timeout_while(g, timeout, |g| *g == seen));
    }
}

pub(super) async fn notify(
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
pub(super) async fn listen(pool: PgPool, events: broadcast::Sender<JobId>, wake: Arc<Wake>) {
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
