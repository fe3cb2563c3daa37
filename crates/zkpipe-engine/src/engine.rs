//! The engine: wires the stages with bounded priority queues and does all the spawning.
//!
//! ```text
//!  submit ─► admission queue ─► [admission: host-memory reservation, key lease]
//!                                    │
//!                                    ▼ reduce queue (bounded)
//!              [reduce × workers, own pool: load key if cold; a, b, c]
//!                                    │
//!                                    ▼ device queue per device (bounded)
//!   [device × workers per device: device memory; gate (a few passes at once); quotient + MSMs]
//!                                    │
//!                                    ▼ tail queue (bounded)
//!        [tail × workers, own pool: G2 MSM, assemble, self-check, JSON] ─► job
//! ```
//!
//! A janitor thread evicts idle keys and forgets old finished jobs.

use crate::buffers::{BufferPool, PoolStats};
use crate::config::EngineConfig;
use crate::devices::{BackendFactory, Device};
use crate::error::EngineError;
use crate::job::{Job, JobId, JobSnapshot, JobState, Priority};
use crate::keys::{KeyStatus, KeyStore};
use crate::memory::{MemoryBudget, Signal};
use crate::metrics::Metrics;
use crate::queue::{Order, PriorityQueue};
use crate::trace::{PartitionTrace, Tracer};
use crate::work::{CurveData, Part, Work};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use zkpipe_core::Witness;
use zkpipe_formats::wtns::Wtns;
use zkpipe_formats::CurveId;

/// A request to prove one or more witnesses (partitions) with one key. `W` holds one
/// witness file's bytes: `Vec<u8>`, or whatever the caller received them in (the daemon's
/// `Bytes`, slices of one gRPC message), so that they need not be copied to submit.
#[derive(Debug, Clone, Default)]
pub struct SubmitRequest<W = Vec<u8>> {
    /// The key id (file stem in the key directory).
    pub key_id: String,
    /// One `.wtns` file's bytes per partition.
    pub witnesses: Vec<W>,
    /// Scheduling priority.
    pub priority: Priority,
    /// The caller's id for idempotency: a second submit with the same id returns the
    /// first job. Empty: none.
    pub request_id: String,
}

/// What submit returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Submitted {
    /// The job id.
    pub job_id: JobId,
    /// True if the request id was seen before and this is that earlier job.
    pub existing: bool,
}

/// Queue lengths now.
#[derive(Debug, Clone, Default)]
pub struct QueueDepths {
    /// Waiting for admission.
    pub admission: usize,
    /// Admitted, waiting for a reduce worker.
    pub reduce: usize,
    /// Waiting for each device.
    pub device: Vec<usize>,
    /// Waiting for a tail worker.
    pub tail: usize,
}

/// A device as status reports it.
#[derive(Debug, Clone)]
pub struct DeviceStatus {
    /// Its name.
    pub name: String,
    /// Its memory, if it has its own.
    pub memory_total: Option<u64>,
    /// Device bytes reserved now.
    pub memory_reserved: u64,
    /// Fraction of wall time its lock was held since start.
    pub busy_fraction: f64,
    /// Keys placed on it.
    pub keys: usize,
}

/// The engine's state at one moment.
#[derive(Debug, Clone)]
pub struct EngineStatus {
    /// Queue lengths.
    pub queues: QueueDepths,
    /// Jobs known (active and recently finished), newest first.
    pub jobs: Vec<JobSnapshot>,
    /// Every key in the key directory.
    pub keys: Vec<KeyStatus>,
    /// Every device.
    pub devices: Vec<DeviceStatus>,
    /// Host bytes reserved.
    pub memory_used: u64,
    /// Host-memory budget.
    pub memory_limit: u64,
    /// Buffer pool counters.
    pub pool: PoolStats,
    /// Partitions accepted and not finished.
    pub pending_partitions: usize,
    /// Time since start.
    pub uptime: Duration,
}

/// What the stages share.
pub(crate) struct Shared {
    pub config: EngineConfig,
    pub signal: Arc<Signal>,
    pub budget: Arc<MemoryBudget>,
    pub keys: Arc<KeyStore>,
    pub pool: Arc<BufferPool>,
    pub factory: Arc<dyn BackendFactory>,
    pub devices: Vec<Device>,
    pub admission: PriorityQueue<Work>,
    pub reduce_queue: PriorityQueue<Work>,
    pub tail_queue: PriorityQueue<Work>,
    pub reduce_pool: rayon::ThreadPool,
    pub tail_pool: rayon::ThreadPool,
    pub metrics: Metrics,
    pub tracer: Tracer,
    pub jobs: Mutex<HashMap<JobId, Arc<Job>>>,
    pub requests: Mutex<HashMap<String, JobId>>,
    pub next_job: AtomicU64,
    pub next_seq: AtomicU64,
    pub pending: Arc<AtomicUsize>,
    pub shutdown: AtomicBool,
    pub started: Instant,
}

impl Shared {
    pub fn is_shutting_down(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// Fails `w`'s job with `message` (the partition's resources go when `w` is dropped).
    pub fn fail(&self, w: &Work, kind: &str, message: &str) {
        self.metrics.proofs_failed.with_label_values(&[kind]).inc();
        let msg = format!("partition {}: {message}", w.index);
        tracing::warn!(job = w.job.id, "{msg}");
        w.job.fail(msg);
        self.tracer.record(w.trace.clone());
    }

    pub fn fail_core(&self, w: &Work, e: &zkpipe_core::Error) {
        let kind = match e {
            zkpipe_core::Error::NotSatisfied => "not_satisfied",
            _ => "proving",
        };
        self.fail(w, kind, &e.to_string());
    }
}

/// The proving engine (see the module doc). Cheap to clone; every clone is the same engine.
#[derive(Clone)]
pub struct Engine {
    shared: Arc<Shared>,
    threads: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

fn pool(name: &'static str, threads: usize) -> Result<rayon::ThreadPool, String> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("zkpipe-{name}-{i}"))
        .build()
        .map_err(|e| format!("{name} pool: {e}"))
}

impl Engine {
    /// Starts the engine's threads with devices and backends from `factory`.
    pub fn start(config: EngineConfig, factory: Arc<dyn BackendFactory>) -> Result<Self, String> {
        config.validate()?;
        if !config.key_dir.is_dir() {
            return Err(format!(
                "key directory {} does not exist",
                config.key_dir.display()
            ));
        }
        let signal = Arc::new(Signal::default());
        let budget = MemoryBudget::new("host memory", config.memory_limit, Arc::clone(&signal));
        let pool_buf = Arc::new(BufferPool::new(config.pool_max_bytes, config.dealloc_queue));
        let freer = Arc::clone(&pool_buf);
        let keys = Arc::new(KeyStore::new(
            config.key_dir.clone(),
            config.key_checks,
            Arc::clone(&budget),
            Arc::clone(&signal),
            Box::new(move |b| freer.free_any(b)),
            Arc::clone(&factory),
        ));
        let infos = factory.devices();
        if infos.is_empty() {
            return Err("the backend factory reports no devices".into());
        }
        // A batch is the worker's partition plus what is queued for the device: room for a
        // full one, whatever `queue_depth` says.
        let batch = config
            .device_batch
            .map_or(factory.max_batch(), |cap| cap.min(factory.max_batch()));
        let device_queue = config.queue_depth.max(batch.saturating_sub(1));
        let mut devices = Vec::new();
        for (i, info) in infos.iter().enumerate() {
            let limit = config.device_memory_limit.or(info.memory_total);
            let budget = limit.map(|l| {
                MemoryBudget::new(format!("{} memory", info.name), l, Arc::clone(&signal))
            });
            devices.push(Device::new(
                i,
                info.clone(),
                pool("device", config.device.threads)?,
                budget,
                device_queue,
                config
                    .device_passes
                    .unwrap_or_else(|| factory.passes_per_device()),
            ));
        }
        let metrics = Metrics::new();
        metrics.memory_limit.set(config.memory_limit as i64);
        let shared = Arc::new(Shared {
            signal,
            budget,
            keys,
            pool: pool_buf,
            factory,
            admission: PriorityQueue::new(usize::MAX),
            reduce_queue: PriorityQueue::new(config.queue_depth),
            tail_queue: PriorityQueue::new(config.queue_depth),
            reduce_pool: pool("reduce", config.reduce.threads)?,
            tail_pool: pool("tail", config.tail.threads)?,
            metrics,
            tracer: Tracer::new(
                config.trace_capacity,
                infos.iter().map(|d| d.name.clone()).collect(),
            ),
            jobs: Mutex::new(HashMap::new()),
            requests: Mutex::new(HashMap::new()),
            next_job: AtomicU64::new(1),
            next_seq: AtomicU64::new(0),
            pending: Arc::new(AtomicUsize::new(0)),
            shutdown: AtomicBool::new(false),
            started: Instant::now(),
            devices,
            config,
        });
        let mut threads = Vec::new();
        let spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.clone())
                .spawn(f)
                .map_err(|e| format!("starting {name}: {e}"))
        };
        let s = Arc::clone(&shared);
        threads.push(spawn(
            "zkpipe-admission".into(),
            Box::new(move || crate::admission::run(s)),
        )?);
        for i in 0..shared.config.reduce.workers {
            let s = Arc::clone(&shared);
            threads.push(spawn(
                format!("zkpipe-reduce-w{i}"),
                Box::new(move || crate::reduce::run(s)),
            )?);
        }
        for d in 0..shared.devices.len() {
            for i in 0..shared.config.device.workers {
                let s = Arc::clone(&shared);
                threads.push(spawn(
                    format!("zkpipe-device{d}-w{i}"),
                    Box::new(move || crate::device_stage::run(s, d)),
                )?);
            }
        }
        for i in 0..shared.config.tail.workers {
            let s = Arc::clone(&shared);
            threads.push(spawn(
                format!("zkpipe-tail-w{i}"),
                Box::new(move || crate::tail::run(s)),
            )?);
        }
        let s = Arc::clone(&shared);
        threads.push(spawn(
            "zkpipe-janitor".into(),
            Box::new(move || janitor(s)),
        )?);
        Ok(Self {
            shared,
            threads: Arc::new(Mutex::new(threads)),
        })
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &EngineConfig {
        &self.shared.config
    }

    /// Validates and queues a job; see [`SubmitRequest`]. Every witness is parsed and
    /// checked against the key here, so a bad request fails now, not later.
    pub fn submit<W: AsRef<[u8]>>(&self, req: SubmitRequest<W>) -> Result<Submitted, EngineError> {
        let r = self.submit_inner(req);
        if let Err(e) = &r {
            self.shared
                .metrics
                .rejected
                .with_label_values(&[e.kind()])
                .inc();
        }
        r
    }

    fn submit_inner<W: AsRef<[u8]>>(
        &self,
        req: SubmitRequest<W>,
    ) -> Result<Submitted, EngineError> {
        let sh = &self.shared;
        if sh.is_shutting_down() {
            return Err(EngineError::ShuttingDown);
        }
        if !req.request_id.is_empty() {
            if let Some(&id) = sh
                .requests
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&req.request_id)
            {
                return Ok(Submitted {
                    job_id: id,
                    existing: true,
                });
            }
        }
        let n = req.witnesses.len();
        if n == 0 {
            return Err(EngineError::InvalidRequest(
                "a job needs at least one witness".into(),
            ));
        }
        if n > sh.config.max_partitions_per_job {
            return Err(EngineError::InvalidRequest(format!(
                "{n} partitions, at most {} per job",
                sh.config.max_partitions_per_job
            )));
        }
        let entry = sh.keys.resolve(&req.key_id)?;
        let meta = &entry.meta;
        let needed = meta.host_bytes + meta.partition_bytes;
        if !sh.budget.could_ever_fit(needed) {
            return Err(EngineError::TooLarge {
                what: format!(
                    "key {:?} ({} bytes) plus one partition ({} bytes)",
                    meta.id, meta.host_bytes, meta.partition_bytes
                ),
                needed,
                budget: sh.budget.name().into(),
                limit: sh.budget.limit(),
            });
        }
        for d in &sh.devices {
            if let Some(b) = &d.budget {
                let dn =
                    sh.factory.key_device_bytes(meta) + sh.factory.partition_device_bytes(meta);
                if !b.could_ever_fit(dn) {
                    return Err(EngineError::TooLarge {
                        what: format!("key {:?} on device {}", meta.id, d.info.name),
                        needed: dn,
                        budget: b.name().into(),
                        limit: b.limit(),
                    });
                }
            }
        }
        let mut data = Vec::with_capacity(n);
        for (i, bytes) in req.witnesses.iter().enumerate() {
            let wtns = Wtns::parse(bytes.as_ref()).map_err(|e| EngineError::MalformedWitness {
                partition: i,
                message: e.to_string(),
            })?;
            if wtns.curve != meta.curve {
                return Err(EngineError::WrongCurve {
                    partition: i,
                    key: meta.id.clone(),
                    found: wtns.curve,
                    expected: meta.curve,
                });
            }
            if wtns.n_witness as usize != meta.n_vars {
                return Err(EngineError::WitnessMismatch {
                    partition: i,
                    key: meta.id.clone(),
                    expected: meta.n_vars,
                    found: wtns.n_witness as usize,
                });
            }
            let bad = |e: zkpipe_core::Error| EngineError::MalformedWitness {
                partition: i,
                message: e.to_string(),
            };
            data.push(match meta.curve {
                CurveId::Bn254 => CurveData::Bn254(Box::new(Part::new(
                    Witness::from_wtns(&wtns).map_err(bad)?,
                    Arc::clone(&sh.pool),
                ))),
                CurveId::Bls12_381 => CurveData::Bls12_381(Box::new(Part::new(
                    Witness::from_wtns(&wtns).map_err(bad)?,
                    Arc::clone(&sh.pool),
                ))),
            });
        }
        // Register the job and its request id atomically with respect to other submits.
        let job = {
            let mut requests = sh.requests.lock().unwrap_or_else(|e| e.into_inner());
            if !req.request_id.is_empty() {
                if let Some(&id) = requests.get(&req.request_id) {
                    return Ok(Submitted {
                        job_id: id,
                        existing: true,
                    });
                }
            }
            let pending = sh.pending.load(Ordering::Acquire);
            if pending + n > sh.config.max_pending_partitions {
                return Err(EngineError::Busy(format!(
                    "{pending} partitions pending, at most {} (max_pending_partitions)",
                    sh.config.max_pending_partitions
                )));
            }
            let id = sh.next_job.fetch_add(1, Ordering::Relaxed);
            let job = Arc::new(Job::new(
                id,
                meta.id.clone(),
                req.priority,
                req.request_id.clone(),
                n,
            ));
            sh.jobs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(id, Arc::clone(&job));
            if !req.request_id.is_empty() {
                requests.insert(req.request_id.clone(), id);
            }
            sh.pending.fetch_add(n, Ordering::AcqRel);
            job
        };
        sh.metrics.jobs_submitted.inc();
        for (index, data) in data.into_iter().enumerate() {
            let order = Order {
                priority: req.priority as u8,
                seq: sh.next_seq.fetch_add(1, Ordering::Relaxed),
            };
            let w = Work {
                job: Arc::clone(&job),
                index,
                order,
                entry: Some(Arc::clone(&entry)),
                lease: None,
                host: None,
                key: None,
                device: 0,
                data,
                trace: PartitionTrace::new(job.id, index, meta.id.clone(), job.submitted),
                queued_at: job.submitted,
                pending: Arc::clone(&sh.pending),
            };
            let _ = sh.admission.push(order, w);
        }
        sh.signal.notify();
        Ok(Submitted {
            job_id: job.id,
            existing: false,
        })
    }

    fn job(&self, id: JobId) -> Result<Arc<Job>, EngineError> {
        self.shared
            .jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id)
            .cloned()
            .ok_or(EngineError::UnknownJob(id))
    }

    /// The job's state now.
    pub fn job_status(&self, id: JobId) -> Result<JobSnapshot, EngineError> {
        Ok(self.job(id)?.snapshot())
    }

    /// Waits up to `timeout` for the job to finish; returns its state either way.
    pub fn wait(&self, id: JobId, timeout: Duration) -> Result<JobSnapshot, EngineError> {
        Ok(self.job(id)?.wait(timeout))
    }

    /// [`Engine::wait`] for async callers (needs a tokio runtime with time enabled).
    /// Dropping the future (a client that went away) leaves the job running.
    pub async fn wait_async(
        &self,
        id: JobId,
        timeout: Duration,
    ) -> Result<JobSnapshot, EngineError> {
        let job = self.job(id)?;
        Ok(job.wait_async(timeout).await)
    }

    /// Cancels a job: queued partitions are dropped now, running ones at their next stage
    /// boundary; everything they hold is freed. A finished job is not changed.
    pub fn cancel(&self, id: JobId) -> Result<(), EngineError> {
        let job = self.job(id)?;
        job.cancel().map_err(|s| EngineError::AlreadyFinished {
            id,
            state: s.name(),
        })?;
        self.shared.metrics.jobs_cancelled.inc();
        let sh = &self.shared;
        let mine = |w: &Work| w.job.id == id;
        drop(sh.admission.remove_where(mine));
        drop(sh.reduce_queue.remove_where(mine));
        for d in &sh.devices {
            drop(d.queue.remove_where(mine));
        }
        drop(sh.tail_queue.remove_where(mine));
        sh.signal.notify();
        Ok(())
    }

    /// Loads key `id` now (waiting up to `timeout` for memory) so the first job finds it hot.
    pub fn preload(&self, id: &str, timeout: Duration) -> Result<(), EngineError> {
        self.shared
            .keys
            .preload(id, timeout, &self.shared.reduce_pool)
    }

    /// Evicts key `id` now; refused while partitions use it. Returns whether it was resident.
    pub fn evict(&self, id: &str) -> Result<bool, EngineError> {
        self.shared.keys.evict(id)
    }

    /// The state of queues, jobs, keys, devices and memory.
    pub fn status(&self) -> EngineStatus {
        let sh = &self.shared;
        let mut jobs: Vec<JobSnapshot> = sh
            .jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .map(|j| j.snapshot())
            .collect();
        jobs.sort_by_key(|j| std::cmp::Reverse(j.id));
        EngineStatus {
            queues: self.queue_depths(),
            jobs,
            keys: sh.keys.status(),
            devices: sh
                .devices
                .iter()
                .map(|d| DeviceStatus {
                    name: d.info.name.clone(),
                    memory_total: d.budget.as_ref().map(|b| b.limit()),
                    memory_reserved: d.budget.as_ref().map_or(0, |b| b.used()),
                    busy_fraction: d.busy_fraction(),
                    keys: d.keys.load(Ordering::Relaxed),
                })
                .collect(),
            memory_used: sh.budget.used(),
            memory_limit: sh.budget.limit(),
            pool: sh.pool.stats(),
            pending_partitions: sh.pending.load(Ordering::Acquire),
            uptime: sh.started.elapsed(),
        }
    }

    fn queue_depths(&self) -> QueueDepths {
        let sh = &self.shared;
        QueueDepths {
            admission: sh.admission.len(),
            reduce: sh.reduce_queue.len(),
            device: sh.devices.iter().map(|d| d.queue.len()).collect(),
            tail: sh.tail_queue.len(),
        }
    }

    /// Prometheus text exposition of the engine's metrics.
    pub fn metrics_text(&self) -> String {
        let sh = &self.shared;
        let m = &sh.metrics;
        let q = self.queue_depths();
        m.queue_depth
            .with_label_values(&["admission"])
            .set(q.admission as i64);
        m.queue_depth
            .with_label_values(&["reduce"])
            .set(q.reduce as i64);
        m.queue_depth
            .with_label_values(&["device"])
            .set(q.device.iter().sum::<usize>() as i64);
        m.queue_depth
            .with_label_values(&["tail"])
            .set(q.tail as i64);
        for d in &sh.devices {
            let name = d.info.name.as_str();
            m.device_busy_fraction
                .with_label_values(&[name])
                .set(d.busy_fraction());
            m.device_busy_seconds
                .with_label_values(&[name])
                .set(d.busy_seconds());
            m.device_memory_reserved
                .with_label_values(&[name])
                .set(d.budget.as_ref().map_or(0, |b| b.used()) as i64);
        }
        m.memory_reserved.set(sh.budget.used() as i64);
        let hot = sh
            .keys
            .status()
            .iter()
            .filter(|k| k.residency == crate::keys::Residency::Hot)
            .count();
        m.keys_resident.set(hot as i64);
        let p = sh.pool.stats();
        m.pool_bytes.set(p.pooled_bytes as i64);
        m.pool_buffers
            .with_label_values(&["recycled"])
            .set(p.recycled as i64);
        m.pool_buffers
            .with_label_values(&["allocated"])
            .set(p.allocated as i64);
        m.pool_buffers
            .with_label_values(&["freed"])
            .set(p.freed as i64);
        if let Some(rss) = crate::config::peak_rss() {
            m.peak_rss.set(rss as i64);
        }
        m.text()
    }

    /// The waterfall of recent partitions as Chrome-trace JSON (Perfetto opens it).
    pub fn trace_json(&self) -> String {
        self.shared.tracer.chrome_json()
    }

    /// Forgets the recorded waterfalls (e.g. between benchmark runs).
    pub fn clear_trace(&self) {
        self.shared.tracer.clear()
    }

    /// Stops accepting jobs, cancels those not finished, and joins every thread.
    pub fn shutdown(&self) {
        let sh = &self.shared;
        if sh.shutdown.swap(true, Ordering::AcqRel) {
            return;
        }
        let jobs: Vec<_> = sh
            .jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        for j in jobs {
            let _ = j.cancel();
        }
        sh.admission.close();
        sh.reduce_queue.close();
        for d in &sh.devices {
            d.queue.close();
        }
        sh.tail_queue.close();
        sh.signal.notify();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        for t in threads {
            let _ = t.join();
        }
        sh.pool.shutdown();
    }
}

/// Evicts idle keys and forgets finished jobs past their retention.
fn janitor(sh: Arc<Shared>) {
    while !sh.is_shutting_down() {
        let seen = sh.signal.generation();
        sh.keys.evict_idle(sh.config.key_idle_timeout);
        let retention = sh.config.job_retention;
        let mut forgotten = Vec::new();
        sh.jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|_, j| {
                let keep = j.finished_at().is_none_or(|t| t.elapsed() < retention);
                if !keep {
                    forgotten.push(j.request_id.clone());
                }
                keep
            });
        if !forgotten.is_empty() {
            let mut r = sh.requests.lock().unwrap_or_else(|e| e.into_inner());
            for id in forgotten {
                r.remove(&id);
            }
        }
        sh.signal.wait_past(seen, Duration::from_millis(500));
        std::thread::sleep(Duration::from_millis(100));
    }
}

impl JobState {
    /// Every state, for status listings.
    pub const ALL: [JobState; 5] = [
        JobState::Queued,
        JobState::Running,
        JobState::Done,
        JobState::Failed,
        JobState::Cancelled,
    ];
}
