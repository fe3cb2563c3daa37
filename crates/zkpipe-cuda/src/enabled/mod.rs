//! The real GPU paths (feature `cuda`): safe wrappers over the shims in `cuda/`.

mod backend;
mod ffi;

pub use backend::CudaBackend;

use crate::{CudaError, DeviceInfo};
use ark_ec::pairing::Pairing;
use ark_ec::short_weierstrass::{Projective, SWCurveConfig};
use ark_ec::CurveGroup;
use ark_ff::{AdditiveGroup, BigInt, FftField, Field, Fp, MontBackend, MontConfig, PrimeField};
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::Mutex;
use zkpipe_core::key::Csr;

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

fn check_rt(code: i32, what: &str) -> Result<(), CudaError> {
    if code == 0 {
        Ok(())
    } else {
        Err(CudaError::Device {
            code,
            message: format!("{what} failed"),
        })
    }
}

/// Number of CUDA devices this process can use (0 when there is no driver or device).
pub fn device_count() -> usize {
    // SAFETY: plain runtime query.
    unsafe { ffi::zkp_device_count() }.max(0) as usize
}

/// Device `device`'s name and memory, or [`CudaError::NoDevice`].
pub fn device_info(device: usize) -> Result<DeviceInfo, CudaError> {
    check_device(device)?;
    let dev = device as i32;
    let (mut free, mut total) = (0usize, 0usize);
    let mut name = [0u8; 256];
    // SAFETY: out-pointers to live locals; the name buffer's length is passed.
    unsafe {
        check_rt(
            ffi::zkp_device_memory(dev, &mut free, &mut total),
            "cudaMemGetInfo",
        )?;
        check_rt(
            ffi::zkp_device_name(dev, name.as_mut_ptr() as *mut _, name.len()),
            "cudaGetDeviceProperties",
        )?;
    }
    let len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    Ok(DeviceInfo {
        name: String::from_utf8_lossy(&name[..len]).into_owned(),
        free_bytes: free,
        total_bytes: total,
    })
}

/// [`CudaError::NoDevice`] without GPUs, [`CudaError::NoSuchDevice`] for an index beyond them.
fn check_device(device: usize) -> Result<(), CudaError> {
    match device_count() {
        0 => Err(CudaError::NoDevice),
        count if device >= count => Err(CudaError::NoSuchDevice {
            index: device,
            count,
        }),
        _ => Ok(()),
    }
}

/// Memory of our own on one GPU (e.g. a proof's witness scalars, uploaded once and read by
/// several MSMs there).
pub struct DeviceBuf {
    ptr: *mut c_void,
    bytes: usize,
    device: i32,
}

// SAFETY: device memory, not tied to a host thread; writes go through &mut self.
unsafe impl Send for DeviceBuf {}
unsafe impl Sync for DeviceBuf {}

impl DeviceBuf {
    /// `bytes` of device memory on `device` (contents unspecified).
    pub fn new(device: usize, bytes: usize) -> Result<Self, CudaError> {
        check_device(device)?;
        let mut p: *mut c_void = std::ptr::null_mut();
        let dev = device as i32;
        // SAFETY: out-pointer to a live local.
        check_rt(
            unsafe { ffi::zkp_device_alloc(dev, &mut p, bytes.max(1)) },
            "cudaMalloc",
        )?;
        Ok(Self {
            ptr: p,
            bytes,
            device: dev,
        })
    }

    /// Copies `src` (pinned memory for full speed) to the start of the buffer; returns
    /// when the copy is done.
    ///
    /// # Safety
    /// `src` must be valid for `bytes` bytes.
    pub unsafe fn upload_raw(&mut self, src: *const u8, bytes: usize) -> Result<(), CudaError> {
        assert!(bytes <= self.bytes, "device buffer too small");
        check_rt(
            ffi::zkp_device_upload(self.device, self.ptr, src as *const c_void, bytes),
            "cudaMemcpy",
        )
    }

    /// The device address at byte `offset` (for kernels reading the buffer).
    pub fn device_ptr(&self, offset: usize) -> *const u8 {
        assert!(offset <= self.bytes);
        (self.ptr as *const u8).wrapping_add(offset)
    }
}

impl Drop for DeviceBuf {
    fn drop(&mut self) {
        // SAFETY: allocated by zkp_device_alloc on this device, freed once.
        unsafe { ffi::zkp_device_free(self.device, self.ptr) }
    }
}

/// Page-locked, portable host memory (`cudaHostAlloc`): what every transfer to and from
/// the GPU goes through, because pageable copies are 20–50× slower on the GPU machine.
pub struct PinnedBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: plain host memory owned by this value.
unsafe impl Send for PinnedBuf {}
unsafe impl Sync for PinnedBuf {}

impl PinnedBuf {
    /// `bytes` of pinned memory (contents unspecified).
    pub fn new(bytes: usize) -> Result<Self, CudaError> {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: out-pointer to a live local.
        check_rt(
            unsafe { ffi::zkp_pinned_alloc(&mut p, bytes.max(1)) },
            "cudaHostAlloc",
        )?;
        Ok(Self {
            ptr: p as *mut u8,
            len: bytes,
        })
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `src` to the start of the buffer (in parallel) and returns its pinned copy.
    /// `T` must be plain data (field elements, integers).
    pub fn stage<T: Copy + Send + Sync>(&mut self, offset: usize, src: &[T]) -> *const T {
        let bytes = std::mem::size_of_val(src);
        assert!(
            offset + bytes <= self.len,
            "pinned staging buffer too small"
        );
        // SAFETY: the destination range is inside the allocation (checked above) and does
        // not overlap `src` (pinned memory is ours alone); T is Copy plain data.
        let dst =
            unsafe { std::slice::from_raw_parts_mut(self.ptr.add(offset) as *mut T, src.len()) };
        parallel_copy(dst, src);
        dst.as_ptr()
    }

    /// The `n` values of `T` at byte `offset`, copied out (in parallel) into `dst`.
    pub fn unstage<T: Copy + Send + Sync>(&self, offset: usize, dst: &mut [T]) {
        assert!(offset + std::mem::size_of_val(dst) <= self.len);
        // SAFETY: inside the allocation, initialized by the device before this call.
        let src =
            unsafe { std::slice::from_raw_parts(self.ptr.add(offset) as *const T, dst.len()) };
        parallel_copy(dst, src);
    }

    /// Raw pointer at byte `offset`.
    pub fn ptr_at(&mut self, offset: usize) -> *mut u8 {
        assert!(offset <= self.len);
        // SAFETY: within the allocation.
        unsafe { self.ptr.add(offset) }
    }
}

fn parallel_copy<T: Copy + Send + Sync>(dst: &mut [T], src: &[T]) {
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 14;
    dst.par_chunks_mut(CHUNK)
        .zip(src.par_chunks(CHUNK))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

impl Drop for PinnedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated by zkp_pinned_alloc, freed once.
        unsafe { ffi::zkp_pinned_free(self.ptr as *mut c_void) }
    }
}

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
    /// The result type.
    type Point: CurveGroup;
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

/// Points uploaded to the GPU once, for many MSMs. One sppark MSM at a time runs per set
/// (an internal lock), since sppark's `msm_t` owns one set of buckets; batched MSMs
/// ([`Self::batch_msm`]) bring their own scratch and run alongside.
pub struct Resident<E: GpuCurve, G: GpuGroup<E>> {
    handle: ffi::SetHandle,
    /// Held around sppark's MSMs, which use the set's one bucket array; batched MSMs
    /// bring their own scratch and do not take it.
    sppark: Mutex<()>,
    len: usize,
    pad: usize,
    device: i32,
    _curve: PhantomData<(E, G)>,
}

/// Resident G1 points.
pub type ResidentG1<E> = Resident<E, G1>;
/// Resident G2 points.
pub type ResidentG2<E> = Resident<E, G2>;

// SAFETY: sppark's MSM state is only used under `sppark`; batched MSMs only read the
// resident points; the device memory is not tied to a host thread.
unsafe impl<E: GpuCurve, G: GpuGroup<E>> Send for Resident<E, G> {}
unsafe impl<E: GpuCurve, G: GpuGroup<E>> Sync for Resident<E, G> {}

impl<E: GpuCurve, G: GpuGroup<E>> Resident<E, G> {
    /// Uploads `points` (arkworks affine points, read with their stride) to GPU `device`.
    pub fn upload(points: &[G::Affine], device: usize) -> Result<Self, CudaError> {
        Self::upload_padded(points, 0, device)
    }

    /// As [`Self::upload`], after `pad` points at infinity, so that the set lines up
    /// with a scalar vector of which `points` multiply the suffix (the C query and w).
    /// Single MSMs ([`Self::msm`] and the like) see only `points`.
    pub fn upload_padded(
        points: &[G::Affine],
        pad: usize,
        device: usize,
    ) -> Result<Self, CudaError> {
        check_device(device)?;
        let dev = device as i32;
        let mut handle: ffi::SetHandle = std::ptr::null_mut();
        // SAFETY: `points` is a live slice of `len` elements of `size_of` bytes each, whose
        // leading words are x, y in Montgomery form (arkworks' affine layout, infinity as
        // (0, 0)); the shim copies them to the device before returning.
        check(unsafe {
            (G::fns().new)(
                &mut handle,
                points.as_ptr() as *const c_void,
                points.len(),
                std::mem::size_of::<G::Affine>(),
                pad,
                dev,
            )
        })?;
        Ok(Self {
            handle,
            sppark: Mutex::new(()),
            len: points.len(),
            pad,
            device: dev,
            _curve: PhantomData,
        })
    }

    /// Number of resident points (without padding).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no points are resident.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Σ scalarsᵢ·pointsᵢ over the first `n` points. `scalars` are 4-word little-endian
    /// integers in standard form (or Montgomery form with `mont`), in host memory (pinned
    /// for full transfer speed).
    pub fn msm_raw(
        &self,
        scalars: *const [u64; 4],
        n: usize,
        mont: bool,
    ) -> Result<G::Point, CudaError> {
        self.msm_at(scalars, n, mont, false)
    }

    /// As [`Self::msm_raw`], with the `n` scalars already in this GPU's memory.
    ///
    /// # Safety
    /// `scalars` must be a device address on this set's GPU, valid for `n` scalars, and
    /// not written while the call runs.
    pub unsafe fn msm_device(
        &self,
        scalars: *const [u64; 4],
        n: usize,
        mont: bool,
    ) -> Result<G::Point, CudaError> {
        self.msm_at(scalars, n, mont, true)
    }

    fn msm_at(
        &self,
        scalars: *const [u64; 4],
        n: usize,
        mont: bool,
        on_device: bool,
    ) -> Result<G::Point, CudaError> {
        if n > self.len {
            return Err(CudaError::Length(format!(
                "{n} scalars for {} resident points",
                self.len
            )));
        }
        let mut out = vec![0u64; 3 * G::coord_words()];
        let _sppark = self.sppark.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: `out` has room for one Jacobian point; `scalars` addresses `n` 4-word
        // integers in host or (on_device) this GPU's memory (the callers' contracts); the
        // handle is live and sppark's state is used under the lock.
        check(unsafe {
            (G::fns().msm)(
                self.handle,
                out.as_mut_ptr() as *mut c_void,
                scalars as *const c_void,
                n,
                mont,
                on_device,
            )
        })?;
        Ok(G::from_jacobian(&out))
    }

    /// The k MSMs of `plan` against these points (padding included, so the plan's
    /// length must be pad + len), in the plan's order.
    pub fn batch_msm(&self, plan: &BatchPlan<E>) -> Result<Vec<G::Point>, CudaError> {
        if plan.n != self.pad + self.len || plan.device != self.device {
            return Err(CudaError::Length(format!(
                "a batch plan of {} scalars on GPU {} for {} points on GPU {}",
                plan.n,
                plan.device,
                self.pad + self.len,
                self.device
            )));
        }
        let words = 4 * G::coord_words();
        let mut out = vec![0u64; plan.k * words];
        // SAFETY: `out` has room for k xyzz points; the plan and the set are live and on
        // the same GPU (checked); the call only reads the resident points.
        check(unsafe {
            (G::fns().batch)(self.handle, plan.handle, out.as_mut_ptr() as *mut c_void)
        })?;
        Ok(out.chunks(words).map(G::from_xyzz).collect())
    }

    /// Σ scalarsᵢ·pointsᵢ (standard-form scalars, at most as many as points). A scalar
    /// ≥ r is refused ([`CudaError::ScalarOutOfRange`]).
    pub fn msm(
        &self,
        scalars: &[<E::ScalarField as PrimeField>::BigInt],
    ) -> Result<G::Point, CudaError> {
        check_scalars::<E>(scalars)?;
        self.msm_raw(scalars.as_ptr() as *const [u64; 4], scalars.len(), false)
    }
}

fn check_scalars<E: GpuCurve>(
    scalars: &[<E::ScalarField as PrimeField>::BigInt],
) -> Result<(), CudaError> {
    use rayon::prelude::*;
    assert_eq!(std::mem::size_of_val(scalars), 32 * scalars.len());
    let r = E::ScalarField::MODULUS;
    match scalars.par_iter().position_first(|s| *s >= r) {
        Some(index) => Err(CudaError::ScalarOutOfRange { index }),
        None => Ok(()),
    }
}

impl<E: GpuCurve, G: GpuGroup<E>> Drop for Resident<E, G> {
    fn drop(&mut self) {
        let h = self.handle;
        // SAFETY: the handle came from G's `new` and is dropped once.
        unsafe { (G::fns().drop)(h) }
    }
}

/// The bucket digits of k scalar vectors of one length, sorted on the GPU once and shared
/// by every point set they multiply ([`Resident::batch_msm`]): the batched MSM's plan.
pub struct BatchPlan<E: GpuCurve> {
    handle: ffi::PlanHandle,
    k: usize,
    n: usize,
    device: i32,
    _curve: PhantomData<E>,
}

// SAFETY: read-only device data once built.
unsafe impl<E: GpuCurve> Send for BatchPlan<E> {}
unsafe impl<E: GpuCurve> Sync for BatchPlan<E> {}

impl<E: GpuCurve> BatchPlan<E> {
    /// Plans MSMs of the vectors at `vectors` (device addresses on GPU `device`, n
    /// scalars each, standard form or Montgomery with `mont`).
    ///
    /// # Safety
    /// Every address must be device memory on `device` valid for `n` scalars (each < r),
    /// not written while the call runs. (The plan keeps no reference to them.)
    pub unsafe fn new(
        vectors: &[*const [u64; 4]],
        n: usize,
        mont: bool,
        device: usize,
    ) -> Result<Self, CudaError> {
        check_device(device)?;
        let too_big = || CudaError::Length(format!("a batch of {} × {n} scalars", vectors.len()));
        let k = u32::try_from(vectors.len()).map_err(|_| too_big())?;
        let n32 = u32::try_from(n).map_err(|_| too_big())?;
        let ptrs: Vec<*const c_void> = vectors.iter().map(|&p| p as *const c_void).collect();
        let mut handle: ffi::PlanHandle = std::ptr::null_mut();
        check((E::fns().plan_new)(
            &mut handle,
            ptrs.as_ptr(),
            k,
            n32,
            mont,
            device as i32,
        ))?;
        Ok(Self {
            handle,
            k: vectors.len(),
            n,
            device: device as i32,
            _curve: PhantomData,
        })
    }

    /// Number of scalar vectors.
    pub fn len(&self) -> usize {
        self.k
    }

    /// True for a plan of no vectors (never made).
    pub fn is_empty(&self) -> bool {
        self.k == 0
    }
}

impl<E: GpuCurve> Drop for BatchPlan<E> {
    fn drop(&mut self) {
        // SAFETY: made by plan_new, dropped once, after every run that used it returned.
        unsafe { (E::fns().plan_drop)(self.handle) }
    }
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
    // SAFETY: as in Resident::upload and Resident::msm_raw.
    check(unsafe {
        (E::fns().g1_oneshot)(
            out.as_mut_ptr() as *mut c_void,
            points.as_ptr() as *const c_void,
            points.len(),
            scalars.as_ptr() as *const c_void,
            std::mem::size_of::<E::G1Affine>(),
        )
    })?;
    Ok(E::g1_from_jacobian_limbs(&out))
}

/// The quotient stage on the GPU for one domain size: device buffers allocated once.
pub struct GpuQuotient<E: GpuCurve> {
    handle: Mutex<ffi::QuotientHandle>,
    lg_n: u32,
    k: u64,
    _curve: PhantomData<E>,
}

// SAFETY: as for Resident.
unsafe impl<E: GpuCurve> Send for GpuQuotient<E> {}
unsafe impl<E: GpuCurve> Sync for GpuQuotient<E> {}

impl<E: GpuCurve> GpuQuotient<E> {
    /// Buffers for a domain of 2^lg_n whose generator is `omega` (snarkjs's ω_n), with
    /// h evaluated on the coset `shift`·⟨ω_n⟩.
    pub fn new(
        lg_n: u32,
        omega: E::ScalarField,
        shift: E::ScalarField,
        device: usize,
    ) -> Result<Self, CudaError> {
        check_device(device)?;
        if lg_n == 0 {
            return Err(CudaError::Length("quotient domain of size 1".into()));
        }
        let k = sppark_exponent::<E::ScalarField>(lg_n, omega).ok_or_else(|| {
            CudaError::Length(format!(
                "ω is not a generator of the 2^{lg_n} roots of unity"
            ))
        })?;
        let powers = powers_bitrev(lg_n, shift);
        let mut handle: ffi::QuotientHandle = std::ptr::null_mut();
        // SAFETY: out-pointer to a live local; `powers` holds n field elements, copied to
        // the device before the call returns.
        check(unsafe {
            (E::fns().quotient_new)(
                &mut handle,
                lg_n,
                powers.as_ptr() as *const c_void,
                device as i32,
            )
        })?;
        Ok(Self {
            handle: Mutex::new(handle),
            lg_n,
            k,
            _curve: PhantomData,
        })
    }

    /// Domain size.
    pub fn size(&self) -> usize {
        1 << self.lg_n
    }

    /// h = a·b − c on the coset, from a, b, c on the domain (all n field elements in
    /// Montgomery form; pass pinned memory for full speed), or from where
    /// [`Self::reduce_raw`] left them when all three are null. `h` may alias `a`, or be
    /// null to leave h on the GPU only, at [`Self::h_on_device`].
    ///
    /// # Safety
    /// Each non-null pointer must be valid for n field elements.
    pub unsafe fn run_raw(
        &self,
        a: *const E::ScalarField,
        b: *const E::ScalarField,
        c: *const E::ScalarField,
        h: *mut E::ScalarField,
    ) -> Result<(), CudaError> {
        let handle = self.handle.lock().unwrap_or_else(|e| e.into_inner());
        check((E::fns().quotient_run)(
            *handle,
            a as *const c_void,
            b as *const c_void,
            c as *const c_void,
            h as *mut c_void,
            self.k,
        ))
    }
}

impl<E: GpuCurve> GpuQuotient<E> {
    /// a = A·w, b = B·w, c = a∘b on the GPU into this quotient's buffers, for a following
    /// [`Self::run_raw`] with null inputs. `w` is the key's witness in this GPU's memory,
    /// as standard-form scalars (what the MSMs read).
    ///
    /// # Safety
    /// `w` must be a device address on this quotient's GPU valid for as many scalars as
    /// the matrices have columns, not written while the call runs.
    pub unsafe fn reduce_raw(
        &self,
        matrices: &GpuMatrices<E>,
        w: *const [u64; 4],
    ) -> Result<(), CudaError> {
        if matrices.rows != self.size() {
            return Err(CudaError::Length(format!(
                "matrices of {} rows for a quotient of domain {}",
                matrices.rows,
                self.size()
            )));
        }
        let handle = self.handle.lock().unwrap_or_else(|e| e.into_inner());
        check((E::fns().reduce_run)(
            *handle,
            matrices.handle,
            w as *const c_void,
        ))
    }

    /// The device address where the last run left h (n Montgomery field elements),
    /// valid until the next run or the drop.
    pub fn h_on_device(&self) -> *const E::ScalarField {
        let handle = self.handle.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: a live handle; the call only reads its buffer address.
        unsafe { (E::fns().quotient_h)(*handle) as *const E::ScalarField }
    }
}

impl<E: GpuCurve> Drop for GpuQuotient<E> {
    fn drop(&mut self) {
        let h = *self.handle.get_mut().unwrap_or_else(|e| e.into_inner());
        // SAFETY: created by quotient_new, dropped once.
        unsafe { (E::fns().quotient_drop)(h) }
    }
}

/// A key's A and B matrices resident on one GPU, for [`GpuQuotient::reduce_raw`].
pub struct GpuMatrices<E: GpuCurve> {
    handle: ffi::MatricesHandle,
    rows: usize,
    _curve: PhantomData<E>,
}

// SAFETY: read-only device data once uploaded.
unsafe impl<E: GpuCurve> Send for GpuMatrices<E> {}
unsafe impl<E: GpuCurve> Sync for GpuMatrices<E> {}

impl<E: GpuCurve> GpuMatrices<E> {
    /// Uploads `a` and `b` (the same number of rows; values in Montgomery form) to GPU
    /// `device`.
    pub fn upload(
        a: &Csr<E::ScalarField>,
        b: &Csr<E::ScalarField>,
        device: usize,
    ) -> Result<Self, CudaError> {
        check_device(device)?;
        let rows = a.rows();
        let well_formed = |m: &Csr<E::ScalarField>| {
            m.rows() == rows
                && m.row_starts.last().map(|&e| e as usize) == Some(m.cols.len())
                && m.cols.len() == m.vals.len()
        };
        if !well_formed(a) || !well_formed(b) {
            return Err(CudaError::Length(
                "A and B differ in rows, or a matrix's arrays disagree".into(),
            ));
        }
        let rows32 = u32::try_from(rows)
            .map_err(|_| CudaError::Length(format!("matrices of {rows} rows")))?;
        let mut handle: ffi::MatricesHandle = std::ptr::null_mut();
        // SAFETY: out-pointer to a live local; each array is a live slice of the lengths
        // checked above (rows + 1 offsets ending at the entry count), copied to the device
        // before the call returns. Field elements are their Montgomery limbs.
        check(unsafe {
            (E::fns().csr_new)(
                &mut handle,
                rows32,
                a.row_starts.as_ptr(),
                a.cols.as_ptr(),
                a.vals.as_ptr() as *const c_void,
                b.row_starts.as_ptr(),
                b.cols.as_ptr(),
                b.vals.as_ptr() as *const c_void,
                device as i32,
            )
        })?;
        Ok(Self {
            handle,
            rows,
            _curve: PhantomData,
        })
    }
}

impl<E: GpuCurve> Drop for GpuMatrices<E> {
    fn drop(&mut self) {
        // SAFETY: created by csr_new, dropped once.
        unsafe { (E::fns().csr_drop)(self.handle) }
    }
}

/// shift^brev(p) for p in 0..2^lg_n: the coset scaling in the order the GS iNTT leaves
/// the coefficients in.
fn powers_bitrev<F: Field>(lg_n: u32, shift: F) -> Vec<F> {
    use rayon::prelude::*;
    let n = 1usize << lg_n;
    let mut powers = vec![F::ONE; n];
    powers
        .par_chunks_mut(1 << 12)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut x = shift.pow([(i << 12) as u64]);
            for p in chunk {
                *p = x;
                x *= shift;
            }
        });
    let brev = |p: usize| p.reverse_bits() >> (usize::BITS - lg_n);
    (0..n).into_par_iter().map(|p| powers[brev(p)]).collect()
}

/// k with ω_n^k = sppark's root of unity of order n, which is arkworks'
/// `TWO_ADIC_ROOT_OF_UNITY` squared down to order n (checked against sppark's tables for
/// both curves). Pohlig–Hellman in a group of order 2^lg_n: one bit of k per step.
fn sppark_exponent<F: FftField>(lg_n: u32, omega: F) -> Option<u64> {
    let s = F::TWO_ADICITY;
    if lg_n > s || lg_n > 63 {
        return None;
    }
    let mut target = F::TWO_ADIC_ROOT_OF_UNITY;
    for _ in lg_n..s {
        target.square_in_place();
    }
    let omega_inv = omega.inverse()?;
    let mut k = 0u64;
    for i in 0..lg_n {
        let mut g = target * omega_inv.pow([k]);
        for _ in 0..(lg_n - 1 - i) {
            g.square_in_place();
        }
        if !g.is_one() {
            k |= 1 << i;
        }
    }
    (omega.pow([k]) == target).then_some(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponent_is_one_when_roots_agree() {
        let w = ark_bn254::Fr::TWO_ADIC_ROOT_OF_UNITY.pow([1u64 << 8]);
        assert_eq!(sppark_exponent(20, w), Some(1));
        let w3 = w.pow([3u64]);
        assert_eq!(w3.pow([sppark_exponent(20, w3).unwrap()]), w);
    }
}
