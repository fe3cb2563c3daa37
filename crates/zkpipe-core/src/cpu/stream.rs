//! A streamed key's pass on the CPU: the plan of [`crate::msm::stream_plan`] executed with
//! host memory standing in for the device's, so that the chunking and batching a GPU runs
//! are checked against the in-core CPU result.
//!
//! ```text
//!  each proof:   w (masked where the key is), quotient → h
//!  each set (A, B1, C, H, then [B]₂ where the pass makes it), one walk over its chunks:
//!      each chunk, in order: every proof of the batch adds its slice against it
//!  each proof:   its five sums (the mask's sums off)
//! ```

use super::{check_lengths, CpuBound};
use crate::curve::Curve;
use crate::device::{G1Set, PassInput};
use crate::error::Error;
use crate::msm::pippenger::BatchAffineMsm;
use crate::msm::stream_plan::{KeySet, StreamPlan};
use crate::msm::streamed::{streamed_msm, ScalarsOf};
use crate::msm::{scalars_into, DeviceSums, MsmOptions, ScalarInt};
use crate::timings::{timed, Stage};
use std::borrow::Cow;
use std::ops::Range;

/// One proof's MSM against `bases` streamed in `chunks`.
pub(super) fn one<A: BatchAffineMsm>(
    bases: &[A],
    chunks: &[Range<usize>],
    scalars: &[ScalarsOf<A>],
    opts: MsmOptions,
) -> Result<A::Group, Error> {
    check_lengths(bases.len(), scalars.len())?;
    streamed_msm(bases, chunks, &[scalars], opts)?
        .pop()
        .ok_or_else(|| Error::Backend {
            backend: "cpu",
            message: "a streamed MSM returned no sum".into(),
        })
}

/// The device stage of a batch of proofs of a streamed key, results in input order: a
/// proof whose witness cannot be read fails alone.
pub(super) fn pass<E: Curve>(
    bound: &CpuBound<E>,
    plan: &StreamPlan,
    inputs: &mut [PassInput<'_, E>],
) -> Vec<Result<DeviceSums<E>, Error>> {
    let ws: Vec<Result<Cow<'_, [ScalarInt<E>]>, Error>> =
        inputs.iter_mut().map(|p| prepare(bound, p)).collect();
    let live: Vec<usize> = (0..ws.len()).filter(|&k| ws[k].is_ok()).collect();
    let (sums, spans) = {
        let hs: Vec<&[ScalarInt<E>]> = inputs.iter().map(|p| &p.h[..]).collect();
        msms(bound, plan, &ws, &hs, &live)
    };
    let mut sums = sums.map(|s| s.into_iter());
    ws.into_iter()
        .zip(inputs.iter_mut())
        .map(|(w, p)| {
            w?;
            p.t.spans.extend(spans.iter().copied());
            match &mut sums {
                Ok(s) => s.next().ok_or_else(|| Error::Backend {
                    backend: "cpu",
                    message: "a streamed pass returned fewer sums than proofs".into(),
                }),
                Err(e) => Err(Error::Backend {
                    backend: "cpu",
                    message: e.to_string(),
                }),
            }
        })
        .collect()
}

/// One proof's MSM scalars: w (masked where the key is), and h (likewise) into `p.h`
/// after the quotient, each checked against the key.
fn prepare<'a, E: Curve>(
    bound: &CpuBound<E>,
    p: &mut PassInput<'a, E>,
) -> Result<Cow<'a, [ScalarInt<E>]>, Error> {
    let key = &*bound.key;
    let mask = bound.mask.as_deref();
    let w = match mask {
        Some(m) => Cow::Owned(m.mask_w(p.w)?),
        None => p.w.scalars(),
    };
    check_lengths(key.n_vars, w.len())?;
    p.t.time(Stage::Quotient, || bound.run_quotient(p.evals));
    match mask {
        Some(m) => m.mask_h_into(p.evals.h(), p.h),
        None => scalars_into(p.evals.h(), p.h),
    }
    check_lengths(key.domain_size(), p.h.len())?;
    Ok(w)
}

/// The live proofs' sums, each set one walk over its chunks, and the walks' spans.
fn msms<E: Curve>(
    bound: &CpuBound<E>,
    plan: &StreamPlan,
    ws: &[Result<Cow<'_, [ScalarInt<E>]>, Error>],
    hs: &[&[ScalarInt<E>]],
    live: &[usize],
) -> (Result<Vec<DeviceSums<E>>, Error>, Vec<crate::timings::Span>) {
    let key = &*bound.key;
    let points = bound.points();
    let opts = bound.msm_options();
    let w = |k: usize| match &ws[k] {
        Ok(w) => &w[..],
        Err(_) => &[],
    };
    let mut spans = Vec::new();
    let mut g1 = |set: G1Set| {
        let scalars: Vec<&[ScalarInt<E>]> = live
            .iter()
            .map(|&k| match set {
                G1Set::A | G1Set::B1 => w(k),
                G1Set::C => w(k).get(key.n_public + 1..).unwrap_or(&[]),
                G1Set::H => hs[k],
            })
            .collect();
        let chunks = plan.chunks(set.into());
        let (sums, span) = timed(set.stage(), || {
            streamed_msm(set.of(&points), &chunks, &scalars, opts)
        });
        spans.push(span);
        sums
    };
    let (a, b1, c, h) = (g1(G1Set::A), g1(G1Set::B1), g1(G1Set::C), g1(G1Set::H));
    let b2 = (bound.mask.is_some() || bound.g2_in_pass).then(|| {
        let scalars: Vec<&[ScalarInt<E>]> = live.iter().map(|&k| w(k)).collect();
        let chunks = plan.chunks(KeySet::B2);
        let (sums, span) = timed(Stage::MsmB2, || {
            streamed_msm(&points.b2, &chunks, &scalars, opts)
        });
        spans.push(span);
        sums
    });
    (per_proof(bound, [a, b1, c, h], b2), spans)
}

/// Each set's sums regrouped by proof, the mask's sums off.
fn per_proof<E: Curve>(
    bound: &CpuBound<E>,
    g1: [Result<Vec<E::G1>, Error>; 4],
    b2: Option<Result<Vec<E::G2>, Error>>,
) -> Result<Vec<DeviceSums<E>>, Error> {
    let [a, b1, c, h] = g1;
    let (a, b1, c, h) = (a?, b1?, c?, h?);
    let b2 = b2.transpose()?;
    let sums = (0..a.len()).map(|j| {
        let mut s = DeviceSums {
            a: a[j],
            b1: b1[j],
            b2: b2.as_ref().map(|b2| b2[j]),
            c: c[j],
            h: h[j],
        };
        if let Some(m) = bound.mask.as_deref() {
            s.take_off(m.sums());
        }
        s
    });
    Ok(sums.collect())
}
