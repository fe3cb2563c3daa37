//! The Groth16 pairing check with a verification key prepared once for many proofs (the
//! daemon's self-check), and the Miller loops of several pairs spread over the rayon pool,
//! which [`crate::verify::verify`] shares. A module of its own, not part of `verify` (which
//! imports `key`), so that a compiled key can hold one.
//!
//! A check's pairs are independent until their Miller loops' outputs are multiplied, so
//! they run on as many threads as the pool has (a pair's G2 line coefficients computed on
//! its own task); only the final exponentiation stays on one thread.

use crate::curve::Curve;
use crate::error::Error;
use crate::proof::Proof;
use ark_ec::pairing::{MillerLoopOutput, PairingOutput};
use ark_ec::{AffineRepr, CurveGroup, VariableBaseMSM};
use ark_ff::{One, PrimeField, Zero};
use rand::{CryptoRng, Rng, RngCore};
use rayon::prelude::*;

/// A verification key made ready for many checks: e(α, β) computed once, and β, −γ, −δ
/// with their Miller-loop lines worked out once. One proof's check is then a 3-pair
/// Miller loop (only B's lines computed; the pairs on threads of their own) and one final
/// exponentiation, against [`crate::verify::verify`]'s 4 pairs with every G2 point
/// prepared anew. Worth it where one key checks many proofs (the daemon's self-check, and
/// a one-shot proof that prepares it while it proves).
#[derive(Debug, Clone)]
pub struct PreparedVerifyingKey<E: Curve> {
    ic: Vec<E::G1Affine>,
    neg_alpha: E::G1Affine,
    alpha_beta: PairingOutput<E>,
    beta: E::G2Prepared,
    neg_gamma: E::G2Prepared,
    neg_delta: E::G2Prepared,
}

impl<E: Curve> PreparedVerifyingKey<E> {
    /// Prepares a key of α·G1, β·G2, γ·G2, δ·G2 and its IC points (a pairing and three G2
    /// preparations); [`crate::key::VerifyingKey::prepare`] is the usual way in.
    pub fn new(
        alpha_g1: E::G1Affine,
        beta_g2: E::G2Affine,
        gamma_g2: E::G2Affine,
        delta_g2: E::G2Affine,
        ic: Vec<E::G1Affine>,
    ) -> Self {
        Self {
            ic,
            neg_alpha: (-alpha_g1.into_group()).into_affine(),
            alpha_beta: E::pairing(alpha_g1, beta_g2),
            beta: E::G2Prepared::from(beta_g2),
            neg_gamma: E::G2Prepared::from((-gamma_g2.into_group()).into_affine()),
            neg_delta: E::G2Prepared::from((-delta_g2.into_group()).into_affine()),
        }
    }

    /// The same answer as [`crate::verify::verify`]:
    /// e(A, B) = e(α, β) · e(vk_x, γ) · e(C, δ). On a pool of 3 threads or more its wall
    /// time is about one pair's Miller loop and the final exponentiation.
    pub fn verify(&self, public: &[E::ScalarField], proof: &Proof<E>) -> Result<bool, Error> {
        // vk_x and B's lines side by side: each comes before a pair's Miller loop.
        let (vk_x, b) = rayon::join(
            || public_combination::<E>(&self.ic, public),
            || E::G2Prepared::from(proof.b),
        );
        let ml = miller_loops::<E>(&[
            (proof.a, Lines::Prepared(&b)),
            (vk_x?, Lines::Prepared(&self.neg_gamma)),
            (proof.c, Lines::Prepared(&self.neg_delta)),
        ]);
        Ok(E::final_exponentiation(ml) == Some(self.alpha_beta))
    }

    /// Whether every proof passes, checked together with random 128-bit weights rᵢ (the
    /// small-exponent batch test, as bellman's batch verifier):
    /// ∏ e(rᵢ·Aᵢ, Bᵢ) · e(Σ rᵢ·vk_xᵢ, −γ) · e(Σ rᵢ·Cᵢ, −δ) · e(−(Σ rᵢ)·α, β) = 1.
    /// One (k + 3)-pair Miller loop (spread over the pool) and one final exponentiation for
    /// k proofs, against k 3-pair loops and k exponentiations one by one; e(α, β) enters as
    /// a pair with β's lines prepared, which costs less than raising the prepared e(α, β)
    /// to Σ rᵢ. `false` says only that some proof failed: [`Self::verify`] each to find
    /// it. For the daemon's self-check of its own proofs, a guard against faults: an
    /// adversary's points outside the prime-order subgroups are not checked for (snarkjs's
    /// verifier is the one for untrusted proofs). A public-input count that does not match
    /// the key is an error.
    pub fn verify_batch(
        &self,
        items: &[(&[E::ScalarField], &Proof<E>)],
        rng: &mut (impl RngCore + CryptoRng),
    ) -> Result<bool, Error> {
        match items {
            [] => return Ok(true),
            [(public, proof)] => return self.verify(public, proof),
            _ => {}
        }
        let weights: Vec<E::ScalarField> = items
            .iter()
            .map(|_| E::ScalarField::from(rng.gen::<u128>() | 1))
            .collect();
        // Σ rᵢ·vk_xᵢ = (Σ rᵢ)·IC₀ + Σⱼ (Σᵢ rᵢ·publicᵢⱼ)·ICⱼ₊₁: one MSM over IC.
        let mut ic_scalars = vec![E::ScalarField::zero(); self.ic.len()];
        for ((public, _), r) in items.iter().zip(&weights) {
            check_public_count(&self.ic, public)?;
            ic_scalars[0] += r;
            for (s, x) in ic_scalars[1..].iter_mut().zip(public.iter()) {
                *s += *r * x;
            }
        }
        let total = ic_scalars[0];
        let bigints = |v: &[E::ScalarField]| v.iter().map(|x| x.into_bigint()).collect::<Vec<_>>();
        let vk_x = E::G1::msm_bigint(&self.ic, &bigints(&ic_scalars));
        let cs: Vec<E::G1Affine> = items.iter().map(|(_, p)| p.c).collect();
        let c = E::G1::msm_bigint(&cs, &bigints(&weights));
        let mut g1: Vec<E::G1> = items
            .par_iter()
            .zip(&weights)
            .map(|((_, p), r)| p.a * r)
            .collect();
        g1.extend([vk_x, c, self.neg_alpha * total]);
        let g1 = E::G1::normalize_batch(&g1);
        let mut pairs: Vec<(E::G1Affine, Lines<'_, E>)> = g1
            .iter()
            .zip(items)
            .map(|(a, (_, p))| (*a, Lines::Point(p.b)))
            .collect();
        let k = items.len();
        pairs.extend([
            (g1[k], Lines::Prepared(&self.neg_gamma)),
            (g1[k + 1], Lines::Prepared(&self.neg_delta)),
            (g1[k + 2], Lines::Prepared(&self.beta)),
        ]);
        let ml = miller_loops::<E>(&pairs);
        Ok(E::final_exponentiation(ml).is_some_and(|gt| gt.0.is_one()))
    }
}

/// A pair's G2 side: a point whose lines its Miller loop computes, or lines prepared once.
pub(crate) enum Lines<'a, E: Curve> {
    /// Lines computed on the pair's task.
    Point(E::G2Affine),
    /// Lines prepared beforehand (the key's).
    Prepared(&'a E::G2Prepared),
}

impl<E: Curve> Lines<'_, E> {
    /// Rough relative cost of the pair in a Miller loop: its line evaluations (2), and the
    /// line computation where not prepared (1). A loop's own Fp12 squarings, shared by its
    /// pairs, count 1, less than they cost, which leans toward a loop per pair (BN254 on the
    /// CPU: lines of B 0.13 ms, a pair's line evaluations ≈ 0.19 ms, a loop's squarings
    /// ≈ 0.19 ms; lab/experiments/042a-self-check.md).
    fn weight(&self) -> u32 {
        match self {
            Lines::Point(_) => 3,
            Lines::Prepared(_) => 2,
        }
    }

    fn prepared(&self) -> E::G2Prepared {
        match self {
            Lines::Point(p) => E::G2Prepared::from(*p),
            Lines::Prepared(l) => (*l).clone(),
        }
    }
}

/// Pairs per multi-Miller loop at least, before a check is split over threads: each loop
/// pays for its own Fp12 squarings (≈ one pair's line evaluations), so a loop per pair
/// doubles a batch's CPU. On a 64-core host a pool of 32 split every batch of the
/// daemon's self-check that way.
const PAIRS_PER_LOOP: usize = 4;

/// ∏ ML(pᵢ, qᵢ), the pairs split into multi-Miller loops of about [`PAIRS_PER_LOOP`] pairs
/// or more, at most one per thread of the current pool (each pair to the least loaded
/// loop, costliest first), the loops run side by side and their outputs multiplied. A loop
/// of several pairs shares its Fp12 squarings; more loops shorten the wall time of a big
/// batch.
pub(crate) fn miller_loops<E: Curve>(pairs: &[(E::G1Affine, Lines<'_, E>)]) -> MillerLoopOutput<E> {
    let loops = rayon::current_num_threads().clamp(1, pairs.len().div_ceil(PAIRS_PER_LOOP).max(1));
    let mut order: Vec<usize> = (0..pairs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(pairs[i].1.weight()));
    let mut groups: Vec<(u32, Vec<usize>)> = vec![(1, Vec::new()); loops];
    for i in order {
        if let Some(g) = groups.iter_mut().min_by_key(|g| g.0) {
            g.0 += pairs[i].1.weight();
            g.1.push(i);
        }
    }
    let f = groups
        .par_iter()
        .map(|(_, group)| {
            let (g1, g2): (Vec<E::G1Prepared>, Vec<E::G2Prepared>) = group
                .iter()
                .map(|&i| (E::G1Prepared::from(pairs[i].0), pairs[i].1.prepared()))
                .unzip();
            E::multi_miller_loop(g1, g2).0
        })
        .reduce(E::TargetField::one, |a, b| a * b);
    MillerLoopOutput(f)
}

/// An error unless there is one public input per IC point after the first.
fn check_public_count<G, F>(ic: &[G], public: &[F]) -> Result<(), Error> {
    if public.len() + 1 != ic.len() {
        return Err(Error::PublicInputCount {
            expected: ic.len().saturating_sub(1),
            found: public.len(),
        });
    }
    Ok(())
}

/// Public inputs up to this many are combined by one scalar multiplication each (GLV on
/// both curves' G1): an MSM of so few points costs more
/// (0.23 against 0.13 ms for one point, lab/experiments/042a-self-check.md).
const FEW_PUBLIC: usize = 16;

/// vk_x = IC₀ + Σ publicᵢ · ICᵢ₊₁; an error if the count does not match the key's.
pub(crate) fn public_combination<E: Curve>(
    ic: &[E::G1Affine],
    public: &[E::ScalarField],
) -> Result<E::G1Affine, Error> {
    check_public_count(ic, public)?;
    let sum = if public.len() <= FEW_PUBLIC {
        ic[1..]
            .iter()
            .zip(public)
            .fold(ic[0].into_group(), |acc, (p, x)| {
                acc + p.mul_bigint(x.into_bigint())
            })
    } else {
        let scalars: Vec<_> = public.iter().map(|x| x.into_bigint()).collect();
        E::G1::msm_bigint(&ic[1..], &scalars) + ic[0]
    };
    Ok(sum.into_affine())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::PointChecks;
    use crate::verify::public_from_json;
    use crate::{Bls12_381, Bn254, VerifyingKey};
    use ark_ec::pairing::Pairing;
    use ark_std::UniformRand;
    use std::time::Instant;
    use zkpipe_formats::json::{read_json, ProofJson, PublicJson};
    use zkpipe_formats::zkey::ZkeyFile;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    /// The Miller loops split over 1 to 5 threads give arkworks' one multi-Miller loop's
    /// pairing, prepared lines or not, and an odd pair changes it.
    fn split_loops_match<E: Curve>() {
        let rng = &mut rand::rngs::OsRng;
        // Nine pairs: up to three loops of PAIRS_PER_LOOP.
        let g1: Vec<E::G1Affine> = (0..9).map(|_| E::G1Affine::rand(rng)).collect();
        let g2: Vec<E::G2Affine> = (0..9).map(|_| E::G2Affine::rand(rng)).collect();
        let want = E::multi_pairing(g1.clone(), g2.clone());
        let prepared = E::G2Prepared::from(g2[3]);
        let mut pairs: Vec<(E::G1Affine, Lines<'_, E>)> = g1
            .iter()
            .zip(&g2)
            .map(|(p, q)| (*p, Lines::Point(*q)))
            .collect();
        pairs[3].1 = Lines::Prepared(&prepared);
        for threads in 1..=5 {
            let got = pool(threads).install(|| E::final_exponentiation(miller_loops::<E>(&pairs)));
            assert_eq!(got, Some(want), "{threads} threads");
        }
        pairs[1].0 = g1[0];
        assert_ne!(
            E::final_exponentiation(miller_loops::<E>(&pairs)),
            Some(want)
        );
        assert_eq!(
            E::final_exponentiation(miller_loops::<E>(&[])).map(|gt| gt.0),
            Some(E::TargetField::one())
        );
    }

    #[test]
    fn miller_loops_split_over_threads_give_the_one_loop_pairing() {
        split_loops_match::<Bn254>();
        split_loops_match::<Bls12_381>();
    }

    /// vk_x by scalar multiplications (few inputs) and by the MSM (many) agree.
    #[test]
    fn few_and_many_public_inputs_combine_alike() {
        let rng = &mut rand::rngs::OsRng;
        type F = <Bn254 as Pairing>::ScalarField;
        let n = FEW_PUBLIC + 3;
        let ic: Vec<_> = (0..=n)
            .map(|_| <Bn254 as Pairing>::G1Affine::rand(rng))
            .collect();
        let x: Vec<F> = (0..n).map(|_| F::rand(rng)).collect();
        let msm = |ic: &[_], x: &[F]| {
            let s: Vec<_> = x.iter().map(|x| x.into_bigint()).collect();
            (<Bn254 as Pairing>::G1::msm_bigint(&ic[1..], &s) + ic[0]).into_affine()
        };
        for len in [0, 1, FEW_PUBLIC, n] {
            let got = public_combination::<Bn254>(&ic[..=len], &x[..len]).unwrap();
            assert_eq!(got, msm(&ic[..=len], &x[..len]), "{len} inputs");
        }
    }

    /// The checks as they were before lab/experiments/042a-self-check.md, for its timings.
    mod before {
        use super::*;

        fn vk_x<E: Curve>(ic: &[E::G1Affine], public: &[E::ScalarField]) -> E::G1Affine {
            let scalars: Vec<_> = public.iter().map(|x| x.into_bigint()).collect();
            (E::G1::msm_bigint(&ic[1..], &scalars) + ic[0]).into_affine()
        }

        /// `verify`: one 4-pair multi-pairing on one thread.
        pub fn verify<E: Curve>(
            vk: &VerifyingKey<E>,
            public: &[E::ScalarField],
            p: &Proof<E>,
        ) -> bool {
            let check = E::multi_pairing(
                [
                    (-p.a.into_group()).into_affine(),
                    vk_x::<E>(&vk.ic, public),
                    p.c,
                    vk.alpha_g1,
                ],
                [p.b, vk.gamma_g2, vk.delta_g2, vk.beta_g2],
            );
            check.0.is_one()
        }

        /// The prepared key's `verify`: one 3-pair Miller loop on one thread.
        pub fn prepared<E: Curve>(
            k: &PreparedVerifyingKey<E>,
            public: &[E::ScalarField],
            p: &Proof<E>,
        ) -> bool {
            let ml = E::multi_miller_loop(
                [p.a, vk_x::<E>(&k.ic, public), p.c].map(E::G1Prepared::from),
                [
                    E::G2Prepared::from(p.b),
                    k.neg_gamma.clone(),
                    k.neg_delta.clone(),
                ],
            );
            E::final_exponentiation(ml) == Some(k.alpha_beta)
        }

        /// `verify_batch`: e(α, β) raised to Σ rᵢ, the loop in arkworks' chunks of 4.
        pub fn batch<E: Curve>(
            k: &PreparedVerifyingKey<E>,
            items: &[(&[E::ScalarField], &Proof<E>)],
            rng: &mut (impl RngCore + CryptoRng),
        ) -> bool {
            let weights: Vec<E::ScalarField> = items
                .iter()
                .map(|_| E::ScalarField::from(rng.gen::<u128>() | 1))
                .collect();
            let mut ic_scalars = vec![E::ScalarField::zero(); k.ic.len()];
            for ((public, _), r) in items.iter().zip(&weights) {
                ic_scalars[0] += r;
                for (s, x) in ic_scalars[1..].iter_mut().zip(public.iter()) {
                    *s += *r * x;
                }
            }
            let bigints =
                |v: &[E::ScalarField]| v.iter().map(|x| x.into_bigint()).collect::<Vec<_>>();
            let vk_x = E::G1::msm_bigint(&k.ic, &bigints(&ic_scalars));
            let cs: Vec<E::G1Affine> = items.iter().map(|(_, p)| p.c).collect();
            let c = E::G1::msm_bigint(&cs, &bigints(&weights));
            let (mut g1, mut g2): (Vec<E::G1Prepared>, Vec<E::G2Prepared>) = items
                .par_iter()
                .zip(&weights)
                .map(|((_, p), r)| {
                    (
                        E::G1Prepared::from((p.a * r).into_affine()),
                        E::G2Prepared::from(p.b),
                    )
                })
                .unzip();
            g1.push(E::G1Prepared::from(vk_x.into_affine()));
            g1.push(E::G1Prepared::from(c.into_affine()));
            g2.push(k.neg_gamma.clone());
            g2.push(k.neg_delta.clone());
            let total: E::ScalarField = weights.iter().sum();
            let ml = E::multi_miller_loop(g1, g2);
            E::final_exponentiation(ml) == Some(k.alpha_beta * total)
        }
    }

    /// Times in ms of `runs` interleaved runs of each named closure: min, median, max.
    struct Table {
        rows: Vec<(String, Vec<f64>)>,
    }

    impl Table {
        fn add<T>(
            &mut self,
            row: usize,
            name: impl Fn() -> String,
            per: usize,
            f: impl FnOnce() -> T,
        ) {
            let t = Instant::now();
            std::hint::black_box(f());
            let ms = t.elapsed().as_secs_f64() * 1e3 / per as f64;
            if self.rows.len() <= row {
                self.rows.push((name(), Vec::new()));
            }
            self.rows[row].1.push(ms);
        }

        fn print(&mut self) {
            for (name, v) in &mut self.rows {
                v.sort_by(f64::total_cmp);
                println!(
                    "{name:<52} {:>8.3} {:>8.3} {:>8.3}",
                    v[0],
                    v[v.len() / 2],
                    v[v.len() - 1]
                );
            }
        }
    }

    /// The self-check's timings (lab/experiments/042a-self-check.md): its parts, and each
    /// check before and after, interleaved, on 1 thread and on every core. Reads
    /// circuit.zkey, proof.json and public.json from $ZKPIPE_042A_DIR; $ZKPIPE_042A_RUNS
    /// runs (default 31). Every check must pass, or the timings mean nothing.
    #[test]
    #[ignore = "a timing tool: ZKPIPE_042A_DIR=<dir> cargo test --profile ci -p zkpipe-core --lib self_check_timings -- --ignored --nocapture"]
    fn self_check_timings() {
        type E = Bn254;
        let dir = std::path::PathBuf::from(std::env::var("ZKPIPE_042A_DIR").unwrap());
        let runs: usize = std::env::var("ZKPIPE_042A_RUNS").map_or(31, |r| r.parse().unwrap());
        let zkey = ZkeyFile::open(dir.join("circuit.zkey")).unwrap();
        let vk = VerifyingKey::<E>::from_zkey(&zkey, PointChecks::Trusted).unwrap();
        let proof: ProofJson = read_json(dir.join("proof.json")).unwrap();
        let proof = Proof::<E>::from_json(&proof).unwrap();
        let public: PublicJson = read_json(dir.join("public.json")).unwrap();
        let public = public_from_json::<E>(&public).unwrap();
        let prepared = vk.prepare();
        let cores = rayon::current_num_threads();
        println!("{cores} threads; ms (per proof for batches): min, median, max of {runs} runs");
        let rng = &mut rand::rngs::OsRng;
        let bp = <E as Pairing>::G2Prepared::from(proof.b);
        let mut parts = Table { rows: Vec::new() };
        let mut checks = Table { rows: Vec::new() };
        let batches = [2, 4, 8, 16, 32, 64];
        for _ in 0..runs {
            let p = &mut parts;
            let mut row = 0..;
            let mut add = |name: &str, f: &mut dyn FnMut()| {
                p.add(row.next().unwrap(), || name.to_string(), 1, f)
            };
            add("part: vk.prepare (e(α,β) + 3 G2 lines)", &mut || {
                let _ = std::hint::black_box(vk.prepare());
            });
            add("part: e(α,β)", &mut || {
                let _ = std::hint::black_box(E::pairing(vk.alpha_g1, vk.beta_g2));
            });
            add("part: G2 lines of B", &mut || {
                let _ = std::hint::black_box(<E as Pairing>::G2Prepared::from(proof.b));
            });
            add("part: vk_x by MSM (before)", &mut || {
                let _ = std::hint::black_box(before_vk_x(&vk.ic, &public));
            });
            add("part: vk_x by GLV mul (after)", &mut || {
                let _ = std::hint::black_box(public_combination::<E>(&vk.ic, &public).unwrap());
            });
            add("part: Miller loop, 1 prepared pair", &mut || {
                let _ = std::hint::black_box(E::multi_miller_loop([proof.a], [bp.clone()]));
            });
            add("part: Miller loop, 3 prepared pairs", &mut || {
                let _ = std::hint::black_box(E::multi_miller_loop(
                    [proof.a, proof.c, vk.alpha_g1],
                    [
                        bp.clone(),
                        prepared.neg_gamma.clone(),
                        prepared.neg_delta.clone(),
                    ],
                ));
            });
            let ml = E::multi_miller_loop([proof.a], [bp.clone()]);
            add("part: final exponentiation", &mut || {
                let _ = std::hint::black_box(E::final_exponentiation(ml));
            });
            add(
                "part: e(α,β)^(Σr), 132-bit Σr (batch, before)",
                &mut || {
                    let s = <E as Pairing>::ScalarField::from(u128::MAX)
                        * <E as Pairing>::ScalarField::from(9u64);
                    let _ = std::hint::black_box(prepared.alpha_beta * s);
                },
            );

            let c = &mut checks;
            let mut row = 0..;
            let mut counts = vec![1, 2, 4, cores];
            counts.retain(|&n| n <= cores);
            counts.dedup();
            for threads in counts {
                let pool = pool(threads);
                let mut add = |name: String, per: usize, f: &mut (dyn FnMut() -> bool + Send)| {
                    c.add(
                        row.next().unwrap(),
                        || name.clone(),
                        per,
                        || {
                            assert!(pool.install(&mut *f));
                        },
                    )
                };
                add(format!("verify, before, {threads} thr"), 1, &mut || {
                    before::verify(&vk, &public, &proof)
                });
                add(format!("verify, after, {threads} thr"), 1, &mut || {
                    crate::verify(&vk, &public, &proof).unwrap()
                });
                add(
                    format!("prepared verify, before, {threads} thr"),
                    1,
                    &mut || before::prepared(&prepared, &public, &proof),
                );
                add(
                    format!("prepared verify, after, {threads} thr"),
                    1,
                    &mut || prepared.verify(&public, &proof).unwrap(),
                );
                for k in batches {
                    let items = vec![(&public[..], &proof); k];
                    add(
                        format!("verify_batch k={k}, before, {threads} thr"),
                        k,
                        &mut || before::batch(&prepared, &items, &mut *rng),
                    );
                    add(
                        format!("verify_batch k={k}, after, {threads} thr"),
                        k,
                        &mut || prepared.verify_batch(&items, &mut *rng).unwrap(),
                    );
                }
            }
        }
        parts.print();
        checks.print();
        // CPU per check of the process (all its threads), over loops long enough for the
        // clock's 10 ms ticks: what a check takes from the daemon's other work.
        println!("process CPU ms per proof (loops of >= 0.5 s), 1 thread / {cores} threads:");
        for k in [1, 2, 4, 8, 16, 32, 64] {
            let items = vec![(&public[..], &proof); k];
            let mut cells = Vec::new();
            for threads in [1, cores] {
                let pool = pool(threads);
                for old in [true, false] {
                    let iters = (300 / k).max(8);
                    let (cpu0, t0) = (process_cpu_ms(), Instant::now());
                    for _ in 0..iters {
                        assert!(pool.install(|| match (k, old) {
                            (1, true) => before::prepared(&prepared, &public, &proof),
                            (1, false) => prepared.verify(&public, &proof).unwrap(),
                            (_, true) => before::batch(&prepared, &items, &mut *rng),
                            (_, false) => prepared.verify_batch(&items, &mut *rng).unwrap(),
                        }));
                    }
                    let n = (iters * k) as f64;
                    cells.push(format!(
                        "{} cpu {:.3} wall {:.3}",
                        if old { "before" } else { "after" },
                        (process_cpu_ms() - cpu0) / n,
                        t0.elapsed().as_secs_f64() * 1e3 / n
                    ));
                }
            }
            println!("k={k:<3} {}", cells.join(" | "));
        }

        /// utime + stime of this process, from /proc/self/stat (clock ticks of 10 ms).
        fn process_cpu_ms() -> f64 {
            let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
            let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
            let ticks: f64 =
                fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
            ticks * 10.0
        }

        fn before_vk_x(
            ic: &[<E as Pairing>::G1Affine],
            public: &[<E as Pairing>::ScalarField],
        ) -> <E as Pairing>::G1Affine {
            let scalars: Vec<_> = public.iter().map(|x| x.into_bigint()).collect();
            (<E as Pairing>::G1::msm_bigint(&ic[1..], &scalars) + ic[0]).into_affine()
        }
    }
}
