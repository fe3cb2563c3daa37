//! The device seam: the few verbs a proof needs from whatever runs the heavy math.
//! The CPU backend (arkworks + rayon) is the reference and the test oracle for others.

use crate::curve::Curve;
use crate::error::Error;
use crate::key::CompiledKey;
use crate::msm::pippenger::BatchAffineMsm;
use crate::quotient::{self, QuotientDomain};
use crate::reduce::QapEvals;
use crate::stages::{scalars_into, DeviceSums};
use crate::timings::{timed, Stage, Timings};
use ark_ff::PrimeField;

/// Scalars as the MSM wants them: standard-form integers.
pub type ScalarInt<E> = <<E as ark_ec::pairing::Pairing>::ScalarField as PrimeField>::BigInt;

/// Where NTTs and MSMs run.
pub trait Backend<E: Curve>: Send + Sync {
    /// Short name for messages and timings ("cpu", "cuda").
    fn name(&self) -> &'static str;

    /// The quotient stage: a, b, c on the domain → h = a·b − c on the coset, in `evals.a`.
    fn quotient(
        &self,
        domain: &QuotientDomain<E::ScalarField>,
        evals: &mut QapEvals<E::ScalarField>,
    ) -> Result<(), Error>;

    /// Σ scalarsᵢ·basesᵢ in G1 (lengths must match).
    fn msm_g1(&self, bases: &[E::G1Affine], scalars: &[ScalarInt<E>]) -> Result<E::G1, Error>;

    /// Σ scalarsᵢ·basesᵢ in G2 (lengths must match).
    fn msm_g2(&self, bases: &[E::G2Affine], scalars: &[ScalarInt<E>]) -> Result<E::G2, Error>;

    /// Whether [`Backend::device_pass`] computes a, b, c itself from `w` (the sparse
    /// products on the device, [`Stage::ReduceDevice`]), so that stage 1 leaves `evals`
    /// empty and only turns the witness into MSM scalars. The default: no, stage 1
    /// computes them on the CPU.
    fn reduces_on_device(&self, _key: &CompiledKey<E>) -> bool {
        false
    }

    /// The device stage of one proof with `key`: the quotient (h into `evals.a`, then as
    /// MSM scalars into `h`), the G1 MSMs [A]₁, [B]₁, [C]₁, [H]₁ and, if `g2`, [B]₂.
    /// `w` has the key's nVars scalars and `evals` its domain size, or is empty where
    /// [`Backend::reduces_on_device`] (the caller checks).
    ///
    /// The default runs the verbs above one after another; a backend overrides it to
    /// overlap the MSMs or keep intermediate values (h) where they are computed.
    fn device_pass(
        &self,
        key: &CompiledKey<E>,
        evals: &mut QapEvals<E::ScalarField>,
        w: &[ScalarInt<E>],
        h: &mut Vec<ScalarInt<E>>,
        g2: bool,
        t: &mut Timings,
    ) -> Result<DeviceSums<E>, Error> {
        t.time(Stage::Quotient, || self.quotient(&key.domain, evals))?;
        scalars_into(evals.h(), h);
        let p = &key.points;
        let private = &w[key.n_public + 1..];
        Ok(DeviceSums {
            a: t.time(Stage::MsmA, || self.msm_g1(&p.a, w))?,
            b1: t.time(Stage::MsmB1, || self.msm_g1(&p.b1, w))?,
            b2: if g2 {
                Some(t.time(Stage::MsmB2, || self.msm_g2(&p.b2, w))?)
            } else {
                None
            },
            c: t.time(Stage::MsmC, || self.msm_g1(&p.c, private))?,
            h: t.time(Stage::MsmH, || self.msm_g1(&p.h, h))?,
        })
    }

    /// How many proofs of `key` one [`Backend::device_batch`] call should take at most.
    /// 1 (the default) means batching does not pay on this backend.
    fn batch_limit(&self, _key: &CompiledKey<E>) -> usize {
        1
    }

    /// The device stage of several proofs of the same key, results in input order. Each
    /// input is as for [`Backend::device_pass`] (lengths checked by the caller). A backend
    /// overrides it to share one pass over the key's points among the proofs; the default
    /// runs them one after another.
    fn device_batch(
        &self,
        key: &CompiledKey<E>,
        inputs: &mut [PassInput<'_, E>],
        g2: bool,
    ) -> Vec<Result<DeviceSums<E>, Error>> {
        one_by_one(self, key, inputs, g2)
    }
}

/// [`Backend::device_batch`] without sharing: [`Backend::device_pass`] for each input in
/// turn (the default, and what a batching backend does where a batch would not pay).
pub fn one_by_one<E: Curve, B: Backend<E> + ?Sized>(
    backend: &B,
    key: &CompiledKey<E>,
    inputs: &mut [PassInput<'_, E>],
    g2: bool,
) -> Vec<Result<DeviceSums<E>, Error>> {
    inputs
        .iter_mut()
        .map(|p| backend.device_pass(key, p.evals, p.w, p.h, g2, p.t))
        .collect()
}

/// One proof's share of a batched device pass ([`Backend::device_batch`]): the same buffers
/// [`Backend::device_pass`] takes.
pub struct PassInput<'a, E: Curve> {
    /// a, b, c over the domain; h in `a` afterwards (as for `device_pass`).
    pub evals: &'a mut QapEvals<E::ScalarField>,
    /// The witness as MSM scalars (the key's nVars of them).
    pub w: &'a [ScalarInt<E>],
    /// Scratch for h as MSM scalars.
    pub h: &'a mut Vec<ScalarInt<E>>,
    /// This proof's timings.
    pub t: &'a mut Timings,
}

/// arkworks for NTTs and [`crate::pippenger`]'s batch-affine MSM, on the current rayon pool.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuBackend;

fn check_lengths(bases: usize, scalars: usize) -> Result<(), Error> {
    if bases != scalars {
        return Err(Error::Backend {
            backend: "cpu",
            message: format!("MSM with {bases} bases and {scalars} scalars"),
        });
    }
    Ok(())
}

impl<E: Curve> Backend<E> for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn quotient(
        &self,
        domain: &QuotientDomain<E::ScalarField>,
        evals: &mut QapEvals<E::ScalarField>,
    ) -> Result<(), Error> {
        quotient::quotient(domain, evals);
        Ok(())
    }

    fn msm_g1(&self, bases: &[E::G1Affine], scalars: &[ScalarInt<E>]) -> Result<E::G1, Error> {
        check_lengths(bases.len(), scalars.len())?;
        Ok(E::G1Affine::msm_batch_affine(bases, scalars))
    }

    fn msm_g2(&self, bases: &[E::G2Affine], scalars: &[ScalarInt<E>]) -> Result<E::G2, Error> {
        check_lengths(bases.len(), scalars.len())?;
        Ok(E::G2Affine::msm_batch_affine(bases, scalars))
    }

    /// The quotient and all MSMs as one rayon task tree, so no thread idles at the serial
    /// ends of one MSM (planning, the last uneven windows, combining windows): (quotient
    /// → [H]₁) alongside [A]₁, [B]₁, [B]₂, [C]₁. Each stage still records its own span;
    /// the spans overlap, and [`Timings::wall`] counts the overlap once.
    fn device_pass(
        &self,
        key: &CompiledKey<E>,
        evals: &mut QapEvals<E::ScalarField>,
        w: &[ScalarInt<E>],
        h: &mut Vec<ScalarInt<E>>,
        g2: bool,
        t: &mut Timings,
    ) -> Result<DeviceSums<E>, Error> {
        let p = &key.points;
        let private = &w[key.n_public + 1..];
        let g1 = |stage, bases: &[E::G1Affine], scalars: &[ScalarInt<E>]| {
            timed(stage, || Backend::<E>::msm_g1(self, bases, scalars))
        };
        let ((quotient, msm_h), (msm_b2, (msm_a, (msm_b1, msm_c)))) = rayon::join(
            || {
                let q = timed(Stage::Quotient, || quotient::quotient(&key.domain, evals));
                scalars_into(evals.h(), h);
                (q, g1(Stage::MsmH, &p.h, h))
            },
            || {
                rayon::join(
                    || g2.then(|| timed(Stage::MsmB2, || Backend::<E>::msm_g2(self, &p.b2, w))),
                    || {
                        rayon::join(
                            || g1(Stage::MsmA, &p.a, w),
                            || {
                                rayon::join(
                                    || g1(Stage::MsmB1, &p.b1, w),
                                    || g1(Stage::MsmC, &p.c, private),
                                )
                            },
                        )
                    },
                )
            },
        );
        t.spans.push(quotient.1);
        let mut spans = vec![msm_a.1, msm_b1.1, msm_c.1, msm_h.1];
        if let Some((_, s)) = &msm_b2 {
            spans.push(*s);
        }
        spans.sort_by_key(|s| s.end);
        t.spans.extend(spans);
        Ok(DeviceSums {
            a: msm_a.0?,
            b1: msm_b1.0?,
            b2: msm_b2.map(|(r, _)| r).transpose()?,
            c: msm_c.0?,
            h: msm_h.0?,
        })
    }
}
