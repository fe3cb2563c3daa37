//! The CPU as a device: arkworks' FFTs for the quotient and [`crate::msm::pippenger`]'s
//! batch-affine MSM, on the current rayon pool. The reference every other device is
//! checked against.
//!
//! With a [`CpuOptions::memory_limit`] it also stands in for a device too small for a
//! key: a key whose points exceed the limit is streamed as a GPU would stream it
//! ([`crate::msm::stream_plan`], run in `stream`), so the chunking and batching are
//! checked against the in-core result.

use crate::curve::Curve;
use crate::device::{BindOptions, BoundKey, Caps, DeviceInfo, Devices, G1Set, KeyShape, PassInput};
use crate::error::Error;
use crate::key::{CompiledKey, QueryPoints};
use crate::msm::mask::CpuMask;
use crate::msm::pippenger::BatchAffineMsm;
use crate::msm::stream_plan::{KeySet, KeySets, Residency, StreamPlan, StreamPlanError};
use crate::msm::{scalars_into, DeviceSums, MsmOptions, ScalarInt};
use crate::quotient::{self, coset::CosetTransform};
use crate::reduce::QapEvals;
use crate::timings::{timed, Stage};
use crate::{Bls12_381, Bn254};
use std::borrow::Cow;
use std::sync::{Arc, Mutex, OnceLock};
use zkpipe_formats::CurveId;

mod stream;

/// How the CPU device computes. The default: IFMA lanes where the CPU has them, no
/// memory limit, streams of [`DEFAULT_STREAM_BATCH`] proofs where one is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuOptions {
    /// The MSMs' pair additions and the quotient's NTTs in AVX-512 IFMA lanes where the CPU
    /// has them; off, the portable arithmetic everywhere (for comparing the two in one
    /// build: the binary's `ZKPIPE_NO_IFMA=1`).
    pub ifma: bool,
    /// A device budget in bytes to emulate (none: every key in-core). A key whose points
    /// and one proof's buffers exceed it streams its points chunk by chunk as
    /// [`crate::msm::stream_plan`] plans them for this budget (sized by
    /// [`cpu_key_sets`]); one whose batch cannot fit even the smallest chunks is refused
    /// at binding ([`StreamPlanError`]). Which path a key took: [`CpuBound::residency`].
    pub memory_limit: Option<u64>,
    /// The most proofs one stream of a streamed key's points serves (its
    /// [`Caps::batch_limit`]), fewer where the budget holds fewer.
    pub stream_batch: usize,
}

/// Proofs per stream by default: the reference system's batch of two.
pub const DEFAULT_STREAM_BATCH: usize = 2;

impl Default for CpuOptions {
    fn default() -> Self {
        Self {
            ifma: true,
            memory_limit: None,
            stream_batch: DEFAULT_STREAM_BATCH,
        }
    }
}

/// A key's point sets as the CPU device sizes them against [`CpuOptions::memory_limit`]:
/// points as arkworks holds them in memory, scalars as standard-form integers, and each
/// proof's five partial sums.
pub fn cpu_key_sets(shape: &KeyShape) -> KeySets {
    fn of<E: Curve>(shape: &KeyShape) -> KeySets {
        use std::mem::size_of;
        let sums = 4 * size_of::<E::G1>() + size_of::<E::G2>();
        KeySets::new(
            shape,
            size_of::<E::G1Affine>(),
            size_of::<E::G2Affine>(),
            size_of::<ScalarInt<E>>(),
            sums as u64,
        )
    }
    match shape.curve {
        CurveId::Bn254 => of::<Bn254>(shape),
        CurveId::Bls12_381 => of::<Bls12_381>(shape),
    }
}

/// The CPU as the only device, "cpu". Its passes leave [B]₂ to the tail (which also runs
/// on the CPU), so a daemon's tail pool, not the device pool, carries the G2 MSM; a key
/// bound with constant-work MSMs makes it in the pass, from the masked witness.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuDevices {
    opts: CpuOptions,
}

impl CpuDevices {
    /// The CPU, computing as `opts` says.
    pub fn new(opts: CpuOptions) -> Self {
        Self { opts }
    }

    /// Which path a key of `shape` takes under [`CpuOptions::memory_limit`] (the
    /// refusal where it cannot stream).
    pub fn residency(&self, shape: &KeyShape) -> Result<Residency, StreamPlanError> {
        residency(shape, self.opts)
    }
}

fn residency(shape: &KeyShape, cpu: CpuOptions) -> Result<Residency, StreamPlanError> {
    Residency::decide(&cpu_key_sets(shape), cpu.memory_limit, cpu.stream_batch)
}

/// The error a pass or bind of a key that cannot stream under the limit answers.
fn refused(e: &StreamPlanError) -> Error {
    Error::Backend {
        backend: "cpu",
        message: e.to_string(),
    }
}

/// What a key bound to the CPU does: no reduce in the pass, no [B]₂ (unless bound with
/// a mask, [`CpuBound::masked`]), one proof a pass.
pub const CPU_CAPS: Caps = Caps {
    reduces: false,
    g2: false,
    batch_limit: 1,
    montgomery_w: false,
};

/// The caps of a key bound to the CPU, with a mask or without. A masked pass makes [B]₂
/// (so no MSM ever reads the unmasked witness) and reads the witness's field elements
/// ([`Caps::montgomery_w`]): it adds the mask to them before making its scalars, so
/// scalars made by the reduce stage would only be turned back into field elements.
fn cpu_caps(masked: bool) -> Caps {
    Caps {
        g2: masked,
        montgomery_w: masked,
        ..CPU_CAPS
    }
}

impl Devices for CpuDevices {
    fn list(&self) -> Vec<DeviceInfo> {
        vec![DeviceInfo {
            name: "cpu".into(),
            memory_total: None,
        }]
    }

    /// [`CPU_CAPS`], or a masked key's where the key's MSMs do constant work (it is then
    /// bound with a mask: [`CpuBound::bind`]); a streamed key's passes take its batch.
    fn caps(&self, shape: &KeyShape, opts: &BindOptions) -> Caps {
        Caps {
            batch_limit: batch_limit(self.residency(shape).as_ref()),
            ..cpu_caps(opts.constant_work)
        }
    }

    /// [`CpuOptions::stream_batch`] where keys may stream, else 1.
    fn max_batch(&self) -> usize {
        match self.opts.memory_limit {
            Some(_) => self.opts.stream_batch.max(1),
            None => 1,
        }
    }

    /// The MSMs' copies of their bases in the adder's form (all five MSMs of a proof may
    /// run at once): none where the adder reads arkworks' points in place. A masked pass
    /// (constant work) also makes the witness's masked scalars itself ([`Caps::montgomery_w`]:
    /// the reduce stage then makes none), 32 bytes a signal.
    fn partition_host_bytes(&self, shape: &KeyShape, opts: &BindOptions) -> u64 {
        fn copies<E: Curve>(ifma: bool) -> (usize, usize) {
            (
                E::G1Affine::msm_copy_bytes(ifma),
                E::G2Affine::msm_copy_bytes(ifma),
            )
        }
        let (g1, g2) = match shape.curve {
            CurveId::Bn254 => copies::<Bn254>(self.opts.ifma),
            CurveId::Bls12_381 => copies::<Bls12_381>(self.opts.ifma),
        };
        let masked_w = if opts.constant_work {
            shape.n_vars * 32
        } else {
            0
        };
        ((3 * shape.n_vars + shape.domain_size) * g1 + shape.n_vars * g2 + masked_w) as u64
    }

    fn bind_bn254(
        &self,
        _device: usize,
        key: Arc<CompiledKey<Bn254>>,
        opts: &BindOptions,
    ) -> Result<Box<dyn BoundKey<Bn254>>, Error> {
        Ok(Box::new(CpuBound::try_bind(key, opts, self.opts)?))
    }

    fn bind_bls12_381(
        &self,
        _device: usize,
        key: Arc<CompiledKey<Bls12_381>>,
        opts: &BindOptions,
    ) -> Result<Box<dyn BoundKey<Bls12_381>>, Error> {
        Ok(Box::new(CpuBound::try_bind(key, opts, self.opts)?))
    }
}

/// A key bound to the CPU: nothing to upload, so it holds the key, the quotient's
/// transform, and a mask where its MSMs do constant work.
#[derive(Clone)]
pub struct CpuBound<E: Curve> {
    key: Arc<CompiledKey<E>>,
    /// The domain's twiddles and shift (7.5 MiB at 2^16 in IFMA lanes, 2^4 times that at
    /// 2^20), made once per binding, in the background from the moment of binding: in a
    /// one-shot proof they are usually ready before the quotient starts.
    coset: Arc<OnceLock<CosetTransform<E::ScalarField>>>,
    mask: Option<Arc<CpuMask<E>>>,
    /// The pass makes [B]₂ alongside the other MSMs ([`CpuBound::with_g2_in_pass`]).
    g2_in_pass: bool,
    cpu: CpuOptions,
    /// In-core or streamed under [`CpuOptions::memory_limit`], or why it cannot stream.
    residency: Result<Residency, StreamPlanError>,
    /// A streamed key's pinned copy ([`BoundKey::pin`]): the CPU has no page-locked
    /// memory, so it stands in with a copy of the points its walks then read, so that the
    /// engine's hot tier (made, read, dropped) runs in CI as it runs on a GPU. Shared by
    /// the binding's clones.
    pinned: Arc<Mutex<Option<Arc<QueryPoints<E>>>>>,
}

/// A key's points as a walk reads them: its pinned copy, held for the walk, or the key's.
struct PointsRef<'a, E: Curve> {
    pinned: Option<Arc<QueryPoints<E>>>,
    key: &'a QueryPoints<E>,
}

impl<E: Curve> std::ops::Deref for PointsRef<'_, E> {
    type Target = QueryPoints<E>;
    fn deref(&self) -> &QueryPoints<E> {
        self.pinned.as_deref().unwrap_or(self.key)
    }
}

/// A pass's batch on a key with this residency: a streamed key's plan's, else one.
fn batch_limit(r: Result<&Residency, &StreamPlanError>) -> usize {
    match r {
        Ok(Residency::Streamed(plan)) => plan.batch(),
        _ => 1,
    }
}

impl<E: Curve> std::fmt::Debug for CpuBound<E> {
    // Not the mask's values: they must not reach a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuBound")
            .field("key", &self.key)
            .field("masked", &self.mask.is_some())
            .field("g2_in_pass", &self.g2_in_pass)
            .field("cpu", &self.cpu)
            .field("residency", &self.residency)
            .finish()
    }
}

impl<E: Curve> CpuBound<E> {
    /// Binds `key` to the CPU, unmasked, with the default [`CpuOptions`].
    pub fn new(key: Arc<CompiledKey<E>>) -> Self {
        Self::bind(key, &BindOptions::default(), CpuOptions::default())
    }

    /// Binds `key` to the CPU with a fresh mask ([`crate::msm::mask`]) and the default
    /// [`CpuOptions`]: its passes make [B]₂ too, and their MSMs do the same work for every
    /// witness. Drawing the mask costs one proof's MSMs.
    pub fn masked(key: Arc<CompiledKey<E>>) -> Self {
        let opts = BindOptions {
            constant_work: true,
        };
        Self::bind(key, &opts, CpuOptions::default())
    }

    /// Makes [B]₂ in the pass too, alongside the quotient and the G1 MSMs, instead of
    /// leaving it to the tail. For a lone proof (the one-shot CLI), where the tail would
    /// run it after the pass on an otherwise idle pool; a daemon keeps it in its tail pool,
    /// so that the device pool is free for the next job sooner.
    pub fn with_g2_in_pass(mut self) -> Self {
        self.g2_in_pass = true;
        self
    }

    /// Binds `key` to the CPU as `opts` asks, computing as `cpu` says: with a fresh mask
    /// ([`Self::masked`]) where the key's MSMs do constant work, else unmasked. A key
    /// that cannot stream under [`CpuOptions::memory_limit`] binds, and each of its
    /// passes and MSMs answers the refusal ([`Self::try_bind`] refuses at once).
    pub fn bind(key: Arc<CompiledKey<E>>, opts: &BindOptions, cpu: CpuOptions) -> Self {
        let residency = residency(&KeyShape::of_key(&key), cpu);
        Self::bind_as(key, opts, cpu, residency)
    }

    /// [`Self::bind`], refusing a key that cannot stream under
    /// [`CpuOptions::memory_limit`] (one line naming the sizes).
    pub fn try_bind(
        key: Arc<CompiledKey<E>>,
        opts: &BindOptions,
        cpu: CpuOptions,
    ) -> Result<Self, Error> {
        let residency = residency(&KeyShape::of_key(&key), cpu);
        if let Err(e) = &residency {
            return Err(refused(e));
        }
        Ok(Self::bind_as(key, opts, cpu, residency))
    }

    fn bind_as(
        key: Arc<CompiledKey<E>>,
        opts: &BindOptions,
        cpu: CpuOptions,
        residency: Result<Residency, StreamPlanError>,
    ) -> Self {
        let coset = coset_in_background(&key, cpu.ifma);
        let msm = MsmOptions {
            constant_work: opts.constant_work,
            ifma: cpu.ifma,
        };
        let mask = opts
            .constant_work
            .then(|| Arc::new(CpuMask::draw(&key, msm)));
        Self {
            key,
            coset,
            mask,
            g2_in_pass: false,
            cpu,
            residency,
            pinned: Arc::default(),
        }
    }

    /// The points its MSMs read: the pinned copy where one is held, else the key's.
    fn points(&self) -> PointsRef<'_, E> {
        let pinned = self
            .pinned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        PointsRef {
            pinned,
            key: &self.key.points,
        }
    }

    /// Which path the key took under [`CpuOptions::memory_limit`]: in-core, or streamed
    /// with its plan (batch, chunks per set); or why it cannot stream. For status and logs
    /// (its `Display` is one line).
    pub fn residency(&self) -> Result<&Residency, &StreamPlanError> {
        self.residency.as_ref()
    }

    /// The key's streaming plan, if it streams.
    fn streaming(&self) -> Result<Option<&StreamPlan>, Error> {
        self.residency
            .as_ref()
            .map(Residency::plan)
            .map_err(refused)
    }

    /// How its MSMs run: full-width where masked.
    fn msm_options(&self) -> MsmOptions {
        MsmOptions {
            constant_work: self.mask.is_some(),
            ifma: self.cpu.ifma,
        }
    }

    /// Runs the CPU quotient with the binding's transform; with one made for this call
    /// while the background build has not finished. Never waits for that build: a rayon
    /// task blocked on it could sit on top of the build's own unfinished work.
    fn run_quotient(&self, evals: &mut QapEvals<E::ScalarField>) {
        match self.coset.get() {
            Some(t) => quotient::quotient_with(t, evals),
            None => quotient::quotient_with(&self.key.domain.transform_with(self.cpu.ifma), evals),
        }
    }
}

/// A cell that a rayon task fills with `key`'s quotient transform (in IFMA lanes where
/// `lanes` allows).
fn coset_in_background<E: Curve>(
    key: &Arc<CompiledKey<E>>,
    lanes: bool,
) -> Arc<OnceLock<CosetTransform<E::ScalarField>>> {
    let cell = Arc::new(OnceLock::new());
    let (c, key) = (Arc::clone(&cell), Arc::clone(key));
    rayon::spawn(move || {
        let _ = c.set(key.domain.transform_with(lanes));
    });
    cell
}

/// Σ scalarsᵢ·basesᵢ in G1 on the CPU (lengths must match), with the default
/// [`MsmOptions`].
pub fn msm_g1<E: Curve>(bases: &[E::G1Affine], scalars: &[ScalarInt<E>]) -> Result<E::G1, Error> {
    msm_g1_with::<E>(bases, scalars, MsmOptions::default())
}

/// Σ scalarsᵢ·basesᵢ in G2 on the CPU (lengths must match), with the default
/// [`MsmOptions`].
pub fn msm_g2<E: Curve>(bases: &[E::G2Affine], scalars: &[ScalarInt<E>]) -> Result<E::G2, Error> {
    msm_g2_with::<E>(bases, scalars, MsmOptions::default())
}

/// [`msm_g1`] as `opts` says. A bandwidth burst for the current thread's throttle.
pub fn msm_g1_with<E: Curve>(
    bases: &[E::G1Affine],
    scalars: &[ScalarInt<E>],
    opts: MsmOptions,
) -> Result<E::G1, Error> {
    let _burst = crate::throttle::burst();
    check_lengths(bases.len(), scalars.len())?;
    Ok(E::G1Affine::msm_batch_affine(bases, scalars, opts))
}

/// [`msm_g2`] as `opts` says. A bandwidth burst for the current thread's throttle.
pub fn msm_g2_with<E: Curve>(
    bases: &[E::G2Affine],
    scalars: &[ScalarInt<E>],
    opts: MsmOptions,
) -> Result<E::G2, Error> {
    let _burst = crate::throttle::burst();
    check_lengths(bases.len(), scalars.len())?;
    Ok(E::G2Affine::msm_batch_affine(bases, scalars, opts))
}

fn check_lengths(bases: usize, scalars: usize) -> Result<(), Error> {
    if bases != scalars {
        return Err(Error::Backend {
            backend: "cpu",
            message: format!("MSM with {bases} bases and {scalars} scalars"),
        });
    }
    Ok(())
}

impl<E: Curve> BoundKey<E> for CpuBound<E> {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn residency(&self) -> Result<Residency, StreamPlanError> {
        self.residency.clone()
    }

    fn key(&self) -> &Arc<CompiledKey<E>> {
        &self.key
    }

    fn caps(&self) -> Caps {
        Caps {
            g2: self.mask.is_some() || self.g2_in_pass,
            batch_limit: batch_limit(self.residency()),
            ..cpu_caps(self.mask.is_some())
        }
    }

    fn quotient(&self, evals: &mut QapEvals<E::ScalarField>) -> Result<(), Error> {
        self.run_quotient(evals);
        Ok(())
    }

    /// The points of every set, where the key streams.
    fn pinnable_bytes(&self) -> u64 {
        match &self.residency {
            Ok(Residency::Streamed(_)) => self.key.points.host_bytes(true),
            _ => 0,
        }
    }

    fn pin(&self) -> Result<(), Error> {
        if self.pinnable_bytes() == 0 {
            return Ok(());
        }
        let mut pinned = self.pinned.lock().unwrap_or_else(|e| e.into_inner());
        if pinned.is_none() {
            *pinned = Some(Arc::new(self.key.points.clone()));
        }
        Ok(())
    }

    fn unpin(&self) {
        self.pinned.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    fn is_pinned(&self) -> bool {
        self.pinned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    fn msm_g1(&self, set: G1Set, scalars: &[ScalarInt<E>]) -> Result<E::G1, Error> {
        let (points, opts) = (self.points(), self.msm_options());
        let points = set.of(&points);
        match self.streaming()? {
            None => msm_g1_with::<E>(points, scalars, opts),
            Some(plan) => stream::one(points, &plan.chunks(set.into()), scalars, opts),
        }
    }

    fn msm_g2(&self, scalars: &[ScalarInt<E>]) -> Result<E::G2, Error> {
        let (points, opts) = (self.points(), self.msm_options());
        match self.streaming()? {
            None => msm_g2_with::<E>(&points.b2, scalars, opts),
            Some(plan) => stream::one(&points.b2, &plan.chunks(KeySet::B2), scalars, opts),
        }
    }

    /// Each proof's quotient and G1 MSMs as one rayon task tree, so no thread idles at
    /// the serial ends of one MSM (planning, the last uneven windows, combining windows):
    /// (quotient → [H]₁) alongside [A]₁, [B]₁, [C]₁. Each stage still records its own
    /// span; the spans overlap, and [`crate::Timings::wall`] counts the overlap once.
    /// A streamed key's batch shares one walk over each set's chunks instead (`stream`).
    fn pass(&self, inputs: &mut [PassInput<'_, E>]) -> Vec<Result<DeviceSums<E>, Error>> {
        match &self.residency {
            Ok(Residency::InCore) => inputs.iter_mut().map(|p| self.pass_one(p)).collect(),
            Ok(Residency::Streamed(plan)) => stream::pass(self, plan, inputs),
            Err(e) => inputs.iter().map(|_| Err(refused(e))).collect(),
        }
    }
}

impl<E: Curve> CpuBound<E> {
    /// With a mask, every MSM reads masked scalars, [B]₂ is made here too, and the
    /// mask's sums come off at the end.
    fn pass_one(&self, p: &mut PassInput<'_, E>) -> Result<DeviceSums<E>, Error> {
        let key = &*self.key;
        let mask = self.mask.as_deref();
        let w = match mask {
            Some(m) => Cow::Owned(m.mask_w(p.w)?),
            None => p.w.scalars(),
        };
        let (w, private) = (&*w, &w[key.n_public + 1..]);
        let opts = self.msm_options();
        let g1 = |set: G1Set, scalars: &[ScalarInt<E>]| {
            timed(set.stage(), || {
                msm_g1_with::<E>(set.points(key), scalars, opts)
            })
        };
        let (evals, h) = (&mut *p.evals, &mut *p.h);
        let ((quotient, msm_h), ((msm_a, msm_b2), (msm_b1, msm_c))) = rayon::join(
            || {
                let q = timed(Stage::Quotient, || self.run_quotient(evals));
                match mask {
                    Some(m) => m.mask_h_into(evals.h(), h),
                    None => scalars_into(evals.h(), h),
                }
                (q, g1(G1Set::H, h))
            },
            || {
                rayon::join(
                    || {
                        rayon::join(
                            || g1(G1Set::A, w),
                            || {
                                (mask.is_some() || self.g2_in_pass).then(|| {
                                    timed(Stage::MsmB2, || {
                                        msm_g2_with::<E>(&key.points.b2, w, opts)
                                    })
                                })
                            },
                        )
                    },
                    || rayon::join(|| g1(G1Set::B1, w), || g1(G1Set::C, private)),
                )
            },
        );
        p.t.spans.push(quotient.1);
        let mut spans = vec![msm_a.1, msm_b1.1, msm_c.1, msm_h.1];
        let b2 = match msm_b2 {
            Some((r, span)) => {
                spans.push(span);
                Some(r?)
            }
            None => None,
        };
        spans.sort_by_key(|s| s.end);
        p.t.spans.extend(spans);
        let mut sums = DeviceSums {
            a: msm_a.0?,
            b1: msm_b1.0?,
            b2,
            c: msm_c.0?,
            h: msm_h.0?,
        };
        if let Some(m) = mask {
            sums.take_off(m.sums());
        }
        Ok(sums)
    }
}
