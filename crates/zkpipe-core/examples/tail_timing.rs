//! A timing program (an example, so that the test build does not compile it): the CPU
//! cost per proof of each step of the engine's tail stage for a batch of proofs of one
//! key, on one thread (so wall time is CPU time): the CPU G2 MSM (only where the device leaves [B]₂ to the CPU), assembly
//! (its fresh randomness, variable-base and fixed-base G1 multiplications, the G2 one),
//! the self-check of the batch, and snarkjs JSON. Run by lab/experiments/042d-tail-cpu.md:
//!
//! ```text
//! ZKPIPE_TAIL_KEY=k14.zkey ZKPIPE_TAIL_WTNS=w14.wtns ZKPIPE_TAIL_BATCH=16 \
//!   cargo run --profile ci -p zkpipe-core --example tail_timing
//! ```

use ark_ec::scalar_mul::BatchMulPreprocessing;
use ark_ff::{PrimeField, UniformRand};
use std::sync::Arc;
use std::time::Instant;
use zkpipe_core::assemble::assemble;
use zkpipe_core::curve::field_to_decimal;
use zkpipe_core::msm::{scalars_into, MsmResults};
use zkpipe_core::reduce::DEFAULT_SCHEDULE;
use zkpipe_core::stages::{device_stage, reduce_stage, self_check_batch, ReduceOn};
use zkpipe_core::{
    Bn254, CompiledKey, CpuBound, PassInput, PassWitness, PointChecks, Proof, Timings, Witness,
};
use zkpipe_formats::json::to_json_bytes;
use zkpipe_formats::wtns::Wtns;
use zkpipe_formats::zkey::ZkeyFile;

type E = Bn254;
type Fr = ark_bn254::Fr;

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

/// Microseconds per item of `f` run over `items` items, best of `reps` repetitions.
fn per_item_us(items: usize, reps: usize, mut f: impl FnMut()) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e6 / items as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/bn254");
    let key_path = env_or(
        "ZKPIPE_TAIL_KEY",
        &format!("{fixtures}/multi_public/circuit.zkey"),
    );
    let wtns_path = env_or(
        "ZKPIPE_TAIL_WTNS",
        &format!("{fixtures}/multi_public/witness.wtns"),
    );
    let n: usize = env_or("ZKPIPE_TAIL_BATCH", "16").parse().unwrap();
    let reps: usize = env_or("ZKPIPE_TAIL_REPS", "5").parse().unwrap();
    // One thread: the nested joins of assembly run in turn, so wall time is CPU time.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    pool.install(|| {
        let zkey = ZkeyFile::open(&key_path).unwrap();
        let key = Arc::new(CompiledKey::<E>::compile(&zkey, PointChecks::Trusted).unwrap());
        key.prepare_resident();
        let wtns = Wtns::read(&wtns_path).unwrap();
        let witness = Witness::check_for(&wtns, &key).unwrap();
        let public: Vec<Fr> = witness.public(key.n_public).to_vec();
        // The device stage once, on the CPU: every proof of the batch shares its sums
        // and differs by its randomness, which is all the tail sees.
        let (mut evals, mut w) = (zkpipe_core::reduce::QapEvals::zeroed(0), Vec::new());
        let on = ReduceOn::Cpu(DEFAULT_SCHEDULE);
        let mut t = Timings::default();
        reduce_stage(&key, &witness, &mut evals, &mut w, on, true, &mut t).unwrap();
        let (mut h, mut t) = (Vec::new(), Timings::default());
        let bound = CpuBound::new(Arc::clone(&key));
        let sums = device_stage(
            &bound,
            &mut [PassInput {
                evals: &mut evals,
                w: PassWitness::Scalars(&w),
                h: &mut h,
                t: &mut t,
            }],
        )
        .pop()
        .unwrap()
        .unwrap();
        let mut converted = Vec::new();
        scalars_into(&witness.values, &mut converted);
        let t0 = Instant::now();
        let b2 = zkpipe_core::cpu::msm_g2::<E>(&key.points.b2, &converted).unwrap();
        let g2_msm_us = t0.elapsed().as_secs_f64() * 1e6;
        let m = MsmResults::<E> {
            a: sums.a,
            b1: sums.b1,
            b2,
            c: sums.c,
            h: sums.h,
        };
        let mut rng = rand::rngs::OsRng;
        let rs: Vec<(Fr, Fr)> = (0..n)
            .map(|_| (Fr::rand(&mut rng), Fr::rand(&mut rng)))
            .collect();

        let rand_us = per_item_us(n, reps, || {
            for _ in 0..n {
                std::hint::black_box((Fr::rand(&mut rng), Fr::rand(&mut rng)));
            }
        });
        let assemble_us = per_item_us(n, reps, || {
            for &(r, s) in &rs {
                std::hint::black_box(assemble(&key, &m, r, s));
            }
        });
        // Its parts, as assembly does them: two variable-base G1 multiplications, four
        // fixed-base G1 ones (δ₁ twice, α₁, β₁) and one fixed-base G2 (δ₂) from tables.
        let bits = Fr::MODULUS_BIT_SIZE as usize;
        let d1 = BatchMulPreprocessing::with_num_scalars_and_scalar_size(
            <E as ark_ec::pairing::Pairing>::G1::from(key.delta_g1),
            1 << 12,
            bits,
        );
        let d2 = BatchMulPreprocessing::with_num_scalars_and_scalar_size(
            <E as ark_ec::pairing::Pairing>::G2::from(key.vk.delta_g2),
            1 << 12,
            bits,
        );
        let g1_var_us = per_item_us(n, reps, || {
            for &(r, s) in &rs {
                let _ = std::hint::black_box((m.a * s, m.b1 * r));
            }
        });
        let g1_fixed_us = per_item_us(n, reps, || {
            for &(r, s) in &rs {
                std::hint::black_box(d1.batch_mul(&[r, r * s, s, r]));
            }
        });
        let g2_fixed_us = per_item_us(n, reps, || {
            for &(_, s) in &rs {
                std::hint::black_box(d2.batch_mul(&[s]));
            }
        });
        let g2_var_us = per_item_us(n, reps, || {
            for &(_, s) in &rs {
                let _ = std::hint::black_box(
                    <E as ark_ec::pairing::Pairing>::G2::from(key.vk.delta_g2) * s,
                );
            }
        });
        let proofs: Vec<Proof<E>> = rs.iter().map(|&(r, s)| assemble(&key, &m, r, s)).collect();
        let items: Vec<(&[Fr], &Proof<E>)> = proofs.iter().map(|p| (&public[..], p)).collect();
        let mut ok = true;
        let check_batch_us = per_item_us(n, reps, || {
            let out = self_check_batch(&key, &items, &mut rng);
            ok &= out.iter().all(|r| r.is_ok());
        });
        let check_one_us = per_item_us(n, reps, || {
            for it in &items {
                ok &= self_check_batch(&key, std::slice::from_ref(it), &mut rng)[0].is_ok();
            }
        });
        assert!(ok, "every proof verifies");
        let json_us = per_item_us(n, reps, || {
            for p in &proofs {
                let public: Vec<String> = public.iter().map(field_to_decimal).collect();
                let s = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
                std::hint::black_box((s(to_json_bytes(&p.to_json())), s(to_json_bytes(&public))));
            }
        });
        println!(
            "tail batch={n} reps={reps} key={key_path} domain={} public={}",
            key.domain_size(),
            key.n_public
        );
        for (step, us) in [
            ("cpu_g2_msm (once)", g2_msm_us),
            ("rand r,s (OsRng)", rand_us),
            ("assemble (tables)", assemble_us),
            ("  g1 var-base x2", g1_var_us),
            ("  g1 fixed-base x4", g1_fixed_us),
            ("  g2 fixed-base x1", g2_fixed_us),
            ("  (g2 var-base x1, untabled)", g2_var_us),
            ("self_check batched", check_batch_us),
            ("self_check one by one", check_one_us),
            ("json proof+public", json_us),
        ] {
            println!("step {step:<30} us_per_proof={us:.1}");
        }
    });
}
