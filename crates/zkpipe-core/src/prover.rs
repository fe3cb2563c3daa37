//! One proof, stage by stage: reduce → quotient → msm → assemble → self-check.
//! The CLI runs these back to back; an engine can run each stage on its own pool.

use crate::backend::Backend;
use crate::curve::Curve;
use crate::error::Error;
use crate::key::CompiledKey;
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

/// Proves `witness` with `key` on `backend`, recording each stage in `t`: the three
/// stages of [`crate::stages`] back to back (the G2 MSM in the tail, on `backend`).
pub fn prove<E: Curve, B: Backend<E> + ?Sized>(
    key: &CompiledKey<E>,
    witness: &Witness<E::ScalarField>,
    backend: &B,
    opts: &ProveOptions,
    rng: &mut (impl RngCore + CryptoRng),
    t: &mut Timings,
) -> Result<Proof<E>, Error> {
    check_witness(key, witness)?;
    let mut evals = QapEvals::zeroed(0);
    let (mut w, mut h) = (Vec::new(), Vec::new());
    let on = ReduceOn::for_backend(backend, key, opts.schedule);
    reduce_stage(key, witness, &mut evals, &mut w, on, t)?;
    let sums = device_stage(backend, key, &mut evals, &w, &mut h, false, t)?;
    drop((evals, h));
    tail_stage(backend, key, witness, &w, &sums, opts.self_check, rng, t)
}
