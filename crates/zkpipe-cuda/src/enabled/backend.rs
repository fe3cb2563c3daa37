//! The real [`CudaBackend`] (feature `cuda`).

use super::{device_info, DeviceBuf, GpuCurve, GpuQuotient, PinnedBuf, ResidentG1, ResidentG2};
use crate::backend::device_bytes_needed;
use crate::{CudaError, DeviceInfo};
use ark_ff::PrimeField;
use std::sync::Mutex;
use zkpipe_core::backend::ScalarInt;
use zkpipe_core::quotient::QuotientDomain;
use zkpipe_core::reduce::QapEvals;
use zkpipe_core::stages::DeviceSums;
use zkpipe_core::timings::{Stage, Timings};
use zkpipe_core::{Backend, CompiledKey, CpuBackend, Curve, Error};

/// One key's points resident on one GPU, its quotient buffers, and a pinned staging
/// buffer: the quotient stage and all five MSMs of a proof with that key run on the GPU.
///
/// A proof's device pass ([`Backend::device_pass`]) uploads the witness scalars once for
/// the A, B₁, B₂ and C MSMs and leaves h on the GPU for the H MSM.
/// The single-MSM calls recognize the key's point sets by address (the `CompiledKey`
/// this backend was made from must outlive it and not move its points); MSMs over any
/// other points fall back to the CPU backend.
pub struct CudaBackend<E: Curve + GpuCurve> {
    a: ResidentG1<E>,
    b1: ResidentG1<E>,
    c: ResidentG1<E>,
    h: ResidentG1<E>,
    b2: ResidentG2<E>,
    /// Host addresses and lengths of the key's sets: a, b1, c, h, b2.
    addrs: [(usize, usize); 5],
    quotient: GpuQuotient<E>,
    /// The pinned staging buffer and the device copy of a proof's witness scalars; one
    /// proof at a time uses them (and the GPU).
    staging: Mutex<(PinnedBuf, DeviceBuf)>,
    device: DeviceInfo,
    n_public: usize,
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
        let n = key.domain_size();
        let lg_n = n.trailing_zeros();
        let elem = std::mem::size_of::<E::ScalarField>();
        Ok(Self {
            a: ResidentG1::upload(&p.a, gpu)?,
            b1: ResidentG1::upload(&p.b1, gpu)?,
            c: ResidentG1::upload(&p.c, gpu)?,
            h: ResidentG1::upload(&p.h, gpu)?,
            b2: ResidentG2::upload(&p.b2, gpu)?,
            addrs: [
                addr(p.a.as_ptr() as usize, p.a.len()),
                addr(p.b1.as_ptr() as usize, p.b1.len()),
                addr(p.c.as_ptr() as usize, p.c.len()),
                addr(p.h.as_ptr() as usize, p.h.len()),
                addr(p.b2.as_ptr() as usize, p.b2.len()),
            ],
            quotient: GpuQuotient::new(
                lg_n,
                key.domain.domain.group_gen,
                key.domain.coset.offset,
                gpu,
            )?,
            staging: Mutex::new((
                PinnedBuf::new((3 * n).max(key.n_vars) * elem)?,
                DeviceBuf::new(gpu, key.n_vars * elem)?,
            )),
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
        let mut staging = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        let ptr = staging.0.stage(0, scalars) as *const [u64; 4];
        run(ptr, scalars.len()).map_err(err)
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
        let n = self.quotient.size();
        let lengths_ok = key.domain_size() == n
            && [&evals.a, &evals.b, &evals.c].iter().all(|v| v.len() == n)
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
        let elem = std::mem::size_of::<E::ScalarField>();
        let mut guard = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        let (staging, w_dev) = &mut *guard;
        t.time(Stage::Quotient, || {
            let pa = staging.stage(0, &evals.a);
            let pb = staging.stage(n * elem, &evals.b);
            let pc = staging.stage(2 * n * elem, &evals.c);
            // SAFETY: three pinned ranges of n elements each; h stays on the device.
            unsafe { self.quotient.run_raw(pa, pb, pc, std::ptr::null_mut()) }
        })?;
        let wd = w_dev.device_ptr(0) as *const [u64; 4];
        let private = w_dev.device_ptr((self.n_public + 1) * 32) as *const [u64; 4];
        let n_private = w.len() - self.n_public - 1;
        let h = self.quotient.h_on_device() as *const [u64; 4];
        // SAFETY: each pointer is device memory on this GPU holding the given number of
        // scalars, not written until the staging lock (held) is released; `pw` holds
        // w.len() scalars of 32 bytes, the device buffer's size.
        unsafe {
            Ok(DeviceSums {
                // w crosses once (standard form), timed with the first MSM that reads it.
                a: t.time(Stage::MsmA, || {
                    let pw = staging.stage(0, w) as *const u8;
                    w_dev.upload_raw(pw, std::mem::size_of_val(w))?;
                    self.a.msm_device(wd, w.len(), false)
                })?,
                b1: t.time(Stage::MsmB1, || self.b1.msm_device(wd, w.len(), false))?,
                b2: if g2 {
                    Some(t.time(Stage::MsmB2, || self.b2.msm_device(wd, w.len(), false))?)
                } else {
                    None
                },
                c: t.time(Stage::MsmC, || self.c.msm_device(private, n_private, false))?,
                // h is in Montgomery form, as the quotient left it.
                h: t.time(Stage::MsmH, || self.h.msm_device(h, n, true))?,
            })
        }
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
        let n = self.quotient.size();
        if domain.size() != n || [&evals.a, &evals.b, &evals.c].iter().any(|v| v.len() != n) {
            return Err(err(CudaError::Length(format!(
                "quotient of size {} on a backend made for domain {n}",
                domain.size()
            ))));
        }
        let elem = std::mem::size_of::<E::ScalarField>();
        let mut staging = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        let staging = &mut staging.0;
        let pa = staging.stage(0, &evals.a);
        let pb = staging.stage(n * elem, &evals.b);
        let pc = staging.stage(2 * n * elem, &evals.c);
        let ph = staging.ptr_at(0) as *mut E::ScalarField;
        // SAFETY: the four pointers address n field elements each inside the staging
        // buffer, which the lock keeps ours for the call.
        unsafe { self.quotient.run_raw(pa, pb, pc, ph) }.map_err(err)?;
        staging.unstage(0, &mut evals.a);
        Ok(())
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

// Scalars cross as 4 little-endian words: true of both curves' scalar fields.
const _: () = assert!(std::mem::size_of::<<ark_bn254::Fr as PrimeField>::BigInt>() == 32);
const _: () = assert!(std::mem::size_of::<<ark_bls12_381::Fr as PrimeField>::BigInt>() == 32);
