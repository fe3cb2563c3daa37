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
mod tests {
    use super::*;
    use crate::cpu::{CpuBound, CPU_CAPS};
    use crate::device::G1Set;
    use crate::key::PointChecks;
    use crate::reduce::DEFAULT_SCHEDULE;
    use crate::Bn254;
    use std::path::PathBuf;
    use std::sync::{Arc, Mutex};
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

    fn key() -> Arc<CompiledKey<Bn254>> {
        let zkey = ZkeyFile::open(fixture("circuit.zkey")).unwrap();
        Arc::new(CompiledKey::<Bn254>::compile(&zkey, PointChecks::Trusted).unwrap())
    }

    /// The reduce stage of a fixture witness: its (evals, w) for the device stage.
    fn reduced(key: &CompiledKey<Bn254>, file: &str) -> Reduced {
        let wtns = Wtns::read(fixture(file)).unwrap();
        let witness = Witness::check_for(&wtns, key).unwrap();
        let (mut evals, mut w) = (QapEvals::zeroed(0), Vec::new());
        let mut t = Timings::default();
        let on = ReduceOn::Cpu(DEFAULT_SCHEDULE);
        reduce_stage(key, &witness, &mut evals, &mut w, on, true, &mut t).unwrap();
        (evals, w)
    }

    /// The device stage of each input on `bound`, in order.
    fn run(
        bound: &dyn BoundKey<Bn254>,
        batch: &mut [Reduced],
    ) -> Vec<Result<DeviceSums<Bn254>, Error>> {
        let mut hs: Vec<Vec<ScalarInt<Bn254>>> = vec![Vec::new(); batch.len()];
        let mut ts = vec![Timings::default(); batch.len()];
        let mut inputs: Vec<PassInput<'_, Bn254>> = batch
            .iter_mut()
            .zip(&mut hs)
            .zip(&mut ts)
            .map(|(((evals, w), h), t)| PassInput {
                evals,
                w: PassWitness::Scalars(w),
                h,
                t,
            })
            .collect();
        device_stage(bound, &mut inputs)
    }

    /// Where the device reduces, the reduce stage leaves a, b, c out and still prepares
    /// w; a device that does not reduce refuses such a pass with an error, not a panic.
    #[test]
    fn the_reduce_stage_leaves_a_b_c_to_a_device_that_reduces() {
        let key = key();
        let wtns = Wtns::read(fixture("witness.wtns")).unwrap();
        let witness = Witness::check_for(&wtns, &key).unwrap();
        let (mut evals, mut w) = (QapEvals::zeroed(key.domain_size()), Vec::new());
        let mut t = Timings::default();
        let on = ReduceOn::Device;
        reduce_stage(&key, &witness, &mut evals, &mut w, on, true, &mut t).unwrap();
        assert!(evals.a.is_empty() && evals.b.is_empty() && evals.c.is_empty());
        assert_eq!(
            w,
            reduced(&key, "witness.wtns").1,
            "w is prepared all the same"
        );
        assert_eq!(
            ReduceOn::for_caps(CPU_CAPS, DEFAULT_SCHEDULE),
            ReduceOn::Cpu(DEFAULT_SCHEDULE)
        );
        let r = run(&CpuBound::new(key), &mut [(evals, w)]);
        assert!(
            matches!(&r[0], Err(Error::InvalidKey(m)) if m.contains("0 rows")),
            "{r:?}"
        );
    }

    /// A device whose passes take at most two proofs, recording the size of each pass.
    struct Pairs {
        cpu: CpuBound<Bn254>,
        passes: Mutex<Vec<usize>>,
    }

    impl BoundKey<Bn254> for Pairs {
        fn name(&self) -> &'static str {
            "pairs"
        }
        fn key(&self) -> &Arc<CompiledKey<Bn254>> {
            self.cpu.key()
        }
        fn caps(&self) -> Caps {
            Caps {
                batch_limit: 2,
                g2: true,
                ..CPU_CAPS
            }
        }
        fn quotient(
            &self,
            evals: &mut QapEvals<<Bn254 as ark_ec::pairing::Pairing>::ScalarField>,
        ) -> Result<(), Error> {
            self.cpu.quotient(evals)
        }
        fn msm_g1(
            &self,
            set: G1Set,
            s: &[ScalarInt<Bn254>],
        ) -> Result<<Bn254 as ark_ec::pairing::Pairing>::G1, Error> {
            self.cpu.msm_g1(set, s)
        }
        fn msm_g2(
            &self,
            s: &[ScalarInt<Bn254>],
        ) -> Result<<Bn254 as ark_ec::pairing::Pairing>::G2, Error> {
            self.cpu.msm_g2(s)
        }
        fn pass(
            &self,
            inputs: &mut [PassInput<'_, Bn254>],
        ) -> Vec<Result<DeviceSums<Bn254>, Error>> {
            self.passes.lock().unwrap().push(inputs.len());
            inputs
                .iter_mut()
                .map(|p| crate::device::verbs_pass(self, p))
                .collect()
        }
    }

    /// Several proofs give each what it gets alone, in input order; an input whose `w`
    /// does not fit the key fails without failing the others; passes never exceed the
    /// device's batch limit; the verbs' pass computes [B]₂ where the caps say so, and the
    /// CPU's leaves it to the tail.
    #[test]
    fn a_batch_matches_single_passes_in_order_and_a_bad_input_fails_alone() {
        let key = key();
        let cpu = CpuBound::new(Arc::clone(&key));
        let good = reduced(&key, "witness.wtns");
        // A witness that does not satisfy the circuit still has a device stage, with other sums.
        let other = reduced(&key, "bad_witness.wtns");
        let mut short = good.clone();
        short.1.pop();
        let want_good = run(&cpu, &mut [good.clone()]).remove(0).unwrap();
        let want_other = run(&cpu, &mut [other.clone()]).remove(0).unwrap();
        assert_ne!(want_good, want_other, "the inputs differ, so order shows");
        assert!(want_good.b2.is_none(), "the CPU leaves [B]₂ to the tail");

        let pairs = Pairs {
            cpu,
            passes: Mutex::new(Vec::new()),
        };
        let got = run(&pairs, &mut [good.clone(), other, short, good.clone()]);
        assert_eq!(got.len(), 4);
        let strip = |s: &DeviceSums<Bn254>| DeviceSums { b2: None, ..*s };
        assert_eq!(strip(got[0].as_ref().unwrap()), want_good);
        assert_eq!(strip(got[1].as_ref().unwrap()), want_other);
        assert!(
            matches!(got[2], Err(Error::WitnessLength { expected, found }) if found + 1 == expected),
            "{:?}",
            got[2]
        );
        assert_eq!(strip(got[3].as_ref().unwrap()), want_good);
        assert_eq!(
            *pairs.passes.lock().unwrap(),
            vec![2, 1],
            "three good inputs in passes of at most two"
        );
        let b2 = crate::cpu::msm_g2::<Bn254>(&key.points.b2, &good.1).unwrap();
        assert_eq!(
            got[0].as_ref().unwrap().b2,
            Some(b2),
            "[B]₂ where the caps say so"
        );
        // A lone proof's CPU binding makes [B]₂ in the pass, and the same other sums.
        let lone = CpuBound::new(Arc::clone(&key)).with_g2_in_pass();
        assert!(lone.caps().g2);
        let got = run(&lone, &mut [good.clone()]).remove(0).unwrap();
        assert_eq!(got.b2, Some(b2));
        assert_eq!(strip(&got), want_good);
    }

    /// A device that reads the witness's field elements gets no scalars from the reduce
    /// stage (w stays empty) and computes the same sums from the Montgomery form; the
    /// tail then makes [B]₂'s scalars itself, and the proof is the one the scalars give.
    #[test]
    fn a_montgomery_witness_gives_the_same_sums_and_proof() {
        use rand::SeedableRng;
        let key = key();
        let cpu = CpuBound::new(Arc::clone(&key));
        let wtns = Wtns::read(fixture("witness.wtns")).unwrap();
        let witness = Witness::check_for(&wtns, &key).unwrap();
        let mut t = Timings::default();
        let (mut evals, mut w) = (QapEvals::zeroed(0), vec![Default::default(); 3]);
        let on = ReduceOn::Cpu(DEFAULT_SCHEDULE);
        reduce_stage(&key, &witness, &mut evals, &mut w, on, false, &mut t).unwrap();
        assert!(w.is_empty(), "no scalars where the device converts");
        let (want_evals, want_w) = reduced(&key, "witness.wtns");
        assert_eq!(evals, want_evals);

        let mut h = Vec::new();
        let input = PassInput {
            evals: &mut evals,
            w: PassWitness::Montgomery(&witness.values),
            h: &mut h,
            t: &mut t,
        };
        let got = device_stage(&cpu, &mut [input]).remove(0).unwrap();
        let want = run(&cpu, &mut [(want_evals, want_w.clone())])
            .remove(0)
            .unwrap();
        assert_eq!(got, want);

        let prove = |w: &[ScalarInt<Bn254>]| {
            let mut rng = rand::rngs::StdRng::seed_from_u64(7);
            let mut t = Timings::default();
            tail_stage(&key, &witness, w, &got, true, &mut rng, &mut t).unwrap()
        };
        assert_eq!(
            prove(&[]),
            prove(&want_w),
            "the tail converts for [B]₂ itself"
        );
        assert!(
            PassWitness::<Bn254>::for_caps(CPU_CAPS, &witness.values, &want_w)
                .scalars()
                .iter()
                .eq(want_w.iter()),
            "the CPU reads scalars"
        );
    }
    /// A key bound with a mask (constant-work MSMs) gives the unmasked sums, and [B]₂
    /// too, as its caps say: for the witness as scalars and in Montgomery form, and for
    /// all-zero and all-one values.
    #[test]
    fn a_masked_key_gives_the_unmasked_sums_and_b2() {
        let key = key();
        let cpu = CpuBound::new(Arc::clone(&key));
        let masked = CpuBound::masked(Arc::clone(&key));
        assert!(masked.caps().g2 && !cpu.caps().g2);
        assert!(masked.caps().montgomery_w && !cpu.caps().montgomery_w);
        let (evals, w) = reduced(&key, "witness.wtns");
        let n = w.len();
        let value = |v: u64| vec![ScalarInt::<Bn254>::from(v); n];
        for w in [w.clone(), value(0), value(1)] {
            let input = (evals.clone(), w.clone());
            let want = run(&cpu, &mut [input.clone()]).remove(0).unwrap();
            let b2 = crate::cpu::msm_g2::<Bn254>(&key.points.b2, &w).unwrap();
            let got = run(&masked, &mut [input]).remove(0).unwrap();
            assert_eq!(
                got,
                DeviceSums {
                    b2: Some(b2),
                    ..want
                }
            );
        }

        let wtns = Wtns::read(fixture("witness.wtns")).unwrap();
        let witness = Witness::check_for(&wtns, &key).unwrap();
        let (mut evals_m, mut h, mut t) = (evals.clone(), Vec::new(), Timings::default());
        let input = PassInput {
            evals: &mut evals_m,
            w: PassWitness::Montgomery(&witness.values),
            h: &mut h,
            t: &mut t,
        };
        let got = device_stage(&masked, &mut [input]).remove(0).unwrap();
        let want = run(&masked, &mut [(evals, w)]).remove(0).unwrap();
        assert_eq!(got, want, "the Montgomery form gives the same sums");
    }

    /// The tail of the fixture witness on the CPU: the witness, its scalars and sums.
    fn tail_inputs(
        key: &Arc<CompiledKey<Bn254>>,
    ) -> (
        Witness<<Bn254 as ark_ec::pairing::Pairing>::ScalarField>,
        Vec<ScalarInt<Bn254>>,
        DeviceSums<Bn254>,
    ) {
        let wtns = Wtns::read(fixture("witness.wtns")).unwrap();
        let witness = Witness::check_for(&wtns, key).unwrap();
        let (evals, w) = reduced(key, "witness.wtns");
        let cpu = CpuBound::new(Arc::clone(key));
        let sums = run(&cpu, &mut [(evals, w.clone())]).remove(0).unwrap();
        (witness, w, sums)
    }

    /// A proof whose device sums were tampered with fails the one-shot self-check with
    /// `NotSatisfied`, with the key's prepared verification key (a resident key, or a
    /// one-shot proof's once it is ready) and without it (`verify`); the same sums pass
    /// when untouched, and the tampered proof is returned unchecked without the check.
    #[test]
    fn a_tampered_proof_fails_the_one_shot_self_check() {
        use ark_ec::PrimeGroup;
        let rng = &mut rand::rngs::OsRng;
        for resident in [false, true] {
            let key = key();
            if resident {
                key.prepare_resident();
            }
            assert_eq!(key.prepared_vk().is_some(), resident);
            let (witness, w, sums) = tail_inputs(&key);
            let mut t = Timings::default();
            let good = tail_stage(&key, &witness, &w, &sums, true, rng, &mut t);
            assert!(good.is_ok(), "{good:?}");
            assert!(t.total(Stage::Verify) > std::time::Duration::ZERO);
            let mut bad = sums;
            bad.c += <Bn254 as ark_ec::pairing::Pairing>::G1::generator();
            let got = tail_stage(&key, &witness, &w, &bad, true, rng, &mut t);
            assert!(matches!(got, Err(Error::NotSatisfied)), "{got:?}");
            let unchecked = tail_stage(&key, &witness, &w, &bad, false, rng, &mut t).unwrap();
            let public = witness.public(key.n_public);
            assert!(!verify(&key.vk, public, &unchecked).unwrap());
        }
    }

    /// A batch with one bad proof among several: checked together where the key has a
    /// prepared verification key, one by one where not, the bad one (wherever it is) fails
    /// with `NotSatisfied` and every other passes.
    #[test]
    fn a_self_check_batch_names_its_one_bad_proof() {
        use ark_ec::PrimeGroup;
        let rng = &mut rand::rngs::OsRng;
        for resident in [true, false] {
            let key = key();
            if resident {
                key.prepare_resident();
            }
            let (witness, w, sums) = tail_inputs(&key);
            let mut bad_sums = sums;
            bad_sums.a += <Bn254 as ark_ec::pairing::Pairing>::G1::generator();
            let mut t = Timings::default();
            let mut assemble = |s: &DeviceSums<Bn254>| {
                assemble_stage(&key, &witness, &w, s, &mut *rng, &mut t).unwrap()
            };
            let good: Vec<Proof<Bn254>> = (0..4).map(|_| assemble(&sums)).collect();
            let bad = assemble(&bad_sums);
            let public = witness.public(key.n_public);
            for at in [0, 2, 4] {
                let mut proofs: Vec<&Proof<Bn254>> = good.iter().collect();
                proofs.insert(at, &bad);
                let items: Vec<_> = proofs.iter().map(|p| (public, *p)).collect();
                let got = self_check_batch(&key, &items, &mut *rng);
                assert_eq!(got.len(), 5);
                for (i, r) in got.iter().enumerate() {
                    if i == at {
                        assert!(matches!(r, Err(Error::NotSatisfied)), "{at}: {got:?}");
                    } else {
                        assert!(r.is_ok(), "{resident} {at}: {got:?}");
                    }
                }
            }
            let items: Vec<_> = good.iter().map(|p| (public, p)).collect();
            let got = self_check_batch(&key, &items, &mut *rng);
            assert!(got.iter().all(Result::is_ok), "{got:?}");
        }
    }
}
