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
    fn pass(&self, inputs: &mut [PassInput<'_, Bn254>]) -> Vec<Result<DeviceSums<Bn254>, Error>> {
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
