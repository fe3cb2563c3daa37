//! The real [`CudaBackend`] (feature `cuda`).

use super::{device_info, GpuCurve, GpuQuotient, PinnedBuf, ResidentG1, ResidentG2};
use crate::backend::device_bytes_needed;
use crate::{CudaError, DeviceInfo};
use ark_ff::PrimeField;
use std::sync::Mutex;
use zkpipe_core::backend::ScalarInt;
use zkpipe_core::quotient::QuotientDomain;
use zkpipe_core::reduce::QapEvals;
use zkpipe_core::{Backend, CompiledKey, CpuBackend, Curve, Error};

/// One key's points resident on one GPU, its quotient buffers, and a pinned staging
/// buffer: the quotient stage and all five MSMs of a proof with that key run on the GPU.
///
/// The MSM calls recognize the key's point sets by address (the `CompiledKey` this
/// backend was made from must outlive it and not move its points); MSMs over any other
/// points fall back to the CPU backend.
pub struct CudaBackend<E: Curve + GpuCurve> {
    a: ResidentG1<E>,
    b1: ResidentG1<E>,
    c: ResidentG1<E>,
    h: ResidentG1<E>,
    b2: ResidentG2<E>,
    /// Host addresses and lengths of the key's sets: a, b1, c, h, b2.
    addrs: [(usize, usize); 5],
    quotient: GpuQuotient<E>,
    staging: Mutex<PinnedBuf>,
    device: DeviceInfo,
}

fn err(e: CudaError) -> Error {
    Error::Backend {
        backend: "cuda",
        message: e.to_string(),
    }
}

impl<E: Curve + GpuCurve> CudaBackend<E> {
    /// Uploads `key`'s points to GPU 0 and allocates the buffers a proof needs, after
    /// checking that they fit in the device's free memory.
    pub fn new(key: &CompiledKey<E>) -> Result<Self, CudaError> {
        let device = device_info()?;
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
            a: ResidentG1::upload(&p.a)?,
            b1: ResidentG1::upload(&p.b1)?,
            c: ResidentG1::upload(&p.c)?,
            h: ResidentG1::upload(&p.h)?,
            b2: ResidentG2::upload(&p.b2)?,
            addrs: [
                addr(p.a.as_ptr() as usize, p.a.len()),
                addr(p.b1.as_ptr() as usize, p.b1.len()),
                addr(p.c.as_ptr() as usize, p.c.len()),
                addr(p.h.as_ptr() as usize, p.h.len()),
                addr(p.b2.as_ptr() as usize, p.b2.len()),
            ],
            quotient: GpuQuotient::new(lg_n, key.domain.domain.group_gen, key.domain.coset.offset)?,
            staging: Mutex::new(PinnedBuf::new((3 * n).max(key.n_vars) * elem)?),
            device,
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
        let ptr = staging.stage(0, scalars) as *const [u64; 4];
        run(ptr, scalars.len()).map_err(err)
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
