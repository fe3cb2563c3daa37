//! The curve, erased once. A key file's header names its curve; from here on the engine
//! holds a compiled key as `Arc<dyn LoadedKey>`, a key bound to a device as
//! `Arc<dyn DeviceKey>` and a partition as a [`PartitionData`], and never matches on the
//! curve again. [`curve`] is the one place a curve id becomes types.

use crate::buffers::BufferPool;
use crate::partition::Part;
use std::any::Any;
use std::sync::Arc;
use zkpipe_core::device::{bind, BindCurve, BindOptions, BoundKey, Caps, Devices};
use zkpipe_core::key_cache::{compile_checked, CheckedKeys};
use zkpipe_core::stages::ReduceOn;
use zkpipe_core::{Bls12_381, Bn254, CompiledKey, Error as CoreError, PointChecks, Witness};
use zkpipe_formats::wtns::Wtns;
use zkpipe_formats::zkey::ZkeyFile;
use zkpipe_formats::CurveId;

/// A partition of some curve: a `Part<E>` for its key's curve.
pub(crate) type PartitionData = Box<dyn Any + Send>;

/// A compiled key, whatever its curve, and the stage work that needs its types.
pub(crate) trait LoadedKey: Send + Sync {
    /// The reduce stage of `part` (on the current rayon pool), making MSM scalars of the
    /// witness if `scalars` ([`zkpipe_core::Caps::wants_scalars`]).
    fn reduce(
        &self,
        part: &mut PartitionData,
        on: ReduceOn,
        scalars: bool,
    ) -> Result<(), CoreError>;

    /// The tail stage of `parts` (of this key), their self-checks together: each one's
    /// (proof.json, public.json), in order.
    fn tail(
        &self,
        parts: &mut [&mut PartitionData],
        self_check: bool,
    ) -> Vec<Result<(String, String), CoreError>>;

    /// This key bound to device `device` of `devices` with `opts` (its resident copy
    /// there).
    fn bind(
        &self,
        devices: &dyn Devices,
        device: usize,
        opts: &BindOptions,
    ) -> Result<Arc<dyn DeviceKey>, CoreError>;
}

/// A key bound to a device, whatever its curve.
pub(crate) trait DeviceKey: Send + Sync {
    /// What its device pass does.
    fn caps(&self) -> Caps;

    /// The device stage of `parts` (reduced partitions of this key) in one pass, results
    /// in order.
    fn pass(&self, parts: &mut [&mut PartitionData]) -> Vec<Result<(), CoreError>>;
}

/// What the engine needs of a curve before it has a key of it.
pub(crate) trait CurveKind: Send + Sync {
    /// Compiles a mapped key of this curve.
    fn compile(
        &self,
        zkey: &ZkeyFile,
        checks: PointChecks,
    ) -> Result<Arc<dyn LoadedKey>, CoreError>;

    /// A partition from a parsed witness (its curve checked by the caller).
    fn partition(&self, wtns: &Wtns, pool: Arc<BufferPool>) -> Result<PartitionData, CoreError>;

    /// Bytes of an affine G1 and an affine G2 point in memory.
    fn point_bytes(&self) -> (usize, usize);
}

/// The engine's view of curve `id`.
pub(crate) fn curve(id: CurveId) -> &'static dyn CurveKind {
    match id {
        CurveId::Bn254 => &Kind::<Bn254>(std::marker::PhantomData),
        CurveId::Bls12_381 => &Kind::<Bls12_381>(std::marker::PhantomData),
    }
}

struct Kind<E>(std::marker::PhantomData<fn() -> E>);

impl<E: BindCurve> CurveKind for Kind<E> {
    fn compile(
        &self,
        zkey: &ZkeyFile,
        checks: PointChecks,
    ) -> Result<Arc<dyn LoadedKey>, CoreError> {
        // Checked once per key file and user (zkpipe_core::key_cache): a restart, or the
        // same key under another id, loads without the point checks.
        let cache = CheckedKeys::user();
        let (key, outcome) = compile_checked::<E>(zkey, checks, cache.as_ref())?;
        // A resident key proves many times: its assembly uses fixed-base tables.
        key.prepare_resident();
        tracing::info!(key = %zkey.path().display(), ?outcome, "key compiled");
        Ok(Arc::new(Loaded(Arc::new(key))))
    }

    fn partition(&self, wtns: &Wtns, pool: Arc<BufferPool>) -> Result<PartitionData, CoreError> {
        Ok(Box::new(Part::<E>::new(Witness::from_wtns(wtns)?, pool)))
    }

    fn point_bytes(&self) -> (usize, usize) {
        (
            std::mem::size_of::<E::G1Affine>(),
            std::mem::size_of::<E::G2Affine>(),
        )
    }
}

struct Loaded<E: BindCurve>(Arc<CompiledKey<E>>);

/// The `Part<E>` inside `part`; an error if it is of another curve (which binding a key
/// and its witnesses to one curve at submit rules out).
fn part_of<E: BindCurve>(part: &mut PartitionData) -> Result<&mut Part<E>, CoreError> {
    part.downcast_mut::<Part<E>>()
        .ok_or_else(|| CoreError::Backend {
            backend: "engine",
            message: "a partition of another curve than its key".into(),
        })
}

/// The `Part<E>`s among `parts` with their indices, and a result per partition: an
/// error for one of another curve, a placeholder `Ok` the caller fills for the others.
#[allow(clippy::type_complexity)]
fn typed_parts<'a, E: BindCurve, T: Default>(
    parts: &'a mut [&mut PartitionData],
) -> (Vec<(usize, &'a mut Part<E>)>, Vec<Result<T, CoreError>>) {
    let mut typed = Vec::with_capacity(parts.len());
    let mut results = Vec::with_capacity(parts.len());
    for (i, p) in parts.iter_mut().enumerate() {
        match part_of::<E>(p) {
            Ok(p) => {
                typed.push((i, p));
                results.push(Ok(T::default()));
            }
            Err(e) => results.push(Err(e)),
        }
    }
    (typed, results)
}

impl<E: BindCurve> LoadedKey for Loaded<E> {
    fn reduce(
        &self,
        part: &mut PartitionData,
        on: ReduceOn,
        scalars: bool,
    ) -> Result<(), CoreError> {
        part_of::<E>(part)?.reduce(&self.0, on, scalars)
    }

    fn tail(
        &self,
        parts: &mut [&mut PartitionData],
        self_check: bool,
    ) -> Vec<Result<(String, String), CoreError>> {
        let (typed, mut results) = typed_parts::<E, _>(parts);
        let (slots, mut typed): (Vec<usize>, Vec<&mut Part<E>>) = typed.into_iter().unzip();
        for (i, r) in slots
            .into_iter()
            .zip(Part::tail_batch(&mut typed, &self.0, self_check))
        {
            results[i] = r;
        }
        results
    }

    fn bind(
        &self,
        devices: &dyn Devices,
        device: usize,
        opts: &BindOptions,
    ) -> Result<Arc<dyn DeviceKey>, CoreError> {
        Ok(Arc::new(Bound(bind(
            devices,
            device,
            Arc::clone(&self.0),
            opts,
        )?)))
    }
}

struct Bound<E: BindCurve>(Box<dyn BoundKey<E>>);

impl<E: BindCurve> DeviceKey for Bound<E> {
    fn caps(&self) -> Caps {
        self.0.caps()
    }

    fn pass(&self, parts: &mut [&mut PartitionData]) -> Vec<Result<(), CoreError>> {
        let (typed, mut results) = typed_parts::<E, _>(parts);
        let (slots, mut typed): (Vec<usize>, Vec<&mut Part<E>>) = typed.into_iter().unzip();
        for (i, r) in slots.into_iter().zip(Part::device(&mut typed, &*self.0)) {
            results[i] = r;
        }
        results
    }
}
