//! Synthetic circuits for benchmarks: a satisfiable r1cs and its witness, of any size,
//! deterministic for a seed.
//!
//! Rows are inhomogeneous the way circom output is: runs of similar rows (S-box
//! multiplications, small linear mixes, dense linear layers, rare very wide rows), so
//! static per-thread row ranges meet stragglers as they would on real circuits. Each
//! constraint defines one new signal, `new = (A·w)·(B·w)`, so the witness follows by
//! evaluating rows in order.

use crate::curve::{field_to_le, Curve};
use ark_ec::AdditiveGroup;
use ark_ff::{Field, PrimeField};
use ark_std::UniformRand;
use rand::{Rng, SeedableRng};
use zkpipe_formats::r1cs::{R1cs, R1csHeader, Term};
use zkpipe_formats::wtns::Wtns;

/// What to generate.
#[derive(Debug, Clone, Copy)]
pub struct SynthSpec {
    /// Number of constraints.
    pub constraints: usize,
    /// Public inputs (nPublic of the key).
    pub public: usize,
    /// Seed of the generator.
    pub seed: u64,
}

/// Row shapes, with (share of rows in ‰, terms in A as a range).
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// x·y = new, one term each side (S-box steps).
    Mul,
    /// (Σ 2–8 terms)·1 = new (small linear mixes).
    Mix,
    /// (Σ 16–64 terms)·(Σ 1–4 terms) = new (dense layers).
    Dense,
    /// (Σ 128–512 terms)·1 = new (rare wide rows).
    Wide,
}

impl Shape {
    fn pick(rng: &mut impl Rng) -> Self {
        match rng.gen_range(0..1000) {
            0..=599 => Shape::Mul,
            600..=929 => Shape::Mix,
            930..=989 => Shape::Dense,
            _ => Shape::Wide,
        }
    }
}

/// Generates the circuit and a satisfying witness.
pub fn synth<E: Curve>(spec: &SynthSpec) -> (R1cs, Wtns) {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(spec.seed);
    let private_inputs = 2;
    let first_free = 1 + spec.public + private_inputs;
    let n_wires = first_free + spec.constraints;
    let mut w: Vec<E::ScalarField> = Vec::with_capacity(n_wires);
    w.push(E::ScalarField::ONE);
    for _ in 1..first_free {
        w.push(E::ScalarField::rand(&mut rng));
    }
    let mut terms = Vec::new();
    let mut lc_starts = Vec::with_capacity(3 * spec.constraints + 1);
    let (mut shape, mut run_left) = (Shape::Mul, 0usize);
    for c in 0..spec.constraints {
        if run_left == 0 {
            shape = Shape::pick(&mut rng);
            run_left = rng.gen_range(1..=256);
        }
        run_left -= 1;
        let new = first_free + c;
        let (a_len, b_len) = match shape {
            Shape::Mul => (1, 1),
            Shape::Mix => (rng.gen_range(2..=8), 0),
            Shape::Dense => (rng.gen_range(16..=64), rng.gen_range(1..=4)),
            Shape::Wide => (rng.gen_range(128..=512), 0),
        };
        let lc = |len: usize,
                  rng: &mut rand_chacha::ChaCha20Rng,
                  terms: &mut Vec<Term>|
         -> E::ScalarField {
            let mut acc = E::ScalarField::ZERO;
            for _ in 0..len {
                // Mostly recent signals, like a circuit's data flow; sometimes any earlier one.
                let wire = if rng.gen_bool(0.7) {
                    new - 1 - rng.gen_range(0..new.min(64))
                } else {
                    rng.gen_range(0..new)
                };
                let coeff = if rng.gen_bool(0.9) {
                    E::ScalarField::from(rng.gen_range(1..1u64 << 16))
                } else {
                    E::ScalarField::rand(rng)
                };
                acc += coeff * w[wire];
                terms.push(term(wire, &coeff));
            }
            acc
        };
        lc_starts.push(terms.len());
        let a = lc(a_len, &mut rng, &mut terms);
        lc_starts.push(terms.len());
        let b = if b_len == 0 {
            terms.push(term(0, &E::ScalarField::ONE));
            E::ScalarField::ONE
        } else {
            lc(b_len, &mut rng, &mut terms)
        };
        lc_starts.push(terms.len());
        terms.push(term(new, &E::ScalarField::ONE));
        w.push(a * b);
    }
    lc_starts.push(terms.len());
    let r1cs = R1cs {
        header: R1csHeader {
            curve: E::ID,
            n_wires: n_wires as u32,
            n_pub_out: 0,
            n_pub_in: spec.public as u32,
            n_prv_in: private_inputs as u32,
            n_labels: n_wires as u64,
            n_constraints: spec.constraints as u32,
        },
        terms,
        lc_starts,
        wire_labels: Vec::new(),
    };
    let values = w.iter().flat_map(|x| pad32(field_to_le(x))).collect();
    let wtns = Wtns {
        curve: E::ID,
        n_witness: n_wires as u32,
        values,
    };
    (r1cs, wtns)
}

fn pad32(mut b: Vec<u8>) -> Vec<u8> {
    b.resize(32, 0);
    b
}

fn term<F: PrimeField>(wire: usize, value: &F) -> Term {
    let mut v = [0u8; 32];
    v.copy_from_slice(&pad32(field_to_le(value)));
    Term {
        wire: wire as u32,
        value: v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::check_r1cs;

    fn satisfied_and_deterministic<E: Curve>() {
        for (constraints, public, seed) in [(1, 0, 1), (300, 3, 2), (5000, 4, 3)] {
            let spec = SynthSpec {
                constraints,
                public,
                seed,
            };
            let (r1cs, wtns) = synth::<E>(&spec);
            assert_eq!(r1cs.header.n_constraints as usize, constraints);
            check_r1cs::<E>(&r1cs, &wtns).unwrap();
            let again = synth::<E>(&spec);
            assert_eq!(again.0, r1cs);
            assert_eq!(again.1, wtns);
            // Round-trips through the file formats.
            assert_eq!(
                R1cs::parse(&r1cs.to_bytes()).unwrap(),
                R1cs {
                    wire_labels: (0..r1cs.header.n_wires as u64).collect(),
                    ..r1cs.clone()
                }
            );
            assert_eq!(Wtns::parse(&wtns.to_bytes()).unwrap(), wtns);
        }
        let other = synth::<E>(&SynthSpec {
            constraints: 300,
            public: 3,
            seed: 9,
        });
        assert_ne!(
            other.0,
            synth::<E>(&SynthSpec {
                constraints: 300,
                public: 3,
                seed: 2
            })
            .0
        );
    }

    #[test]
    fn bn254_synth_is_satisfied() {
        satisfied_and_deterministic::<crate::Bn254>();
    }

    #[test]
    fn bls12_381_synth_is_satisfied() {
        satisfied_and_deterministic::<crate::Bls12_381>();
    }

    #[test]
    fn a_corrupted_witness_is_caught() {
        let (r1cs, mut wtns) = synth::<crate::Bn254>(&SynthSpec {
            constraints: 100,
            public: 1,
            seed: 5,
        });
        let last = wtns.values.len() - 32;
        wtns.values[last] ^= 1;
        let err = check_r1cs::<crate::Bn254>(&r1cs, &wtns).unwrap_err();
        assert!(err.to_string().contains("constraint 99"), "{err}");
    }
}
