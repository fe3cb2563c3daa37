//! The real [`CudaBackend`] (feature `cuda`).

use super::{
    device_info, BatchPlan, DeviceBuf, GpuCurve, GpuMatrices, GpuQuotient, PinnedBuf, ResidentG1,
    ResidentG2,
};
use crate::backend::{device_bytes_needed, reduces_on_gpu, BATCH_MAX_DOMAIN, BATCH_MAX_PROOFS};
use crate::{CudaError, DeviceInfo};
use ark_ec::pairing::Pairing;
use ark_ff::PrimeField;
use std::sync::Mutex;
use std::time::Instant;
use zkpipe_core::backend::ScalarInt;
use zkpipe_core::quotient::QuotientDomain;
use zkpipe_core::reduce::QapEvals;
use zkpipe_core::stages::DeviceSums;
use zkpipe_core::timings::{Span, Stage, Timings};
use zkpipe_core::{Backend, CompiledKey, CpuBackend, Curve, Error, PassInput};

/// One key's points resident on one GPU, and per proof in flight its quotient buffers,
/// a pinned staging buffer and its witness on the device: the quotient stage and all five
/// MSMs of a proof with that key run on the GPU. Several proofs may run at once (each
/// point set runs one MSM at a time).
///
/// A proof's device pass ([`Backend::device_pass`]) uploads the witness scalars once:
/// the key's A and B matrices, resident too, turn them into a, b, c there
/// ([`Stage::ReduceDevice`]; unless [`reduces_on_gpu`] is off), and the A, B₁, B₂ and C
/// MSMs read them; h stays on the GPU for the H MSM.
/// The single-MSM calls recognize the key's point sets by address (the `CompiledKey`
/// this backend was made from must outlive it and not move its points); MSMs over any
/// other points fall back to the CPU backend.
pub struct CudaBackend<E: Curve + GpuCurve> {
    a: ResidentG1<E>,
    b1: ResidentG1<E>,
    c: ResidentG1<E>,
    h: ResidentG1<E>,
    b2: ResidentG2<E>,
    /// A and B, where a, b, c are computed on the GPU.
    matrices: Option<GpuMatrices<E>>,
    /// Host addresses and lengths of the key's sets: a, b1, c, h, b2.
    addrs: [(usize, usize); 5],
    /// Idle buffer sets, one per proof in flight at once (made on demand).
    idle: Mutex<Vec<PassBuffers<E>>>,
    shape: PassShape<E>,
    device: DeviceInfo,
    n_public: usize,
}

/// What one proof in flight needs of its own: the quotient's device buffers (h stays
/// there for the H MSM), a pinned staging buffer, and the device copy of its witness.
struct PassBuffers<E: GpuCurve> {
    quotient: GpuQuotient<E>,
    staging: PinnedBuf,
    w: DeviceBuf,
}

impl<E: GpuCurve> PassBuffers<E> {
    /// Stages `w` (the key's nVars scalars) and copies it to the device buffer.
    fn upload_w(&mut self, w: &[ScalarInt<E>]) -> Result<(), CudaError> {
        let pw = self.staging.stage(0, w) as *const u8;
        // SAFETY: `pw` holds w.len() scalars of 32 bytes, at most the device buffer's size
        // (upload_raw checks).
        unsafe { self.w.upload_raw(pw, std::mem::size_of_val(w)) }
    }

    /// The quotient with h left on the GPU, from `evals`, or where `evals` is empty from
    /// a, b, c computed on the GPU from `w` with `matrices`. The witness is on the device
    /// afterwards either way; its upload is timed with the stage it precedes on the GPU
    /// (`reduce_device`, else after the quotient, as part of `quotient`).
    fn quotient_and_w(
        &mut self,
        evals: &QapEvals<E::ScalarField>,
        w: &[ScalarInt<E>],
        matrices: Option<&GpuMatrices<E>>,
        t: &mut Timings,
    ) -> Result<(), CudaError> {
        if !evals.a.is_empty() {
            return t.time(Stage::Quotient, || {
                self.run_quotient(evals, false)?;
                self.upload_w(w)
            });
        }
        let m = matrices.ok_or_else(|| {
            CudaError::Length("no a, b, c given, and no matrices on the GPU".into())
        })?;
        t.time(Stage::ReduceDevice, || {
            self.upload_w(w)?;
            let wd = self.w.device_ptr(0) as *const [u64; 4];
            // SAFETY: `wd` holds the key's nVars scalars (checked by the caller), the
            // matrices' column count, on this set's GPU, and nothing writes it meanwhile.
            unsafe { self.quotient.reduce_raw(m, wd) }
        })?;
        let null = std::ptr::null_mut();
        // SAFETY: null inputs: a, b, c are where reduce_raw left them; h stays there.
        t.time(Stage::Quotient, || unsafe {
            self.quotient.run_raw(null, null, null, null)
        })
    }

    /// Stages a, b, c (n elements each, as the quotient was made for) and runs the
    /// quotient. h comes back to the start of the staging buffer if `download`, else it
    /// stays on the GPU only ([`GpuQuotient::h_on_device`]).
    fn run_quotient(
        &mut self,
        evals: &QapEvals<E::ScalarField>,
        download: bool,
    ) -> Result<(), CudaError> {
        let bytes = std::mem::size_of_val(evals.a.as_slice());
        let pa = self.staging.stage(0, &evals.a);
        let pb = self.staging.stage(bytes, &evals.b);
        let pc = self.staging.stage(2 * bytes, &evals.c);
        let ph = if download {
            self.staging.ptr_at(0) as *mut E::ScalarField
        } else {
            std::ptr::null_mut()
        };
        // SAFETY: the pointers address n field elements each inside the staging buffer,
        // which this set's borrower alone uses; h, if downloaded, overwrites a.
        unsafe { self.quotient.run_raw(pa, pb, pc, ph) }
    }
}

/// How to make a [`PassBuffers`] for this key.
struct PassShape<E: GpuCurve> {
    lg_n: u32,
    omega: E::ScalarField,
    shift: E::ScalarField,
    n_vars: usize,
    gpu: usize,
}

impl<E: GpuCurve> PassShape<E> {
    fn make(&self) -> Result<PassBuffers<E>, CudaError> {
        let elem = std::mem::size_of::<E::ScalarField>();
        let n = 1usize << self.lg_n;
        Ok(PassBuffers {
            quotient: GpuQuotient::new(self.lg_n, self.omega, self.shift, self.gpu)?,
            staging: PinnedBuf::new((3 * n).max(self.n_vars) * elem)?,
            w: DeviceBuf::new(self.gpu, self.n_vars * elem)?,
        })
    }
}

/// A buffer set lent to one call, back to the idle list on drop.
struct Lent<'a, E: Curve + GpuCurve> {
    owner: &'a CudaBackend<E>,
    bufs: Option<PassBuffers<E>>,
}

impl<E: Curve + GpuCurve> std::ops::Deref for Lent<'_, E> {
    type Target = PassBuffers<E>;
    fn deref(&self) -> &PassBuffers<E> {
        self.bufs.as_ref().expect("lent buffers")
    }
}

impl<E: Curve + GpuCurve> std::ops::DerefMut for Lent<'_, E> {
    fn deref_mut(&mut self) -> &mut PassBuffers<E> {
        self.bufs.as_mut().expect("lent buffers")
    }
}

impl<E: Curve + GpuCurve> Drop for Lent<'_, E> {
    fn drop(&mut self) {
        if let Some(b) = self.bufs.take() {
            let mut idle = self.owner.idle.lock().unwrap_or_else(|e| e.into_inner());
            idle.push(b);
        }
    }
}

fn err(e: CudaError) -> Error {
    Error::Backend {
        backend: "cuda",
        message: e.to_string(),
    }
}

impl<E: Curve + GpuCurve> CudaBackend<E> {
    /// Uploads `key`'s points to GPU `gpu` and allocates the buffers a proof needs, after
    /// checking that they fit in the device's free memory.
    pub fn new(key: &CompiledKey<E>, gpu: usize) -> Result<Self, CudaError> {
        let device = device_info(gpu)?;
        let needed = device_bytes_needed(key);
        if needed > device.free_bytes {
            return Err(CudaError::OutOfMemory {
                what: format!(
                    "a key of {} variables and domain {}",
                    key.n_vars,
                    key.domain_size()
                ),
                needed_mib: needed >> 20,
                free_mib: device.free_bytes >> 20,
                total_mib: device.total_bytes >> 20,
            });
        }
        let p = &key.points;
        let addr = |ptr: usize, len: usize| (ptr, len);
        let shape = PassShape {
            lg_n: key.domain_size().trailing_zeros(),
            omega: key.domain.domain.group_gen,
            shift: key.domain.coset.offset,
            n_vars: key.n_vars,
            gpu,
        };
        Ok(Self {
            a: ResidentG1::upload(&p.a, gpu)?,
            b1: ResidentG1::upload(&p.b1, gpu)?,
            // Padded past the public inputs, so [C]₁ batches share w's plan.
            c: ResidentG1::upload_padded(&p.c, key.n_public + 1, gpu)?,
            h: ResidentG1::upload(&p.h, gpu)?,
            b2: ResidentG2::upload(&p.b2, gpu)?,
            matrices: if reduces_on_gpu() {
                Some(GpuMatrices::upload(&key.a, &key.b, gpu)?)
            } else {
                None
            },
            addrs: [
                addr(p.a.as_ptr() as usize, p.a.len()),
                addr(p.b1.as_ptr() as usize, p.b1.len()),
                addr(p.c.as_ptr() as usize, p.c.len()),
                addr(p.h.as_ptr() as usize, p.h.len()),
                addr(p.b2.as_ptr() as usize, p.b2.len()),
            ],
            idle: Mutex::new(vec![shape.make()?]),
            shape,
            device,
            n_public: key.n_public,
        })
    }

    /// The GPU this backend runs on (memory as of its creation).
    pub fn device(&self) -> &DeviceInfo {
        &self.device
    }

    fn which<T>(&self, bases: &[T]) -> Option<usize> {
        let key = (bases.as_ptr() as usize, bases.len());
        self.addrs.iter().position(|&a| a == key)
    }

    fn staged_msm<T>(
        &self,
        scalars: &[ScalarInt<E>],
        run: impl FnOnce(*const [u64; 4], usize) -> Result<T, CudaError>,
    ) -> Result<T, Error> {
        let mut bufs = self.lend().map_err(err)?;
        let ptr = bufs.staging.stage(0, scalars) as *const [u64; 4];
        run(ptr, scalars.len()).map_err(err)
    }

    /// An idle buffer set, or a new one: one per proof in flight on this key at once.
    fn lend(&self) -> Result<Lent<'_, E>, CudaError> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let bufs = match idle {
            Some(b) => b,
            None => self.shape.make()?,
        };
        Ok(Lent {
            owner: self,
            bufs: Some(bufs),
        })
    }

    fn check_pass(
        &self,
        key: &CompiledKey<E>,
        evals: &QapEvals<E::ScalarField>,
        w: &[ScalarInt<E>],
    ) -> Result<(), CudaError> {
        let n = 1usize << self.shape.lg_n;
        // a, b, c span the domain, or are left to the GPU.
        let rows = if self.matrices.is_some() && evals.a.is_empty() {
            0
        } else {
            n
        };
        let lengths_ok = key.domain_size() == n
            && [&evals.a, &evals.b, &evals.c]
                .iter()
                .all(|v| v.len() == rows)
            && w.len() == self.a.len()
            && key.n_public == self.n_public;
        if !lengths_ok {
            return Err(CudaError::Length(format!(
                "a proof of domain {} and {} scalars on a backend made for domain {n} and {}",
                key.domain_size(),
                w.len(),
                self.a.len()
            )));
        }
        Ok(())
    }

    /// Several proofs in one pass: each proof's quotient (h left on the GPU) and witness
    /// upload, then one plan of bucket digits for all the w's and one for all the h's, and
    /// the five batched MSMs at once — one kernel sequence per point set for the batch.
    fn batch_pass(
        &self,
        key: &CompiledKey<E>,
        inputs: &mut [PassInput<'_, E>],
        g2: bool,
    ) -> Result<Vec<DeviceSums<E>>, CudaError> {
        for p in inputs.iter() {
            self.check_pass(key, p.evals, p.w)?;
        }
        let n = 1usize << self.shape.lg_n;
        let mut lent = Vec::with_capacity(inputs.len());
        for _ in 0..inputs.len() {
            lent.push(self.lend()?);
        }
        // Each proof's reduce and quotient from a thread of its own, on its quotient's
        // own stream: at small domains one proof's kernels fill little of the GPU.
        let matrices = self.matrices.as_ref();
        std::thread::scope(|s| {
            let running: Vec<_> = inputs
                .iter_mut()
                .zip(lent.iter_mut())
                .map(|(p, bufs)| s.spawn(move || bufs.quotient_and_w(p.evals, p.w, matrices, p.t)))
                .collect();
            running.into_iter().try_for_each(join)
        })?;
        let start = Instant::now();
        // Device addresses as integers, to hand to the planning threads.
        let ws: Vec<usize> = lent.iter().map(|b| b.w.device_ptr(0) as usize).collect();
        let hs: Vec<usize> = lent
            .iter()
            .map(|b| b.quotient.h_on_device() as usize)
            .collect();
        let (nw, gpu) = (self.a.len(), self.shape.gpu);
        let plan = |v: &[usize], len: usize, mont: bool| {
            let v: Vec<*const [u64; 4]> = v.iter().map(|&p| p as *const [u64; 4]).collect();
            // SAFETY: each address is this GPU's memory holding `len` scalars (a lent
            // witness buffer or quotient h), not written until the lent sets go back.
            unsafe { BatchPlan::<E>::new(&v, len, mont, gpu) }
        };
        let pw = plan(&ws, nw, false)?;
        let (a, b1, b2, c, h) = std::thread::scope(|s| {
            // h's plan is made while w's MSMs run.
            let h = s.spawn(|| plan(&hs, n, true).and_then(|p| self.h.batch_msm(&p)));
            let b2 = g2.then(|| s.spawn(|| self.b2.batch_msm(&pw)));
            let b1 = s.spawn(|| self.b1.batch_msm(&pw));
            let c = s.spawn(|| self.c.batch_msm(&pw));
            let a = self.a.batch_msm(&pw);
            (a, join(b1), b2.map(join), join(c), join(h))
        });
        drop(lent);
        let (a, b1, c, h) = (a?, b1?, c?, h?);
        let b2 = b2.transpose()?;
        let end = Instant::now();
        let k = inputs.len();
        if [a.len(), b1.len(), c.len(), h.len()]
            .iter()
            .any(|&l| l != k)
            || b2.as_ref().is_some_and(|v| v.len() != k)
        {
            return Err(CudaError::Length(
                "a batched MSM returned the wrong count".into(),
            ));
        }
        Ok(inputs
            .iter_mut()
            .enumerate()
            .map(|(j, p)| {
                // The batch's MSMs are shared; each proof's waterfall shows them whole.
                p.t.spans.push(Span {
                    stage: Stage::MsmBatch,
                    start,
                    end,
                });
                DeviceSums {
                    a: a[j],
                    b1: b1[j],
                    b2: b2.as_ref().map(|v| v[j]),
                    c: c[j],
                    h: h[j],
                }
            })
            .collect())
    }

    /// Quotient with h left on the GPU, then the five MSMs (B₂ if `g2`): w crosses once.
    fn pass(
        &self,
        key: &CompiledKey<E>,
        evals: &QapEvals<E::ScalarField>,
        w: &[ScalarInt<E>],
        g2: bool,
        t: &mut Timings,
    ) -> Result<DeviceSums<E>, CudaError> {
        self.check_pass(key, evals, w)?;
        let n = 1usize << self.shape.lg_n;
        let mut bufs = self.lend()?;
        // w crosses once (standard form).
        bufs.quotient_and_w(evals, w, self.matrices.as_ref(), t)?;
        let PassBuffers {
            quotient, w: w_dev, ..
        } = &mut *bufs;
        // Device addresses as integers, to hand to the MSM threads.
        let wd = w_dev.device_ptr(0) as usize;
        let private = w_dev.device_ptr((self.n_public + 1) * 32) as usize;
        let hd = quotient.h_on_device() as usize;
        let (nw, n_private) = (w.len(), w.len() - self.n_public - 1);
        let msm = |set: &ResidentG1<E>, at: usize, len: usize, mont: bool, stage| {
            let start = Instant::now();
            // SAFETY: `at` is device memory on this GPU holding `len` scalars (w, its
            // private part, or the quotient's h, Montgomery), lent to this call alone.
            let r = unsafe { set.msm_device(at as *const [u64; 4], len, mont) };
            (r, span(stage, start))
        };
        let g2_msm = || {
            let start = Instant::now();
            // SAFETY: as above, for w.
            let r = unsafe { self.b2.msm_device(wd as *const [u64; 4], nw, false) };
            (r, span(Stage::MsmB2, start))
        };
        type G1R<E> = (Result<<E as Pairing>::G1, CudaError>, Span);
        let (a, b1, b2, c, h): (G1R<E>, G1R<E>, _, G1R<E>, G1R<E>) = if serial_msms() {
            (
                msm(&self.a, wd, nw, false, Stage::MsmA),
                msm(&self.b1, wd, nw, false, Stage::MsmB1),
                g2.then(g2_msm),
                msm(&self.c, private, n_private, false, Stage::MsmC),
                msm(&self.h, hd, n, true, Stage::MsmH),
            )
        } else {
            // The MSMs run at once, each from its own host thread: sppark's per-call host
            // work (launches, synchronizes, the final window sums on the CPU) then overlaps
            // the others' kernels. Each point set has its own buckets; they share the
            // device's streams, so kernels stay in stream order.
            std::thread::scope(|s| {
                let b2 = g2.then(|| s.spawn(g2_msm));
                let b1 = s.spawn(|| msm(&self.b1, wd, nw, false, Stage::MsmB1));
                let c = s.spawn(|| msm(&self.c, private, n_private, false, Stage::MsmC));
                let h = s.spawn(|| msm(&self.h, hd, n, true, Stage::MsmH));
                let a = msm(&self.a, wd, nw, false, Stage::MsmA);
                (a, join(b1), b2.map(join), join(c), join(h))
            })
        };
        let (a, a_span) = a;
        let b2 = b2.map(|(r, sp)| {
            t.spans.push(sp);
            r
        });
        t.spans.extend([a_span, b1.1, c.1, h.1]);
        Ok(DeviceSums {
            a: a?,
            b1: b1.0?,
            b2: b2.transpose()?,
            c: c.0?,
            h: h.0?,
        })
    }
}

impl<E: Curve + GpuCurve> Backend<E> for CudaBackend<E> {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn quotient(
        &self,
        domain: &QuotientDomain<E::ScalarField>,
        evals: &mut QapEvals<E::ScalarField>,
    ) -> Result<(), Error> {
        let n = 1usize << self.shape.lg_n;
        if domain.size() != n || [&evals.a, &evals.b, &evals.c].iter().any(|v| v.len() != n) {
            return Err(err(CudaError::Length(format!(
                "quotient of size {} on a backend made for domain {n}",
                domain.size()
            ))));
        }
        let mut bufs = self.lend().map_err(err)?;
        bufs.run_quotient(evals, true).map_err(err)?;
        bufs.staging.unstage(0, &mut evals.a);
        Ok(())
    }

    fn reduces_on_device(&self, _key: &CompiledKey<E>) -> bool {
        self.matrices.is_some()
    }

    fn device_pass(
        &self,
        key: &CompiledKey<E>,
        evals: &mut QapEvals<E::ScalarField>,
        w: &[ScalarInt<E>],
        _h: &mut Vec<ScalarInt<E>>,
        g2: bool,
        t: &mut Timings,
    ) -> Result<DeviceSums<E>, Error> {
        self.pass(key, evals, w, g2, t).map_err(err)
    }

    fn batch_limit(&self, key: &CompiledKey<E>) -> usize {
        if key.domain_size() <= BATCH_MAX_DOMAIN {
            BATCH_MAX_PROOFS
        } else {
            1
        }
    }

    fn device_batch(
        &self,
        key: &CompiledKey<E>,
        inputs: &mut [PassInput<'_, E>],
        g2: bool,
    ) -> Vec<Result<DeviceSums<E>, Error>> {
        if inputs.len() < 2 {
            return zkpipe_core::backend::one_by_one(self, key, inputs, g2);
        }
        match self.batch_pass(key, inputs, g2) {
            Ok(sums) => sums.into_iter().map(Ok).collect(),
            Err(e) => inputs.iter().map(|_| Err(err(e.clone()))).collect(),
        }
    }

    fn msm_g1(&self, bases: &[E::G1Affine], scalars: &[ScalarInt<E>]) -> Result<E::G1, Error> {
        let set = match self.which(bases) {
            Some(0) => &self.a,
            Some(1) => &self.b1,
            Some(2) => &self.c,
            Some(3) => &self.h,
            _ => return <CpuBackend as Backend<E>>::msm_g1(&CpuBackend, bases, scalars),
        };
        if scalars.len() != bases.len() {
            return <CpuBackend as Backend<E>>::msm_g1(&CpuBackend, bases, scalars);
            // reports the mismatch
        }
        self.staged_msm(scalars, |p, n| set.msm_raw(p, n, false))
    }

    fn msm_g2(&self, bases: &[E::G2Affine], scalars: &[ScalarInt<E>]) -> Result<E::G2, Error> {
        if self.which(bases) != Some(4) || scalars.len() != bases.len() {
            return <CpuBackend as Backend<E>>::msm_g2(&CpuBackend, bases, scalars);
        }
        self.staged_msm(scalars, |p, n| self.b2.msm_raw(p, n, false))
    }
}

/// A scoped thread's result; its panic goes on up.
fn join<T>(j: std::thread::ScopedJoinHandle<'_, T>) -> T {
    j.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

fn span(stage: Stage, start: Instant) -> Span {
    Span {
        stage,
        start,
        end: Instant::now(),
    }
}

/// `ZKPIPE_CUDA_SERIAL_MSMS=1` runs a proof's MSMs one after another instead of at once (a
/// diagnostic switch, for comparing the two; read once).
fn serial_msms() -> bool {
    static SERIAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SERIAL.get_or_init(|| std::env::var("ZKPIPE_CUDA_SERIAL_MSMS").is_ok_and(|v| v == "1"))
}

// Scalars cross as 4 little-endian words: true of both curves' scalar fields.
const _: () = assert!(std::mem::size_of::<<ark_bn254::Fr as PrimeField>::BigInt>() == 32);
const _: () = assert!(std::mem::size_of::<<ark_bls12_381::Fr as PrimeField>::BigInt>() == 32);
