//! The engine's state at one moment, as `status()` and the metrics exposition report it.
//! Gathering it takes each lock only to copy a value: it never waits for a load, an
//! upload or a device pass, and it copies no job's proofs (a daemon at full rate retains
//! hundreds of thousands of them).

use crate::buffers::{BufferPool, PoolStats};
use crate::devices::Device;
use crate::engine::Engine;
use crate::job::JobSnapshot;
use crate::keys::{KeyFailure, KeyStatus, Residency, Tier};
use crate::metrics::Metrics;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Finished jobs a fleet's status lists, besides every unfinished one.
const FLEET_STATUS_JOBS: usize = 100;

/// Queue lengths now.
#[derive(Debug, Clone, Default)]
pub struct QueueDepths {
    /// Waiting for admission.
    pub admission: usize,
    /// Admitted with circuit inputs, waiting for a synthesis worker.
    pub synthesize: usize,
    /// With a witness, waiting for a reduce worker.
    pub reduce: usize,
    /// Waiting for each device.
    pub device: Vec<usize>,
    /// Waiting for a tail worker.
    pub tail: usize,
    /// Checked, waiting to be recorded in their jobs.
    pub deliver: usize,
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

impl DeviceStatus {
    pub(crate) fn of(d: &Device) -> Self {
        Self {
            name: d.info.name.clone(),
            memory_total: d.budget.as_ref().map(|b| b.limit()),
            memory_reserved: d.memory_reserved(),
            busy_fraction: d.busy_fraction(),
            keys: d.keys.load(Ordering::Relaxed),
        }
    }
}

/// The engine's state at one moment.
#[derive(Debug, Clone)]
pub struct EngineStatus {
    /// Queue lengths.
    pub queues: QueueDepths,
    /// Jobs known (active and recently finished), newest first, without their proofs
    /// (`proofs` is empty: [`Engine::job_status`] has them).
    pub jobs: Vec<JobSnapshot>,
    /// Every key in the key directory.
    pub keys: Vec<KeyStatus>,
    /// The key directory's `.zkey` files that cannot be served, and why.
    pub failed_keys: Vec<KeyFailure>,
    /// Every device.
    pub devices: Vec<DeviceStatus>,
    /// Host bytes reserved.
    pub memory_used: u64,
    /// Host-memory budget.
    pub memory_limit: u64,
    /// Bytes of streamed keys' pinned copies (also counted in `memory_used`).
    pub pinned_used: u64,
    /// The pinned tier's budget.
    pub pinned_limit: u64,
    /// Buffer pool counters.
    pub pool: PoolStats,
    /// Partitions accepted and not finished, and those of streamed jobs being received.
    pub pending_partitions: usize,
    /// Time since start.
    pub uptime: Duration,
}

impl Engine {
    /// The state of queues, jobs, keys, devices and memory.
    pub fn status(&self) -> EngineStatus {
        let i = &*self.inner;
        let (keys, failed_keys) = i.keys.scan();
        EngineStatus {
            queues: self.queue_depths(),
            jobs: self.job_list(),
            keys,
            failed_keys,
            devices: i.devices.iter().map(|d| DeviceStatus::of(d)).collect(),
            memory_used: i.budget.used(),
            memory_limit: i.budget.limit(),
            pinned_used: i.keys.pinned_budget().used(),
            pinned_limit: i.keys.pinned_budget().limit(),
            pool: i.buffers.stats(),
            pending_partitions: i.jobs.pending(),
            uptime: i.started.elapsed(),
        }
    }

    /// Every job this engine knows; in a fleet, the shared store's unfinished jobs and
    /// its newest finished ones.
    fn job_list(&self) -> Vec<JobSnapshot> {
        match &self.inner.shared {
            Some((q, _)) => q.jobs(FLEET_STATUS_JOBS).unwrap_or_else(|e| {
                tracing::warn!("listing the shared store's jobs: {e}");
                Vec::new()
            }),
            None => self.inner.jobs.summaries(),
        }
    }

    /// Key `id`'s residency, as [`Self::status`] reports it, without listing the jobs and
    /// the key directory; `None` for an id that names no servable key.
    pub fn key_residency(&self, id: &str) -> Option<Residency> {
        let entry = self.inner.keys.resolve(id).ok()?;
        let residency = entry.lock().residency;
        Some(residency)
    }

    /// Partitions accepted and not finished (cheap: one atomic read, no job copied).
    pub fn pending_partitions(&self) -> usize {
        self.inner.jobs.pending()
    }

    fn queue_depths(&self) -> QueueDepths {
        let i = &*self.inner;
        QueueDepths {
            admission: i.admission.len(),
            synthesize: i.synthesize.len(),
            reduce: i.reduce.len(),
            device: i.devices.iter().map(|d| d.queue.len()).collect(),
            tail: i.tail.len(),
            deliver: i.deliver.len(),
        }
    }

    /// Prometheus text exposition of the engine's metrics.
    pub fn metrics_text(&self) -> String {
        let i = &*self.inner;
        let keys = i.keys.status();
        let q = self.queue_depths();
        let m = &i.outcomes.metrics;
        let throttle = i.throttle.stats();
        metrics_text(
            m,
            &q,
            &i.devices,
            &keys,
            (i.budget.used(), i.keys.pinned_budget().used()),
            &i.buffers,
            throttle,
        )
    }

    /// The waterfall of recent partitions as Chrome-trace JSON (Perfetto opens it).
    pub fn trace_json(&self) -> String {
        self.inner.outcomes.tracer.chrome_json()
    }

    /// [`Self::trace_json`], written to `out` event by event (no whole document in
    /// memory).
    pub fn write_trace(&self, out: impl std::io::Write) -> std::io::Result<()> {
        self.inner.outcomes.tracer.write_chrome_json(out)
    }

    /// Forgets the recorded waterfalls (e.g. between benchmark runs).
    pub fn clear_trace(&self) {
        self.inner.outcomes.tracer.clear()
    }
}

/// Sets the gauges that are read, not counted, from the engine's state now (the host and
/// pinned bytes reserved among them), and returns the Prometheus text exposition.
pub(crate) fn metrics_text(
    m: &Metrics,
    q: &QueueDepths,
    devices: &[std::sync::Arc<Device>],
    keys: &[KeyStatus],
    (memory_used, pinned_used): (u64, u64),
    pool: &BufferPool,
    t: zkpipe_core::throttle::Stats,
) -> String {
    for (queue, depth) in [
        ("admission", q.admission),
        ("synthesize", q.synthesize),
        ("reduce", q.reduce),
        ("device", q.device.iter().sum()),
        ("tail", q.tail),
        ("deliver", q.deliver),
    ] {
        m.queue_depth.with_label_values(&[queue]).set(depth as i64);
    }
    for d in devices {
        let name = d.info.name.as_str();
        m.device_busy_fraction
            .with_label_values(&[name])
            .set(d.busy_fraction());
        m.device_busy_seconds
            .with_label_values(&[name])
            .set(d.busy_seconds());
        m.device_memory_reserved
            .with_label_values(&[name])
            .set(d.memory_reserved() as i64);
    }
    m.memory_reserved.set(memory_used as i64);
    m.pinned_reserved.set(pinned_used as i64);
    let hot = keys.iter().filter(|k| k.residency.is_loaded()).count();
    m.keys_resident.set(hot as i64);
    for tier in Tier::ALL {
        let n = keys.iter().filter(|k| k.tier == tier).count();
        m.keys_by_tier
            .with_label_values(&[tier.name()])
            .set(n as i64);
    }
    let p = pool.stats();
    m.pool_bytes.set(p.pooled_bytes as i64);
    for (what, n) in [
        ("recycled", p.recycled),
        ("allocated", p.allocated),
        ("freed", p.freed),
        ("dropped_on_return", p.dropped_on_return),
        ("dealloc_done", p.dealloc_done),
    ] {
        m.pool_buffers.with_label_values(&[what]).set(n as i64);
    }
    for (state, n) in [
        ("started", p.dealloc_threads),
        ("live", p.dealloc_threads_live),
    ] {
        m.dealloc_threads.with_label_values(&[state]).set(n as i64);
    }
    for (event, n) in [("burst", t.bursts), ("step_aside", t.steps_aside)] {
        m.throttle_events.with_label_values(&[event]).set(n as i64);
    }
    m.throttle_paused_seconds.set(t.paused.as_secs_f64());
    if let Some(rss) = crate::config::peak_rss() {
        m.peak_rss.set(rss as i64);
    }
    m.text()
}
