//! One proof as three pipeline stages over explicit, caller-owned buffers, so that an
//! engine can run each on its own pool or device and recycle the buffers. The steps of
//! the proof (numbered as in the crate doc) fall into them so:
//!
//! ```text
//!   reduce_stage  (CPU)     step 1: witness → a, b, c over the domain; w as MSM scalars
//!   device_stage  (device)  steps 2–3: quotient → h; [A]₁, [B]₁, [C]₁, [H]₁ ([B]₂ where the
//!                           device does it), for one or several proofs in one pass
//!   tail_stage    (CPU)     step 3's [B]₂ if the device left it; steps 4–5: assemble, self-check
//! ```
//!
//! [`crate::prover::prove`] runs the three back to back; there is one code path.

use crate::assemble::assemble;
use crate::cpu;
use crate::curve::Curve;
use crate::device::{BoundKey, Caps, PassInput, PassWitness};
use crate::error::Error;
use crate::key::CompiledKey;
use crate::msm::{scalars_into, DeviceSums, MsmResults, ScalarInt};
use crate::proof::Proof;
use crate::reduce::{reduce, QapEvals, RowSchedule};
use crate::timings::{Stage, Timings};
use crate::verify::verify;
use crate::witness::Witness;
use ark_std::UniformRand;
use rand::{CryptoRng, RngCore};

/// Checks that `witness` has the key's nVars values.
pub fn check_witness<E: Curve>(
    key: &CompiledKey<E>,
    witness: &Witness<E::ScalarField>,
) -> Result<(), Error> {
    if witness.values.len() != key.n_vars {
        return Err(Error::WitnessLength {
            expected: key.n_vars,
            found: witness.values.len(),
        });
    }
    Ok(())
}

/// Where the reduce stage's sparse products run: see [`Caps::reduces`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOn {
    /// On the current rayon pool, into `evals`.
    Cpu(RowSchedule),
    /// In the device stage; the reduce stage leaves `evals` empty.
    Device,
}

impl ReduceOn {
    /// Where a device with `caps` wants the products, with `schedule` for the CPU.
    pub fn for_caps(caps: Caps, schedule: RowSchedule) -> Self {
        if caps.reduces {
            ReduceOn::Device
        } else {
            ReduceOn::Cpu(schedule)
        }
    }
}

/// The reduce stage: the witness as MSM scalars into `w` if `scalars` (else `w` is left
/// empty: the device reads the field elements, [`Caps::wants_scalars`]) and, on the CPU,
/// a = A·w, b = B·w, c = a∘b into `evals` (resized to the domain if needed; emptied when
/// the device computes them). Runs on the current rayon pool.
pub fn reduce_stage<E: Curve>(
    key: &CompiledKey<E>,
    witness: &Witness<E::ScalarField>,
    evals: &mut QapEvals<E::ScalarField>,
    w: &mut Vec<ScalarInt<E>>,
    on: ReduceOn,
    scalars: bool,
    t: &mut Timings,
) -> Result<(), Error> {
    check_witness(key, witness)?;
    let n = match on {
        ReduceOn::Cpu(_) => key.domain_size(),
        ReduceOn::Device => 0,
    };
    for v in [&mut evals.a, &mut evals.b, &mut evals.c] {
        v.resize(n, Default::default());
    }
    t.time(Stage::Reduce, || {
        if let ReduceOn::Cpu(schedule) = on {
            reduce(&key.a, &key.b, &witness.values, evals, schedule);
        }
        if scalars {
            scalars_into(&witness.values, w);
        } else {
            w.clear();
        }
    });
    Ok(())
}

/// The device stage of one or several proofs of `bound`'s key in one pass, results in
/// input order: the quotient (h into `evals.a`, then as MSM scalars into `h`) and the
/// MSMs the device does. An input whose lengths do not fit the key fails alone; the
/// others still run. At most the device's `batch_limit` inputs are passed at once (more
/// run in several passes). `evals` and `h` are scratch the caller may recycle afterwards.
pub fn device_stage<E: Curve>(
    bound: &dyn BoundKey<E>,
    inputs: &mut [PassInput<'_, E>],
) -> Vec<Result<DeviceSums<E>, Error>> {
    let key = &**bound.key();
    let caps = bound.caps();
    let checks: Vec<Result<(), Error>> = inputs
        .iter()
        .map(|p| check_lengths(key, p.evals, p.w, caps.reduces))
        .collect();
    let mut good: Vec<PassInput<'_, E>> = inputs
        .iter_mut()
        .zip(&checks)
        .filter(|(_, ok)| ok.is_ok())
        .map(|(p, _)| PassInput {
            evals: &mut *p.evals,
            w: p.w,
            h: &mut *p.h,
            t: &mut *p.t,
        })
        .collect();
    let mut sums = Vec::with_capacity(good.len());
    for chunk in good.chunks_mut(caps.batch_limit.max(1)) {
        sums.extend(bound.pass(chunk));
    }
    let mut sums = sums.into_iter();
    checks
        .into_iter()
        .map(|ok| match ok {
            Ok(()) => sums.next().unwrap_or_else(|| {
                Err(Error::Backend {
                    backend: bound.name(),
                    message: "a device pass returned fewer results than proofs".into(),
                })
            }),
            Err(e) => Err(e),
        })
        .collect()
}

/// The tail stage: [`assemble_stage`] and, if `self_check`, the proof verified against
/// the key's verification key (an unsatisfied check is [`Error::NotSatisfied`]).
#[allow(clippy::too_many_arguments)]
pub fn tail_stage<E: Curve>(
    key: &CompiledKey<E>,
    witness: &Witness<E::ScalarField>,
    w: &[ScalarInt<E>],
    sums: &DeviceSums<E>,
    self_check: bool,
    rng: &mut (impl RngCore + CryptoRng),
    t: &mut Timings,
) -> Result<Proof<E>, Error> {
    let proof = assemble_stage(key, witness, w, sums, rng, t)?;
    if self_check {
        let public = witness.public(key.n_public);
        let ok = t.time(Stage::Verify, || check_one(key, public, &proof))?;
        if !ok {
            return Err(Error::NotSatisfied);
        }
    }
    Ok(proof)
}

/// The tail's proof: [B]₂ on the CPU if the device stage left it (from `w`, or from the
/// witness where `w` is empty), then assembly with fresh r, s.
pub fn assemble_stage<E: Curve>(
    key: &CompiledKey<E>,
    witness: &Witness<E::ScalarField>,
    w: &[ScalarInt<E>],
    sums: &DeviceSums<E>,
    rng: &mut (impl RngCore + CryptoRng),
    t: &mut Timings,
) -> Result<Proof<E>, Error> {
    check_witness(key, witness)?;
    let b2 = match sums.b2 {
        Some(b2) => b2,
        None => {
            let mut converted = Vec::new();
            let w = if w.is_empty() {
                scalars_into(&witness.values, &mut converted);
                &converted
            } else {
                w
            };
            if w.len() != key.n_vars {
                return Err(Error::WitnessLength {
                    expected: key.n_vars,
                    found: w.len(),
                });
            }
            t.time(Stage::MsmB2, || cpu::msm_g2::<E>(&key.points.b2, w))?
        }
    };
    let all = MsmResults {
        a: sums.a,
        b1: sums.b1,
        b2,
        c: sums.c,
        h: sums.h,
    };
    let (r, s) = (E::ScalarField::rand(rng), E::ScalarField::rand(rng));
    Ok(t.time(Stage::Assemble, || assemble(key, &all, r, s)))
}

/// One proof checked: with the key's prepared verification key where it has one.
fn check_one<E: Curve>(
    key: &CompiledKey<E>,
    public: &[E::ScalarField],
    proof: &Proof<E>,
) -> Result<bool, Error> {
    match key.prepared_vk() {
        Some(prepared) => prepared.verify(public, proof),
        None => verify(&key.vk, public, proof),
    }
}

/// The self-check of several proofs of one key (public inputs, proof): checked together
/// ([`crate::verify::PreparedVerifyingKey::verify_batch`], one final exponentiation) where
/// the key has a prepared verification key, and one by one where that fails, to name the
/// failures. Each proof's outcome in order: `Ok`, [`Error::NotSatisfied`], or the error
/// its check gave.
pub fn self_check_batch<E: Curve>(
    key: &CompiledKey<E>,
    items: &[(&[E::ScalarField], &Proof<E>)],
    rng: &mut (impl RngCore + CryptoRng),
) -> Vec<Result<(), Error>> {
    let one = |(public, proof): &(&[E::ScalarField], &Proof<E>)| match check_one(key, public, proof)
    {
        Ok(true) => Ok(()),
        Ok(false) => Err(Error::NotSatisfied),
        Err(e) => Err(e),
    };
    let together = match key.prepared_vk() {
        Some(prepared) if items.len() > 1 => prepared.verify_batch(items, rng),
        _ => return items.iter().map(one).collect(),
    };
    match together {
        Ok(true) => items.iter().map(|_| Ok(())).collect(),
        // Some proof failed (or one's inputs do not fit the key): find which.
        _ => items.iter().map(one).collect(),
    }
}

/// `evals` must span the domain, or be empty where the device reduces.
fn check_lengths<E: Curve>(
    key: &CompiledKey<E>,
    evals: &QapEvals<E::ScalarField>,
    w: PassWitness<'_, E>,
    reduces_on_device: bool,
) -> Result<(), Error> {
    let n = if reduces_on_device {
        0
    } else {
        key.domain_size()
    };
    if evals.a.len() != n || evals.b.len() != n || evals.c.len() != n {
        return Err(Error::InvalidKey(format!(
            "QAP evaluations of {} rows where the device stage takes {n}",
            evals.a.len()
        )));
    }
    if w.len() != key.n_vars {
        return Err(Error::WitnessLength {
            expected: key.n_vars,
            found: w.len(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
