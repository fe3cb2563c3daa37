//! [`GpuFixedBase`]: the fixed-base multiplications of `zkpipe setup --dev --backend cuda`
//! (zkpipe-core's [`FixedBase`]) on one GPU. A dev key's points are sᵢ·G for millions of
//! scalars and one generator per group; the GPU sums each scalar's bytes' entries of a
//! window table of G (row w: d·2^(8w)·G for d < 256, made here on the host) in one thread
//! per G1 scalar and two lanes per G2 scalar, as sppark's Fp2 spans two (`cuda/setup.cuh`),
//! and makes them affine there, one inversion a point, in the key file's layout: the host
//! only copies bytes (lab 043o: until then the host made them affine, in batches).
//! The points equal the CPU's ([`zkpipe_core::setup::CpuFixedBase`]), so the key's bytes do
//! too. All six sets run here, G1's five and [B]₂ (G2).

use crate::enabled::curve::{GpuCurve, GpuGroup, G1, G2};
use crate::enabled::memory::{DeviceBuf, PinnedBuf};
use crate::enabled::msm::Resident;
use crate::enabled::runtime::{check, check_device};
use crate::CudaError;
use ark_ec::{AdditiveGroup, CurveGroup, PrimeGroup};
use ark_ff::PrimeField;
use rayon::prelude::*;
use std::ffi::c_void;
use std::sync::Mutex;
use zkpipe_core::setup::{point_bytes, FixedBase};
use zkpipe_core::Curve;

/// Bits per window of the table (`ZKP_FB_WBITS` in `cuda/setup.cuh`).
const WBITS: u32 = 8;

/// Scalars per call: a call's buffers (pinned and on the device) hold this many scalars
/// and G2 points, 384 MiB of xyzz points on BLS12-381 (on the device only) and 192 MiB of
/// affine ones.
const CHUNK: usize = 1 << 20;

/// A dev key's fixed-base multiplications on GPU `gpu`: the generators' window tables
/// there, and one call's buffers (made once: pinning hundreds of MiB per call would cost
/// more than the call).
pub struct GpuFixedBase<E: Curve + GpuCurve> {
    gpu: usize,
    g1: DeviceBuf,
    g2: DeviceBuf,
    bufs: Mutex<Buffers>,
    _curve: std::marker::PhantomData<E>,
}

/// A call's buffers: its scalars in and its points out through `staging` (pinned); on the
/// device the scalars, the sums (xyzz) and the points (affine, in file layout).
struct Buffers {
    staging: PinnedBuf,
    scalars: DeviceBuf,
    xyzz: DeviceBuf,
    points: DeviceBuf,
}

/// Bytes of one xyzz point of group `G` as the device writes it (four coordinates).
fn xyzz_bytes<E: GpuCurve, G: GpuGroup<E>>() -> usize {
    4 * G::coord_words() * 8
}

impl<E: Curve + GpuCurve> GpuFixedBase<E> {
    /// The generators' tables, made on the host and uploaded to GPU `gpu`, and the
    /// buffers of a call.
    pub fn new(gpu: usize) -> Result<Self, CudaError> {
        check_device(gpu)?;
        let scalar = std::mem::size_of::<E::ScalarField>();
        let affine = Resident::<E, G2>::device_point_bytes();
        Ok(Self {
            gpu,
            g1: table::<E, G1>(E::G1::generator(), gpu)?,
            g2: table::<E, G2>(E::G2::generator(), gpu)?,
            _curve: std::marker::PhantomData,
            bufs: Mutex::new(Buffers {
                staging: PinnedBuf::new(CHUNK * scalar.max(affine))?,
                scalars: DeviceBuf::new(gpu, CHUNK * scalar)?,
                xyzz: DeviceBuf::new(gpu, CHUNK * xyzz_bytes::<E, G2>())?,
                points: DeviceBuf::new(gpu, CHUNK * affine)?,
            }),
        })
    }

    /// sᵢ·G for `scalars` against `table` (group `G`'s) into `out`, affine in file
    /// layout (the device writes the file's bytes: Montgomery limbs, the identity as
    /// zeros), [`CHUNK`] at a time.
    fn run<G: GpuGroup<E>>(
        &self,
        table: &DeviceBuf,
        scalars: &[E::ScalarField],
        out: &mut [u8],
    ) -> Result<(), CudaError> {
        let mut bufs = self.bufs.lock().unwrap_or_else(|e| e.into_inner());
        let Buffers {
            staging,
            scalars: on_device,
            xyzz,
            points,
        } = &mut *bufs;
        let (point, scalar) = (
            Resident::<E, G>::device_point_bytes(),
            std::mem::size_of::<E::ScalarField>(),
        );
        for (chunk, dst) in scalars.chunks(CHUNK).zip(out.chunks_mut(CHUNK * point)) {
            let n = chunk.len();
            let staged = staging.stage(0, chunk) as *const u8;
            // SAFETY: `staged` holds the chunk's bytes, at most CHUNK scalars (the
            // buffer's size).
            unsafe { on_device.upload_raw(staged, n * scalar)? };
            // SAFETY: device buffers on `self.gpu` holding n scalars (arkworks'
            // Montgomery limbs, as the kernel reads them), room for n xyzz and n affine
            // points of the group, and the group's table.
            check(unsafe {
                (G::fns().fixed_base)(
                    points.device_ptr(0) as *mut c_void,
                    xyzz.device_ptr(0) as *mut c_void,
                    on_device.device_ptr(0) as *const c_void,
                    table.device_ptr(0) as *const c_void,
                    n,
                    self.gpu as i32,
                )
            })?;
            // SAFETY: `points` holds n points of `point` bytes, which fit the staging
            // buffer (sized for CHUNK of them).
            unsafe { staging.download_raw(0, points.device_ptr(0), n * point)? };
            // SAFETY: the staging buffer now holds those n·point bytes.
            let bytes = unsafe { std::slice::from_raw_parts(staging.as_ptr(), n * point) };
            // In parallel: the first touch of `out`'s fresh pages is most of the copy.
            const PIECE: usize = 1 << 20;
            dst.par_chunks_mut(PIECE)
                .zip(bytes.par_chunks(PIECE))
                .for_each(|(d, s)| d.copy_from_slice(s));
        }
        Ok(())
    }
}

impl<E: Curve + GpuCurve> FixedBase<E> for GpuFixedBase<E> {
    fn encode(
        &self,
        scalars: &[E::ScalarField],
        g2: bool,
        out: &mut [u8],
    ) -> Result<(), zkpipe_core::Error> {
        let point = point_bytes::<E>(g2);
        if out.len() != scalars.len() * point {
            return Err(zkpipe_core::Error::InvalidKey(format!(
                "room for {} points for {} scalars",
                out.len() / point,
                scalars.len()
            )));
        }
        match g2 {
            true => self.run::<G2>(&self.g2, scalars, out),
            false => self.run::<G1>(&self.g1, scalars, out),
        }
        .map_err(|e| e.on_gpu(self.gpu))
    }

    fn chunk(&self) -> usize {
        CHUNK
    }
}

/// The window table of `generator` on GPU `gpu`: ⌈bits / 8⌉ rows of 256 affine points,
/// entry d of row w d·2^(8w)·G (the identity, d = 0, as (0, 0): the device's infinity),
/// packed as the device holds points.
fn table<E: Curve + GpuCurve, G: GpuGroup<E>>(
    generator: G::Point,
    gpu: usize,
) -> Result<DeviceBuf, CudaError>
where
    G::Point: CurveGroup<Affine = G::Affine>,
{
    let rows = E::ScalarField::MODULUS_BIT_SIZE.div_ceil(WBITS) as usize;
    let row = 1usize << WBITS;
    let mut points = Vec::with_capacity(rows * row);
    let mut base = generator;
    for _ in 0..rows {
        let mut entry = G::Point::ZERO;
        for _ in 0..row {
            points.push(entry);
            entry += base;
        }
        base = entry; // 256·base: the next row's 2^8 step.
    }
    let affine = G::Point::normalize_batch(&points);
    let bytes = affine.len() * Resident::<E, G>::device_point_bytes();
    let mut staging = PinnedBuf::new(bytes)?;
    // SAFETY: the whole new buffer, ours alone.
    Resident::<E, G>::pack(&affine, unsafe {
        std::slice::from_raw_parts_mut(staging.ptr_at(0), bytes)
    });
    let mut on_device = DeviceBuf::new(gpu, bytes)?;
    // SAFETY: the staging buffer holds `bytes` packed points.
    unsafe { on_device.upload_raw(staging.ptr_at(0), bytes)? };
    Ok(on_device)
}
