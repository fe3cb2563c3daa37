//! One proof, stage by stage: reduce → quotient → msm → assemble → self-check.
//! The CLI runs these back to back; an engine can run each stage on its own pool.

use crate::assemble::assemble;
use crate::backend::Backend;
use crate::curve::Curve;
use crate::error::Error;
use crate::key::CompiledKey;
use crate::msm::{msm, to_scalars};
use crate::proof::Proof;
use crate::reduce::{reduce, QapEvals, RowSchedule, DEFAULT_SCHEDULE};
use crate::timings::{Stage, Timings};
use crate::verify::verify;
use crate::witness::Witness;
use ark_std::UniformRand;
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

/// Proves `witness` with `key` on `backend`, recording each stage in `t`.
pub fn prove<E: Curve, B: Backend<E> + ?Sized>(
    key: &CompiledKey<E>,
    witness: &Witness<E::ScalarField>,
    backend: &B,
    opts: &ProveOptions,
    rng: &mut (impl RngCore + CryptoRng),
    t: &mut Timings,
) -> Result<Proof<E>, Error> {
    if witness.values.len() != key.n_vars {
        return Err(Error::WitnessLength {
            expected: key.n_vars,
            found: witness.values.len(),
        });
    }
    let mut evals = QapEvals::zeroed(key.domain_size());
    let w = t.time(Stage::Reduce, || {
        reduce(&key.a, &key.b, &witness.values, &mut evals, opts.schedule);
        to_scalars(&witness.values)
    });
    let h = t.time(Stage::Quotient, || {
        backend.quotient(&key.domain, &mut evals)?;
        Ok::<_, Error>(to_scalars(evals.h()))
    })?;
    drop(evals);
    let sums = msm(backend, key, &w, &h, t)?;
    let (r, s) = (E::ScalarField::rand(rng), E::ScalarField::rand(rng));
    let proof = t.time(Stage::Assemble, || assemble(key, &sums, r, s));
    if opts.self_check {
        let ok = t.time(Stage::Verify, || {
            verify(&key.vk, witness.public(key.n_public), &proof)
        })?;
        if !ok {
            return Err(Error::NotSatisfied);
        }
    }
    Ok(proof)
}
