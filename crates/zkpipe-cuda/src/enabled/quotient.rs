//! The quotient stage on the GPU ([`GpuQuotient`]): device buffers for one domain size,
//! and h = a·b − c on snarkjs's coset from a, b, c on its domain (staged from the host,
//! or left there by the reduce, `crate::enabled::reduce`), h coming back or staying on
//! the GPU for the H MSM. Here too: snarkjs's ω and coset as sppark's NTT needs them.

use crate::enabled::curve::GpuCurve;
use crate::enabled::ffi;
use crate::enabled::runtime::{check, check_device};
use crate::CudaError;
use ark_ff::{FftField, Field};
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::{Mutex, MutexGuard};

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

    /// k with ω_n^k = sppark's root of unity (1 where the roots agree): how the shim
    /// reorders values between snarkjs's domain and sppark's.
    pub(crate) fn k(&self) -> u64 {
        self.k
    }

    /// Domain size.
    pub fn size(&self) -> usize {
        1 << self.lg_n
    }

    /// The shim's handle, held for one call into it (calls on one quotient take turns).
    pub(crate) fn handle(&self) -> MutexGuard<'_, ffi::QuotientHandle> {
        self.handle.lock().unwrap_or_else(|e| e.into_inner())
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
        let handle = self.handle();
        check((E::fns().quotient_run)(
            *handle,
            a as *const c_void,
            b as *const c_void,
            c as *const c_void,
            h as *mut c_void,
            self.k,
        ))
    }

    /// The device address where the last run left h (n Montgomery field elements),
    /// valid until the next run or the drop.
    pub fn h_on_device(&self) -> *const E::ScalarField {
        let handle = self.handle();
        // SAFETY: a live handle; the call only reads its buffer address.
        unsafe { (E::fns().quotient_h)(*handle) as *const E::ScalarField }
    }

    /// The device address and bytes of the quotient's a, b, c, idle from when h is made
    /// until the next run: the 3n elements before h in its buffers (quotient.cuh's
    /// `zkp_quotient_t::d` holds a, b, c, h, then the coset powers). A streamed key's
    /// walk places its chunks there (`crate::enabled::streamed::walk`).
    pub fn idle_room(&self) -> (usize, usize) {
        let bytes = 3 * self.size() * std::mem::size_of::<E::ScalarField>();
        (self.h_on_device() as usize - bytes, bytes)
    }
}

impl<E: GpuCurve> Drop for GpuQuotient<E> {
    fn drop(&mut self) {
        let h = *self.handle.get_mut().unwrap_or_else(|e| e.into_inner());
        // SAFETY: created by quotient_new, dropped once.
        unsafe { (E::fns().quotient_drop)(h) }
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
