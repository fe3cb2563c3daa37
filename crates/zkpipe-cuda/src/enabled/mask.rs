//! Constant-work MSMs on the GPU by masking ([`DeviceMask`], the GPU's side of
//! `zkpipe_core::msm::mask`): every proof's MSMs read w + m and h + m′ for random
//! vectors m, m′ drawn when the key is bound, and the sums of m and m′ (computed once,
//! then) come off the results. w + m looks like uniformly random scalars whatever w is
//! (all zeros, all ones, a circom witness), so no bucket is fuller, no digit more often
//! zero, than for random values. Turning the plan's shortcuts off alone
//! (`crate::ConstantMode::Full`) leaves a 1.4–1.7× spread between witness distributions,
//! because how entries fall into buckets still follows the values; with the mask it is
//! 1.02–1.10× (lab/experiments/023-constant-work-by-masking.md).

use crate::enabled::curve::GpuCurve;
use crate::enabled::memory::DeviceBuf;
use crate::enabled::quotient::GpuQuotient;
use crate::enabled::runtime::check;
use crate::CudaError;
use std::ffi::c_void;
use zkpipe_core::msm::mask::draw_values;
use zkpipe_core::msm::DeviceSums;
use zkpipe_core::Curve;

/// A bound key's mask: m (nVars values) and m′ (domain size values) on the GPU in
/// Montgomery form, and the five MSMs of them. Drawn from the OS's entropy at binding,
/// kept secret in memory, never written anywhere. Only the passes (the proof path) mask;
/// the single verbs (`msm_g1`, `msm_g2`, `quotient`) do not.
pub(crate) struct DeviceMask<E: Curve> {
    w: DeviceBuf,
    h: DeviceBuf,
    n_vars: usize,
    sums: DeviceSums<E>,
}

impl<E: Curve + GpuCurve> DeviceMask<E> {
    /// Draws a mask of `n_vars` and `domain` values on GPU `gpu` and has `sums` compute
    /// its five MSMs from their device addresses (m, then m′; Montgomery form) with the
    /// key's resident points: one proof's MSMs, once.
    pub(crate) fn draw(
        gpu: usize,
        n_vars: usize,
        domain: usize,
        sums: impl FnOnce(usize, usize) -> Result<DeviceSums<E>, CudaError>,
    ) -> Result<Self, CudaError> {
        let upload = |n: usize| -> Result<DeviceBuf, CudaError> {
            let v: Vec<E::ScalarField> = draw_values(n);
            let bytes = std::mem::size_of_val(v.as_slice());
            let mut buf = DeviceBuf::new(gpu, bytes)?;
            // SAFETY: `v` is valid for `bytes` bytes (pageable memory: a one-off copy).
            unsafe { buf.upload_raw(v.as_ptr() as *const u8, bytes)? };
            Ok(buf)
        };
        let (w, h) = (upload(n_vars)?, upload(domain)?);
        let sums = sums(w.device_ptr(0) as usize, h.device_ptr(0) as usize)?;
        Ok(Self { w, h, n_vars, sums })
    }

    /// Adds the mask to one proof's w (`w_dev`, in Montgomery form with `mont`) and to
    /// the h `quotient` left on the GPU. After the reduce and quotient, before the MSMs.
    pub(crate) fn apply(
        &self,
        quotient: &GpuQuotient<E>,
        w_dev: &mut DeviceBuf,
        mont: bool,
    ) -> Result<(), CudaError> {
        let handle = quotient.handle();
        // SAFETY: w_dev holds the proof's nVars values (checked by the pass) and is lent
        // to this call (&mut); the mask buffers hold nVars and domain-size values; all on
        // the quotient's GPU.
        check(unsafe {
            (E::fns().quotient_mask)(
                *handle,
                w_dev.device_ptr(0) as *mut c_void,
                self.w.device_ptr(0) as *const c_void,
                self.n_vars,
                mont,
                self.h.device_ptr(0) as *const c_void,
            )
        })
    }

    /// The mask's sums, to take off each proof's ([`DeviceSums::take_off`]).
    pub(crate) fn sums(&self) -> &DeviceSums<E> {
        &self.sums
    }
}
