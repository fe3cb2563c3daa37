//! Submission: a request is checked whole (key, sizes, every witness parsed and matched
//! to the key, every set of circuit inputs parsed and its key's generator loaded) before
//! anything is queued, so a bad request fails at once and leaves nothing behind; then its
//! job is registered and its partitions queued for admission. Over a shared job store
//! (a fleet) the job is recorded there instead, for whichever daemon claims it; the claim
//! stage hands claimed partitions back here to be queued.
//!
//! A job streamed in chunks is checked twice: its header before any witness byte arrives
//! ([`crate::Engine::plan_stream`]: key, partition count, memory, and its partitions
//! reserved against `max_pending_partitions`) and each witness's own header as soon as its
//! first bytes do ([`StreamPlan::check_start`]: curve, length), so that a wrong request,
//! or one the daemon has no room for, is refused before its gigabytes cross the network
//! and fill the job store's files; the whole request is then submitted as any other, its
//! reservation handed to the job ([`crate::Engine::submit_streamed`]).

use crate::curves::{curve, AtReduce, Partition, PartitionBuffers};
use crate::devices::Device;
use crate::error::EngineError;
use crate::job::{JobId, Priority};
use crate::job_store::{
    fingerprint, shape_tag, Accepted, Fingerprint, NewJob, PartitionBytes, StagingWitness,
    StoredJob, StoredPartition,
};
use crate::jobs::{store_error, JobTable, Registered, Reservation};
use crate::keys::entry::KeyEntry;
use crate::keys::generators::Generators;
use crate::keys::store::KeyStore;
use crate::keys::KeyMeta;
use crate::live_job::Job;
use crate::memory::{MemoryBudget, Signal};
use crate::messages::{CircuitInputs, PartitionInput, Queued, Ticket, ToSynthesize};
use crate::metrics::Metrics;
use crate::queue::{Order, PriorityQueue};
use crate::trace::log_ms;
use rayon::prelude::*;
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use zkpipe_core::Devices;
use zkpipe_formats::packed_wtns::{self, PackedView};
use zkpipe_formats::wtns::{Wtns, WtnsView};
use zkpipe_formats::CurveId;

pub use crate::stream_plan::StreamPlan;

/// A request to prove one or more witnesses (partitions) with one key. `W` holds one
/// witness file's bytes: `Vec<u8>`, or whatever the caller received them in (the daemon's
/// `Bytes`, slices of one gRPC message), so that they need not be copied to submit.
#[derive(Debug, Clone, Default)]
pub struct SubmitRequest<W = Vec<u8>> {
    /// The key id (file stem in the key directory).
    pub key_id: String,
    /// One partition each: a `.wtns` file's bytes, or the circuit's inputs as snarkjs's
    /// `input.json` (a JSON object) for the key's witness generator to compute the
    /// witness from. Which of the two, the content says.
    pub witnesses: Vec<W>,
    /// Scheduling priority.
    pub priority: Priority,
    /// The caller's id for idempotency: the same request (key and witnesses) again
    /// returns the first job; another request under the same id is refused with
    /// [`EngineError::RequestIdTaken`]. Empty: none.
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

/// Checks and queues requests (see the module doc).
pub(crate) struct Submission {
    pub keys: Arc<KeyStore>,
    pub budget: Arc<MemoryBudget>,
    pub devices: Arc<[Arc<Device>]>,
    pub kind: Arc<dyn Devices>,
    pub buffers: Arc<PartitionBuffers>,
    pub jobs: Arc<JobTable>,
    pub generators: Arc<Generators>,
    pub admission: Arc<PriorityQueue<Queued>>,
    pub signal: Arc<Signal>,
    pub metrics: Arc<Metrics>,
    pub max_partitions_per_job: usize,
    pub max_pending_partitions: usize,
    next_seq: AtomicU64,
}

impl Submission {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        keys: Arc<KeyStore>,
        budget: Arc<MemoryBudget>,
        devices: Arc<[Arc<Device>]>,
        kind: Arc<dyn Devices>,
        buffers: Arc<PartitionBuffers>,
        jobs: Arc<JobTable>,
        generators: Arc<Generators>,
        admission: Arc<PriorityQueue<Queued>>,
        signal: Arc<Signal>,
        metrics: Arc<Metrics>,
        limits: (usize, usize),
    ) -> Self {
        Self {
            keys,
            budget,
            devices,
            kind,
            buffers,
            jobs,
            generators,
            admission,
            signal,
            metrics,
            max_partitions_per_job: limits.0,
            max_pending_partitions: limits.1,
            next_seq: AtomicU64::new(0),
        }
    }

    /// Checks a streamed job's header and reserves its partitions (see
    /// [`crate::Engine::plan_stream`]); counts a refusal.
    pub(crate) fn plan(&self, key_id: &str, sizes: &[u64]) -> Result<StreamPlan, EngineError> {
        let r = self.plan_checked(key_id, sizes);
        if let Err(e) = &r {
            self.metrics.rejected.with_label_values(&[e.kind()]).inc();
        }
        r
    }

    /// A file in the job store for a streamed witness of `bytes`, written as it arrives
    /// (`None`: the store keeps none, or a shared store takes the job).
    pub(crate) fn stage(&self, bytes: u64) -> Result<Option<Box<dyn StagingWitness>>, EngineError> {
        if self.jobs.shared {
            return Ok(None);
        }
        self.jobs.store.stage(bytes).map_err(store_error)
    }

    fn plan_checked(&self, key_id: &str, sizes: &[u64]) -> Result<StreamPlan, EngineError> {
        if self.admission.is_closed() {
            return Err(EngineError::ShuttingDown);
        }
        self.check_count(sizes.len())?;
        let entry = self.keys.resolve(key_id)?;
        self.check_fits(&entry.meta)?;
        // Last, so that a request refused for what it is never takes a place. A shared
        // store's jobs are not this daemon's to count (`share` counts none either).
        let reserved = if self.jobs.shared {
            Reservation::none()
        } else {
            self.jobs
                .reserve(sizes.len(), self.max_pending_partitions)?
        };
        Ok(StreamPlan {
            key: entry.meta.id.clone(),
            curve: entry.meta.shape.curve,
            n_vars: entry.meta.shape.n_vars,
            sizes: sizes.to_vec(),
            reserved,
        })
    }

    /// Refuses a job of no partition or of more than a job may have.
    fn check_count(&self, n: usize) -> Result<(), EngineError> {
        if n == 0 {
            return Err(EngineError::InvalidRequest(
                "a job needs at least one witness or set of circuit inputs".into(),
            ));
        }
        if n > self.max_partitions_per_job {
            return Err(EngineError::InvalidRequest(format!(
                "{n} partitions, at most {} per job",
                self.max_partitions_per_job
            )));
        }
        Ok(())
    }

    /// Validates and queues a job; counts a refusal in the metrics. `plan`: the header
    /// of a streamed job, whose reserved partitions the job takes over.
    pub fn submit<W: PartitionBytes>(
        &self,
        req: SubmitRequest<W>,
        plan: Option<StreamPlan>,
    ) -> Result<Submitted, EngineError> {
        let r = self.submit_checked(req, plan);
        if let Err(e) = &r {
            self.metrics.rejected.with_label_values(&[e.kind()]).inc();
        }
        r
    }

    fn submit_checked<W: PartitionBytes>(
        &self,
        req: SubmitRequest<W>,
        plan: Option<StreamPlan>,
    ) -> Result<Submitted, EngineError> {
        let t0 = Instant::now();
        if self.admission.is_closed() {
            return Err(EngineError::ShuttingDown);
        }
        // Any return before the job is registered drops the plan's reservation.
        let held = match plan {
            Some(p) if p.sizes.len() != req.witnesses.len() => {
                return Err(EngineError::InvalidRequest(format!(
                    "{} partitions, but the stream's header declared {}",
                    req.witnesses.len(),
                    p.sizes.len()
                )))
            }
            Some(p) => Some(p.reserved),
            None => None,
        };
        // Only a request id needs a fingerprint (hashing every witness costs time).
        let fingerprint = if req.request_id.is_empty() {
            Fingerprint::default()
        } else {
            fingerprint(&req.key_id, &req.witnesses)
        };
        if let Some(id) = self.jobs.by_request(&req.request_id, &fingerprint)? {
            return Ok(Submitted {
                job_id: id,
                existing: true,
            });
        }
        let n = req.witnesses.len();
        self.check_count(n)?;
        let entry = self.keys.resolve(&req.key_id)?;
        self.check_fits(&entry.meta)?;
        let witnesses: Vec<&[u8]> = req.witnesses.iter().map(AsRef::as_ref).collect();
        let each = witnesses.iter().copied().enumerate();
        let data = self.partitions(&entry, each, Packing::Raw, |i| {
            // A staged witness's pages leave the resident set as soon as it is parsed.
            if let Some(s) = req.witnesses[i].staged() {
                s.release();
            }
        })?;
        let parsed = t0.elapsed();
        // The store records a witness as packed here where that halved it.
        let stored = data
            .iter()
            .zip(&witnesses)
            .map(|((_, input), &sent)| match input {
                PartitionInput::Synthesize(ToSynthesize::Packed(p)) => p.as_slice(),
                _ => sent,
            })
            .collect();
        let new = NewJob {
            key_id: &entry.meta.id,
            priority: req.priority,
            request_id: &req.request_id,
            fingerprint,
            key_shape: shape_tag(&entry.meta.shape),
            witnesses: stored,
            packed: true,
            staged: req.witnesses.iter().map(PartitionBytes::staged).collect(),
        };
        // A shared store (a fleet) takes the job instead of this engine's queues.
        if self.jobs.shared {
            return self.share(&new, t0);
        }
        let (job, times) = match self
            .jobs
            .register(&new, self.max_pending_partitions, held)?
        {
            Registered::Existing(id) => {
                return Ok(Submitted {
                    job_id: id,
                    existing: true,
                })
            }
            Registered::New(job, times) => (job, times),
        };
        self.metrics.jobs_submitted.inc();
        self.enqueue(&job, &entry, data);
        tracing::info!(
            job = job.id,
            key = %entry.meta.id,
            partitions = n,
            ms = log_ms(t0.elapsed()),
            parse_ms = log_ms(parsed),
            lock_wait_ms = log_ms(times.lock_wait),
            record_ms = log_ms(times.record),
            sync_ms = log_ms(times.sync),
            "job accepted"
        );
        Ok(Submitted {
            job_id: job.id,
            existing: false,
        })
    }

    /// Records a checked job in the shared store, for the fleet to claim.
    /// `t0`: when the request came in, for the log.
    fn share(&self, new: &NewJob<'_>, t0: Instant) -> Result<Submitted, EngineError> {
        let (job_id, existing) = match self.jobs.store.accept(new).map_err(store_error)? {
            Accepted::New(id) => (id, false),
            Accepted::Existing(id) => (id, true),
        };
        if !existing {
            self.metrics.jobs_submitted.inc();
            tracing::info!(job = job_id, key = %new.key_id, partitions = new.witnesses.len(), ms = log_ms(t0.elapsed()), "job accepted into the shared store");
        }
        Ok(Submitted { job_id, existing })
    }

    /// Queues partition `index` of `job`, claimed from the shared store with its witness
    /// (or circuit inputs), checked against this daemon's copy of the key.
    pub fn claimed(&self, job: &Arc<Job>, index: usize, witness: &[u8]) -> Result<(), EngineError> {
        let entry = self.keys.resolve(&job.key_id)?;
        self.check_fits(&entry.meta)?;
        let one = std::iter::once((index, witness));
        let parts = self.partitions(&entry, one, Packing::AsStored, |_| {})?;
        self.jobs.pending.fetch_add(parts.len(), Ordering::AcqRel);
        self.enqueue(job, &entry, parts);
        Ok(())
    }

    /// Parses each `(index, witness or circuit inputs)` and checks it against the key; the
    /// partitions of a job side by side (a 2^22 job's ten 128 MiB witnesses one after
    /// another kept one core busy for seconds while the rest of the host waited).
    /// `parsed(i)` is called once partition `i`'s bytes are no longer read.
    fn partitions<'a>(
        &self,
        entry: &KeyEntry,
        witnesses: impl Iterator<Item = (usize, &'a [u8])>,
        packing: Packing,
        parsed: impl Fn(usize) + Sync,
    ) -> Result<Vec<(usize, PartitionInput)>, EngineError> {
        let one = |(i, bytes): (usize, &[u8])| {
            let input = if is_circuit_inputs(bytes) {
                PartitionInput::Synthesize(ToSynthesize::Inputs(self.inputs(entry, i, bytes)?))
            } else if let Some(packed) = packing.packed(bytes) {
                check_packed(&entry.meta, i, &packed)?;
                PartitionInput::Synthesize(ToSynthesize::Packed(packed.into_owned()))
            } else {
                PartitionInput::Witness(self.witness(entry, i, bytes)?)
            };
            parsed(i);
            Ok((i, input))
        };
        let witnesses: Vec<(usize, &[u8])> = witnesses.collect();
        if witnesses.len() == 1 {
            return witnesses.into_iter().map(one).collect();
        }
        // Every partition's outcome, then the first error in partition order: the
        // message names the same partition whichever thread finished first.
        let parsed: Vec<Result<_, EngineError>> = witnesses.into_par_iter().map(one).collect();
        parsed.into_iter().collect()
    }

    /// Partition `i`'s circuit inputs, parsed, with its key's generator (compiled on the
    /// key's first such partition).
    fn inputs(
        &self,
        entry: &KeyEntry,
        i: usize,
        bytes: &[u8],
    ) -> Result<CircuitInputs, EngineError> {
        let bad = |message: String| EngineError::BadInputs {
            partition: i,
            message,
        };
        let text = std::str::from_utf8(bytes)
            .map_err(|e| bad(format!("circuit inputs are not UTF-8 text: {e}")))?;
        let inputs = zkpipe_witness::Inputs::parse(text).map_err(|e| bad(e.to_string()))?;
        let generator = self.generators.get(&entry.meta.id)?;
        generator.check(&inputs).map_err(|e| bad(e.to_string()))?;
        Ok(CircuitInputs { inputs, generator })
    }

    /// Partition `i`'s `.wtns`, parsed and checked against the key.
    fn witness(
        &self,
        entry: &KeyEntry,
        i: usize,
        bytes: &[u8],
    ) -> Result<Partition<AtReduce>, EngineError> {
        let wtns = Wtns::view(bytes).map_err(|e| malformed(i, e))?;
        witness_partition(&entry.meta, i, wtns, &self.buffers)
    }

    /// Queues `job`'s partitions for admission, each with its ticket (counted in
    /// `pending` already).
    fn enqueue(&self, job: &Arc<Job>, entry: &Arc<KeyEntry>, parts: Vec<(usize, PartitionInput)>) {
        for (index, input) in parts {
            let order = Order {
                priority: job.priority as u8,
                seq: self.next_seq.fetch_add(1, Ordering::Relaxed),
            };
            let ticket = Ticket::new(
                Arc::clone(job),
                index,
                order,
                Arc::clone(&self.jobs.pending),
            );
            let queued = Queued {
                input,
                entry: Arc::clone(entry),
                ticket,
            };
            // The admission queue is unbounded; it refuses only once the engine is
            // shutting down, which cancelled this job already.
            let _ = self.admission.push(order, queued);
        }
        self.signal.notify();
    }

    /// Takes back a job read from the job store at start: a finished one to be awaited,
    /// an unfinished one queued again for the partitions it had not proved. A job that
    /// cannot run any more (its key is gone or changed) fails with the reason.
    pub fn resume(&self, stored: &StoredJob) {
        let job = Arc::new(Job::recovered(stored, Arc::clone(&self.jobs.store)));
        self.jobs.restore(Arc::clone(&job));
        if stored.state.is_final() {
            return;
        }
        let pending: Vec<(usize, &[u8])> = stored
            .partitions
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match p {
                StoredPartition::Pending(w) => Some((i, w.as_slice())),
                _ => None,
            })
            .collect();
        let lost = stored
            .partitions
            .iter()
            .position(|p| matches!(p, StoredPartition::Dropped));
        let ready = match lost {
            Some(i) => Err(EngineError::InvalidRequest(format!(
                "partition {i}: its witness is missing from the job store"
            ))),
            None => self.keys.resolve(&job.key_id).and_then(|entry| {
                self.check_fits(&entry.meta)?;
                Ok((
                    Arc::clone(&entry),
                    self.partitions(&entry, pending.into_iter(), Packing::AsStored, |_| {})?,
                ))
            }),
        };
        match ready {
            Ok((entry, parts)) => {
                tracing::info!(job = job.id, key = %job.key_id, partitions = parts.len(), "job resumed");
                self.jobs.pending.fetch_add(parts.len(), Ordering::AcqRel);
                self.enqueue(&job, &entry, parts);
            }
            Err(e) => {
                tracing::warn!(job = job.id, "cannot resume the job: {e}");
                job.fail(format!("after a restart: {e}"));
            }
        }
    }

    /// Refuses a key that, with one partition, could never fit a memory budget.
    fn check_fits(&self, meta: &KeyMeta) -> Result<(), EngineError> {
        let needed = meta.host_bytes + meta.partition_bytes;
        if !self.budget.could_ever_fit(needed) {
            return Err(EngineError::TooLarge {
                what: format!(
                    "key {:?} ({} bytes) plus one partition ({} bytes)",
                    meta.id, meta.host_bytes, meta.partition_bytes
                ),
                needed,
                budget: self.budget.name().into(),
                limit: self.budget.limit(),
            });
        }
        let (shape, opts) = (&meta.shape, &meta.bind);
        let device_bytes =
            self.kind.key_device_bytes(shape, opts) + self.kind.partition_device_bytes(shape, opts);
        for d in self.devices.iter() {
            if let Some(b) = &d.budget {
                if !b.could_ever_fit(device_bytes) {
                    return Err(EngineError::TooLarge {
                        what: format!("key {:?} on device {}", meta.id, d.info.name),
                        needed: device_bytes,
                        budget: b.name().into(),
                        limit: b.limit(),
                    });
                }
            }
        }
        Ok(())
    }
}

/// Whether [`Submission::partitions`] packs a plain `.wtns` it is given.
#[derive(Clone, Copy)]
enum Packing {
    /// A request's witnesses: a `.wtns` that halves packed
    /// ([`packed_wtns::pack`]: a circom witness's 0s and 1s) waits for admission packed,
    /// as one sent packed does, so its field elements exist only under the host budget's
    /// reservation (the synthesis stage converts it); the job store records the same
    /// packed bytes. Others are converted at once, as before.
    Raw,
    /// Witnesses as the job store kept them: packed already where that halved them.
    AsStored,
}

impl Packing {
    /// A `.wtns`'s packed form, to queue: the bytes themselves where they came packed, a
    /// plain `.wtns` packed where [`Packing::Raw`] and that halves it; `None` otherwise.
    fn packed(self, bytes: &[u8]) -> Option<Cow<'_, [u8]>> {
        if bytes.starts_with(packed_wtns::MAGIC) {
            return Some(Cow::Borrowed(bytes));
        }
        match self {
            Packing::Raw => packed_wtns::pack(bytes).map(Cow::Owned),
            Packing::AsStored => None,
        }
    }
}

/// Partition `i` of a job of the key `meta` describes, from its witness (submitted or
/// computed): refused if it is of another curve or length than the key.
pub(crate) fn witness_partition(
    meta: &KeyMeta,
    i: usize,
    wtns: WtnsView<'_>,
    buffers: &PartitionBuffers,
) -> Result<Partition<AtReduce>, EngineError> {
    check_shape(meta, i, wtns.curve, wtns.n_witness)?;
    curve(meta.shape.curve)
        .partition(wtns, buffers)
        .map_err(|e| malformed(i, e))
}

/// Checks partition `i`'s packed witness ([`packed_wtns`]) against the key without
/// converting it, refusing what [`packed_partition`] would: its layout, curve and count,
/// and every value below the modulus.
fn check_packed(meta: &KeyMeta, i: usize, bytes: &[u8]) -> Result<(), EngineError> {
    let wtns = PackedView::parse(bytes).map_err(|e| malformed(i, e))?;
    check_shape(meta, i, wtns.curve, wtns.n_witness)?;
    wtns.check().map_err(|e| malformed(i, e))
}

/// Partition `i` from a packed witness ([`packed_wtns`]), refused as [`witness_partition`]
/// refuses one; converted without unpacking it.
pub(crate) fn packed_partition(
    meta: &KeyMeta,
    i: usize,
    bytes: &[u8],
    buffers: &PartitionBuffers,
) -> Result<Partition<AtReduce>, EngineError> {
    let wtns = PackedView::parse(bytes).map_err(|e| malformed(i, e))?;
    check_shape(meta, i, wtns.curve, wtns.n_witness)?;
    curve(meta.shape.curve)
        .packed_partition(&wtns, buffers)
        .map_err(|e| malformed(i, e))
}

/// Refuses a witness of another curve or length than the key `meta` describes.
fn check_shape(
    meta: &KeyMeta,
    i: usize,
    found: CurveId,
    n_witness: u32,
) -> Result<(), EngineError> {
    if found != meta.shape.curve {
        return Err(EngineError::WrongCurve {
            partition: i,
            key: meta.id.clone(),
            found,
            expected: meta.shape.curve,
        });
    }
    if n_witness as usize != meta.shape.n_vars {
        return Err(EngineError::WitnessMismatch {
            partition: i,
            key: meta.id.clone(),
            expected: meta.shape.n_vars,
            found: n_witness as usize,
        });
    }
    Ok(())
}

/// Partition `i`'s witness could not be read.
fn malformed(i: usize, e: impl std::fmt::Display) -> EngineError {
    EngineError::MalformedWitness {
        partition: i,
        message: e.to_string(),
    }
}

/// Whether a partition's bytes are circuit inputs (a JSON object) rather than a `.wtns`
/// (which starts with its magic, `wtns`).
fn is_circuit_inputs(bytes: &[u8]) -> bool {
    let text = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    text.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}
