//! One proof, stage by stage: reduce → quotient → msm → assemble → self-check.
//! The CLI runs these back to back; an engine can run each stage on its own pool.

use crate::curve::Curve;
use crate::device::{BoundKey, PassInput, PassWitness};
use crate::error::Error;
use crate::proof::Proof;
use crate::reduce::{QapEvals, RowSchedule, DEFAULT_SCHEDULE};
use crate::stages::{check_witness, device_stage, reduce_stage, tail_stage, ReduceOn};
use crate::timings::Timings;
use crate::witness::Witness;
use rand::{CryptoRng, RngCore};

/// Knobs of one proof.
#[derive(Debug, Clone, Copy)]
pub struct ProveOptions {
    /// Verify the proof against the key's verification key before returning it
    /// (default true): a witness that does not satisfy the circuit is reported, not proved.
    pub self_check: bool,
    /// How the reduce stage spreads rows over threads.
    pub schedule: RowSchedule,
}

impl Default for ProveOptions {
    fn default() -> Self {
        Self {
            self_check: true,
            schedule: DEFAULT_SCHEDULE,
        }
    }
}

/// Proves `witness` with the key `bound` holds, on its device, recording each stage in
/// `t`: the three stages of [`crate::stages`] back to back.
pub fn prove<E: Curve>(
    bound: &dyn BoundKey<E>,
    witness: &Witness<E::ScalarField>,
    opts: &ProveOptions,
    rng: &mut (impl RngCore + CryptoRng),
    t: &mut Timings,
) -> Result<Proof<E>, Error> {
    check_witness(bound.key(), witness)?;
    prove_batch(bound, &[witness], opts, rng, std::slice::from_mut(t)).remove(0)
}

/// Proves several witnesses of `bound`'s key with one device stage for all of them (as
/// the engine's batched device pass does: [`crate::device::Caps::batch_limit`] proofs a
/// pass), recording each proof's stages in its own `t`. Reduce and tail run one proof
/// after another on the current rayon pool. Results in input order; a witness of the
/// wrong length fails alone.
///
/// # Panics
///
/// If `t` and `witnesses` differ in length.
pub fn prove_batch<E: Curve>(
    bound: &dyn BoundKey<E>,
    witnesses: &[&Witness<E::ScalarField>],
    opts: &ProveOptions,
    rng: &mut (impl RngCore + CryptoRng),
    t: &mut [Timings],
) -> Vec<Result<Proof<E>, Error>> {
    assert_eq!(witnesses.len(), t.len(), "one Timings per witness");
    let key = &**bound.key();
    let caps = bound.caps();
    let on = ReduceOn::for_caps(caps, opts.schedule);
    let k = witnesses.len();
    let mut evals: Vec<QapEvals<E::ScalarField>> = (0..k).map(|_| QapEvals::zeroed(0)).collect();
    let mut ws: Vec<Vec<_>> = (0..k).map(|_| Vec::new()).collect();
    let mut hs: Vec<Vec<_>> = (0..k).map(|_| Vec::new()).collect();
    let reduced: Vec<Result<(), Error>> = witnesses
        .iter()
        .zip(&mut evals)
        .zip(&mut ws)
        .zip(t.iter_mut())
        .map(|(((witness, evals), w), t)| {
            reduce_stage(key, witness, evals, w, on, caps.wants_scalars(), t)
        })
        .collect();
    // Only the reduced proofs go to the device; the others keep their error.
    let mut inputs: Vec<PassInput<'_, E>> = Vec::with_capacity(k);
    for ((((ok, witness), evals), (w, h)), t) in reduced
        .iter()
        .zip(witnesses)
        .zip(&mut evals)
        .zip(ws.iter().zip(&mut hs))
        .zip(t.iter_mut())
    {
        if ok.is_ok() {
            inputs.push(PassInput {
                evals,
                w: PassWitness::for_caps(caps, &witness.values, w),
                h,
                t,
            });
        }
    }
    let mut sums = device_stage(bound, &mut inputs).into_iter();
    // The QAP evaluations and h are scratch of the device stage: freed before the tails.
    drop(inputs);
    drop((evals, hs));
    reduced
        .into_iter()
        .zip(witnesses)
        .zip(&ws)
        .zip(t.iter_mut())
        .map(|(((ok, witness), w), t)| {
            ok?;
            let sums = sums.next().ok_or_else(|| Error::Backend {
                backend: bound.name(),
                message: "a device pass returned fewer results than proofs".into(),
            })??;
            tail_stage(key, witness, w, &sums, opts.self_check, rng, t)
        })
        .collect()
}
