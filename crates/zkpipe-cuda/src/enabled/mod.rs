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

/// A curve whose MSMs and quotient NTTs run on the GPU: the per-curve C entry points.
#[allow(missing_docs, clippy::missing_safety_doc)]
pub trait GpuCurve: Pairing {
    /// 64-bit words per base-field element.
    const LIMBS: usize;
    #[doc(hidden)]
    unsafe fn g1_new(
        out: *mut ffi::MsmHandle,
        p: *const c_void,
        n: usize,
        sz: usize,
        dev: i32,
    ) -> sppark::Error;
    #[doc(hidden)]
    unsafe fn g1_drop(h: ffi::MsmHandle);
    #[doc(hidden)]
    unsafe fn g1_msm(
        h: ffi::MsmHandle,
        out: *mut c_void,
        s: *const c_void,
        n: usize,
        mont: bool,
        dev: i32,
        on_device: bool,
    ) -> sppark::Error;
    #[doc(hidden)]
    unsafe fn g1_oneshot(
        out: *mut c_void,
        p: *const c_void,
        n: usize,
        s: *const c_void,
        sz: usize,
    ) -> sppark::Error;
    #[doc(hidden)]
    unsafe fn g2_new(
        out: *mut ffi::MsmHandle,
        p: *const c_void,
        n: usize,
        sz: usize,
        dev: i32,
    ) -> sppark::Error;
    #[doc(hidden)]
    unsafe fn g2_drop(h: ffi::MsmHandle);
    #[doc(hidden)]
    unsafe fn g2_msm(
        h: ffi::MsmHandle,
        out: *mut c_void,
        s: *const c_void,
        n: usize,
        mont: bool,
        dev: i32,
        on_device: bool,
    ) -> sppark::Error;
    #[doc(hidden)]
    unsafe fn quotient_new(
        out: *mut ffi::QuotientHandle,
        lg_n: u32,
        powers: *const c_void,
        dev: i32,
    ) -> sppark::Error;
    #[doc(hidden)]
    unsafe fn quotient_drop(q: ffi::QuotientHandle);
    #[doc(hidden)]
    unsafe fn quotient_h(q: ffi::QuotientHandle) -> *const c_void;
    #[doc(hidden)]
    unsafe fn quotient_run(
        q: ffi::QuotientHandle,
        a: *const c_void,
        b: *const c_void,
        c: *const c_void,
        h: *mut c_void,
        k: u64,
    ) -> sppark::Error;
    #[doc(hidden)]
    fn g1_from_jacobian_limbs(limbs: &[u64]) -> Self::G1;
    #[doc(hidden)]
    fn g2_from_jacobian_limbs(limbs: &[u64]) -> Self::G2;
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

macro_rules! gpu_curve_impl {
    ($engine:ty, $m:ident, $limbs:expr, $g1_new:ident, $g1_drop:ident, $g1_msm:ident,
     $g1_oneshot:ident, $g2_new:ident, $g2_drop:ident, $g2_msm:ident,
     $q_new:ident, $q_drop:ident, $q_run:ident, $q_h:ident) => {
        impl GpuCurve for $engine {
            const LIMBS: usize = $limbs;
            unsafe fn g1_new(
                out: *mut ffi::MsmHandle,
                p: *const c_void,
                n: usize,
                sz: usize,
                dev: i32,
            ) -> sppark::Error {
                ffi::$g1_new(out, p, n, sz, dev)
            }
            unsafe fn g1_drop(h: ffi::MsmHandle) {
                ffi::$g1_drop(h)
            }
            unsafe fn g1_msm(
                h: ffi::MsmHandle,
                out: *mut c_void,
                s: *const c_void,
                n: usize,
                mont: bool,
                dev: i32,
                on_device: bool,
            ) -> sppark::Error {
                ffi::$g1_msm(h, out, s, n, mont, dev, on_device)
            }
            unsafe fn g1_oneshot(
                out: *mut c_void,
                p: *const c_void,
                n: usize,
                s: *const c_void,
                sz: usize,
            ) -> sppark::Error {
                ffi::$g1_oneshot(out, p, n, s, sz)
            }
            unsafe fn g2_new(
                out: *mut ffi::MsmHandle,
                p: *const c_void,
                n: usize,
                sz: usize,
                dev: i32,
            ) -> sppark::Error {
                ffi::$g2_new(out, p, n, sz, dev)
            }
            unsafe fn g2_drop(h: ffi::MsmHandle) {
                ffi::$g2_drop(h)
            }
            unsafe fn g2_msm(
                h: ffi::MsmHandle,
                out: *mut c_void,
                s: *const c_void,
                n: usize,
                mont: bool,
                dev: i32,
                on_device: bool,
            ) -> sppark::Error {
                ffi::$g2_msm(h, out, s, n, mont, dev, on_device)
            }
            unsafe fn quotient_new(
                out: *mut ffi::QuotientHandle,
                lg_n: u32,
                powers: *const c_void,
                dev: i32,
            ) -> sppark::Error {
                ffi::$q_new(out, lg_n, powers, dev)
            }
            unsafe fn quotient_drop(q: ffi::QuotientHandle) {
                ffi::$q_drop(q)
            }
            unsafe fn quotient_h(q: ffi::QuotientHandle) -> *const c_void {
                ffi::$q_h(q)
            }
            unsafe fn quotient_run(
                q: ffi::QuotientHandle,
                a: *const c_void,
                b: *const c_void,
                c: *const c_void,
                h: *mut c_void,
                k: u64,
            ) -> sppark::Error {
                ffi::$q_run(q, a, b, c, h, k)
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
        }
    };
}

gpu_curve_impl!(
    ark_bn254::Bn254,
    ark_bn254,
    4,
    zkp_g1_points_new_bn254,
    zkp_g1_points_drop_bn254,
    zkp_g1_msm_bn254,
    zkp_g1_msm_oneshot_bn254,
    zkp_g2_points_new_bn254,
    zkp_g2_points_drop_bn254,
    zkp_g2_msm_bn254,
    zkp_quotient_new_bn254,
    zkp_quotient_drop_bn254,
    zkp_quotient_run_bn254,
    zkp_quotient_h_bn254
);
gpu_curve_impl!(
    ark_bls12_381::Bls12_381,
    ark_bls12_381,
    6,
    zkp_g1_points_new_bls12_381,
    zkp_g1_points_drop_bls12_381,
    zkp_g1_msm_bls12_381,
    zkp_g1_msm_oneshot_bls12_381,
    zkp_g2_points_new_bls12_381,
    zkp_g2_points_drop_bls12_381,
    zkp_g2_msm_bls12_381,
    zkp_quotient_new_bls12_381,
    zkp_quotient_drop_bls12_381,
    zkp_quotient_run_bls12_381,
    zkp_quotient_h_bls12_381
);

/// Which group a resident point set is in.
pub trait GpuGroup<E: GpuCurve>: 'static {
    /// arkworks affine points (the upload format).
    type Affine: Copy + Send + Sync;
    /// The result type.
    type Point: CurveGroup;
    /// Words of one Jacobian result point.
    fn point_words() -> usize;
    #[doc(hidden)]
    unsafe fn points_new(
        out: *mut ffi::MsmHandle,
        p: *const c_void,
        n: usize,
        sz: usize,
        dev: i32,
    ) -> sppark::Error;
    #[doc(hidden)]
    unsafe fn drop(h: ffi::MsmHandle);
    #[doc(hidden)]
    unsafe fn msm(
        h: ffi::MsmHandle,
        out: *mut c_void,
        s: *const c_void,
        n: usize,
        mont: bool,
        dev: i32,
        on_device: bool,
    ) -> sppark::Error;
    #[doc(hidden)]
    fn from_limbs(l: &[u64]) -> Self::Point;
}

/// Marker for G1.
pub struct G1;
/// Marker for G2 (coordinates in the quadratic extension).
pub struct G2;

// G1 and G2 differ only in the curve's entry points they call and in the size of a point
// (3 coordinates of LIMBS words, or 3 of 2·LIMBS).
macro_rules! gpu_group_impl {
    ($group:ident, $affine:ident, $point:ident, $words:expr,
     $new:ident, $drop:ident, $msm:ident, $from_limbs:ident) => {
        impl<E: GpuCurve> GpuGroup<E> for $group {
            type Affine = E::$affine;
            type Point = E::$point;
            fn point_words() -> usize {
                $words * E::LIMBS
            }
            unsafe fn points_new(
                o: *mut ffi::MsmHandle,
                p: *const c_void,
                n: usize,
                sz: usize,
                dev: i32,
            ) -> sppark::Error {
                E::$new(o, p, n, sz, dev)
            }
            unsafe fn drop(h: ffi::MsmHandle) {
                E::$drop(h)
            }
            unsafe fn msm(
                h: ffi::MsmHandle,
                o: *mut c_void,
                s: *const c_void,
                n: usize,
                m: bool,
                dev: i32,
                on_device: bool,
            ) -> sppark::Error {
                E::$msm(h, o, s, n, m, dev, on_device)
            }
            fn from_limbs(l: &[u64]) -> E::$point {
                E::$from_limbs(l)
            }
        }
    };
}

gpu_group_impl!(
    G1,
    G1Affine,
    G1,
    3,
    g1_new,
    g1_drop,
    g1_msm,
    g1_from_jacobian_limbs
);
gpu_group_impl!(
    G2,
    G2Affine,
    G2,
    6,
    g2_new,
    g2_drop,
    g2_msm,
    g2_from_jacobian_limbs
);

/// Points uploaded to the GPU once, for many MSMs. One MSM at a time runs per set (an
/// internal lock), since sppark's `msm_t` owns one set of buckets.
pub struct Resident<E: GpuCurve, G: GpuGroup<E>> {
    handle: Mutex<ffi::MsmHandle>,
    len: usize,
    device: i32,
    _curve: PhantomData<(E, G)>,
}

/// Resident G1 points.
pub type ResidentG1<E> = Resident<E, G1>;
/// Resident G2 points.
pub type ResidentG2<E> = Resident<E, G2>;

// SAFETY: the handle is only used under the mutex; the device memory it owns is not tied
// to a host thread.
unsafe impl<E: GpuCurve, G: GpuGroup<E>> Send for Resident<E, G> {}
unsafe impl<E: GpuCurve, G: GpuGroup<E>> Sync for Resident<E, G> {}

impl<E: GpuCurve, G: GpuGroup<E>> Resident<E, G> {
    /// Uploads `points` (arkworks affine points, read with their stride) to GPU `device`.
    pub fn upload(points: &[G::Affine], device: usize) -> Result<Self, CudaError> {
        check_device(device)?;
        let dev = device as i32;
        let mut handle: ffi::MsmHandle = std::ptr::null_mut();
        // SAFETY: `points` is a live slice of `len` elements of `size_of` bytes each, whose
        // leading words are x, y in Montgomery form (arkworks' affine layout, infinity as
        // (0, 0)); the shim copies them to the device before returning.
        check(unsafe {
            G::points_new(
                &mut handle,
                points.as_ptr() as *const c_void,
                points.len(),
                std::mem::size_of::<G::Affine>(),
                dev,
            )
        })?;
        Ok(Self {
            handle: Mutex::new(handle),
            len: points.len(),
            device: dev,
            _curve: PhantomData,
        })
    }

    /// Number of resident points.
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
        let mut out = vec![0u64; G::point_words()];
        let handle = self.handle.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: `out` has room for one Jacobian point; `scalars` addresses `n` 4-word
        // integers in host or (on_device) this GPU's memory (the callers' contracts); the
        // handle is live and used under the lock.
        check(unsafe {
            G::msm(
                *handle,
                out.as_mut_ptr() as *mut c_void,
                scalars as *const c_void,
                n,
                mont,
                self.device,
                on_device,
            )
        })?;
        Ok(G::from_limbs(&out))
    }

    /// Σ scalarsᵢ·pointsᵢ (standard-form scalars, at most as many as points). A scalar
    /// ≥ r is refused ([`CudaError::ScalarOutOfRange`]).
    pub fn msm(
        &self,
        scalars: &[<E::ScalarField as PrimeField>::BigInt],
    ) -> Result<G::Point, CudaError> {
        use rayon::prelude::*;
        assert_eq!(std::mem::size_of_val(scalars), 32 * scalars.len());
        let r = E::ScalarField::MODULUS;
        if let Some(index) = scalars.par_iter().position_first(|s| *s >= r) {
            return Err(CudaError::ScalarOutOfRange { index });
        }
        self.msm_raw(scalars.as_ptr() as *const [u64; 4], scalars.len(), false)
    }
}

impl<E: GpuCurve, G: GpuGroup<E>> Drop for Resident<E, G> {
    fn drop(&mut self) {
        let h = *self.handle.get_mut().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the handle came from G::new and is dropped once.
        unsafe { G::drop(h) }
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
        E::g1_oneshot(
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
            E::quotient_new(
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
    /// Montgomery form; pass pinned memory for full speed). `h` may alias `a`, or be null
    /// to leave h on the GPU only, at [`Self::h_on_device`].
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
        check(E::quotient_run(
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
    /// The device address where the last run left h (n Montgomery field elements),
    /// valid until the next run or the drop.
    pub fn h_on_device(&self) -> *const E::ScalarField {
        let handle = self.handle.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: a live handle; the call only reads its buffer address.
        unsafe { E::quotient_h(*handle) as *const E::ScalarField }
    }
}

impl<E: GpuCurve> Drop for GpuQuotient<E> {
    fn drop(&mut self) {
        let h = *self.handle.get_mut().unwrap_or_else(|e| e.into_inner());
        // SAFETY: created by quotient_new, dropped once.
        unsafe { E::quotient_drop(h) }
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
