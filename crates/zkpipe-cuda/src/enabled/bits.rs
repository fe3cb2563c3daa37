//! The bit path of a proof's w MSMs (A, B₁, [B]₂ and C; `cuda/bits.cuh`). A circom
//! witness is mostly 0s and 1s (a SHA-256 circuit's all but a handful of its values,
//! lab/experiments/043b-sha256-values.md), while sppark's Pippenger, which a large key's
//! lone proof and a streamed key's chunks run, costs a full-size vector's work whatever
//! the values. So, where a witness has at most [`REST_MAX`] values other than 0 and 1:
//!
//! - the GPU splits it once ([`WitnessBits::split`]): a bitmap of its 1s, which stays
//!   there, and the few others, which come back to the host;
//! - each w set's MSM is then the sum of its points whose bit is set, on the GPU
//!   ([`crate::Resident::bits_sum`], per chunk where the key streams), plus the others'
//!   multiples on the host ([`WitnessBits::rest_sum`], an MSM of a handful of points).
//!
//! The sums are the same points as sppark's; a witness with more other values takes
//! sppark's MSMs as before. H's scalars are full-size: H keeps sppark's.

use crate::enabled::curve::{GpuCurve, GpuGroup};
use crate::enabled::memory::DeviceBuf;
use crate::enabled::msm::Resident;
use crate::enabled::runtime::check;
use crate::CudaError;
use ark_ec::VariableBaseMSM;
use ark_ff::Field;
use std::ffi::c_void;
use zkpipe_core::msm::ScalarInt;

/// The most values other than 0 and 1 a witness may hold for the bit path: their
/// multiples are the host's work, one MSM of at most this many points per set.
pub(crate) const REST_MAX: usize = 1 << 12;

/// A witness on the GPU split for the bit path: its bitmap of 1s (a proof's buffer, see
/// [`crate::shape::bits_bytes`]), and its other non-zero values (index, standard-form
/// value), few enough for the host.
pub(crate) struct WitnessBits<'a, E: GpuCurve> {
    ones: &'a DeviceBuf,
    rest: Vec<(usize, ScalarInt<E>)>,
}

impl<'a, E: GpuCurve> WitnessBits<'a, E> {
    /// Splits the `n` scalars at `w` (standard form, or Montgomery with `mont`) on
    /// `gpu`, the bitmap into `ones`; `None` where more than [`REST_MAX`] of them are
    /// neither 0 nor 1 (the key's MSMs then take sppark's path).
    ///
    /// # Safety
    /// `w` must be device memory on `gpu` holding `n` scalars, not written while this
    /// runs; `ones` must be on `gpu`, and not written while the split is used.
    pub(crate) unsafe fn split(
        w: usize,
        n: usize,
        mont: bool,
        ones: &'a mut DeviceBuf,
        gpu: usize,
    ) -> Result<Option<Self>, CudaError> {
        const _: () = assert!(REST_MAX <= u32::MAX as usize);
        assert_eq!(std::mem::size_of::<ScalarInt<E>>(), 32);
        assert_eq!(std::mem::size_of::<E::ScalarField>(), 32);
        let mut count = 0u32;
        let mut idx = vec![0u32; REST_MAX];
        let mut vals = vec![[0u64; 4]; REST_MAX];
        let at = ones.device_ptr(0) as *mut u32;
        // 1 as w holds it: its Montgomery form (a field element's words, as the GPU reads
        // a Montgomery witness) or the integer 1.
        let one: [u64; 4] = match mont {
            // SAFETY: a scalar field element is its 4 Montgomery words (asserted above).
            true => unsafe { std::mem::transmute_copy(&E::ScalarField::ONE) },
            false => [1, 0, 0, 0],
        };
        // SAFETY: `w` and `ones` as the caller says (the shim checks that the bitmap has
        // the words n values need); `idx` and `vals` hold REST_MAX entries each, the cap
        // handed over; the values come back in standard form.
        check(unsafe {
            (E::fns().bits_split)(
                w as *const c_void,
                n,
                mont,
                one.as_ptr(),
                at,
                ones.len() / 4,
                REST_MAX as u32,
                &mut count,
                idx.as_mut_ptr(),
                vals.as_mut_ptr() as *mut c_void,
                gpu as i32,
            )
        })?;
        let count = count as usize;
        if count > REST_MAX {
            return Ok(None);
        }
        let rest = idx[..count]
            .iter()
            .zip(&vals[..count])
            // SAFETY: a scalar field's BigInt is its 4 little-endian words (asserted above).
            .map(|(&i, v)| (i as usize, unsafe { std::mem::transmute_copy(v) }))
            .collect();
        let ones = &*ones;
        Ok(Some(Self { ones, rest }))
    }

    /// The device address of the bitmap of 1s.
    pub(crate) fn ones(&self) -> usize {
        self.ones.device_ptr(0) as usize
    }

    /// Σ value·points[index − offset] over the other values whose index falls in
    /// `offset..offset + points.len()` (C's points start past the public inputs): the
    /// host's share of the set's MSM.
    pub(crate) fn rest_sum<G: GpuGroup<E>>(&self, points: &[G::Affine], offset: usize) -> G::Point {
        let (bases, scalars): (Vec<G::Affine>, Vec<ScalarInt<E>>) = self
            .rest
            .iter()
            .filter(|&&(i, _)| i >= offset && i - offset < points.len())
            .map(|&(i, s)| (points[i - offset], s))
            .unzip();
        G::Point::msm_bigint(&bases, &scalars)
    }
}

/// A resident w set's MSM by the bit path: the sum of its points whose bit is set, from
/// bit `offset` on (C's points start past the public inputs), on the GPU, plus the
/// host's share from `host` (the same points in the compiled key).
pub(crate) fn resident_sum<E: GpuCurve, G: GpuGroup<E>>(
    set: &Resident<E, G>,
    host: &[G::Affine],
    bits: &WitnessBits<'_, E>,
    offset: usize,
) -> Result<G::Point, CudaError> {
    // SAFETY: the bitmap covers the witness, which the set's points (from `offset` on)
    // do not outrun, and nothing writes it while the split lives.
    let on_gpu = unsafe { set.bits_sum(bits.ones(), 0, set.len(), offset)? };
    Ok(on_gpu + bits.rest_sum::<G>(host, offset))
}
