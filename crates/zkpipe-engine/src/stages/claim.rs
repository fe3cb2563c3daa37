//! The claim stage, first in a daemon of a fleet: it takes partitions from the shared job
//! store (docs/fleet.md) for the keys this daemon holds, hot keys first at equal priority,
//! and queues them for admission like partitions submitted here. It keeps about
//! `claim_ahead` partitions in hand, renews their leases every third of the lease, puts
//! lapsed leases of any daemon back in the queue, and drops a partition here when its
//! job ended elsewhere (cancelled, or failed on another daemon).
//!
//! ```text
//!  shared store ─► claim ─► Queued ─► admission ─► … ─► tail ─► result written under the claim
//! ```

use crate::config::FleetConfig;
use crate::job::{JobId, Priority};
use crate::job_store::{shape_tag, Claim, JobStore, ServedKey, SharedQueue};
use crate::keys::store::KeyStore;
use crate::keys::Residency;
use crate::live_job::Job;
use crate::metrics::Metrics;
use crate::submit::Submission;
use crate::trace::log_ms;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::broadcast::error::TryRecvError;

/// The partitions claimed here and not finished, shared with the engine, which drops
/// them before it closes its queues when it stops.
#[derive(Default)]
pub(crate) struct Held(Mutex<HashMap<(JobId, usize), Arc<Job>>>);

impl Held {
    fn lock(&self) -> MutexGuard<'_, HashMap<(JobId, usize), Arc<Job>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stops working on every partition held here, without ending its job.
    pub fn abandon_all(&self) {
        for job in self.lock().values() {
            job.abandon();
        }
    }
}

/// How often the keys this daemon serves are listed again.
const KEYS_EVERY: Duration = Duration::from_secs(5);

/// How often a daemon with `claim_ahead` partitions in hand looks for room again.
const ROOM_POLL: Duration = Duration::from_millis(5);

/// See the module doc.
pub(crate) struct ClaimStage {
    pub queue: Arc<dyn SharedQueue>,
    /// The same store, as the claimed jobs record their results into it.
    pub store: Arc<dyn JobStore>,
    pub submission: Arc<Submission>,
    pub keys: Arc<KeyStore>,
    pub config: FleetConfig,
    pub metrics: Arc<Metrics>,
    pub held: Arc<Held>,
    pub stop: Arc<AtomicBool>,
    /// Claimed partitions being started (their witness read and checked) on the rayon
    /// pool, not yet counted in the engine's pending partitions.
    pub starting: AtomicUsize,
}

impl ClaimStage {
    /// Runs until the engine stops; then gives back what it holds.
    pub fn run(self: Arc<Self>) {
        let mut events = self.queue.job_events();
        let mut served = Vec::new();
        let mut listed: Option<Instant> = None;
        let mut renewed = Instant::now();
        let mut depths_seen = HashSet::new();
        while !self.stop.load(Ordering::Acquire) {
            self.drop_ended(&mut events);
            self.held
                .lock()
                .retain(|_, j| j.finished_at().is_none() && !j.is_abandoned());
            if renewed.elapsed() >= self.config.lease / 3 {
                renewed = Instant::now();
                self.maintain(&mut depths_seen);
            }
            if listed.is_none_or(|t| t.elapsed() >= KEYS_EVERY) {
                served = self.served();
                listed = Some(Instant::now());
            }
            let seen = self.queue.work_seen();
            let room = self.config.claim_ahead.saturating_sub(
                self.submission.jobs.pending() + self.starting.load(Ordering::Acquire),
            );
            let t0 = Instant::now();
            let claimed = match self.queue.claim(&served, room, self.config.lease) {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!("claiming work from the job store: {e}");
                    Vec::new()
                }
            };
            let full = room > 0 && claimed.len() == room;
            self.metrics.fleet_claims.inc_by(claimed.len() as u64);
            if !claimed.is_empty() {
                tracing::debug!(
                    partitions = claimed.len(),
                    room,
                    claim_ms = log_ms(t0.elapsed()),
                    "claimed"
                );
            }
            // Reading a witness and checking it against its key is most of a start
            // (lab/experiments/020-fleet-store.md: 3 ms for a 2^14 one, which would make this
            // thread the daemon's limit): on the rayon pool, over the store's connections, while
            // this thread claims again.
            for c in claimed {
                self.starting.fetch_add(1, Ordering::AcqRel);
                let stage = Arc::clone(&self);
                rayon::spawn(move || {
                    stage.start(c);
                    stage.starting.fetch_sub(1, Ordering::AcqRel);
                });
            }
            if room == 0 {
                // Hands full: room comes back as partitions finish here, which no event
                // announces. Looking again soon costs no query (nothing is claimed
                // without room); waking on every start would cost an empty claim query for
                // every few partitions (lab/experiments/020-fleet-store.md, run 7).
                self.queue
                    .wait_for_work(seen, ROOM_POLL.min(self.config.poll));
            } else if !full {
                self.queue.wait_for_work(seen, self.config.poll);
            }
        }
        let end = Instant::now() + Duration::from_secs(5);
        while self.starting.load(Ordering::Acquire) > 0 && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.held.abandon_all();
        match self.queue.release() {
            Ok(n) if n > 0 => {
                tracing::info!(partitions = n, "partitions given back to the job store")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(
                "giving partitions back to the job store: {e} (their leases will lapse)"
            ),
        }
    }

    /// Drops the partitions held here of jobs that ended elsewhere.
    fn drop_ended(&self, events: &mut tokio::sync::broadcast::Receiver<JobId>) {
        loop {
            match events.try_recv() {
                Ok(id) => {
                    for ((job, _), j) in self.held.lock().iter() {
                        if *job == id && j.finished_at().is_none() {
                            j.abandon();
                        }
                    }
                }
                Err(TryRecvError::Lagged(_)) => continue,
                Err(TryRecvError::Empty | TryRecvError::Closed) => return,
            }
        }
    }

    /// Renews the leases held here (dropping what is no longer held), puts lapsed leases
    /// back in the queue, and reads the queue's depths for the metrics (a key and priority
    /// seen once stays in them, at zero when nothing is queued).
    fn maintain(&self, depths_seen: &mut HashSet<(String, Priority)>) {
        match self.queue.renew(self.config.lease) {
            Ok(lost) => {
                for k in &lost {
                    let j = self.held.lock().remove(k);
                    if let Some(j) = j {
                        tracing::info!(job = k.0, partition = k.1, "partition no longer held here (its job ended or its lease lapsed): dropped");
                        j.abandon();
                    }
                }
            }
            Err(e) => tracing::warn!("renewing leases: {e}"),
        }
        match self.queue.reap() {
            Ok(n) if n > 0 => {
                tracing::info!(
                    partitions = n,
                    "lapsed leases: partitions back in the queue"
                );
                self.metrics.fleet_lease_expiries.inc_by(n as u64);
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("returning lapsed leases: {e}"),
        }
        match self.queue.depths() {
            Ok(depths) => {
                let m = &self.metrics.fleet_queue_depth;
                for (key, p) in depths_seen.iter() {
                    for state in ["queued", "claimed"] {
                        m.with_label_values(&[key, p.name(), state]).set(0);
                    }
                }
                for d in depths {
                    let p = d.priority.name();
                    m.with_label_values(&[&d.key_id, p, "queued"])
                        .set(d.queued as i64);
                    m.with_label_values(&[&d.key_id, p, "claimed"])
                        .set(d.claimed as i64);
                    depths_seen.insert((d.key_id, d.priority));
                }
            }
            Err(e) => tracing::warn!("reading the queue's depth: {e}"),
        }
        self.metrics
            .fleet_results_refused
            .set(self.queue.results_refused() as i64);
    }

    /// The keys in the key directory, hot ones marked.
    fn served(&self) -> Vec<ServedKey> {
        self.keys
            .status()
            .into_iter()
            .map(|k| ServedKey {
                shape: shape_tag(&k.meta.shape),
                hot: k.residency == Residency::Hot,
                id: k.meta.id,
            })
            .collect()
    }

    /// Reads a claimed partition's witness and queues it here; a partition that cannot
    /// run here (its witness unreadable, or not matching the key) fails its job.
    fn start(&self, c: Claim) {
        let job = Arc::new(Job::claimed(&c, Arc::clone(&self.store)));
        self.held.lock().insert((c.job, c.index), Arc::clone(&job));
        // After the insertion: the engine sets `stop` before it abandons what is held.
        if self.stop.load(Ordering::Acquire) {
            job.abandon();
            return;
        }
        tracing::debug!(job = c.job, partition = c.index, key = %c.key_id, "partition claimed");
        let queued = self
            .queue
            .witness(&c)
            .map_err(|e| format!("reading its witness: {e}"))
            .and_then(|w| {
                self.submission
                    .claimed(&job, c.index, &w)
                    .map_err(|e| e.to_string())
            });
        if let Err(e) = queued {
            let msg = format!("partition {}: {e}", c.index);
            tracing::warn!(job = c.job, error = %msg, "claimed partition cannot run");
            job.fail(msg);
        }
    }
}
