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
    let key = &**bound.key();
    check_witness(key, witness)?;
    let mut evals = QapEvals::zeroed(0);
    let (mut w, mut h) = (Vec::new(), Vec::new());
    let caps = bound.caps();
    let on = ReduceOn::for_caps(caps, opts.schedule);
    reduce_stage(
        key,
        witness,
        &mut evals,
        &mut w,
        on,
        caps.wants_scalars(),
        t,
    )?;
    let input = PassInput {
        evals: &mut evals,
        w: PassWitness::for_caps(caps, &witness.values, &w),
        h: &mut h,
        t: &mut *t,
    };
    let sums = device_stage(bound, &mut [input]).remove(0)?;
    drop((evals, h));
    tail_stage(key, witness, &w, &sums, opts.self_check, rng, t)
}
