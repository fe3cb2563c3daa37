//! The real GPU paths (feature `cuda`).

mod ffi;

use crate::CudaError;
use ark_ec::pairing::Pairing;
use ark_ec::short_weierstrass::{Projective, SWCurveConfig};
use ark_ff::{BigInt, Fp, MontBackend, MontConfig, PrimeField};
use std::ffi::c_void;
use std::marker::PhantomData;

// blst provides host-side symbols sppark's headers call; link it.
extern crate blst;

fn check(e: sppark::Error) -> Result<(), CudaError> {
    if e.code == 0 {
        Ok(())
    } else {
        Err(CudaError::Device {
            code: e.code,
            message: String::from(&e),
        })
    }
}

/// A curve whose G1 MSM runs on the GPU: the per-curve C entry points.
pub trait GpuCurve: Pairing {
    #[doc(hidden)]
    const LIMBS: usize;
    #[doc(hidden)]
    unsafe fn points_new(
        out: *mut ffi::MsmHandle,
        points: *const c_void,
        n: usize,
        sz: usize,
    ) -> sppark::Error;
    #[doc(hidden)]
    unsafe fn points_drop(h: ffi::MsmHandle);
    #[doc(hidden)]
    unsafe fn msm(
        h: ffi::MsmHandle,
        out: *mut c_void,
        scalars: *const c_void,
        n: usize,
    ) -> sppark::Error;
    #[doc(hidden)]
    unsafe fn oneshot(
        out: *mut c_void,
        points: *const c_void,
        n: usize,
        scalars: *const c_void,
        sz: usize,
    ) -> sppark::Error;
    #[doc(hidden)]
    fn g1_from_jacobian_limbs(limbs: &[u64]) -> Self::G1;
}

/// Σ scalarsᵢ·pointsᵢ uploading the points for this call only (sppark's one-shot entry).
pub fn msm_oneshot<E: GpuCurve>(
    points: &[E::G1Affine],
    scalars: &[<E::ScalarField as PrimeField>::BigInt],
) -> Result<E::G1, CudaError> {
    if scalars.len() != points.len() {
        return Err(CudaError::Length(format!(
            "{} scalars for {} points",
            scalars.len(),
            points.len()
        )));
    }
    let mut out = vec![0u64; 3 * E::LIMBS];
    // SAFETY: as in ResidentG1::upload and ResidentG1::msm.
    check(unsafe {
        E::oneshot(
            out.as_mut_ptr() as *mut c_void,
            points.as_ptr() as *const c_void,
            points.len(),
            scalars.as_ptr() as *const c_void,
            std::mem::size_of::<E::G1Affine>(),
        )
    })?;
    Ok(E::g1_from_jacobian_limbs(&out))
}

/// A Jacobian point from sppark (X, Y, Z Montgomery limbs, the same radix as arkworks).
fn jacobian<P, C, const N: usize>(limbs: &[u64]) -> Projective<P>
where
    P: SWCurveConfig<BaseField = Fp<MontBackend<C, N>, N>>,
    C: MontConfig<N>,
{
    let f = |i: usize| {
        let mut l = [0u64; N];
        l.copy_from_slice(&limbs[i * N..(i + 1) * N]);
        Fp::new_unchecked(BigInt(l))
    };
    let (x, y, z) = (f(0), f(1), f(2));
    if z == Fp::from(0u64) {
        Projective::default()
    } else {
        Projective::new_unchecked(x, y, z)
    }
}

macro_rules! gpu_curve {
    ($engine:ty, $m:ident, $limbs:expr, $new:ident, $drop:ident, $msm:ident, $oneshot:ident) => {
        impl GpuCurve for $engine {
            const LIMBS: usize = $limbs;
            unsafe fn points_new(
                out: *mut ffi::MsmHandle,
                points: *const c_void,
                n: usize,
                sz: usize,
            ) -> sppark::Error {
                ffi::$new(out, points, n, sz)
            }
            unsafe fn points_drop(h: ffi::MsmHandle) {
                ffi::$drop(h)
            }
            unsafe fn msm(
                h: ffi::MsmHandle,
                out: *mut c_void,
                scalars: *const c_void,
                n: usize,
            ) -> sppark::Error {
                ffi::$msm(h, out, scalars, n)
            }
            unsafe fn oneshot(
                out: *mut c_void,
                points: *const c_void,
                n: usize,
                scalars: *const c_void,
                sz: usize,
            ) -> sppark::Error {
                ffi::$oneshot(out, points, n, scalars, sz)
            }
            fn g1_from_jacobian_limbs(limbs: &[u64]) -> Self::G1 {
                jacobian::<$m::g1::Config, _, $limbs>(limbs)
            }
        }
    };
}

gpu_curve!(
    ark_bn254::Bn254,
    ark_bn254,
    4,
    zkp_g1_points_new_bn254,
    zkp_g1_points_drop_bn254,
    zkp_g1_msm_bn254,
    zkp_g1_msm_oneshot_bn254
);
gpu_curve!(
    ark_bls12_381::Bls12_381,
    ark_bls12_381,
    6,
    zkp_g1_points_new_bls12_381,
    zkp_g1_points_drop_bls12_381,
    zkp_g1_msm_bls12_381,
    zkp_g1_msm_oneshot_bls12_381
);

/// G1 points uploaded to the GPU once, for many MSMs.
pub struct ResidentG1<E: GpuCurve> {
    handle: ffi::MsmHandle,
    len: usize,
    _curve: PhantomData<E>,
}

// The handle is used by one call at a time (`&self` calls serialize on sppark's stream).
unsafe impl<E: GpuCurve> Send for ResidentG1<E> {}

impl<E: GpuCurve> ResidentG1<E> {
    /// Uploads `points` (arkworks affine points, read with their stride).
    pub fn upload(points: &[E::G1Affine]) -> Result<Self, CudaError> {
        let mut handle: ffi::MsmHandle = std::ptr::null_mut();
        // SAFETY: `points` is a live slice of `len` elements of `size_of` bytes each, whose
        // first 2·LIMBS words are x, y in Montgomery form (arkworks' affine layout); the
        // shim copies them to the device before returning.
        check(unsafe {
            E::points_new(
                &mut handle,
                points.as_ptr() as *const c_void,
                points.len(),
                std::mem::size_of::<E::G1Affine>(),
            )
        })?;
        Ok(Self {
            handle,
            len: points.len(),
            _curve: PhantomData,
        })
    }

    /// Σ scalarsᵢ·pointsᵢ (scalars in standard form, as many as points).
    pub fn msm(
        &self,
        scalars: &[<E::ScalarField as PrimeField>::BigInt],
    ) -> Result<E::G1, CudaError> {
        if scalars.len() != self.len {
            return Err(CudaError::Length(format!(
                "{} scalars for {} resident points",
                scalars.len(),
                self.len
            )));
        }
        let mut out = vec![0u64; 3 * E::LIMBS];
        // SAFETY: `out` has room for one Jacobian point (3 coordinates of LIMBS words);
        // scalars are `len` little-endian 4-limb integers, as sppark's fr_t expects.
        check(unsafe {
            E::msm(
                self.handle,
                out.as_mut_ptr() as *mut c_void,
                scalars.as_ptr() as *const c_void,
                scalars.len(),
            )
        })?;
        Ok(E::g1_from_jacobian_limbs(&out))
    }
}

impl<E: GpuCurve> Drop for ResidentG1<E> {
    fn drop(&mut self) {
        // SAFETY: the handle came from points_new and is dropped once.
        unsafe { E::points_drop(self.handle) }
    }
}
