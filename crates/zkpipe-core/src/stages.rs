//! One proof as three stages over explicit, caller-owned buffers, so that an engine can run
//! each stage on its own pool or device and recycle the buffers:
//!
//! ```text
//!   reduce_stage   (CPU)     witness → a, b, c over the domain; w as MSM scalars
//!   device_stage   (device)  quotient → h; G1 MSMs [A]₁, [B]₁, [C]₁, [H]₁ (and [B]₂ if asked)
//!   tail_stage     (CPU)     [B]₂ if not done on the device; assemble; self-check
//! ```
//!
//! [`crate::prover::prove`] runs the three back to back; there is one code path.

use crate::assemble::assemble;
use crate::backend::{Backend, PassInput, ScalarInt};
use crate::curve::Curve;
use crate::error::Error;
use crate::key::CompiledKey;
use crate::msm::MsmResults;
use crate::proof::Proof;
use crate::reduce::{reduce, QapEvals, RowSchedule};
use crate::timings::{Stage, Timings};
use crate::verify::verify;
use crate::witness::Witness;
use ark_ff::PrimeField;
use ark_std::UniformRand;
use rand::{CryptoRng, RngCore};
use rayon::prelude::*;

/// The sums the device stage produces; `b2` is `None` when the G2 MSM is left to the tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceSums<E: Curve> {
    /// Σ wᵢ·Aᵢ.
    pub a: E::G1,
    /// Σ wᵢ·B₁ᵢ.
    pub b1: E::G1,
    /// Σ wᵢ·B₂ᵢ, if computed on the device.
    pub b2: Option<E::G2>,
    /// Σ wᵢ·Cᵢ over private signals.
    pub c: E::G1,
    /// Σ hⱼ·Hⱼ.
    pub h: E::G1,
}

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

/// Field elements → standard-form integers into `out` (cleared first; its capacity is reused).
pub fn scalars_into<F: PrimeField>(v: &[F], out: &mut Vec<F::BigInt>) {
    out.clear();
    out.par_extend(v.par_iter().map(|x| x.into_bigint()));
}

/// Where stage 1's sparse products run: see [`Backend::reduces_on_device`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOn {
    /// On the current rayon pool, into `evals`.
    Cpu(RowSchedule),
    /// In the device stage; stage 1 leaves `evals` empty.
    Device,
}

impl ReduceOn {
    /// Where `backend` wants `key`'s products, with `schedule` for the CPU.
    pub fn for_backend<E: Curve, B: Backend<E> + ?Sized>(
        backend: &B,
        key: &CompiledKey<E>,
        schedule: RowSchedule,
    ) -> Self {
        if backend.reduces_on_device(key) {
            ReduceOn::Device
        } else {
            ReduceOn::Cpu(schedule)
        }
    }
}

/// Stage 1: the witness as MSM scalars into `w` and, on the CPU, a = A·w, b = B·w,
/// c = a∘b into `evals` (resized to the domain if needed; emptied when the device
/// computes them). Runs on the current rayon pool.
pub fn reduce_stage<E: Curve>(
    key: &CompiledKey<E>,
    witness: &Witness<E::ScalarField>,
    evals: &mut QapEvals<E::ScalarField>,
    w: &mut Vec<ScalarInt<E>>,
    on: ReduceOn,
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
        scalars_into(&witness.values, w);
    });
    Ok(())
}

/// Stage 2: the quotient (h into `evals.a`, then as MSM scalars into `h`) and the G1 MSMs
/// on `backend`; the G2 MSM too if `g2_on_device`. `evals` and `h` are scratch the caller
/// may recycle afterwards.
pub fn device_stage<E: Curve, B: Backend<E> + ?Sized>(
    backend: &B,
    key: &CompiledKey<E>,
    evals: &mut QapEvals<E::ScalarField>,
    w: &[ScalarInt<E>],
    h: &mut Vec<ScalarInt<E>>,
    g2_on_device: bool,
    t: &mut Timings,
) -> Result<DeviceSums<E>, Error> {
    check_lengths(key, evals, w, backend.reduces_on_device(key))?;
    backend.device_pass(key, evals, w, h, g2_on_device, t)
}

/// Stage 2 for several proofs of `key` at once on `backend` (see
/// [`Backend::device_batch`]); results in input order. An input whose lengths do not fit
/// the key fails alone; the others still run.
pub fn device_stage_batch<E: Curve, B: Backend<E> + ?Sized>(
    backend: &B,
    key: &CompiledKey<E>,
    inputs: &mut [PassInput<'_, E>],
    g2_on_device: bool,
) -> Vec<Result<DeviceSums<E>, Error>> {
    let on_device = backend.reduces_on_device(key);
    let checks: Vec<Result<(), Error>> = inputs
        .iter()
        .map(|p| check_lengths(key, p.evals, p.w, on_device))
        .collect();
    let mut good: Vec<PassInput<'_, E>> = Vec::with_capacity(inputs.len());
    for (p, ok) in inputs.iter_mut().zip(&checks) {
        if ok.is_ok() {
            good.push(PassInput {
                evals: &mut *p.evals,
                w: p.w,
                h: &mut *p.h,
                t: &mut *p.t,
            });
        }
    }
    let mut sums = if good.is_empty() {
        Vec::new()
    } else {
        backend.device_batch(key, &mut good, g2_on_device)
    }
    .into_iter();
    checks
        .into_iter()
        .map(|ok| match ok {
            Ok(()) => sums.next().unwrap_or_else(|| {
                Err(Error::Backend {
                    backend: backend.name(),
                    message: "device batch returned fewer results than proofs".into(),
                })
            }),
            Err(e) => Err(e),
        })
        .collect()
}

/// Stage 3: [B]₂ on `g2_backend` if the device stage left it, then assemble with fresh
/// r, s and, if `self_check`, verify the proof against the key's verification key.
#[allow(clippy::too_many_arguments)]
pub fn tail_stage<E: Curve, B: Backend<E> + ?Sized>(
    g2_backend: &B,
    key: &CompiledKey<E>,
    witness: &Witness<E::ScalarField>,
    w: &[ScalarInt<E>],
    sums: &DeviceSums<E>,
    self_check: bool,
    rng: &mut (impl RngCore + CryptoRng),
    t: &mut Timings,
) -> Result<Proof<E>, Error> {
    check_witness(key, witness)?;
    let b2 = match sums.b2 {
        Some(b2) => b2,
        None => {
            if w.len() != key.n_vars {
                return Err(Error::WitnessLength {
                    expected: key.n_vars,
                    found: w.len(),
                });
            }
            t.time(Stage::MsmB2, || g2_backend.msm_g2(&key.points.b2, w))?
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
    let proof = t.time(Stage::Assemble, || assemble(key, &all, r, s));
    if self_check {
        let ok = t.time(Stage::Verify, || {
            verify(&key.vk, witness.public(key.n_public), &proof)
        })?;
        if !ok {
            return Err(Error::NotSatisfied);
        }
    }
    Ok(proof)
}

/// `evals` must span the domain, or be empty where the device reduces.
fn check_lengths<E: Curve>(
    key: &CompiledKey<E>,
    evals: &QapEvals<E::ScalarField>,
    w: &[ScalarInt<E>],
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
mod tests {
    use super::*;
    use crate::backend::CpuBackend;
    use crate::key::PointChecks;
    use crate::reduce::DEFAULT_SCHEDULE;
    use crate::Bn254;
    use std::path::PathBuf;
    use zkpipe_formats::wtns::Wtns;
    use zkpipe_formats::zkey::ZkeyFile;

    type Reduced = (
        QapEvals<<Bn254 as ark_ec::pairing::Pairing>::ScalarField>,
        Vec<ScalarInt<Bn254>>,
    );

    fn fixture(file: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/bn254/multi_public")
            .join(file)
    }

    /// Stage 1 of a fixture witness: its (evals, w) for the device stage.
    fn reduced(key: &CompiledKey<Bn254>, file: &str) -> Reduced {
        let wtns = Wtns::read(fixture(file)).unwrap();
        let witness = Witness::check_for(&wtns, key).unwrap();
        let (mut evals, mut w) = (QapEvals::zeroed(0), Vec::new());
        let mut t = Timings::default();
        let on = ReduceOn::Cpu(DEFAULT_SCHEDULE);
        reduce_stage(key, &witness, &mut evals, &mut w, on, &mut t).unwrap();
        (evals, w)
    }

    /// Where the device reduces, stage 1 leaves a, b, c out and still prepares w; a
    /// backend that does not reduce refuses such a pass with an error, not a panic.
    #[test]
    fn stage_1_leaves_a_b_c_to_a_device_that_reduces() {
        let zkey = ZkeyFile::open(fixture("circuit.zkey")).unwrap();
        let key = CompiledKey::<Bn254>::compile(&zkey, PointChecks::Trusted).unwrap();
        let wtns = Wtns::read(fixture("witness.wtns")).unwrap();
        let witness = Witness::check_for(&wtns, &key).unwrap();
        let (mut evals, mut w) = (QapEvals::zeroed(key.domain_size()), Vec::new());
        let mut t = Timings::default();
        reduce_stage(&key, &witness, &mut evals, &mut w, ReduceOn::Device, &mut t).unwrap();
        assert!(evals.a.is_empty() && evals.b.is_empty() && evals.c.is_empty());
        assert_eq!(
            w,
            reduced(&key, "witness.wtns").1,
            "w is prepared all the same"
        );
        assert_eq!(
            ReduceOn::for_backend(&CpuBackend, &key, DEFAULT_SCHEDULE),
            ReduceOn::Cpu(DEFAULT_SCHEDULE)
        );
        let mut h = Vec::new();
        let r = device_stage(&CpuBackend, &key, &mut evals, &w, &mut h, true, &mut t);
        assert!(
            matches!(&r, Err(Error::InvalidKey(m)) if m.contains("0 rows")),
            "{r:?}"
        );
    }

    /// A batch gives each input what `device_stage` gives it alone, in input order, and an
    /// input whose `w` does not fit the key fails without failing the others.
    #[test]
    fn a_batch_matches_single_passes_in_order_and_a_bad_input_fails_alone() {
        let zkey = ZkeyFile::open(fixture("circuit.zkey")).unwrap();
        let key = CompiledKey::<Bn254>::compile(&zkey, PointChecks::Trusted).unwrap();
        let good = reduced(&key, "witness.wtns");
        // A witness that does not satisfy the circuit still has a device stage, with other sums.
        let other = reduced(&key, "bad_witness.wtns");
        let mut short = good.clone();
        short.1.pop();
        let single = |(mut evals, w): Reduced| {
            let (mut h, mut t) = (Vec::new(), Timings::default());
            device_stage(&CpuBackend, &key, &mut evals, &w, &mut h, true, &mut t)
        };
        let (want_good, want_other) = (
            single(good.clone()).unwrap(),
            single(other.clone()).unwrap(),
        );
        assert_ne!(want_good, want_other, "the inputs differ, so order shows");

        let mut batch = [good.clone(), other, short, good];
        let mut hs: Vec<Vec<ScalarInt<Bn254>>> = vec![Vec::new(); batch.len()];
        let mut ts = vec![Timings::default(); batch.len()];
        let mut inputs: Vec<PassInput<'_, Bn254>> = batch
            .iter_mut()
            .zip(&mut hs)
            .zip(&mut ts)
            .map(|(((evals, w), h), t)| PassInput { evals, w, h, t })
            .collect();
        let got = device_stage_batch(&CpuBackend, &key, &mut inputs, true);
        assert_eq!(got.len(), 4);
        assert_eq!(got[0].as_ref().unwrap(), &want_good);
        assert_eq!(got[1].as_ref().unwrap(), &want_other);
        assert!(
            matches!(got[2], Err(Error::WitnessLength { expected, found }) if found + 1 == expected),
            "{:?}",
            got[2]
        );
        assert_eq!(got[3].as_ref().unwrap(), &want_good);
        assert!(
            got[0].as_ref().unwrap().b2.is_some(),
            "g2 on the device was asked for"
        );
    }
}
