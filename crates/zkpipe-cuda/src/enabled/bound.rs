//! [`CudaBound`]: a compiled key bound to one GPU, zkpipe-core's `BoundKey` there. It owns
//! the key (an `Arc`) and what it keeps resident: the five point sets (or, for a key
//! larger than the device budget, the plan that streams them: `crate::enabled::streamed`),
//! the A and B matrices where the GPU reduces, and the pool of idle pass buffers. Its
//! verbs run on the GPU or fail, never on the CPU; its pass is in `crate::enabled::pass`.

use crate::enabled::buffers::{PassShape, Pool};
use crate::enabled::curve::{GpuCurve, G1, G2};
use crate::enabled::mask::DeviceMask;
use crate::enabled::memory::PinnedBuf;
use crate::enabled::msm::{ResidentG1, ResidentG2};
use crate::enabled::reduce::GpuMatrices;
use crate::enabled::runtime::device_info;
use crate::enabled::streamed::{Pack, Packer, Streamed};
use crate::enabled::streamed_reduce::StreamedMatrices;
use crate::shape::{
    binds_tables, caps, constant_work, device_bytes_for_shape, lone_on_batch, residency, Tuning,
};
use crate::{CudaError, CudaOptions, GpuInfo};
use std::sync::Arc;
use zkpipe_core::msm::stream_plan::KeySet;
use zkpipe_core::msm::{DeviceSums, ScalarInt};
use zkpipe_core::reduce::QapEvals;
use zkpipe_core::{
    BindOptions, BoundKey, Caps, CompiledKey, Curve, Error, G1Set, KeyShape, PassInput,
    PassWitness, Residency, StreamPlanError,
};

/// One key's points resident on one GPU, and per proof in flight its quotient buffers,
/// a pinned staging buffer and its witness on the device: the quotient stage and all five
/// MSMs of a proof with that key run on the GPU. Several proofs may run at once (each
/// point set runs one MSM at a time).
///
/// A proof's device pass ([`BoundKey::pass`]) uploads the witness scalars once: the key's
/// A and B matrices, resident too, turn them into a, b, c there
/// ([`zkpipe_core::Stage::ReduceDevice`], where [`Caps::reduces`]), and the A, B₁, B₂ and
/// C MSMs read them; h stays on the GPU for the H MSM.
pub struct CudaBound<E: Curve + GpuCurve> {
    pub(super) key: Arc<CompiledKey<E>>,
    pub(super) points: KeyPoints<E>,
    /// A and B, where a, b, c are computed on the GPU and the key is in-core (a streamed
    /// key's cross in chunks: `Streamed::matrices`).
    pub(super) matrices: Option<GpuMatrices<E>>,
    /// Idle buffer sets, one per proof in flight at once (made on demand).
    pub(super) pool: Pool<E>,
    pub(super) caps: Caps,
    pub(super) gpu: usize,
    /// Where the key's MSMs do constant work: the mask every proof's MSM inputs get.
    pub(super) mask: Option<DeviceMask<E>>,
    /// The device set's lab switches and the key's options.
    pub(super) tuning: Tuning,
    /// The device set's options.
    pub(super) cuda: CudaOptions,
    info: GpuInfo,
}

/// Where a bound key's points are for its MSMs.
pub(super) enum KeyPoints<E: Curve + GpuCurve> {
    /// All five sets on the GPU.
    Resident(ResidentSets<E>),
    /// In host memory (the compiled key's), streamed through the GPU chunk by chunk.
    Streamed(Streamed),
}

/// The five point sets of a key resident on a GPU.
pub(super) struct ResidentSets<E: Curve + GpuCurve> {
    pub(super) a: ResidentG1<E>,
    pub(super) b1: ResidentG1<E>,
    /// Padded past the public inputs, so [C]₁ batches share w's plan.
    pub(super) c: ResidentG1<E>,
    pub(super) h: ResidentG1<E>,
    pub(super) b2: ResidentG2<E>,
}

impl<E: Curve + GpuCurve> ResidentSets<E> {
    /// The set `set` names.
    pub(super) fn g1(&self, set: G1Set) -> &ResidentG1<E> {
        match set {
            G1Set::A => &self.a,
            G1Set::B1 => &self.b1,
            G1Set::C => &self.c,
            G1Set::H => &self.h,
        }
    }
}

impl<E: Curve + GpuCurve> CudaBound<E> {
    /// Binds `key` to GPU `gpu` under the device budget of `cuda` (its `memory_limit`,
    /// else the GPU's total memory, never more than it has free now:
    /// [`GpuInfo::budget`]): [`Self::with_budget`].
    pub fn new(
        key: Arc<CompiledKey<E>>,
        gpu: usize,
        cuda: &CudaOptions,
        bind: &BindOptions,
    ) -> Result<Self, CudaError> {
        let budget = device_info(gpu)?.budget(cuda.memory_limit);
        Self::with_budget(key, gpu, cuda, bind, budget)
    }

    /// Binds `key` to GPU `gpu` as the device set's `cuda` options and the key's `bind`
    /// options say, under `budget` device bytes. A key whose resident copy and one proof
    /// fit the budget uploads its points (and, where the GPU reduces, its A and B
    /// matrices) and allocates the buffers a proof needs; a larger one keeps its points
    /// in host memory and streams them ([`Residency::Streamed`]), or is refused
    /// ([`CudaError::CannotStream`]). Either way what it places on the GPU must fit the
    /// device's free memory ([`CudaError::OutOfMemory`]).
    pub fn with_budget(
        key: Arc<CompiledKey<E>>,
        gpu: usize,
        cuda: &CudaOptions,
        bind: &BindOptions,
        budget: u64,
    ) -> Result<Self, CudaError> {
        let info = device_info(gpu)?;
        let shape = KeyShape::of_key(&key);
        let tuning = Tuning::new(cuda, bind);
        // Resident keys whose proofs run on the batched kernels get window tables: their
        // MSMs then add fewer points. The tables cost memory (counted in `needed`) and
        // build time at binding (~0.5 s at 2^20), which a one-shot proof would not win back.
        let tables = binds_tables(&tuning, key.is_resident(), key.domain_size());
        let residency = residency(&tuning, &shape, tables, budget, cuda.stream_batch())?;
        let needed = match residency.plan() {
            None => device_bytes_for_shape(&tuning, &shape, tables),
            Some(plan) => plan.device_bytes(),
        } as usize;
        if needed > info.free_bytes {
            return Err(CudaError::OutOfMemory {
                what: format!(
                    "a key of {} variables and domain {} ({residency})",
                    key.n_vars,
                    key.domain_size()
                ),
                needed_mib: needed >> 20,
                free_mib: info.free_bytes >> 20,
                total_mib: info.total_bytes >> 20,
            });
        }
        let caps = caps(&tuning.lab, &shape, &residency);
        let p = &key.points;
        let pass_shape = PassShape {
            lg_n: key.domain_size().trailing_zeros(),
            omega: key.domain.domain.group_gen,
            shift: key.domain.coset.offset,
            n_vars: key.n_vars,
            gpu,
            staging: cuda.upload_staging,
            launch: tuning.lab.quotient_launch,
        };
        let points = match residency {
            Residency::InCore => KeyPoints::Resident(ResidentSets {
                a: ResidentG1::upload_tabled(&p.a, 0, tables, gpu)?,
                b1: ResidentG1::upload_tabled(&p.b1, 0, tables, gpu)?,
                c: ResidentG1::upload_tabled(&p.c, key.n_public + 1, tables, gpu)?,
                h: ResidentG1::upload_tabled(&p.h, 0, tables, gpu)?,
                b2: ResidentG2::upload_tabled(&p.b2, 0, tables, gpu)?,
            }),
            Residency::Streamed(plan) => {
                // Where the GPU reduces, the matrices cross in chunks of rows as large as
                // the plan's chunks beside the proofs, their values narrow.
                let matrices = match caps.reduces {
                    true => Some(StreamedMatrices::cut(
                        &key.a,
                        &key.b,
                        plan.chunk_bytes(),
                        tuning.lab.wide_matrices,
                    )?),
                    false => None,
                };
                KeyPoints::Streamed(Streamed::new(plan, matrices, cuda.upload_staging))
            }
        };
        // In-core, A and B stay on the GPU where it reduces.
        let matrices = match (&points, caps.reduces) {
            (KeyPoints::Resident(_), true) => Some(GpuMatrices::upload(&key.a, &key.b, gpu)?),
            _ => None,
        };
        let mut bound = Self {
            points,
            matrices,
            pool: Pool::new(pass_shape)?,
            caps,
            gpu,
            mask: None,
            tuning,
            cuda: *cuda,
            info,
            key,
        };
        if constant_work(&tuning).is_some_and(|c| c.mask) {
            let (n_vars, domain) = (bound.key.n_vars, bound.pool.domain_size());
            let mask = DeviceMask::draw(gpu, n_vars, domain, |w, h| {
                // An idle buffer set's quotient, for a streamed walk's chunks.
                let bufs = bound.pool.lend()?;
                bound
                    .batch_msms(&[w], &[h], None, true, bufs.quotient.idle_room())?
                    .pop()
                    .ok_or_else(|| CudaError::Length("the mask's MSMs returned nothing".into()))
            })?;
            bound.mask = Some(mask);
        }
        Ok(bound)
    }

    /// The GPU's index.
    pub fn gpu(&self) -> usize {
        self.gpu
    }

    /// The GPU (free memory as of the binding).
    pub fn info(&self) -> &GpuInfo {
        &self.info
    }

    /// In-core, or streamed with its plan.
    pub fn residency(&self) -> Residency {
        match &self.points {
            KeyPoints::Resident(_) => Residency::InCore,
            KeyPoints::Streamed(s) => Residency::Streamed(s.plan.clone()),
        }
    }

    /// `scalars` through a lent staging buffer (pinned) into `run`, with their count.
    fn staged_msm<T>(
        &self,
        scalars: &[ScalarInt<E>],
        run: impl FnOnce(*const [u64; 4], usize) -> Result<T, CudaError>,
    ) -> Result<T, CudaError> {
        let mut bufs = self.pool.lend()?;
        let ptr = bufs.staging.stage(0, scalars) as *const [u64; 4];
        run(ptr, scalars.len())
    }

    /// The quotient verb: a, b, c staged, h back into `evals.a`.
    fn quotient_here(&self, evals: &mut QapEvals<E::ScalarField>) -> Result<(), CudaError> {
        let n = self.pool.domain_size();
        if [&evals.a, &evals.b, &evals.c].iter().any(|v| v.len() != n) {
            return Err(CudaError::Length(format!(
                "quotient of {} rows on a key of domain {n}",
                evals.a.len()
            )));
        }
        let mut bufs = self.pool.lend()?;
        bufs.run_quotient(evals, true)?;
        bufs.staging.unstage(0, &mut evals.a);
        Ok(())
    }

    /// A pass's inputs fit the key: a, b, c span the domain (or are left to the GPU where
    /// it reduces), and w has the key's nVars scalars.
    pub(super) fn check_pass(
        &self,
        evals: &QapEvals<E::ScalarField>,
        w: PassWitness<'_, E>,
    ) -> Result<(), CudaError> {
        let n = self.pool.domain_size();
        let rows = if self.caps.reduces && evals.a.is_empty() {
            0
        } else {
            n
        };
        let lengths_ok = [&evals.a, &evals.b, &evals.c]
            .iter()
            .all(|v| v.len() == rows)
            && w.len() == self.key.n_vars;
        if !lengths_ok {
            return Err(CudaError::Length(format!(
                "a proof of {} rows and {} scalars on a key of domain {n} and {} signals",
                evals.a.len(),
                w.len(),
                self.key.n_vars
            )));
        }
        Ok(())
    }
}

/// `scalars` must number `points`, the size of the set named by `what`.
fn check_count(
    points: usize,
    scalars: usize,
    what: impl FnOnce() -> String,
) -> Result<(), CudaError> {
    if scalars != points {
        return Err(CudaError::Length(format!(
            "MSM of {scalars} scalars over the {points} points of {}",
            what()
        )));
    }
    Ok(())
}

impl<E: Curve + GpuCurve> BoundKey<E> for CudaBound<E> {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn key(&self) -> &Arc<CompiledKey<E>> {
        &self.key
    }

    fn caps(&self) -> Caps {
        self.caps
    }

    fn quotient(&self, evals: &mut QapEvals<E::ScalarField>) -> Result<(), Error> {
        self.quotient_here(evals).map_err(|e| e.on_gpu(self.gpu))
    }

    fn residency(&self) -> Result<Residency, StreamPlanError> {
        Ok(CudaBound::residency(self))
    }

    /// The streamed sets packed as the device holds them ([B]₂'s where the pass makes
    /// it), and the matrices' row chunks where the GPU reduces.
    fn pinnable_bytes(&self) -> u64 {
        match &self.points {
            KeyPoints::Resident(_) => 0,
            KeyPoints::Streamed(s) => {
                let p = &self.key.points;
                let g1 = p.a.len() + p.b1.len() + p.c.len() + p.h.len();
                let g2 = if self.caps.g2 { p.b2.len() } else { 0 };
                let matrices = s.matrices.as_ref().map_or(0, |m| m.packed_bytes());
                (g1 * ResidentG1::<E>::device_point_bytes()
                    + g2 * ResidentG2::<E>::device_point_bytes()
                    + matrices) as u64
            }
        }
    }

    fn host_bytes(&self) -> u64 {
        match &self.points {
            KeyPoints::Resident(_) => 0,
            KeyPoints::Streamed(s) => s.host_bytes(),
        }
    }

    fn pin(&self) -> Result<(), Error> {
        let KeyPoints::Streamed(s) = &self.points else {
            return Ok(());
        };
        let p = &self.key.points;
        // Points fill the whole new buffer, ours alone.
        fn whole(buf: &mut PinnedBuf) -> &mut [u8] {
            let len = buf.len();
            // SAFETY: the buffer's `len` bytes, borrowed mutably for the slice's life.
            unsafe { std::slice::from_raw_parts_mut(buf.ptr_at(0), len) }
        }
        fn g1<'a, E: Curve + GpuCurve>(points: &'a [E::G1Affine]) -> Pack<'a> {
            let bytes = points.len() * ResidentG1::<E>::device_point_bytes();
            let pack: Packer<'a> = Box::new(move |d| {
                ResidentG1::<E>::pack(points, whole(d));
                Ok(())
            });
            Some((bytes, pack))
        }
        let b2: Pack<'_> = self.caps.g2.then(|| {
            let bytes = p.b2.len() * ResidentG2::<E>::device_point_bytes();
            let pack: Packer<'_> = Box::new(|d| {
                ResidentG2::<E>::pack(&p.b2, whole(d));
                Ok(())
            });
            (bytes, pack)
        });
        let key = &self.key;
        let matrices: Pack<'_> = s.matrices.as_ref().map(|m| {
            let pack: Packer<'_> = Box::new(move |d| m.pack_all(&key.a, &key.b, d));
            (m.packed_bytes(), pack)
        });
        let sets = [
            (KeySet::A, g1::<E>(&p.a)),
            (KeySet::B1, g1::<E>(&p.b1)),
            (KeySet::B2, b2),
            (KeySet::C, g1::<E>(&p.c)),
            (KeySet::H, g1::<E>(&p.h)),
        ];
        s.pin(sets, matrices).map_err(|e| e.on_gpu(self.gpu))
    }

    fn unpin(&self) {
        if let KeyPoints::Streamed(s) = &self.points {
            s.unpin();
        }
    }

    fn is_pinned(&self) -> bool {
        matches!(&self.points, KeyPoints::Streamed(s) if s.pinned().is_some())
    }

    fn msm_g1(&self, set: G1Set, scalars: &[ScalarInt<E>]) -> Result<E::G1, Error> {
        let p = &self.key.points;
        let points = match set {
            G1Set::A => &p.a,
            G1Set::B1 => &p.b1,
            G1Set::C => &p.c,
            G1Set::H => &p.h,
        };
        check_count(points.len(), scalars.len(), || format!("{set:?}"))
            .and_then(|()| match &self.points {
                KeyPoints::Resident(sets) => {
                    let resident = sets.g1(set);
                    self.staged_msm(scalars, |p, n| resident.msm_raw(p, n, false))
                }
                KeyPoints::Streamed(s) => {
                    self.streamed_msm::<G1>(s, KeySet::from(set), points, scalars)
                }
            })
            .map_err(|e| e.on_gpu(self.gpu))
    }

    fn msm_g2(&self, scalars: &[ScalarInt<E>]) -> Result<E::G2, Error> {
        let points = &self.key.points.b2;
        check_count(points.len(), scalars.len(), || "B2".into())
            .and_then(|()| match &self.points {
                KeyPoints::Resident(sets) => {
                    self.staged_msm(scalars, |p, n| sets.b2.msm_raw(p, n, false))
                }
                KeyPoints::Streamed(s) => self.streamed_msm::<G2>(s, KeySet::B2, points, scalars),
            })
            .map_err(|e| e.on_gpu(self.gpu))
    }

    /// Several proofs, or one of a small key (or with constant-work MSMs): one batched
    /// MSM per point set for all of them (a failure fails every proof of the batch). One
    /// proof of a larger key: its five sppark MSMs at once. Either way w is uploaded once
    /// and h kept on the GPU; both are in `crate::enabled::pass`.
    /// A streamed key's passes all take the batched path (its MSMs walk the chunks once
    /// for the batch, `crate::enabled::streamed`), one pass at a time.
    fn pass(&self, inputs: &mut [PassInput<'_, E>]) -> Vec<Result<DeviceSums<E>, Error>> {
        let (streamed, _one) = match &self.points {
            KeyPoints::Streamed(s) => (true, Some(s.one_at_a_time())),
            KeyPoints::Resident(_) => (false, None),
        };
        match inputs {
            [] => Vec::new(),
            [one] if !streamed && !lone_on_batch(&self.tuning, self.pool.domain_size()) => {
                vec![self.single_pass(one).map_err(|e| e.on_gpu(self.gpu))]
            }
            _ => match self.batch_pass(inputs) {
                Ok(sums) => sums.into_iter().map(Ok).collect(),
                Err(e) => inputs
                    .iter()
                    .map(|_| Err(e.clone().on_gpu(self.gpu)))
                    .collect(),
            },
        }
    }
}
