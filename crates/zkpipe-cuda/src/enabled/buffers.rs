//! One proof's buffers in flight on a bound key ([`PassBuffers`]): its quotient's device
//! buffers (h stays there for the H MSM), a pinned staging buffer, and the device copy of
//! its witness. A key keeps a [`Pool`] of idle sets, one made at binding and more on
//! demand, one per proof in flight at once; a set is [`Lent`] to one call and goes back
//! when the call is done.

use crate::enabled::curve::GpuCurve;
use crate::enabled::mask::DeviceMask;
use crate::enabled::memory::{DeviceBuf, PinnedBuf};
use crate::enabled::quotient::GpuQuotient;
use crate::enabled::reduce::GpuMatrices;
use crate::{CudaError, PinnedKind, QuotientLaunch};
use std::mem::size_of_val;
use std::sync::Mutex;
use std::time::Instant;
use zkpipe_core::reduce::QapEvals;
use zkpipe_core::timings::{Span, Stage, Timings};
use zkpipe_core::{Curve, PassWitness};

/// What one proof in flight needs of its own: the quotient's device buffers (h stays
/// there for the H MSM), a pinned staging buffer, the device copy of its witness, and
/// the bitmap of its 1s where its MSMs take the bit path (`crate::enabled::bits`).
pub(crate) struct PassBuffers<E: GpuCurve> {
    pub(crate) quotient: GpuQuotient<E>,
    pub(crate) staging: PinnedBuf,
    pub(crate) w: DeviceBuf,
    pub(crate) ones: DeviceBuf,
    /// How its reduce and quotient are launched (lab/experiments/042q-quotient-graphs.md).
    launch: QuotientLaunch,
}

impl<E: GpuCurve + Curve> PassBuffers<E> {
    /// Stages `w` (the key's nVars values, in the form the pass got them: the kernels are
    /// told which) and copies it to the device buffer.
    pub(crate) fn upload_w(&mut self, w: PassWitness<'_, E>) -> Result<(), CudaError> {
        let _burst = zkpipe_core::throttle::burst();
        let (pw, bytes) = self.stage_w(w);
        // SAFETY: `pw` holds `bytes` bytes of 32-byte values, at most the device buffer's
        // size (upload_raw checks).
        unsafe { self.w.upload_raw(pw, bytes) }
    }

    /// Copies `w` into the staging buffer: where it is and its bytes.
    fn stage_w(&mut self, w: PassWitness<'_, E>) -> (*const u8, usize) {
        match w {
            PassWitness::Scalars(s) => (self.staging.stage(0, s) as *const u8, size_of_val(s)),
            PassWitness::Montgomery(f) => (self.staging.stage(0, f) as *const u8, size_of_val(f)),
        }
    }

    /// The quotient with h left on the GPU, from `evals`, or where `evals` is empty from
    /// a, b, c computed on the GPU from `w` with `matrices`. The witness is on the device
    /// afterwards either way; its upload is timed with the stage it precedes on the GPU
    /// (`reduce_device`, else after the quotient, as part of `quotient`). With a `mask`,
    /// w and h are left masked for the MSMs.
    pub(crate) fn quotient_and_w(
        &mut self,
        evals: &QapEvals<E::ScalarField>,
        w: PassWitness<'_, E>,
        matrices: Option<&GpuMatrices<E>>,
        mask: Option<&DeviceMask<E>>,
        t: &mut Timings,
    ) -> Result<(), CudaError> {
        if !evals.a.is_empty() {
            return t.time(Stage::Quotient, || {
                self.run_quotient(evals, false)?;
                self.upload_w(w)?;
                self.mask(mask, w)
            });
        }
        let m = matrices.ok_or_else(|| {
            CudaError::Length("no a, b, c given, and no matrices on the GPU".into())
        })?;
        if self.launch == QuotientLaunch::Calls {
            t.time(Stage::ReduceDevice, || {
                self.upload_w(w)?;
                let wd = self.w.device_ptr(0) as *const [u64; 4];
                // SAFETY: `wd` holds the key's nVars values (checked by the caller), the
                // matrices' column count, on this set's GPU, and nothing writes it meanwhile.
                unsafe { self.quotient.reduce_raw(m, wd, w.is_montgomery()) }
            })?;
            return self.quotient_of_reduced(w, mask, t);
        }
        // One call: the upload, the reduce and the quotient queue on the quotient's
        // stream and the host waits once (at 2^14 the three calls' launches and waits
        // cost the host more than the GPU's work; lab 042q).
        let start = Instant::now();
        let quotient_gpu = {
            let _burst = zkpipe_core::throttle::burst();
            let (pw, bytes) = self.stage_w(w);
            assert!(bytes <= self.w.len(), "device buffer too small");
            let graph = self.launch == QuotientLaunch::Graph;
            // SAFETY: the device buffer is this set's (&mut self) and holds `bytes`, the
            // key's nVars values (checked by the caller), as many as the matrices have
            // columns; `pw` is this set's staging, holding them.
            unsafe {
                let wd = self.w.device_ptr_mut();
                self.quotient
                    .reduce_quotient_raw(m, wd, pw, bytes, w.is_montgomery(), graph)?
            }
        };
        let done = Instant::now();
        self.mask(mask, w)?;
        // The waterfall's split: the quotient's GPU time ends the call, the rest (the
        // staging, the upload and the reduce) is the reduce's.
        let split = quotient_gpu
            .and_then(|q| done.checked_sub(q))
            .map_or(done, |s| s.max(start));
        t.spans.push(Span {
            stage: Stage::ReduceDevice,
            start,
            end: split,
        });
        t.spans.push(Span {
            stage: Stage::Quotient,
            start: split,
            end: Instant::now(),
        });
        Ok(())
    }

    /// The quotient from a, b, c left in its buffers by a reduce on the GPU, h staying
    /// there; then `mask`, as [`Self::quotient_and_w`] does.
    pub(crate) fn quotient_of_reduced(
        &mut self,
        w: PassWitness<'_, E>,
        mask: Option<&DeviceMask<E>>,
        t: &mut Timings,
    ) -> Result<(), CudaError> {
        let null = std::ptr::null_mut();
        // SAFETY: null inputs: a, b, c are where the reduce left them; h stays there.
        t.time(Stage::Quotient, || {
            unsafe { self.quotient.run_raw(null, null, null, null) }?;
            self.mask(mask, w)
        })
    }

    /// Where constant-work MSMs are on, adds the key's mask to w and h on the GPU (timed
    /// with the quotient, which it follows).
    fn mask(
        &mut self,
        mask: Option<&DeviceMask<E>>,
        w: PassWitness<'_, E>,
    ) -> Result<(), CudaError> {
        match mask {
            Some(m) => m.apply(&self.quotient, &mut self.w, w.is_montgomery()),
            None => Ok(()),
        }
    }

    /// Stages a, b, c (n elements each, as the quotient was made for) and runs the
    /// quotient. h comes back to the start of the staging buffer if `download`, else it
    /// stays on the GPU only ([`GpuQuotient::h_on_device`]).
    pub(crate) fn run_quotient(
        &mut self,
        evals: &QapEvals<E::ScalarField>,
        download: bool,
    ) -> Result<(), CudaError> {
        let bytes = std::mem::size_of_val(evals.a.as_slice());
        let _burst = zkpipe_core::throttle::burst();
        let pa = self.staging.stage(0, &evals.a);
        let pb = self.staging.stage(bytes, &evals.b);
        let pc = self.staging.stage(2 * bytes, &evals.c);
        let ph = if download {
            self.staging.ptr_at(0) as *mut E::ScalarField
        } else {
            std::ptr::null_mut()
        };
        // SAFETY: the pointers address n field elements each inside the staging buffer,
        // which this set's borrower alone uses; h, if downloaded, overwrites a.
        unsafe { self.quotient.run_raw(pa, pb, pc, ph) }
    }
}

/// How to make a [`PassBuffers`] for one key on one GPU.
pub(crate) struct PassShape<E: GpuCurve> {
    pub(crate) lg_n: u32,
    pub(crate) omega: E::ScalarField,
    pub(crate) shift: E::ScalarField,
    pub(crate) n_vars: usize,
    pub(crate) gpu: usize,
    /// The kind of pinned memory its staging buffers are made of.
    pub(crate) staging: PinnedKind,
    /// How each set's reduce and quotient are launched.
    pub(crate) launch: QuotientLaunch,
}

impl<E: GpuCurve> PassShape<E> {
    fn make(&self) -> Result<PassBuffers<E>, CudaError> {
        let elem = std::mem::size_of::<E::ScalarField>();
        let n = 1usize << self.lg_n;
        Ok(PassBuffers {
            quotient: GpuQuotient::new(self.lg_n, self.omega, self.shift, self.gpu)?,
            staging: PinnedBuf::with_kind((3 * n).max(self.n_vars) * elem, self.staging)?,
            w: DeviceBuf::new(self.gpu, self.n_vars * elem)?,
            ones: DeviceBuf::new(self.gpu, crate::shape::bitmap_bytes(self.n_vars))?,
            launch: self.launch,
        })
    }
}

/// A key's idle buffer sets, and how to make more.
pub(crate) struct Pool<E: GpuCurve> {
    idle: Mutex<Vec<PassBuffers<E>>>,
    pub(crate) shape: PassShape<E>,
}

impl<E: GpuCurve> Pool<E> {
    /// A pool of one set (a proof's buffers are there from the start).
    pub(crate) fn new(shape: PassShape<E>) -> Result<Self, CudaError> {
        Ok(Self {
            idle: Mutex::new(vec![shape.make()?]),
            shape,
        })
    }

    /// The domain size the sets are made for.
    pub(crate) fn domain_size(&self) -> usize {
        1usize << self.shape.lg_n
    }

    /// An idle buffer set, or a new one: one per proof in flight on this key at once.
    pub(crate) fn lend(&self) -> Result<Lent<'_, E>, CudaError> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let bufs = match idle {
            Some(b) => b,
            None => self.shape.make()?,
        };
        Ok(Lent {
            pool: self,
            bufs: Some(bufs),
        })
    }
}

/// A buffer set lent to one call, back to the idle list on drop.
pub(crate) struct Lent<'a, E: GpuCurve> {
    pool: &'a Pool<E>,
    bufs: Option<PassBuffers<E>>,
}

impl<E: GpuCurve> std::ops::Deref for Lent<'_, E> {
    type Target = PassBuffers<E>;
    fn deref(&self) -> &PassBuffers<E> {
        self.bufs.as_ref().expect("lent buffers")
    }
}

impl<E: GpuCurve> std::ops::DerefMut for Lent<'_, E> {
    fn deref_mut(&mut self) -> &mut PassBuffers<E> {
        self.bufs.as_mut().expect("lent buffers")
    }
}

impl<E: GpuCurve> Drop for Lent<'_, E> {
    fn drop(&mut self) {
        if let Some(b) = self.bufs.take() {
            let mut idle = self.pool.idle.lock().unwrap_or_else(|e| e.into_inner());
            idle.push(b);
        }
    }
}
