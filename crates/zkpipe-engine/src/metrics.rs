//! Prometheus metrics of the engine, in its own registry: queue depths, stage latency
//! histograms, proofs completed and failed, device busy fraction and batch sizes, memory
//! reserved.

use prometheus::{
    Encoder, Gauge, GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec,
    IntGauge, IntGaugeVec, Opts, Registry, TextEncoder,
};

/// The engine's metrics.
pub struct Metrics {
    registry: Registry,
    /// Items waiting per queue (`admission`, `reduce`, `device`, `tail`).
    pub queue_depth: IntGaugeVec,
    /// Seconds per stage (`queue_wait`, `key_load`, `reduce`, `device_wait`, `device`,
    /// `tail`, `total`), per proof.
    pub stage_seconds: HistogramVec,
    /// Proofs (partitions) completed.
    pub proofs_completed: IntCounter,
    /// Proofs (partitions) failed, by error kind.
    pub proofs_failed: IntCounterVec,
    /// Jobs accepted.
    pub jobs_submitted: IntCounter,
    /// Jobs cancelled.
    pub jobs_cancelled: IntCounter,
    /// Submissions rejected, by error kind.
    pub rejected: IntCounterVec,
    /// Fraction of wall time each device's lock was held since start.
    pub device_busy_fraction: GaugeVec,
    /// Seconds each device's lock was held since start.
    pub device_busy_seconds: GaugeVec,
    /// Partitions per device pass, per device: above 1 where the backend batches proofs
    /// of one key into one pass.
    pub device_batch_size: HistogramVec,
    /// Proofs per tail batch (their self-checks share one final exponentiation).
    pub tail_batch_size: Histogram,
    /// Tail batches by where they ran: `alone` (on their worker's thread, others
    /// waiting) or `pool` (spread over the tail's pool).
    pub tail_batches: IntCounterVec,
    /// Host bytes reserved (keys and partitions).
    pub memory_reserved: IntGauge,
    /// Host-memory budget.
    pub memory_limit: IntGauge,
    /// Device bytes reserved, per device.
    pub device_memory_reserved: IntGaugeVec,
    /// Keys resident.
    pub keys_resident: IntGauge,
    /// Keys per tier (cold, warm, pinned, resident).
    pub keys_by_tier: IntGaugeVec,
    /// Host bytes of streamed keys' pinned copies.
    pub pinned_reserved: IntGauge,
    /// The pinned tier's budget.
    pub pinned_limit: IntGauge,
    /// Idle bytes held by the buffer pool.
    pub pool_bytes: IntGauge,
    /// Buffers by fate since start: recycled, allocated, freed (let go of), dropped on
    /// return, dropped by the deallocator.
    pub pool_buffers: IntGaugeVec,
    /// Deallocation threads started, and alive now (`memory.dealloc = "detached"`).
    pub dealloc_threads: IntGaugeVec,
    /// The bandwidth throttle since start: bursts raised and row-loop checks that
    /// stepped aside.
    pub throttle_events: IntGaugeVec,
    /// Seconds row loops spent aside for the bandwidth throttle since start.
    pub throttle_paused_seconds: Gauge,
    /// Peak resident set size of this process.
    pub peak_rss: IntGauge,
    /// Fleet: partitions this daemon claimed from the shared store.
    pub fleet_claims: IntCounter,
    /// Fleet: lapsed leases this daemon put back in the queue (any daemon's).
    pub fleet_lease_expiries: IntCounter,
    /// Fleet: partitions in the shared store by key, priority and state (`queued`,
    /// `claimed`), as this daemon last read them.
    pub fleet_queue_depth: IntGaugeVec,
    /// Fleet: results proved here and dropped because the claim no longer held the
    /// partition (its lease lapsed, or its job ended).
    pub fleet_results_refused: IntGauge,
}

fn must<T>(r: prometheus::Result<T>) -> T {
    // Only fails on a malformed metric definition, which is a bug caught by the tests.
    r.unwrap_or_else(|e| panic!("metric definition: {e}"))
}

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Self {
        let registry = Registry::new();
        let buckets = vec![
            0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
            60.0, 120.0,
        ];
        let m = Self {
            queue_depth: must(IntGaugeVec::new(
                Opts::new("zkpipe_queue_depth", "Items waiting per queue"),
                &["queue"],
            )),
            stage_seconds: must(HistogramVec::new(
                HistogramOpts::new("zkpipe_stage_seconds", "Seconds per stage per proof")
                    .buckets(buckets),
                &["stage"],
            )),
            proofs_completed: must(IntCounter::new(
                "zkpipe_proofs_completed_total",
                "Proofs (partitions) completed",
            )),
            proofs_failed: must(IntCounterVec::new(
                Opts::new("zkpipe_proofs_failed_total", "Proofs (partitions) failed"),
                &["kind"],
            )),
            jobs_submitted: must(IntCounter::new(
                "zkpipe_jobs_submitted_total",
                "Jobs accepted",
            )),
            jobs_cancelled: must(IntCounter::new(
                "zkpipe_jobs_cancelled_total",
                "Jobs cancelled",
            )),
            rejected: must(IntCounterVec::new(
                Opts::new("zkpipe_requests_rejected_total", "Submissions rejected"),
                &["kind"],
            )),
            device_busy_fraction: must(GaugeVec::new(
                Opts::new(
                    "zkpipe_device_busy_fraction",
                    "Fraction of wall time with at least one device pass running, since start",
                ),
                &["device"],
            )),
            device_busy_seconds: must(GaugeVec::new(
                Opts::new(
                    "zkpipe_device_busy_seconds",
                    "Seconds with at least one device pass running",
                ),
                &["device"],
            )),
            device_batch_size: must(HistogramVec::new(
                HistogramOpts::new(
                    "zkpipe_device_batch_size",
                    "Partitions per device pass (several proofs of one key share a batched pass)",
                )
                .buckets(vec![
                    1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0, 64.0,
                ]),
                &["device"],
            )),
            tail_batch_size: must(Histogram::with_opts(
                HistogramOpts::new(
                    "zkpipe_tail_batch_size",
                    "Proofs per tail batch (their self-checks share one final exponentiation)",
                )
                .buckets(vec![1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0]),
            )),
            tail_batches: must(IntCounterVec::new(
                Opts::new(
                    "zkpipe_tail_batches_total",
                    "Tail batches, by where they ran (alone: on their worker's thread; pool: spread over the tail's pool)",
                ),
                &["on"],
            )),
            memory_reserved: must(IntGauge::new(
                "zkpipe_memory_reserved_bytes",
                "Host bytes reserved by resident keys and in-flight partitions",
            )),
            memory_limit: must(IntGauge::new(
                "zkpipe_memory_limit_bytes",
                "Host-memory budget",
            )),
            device_memory_reserved: must(IntGaugeVec::new(
                Opts::new(
                    "zkpipe_device_memory_reserved_bytes",
                    "Device bytes reserved",
                ),
                &["device"],
            )),
            keys_resident: must(IntGauge::new(
                "zkpipe_keys_resident",
                "Keys resident in host memory (binding or hot)",
            )),
            keys_by_tier: must(IntGaugeVec::new(
                Opts::new(
                    "zkpipe_keys_by_tier",
                    "Keys per tier: cold (file), warm (compiled), pinned (streamed from pinned memory), resident (on a device)",
                ),
                &["tier"],
            )),
            pinned_reserved: must(IntGauge::new(
                "zkpipe_pinned_memory_reserved_bytes",
                "Host bytes of streamed keys' pinned copies",
            )),
            pinned_limit: must(IntGauge::new(
                "zkpipe_pinned_memory_limit_bytes",
                "The pinned tier's budget (memory.pinned_limit)",
            )),
            pool_bytes: must(IntGauge::new(
                "zkpipe_buffer_pool_bytes",
                "Idle bytes held by the buffer pool",
            )),
            pool_buffers: must(IntGaugeVec::new(
                Opts::new("zkpipe_buffer_pool_buffers", "Buffers by fate"),
                &["fate"],
            )),
            dealloc_threads: must(IntGaugeVec::new(
                Opts::new(
                    "zkpipe_dealloc_threads",
                    "Detached deallocation threads: started since start, alive now",
                ),
                &["state"],
            )),
            throttle_events: must(IntGaugeVec::new(
                Opts::new(
                    "zkpipe_throttle_events",
                    "Bandwidth throttle since start: bursts raised, checks that stepped aside",
                ),
                &["event"],
            )),
            throttle_paused_seconds: must(Gauge::new(
                "zkpipe_throttle_paused_seconds",
                "Seconds row loops spent aside for the bandwidth throttle since start",
            )),
            peak_rss: must(IntGauge::new(
                "zkpipe_process_peak_rss_bytes",
                "Peak resident set size of the process",
            )),
            fleet_claims: must(IntCounter::new(
                "zkpipe_fleet_claims_total",
                "Partitions this daemon claimed from the shared job store",
            )),
            fleet_lease_expiries: must(IntCounter::new(
                "zkpipe_fleet_lease_expiries_total",
                "Lapsed leases (of any daemon) this daemon put back in the queue",
            )),
            fleet_queue_depth: must(IntGaugeVec::new(
                Opts::new(
                    "zkpipe_fleet_queue_depth",
                    "Partitions in the shared job store by key, priority and state",
                ),
                &["key", "priority", "state"],
            )),
            fleet_results_refused: must(IntGauge::new(
                "zkpipe_fleet_results_refused",
                "Results proved here and dropped: the claim no longer held the partition",
            )),
            registry,
        };
        let r = &m.registry;
        must(r.register(Box::new(m.queue_depth.clone())));
        must(r.register(Box::new(m.stage_seconds.clone())));
        must(r.register(Box::new(m.proofs_completed.clone())));
        must(r.register(Box::new(m.proofs_failed.clone())));
        must(r.register(Box::new(m.jobs_submitted.clone())));
        must(r.register(Box::new(m.jobs_cancelled.clone())));
        must(r.register(Box::new(m.rejected.clone())));
        must(r.register(Box::new(m.device_busy_fraction.clone())));
        must(r.register(Box::new(m.device_busy_seconds.clone())));
        must(r.register(Box::new(m.device_batch_size.clone())));
        must(r.register(Box::new(m.tail_batch_size.clone())));
        must(r.register(Box::new(m.tail_batches.clone())));
        // Both counts shown from the start, at 0.
        for on in ["alone", "pool"] {
            m.tail_batches.with_label_values(&[on]);
        }
        must(r.register(Box::new(m.memory_reserved.clone())));
        must(r.register(Box::new(m.memory_limit.clone())));
        must(r.register(Box::new(m.device_memory_reserved.clone())));
        must(r.register(Box::new(m.keys_resident.clone())));
        must(r.register(Box::new(m.keys_by_tier.clone())));
        must(r.register(Box::new(m.pinned_reserved.clone())));
        must(r.register(Box::new(m.pinned_limit.clone())));
        must(r.register(Box::new(m.pool_bytes.clone())));
        must(r.register(Box::new(m.pool_buffers.clone())));
        must(r.register(Box::new(m.dealloc_threads.clone())));
        must(r.register(Box::new(m.throttle_events.clone())));
        must(r.register(Box::new(m.throttle_paused_seconds.clone())));
        must(r.register(Box::new(m.peak_rss.clone())));
        must(r.register(Box::new(m.fleet_claims.clone())));
        must(r.register(Box::new(m.fleet_lease_expiries.clone())));
        must(r.register(Box::new(m.fleet_queue_depth.clone())));
        must(r.register(Box::new(m.fleet_results_refused.clone())));
        m
    }

    /// Records one proof's timings.
    pub fn observe(&self, t: &crate::job::ProofTimings) {
        let stages = crate::job::ProofTimings::REPORTED
            .into_iter()
            .map(|s| (s.name(), t.get(s)));
        for (stage, d) in stages.chain([("total", t.total)]) {
            self.stage_seconds
                .with_label_values(&[stage])
                .observe(d.as_secs_f64());
        }
    }

    /// The Prometheus text exposition of every metric.
    pub fn text(&self) -> String {
        let mut buf = Vec::new();
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
