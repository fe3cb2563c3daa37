//! The verbs, batched MSMs and batched reduce of a [`CudaBound`] whose key streams
//! ([`crate::enabled::streamed`]): each walks the key's chunks (of points, or of its
//! matrices' rows: `crate::enabled::streamed_reduce`) once for all its scalar vectors.

use crate::enabled::bits::WitnessBits;
use crate::enabled::bound::CudaBound;
use crate::enabled::buffers::Lent;
use crate::enabled::curve::{GpuCurve, GpuGroup, G1, G2};
use crate::enabled::memory::DeviceBuf;
use crate::enabled::pass::per_proof;
use crate::enabled::quotient::GpuQuotient;
use crate::enabled::streamed::{walk, ChunkHalves, Leg, LegBits, Streamed, SCALAR_BYTES};
use crate::enabled::streamed_reduce::StreamedMatrices;
use crate::CudaError;
use std::time::Instant;
use zkpipe_core::msm::stream_plan::KeySet;
use zkpipe_core::msm::{DeviceSums, ScalarInt};
use zkpipe_core::timings::{Span, Stage};
use zkpipe_core::{Curve, PassInput};

impl<E: Curve + GpuCurve> CudaBound<E> {
    /// The five MSMs of k proofs of a streamed key, each set's chunks walked once for
    /// all of them: `ws` and `hs` as for the in-core batched MSMs (`batch_msms`), `room`
    /// the first proof's idle quotient vectors, where the walks may put their chunks;
    /// the w sets on the bit path where `bits` gives each proof's split.
    pub(super) fn streamed_msms(
        &self,
        streamed: &Streamed,
        ws: &[usize],
        hs: &[usize],
        bits: Option<&[WitnessBits<'_, E>]>,
        mont_w: bool,
        room: (usize, usize),
    ) -> Result<Vec<DeviceSums<E>>, CudaError> {
        let (plan, p, gpu) = (&streamed.plan, &self.key.points, self.gpu);
        let pinned = streamed.pinned();
        let pinned = pinned.as_deref();
        // The G1 sets, then [B]₂ (its points are another type), as one stream.
        // C's points multiply w's private part, past the public inputs.
        let first_private = self.key.n_public + 1;
        let private = first_private * SCALAR_BYTES;
        let cs: Vec<usize> = ws.iter().map(|&w| w + private).collect();
        // The w sets' sums on the bit path, where each proof's w split.
        let on_bits = |offset: usize| {
            bits.map(|b| LegBits {
                ones: b.iter().map(WitnessBits::ones).collect(),
                offset,
            })
        };
        let g1 = [
            Leg::of(plan, &p.a, KeySet::A, pinned, ws, mont_w).with_bits(on_bits(0)),
            Leg::of(plan, &p.b1, KeySet::B1, pinned, ws, mont_w).with_bits(on_bits(0)),
            Leg::of(plan, &p.c, KeySet::C, pinned, &cs, mont_w).with_bits(on_bits(first_private)),
            Leg::of(plan, &p.h, KeySet::H, pinned, hs, true),
        ];
        let b2 = match self.caps.g2 {
            true => {
                vec![Leg::of(plan, &p.b2, KeySet::B2, pinned, ws, mont_w).with_bits(on_bits(0))]
            }
            false => Vec::new(),
        };
        let halves = ChunkHalves::new(plan, room, gpu)?;
        let (g1, mut b2) = walk::<E, G1, G2>(streamed, &g1, &b2, &halves, gpu)?;
        let mut g1 = g1.into_iter();
        let mut next = || {
            g1.next()
                .ok_or_else(|| CudaError::Length("a streamed walk returned too few sums".into()))
        };
        let (mut a, mut b1, mut c, h) = (next()?, next()?, next()?, next()?);
        let mut b2 = b2.pop();
        let counts = [a.len(), b1.len(), c.len(), h.len()];
        if counts.iter().any(|&n| n != ws.len()) || b2.as_ref().is_some_and(|v| v.len() != ws.len())
        {
            return Err(CudaError::Length(
                "a streamed MSM returned the wrong count".into(),
            ));
        }
        // The bit path's host share: the few values neither 0 nor 1.
        for (j, bits) in bits.into_iter().flatten().enumerate() {
            a[j] += bits.rest_sum::<G1>(&p.a, 0);
            b1[j] += bits.rest_sum::<G1>(&p.b1, 0);
            c[j] += bits.rest_sum::<G1>(&p.c, first_private);
            if let Some(b2) = b2.as_mut() {
                b2[j] += bits.rest_sum::<G2>(&p.b2, 0);
            }
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
        // The lent set's quotient is idle: its vectors hold the walk's chunks.
        let halves = ChunkHalves::new(&streamed.plan, bufs.quotient.idle_room(), self.gpu)?;
        let (sums, _) = walk::<E, G, G>(streamed, &[leg], &[], &halves, self.gpu)?;
        sums.into_iter()
            .flatten()
            .next()
            .ok_or_else(|| CudaError::Length("a streamed MSM returned nothing".into()))
    }
}

impl<E: Curve + GpuCurve> CudaBound<E> {
    /// A batch's quotients where the streamed key's GPU reduces: each proof's witness
    /// uploaded, a, b, c of all of them from one walk over the matrices (timed as each
    /// proof's `reduce_device`), then each proof's quotient with h left on the GPU, as
    /// [`crate::enabled::buffers::PassBuffers::quotient_and_w`] does for an in-core key.
    pub(super) fn streamed_quotients(
        &self,
        streamed: &Streamed,
        matrices: &StreamedMatrices,
        inputs: &mut [PassInput<'_, E>],
        lent: &mut [Lent<'_, E>],
    ) -> Result<(), CudaError> {
        use rayon::prelude::*;
        let start = Instant::now();
        inputs
            .par_iter()
            .zip(lent.par_iter_mut())
            .with_max_len(1)
            .try_for_each(|(p, bufs)| bufs.upload_w(p.w))?;
        // The caller checked that the batch's witnesses share one form.
        let mont = inputs.first().is_some_and(|p| p.w.is_montgomery());
        let proofs: Vec<(&GpuQuotient<E>, usize)> = lent
            .iter()
            .map(|b| (&b.quotient, b.w.device_ptr(0) as usize))
            .collect();
        let key = &self.key;
        let pinned = streamed.pinned();
        let pinned = pinned.as_ref().and_then(|p| p.matrices());
        // Staging only where the chunks are packed (no pinned copy).
        let mut staging = match pinned {
            Some(_) => None,
            None => Some(streamed.staging()?),
        };
        matrices.reduce(
            pinned,
            staging.as_deref_mut(),
            (&key.a, &key.b),
            &proofs,
            mont,
            self.gpu,
        )?;
        let reduced = Span {
            stage: Stage::ReduceDevice,
            start,
            end: Instant::now(),
        };
        let mask = self.mask.as_ref();
        inputs
            .par_iter_mut()
            .zip(lent.par_iter_mut())
            .with_max_len(1)
            .try_for_each(|(p, bufs)| {
                p.t.spans.push(reduced);
                bufs.quotient_of_reduced(p.w, mask, p.t)
            })
    }
}
