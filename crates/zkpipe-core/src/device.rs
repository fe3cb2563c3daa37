//! The device seam: what a proof needs from whatever runs its heavy math.
//!
//! ```text
//!  Devices (the CPU, or every visible GPU)
//!     │ bind(device, Arc<CompiledKey>)            once per (key, device): uploads what stays
//!     ▼
//!  BoundKey ── caps()                             reduces? [B]₂? how many proofs per pass?
//!          ── pass(&mut [PassInput])              the device stage of one or several proofs
//!          ── quotient / msm_g1(G1Set) / msm_g2   the verbs a pass is made of
//! ```
//!
//! A bound key owns what it keeps resident (for a GPU, the key's points and matrices) and
//! holds the compiled key itself, so nothing is recognised by address: MSMs name their
//! point set. A device that cannot do something says so in its [`Caps`], and the caller
//! routes (the G2 MSM to the CPU tail, a, b, c to the CPU reduce); nothing falls back
//! silently. The CPU ([`crate::cpu::CpuDevices`]) is the reference and the test oracle.

use crate::curve::Curve;
use crate::error::Error;
pub use crate::key::KeyShape;
use crate::key::{CompiledKey, QueryPoints};
use crate::msm::stream_plan::{KeySet, Residency, StreamPlanError};
use crate::msm::{scalars_into, DeviceSums, ScalarInt};
use crate::reduce::QapEvals;
use crate::timings::{Stage, Timings};
use crate::{Bls12_381, Bn254};
use std::borrow::Cow;
use std::sync::Arc;

/// A G1 point set of a proving key, as MSMs name it ([B]₂'s points are the only G2 set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum G1Set {
    /// zkey section 5: Σ wᵢ·Aᵢ over every signal.
    A,
    /// zkey section 6: Σ wᵢ·B₁ᵢ over every signal.
    B1,
    /// zkey section 8: Σ wᵢ·Cᵢ over the private signals.
    C,
    /// zkey section 9: Σ hⱼ·Hⱼ over the domain.
    H,
}

impl G1Set {
    /// The set's points in `key`.
    pub fn points<E: Curve>(self, key: &CompiledKey<E>) -> &[E::G1Affine] {
        self.of(&key.points)
    }

    /// The set's points among `p`.
    pub fn of<E: Curve>(self, p: &QueryPoints<E>) -> &[E::G1Affine] {
        match self {
            G1Set::A => &p.a,
            G1Set::B1 => &p.b1,
            G1Set::C => &p.c,
            G1Set::H => &p.h,
        }
    }

    /// The stage its MSM is timed as.
    pub fn stage(self) -> Stage {
        match self {
            G1Set::A => Stage::MsmA,
            G1Set::B1 => Stage::MsmB1,
            G1Set::C => Stage::MsmC,
            G1Set::H => Stage::MsmH,
        }
    }
}

/// What a bound key does in its device pass, so the engine and the CLI route the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// The pass computes a = A·w, b = B·w, c = a∘b itself from w, so the reduce stage
    /// only prepares w and hands it empty `evals` ([`Stage::ReduceDevice`]).
    pub reduces: bool,
    /// The pass computes [B]₂; otherwise the tail does, on the CPU.
    pub g2: bool,
    /// The most proofs one [`BoundKey::pass`] takes (1: no batching).
    pub batch_limit: usize,
    /// The pass reads the witness's field elements as they are in memory (Montgomery
    /// form, [`PassWitness::Montgomery`]) and converts them itself, so the reduce stage
    /// makes no MSM scalars of them.
    pub montgomery_w: bool,
}

impl Caps {
    /// Whether the reduce stage turns the witness into MSM scalars for the pass.
    pub fn wants_scalars(&self) -> bool {
        !self.montgomery_w
    }
}

/// How a key is bound: options that differ per key (a daemon's `[keys]` section may set
/// them key by key), handed to [`Devices::bind_bn254`] and to every estimate that depends
/// on them. The default is how a key binds unless asked otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BindOptions {
    /// Whether the key's MSMs do the same work for every witness (`zkpipe prove
    /// --constant-work`, the daemon's `pipeline.constant_work` or a key's own setting).
    ///
    /// Off: zero scalars are skipped (copied out first on the CPU, never sorted into a
    /// bucket on the GPU), and a scalar of 1 costs one addition. Circom witnesses are
    /// mostly 0s and 1s, so this is most of a small proof's MSM time, and a proof's
    /// validity never depends on it. The price is that the time a proof takes says
    /// something about how many of the witness's values are 0, 1 or small. Where an
    /// observer of proving times should learn as little as possible about the witness (a
    /// prover that serves one secret's proofs to others who see the timing), turn it on.
    ///
    /// On, the key is bound with a random mask ([`crate::msm::mask`]): each proof's MSMs
    /// read w + m and h + m′ instead of w and h, and the mask's sums, computed once at
    /// binding, come off the results. Masked scalars look uniformly random whatever the
    /// witness is, so the MSMs' work (entries, bucket occupancy, partial sums) does not
    /// follow the values. On an H100 machine (lab/experiments/023-constant-work-by-masking.md)
    /// the GPU's device stage varied by 1.02–1.10× over six witness distributions (1.7–6.6×
    /// with it off), and the CPU's pass by 1.02–1.06× (7–17×). A proof then costs what a
    /// random-valued witness costs by default; binding a key costs one proof's MSMs more.
    /// The CPU's MSMs also treat every scalar as full-width here (zero scalars kept, every
    /// window run, zero digits added into a discarded bucket), which costs nothing on
    /// masked scalars.
    pub constant_work: bool,
}

/// Which kind of page-locked host memory a device stages uploads through (the witness,
/// and a, b, c where the reduce runs on the host). A device option of the GPU device set
/// (`device.pinned_upload` in a daemon's configuration); the CPU has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PinnedKind {
    /// Cached, visible to every CUDA context (`cudaHostAllocPortable`).
    #[default]
    Portable,
    /// Write-combined as well: it skips the CPU caches, so the CPU's writes stream out and
    /// its reads crawl (`cudaHostAllocPortable | cudaHostAllocWriteCombined`). No faster
    /// for uploads on an H100 machine (lab/experiments/018e-pinned-staging.md).
    WriteCombined,
}

impl std::str::FromStr for PinnedKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "portable" => Ok(Self::Portable),
            "write-combined" => Ok(Self::WriteCombined),
            _ => Err(format!(
                "pinned memory {s:?}: expected portable or write-combined"
            )),
        }
    }
}

/// One device as its [`Devices`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Name for status, metrics and messages ("cpu", "cuda:0 (NVIDIA H100 …)").
    pub name: String,
    /// Device memory in bytes that zkpipe may use, if the device has memory of its own
    /// (a GPU: what it had free when it was opened, its CUDA context and other processes'
    /// memory left out). A device memory limit is never more than this.
    pub memory_total: Option<u64>,
}

/// The witness (the key's nVars values) as a pass reads it.
pub enum PassWitness<'a, E: Curve> {
    /// As MSM scalars (standard-form integers), made by the reduce stage.
    Scalars(&'a [ScalarInt<E>]),
    /// As the field elements are in memory (Montgomery form), for a device that converts
    /// them itself ([`Caps::montgomery_w`]): the host skips a pass over the witness.
    Montgomery(&'a [E::ScalarField]),
}

impl<E: Curve> Clone for PassWitness<'_, E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E: Curve> Copy for PassWitness<'_, E> {}

impl<'a, E: Curve> PassWitness<'a, E> {
    /// The form a device with `caps` reads: the field elements of `witness`, or `w`, the
    /// scalars the reduce stage made of them ([`Caps::wants_scalars`]).
    pub fn for_caps(caps: Caps, witness: &'a [E::ScalarField], w: &'a [ScalarInt<E>]) -> Self {
        if caps.wants_scalars() {
            PassWitness::Scalars(w)
        } else {
            PassWitness::Montgomery(witness)
        }
    }

    /// How many values.
    pub fn len(&self) -> usize {
        match self {
            PassWitness::Scalars(w) => w.len(),
            PassWitness::Montgomery(w) => w.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the values are in Montgomery form.
    pub fn is_montgomery(&self) -> bool {
        matches!(self, PassWitness::Montgomery(_))
    }

    /// As MSM scalars: borrowed, or converted here.
    pub fn scalars(&self) -> Cow<'a, [ScalarInt<E>]> {
        match *self {
            PassWitness::Scalars(w) => Cow::Borrowed(w),
            PassWitness::Montgomery(w) => {
                let mut out = Vec::new();
                scalars_into(w, &mut out);
                Cow::Owned(out)
            }
        }
    }
}

/// One proof's buffers in a device pass.
pub struct PassInput<'a, E: Curve> {
    /// a, b, c over the domain (empty where the device reduces); h in `a` afterwards.
    pub evals: &'a mut QapEvals<E::ScalarField>,
    /// The witness.
    pub w: PassWitness<'a, E>,
    /// Scratch for h as MSM scalars.
    pub h: &'a mut Vec<ScalarInt<E>>,
    /// This proof's timings.
    pub t: &'a mut Timings,
}

/// A compiled key bound to one device: see the module doc.
pub trait BoundKey<E: Curve>: Send + Sync {
    /// Short name of the device kind, for messages ("cpu", "cuda").
    fn name(&self) -> &'static str;

    /// The key it was bound with.
    fn key(&self) -> &Arc<CompiledKey<E>>;

    /// What its pass does.
    fn caps(&self) -> Caps;

    /// Where its points are for its MSMs: all on the device ([`Residency::InCore`], the
    /// default), or streamed there in chunks as a plan cuts them; or why the key cannot
    /// stream under the device's budget (each of its passes then fails with it). For
    /// status, logs and `--timings`.
    fn residency(&self) -> Result<Residency, StreamPlanError> {
        Ok(Residency::InCore)
    }

    /// Host bytes a pinned copy of the points this key streams takes (the hot tier: the
    /// copy is made once, in the device's layout, so each walk's chunks cross from it
    /// directly instead of being packed into staging buffers again); 0 where nothing
    /// streams, so nothing is worth pinning.
    fn pinnable_bytes(&self) -> u64 {
        0
    }

    /// Host bytes this binding holds beside its compiled key and its pinned copy (a
    /// streamed binding's packed matrices and staging buffers, say), which the engine
    /// reserves from its host budget while the binding lives; 0 where it holds none.
    fn host_bytes(&self) -> u64 {
        0
    }

    /// Makes the pinned copy ([`Self::pinnable_bytes`]) if there is none; the caller has
    /// made room for it in its budget. A pass already walking keeps the path it began on.
    fn pin(&self) -> Result<(), Error> {
        Ok(())
    }

    /// Drops the pinned copy; a pass walking from it keeps it until it ends.
    fn unpin(&self) {}

    /// Whether the pinned copy is held.
    fn is_pinned(&self) -> bool {
        false
    }

    /// The quotient: a, b, c on the domain → h = a·b − c on the coset, in `evals.a`.
    fn quotient(&self, evals: &mut QapEvals<E::ScalarField>) -> Result<(), Error>;

    /// Σ scalarsᵢ·pointsᵢ over `set` (as many scalars as the set has points).
    fn msm_g1(&self, set: G1Set, scalars: &[ScalarInt<E>]) -> Result<E::G1, Error>;

    /// Σ scalarsᵢ·B₂ᵢ in G2 (nVars scalars).
    fn msm_g2(&self, scalars: &[ScalarInt<E>]) -> Result<E::G2, Error>;

    /// The device stage of each input, results in input order: the quotient (h into
    /// `evals.a`, then as MSM scalars into `h`), [A]₁, [B]₁, [C]₁, [H]₁ and, where
    /// [`Caps::g2`], [B]₂. At most [`Caps::batch_limit`] inputs, each checked against
    /// the key by the caller ([`crate::stages::device_stage`]).
    ///
    /// The default runs the verbs one after another for each input; a device overrides
    /// it to overlap the MSMs, share one pass among proofs, or keep h where it is made.
    fn pass(&self, inputs: &mut [PassInput<'_, E>]) -> Vec<Result<DeviceSums<E>, Error>> {
        inputs.iter_mut().map(|p| verbs_pass(self, p)).collect()
    }
}

/// One proof's device stage from a bound key's verbs, one after another.
pub fn verbs_pass<E: Curve, B: BoundKey<E> + ?Sized>(
    bound: &B,
    p: &mut PassInput<'_, E>,
) -> Result<DeviceSums<E>, Error> {
    let t = &mut *p.t;
    t.time(Stage::Quotient, || bound.quotient(p.evals))?;
    scalars_into(p.evals.h(), p.h);
    let n_public = bound.key().n_public;
    let w = p.w.scalars();
    let mut g1 =
        |set: G1Set, scalars: &[ScalarInt<E>]| t.time(set.stage(), || bound.msm_g1(set, scalars));
    let a = g1(G1Set::A, &w)?;
    let b1 = g1(G1Set::B1, &w)?;
    let c = g1(G1Set::C, &w[n_public + 1..])?;
    let h = g1(G1Set::H, p.h)?;
    let b2 = if bound.caps().g2 {
        Some(t.time(Stage::MsmB2, || bound.msm_g2(&w))?)
    } else {
        None
    };
    Ok(DeviceSums { a, b1, b2, c, h })
}

/// The devices of one kind on this machine (the CPU, or every visible GPU), and how to
/// bind a key to one of them. The engine asks it for sizes and capabilities before a key
/// is loaded, from the key's header.
pub trait Devices: Send + Sync {
    /// The devices, in index order. At least one.
    fn list(&self) -> Vec<DeviceInfo>;

    /// What a key of this shape bound here with `opts` will do ([`BoundKey::caps`]
    /// reports the same).
    fn caps(&self, shape: &KeyShape, opts: &BindOptions) -> Caps;

    /// The largest [`Caps::batch_limit`] of any key here: each device's queue holds at
    /// least that many partitions less one, so a full batch can gather.
    fn max_batch(&self) -> usize {
        1
    }

    /// How many device passes should run on one device at once.
    fn passes_per_device(&self) -> usize {
        1
    }

    /// Device memory a key's resident copy takes on a device, bound with `opts`.
    fn key_device_bytes(&self, _shape: &KeyShape, _opts: &BindOptions) -> u64 {
        0
    }

    /// Device memory one proof of this key, bound with `opts`, needs while in the device
    /// stage.
    fn partition_device_bytes(&self, _shape: &KeyShape, _opts: &BindOptions) -> u64 {
        0
    }

    /// Host memory the device holds for one proof of this key, bound with `opts`, during
    /// its pass, beyond the caller's own buffers. It takes the options because what the
    /// pass does with them ([`Self::caps`]) decides what crosses through the host: a GPU
    /// that reduces stages w alone, one that does not a, b and c.
    fn partition_host_bytes(&self, _shape: &KeyShape, _opts: &BindOptions) -> u64 {
        0
    }

    /// Binds a BN254 key to device `device` with `opts` (see [`bind`] for generic code).
    fn bind_bn254(
        &self,
        device: usize,
        key: Arc<CompiledKey<Bn254>>,
        opts: &BindOptions,
    ) -> Result<Box<dyn BoundKey<Bn254>>, Error>;

    /// Binds a BLS12-381 key to device `device` with `opts`.
    fn bind_bls12_381(
        &self,
        device: usize,
        key: Arc<CompiledKey<Bls12_381>>,
        opts: &BindOptions,
    ) -> Result<Box<dyn BoundKey<Bls12_381>>, Error>;
}

/// The curves a [`Devices`] binds: picks the bind method of the curve (trait objects
/// cannot have generic methods, so [`Devices`] has one per curve).
pub trait BindCurve: Curve {
    /// `devices.bind_<curve>(device, key, opts)`.
    fn bind_on(
        devices: &dyn Devices,
        device: usize,
        key: Arc<CompiledKey<Self>>,
        opts: &BindOptions,
    ) -> Result<Box<dyn BoundKey<Self>>, Error>;
}

impl BindCurve for Bn254 {
    fn bind_on(
        devices: &dyn Devices,
        device: usize,
        key: Arc<CompiledKey<Self>>,
        opts: &BindOptions,
    ) -> Result<Box<dyn BoundKey<Self>>, Error> {
        devices.bind_bn254(device, key, opts)
    }
}

impl BindCurve for Bls12_381 {
    fn bind_on(
        devices: &dyn Devices,
        device: usize,
        key: Arc<CompiledKey<Self>>,
        opts: &BindOptions,
    ) -> Result<Box<dyn BoundKey<Self>>, Error> {
        devices.bind_bls12_381(device, key, opts)
    }
}

/// Binds `key` to device `device` of `devices` with `opts`, whatever its curve.
pub fn bind<E: BindCurve>(
    devices: &dyn Devices,
    device: usize,
    key: Arc<CompiledKey<E>>,
    opts: &BindOptions,
) -> Result<Box<dyn BoundKey<E>>, Error> {
    E::bind_on(devices, device, key, opts)
}

impl From<G1Set> for KeySet {
    fn from(s: G1Set) -> Self {
        match s {
            G1Set::A => KeySet::A,
            G1Set::B1 => KeySet::B1,
            G1Set::C => KeySet::C,
            G1Set::H => KeySet::H,
        }
    }
}
