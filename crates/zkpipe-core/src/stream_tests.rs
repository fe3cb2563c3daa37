//! The CPU device under a memory limit streams a key's points as a GPU would
//! ([`crate::msm::stream_plan`]), and its sums and proofs are the in-core CPU's: both
//! curves, one proof and batches of different witnesses, masked and not, and the refusal
//! of a limit too small to stream under.

use crate::cpu::cpu_key_sets;
use crate::curve::field_from_le;
use crate::device::{BindOptions, Devices, G1Set, KeyShape, PassInput, PassWitness};
use crate::msm::stream_plan::{KeySet, Residency};
use crate::msm::{scalars_into, DeviceSums};
use crate::reduce::{QapEvals, DEFAULT_SCHEDULE};
use crate::setup::dev_setup;
use crate::stages::{device_stage, reduce_stage, ReduceOn};
use crate::synth::{synth, SynthSpec, Values};
use crate::{
    prove, prove_batch, BindCurve, BoundKey, CompiledKey, CpuBound, CpuDevices, CpuOptions, Error,
    PointChecks, ProveOptions, Timings, Witness,
};
use ark_ff::{Field, UniformRand};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use std::sync::Arc;
use zkpipe_formats::mapped::MappedFile;
use zkpipe_formats::r1cs::R1cs;
use zkpipe_formats::zkey::ZkeyFile;

/// Proofs a stream serves under the test's limit.
const BATCH: usize = 3;

type Fr<E> = <E as ark_ec::pairing::Pairing>::ScalarField;

/// A dev key of domain 2^10 (4 public inputs), its circuit, and a witness of it.
fn dev_key<E: BindCurve>() -> (Arc<CompiledKey<E>>, R1cs, Witness<Fr<E>>) {
    let public = 4;
    let spec = SynthSpec {
        constraints: (1 << 10) - public - 1,
        public,
        seed: 1,
        values: Values::Products,
    };
    let (r1cs, wtns) = synth::<E>(&spec);
    let zkey = dev_setup::<E>(&r1cs, &mut ChaCha20Rng::seed_from_u64(1), &|_, _| {}).unwrap();
    let zkey = ZkeyFile::from_file(MappedFile::from_bytes("dev.zkey", zkey.to_bytes())).unwrap();
    let key = CompiledKey::<E>::compile(&zkey, PointChecks::Trusted).unwrap();
    let witness = Witness::check_for(&wtns, &key).unwrap();
    (Arc::new(key), r1cs, witness)
}

/// Another witness that satisfies a synthetic circuit: fresh inputs, then each
/// constraint's signal (C = 1·new) from A·w and B·w, in order.
fn other_witness<E: BindCurve>(r1cs: &R1cs, seed: u64) -> Witness<Fr<E>> {
    let h = &r1cs.header;
    let inputs = 1 + (h.n_pub_out + h.n_pub_in + h.n_prv_in) as usize;
    let rng = &mut ChaCha20Rng::seed_from_u64(seed);
    let mut w = vec![Fr::<E>::ONE; h.n_wires as usize];
    for x in &mut w[1..inputs] {
        *x = Fr::<E>::rand(rng);
    }
    let lc = |i: usize, w: &[Fr<E>]| -> Fr<E> {
        r1cs.terms[r1cs.lc_starts[i]..r1cs.lc_starts[i + 1]]
            .iter()
            .map(|t| field_from_le::<Fr<E>>(&t.value).unwrap() * w[t.wire as usize])
            .sum()
    };
    for c in 0..h.n_constraints as usize {
        let out = r1cs.terms[r1cs.lc_starts[3 * c + 2]].wire as usize;
        w[out] = lc(3 * c, &w) * lc(3 * c + 1, &w);
    }
    Witness { values: w }
}

/// A limit under which the key streams `BATCH` proofs in chunks of the smallest size.
fn small_limit<E: BindCurve>(key: &CompiledKey<E>) -> u64 {
    let sets = cpu_key_sets(&KeyShape::of_key(key));
    BATCH as u64 * sets.proof_bytes + 2 * sets.min_chunk_bytes()
}

/// Each witness's device stage on `bound` (batched as its caps say).
fn device_sums<E: BindCurve>(
    bound: &dyn BoundKey<E>,
    witnesses: &[&Witness<Fr<E>>],
) -> Vec<Result<DeviceSums<E>, Error>> {
    let (key, caps) = (&**bound.key(), bound.caps());
    let on = ReduceOn::for_caps(caps, DEFAULT_SCHEDULE);
    let k = witnesses.len();
    let mut evals: Vec<QapEvals<Fr<E>>> = (0..k).map(|_| QapEvals::zeroed(0)).collect();
    let (mut ws, mut hs) = (vec![Vec::new(); k], vec![Vec::new(); k]);
    let mut ts = vec![Timings::default(); k];
    for i in 0..k {
        let (e, w, t) = (&mut evals[i], &mut ws[i], &mut ts[i]);
        reduce_stage(key, witnesses[i], e, w, on, caps.wants_scalars(), t).unwrap();
    }
    let mut inputs: Vec<PassInput<'_, E>> = evals
        .iter_mut()
        .zip(&ws)
        .zip(&mut hs)
        .zip(&mut ts)
        .zip(witnesses)
        .map(|((((evals, w), h), t), witness)| PassInput {
            evals,
            w: PassWitness::for_caps(caps, &witness.values, w),
            h,
            t,
        })
        .collect();
    let sums = device_stage(bound, &mut inputs);
    drop(inputs);
    for (t, s) in ts.iter().zip(&sums) {
        let timed = t.total(crate::Stage::MsmH) > std::time::Duration::ZERO;
        assert_eq!(timed, s.is_ok());
    }
    sums
}

fn streams_as_in_core<E: BindCurve>() {
    let (key, r1cs, w0) = dev_key::<E>();
    let shape = KeyShape::of_key(&key);
    let limit = small_limit(&key);
    let cpu = CpuOptions {
        memory_limit: Some(limit),
        // More than fit: the plan takes as many as the limit holds.
        stream_batch: BATCH + 1,
        ..CpuOptions::default()
    };
    let plain = BindOptions::default();
    let in_core = CpuBound::new(Arc::clone(&key)).with_g2_in_pass();
    let streamed = CpuBound::try_bind(Arc::clone(&key), &plain, cpu)
        .unwrap()
        .with_g2_in_pass();

    // The path each took, and the caps that follow from it, here and before binding.
    assert_eq!(in_core.residency(), Ok(&Residency::InCore));
    let plan = streamed.residency().unwrap().plan().unwrap().clone();
    assert_eq!(plan.batch(), BATCH);
    assert!(plan.device_bytes() <= limit);
    for set in KeySet::ALL {
        assert!(plan.chunk_count(set) >= 8, "{set:?}: {plan:?}");
    }
    assert_eq!(streamed.caps().batch_limit, BATCH);
    let devices = CpuDevices::new(cpu);
    assert_eq!(devices.caps(&shape, &plain).batch_limit, BATCH);
    assert_eq!(devices.max_batch(), BATCH + 1);
    assert!(streamed
        .residency()
        .unwrap()
        .to_string()
        .starts_with("streamed: batch 3"));
    let sets = cpu_key_sets(&shape);
    let roomy = CpuOptions {
        memory_limit: Some(sets.key_bytes() + sets.proof_bytes),
        ..cpu
    };
    assert_eq!(
        CpuDevices::new(roomy).residency(&shape),
        Ok(Residency::InCore)
    );
    assert_eq!(CpuDevices::new(roomy).caps(&shape, &plain).batch_limit, 1);

    // Four different witnesses: a full batch of three, then a batch of one.
    let (w1, w2) = (other_witness::<E>(&r1cs, 2), other_witness::<E>(&r1cs, 3));
    let mut w3 = w0.clone();
    w3.values[7] += Fr::<E>::ONE; // not satisfying: sums all the same
    let all = [&w0, &w1, &w2, &w3];
    let want: Vec<DeviceSums<E>> = device_sums(&in_core, &all)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    for (i, s) in want.iter().enumerate() {
        assert!(s.b2.is_some());
        for o in &want[i + 1..] {
            assert_ne!(s.a, o.a);
            assert_ne!(s.h, o.h);
        }
    }
    let got: Vec<DeviceSums<E>> = device_sums(&streamed, &all)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(got, want);
    let one = device_sums(&streamed, &[&w1]).remove(0).unwrap();
    assert_eq!(one, want[1]);

    // Masked, the mask's sums come off: the unmasked sums again.
    let masked = CpuBound::try_bind(
        Arc::clone(&key),
        &BindOptions {
            constant_work: true,
        },
        cpu,
    )
    .unwrap();
    assert_eq!(masked.caps().batch_limit, BATCH);
    let got: Vec<DeviceSums<E>> = device_sums(&masked, &all[..3])
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(got, want[..3]);

    // The verbs stream too.
    let mut w = Vec::new();
    scalars_into(&w2.values, &mut w);
    for set in [G1Set::A, G1Set::B1, G1Set::C, G1Set::H] {
        let s = &w[..set.points(&key).len()];
        let got = streamed.msm_g1(set, s).unwrap();
        assert_eq!(got, in_core.msm_g1(set, s).unwrap(), "{set:?}");
    }
    let private = &w[key.n_public + 1..];
    assert_eq!(streamed.msm_g1(G1Set::C, private).unwrap(), want[2].c);
    assert_eq!(streamed.msm_g2(&w).unwrap(), want[2].b2.unwrap());
    let short = streamed.msm_g1(G1Set::A, &w[1..]).unwrap_err().to_string();
    assert!(short.contains("scalars"), "{short}");

    // Pinned (the hot tier), the walks read the copy: the same sums; unpinned, the key's.
    // An in-core key has nothing to pin.
    assert_eq!(in_core.pinnable_bytes(), 0);
    in_core.pin().unwrap();
    assert!(!in_core.is_pinned());
    assert_eq!(streamed.pinnable_bytes(), key.points.host_bytes(true));
    assert!(streamed.pinnable_bytes() > 0);
    assert!(!streamed.is_pinned());
    streamed.pin().unwrap();
    assert!(streamed.is_pinned());
    let got: Vec<DeviceSums<E>> = device_sums(&streamed, &all[..2])
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(got, want[..2]);
    assert_eq!(streamed.msm_g2(&w).unwrap(), want[2].b2.unwrap());
    streamed.unpin();
    assert!(!streamed.is_pinned());

    // Proofs: with the same randomness, the same proofs; each verifies.
    let opts = ProveOptions::default();
    let rng = || ChaCha20Rng::seed_from_u64(9);
    let prove_on = |bound: &CpuBound<E>, ws: &[&Witness<Fr<E>>]| {
        let mut t = vec![Timings::default(); ws.len()];
        prove_batch(bound, ws, &opts, &mut rng(), &mut t)
    };
    let proofs = prove_on(&streamed, &all);
    let again = prove_on(&in_core, &all);
    assert!(
        matches!(proofs[3], Err(Error::NotSatisfied)),
        "{:?}",
        proofs[3]
    );
    for (i, (p, q)) in proofs.iter().zip(&again).enumerate().take(3) {
        let p = p.as_ref().unwrap();
        assert_eq!(p, q.as_ref().unwrap(), "proof {i}");
        let public = all[i].public(key.n_public);
        assert!(crate::verify(&key.vk, public, p).unwrap(), "proof {i}");
    }
    let mut t = Timings::default();
    let single = prove(&streamed, &w2, &opts, &mut rng(), &mut t).unwrap();
    let mut t = Timings::default();
    assert_eq!(
        single,
        prove(&in_core, &w2, &opts, &mut rng(), &mut t).unwrap()
    );
    assert!(crate::verify(&key.vk, w2.public(key.n_public), &single).unwrap());
}

#[test]
fn bn254_streams_as_in_core() {
    streams_as_in_core::<crate::Bn254>();
}

#[test]
fn bls12_381_streams_as_in_core() {
    streams_as_in_core::<crate::Bls12_381>();
}

/// A limit too small for one proof and two of the smallest chunks: binding through the
/// device set refuses in one line naming sizes; a key bound anyway answers the same.
#[test]
fn a_limit_too_small_to_stream_under_is_refused() {
    type E = crate::Bn254;
    let (key, _, w) = dev_key::<E>();
    let sets = cpu_key_sets(&KeyShape::of_key(&key));
    let limit = sets.proof_bytes + 2 * sets.min_chunk_bytes() - 1;
    let cpu = CpuOptions {
        memory_limit: Some(limit),
        ..CpuOptions::default()
    };
    let err = CpuDevices::new(cpu)
        .bind_bn254(0, Arc::clone(&key), &BindOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.starts_with(&format!(
            "cpu backend: a device budget of {:.1} KiB cannot stream this key",
            limit as f64 / 1024.0
        )),
        "{err}"
    );
    assert!(
        err.contains("1 proof(s) keep") && !err.contains('\n'),
        "{err}"
    );
    let bound = CpuBound::bind(Arc::clone(&key), &BindOptions::default(), cpu);
    assert_eq!(
        bound.residency().unwrap_err().to_string(),
        err["cpu backend: ".len()..]
    );
    let sums = device_sums(&bound, &[&w]);
    assert_eq!(sums[0].as_ref().unwrap_err().to_string(), err);
    assert_eq!(bound.msm_g2(&[]).unwrap_err().to_string(), err);
    // One byte more, and it streams.
    let cpu = CpuOptions {
        memory_limit: Some(limit + 1),
        ..cpu
    };
    let bound = CpuBound::try_bind(key, &BindOptions::default(), cpu).unwrap();
    assert_eq!(bound.residency().unwrap().plan().unwrap().batch(), 1);
}
