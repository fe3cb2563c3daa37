//! The curves and groups the GPU paths serve: [`GpuCurve`] (a curve's table of C entry
//! points) and [`GpuGroup`] ([`G1`], [`G2`]), with the conversion of the points sppark
//! returns (Jacobian, or xyzz from the batched MSM) into arkworks' projective points.

use crate::enabled::ffi;
use ark_ec::pairing::Pairing;
use ark_ec::short_weierstrass::{Projective, SWCurveConfig};
use ark_ec::CurveGroup;
use ark_ff::{AdditiveGroup, BigInt, Fp, MontBackend, MontConfig};

/// A curve whose MSMs and quotient NTTs run on the GPU: its table of C entry points and
/// how its points come back from the device.
pub trait GpuCurve: Pairing {
    /// 64-bit words per base-field element.
    const LIMBS: usize;
    #[doc(hidden)]
    fn fns() -> &'static ffi::CurveFns;
    #[doc(hidden)]
    fn g1_from_jacobian_limbs(limbs: &[u64]) -> Self::G1;
    #[doc(hidden)]
    fn g2_from_jacobian_limbs(limbs: &[u64]) -> Self::G2;
    #[doc(hidden)]
    fn g1_from_xyzz_limbs(limbs: &[u64]) -> Self::G1;
    #[doc(hidden)]
    fn g2_from_xyzz_limbs(limbs: &[u64]) -> Self::G2;
}

fn fp<C: MontConfig<N>, const N: usize>(limbs: &[u64]) -> Fp<MontBackend<C, N>, N> {
    let mut l = [0u64; N];
    l.copy_from_slice(&limbs[..N]);
    Fp::new_unchecked(BigInt(l))
}

/// A Jacobian point from sppark (X, Y, Z in Montgomery form, the same radix as
/// arkworks, whose short-Weierstrass `Projective` is Jacobian too).
fn jacobian<P: SWCurveConfig>(x: P::BaseField, y: P::BaseField, z: P::BaseField) -> Projective<P> {
    if z == P::BaseField::ZERO {
        Projective::default()
    } else {
        Projective::new_unchecked(x, y, z)
    }
}

/// An xyzz point (x = X/ZZ, y = Y/ZZZ, ZZ³ = ZZZ²) as Jacobian: (X·ZZ, Y·ZZZ, ZZ).
fn from_xyzz<P: SWCurveConfig>(
    x: P::BaseField,
    y: P::BaseField,
    zzz: P::BaseField,
    zz: P::BaseField,
) -> Projective<P> {
    jacobian::<P>(x * zz, y * zzz, zz)
}

macro_rules! gpu_curve_impl {
    ($engine:ty, $m:ident, $limbs:expr, $table:ident) => {
        impl GpuCurve for $engine {
            const LIMBS: usize = $limbs;
            fn fns() -> &'static ffi::CurveFns {
                &ffi::$table
            }
            fn g1_from_jacobian_limbs(l: &[u64]) -> Self::G1 {
                const N: usize = $limbs;
                let f = |i: usize| fp::<$m::FqConfig, N>(&l[i * N..]);
                jacobian::<$m::g1::Config>(f(0), f(1), f(2))
            }
            fn g2_from_jacobian_limbs(l: &[u64]) -> Self::G2 {
                const N: usize = $limbs;
                let f = |i: usize| fp::<$m::FqConfig, N>(&l[i * N..]);
                let f2 = |i: usize| $m::Fq2::new(f(2 * i), f(2 * i + 1));
                jacobian::<$m::g2::Config>(f2(0), f2(1), f2(2))
            }
            fn g1_from_xyzz_limbs(l: &[u64]) -> Self::G1 {
                const N: usize = $limbs;
                let f = |i: usize| fp::<$m::FqConfig, N>(&l[i * N..]);
                from_xyzz::<$m::g1::Config>(f(0), f(1), f(2), f(3))
            }
            fn g2_from_xyzz_limbs(l: &[u64]) -> Self::G2 {
                const N: usize = $limbs;
                let f = |i: usize| fp::<$m::FqConfig, N>(&l[i * N..]);
                let f2 = |i: usize| $m::Fq2::new(f(2 * i), f(2 * i + 1));
                from_xyzz::<$m::g2::Config>(f2(0), f2(1), f2(2), f2(3))
            }
        }
    };
}

gpu_curve_impl!(ark_bn254::Bn254, ark_bn254, 4, BN254);
gpu_curve_impl!(ark_bls12_381::Bls12_381, ark_bls12_381, 6, BLS12_381);

/// Which group a resident point set is in.
pub trait GpuGroup<E: GpuCurve>: 'static {
    /// arkworks affine points (the upload format).
    type Affine: Copy + Send + Sync;
    /// The result type (whose affine points are [`Self::Affine`]).
    type Point: CurveGroup<Affine = Self::Affine, ScalarField = E::ScalarField>;
    /// Words of one base-field coordinate (LIMBS, or 2·LIMBS in the extension).
    fn coord_words() -> usize;
    #[doc(hidden)]
    fn fns() -> &'static ffi::GroupFns;
    #[doc(hidden)]
    fn from_jacobian(l: &[u64]) -> Self::Point;
    #[doc(hidden)]
    fn from_xyzz(l: &[u64]) -> Self::Point;
}

/// Marker for G1.
pub struct G1;
/// Marker for G2 (coordinates in the quadratic extension).
pub struct G2;

impl<E: GpuCurve> GpuGroup<E> for G1 {
    type Affine = E::G1Affine;
    type Point = E::G1;
    fn coord_words() -> usize {
        E::LIMBS
    }
    fn fns() -> &'static ffi::GroupFns {
        &E::fns().g1
    }
    fn from_jacobian(l: &[u64]) -> E::G1 {
        E::g1_from_jacobian_limbs(l)
    }
    fn from_xyzz(l: &[u64]) -> E::G1 {
        E::g1_from_xyzz_limbs(l)
    }
}

impl<E: GpuCurve> GpuGroup<E> for G2 {
    type Affine = E::G2Affine;
    type Point = E::G2;
    fn coord_words() -> usize {
        2 * E::LIMBS
    }
    fn fns() -> &'static ffi::GroupFns {
        &E::fns().g2
    }
    fn from_jacobian(l: &[u64]) -> E::G2 {
        E::g2_from_jacobian_limbs(l)
    }
    fn from_xyzz(l: &[u64]) -> E::G2 {
        E::g2_from_xyzz_limbs(l)
    }
}
