//! The curve, erased once. A key file's header names its curve; from here on the engine
//! holds a compiled key as `Arc<dyn LoadedKey>`, a key bound to a device as
//! `Arc<dyn DeviceKey>` and a partition as a [`Partition`] (an enum over the curves, at
//! the step its type names), and never matches on the curve again. [`curve`] is the one
//! place a curve id becomes types; [`EngineCurve`] the one place a partition's variant
//! becomes its curve's type, for the key of that curve.

use crate::buffers::BufferPool;
use crate::partition::{PartBuffers, ProvedPart, ReducedPart, WitnessPart};
use std::sync::Arc;
use zkpipe_core::device::{bind, BindCurve, BindOptions, BoundKey, Caps, Devices};
use zkpipe_core::key_cache::{compile_checked, CheckedKeys};
use zkpipe_core::stages::ReduceOn;
use zkpipe_core::{Bls12_381, Bn254, CompiledKey, Error as CoreError, PointChecks, Witness};
use zkpipe_formats::packed_wtns::PackedView;
use zkpipe_formats::wtns::WtnsView;
use zkpipe_formats::zkey::ZkeyFile;
use zkpipe_formats::CurveId;

/// A step of a partition's way through the pipeline: the type of a partition of curve
/// `E` that is ready for it.
pub(crate) trait Step {
    /// A partition of curve `E` at this step.
    type Part<E: EngineCurve>: Send;
}

/// Ready for reduce: a partition with its witness.
pub(crate) enum AtReduce {}

/// Ready for the device pass: a reduced partition.
pub(crate) enum AtDevice {}

/// Ready for the tail: a partition through its device pass.
pub(crate) enum AtTail {}

impl Step for AtReduce {
    type Part<E: EngineCurve> = WitnessPart<E>;
}

impl Step for AtDevice {
    type Part<E: EngineCurve> = ReducedPart<E>;
}

impl Step for AtTail {
    type Part<E: EngineCurve> = ProvedPart<E>;
}

/// A partition of one of the curves, at step `S`.
pub(crate) enum Partition<S: Step> {
    Bn254(S::Part<Bn254>),
    Bls12_381(S::Part<Bls12_381>),
}

/// The partition buffers of every curve, sharing one pool.
pub(crate) struct PartitionBuffers {
    bn254: Arc<PartBuffers<Bn254>>,
    bls12_381: Arc<PartBuffers<Bls12_381>>,
}

impl PartitionBuffers {
    /// Lists of `pool` for partitions of each curve.
    pub fn new(pool: &Arc<BufferPool>) -> Self {
        Self {
            bn254: Arc::new(PartBuffers::new(pool)),
            bls12_381: Arc::new(PartBuffers::new(pool)),
        }
    }
}

/// A curve the engine proves on: its variant of [`Partition`] and its buffers.
pub(crate) trait EngineCurve: BindCurve {
    /// `p` as a partition of some curve.
    fn wrap<S: Step>(p: S::Part<Self>) -> Partition<S>;

    /// `p` if it is of this curve.
    fn of<S: Step>(p: Partition<S>) -> Option<S::Part<Self>>;

    /// `p` if it is of this curve.
    fn of_ref<S: Step>(p: &Partition<S>) -> Option<&S::Part<Self>>;

    /// This curve's partition buffers.
    fn buffers(b: &PartitionBuffers) -> &Arc<PartBuffers<Self>>;
}

macro_rules! engine_curve {
    ($curve:ident, $field:ident) => {
        impl EngineCurve for $curve {
            fn wrap<S: Step>(p: S::Part<Self>) -> Partition<S> {
                Partition::$curve(p)
            }

            fn of<S: Step>(p: Partition<S>) -> Option<S::Part<Self>> {
                match p {
                    Partition::$curve(p) => Some(p),
                    _ => None,
                }
            }

            fn of_ref<S: Step>(p: &Partition<S>) -> Option<&S::Part<Self>> {
                match p {
                    Partition::$curve(p) => Some(p),
                    _ => None,
                }
            }

            fn buffers(b: &PartitionBuffers) -> &Arc<PartBuffers<Self>> {
                &b.$field
            }
        }
    };
}
engine_curve!(Bn254, bn254);
engine_curve!(Bls12_381, bls12_381);

/// A compiled key, whatever its curve, and the stage work that needs its types.
pub(crate) trait LoadedKey: Send + Sync {
    /// The reduce stage of `part` (on the current rayon pool), making MSM scalars of the
    /// witness if `scalars` ([`zkpipe_core::Caps::wants_scalars`]).
    fn reduce(
        &self,
        part: Partition<AtReduce>,
        on: ReduceOn,
        scalars: bool,
    ) -> Result<Partition<AtDevice>, CoreError>;

    /// The tail stage of `parts` (of this key), their self-checks together: each one's
    /// (proof.json, public.json), in order.
    fn tail(
        &self,
        parts: &[&Partition<AtTail>],
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

    /// In-core or streamed, as a line for logs (`BoundKey::residency`).
    fn residency(&self) -> String;

    /// Whether all its points are on the device (the resident tier).
    fn in_core(&self) -> bool;

    /// Host bytes its pinned copy takes (`BoundKey::pinnable_bytes`; 0: nothing to pin).
    fn pinnable_bytes(&self) -> u64;

    /// Host bytes it holds beside its compiled key and its pinned copy
    /// (`BoundKey::host_bytes`).
    fn host_bytes(&self) -> u64;

    /// Makes its pinned copy (`BoundKey::pin`).
    fn pin(&self) -> Result<(), CoreError>;

    /// Drops its pinned copy.
    fn unpin(&self);

    /// The device stage of `parts` (reduced partitions of this key) in one pass, results
    /// in order.
    fn pass(&self, parts: Vec<Partition<AtDevice>>) -> Vec<Result<Partition<AtTail>, CoreError>>;
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
    fn partition(
        &self,
        wtns: WtnsView<'_>,
        buffers: &PartitionBuffers,
    ) -> Result<Partition<AtReduce>, CoreError>;

    /// A partition of a witness packed on the wire, converted without unpacking it.
    fn packed_partition(
        &self,
        wtns: &PackedView<'_>,
        buffers: &PartitionBuffers,
    ) -> Result<Partition<AtReduce>, CoreError>;

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

impl<E: EngineCurve> CurveKind for Kind<E> {
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

    fn partition(
        &self,
        wtns: WtnsView<'_>,
        buffers: &PartitionBuffers,
    ) -> Result<Partition<AtReduce>, CoreError> {
        let witness = Witness::from_view(wtns)?;
        let buffers = Arc::clone(E::buffers(buffers));
        Ok(E::wrap::<AtReduce>(WitnessPart::new(witness, buffers)))
    }

    fn packed_partition(
        &self,
        wtns: &PackedView<'_>,
        buffers: &PartitionBuffers,
    ) -> Result<Partition<AtReduce>, CoreError> {
        let witness = Witness::from_packed(wtns)?;
        let buffers = Arc::clone(E::buffers(buffers));
        Ok(E::wrap::<AtReduce>(WitnessPart::new(witness, buffers)))
    }

    fn point_bytes(&self) -> (usize, usize) {
        (
            std::mem::size_of::<E::G1Affine>(),
            std::mem::size_of::<E::G2Affine>(),
        )
    }
}

struct Loaded<E: BindCurve>(Arc<CompiledKey<E>>);

/// The error for a partition of another curve than its key (which binding a key and its
/// witnesses to one curve at submit rules out).
fn other_curve() -> CoreError {
    CoreError::Backend {
        backend: "engine",
        message: "a partition of another curve than its key".into(),
    }
}

/// `run` on the partitions among `parts` that `pick` finds of the key's curve, a result
/// per partition in order; one of another curve gets an error.
fn per_partition<P, Q, T>(
    parts: impl IntoIterator<Item = P>,
    pick: impl Fn(P) -> Option<Q>,
    run: impl FnOnce(Vec<Q>) -> Vec<Result<T, CoreError>>,
) -> Vec<Result<T, CoreError>> {
    let mut typed = Vec::new();
    let ours: Vec<bool> = parts
        .into_iter()
        .map(|p| match pick(p) {
            Some(q) => {
                typed.push(q);
                true
            }
            None => false,
        })
        .collect();
    let mut results = run(typed).into_iter();
    ours.into_iter()
        .map(|ours| match ours {
            true => results.next().unwrap_or_else(|| {
                Err(CoreError::Backend {
                    backend: "engine",
                    message: "a stage returned fewer results than partitions".into(),
                })
            }),
            false => Err(other_curve()),
        })
        .collect()
}

impl<E: EngineCurve> LoadedKey for Loaded<E> {
    fn reduce(
        &self,
        part: Partition<AtReduce>,
        on: ReduceOn,
        scalars: bool,
    ) -> Result<Partition<AtDevice>, CoreError> {
        let part = E::of(part).ok_or_else(other_curve)?;
        Ok(E::wrap::<AtDevice>(part.reduce(&self.0, on, scalars)?))
    }

    fn tail(
        &self,
        parts: &[&Partition<AtTail>],
        self_check: bool,
    ) -> Vec<Result<(String, String), CoreError>> {
        per_partition(
            parts.iter().copied(),
            E::of_ref::<AtTail>,
            |typed: Vec<&ProvedPart<E>>| ProvedPart::tail_batch(&typed, &self.0, self_check),
        )
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

impl<E: EngineCurve> DeviceKey for Bound<E> {
    fn caps(&self) -> Caps {
        self.0.caps()
    }

    fn residency(&self) -> String {
        let r = self.0.residency();
        r.map_or_else(|e| e.to_string(), |r| r.to_string())
    }

    fn in_core(&self) -> bool {
        matches!(self.0.residency(), Ok(zkpipe_core::Residency::InCore))
    }

    fn pinnable_bytes(&self) -> u64 {
        self.0.pinnable_bytes()
    }

    fn host_bytes(&self) -> u64 {
        self.0.host_bytes()
    }

    fn pin(&self) -> Result<(), CoreError> {
        self.0.pin()
    }

    fn unpin(&self) {
        self.0.unpin()
    }

    fn pass(&self, parts: Vec<Partition<AtDevice>>) -> Vec<Result<Partition<AtTail>, CoreError>> {
        per_partition(parts, E::of::<AtDevice>, |typed| {
            ReducedPart::device(typed, &*self.0)
                .into_iter()
                .map(|r| r.map(E::wrap::<AtTail>))
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch with a partition of another curve than its key: that one fails, the
    /// others get their own results, in order.
    #[test]
    fn a_partition_of_another_curve_fails_alone_in_its_batch() {
        let results = per_partition(
            [1, -2, 3, -4],
            |x: i32| (x > 0).then_some(x),
            |ours| ours.into_iter().map(|x| Ok(x * 10)).collect(),
        );
        let shown: Vec<Result<i32, String>> = results
            .into_iter()
            .map(|r| r.map_err(|e| e.to_string()))
            .collect();
        let other = other_curve().to_string();
        assert_eq!(
            shown,
            [Ok(10), Err(other.clone()), Ok(30), Err(other)],
            "each result in its partition's place"
        );
    }
}
