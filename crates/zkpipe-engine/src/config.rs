//! The engine's validated configuration. Every field has a documented default; the server
//! crate reads the TOML file into these types and rejects bad values before starting.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use zkpipe_core::reduce::{RowSchedule, DEFAULT_SCHEDULE};
use zkpipe_core::{BindOptions, PointChecks};

pub use crate::threads::PoolMode;

/// Sizes of one CPU stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StageConfig {
    /// Partitions this stage works on at once (worker threads).
    pub workers: usize,
    /// Threads of the stage's own rayon pool, shared by its workers.
    pub threads: usize,
}

/// The memory-bandwidth throttle ([`zkpipe_core::throttle`]): the engine makes its own
/// from these settings, for its own threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottleConfig {
    /// What row loops do during a burst. Default: off.
    pub mode: zkpipe_core::throttle::Mode,
    /// Row loops check every this many chunks. Default: 64.
    pub every: usize,
    /// Longest a loop waits per check in `pause` mode. Default: 2 ms.
    pub max_pause: Duration,
}

impl Default for ThrottleConfig {
    fn default() -> Self {
        Self {
            mode: zkpipe_core::throttle::Mode::Off,
            every: 64,
            max_pause: Duration::from_millis(2),
        }
    }
}

/// How the buffer pool frees what it does not keep, and evicted keys (`memory.dealloc`).
/// Each mode frees everything; the pool's `shutdown` waits until it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeallocMode {
    /// `"worker"`: one deallocation thread with a bounded queue (`dealloc_queue`), so that
    /// frees never come in bursts on many threads at once: a thread per free (`detached`)
    /// is 11% slower per proof at c = 8 (lab/experiments/018b-deallocation.md).
    #[default]
    Worker,
    /// `"in-place"`: dropped at once, on the thread that lets go of it.
    InPlace,
    /// `"detached"`: a new detached thread per free, as many at once as there are frees:
    /// the unbounded baseline, kept to measure against, not to serve with.
    Detached,
}

impl DeallocMode {
    /// The config file's names, in order.
    pub const NAMES: [&'static str; 3] = ["worker", "in-place", "detached"];

    /// Its name in the config file.
    pub fn name(self) -> &'static str {
        match self {
            Self::Worker => "worker",
            Self::InPlace => "in-place",
            Self::Detached => "detached",
        }
    }
}

impl std::str::FromStr for DeallocMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "worker" => Ok(Self::Worker),
            "in-place" => Ok(Self::InPlace),
            "detached" => Ok(Self::Detached),
            _ => Err(one_of(s, &Self::NAMES)),
        }
    }
}

impl std::fmt::Display for DeallocMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How buffers given back on other threads reach the buffer pool again
/// (`memory.returns`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReturnMode {
    /// `"drain-all"`: givers push onto a lock-free list; the pool takes the whole list with
    /// one atomic swap when it next needs a buffer.
    #[default]
    DrainAll,
    /// `"cas-pop"`: givers push onto the same kind of list; the pool pops them one at a
    /// time, one compare-and-swap each.
    CasPop,
    /// `"free"`: nothing is recycled: a buffer given back is dropped (freed by the
    /// allocator) at once on the thread that gives it back, and every buffer taken is a
    /// new allocation.
    Free,
}

impl ReturnMode {
    /// The config file's names, in order.
    pub const NAMES: [&'static str; 3] = ["drain-all", "cas-pop", "free"];

    /// Its name in the config file.
    pub fn name(self) -> &'static str {
        match self {
            Self::DrainAll => "drain-all",
            Self::CasPop => "cas-pop",
            Self::Free => "free",
        }
    }
}

impl std::str::FromStr for ReturnMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "drain-all" => Ok(Self::DrainAll),
            "cas-pop" => Ok(Self::CasPop),
            "free" => Ok(Self::Free),
            _ => Err(one_of(s, &Self::NAMES)),
        }
    }
}

impl std::fmt::Display for ReturnMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `"x" is not one of "a", "b", "c"`.
fn one_of(s: &str, names: &[&str]) -> String {
    let names: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    format!("{s:?} is not one of {}", names.join(", "))
}

/// Everything the engine needs to start.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Folder of `.zkey` files; a key's id is its file stem. Default: `keys`.
    pub key_dir: PathBuf,
    /// How much to check of a key's points when it is loaded. Default: batched.
    pub key_checks: PointChecks,
    /// Host-memory budget in bytes for resident keys plus in-flight partitions.
    /// Default: half of the machine's memory ([`machine_memory`]).
    pub memory_limit: u64,
    /// Per-device memory budget in bytes, overriding what the device reports. Default: none.
    pub device_memory_limit: Option<u64>,
    /// The most proofs one stream of a streamed key's points serves (fewer where the
    /// device budget holds fewer); 0: the devices' default (2). Read by whoever makes the
    /// devices (`zkpipe serve`), as `device_memory_limit` is. Under 16 GiB at 2^24 a
    /// stream batch of 3 made a job of ten 2.4% faster than 2, and 4 (smaller chunks)
    /// 7.7% slower (lab/experiments/043g-pinned-matrices.md).
    pub stream_batch: usize,
    /// Budget in bytes of the pinned tier: streamed keys' copies of their points (and
    /// matrices, where the GPU reduces) in page-locked host memory (charged to
    /// `memory_limit` too); 0 pins nothing. Default: 0 here, so that a config with a
    /// small `memory_limit` stays valid; the daemon's file config defaults to half of
    /// `memory.host_limit`. Pinned, a streamed 2^24 key's proof took 1.35x less time
    /// alone and 1.19x less in a job of ten on one H200
    /// (lab/experiments/043g-pinned-matrices.md); points alone had made no difference
    /// (043c).
    pub pinned_memory_limit: u64,
    /// A resident key unused this long (and not referenced) is evicted. Default: 10 min.
    pub key_idle_timeout: Duration,
    /// Most devices one key is placed on at once: a busy key is copied to a less-loaded
    /// device (with room for it) up to this many. Default: every device.
    pub key_max_devices: usize,
    /// Witness synthesis stage (partitions submitted with circuit inputs): workers compute
    /// one witness each at a time; `threads` sizes the pool that turns it into field
    /// elements. Default: as many workers as cores, half the cores.
    pub synthesize: StageConfig,
    /// Witness generators named for keys (key id → circom `.wasm` or native generator),
    /// beside those found in the key directory (`<id>.wasm`, or `<id>` with `<id>.dat`).
    /// Default: none.
    pub generators: std::collections::HashMap<String, PathBuf>,
    /// Reduce stage. Default: 2 workers, all cores.
    pub reduce: StageConfig,
    /// Device stage, per device: workers queue for the device's gate; `threads` sizes the
    /// device's pool when the device is the CPU. Default: 2 workers, all cores.
    pub device: StageConfig,
    /// Each device the device set lists is scheduled as this many devices, each with
    /// its share of the device's memory and its own copy of a key, queue, gate, workers
    /// and pool ([`crate::split_devices`]): the CPU split in two is two CPU devices, to
    /// exercise and measure scheduling across devices on a machine with one. Default: 1.
    pub device_split: usize,
    /// A lab tool: every device pass replaced by this fixed delay, with the sums of a
    /// witness seen before ([`crate::split_devices`]), so the host path runs at full
    /// rate with the device's time fixed. Default: none (real passes).
    pub device_stub: Option<Duration>,
    /// Partitions whose device pass runs on one device at once. Default: what the devices
    /// ask for (`Devices::passes_per_device`: 1 for the CPU, 2 for a GPU). Give the device stage
    /// more workers than this, so a partition is ready when a pass ends.
    pub device_passes: Option<usize>,
    /// Most partitions of one key that share one device pass (a batch, gathered from the
    /// device's queue, which holds at least a full batch whatever `queue_depth` says): the
    /// bound key's `Caps::batch_limit`, capped by this. `Some(1)` turns batching off.
    /// Default: no cap.
    pub device_batch: Option<usize>,
    /// How large a batch must be to start beside the passes on the device, as a share of
    /// their partitions (at most the batch limit): a pass with less queued for it waits
    /// for more, or for the device to free, then takes what is queued; on a free device it
    /// starts at once. 0 starts every pass at once (two passes then split the queue into
    /// small batches under load); 1 waits for as large a batch as the one running. Only
    /// where passes overlap (`device_passes` above 1) and batch. Default: 2, which beat 0
    /// at 4, 16 and 64 clients of a 2^14 key on an H100
    /// (lab/experiments/034-device-pass-overlap.md).
    pub device_overlap_share: f64,
    /// Tail stage (G2 MSM on CPU, assemble, self-check, serialize). Default: 8 workers,
    /// half the cores.
    pub tail: StageConfig,
    /// Most proofs of one key a tail worker takes at once (never waiting for more): a
    /// device batch leaves the device together, and their self-checks together are one
    /// multi-Miller loop and one final exponentiation
    /// (`zkpipe_core::stages::self_check_batch`; a failed batch is checked proof by proof,
    /// so only the bad ones fail). Default: 16: the check's CPU per proof of a 2^13 key
    /// falls from 1.8–1.9 ms alone to 1.05 ms in batches of 8 and 0.87 ms in batches of
    /// 16, little less beyond (0.76–0.97 ms at 32 and 64; lab/experiments/042a-self-check.md).
    pub tail_batch: usize,
    /// Spread every tail batch over the tail's pool, even while other proofs wait for the
    /// tail. Default: false: a batch that leaves others queued runs on its worker's
    /// thread alone, so the workers' threads compute too; only one that empties the queue
    /// is spread (lab/experiments/042s-solo-tail.md).
    pub tail_always_spread: bool,
    /// Capacity of each bounded queue between stages (a device's queue holds at least
    /// the largest batch less one, see `device_batch`). Default: 4.
    pub queue_depth: usize,
    /// Most partitions in one job. Default: 64.
    pub max_partitions_per_job: usize,
    /// Most partitions accepted but not yet finished, with those of streamed jobs being
    /// received (counted from their header); beyond it submit says busy, a streamed job
    /// at its header, before any witness byte. Default: 4096.
    pub max_pending_partitions: usize,
    /// Verify every proof before returning it. Default: true.
    pub self_check: bool,
    /// MSMs do the same work for every witness (keys bound with a mask; see
    /// [`BindOptions::constant_work`]), for every key that `key_options` does not name.
    /// Default: false.
    pub constant_work: bool,
    /// Keys' own options, by key id (a daemon's `[keys.options.<id>]`); a key not named
    /// here binds with the defaults above ([`EngineConfig::bind_options`]). Default: none.
    pub key_options: BTreeMap<String, BindOptions>,
    /// Reduce row schedule. Default: dynamic:64.
    pub schedule: RowSchedule,
    /// Idle buffers kept for reuse, in bytes. Default: 1/8 of the memory limit.
    pub pool_max_bytes: u64,
    /// Queue length of the deallocation worker. Default: 64.
    pub dealloc_queue: usize,
    /// How what the buffer pool does not keep (and evicted keys) is freed
    /// (`memory.dealloc`). Default: [`DeallocMode::Worker`].
    pub dealloc: DeallocMode,
    /// How buffers given back on other threads reach the pool (`memory.returns`).
    /// Default: [`ReturnMode::DrainAll`].
    pub returns: ReturnMode,
    /// How long finished jobs (and their request ids) are remembered. Default: 10 min.
    /// Each holds its results in memory meanwhile: ~1.8 KiB of heap for one BN254
    /// partition, ~1.2 KiB more per further partition (lab/experiments/036-finished-job-memory.md).
    pub job_retention: Duration,
    /// At most this many finished jobs are remembered, the oldest finished forgotten
    /// first. Default: 100,000 (~180 MiB of heap for one-partition BN254 jobs).
    pub retain_jobs: usize,
    /// At most this many bytes of finished jobs' results (proof and public JSON, error
    /// messages) are remembered, the oldest finished forgotten first. Default: 256 MiB.
    pub retain_bytes: u64,
    /// Waterfalls kept for the Chrome-trace export (partitions). Default: 4096.
    pub trace_capacity: usize,
    /// The memory-bandwidth throttle. Default: off.
    pub throttle: ThrottleConfig,
    /// One rayon pool per stage, or one shared by all. Default: per stage.
    pub pools: PoolMode,
    /// The device worker leaves the device's gate before the tail (true), or keeps it
    /// through the tail, running the tail itself (false: the baseline). Default: true.
    pub release_before_tail: bool,
    /// How the engine takes work from a shared job store (a fleet); unused otherwise.
    pub fleet: FleetConfig,
}

/// How a daemon of a fleet claims work from the shared job store (docs/fleet.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FleetConfig {
    /// Partitions held here at once (claimed and not finished): enough to keep every
    /// stage busy, few enough that others get the rest. Default: 64.
    pub claim_ahead: usize,
    /// How long a claim holds a partition without being renewed; it is renewed every
    /// third of this. A daemon that dies loses its partitions to others after at most
    /// this long. Default: 30 s.
    pub lease: Duration,
    /// Longest wait between looks at the queue when no notification came. Default: 1 s.
    pub poll: Duration,
}

impl Default for FleetConfig {
    fn default() -> Self {
        Self {
            claim_ahead: 64,
            lease: Duration::from_secs(30),
            poll: Duration::from_secs(1),
        }
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let memory_limit = machine_memory() / 2;
        Self {
            key_dir: PathBuf::from("keys"),
            key_checks: PointChecks::Batched,
            memory_limit,
            device_memory_limit: None,
            stream_batch: 0,
            pinned_memory_limit: 0,
            key_idle_timeout: Duration::from_secs(600),
            key_max_devices: usize::MAX,
            synthesize: StageConfig {
                workers: cores,
                threads: (cores / 2).max(1),
            },
            generators: Default::default(),
            reduce: StageConfig {
                workers: 2,
                threads: cores,
            },
            device: StageConfig {
                workers: 2,
                threads: cores,
            },
            device_split: 1,
            device_stub: None,
            device_passes: None,
            device_batch: None,
            device_overlap_share: 2.0,
            // Eight tail workers: a batch of small proofs leaves the device at once and
            // two workers were its queue (2^14 key at c = 64 on an H100: +19%, +17%, +4%
            // in lab/experiments/019-latency-floor.md and lab/experiments/021-window-tables.md; a
            // 2^20 key at c = 1 and 8 no slower).
            tail: StageConfig {
                workers: 8,
                threads: (cores / 2).max(1),
            },
            tail_batch: 16,
            tail_always_spread: false,
            queue_depth: 4,
            max_partitions_per_job: 64,
            max_pending_partitions: 4096,
            self_check: true,
            constant_work: false,
            key_options: BTreeMap::new(),
            schedule: DEFAULT_SCHEDULE,
            pool_max_bytes: memory_limit / 8,
            dealloc_queue: 64,
            dealloc: DeallocMode::Worker,
            returns: ReturnMode::DrainAll,
            job_retention: Duration::from_secs(600),
            retain_jobs: 100_000,
            retain_bytes: 256 << 20,
            trace_capacity: 4096,
            throttle: ThrottleConfig::default(),
            pools: PoolMode::PerStage,
            release_before_tail: true,
            fleet: FleetConfig::default(),
        }
    }
}

impl EngineConfig {
    /// How key `id` binds: its own options, else the engine-wide defaults.
    pub fn bind_options(&self, id: &str) -> BindOptions {
        self.key_options.get(id).copied().unwrap_or(BindOptions {
            constant_work: self.constant_work,
        })
    }

    /// The bounds on finished jobs ([`Self::job_retention`], [`Self::retain_jobs`],
    /// [`Self::retain_bytes`]).
    pub fn retention(&self) -> crate::job_store::Retention {
        crate::job_store::Retention {
            time: self.job_retention,
            jobs: self.retain_jobs,
            bytes: self.retain_bytes,
        }
    }

    /// Checks values that would make the engine unable to run.
    pub fn validate(&self) -> Result<(), String> {
        for (name, s) in [
            ("synthesize", self.synthesize),
            ("reduce", self.reduce),
            ("device", self.device),
            ("tail", self.tail),
        ] {
            if s.workers == 0 || s.threads == 0 {
                return Err(format!("{name}: workers and threads must be at least 1"));
            }
        }
        if !(1..=64).contains(&self.device_split) {
            return Err("device: split must be 1 to 64".into());
        }
        if self.device_passes == Some(0) {
            return Err("device: passes must be at least 1".into());
        }
        if self.device_batch == Some(0) {
            return Err("device: batch must be at least 1".into());
        }
        if !(self.device_overlap_share.is_finite() && self.device_overlap_share >= 0.0) {
            return Err("device: overlap_share must be a number of at least 0".into());
        }
        if self.tail_batch == 0 {
            return Err("tail: batch must be at least 1".into());
        }
        if self.memory_limit == 0 {
            return Err("memory limit must be positive".into());
        }
        if self.pinned_memory_limit > self.memory_limit {
            return Err("memory.pinned_limit must not exceed memory.host_limit".into());
        }
        if self.fleet.claim_ahead == 0 {
            return Err("store.claim_ahead must be at least 1".into());
        }
        if self.fleet.lease < Duration::from_millis(300) || self.fleet.poll.is_zero() {
            return Err("store.lease must be at least 300 ms and store.poll positive".into());
        }
        if self.queue_depth == 0 || self.max_partitions_per_job == 0 {
            return Err("queue_depth and max_partitions_per_job must be at least 1".into());
        }
        if self.retain_jobs == 0 || self.retain_bytes == 0 {
            return Err("pipeline.retain_jobs and pipeline.retain_bytes must be at least 1".into());
        }
        if self.max_pending_partitions < self.max_partitions_per_job {
            return Err("max_pending_partitions must be at least max_partitions_per_job".into());
        }
        Ok(())
    }
}

/// Total memory of this machine in bytes (`/proc/meminfo`), or 8 GiB where unknown.
pub fn machine_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(8 << 30, |kb| kb * 1024)
}

/// Peak resident set size of this process in bytes (`VmHWM`), where known.
pub fn peak_rss() -> Option<u64> {
    proc_status_kb("VmHWM:")
}

/// Resident set size of this process in bytes (`VmRSS`), where known.
pub fn current_rss() -> Option<u64> {
    proc_status_kb("VmRSS:")
}

fn proc_status_kb(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb = s
        .lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()?;
    Some(kb * 1024)
}
