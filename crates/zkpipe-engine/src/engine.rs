//! The engine: builds the stages and wires them with bounded priority queues; it does
//! all the spawning, and nothing imports it back.
//!
//! ```text
//!  submit ─► Queued ─► [admission: host memory, key lease] ─► Admitted (circuit inputs,
//!           or a packed witness)
//!        ─► [synthesize × workers, own pool: the key's generator → witness, or a packed
//!           witness → field elements] ─► Synthesized
//!           (a partition submitted with a .wtns goes from admission straight to reduce)
//!        ─► [reduce × workers, own pool: load key if cold; a, b, c; place] ─► Reduced (per device)
//!        ─► [device × workers per device: device memory; gate; bind; pass] ─► Proved
//!        ─► [tail × workers, own pool: [B]₂ if left, assemble, self-check, JSON] ─► job
//! ```
//!
//! A janitor thread evicts idle keys and forgets old finished jobs.
//!
//! Over a shared job store (a fleet, docs/fleet.md), submit records jobs in the store and a
//! claim stage feeds the pipeline with the partitions this daemon claims from it.

use crate::buffers::BufferPool;
use crate::config::EngineConfig;
use crate::curves::PartitionBuffers;
use crate::devices::{build_devices, preload_targets, Device};
use crate::error::EngineError;
use crate::janitor::Janitor;
use crate::job_store::{JobStore, MemoryStore, PartitionBytes, SharedQueue, StagingWitness};
use crate::jobs::{store_error, JobTable};
use crate::keys::context::KeyContext;
use crate::keys::generators::Generators;
use crate::keys::store::KeyStore;
use crate::memory::{MemoryBudget, Signal};
use crate::messages::{Admitted, Checked, Proved, Queued, Synthesized};
use crate::metrics::Metrics;
use crate::outcome::Outcomes;
use crate::queue::PriorityQueue;
use crate::split_devices::SplitDevices;
use crate::stages::{
    admission::Admission,
    claim::{ClaimStage, Held},
    deliver::Deliver,
    device::DeviceStage,
    reduce::Reduce,
    synthesize::Synthesize,
    tail::Tail,
};
use crate::submit::{StreamPlan, Submission, SubmitRequest, Submitted};
use crate::threads::{spawn, workers, StagePools};
use crate::trace::Tracer;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use zkpipe_core::throttle::Throttle;
use zkpipe_core::Devices;

/// The proving engine (see the module doc). Cheap to clone; every clone is the same engine.
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) config: EngineConfig,
    pub(crate) submission: Arc<Submission>,
    /// The shared job store, in a fleet, and the partitions claimed from it.
    pub(crate) shared: Option<(Arc<dyn SharedQueue>, Arc<Held>)>,
    pub(crate) jobs: Arc<JobTable>,
    pub(crate) keys: Arc<KeyStore>,
    pub(crate) budget: Arc<MemoryBudget>,
    pub(crate) buffers: Arc<BufferPool>,
    pub(crate) devices: Arc<[Arc<Device>]>,
    /// The devices' kind: binds keys, sizes their memory.
    pub(crate) kind: Arc<dyn Devices>,
    pub(crate) generators: Arc<Generators>,
    pub(crate) admission: Arc<PriorityQueue<Queued>>,
    pub(crate) synthesize: Arc<PriorityQueue<Admitted>>,
    pub(crate) reduce: Arc<PriorityQueue<Synthesized>>,
    pub(crate) tail: Arc<PriorityQueue<Proved>>,
    pub(crate) deliver: Arc<PriorityQueue<Checked>>,
    /// The reduce stage's pool, where preloads compile keys too.
    pub(crate) load_pool: Arc<rayon::ThreadPool>,
    pub(crate) outcomes: Arc<Outcomes>,
    pub(crate) signal: Arc<Signal>,
    /// The memory-bandwidth throttle its threads run under.
    pub(crate) throttle: Arc<Throttle>,
    pub(crate) started: Instant,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Engine {
    /// Starts the engine's threads on the devices `kind` lists, with jobs kept in memory
    /// only (see [`Engine::start_with`]).
    pub fn start(config: EngineConfig, kind: Arc<dyn Devices>) -> Result<Self, EngineError> {
        Self::start_with(config, kind, Arc::new(MemoryStore::new()))
    }

    /// Starts the engine with jobs recorded in `store`: what it holds from an earlier run
    /// is taken back first (unfinished jobs queued again, finished ones to be awaited).
    pub fn start_with(
        config: EngineConfig,
        kind: Arc<dyn Devices>,
        store: Arc<dyn JobStore>,
    ) -> Result<Self, EngineError> {
        let recovered = store.recover().map_err(store_error)?;
        let shared = Arc::clone(&store)
            .shared()
            .map(|q| (q, Arc::new(Held::default())));
        config.validate().map_err(EngineError::Config)?;
        let kind: Arc<dyn Devices> = if config.device_split > 1 || config.device_stub.is_some() {
            Arc::new(SplitDevices::new(
                kind,
                config.device_split,
                config.device_stub,
            ))
        } else {
            kind
        };
        if !config.key_dir.is_dir() {
            let dir = config.key_dir.display();
            return Err(EngineError::Config(format!(
                "key directory {dir} does not exist"
            )));
        }
        let signal = Arc::new(Signal::default());
        let budget = MemoryBudget::new("host memory", config.memory_limit, Arc::clone(&signal));
        let buffers = Arc::new(BufferPool::with_modes(
            config.pool_max_bytes,
            config.dealloc_queue,
            config.dealloc,
            config.returns,
        ));
        let part_buffers = Arc::new(PartitionBuffers::new(&buffers));
        let freer = Arc::clone(&buffers);
        let options = config.clone();
        let ctx = KeyContext {
            entries: Default::default(),
            checks: config.key_checks,
            options: Box::new(move |id| options.bind_options(id)),
            budget: Arc::clone(&budget),
            pinned: MemoryBudget::new(
                "pinned memory",
                config.pinned_memory_limit,
                Arc::clone(&signal),
            ),
            signal: Arc::clone(&signal),
            free: Box::new(move |b| freer.free_any(b)),
        };
        let keys = Arc::new(KeyStore::new(
            config.key_dir.clone(),
            ctx,
            Arc::clone(&kind),
        ));
        let throttle = Arc::new(Throttle::new(
            config.throttle.mode,
            config.throttle.every,
            config.throttle.max_pause,
        ));
        let pools = StagePools::new(config.pools, Arc::clone(&throttle))?;
        let devices = build_devices(&config, &*kind, &signal, &pools)?;
        let metrics = Arc::new(Metrics::new());
        metrics.memory_limit.set(config.memory_limit as i64);
        metrics.pinned_limit.set(config.pinned_memory_limit as i64);
        let names = devices.iter().map(|d| d.info.name.clone()).collect();
        let tracer = Arc::new(Tracer::new(config.trace_capacity, names));
        let outcomes = Arc::new(Outcomes { metrics, tracer });
        let admission = Arc::new(PriorityQueue::new(usize::MAX));
        let synthesize = Arc::new(PriorityQueue::new(config.queue_depth));
        let reduce = Arc::new(PriorityQueue::new(config.queue_depth));
        let generators = Arc::new(Generators::new(
            config.key_dir.clone(),
            config.generators.clone(),
        ));
        // Every tail worker's batch at once. The tail's queue holds that much (and a
        // device pass's whole batch): with `queue_depth` alone a device worker waited for
        // the tail to take its batch a few proofs at a time, and the tail's batches stayed
        // that small. The deliver stage has as many threads and as much room, so a tail
        // worker waits for a deliverer only when all of them are waiting for the store.
        let tail_room = config.tail.workers * config.tail_batch.max(1);
        let tail = Arc::new(PriorityQueue::new(config.queue_depth.max(tail_room)));
        let deliver = Arc::new(PriorityQueue::new(tail_room));
        let jobs = Arc::new(JobTable::new(Arc::clone(&store)));
        let load_pool = pools.get("reduce", config.reduce.threads)?;
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();

        let stage = Arc::new(Admission {
            input: Arc::clone(&admission),
            synthesize: Arc::clone(&synthesize),
            reduce: Arc::clone(&reduce),
            keys: Arc::clone(&keys),
            signal: Arc::clone(&signal),
            outcomes: Arc::clone(&outcomes),
        });
        threads.push(spawn("zkpipe-admission".into(), move || stage.run())?);
        let stage = Arc::new(Synthesize {
            input: Arc::clone(&synthesize),
            output: Arc::clone(&reduce),
            pool: pools.get("synthesize", config.synthesize.threads)?,
            buffers: Arc::clone(&part_buffers),
            outcomes: Arc::clone(&outcomes),
        });
        workers(
            &mut threads,
            "zkpipe-synthesize",
            config.synthesize.workers,
            &stage,
            Synthesize::run,
            &throttle,
        )?;
        let stage = Arc::new(Reduce {
            input: Arc::clone(&reduce),
            devices: Arc::clone(&devices),
            kind: Arc::clone(&kind),
            pool: Arc::clone(&load_pool),
            schedule: config.schedule,
            max_devices: config.key_max_devices,
            outcomes: Arc::clone(&outcomes),
        });
        workers(
            &mut threads,
            "zkpipe-reduce",
            config.reduce.workers,
            &stage,
            Reduce::run,
            &throttle,
        )?;
        let deliver_stage = Arc::new(Deliver {
            input: Arc::clone(&deliver),
            outcomes: Arc::clone(&outcomes),
        });
        workers(
            &mut threads,
            "zkpipe-deliver",
            tail_room,
            &deliver_stage,
            Deliver::run,
            &throttle,
        )?;
        let tail_stage = Arc::new(Tail {
            input: Arc::clone(&tail),
            pool: pools.get("tail", config.tail.threads)?,
            deliver: deliver_stage,
            self_check: config.self_check,
            batch: config.tail_batch,
            always_spread: config.tail_always_spread,
            outcomes: Arc::clone(&outcomes),
        });
        workers(
            &mut threads,
            "zkpipe-tail",
            config.tail.workers,
            &tail_stage,
            Tail::run,
            &throttle,
        )?;
        for d in devices.iter() {
            let stage = Arc::new(DeviceStage {
                device: Arc::clone(d),
                devices: Arc::clone(&devices),
                max_devices: config.key_max_devices,
                batch_size: outcomes
                    .metrics
                    .device_batch_size
                    .with_label_values(&[d.info.name.as_str()]),
                kind: Arc::clone(&kind),
                batch_cap: config.device_batch,
                overlap_share: config.device_overlap_share,
                output: Arc::clone(&tail),
                inline_tail: (!config.release_before_tail).then(|| Arc::clone(&tail_stage)),
                outcomes: Arc::clone(&outcomes),
            });
            let name = format!("zkpipe-device{}", d.index);
            workers(
                &mut threads,
                &name,
                config.device.workers,
                &stage,
                DeviceStage::run,
                &throttle,
            )?;
        }

        let janitor = Janitor {
            keys: Arc::clone(&keys),
            jobs: Arc::clone(&jobs),
            signal: Arc::clone(&signal),
            key_idle_timeout: config.key_idle_timeout,
            retention: config.retention(),
            stop: Arc::clone(&stop),
        };
        threads.push(spawn("zkpipe-janitor".into(), move || janitor.run())?);

        let submission = Arc::new(Submission::new(
            Arc::clone(&keys),
            Arc::clone(&budget),
            Arc::clone(&devices),
            Arc::clone(&kind),
            part_buffers,
            Arc::clone(&jobs),
            Arc::clone(&generators),
            Arc::clone(&admission),
            Arc::clone(&signal),
            Arc::clone(&outcomes.metrics),
            (config.max_partitions_per_job, config.max_pending_partitions),
        ));
        if let Some((queue, held)) = &shared {
            let stage = ClaimStage {
                held: Arc::clone(held),
                queue: Arc::clone(queue),
                store,
                submission: Arc::clone(&submission),
                keys: Arc::clone(&keys),
                config: config.fleet,
                metrics: Arc::clone(&outcomes.metrics),
                stop: Arc::clone(&stop),
                starting: Default::default(),
            };
            let stage = Arc::new(stage);
            threads.push(spawn("zkpipe-claim".into(), move || stage.run())?);
        }
        let inner = Inner {
            config,
            submission,
            shared,
            jobs,
            keys,
            budget,
            buffers,
            devices,
            kind,
            generators,
            admission,
            synthesize,
            reduce,
            tail,
            deliver,
            load_pool,
            outcomes,
            signal,
            throttle,
            started: Instant::now(),
            stop,
            threads: Mutex::new(threads),
        };
        for job in &recovered {
            inner.submission.resume(job);
        }
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &EngineConfig {
        &self.inner.config
    }

    /// Its memory-bandwidth throttle's counters since it started (its own: another
    /// engine in the process has its own throttle).
    pub fn throttle_stats(&self) -> zkpipe_core::throttle::Stats {
        self.inner.throttle.stats()
    }

    /// Validates and queues a job; see [`SubmitRequest`]. Every witness is parsed and
    /// checked against the key here, so a bad request fails now, not later.
    pub fn submit<W: PartitionBytes>(
        &self,
        req: SubmitRequest<W>,
    ) -> Result<Submitted, EngineError> {
        self.inner.submission.submit(req, None)
    }

    /// Loads key `id` now (waiting up to `timeout` for host memory) and binds it to the
    /// device its first partition would go to and to every other device with room for a
    /// copy (up to `key_max_devices`), so the first jobs find it hot wherever they are
    /// routed, pinning it where it streams and the pinned tier has room; compiles its
    /// witness generator too, if it has one.
    pub fn preload(&self, id: &str, timeout: Duration) -> Result<(), EngineError> {
        let i = &self.inner;
        let (lease, key) = i.keys.preload(id, timeout, &i.load_pool)?;
        if i.generators.has(id) {
            i.generators.get(id)?;
        }
        for d in preload_targets(&lease, &i.devices, &*i.kind, i.config.key_max_devices) {
            let _pass = d.gate.enter();
            let budget = d.budget.as_ref();
            lease.bind(&key, &*i.kind, d.index, &d.info.name, budget)?;
            drop(_pass);
            lease.pin(d.index);
        }
        Ok(())
    }

    /// Evicts key `id` now; refused while partitions use it. Returns whether it was resident.
    pub fn evict(&self, id: &str) -> Result<bool, EngineError> {
        self.inner.keys.evict(id)
    }

    /// Stops accepting jobs and joins every thread. Unfinished jobs are left in a
    /// durable job store for the next start (their waiters get
    /// [`EngineError::ShuttingDown`]), or cancelled if the store is volatile.
    pub fn shutdown(&self) {
        let i = &self.inner;
        if i.stop.swap(true, Ordering::AcqRel) {
            return;
        }
        // The claim stage gives back what it holds to the shared store, if any.
        if let Some((q, held)) = &i.shared {
            held.abandon_all();
            q.interrupt();
        }
        i.admission.close();
        let keep = i.jobs.store.durable();
        let mut kept = 0;
        for j in i.jobs.all() {
            if keep {
                kept += usize::from(j.abandon());
            } else {
                let _ = j.cancel();
            }
        }
        if kept > 0 {
            tracing::info!(
                jobs = kept,
                "unfinished jobs kept in the job store for the next start"
            );
        }
        i.synthesize.close();
        i.reduce.close();
        for d in i.devices.iter() {
            d.queue.close();
        }
        i.tail.close();
        i.deliver.close();
        i.signal.notify();
        let threads = std::mem::take(&mut *i.threads.lock().unwrap_or_else(|e| e.into_inner()));
        for t in threads {
            let _ = t.join();
        }
        i.buffers.shutdown();
    }
}

impl Engine {
    /// Checks what a streamed job declares before its witnesses arrive: the engine
    /// accepts jobs, the key exists and fits, the partition count is within the limit;
    /// and reserves its partitions under `max_pending_partitions`, refusing it now
    /// ([`EngineError::Busy`]) if they would pass it, so that a job without room never
    /// sends its witnesses to the job store's files. The plan then checks each witness's
    /// first bytes ([`StreamPlan::check_start`]); the whole job is submitted with
    /// [`Engine::submit_streamed`] once every byte arrived, and the reservation goes to
    /// the job. Dropping the plan (the stream failed, or was refused) gives it back.
    pub fn plan_stream(&self, key_id: &str, sizes: &[u64]) -> Result<StreamPlan, EngineError> {
        self.inner.submission.plan(key_id, sizes)
    }

    /// [`Engine::submit`] for a streamed job whose header `plan` checked: its partitions
    /// are counted once, by the plan's reservation, which the job takes over (a request
    /// id naming an earlier job, or a refusal, gives it back). `req` has one witness per
    /// size the header declared.
    pub fn submit_streamed<W: PartitionBytes>(
        &self,
        plan: StreamPlan,
        req: SubmitRequest<W>,
    ) -> Result<Submitted, EngineError> {
        self.inner.submission.submit(req, Some(plan))
    }

    /// A file in the job store for one witness of a streamed job, of `bytes`, written as
    /// its chunks arrive and submitted as a [`Staged::File`](crate::job_store::Staged);
    /// `None` where the store keeps no witness files (in memory, or a fleet's shared
    /// store), or none this small: the caller then receives it in memory.
    pub fn stage_witness(
        &self,
        bytes: u64,
    ) -> Result<Option<Box<dyn StagingWitness>>, EngineError> {
        self.inner.submission.stage(bytes)
    }
}
