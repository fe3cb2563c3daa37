//! The prover end to end on the committed snarkjs fixtures, per curve, with negative cases:
//! wrong public inputs, and key points outside the subgroup.

use crate::proof::Proof;
use crate::verify::{public_from_json, PreparedVerifyingKey};
use crate::{
    prove, prove_batch, CompiledKey, CpuBound, Curve, Error, PointChecks, PointError, ProveOptions,
    Timings, Witness,
};
use ark_ec::short_weierstrass::{Affine, SWCurveConfig};
use ark_ec::AffineRepr;
use ark_ff::One;
use std::path::PathBuf;
use zkpipe_formats::json::{read_json, ProofJson, PublicJson};
use zkpipe_formats::mapped::MappedFile;
use zkpipe_formats::wtns::Wtns;
use zkpipe_formats::zkey::{PointSection, ZkeyFile};

fn fixture(curve: &str, circuit: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(curve)
        .join(circuit)
}

fn prove_and_verify<E: Curve>(curve: &str) {
    for circuit in ["multi_public", "poseidon"] {
        let dir = fixture(curve, circuit);
        let zkey = ZkeyFile::open(dir.join("circuit.zkey")).unwrap();
        let key =
            std::sync::Arc::new(CompiledKey::<E>::compile(&zkey, PointChecks::Batched).unwrap());
        let bound = CpuBound::new(std::sync::Arc::clone(&key));
        let exact = CompiledKey::<E>::compile(&zkey, PointChecks::PerPoint).unwrap();
        assert_eq!(key.points.b2, exact.points.b2);
        let trusted = CompiledKey::<E>::compile(&zkey, PointChecks::Trusted).unwrap();
        assert_eq!(key.points.h, trusted.points.h);
        let wtns = Wtns::read(dir.join("witness.wtns")).unwrap();
        let w = Witness::check_for(&wtns, &key).unwrap();
        let prove_once = || {
            let mut t = Timings::default();
            prove(
                &bound,
                &w,
                &ProveOptions::default(),
                &mut rand::rngs::OsRng,
                &mut t,
            )
            .unwrap()
        };
        let proof = prove_once();
        let public = w.public(key.n_public).to_vec();
        assert!(crate::verify(&key.vk, &public, &proof).unwrap());
        // Several witnesses in one device stage: each proof verifies, and a witness of the
        // wrong length fails alone, in its place.
        let short = Witness {
            values: w.values[1..].to_vec(),
        };
        let mut each = vec![Timings::default(); 3];
        let batch = prove_batch(
            &bound,
            &[&w, &short, &w],
            &ProveOptions::default(),
            &mut rand::rngs::OsRng,
            &mut each,
        );
        assert!(matches!(batch[1], Err(Error::WitnessLength { .. })));
        let (first, last) = (batch[0].as_ref().unwrap(), batch[2].as_ref().unwrap());
        assert_ne!(first, last);
        for p in [first, last] {
            assert!(crate::verify(&key.vk, &public, p).unwrap());
        }
        assert!(each[0].total(crate::Stage::Assemble) > std::time::Duration::ZERO);
        // Two proofs of one witness differ (fresh r, s) and both verify.
        let again = prove_once();
        assert_ne!(proof, again);
        let mut wrong = public.clone();
        wrong[0] += E::ScalarField::one();
        assert!(!crate::verify(&key.vk, &wrong, &proof).unwrap());
        assert!(matches!(
            crate::verify(&key.vk, &public[1..], &proof),
            Err(Error::PublicInputCount { .. })
        ));
        // snarkjs's own proof verifies with the compiled key's vk.
        let sp: ProofJson = read_json(dir.join("proof.json")).unwrap();
        let sp = Proof::<E>::from_json(&sp).unwrap();
        let spub: PublicJson = read_json(dir.join("public.json")).unwrap();
        let spub = public_from_json::<E>(&spub).unwrap();
        assert!(crate::verify(&key.vk, &spub, &sp).unwrap());
        // The prepared key (the daemon's self-check) answers as `verify` does, every case.
        let prepared: PreparedVerifyingKey<E> = key.vk.prepare();
        assert!(prepared.verify(&public, &proof).unwrap());
        assert!(prepared.verify(&public, &again).unwrap());
        assert!(prepared.verify(&spub, &sp).unwrap());
        assert!(!prepared.verify(&wrong, &proof).unwrap());
        let swapped = Proof::<E> {
            a: proof.a,
            b: proof.b,
            c: again.c,
        };
        assert!(!prepared.verify(&public, &swapped).unwrap());
        assert!(!crate::verify(&key.vk, &public, &swapped).unwrap());
        assert!(matches!(
            prepared.verify(&public[1..], &proof),
            Err(Error::PublicInputCount { .. })
        ));
        // Checked together (the daemon's tail): all good passes; one bad one anywhere, or
        // inputs of the wrong count, fails the batch, and the one-by-one fallback names
        // exactly the bad one.
        let rng = &mut rand::rngs::OsRng;
        let good = [
            (&public[..], &proof),
            (&public[..], &again),
            (&spub[..], &sp),
        ];
        assert!(prepared.verify_batch(&good, rng).unwrap());
        assert!(prepared.verify_batch(&good[..1], rng).unwrap());
        assert!(prepared.verify_batch(&[], rng).unwrap());
        for bad in [(&wrong[..], &proof), (&public[..], &swapped)] {
            for at in 0..=good.len() {
                let mut items = good.to_vec();
                items.insert(at, bad);
                assert!(!prepared.verify_batch(&items, rng).unwrap(), "bad at {at}");
            }
        }
        let short = [(&public[..], &proof), (&public[1..], &again)];
        assert!(matches!(
            prepared.verify_batch(&short, rng),
            Err(Error::PublicInputCount { .. })
        ));
        key.prepare_resident();
        let items = [
            (&public[..], &proof),
            (&public[..], &swapped),
            (&spub[..], &sp),
            (&public[1..], &again),
        ];
        let outcomes = crate::stages::self_check_batch(&key, &items, rng);
        assert!(outcomes[0].is_ok() && outcomes[2].is_ok(), "{outcomes:?}");
        assert!(
            matches!(outcomes[1], Err(Error::NotSatisfied)),
            "{outcomes:?}"
        );
        assert!(
            matches!(outcomes[3], Err(Error::PublicInputCount { .. })),
            "{outcomes:?}"
        );
        let all_good = crate::stages::self_check_batch(&key, &good, rng);
        assert!(all_good.iter().all(Result::is_ok), "{all_good:?}");
    }
}

#[test]
fn bn254_fixtures_prove_and_verify() {
    prove_and_verify::<crate::Bn254>("bn254");
}

#[test]
fn bls12_381_fixtures_prove_and_verify() {
    prove_and_verify::<crate::Bls12_381>("bls12-381");
}

/// An on-curve point outside the prime-order subgroup (the curve has a cofactor).
fn non_subgroup_point<P: SWCurveConfig>() -> Affine<P> {
    let mut x = P::BaseField::one();
    loop {
        if let Some(p) = Affine::<P>::get_point_from_x_unchecked(x, false) {
            if !p.is_in_correct_subgroup_assuming_on_curve() {
                return p;
            }
        }
        x += P::BaseField::one();
    }
}

/// Replaces the second point of a section with `point_bytes` and compiles in every mode:
/// (batched, per-point, trusted).
fn compile_with_replaced_point<E: Curve>(
    curve: &str,
    section: PointSection,
    point_bytes: Vec<u8>,
) -> [Result<(), Error>; 3] {
    let path = fixture(curve, "multi_public").join("circuit.zkey");
    let original = ZkeyFile::open(&path).unwrap();
    let points = original.points(section);
    let size = point_bytes.len();
    // Locate the section by content: its bytes are unique within the file.
    let bytes = std::fs::read(&path).unwrap();
    let start = bytes
        .windows(points.len())
        .position(|w| w == points)
        .unwrap();
    let mut edited = bytes.clone();
    edited[start + size..start + 2 * size].copy_from_slice(&point_bytes);
    let z = ZkeyFile::from_file(MappedFile::from_bytes("edited.zkey", edited)).unwrap();
    [
        PointChecks::Batched,
        PointChecks::PerPoint,
        PointChecks::Trusted,
    ]
    .map(|c| CompiledKey::<E>::compile(&z, c).map(|_| ()))
}

#[test]
fn points_outside_the_subgroup_are_rejected_unless_trusted() {
    type E1 = crate::Bls12_381;
    let p = non_subgroup_point::<ark_bls12_381::g1::Config>();
    let mut b = Vec::new();
    E1::g1_to_bytes(&p, &mut b);
    let [batched, per_point, trusted] =
        compile_with_replaced_point::<E1>("bls12-381", PointSection::A, b);
    for r in [batched, per_point] {
        assert!(
            matches!(
                r,
                Err(Error::InvalidPoint {
                    problem: PointError::NotInSubgroup,
                    index: 1,
                    ..
                })
            ),
            "{r:?}"
        );
    }
    assert!(trusted.is_ok());

    type E2 = crate::Bn254;
    let q = non_subgroup_point::<ark_bn254::g2::Config>();
    assert!(q.is_on_curve() && !q.is_zero());
    let mut b = Vec::new();
    E2::g2_to_bytes(&q, &mut b);
    let [batched, per_point, trusted] =
        compile_with_replaced_point::<E2>("bn254", PointSection::B2, b);
    for r in [batched, per_point] {
        let msg = r.unwrap_err().to_string();
        assert!(
            msg.contains("section 7 (B2), point 1")
                && msg.contains("not in the prime-order subgroup"),
            "{msg}"
        );
    }
    assert!(trusted.is_ok());
}
