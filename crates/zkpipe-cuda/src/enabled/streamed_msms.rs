//! The verbs and batched MSMs of a [`CudaBound`] whose key streams
//! ([`crate::enabled::streamed`]): each walks the key's chunks once for all its scalar
//! vectors.

use crate::enabled::bound::CudaBound;
use crate::enabled::curve::{GpuCurve, GpuGroup, G1, G2};
use crate::enabled::memory::DeviceBuf;
use crate::enabled::pass::per_proof;
use crate::enabled::streamed::{walk, Leg, Streamed, SCALAR_BYTES};
use crate::CudaError;
use zkpipe_core::msm::stream_plan::KeySet;
use zkpipe_core::msm::{DeviceSums, ScalarInt};
use zkpipe_core::Curve;

impl<E: Curve + GpuCurve> CudaBound<E> {
    /// The five MSMs of k proofs of a streamed key, each set's chunks walked once for
    /// all of them: `ws` and `hs` as for the in-core batched MSMs (`batch_msms`).
    pub(super) fn streamed_msms(
        &self,
        streamed: &Streamed,
        ws: &[usize],
        hs: &[usize],
        mont_w: bool,
    ) -> Result<Vec<DeviceSums<E>>, CudaError> {
        let (plan, p, gpu) = (&streamed.plan, &self.key.points, self.gpu);
        let pinned = streamed.pinned();
        let pinned = pinned.as_deref();
        // The G1 sets as one stream, then [B]₂ (its points are another type).
        // C's points multiply w's private part, past the public inputs.
        let private = (self.key.n_public + 1) * SCALAR_BYTES;
        let cs: Vec<usize> = ws.iter().map(|&w| w + private).collect();
        let g1 = [
            Leg::of(plan, &p.a, KeySet::A, pinned, ws, mont_w),
            Leg::of(plan, &p.b1, KeySet::B1, pinned, ws, mont_w),
            Leg::of(plan, &p.c, KeySet::C, pinned, &cs, mont_w),
            Leg::of(plan, &p.h, KeySet::H, pinned, hs, true),
        ];
        let mut g1 = walk::<E, G1>(streamed, &g1, gpu)?.into_iter();
        let mut next = || {
            g1.next()
                .ok_or_else(|| CudaError::Length("a streamed walk returned too few sums".into()))
        };
        let (a, b1, c, h) = (next()?, next()?, next()?, next()?);
        let b2 = match self.caps.g2 {
            true => {
                let b2 = [Leg::of(plan, &p.b2, KeySet::B2, pinned, ws, mont_w)];
                walk::<E, G2>(streamed, &b2, gpu)?.pop()
            }
            false => None,
        };
        let counts = [a.len(), b1.len(), c.len(), h.len()];
        if counts.iter().any(|&n| n != ws.len()) || b2.as_ref().is_some_and(|v| v.len() != ws.len())
        {
            return Err(CudaError::Length(
                "a streamed MSM returned the wrong count".into(),
            ));
        }
        Ok(per_proof(ws.len(), &a, &b1, b2.as_deref(), &c, &h))
    }

    /// One MSM of host `scalars` against a streamed key's `set`: the scalars staged and
    /// copied to the device once, then the set's chunks walked.
    pub(super) fn streamed_msm<G: GpuGroup<E>>(
        &self,
        streamed: &Streamed,
        set: KeySet,
        points: &[G::Affine],
        scalars: &[ScalarInt<E>],
    ) -> Result<G::Point, CudaError> {
        let _one = streamed.one_at_a_time();
        let mut bufs = self.pool.lend()?;
        let bytes = std::mem::size_of_val(scalars);
        let staged = bufs.staging.stage(0, scalars) as *const u8;
        let mut on_device = DeviceBuf::new(self.gpu, bytes.max(SCALAR_BYTES))?;
        // SAFETY: `staged` holds the `bytes` bytes of `scalars`, which fit the buffer.
        unsafe { on_device.upload_raw(staged, bytes)? };
        let pinned = streamed.pinned();
        let vectors = [on_device.device_ptr(0) as usize];
        let leg = Leg::of(
            &streamed.plan,
            points,
            set,
            pinned.as_deref(),
            &vectors,
            false,
        );
        let sums = walk::<E, G>(streamed, &[leg], self.gpu)?;
        sums.into_iter()
            .flatten()
            .next()
            .ok_or_else(|| CudaError::Length("a streamed MSM returned nothing".into()))
    }
}
