//! One partition in flight: its job, key lease, memory reservation, buffers and waterfall.
//! Everything it holds is released when it is dropped — after its proof is delivered, or
//! at the stage boundary where a cancelled or failed job's partitions are dropped.

use crate::buffers::BufferPool;
use crate::job::Job;
use crate::keys::{BoundBackend, EngineCurve, KeyEntry, KeyLease, LoadedKey};
use crate::memory::Reservation;
use crate::queue::Order;
use crate::trace::PartitionTrace;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;
use zkpipe_core::backend::ScalarInt;
use zkpipe_core::curve::field_to_decimal;
use zkpipe_core::reduce::QapEvals;
use zkpipe_core::stages::{
    device_stage, device_stage_batch, reduce_stage, tail_stage, DeviceSums, ReduceOn,
};
use zkpipe_core::{Bls12_381, Bn254, CpuBackend, Error as CoreError, PassInput, Timings, Witness};
use zkpipe_formats::json::to_json_bytes;

/// A partition's curve-specific data.
pub(crate) enum CurveData {
    Bn254(Box<Part<Bn254>>),
    Bls12_381(Box<Part<Bls12_381>>),
}

/// Runs a generic expression on the `Part<E>` inside a [`CurveData`].
macro_rules! with_part {
    ($data:expr, $p:ident => $body:expr) => {
        match $data {
            $crate::work::CurveData::Bn254($p) => $body,
            $crate::work::CurveData::Bls12_381($p) => $body,
        }
    };
}
pub(crate) use with_part;

/// One partition's domain-sized buffers for a device pass: a, b, c (h in `a` after the
/// quotient) and h as MSM scalars.
type PassBuffers<E> = (
    QapEvals<<E as ark_ec::pairing::Pairing>::ScalarField>,
    Vec<ScalarInt<E>>,
);

/// Picks the `Part<E>` out of a [`CurveData`], so that generic code can take a batch of them.
trait CurvePart: EngineCurve {
    fn part(data: &mut CurveData) -> Option<&mut Part<Self>>;
}

impl CurvePart for Bn254 {
    fn part(data: &mut CurveData) -> Option<&mut Part<Self>> {
        match data {
            CurveData::Bn254(p) => Some(&mut **p),
            CurveData::Bls12_381(_) => None,
        }
    }
}

impl CurvePart for Bls12_381 {
    fn part(data: &mut CurveData) -> Option<&mut Part<Self>> {
        match data {
            CurveData::Bls12_381(p) => Some(&mut **p),
            CurveData::Bn254(_) => None,
        }
    }
}

/// Stage 2 of several partitions of one key (so of one curve) in one device pass, inside
/// the device's gate; see [`Part::device_batch`]. Results are in the order of `data`; a
/// partition of another curve than the key's fails alone.
pub(crate) fn device_batch(
    data: &mut [&mut CurveData],
    key: &LoadedKey,
    backend: &BoundBackend,
    g2_on_device: bool,
) -> Vec<Result<(), CoreError>> {
    match key {
        LoadedKey::Bn254(_) => batch_of::<Bn254>(data, key, backend, g2_on_device),
        LoadedKey::Bls12_381(_) => batch_of::<Bls12_381>(data, key, backend, g2_on_device),
    }
}

fn batch_of<E: CurvePart>(
    data: &mut [&mut CurveData],
    key: &LoadedKey,
    backend: &BoundBackend,
    g2_on_device: bool,
) -> Vec<Result<(), CoreError>> {
    let mut results: Vec<Result<(), CoreError>> = data.iter().map(|_| Err(wrong_curve())).collect();
    let mut slots = Vec::with_capacity(data.len());
    let mut parts = Vec::with_capacity(data.len());
    for (i, d) in data.iter_mut().enumerate() {
        if let Some(p) = E::part(d) {
            slots.push(i);
            parts.push(p);
        }
    }
    let done = Part::device_batch(&mut parts, key, backend, g2_on_device);
    for (i, r) in slots.into_iter().zip(done) {
        results[i] = r;
    }
    results
}

/// The buffers and intermediate results of one partition of curve `E`.
pub(crate) struct Part<E: EngineCurve> {
    witness: Witness<E::ScalarField>,
    evals: Option<QapEvals<E::ScalarField>>,
    w: Vec<ScalarInt<E>>,
    sums: Option<DeviceSums<E>>,
    t: Timings,
    pool: Arc<BufferPool>,
}

fn wrong_curve() -> CoreError {
    CoreError::InvalidKey("key and witness are for different curves".into())
}

impl<E: EngineCurve> Part<E> {
    pub fn new(witness: Witness<E::ScalarField>, pool: Arc<BufferPool>) -> Self {
        Self {
            witness,
            evals: None,
            w: Vec::new(),
            sums: None,
            t: Timings::default(),
            pool,
        }
    }

    /// Stage 1 on the current rayon pool, into pooled buffers (a, b, c only where the
    /// CPU computes them).
    pub fn reduce(&mut self, key: &LoadedKey, on: ReduceOn) -> Result<(), CoreError> {
        let k = E::key(key).ok_or_else(wrong_curve)?;
        let mut evals = match on {
            ReduceOn::Cpu(_) => {
                let n = k.domain_size();
                QapEvals {
                    a: self.pool.take(n),
                    b: self.pool.take(n),
                    c: self.pool.take(n),
                }
            }
            ReduceOn::Device => QapEvals::zeroed(0),
        };
        let mut w = self.pool.take::<ScalarInt<E>>(k.n_vars);
        let r = reduce_stage(k, &self.witness, &mut evals, &mut w, on, &mut self.t);
        self.evals = Some(evals);
        self.w = w;
        r
    }

    /// Stage 2 on `backend` (called inside the device's gate); gives the domain-sized
    /// buffers back to the pool as soon as the device is done with them.
    pub fn device(
        &mut self,
        key: &LoadedKey,
        backend: &BoundBackend,
        g2_on_device: bool,
    ) -> Result<(), CoreError> {
        let k = E::key(key).ok_or_else(wrong_curve)?;
        let b = E::backend(backend).ok_or_else(wrong_curve)?;
        let mut evals = self
            .evals
            .take()
            .ok_or_else(|| CoreError::InvalidKey("device stage before reduce".into()))?;
        let mut h = self.pool.take::<ScalarInt<E>>(k.domain_size());
        let r = device_stage(
            &**b,
            k,
            &mut evals,
            &self.w,
            &mut h,
            g2_on_device,
            &mut self.t,
        );
        give_evals(&self.pool, evals);
        self.pool.give(h);
        self.sums = Some(r?);
        Ok(())
    }

    /// Stage 2 of several partitions of one key in one device pass on `backend` (called
    /// inside the device's gate), results in order. Like [`Part::device`], it gives the
    /// domain-sized buffers back to the pool once the pass is done with them; a partition
    /// that fails (not reduced, lengths that do not fit the key) fails alone.
    pub fn device_batch(
        parts: &mut [&mut Part<E>],
        key: &LoadedKey,
        backend: &BoundBackend,
        g2_on_device: bool,
    ) -> Vec<Result<(), CoreError>> {
        let (Some(k), Some(b)) = (E::key(key), E::backend(backend)) else {
            return parts.iter().map(|_| Err(wrong_curve())).collect();
        };
        let n = k.domain_size();
        // Each reduced partition's a, b, c and a pooled h, held here for the pass.
        let mut buffers: Vec<Option<PassBuffers<E>>> = parts
            .iter_mut()
            .map(|p| {
                let evals = p.evals.take()?;
                Some((evals, p.pool.take(n)))
            })
            .collect();
        let mut inputs: Vec<PassInput<'_, E>> = parts
            .iter_mut()
            .zip(&mut buffers)
            .filter_map(|(p, buf)| {
                let (evals, h) = buf.as_mut()?;
                Some(PassInput {
                    evals,
                    w: &p.w,
                    h,
                    t: &mut p.t,
                })
            })
            .collect();
        let sums = device_stage_batch(&**b, k, &mut inputs, g2_on_device);
        drop(inputs);
        let mut sums = sums.into_iter();
        parts
            .iter_mut()
            .zip(buffers)
            .map(|(p, buf)| {
                let (evals, h) =
                    buf.ok_or_else(|| CoreError::InvalidKey("device stage before reduce".into()))?;
                give_evals(&p.pool, evals);
                p.pool.give(h);
                let r = sums.next().unwrap_or_else(|| {
                    Err(CoreError::Backend {
                        backend: "engine",
                        message: "device batch returned fewer results than partitions".into(),
                    })
                });
                p.sums = Some(r?);
                Ok(())
            })
            .collect()
    }

    /// Stage 3 on the current rayon pool: (proof.json, public.json).
    pub fn tail(
        &mut self,
        key: &LoadedKey,
        self_check: bool,
    ) -> Result<(String, String), CoreError> {
        let k = E::key(key).ok_or_else(wrong_curve)?;
        let sums = self
            .sums
            .ok_or_else(|| CoreError::InvalidKey("tail stage before device stage".into()))?;
        let proof = tail_stage(
            &CpuBackend,
            k,
            &self.witness,
            &self.w,
            &sums,
            self_check,
            &mut rand::rngs::OsRng,
            &mut self.t,
        )?;
        let public: Vec<String> = self
            .witness
            .public(k.n_public)
            .iter()
            .map(field_to_decimal)
            .collect();
        let s = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
        Ok((
            s(to_json_bytes(&proof.to_json())),
            s(to_json_bytes(&public)),
        ))
    }
}

fn give_evals<F: Send + 'static>(pool: &BufferPool, e: QapEvals<F>) {
    pool.give(e.a);
    pool.give(e.b);
    pool.give(e.c);
}

impl<E: EngineCurve> Drop for Part<E> {
    fn drop(&mut self) {
        if let Some(e) = self.evals.take() {
            give_evals(&self.pool, e);
        }
        self.pool.give(std::mem::take(&mut self.w));
        self.pool
            .free_later(std::mem::take(&mut self.witness.values));
    }
}

/// A partition moving through the pipeline.
pub(crate) struct Work {
    pub job: Arc<Job>,
    pub index: usize,
    pub order: Order,
    /// The key, until admission turns it into a lease.
    pub entry: Option<Arc<KeyEntry>>,
    pub lease: Option<KeyLease>,
    pub host: Option<Reservation>,
    pub key: Option<LoadedKey>,
    pub device: usize,
    pub data: CurveData,
    pub trace: PartitionTrace,
    /// When it entered the queue it is in (for wait spans).
    pub queued_at: Instant,
    pub pending: Arc<AtomicUsize>,
}

impl Drop for Work {
    fn drop(&mut self) {
        self.pending.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs `f`, turning a panic into an error so that a bug fails one job instead of killing
/// a stage worker (and leaving its jobs waiting forever).
pub(crate) fn guarded<T>(f: impl FnOnce() -> Result<T, CoreError>) -> Result<T, CoreError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Err(CoreError::Backend {
            backend: "engine",
            message: format!("internal error (panic): {what}"),
        })
    })
}
