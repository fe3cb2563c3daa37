//! Synthetic circuits for benchmarks: a satisfiable r1cs and its witness, of any size,
//! deterministic for a seed.
//!
//! Rows are inhomogeneous the way circom output is: runs of similar rows (S-box
//! multiplications, small linear mixes, dense linear layers, rare very wide rows), so
//! static per-thread row ranges meet stragglers as they would on real circuits. Each
//! constraint defines one new signal, `new = (A·w)·(B·w)`, so the witness follows by
//! evaluating rows in order.
//!
//! The witness's values are either what the rows' products make of random inputs (almost
//! all full-size field elements: [`Values::Products`]) or drawn to a profile of value
//! classes ([`Values::Profile`]), such as a SHA-256 circuit's zeros and ones
//! ([`ValueProfile::SHA256`]): an MSM's cost depends on its scalars' sizes, so timings
//! compare with a real circuit's only where the values look like its values.

use crate::curve::Curve;
use ark_ec::AdditiveGroup;
use ark_ff::{batch_inversion, Field, PrimeField, Zero};
use ark_std::UniformRand;
use rand::{Rng, SeedableRng};
use std::fmt;
use std::str::FromStr;
use zkpipe_formats::r1cs::{R1cs, R1csHeader, Term};
use zkpipe_formats::wtns::{ValueClasses, Wtns};

/// What to generate.
#[derive(Debug, Clone, Copy)]
pub struct SynthSpec {
    /// Number of constraints.
    pub constraints: usize,
    /// Public inputs (nPublic of the key).
    pub public: usize,
    /// Seed of the generator.
    pub seed: u64,
    /// What the signals' values look like.
    pub values: Values,
}

/// What a synthetic witness's values look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Values {
    /// What each row's product makes of random inputs: almost all full-size.
    #[default]
    Products,
    /// Each constraint's signal drawn from a class of the profile, at its share.
    Profile(ValueProfile),
}

/// Shares of the value classes `zkpipe inspect` counts ([`ValueClasses`]), in hundredths
/// of a percent, summing to 10,000.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueProfile {
    /// 0.
    pub zero: u32,
    /// 1.
    pub one: u32,
    /// 2 ..< 2^8.
    pub up_to_8_bits: u32,
    /// 2^8 ..< 2^64.
    pub up_to_64_bits: u32,
    /// r − x for 0 < x < 2^64.
    pub negative_up_to_64_bits: u32,
    /// Any other value.
    pub full: u32,
}

impl ValueProfile {
    /// A circom SHA-256 circuit's witness: only bits, 58.2% of them 0. That is the median
    /// of 18 witnesses (circomlib 2.0.5's `Sha256` of 448, 512 and 2,048 bits, compiled
    /// by circom2 0.2.23 with `--O2` and `--O1`, three messages each: 57.0–59.8% zeros,
    /// nothing but 0 and 1; lab page 043b).
    pub const SHA256: Self = Self {
        zero: 5_820,
        one: 4_180,
        up_to_8_bits: 0,
        up_to_64_bits: 0,
        negative_up_to_64_bits: 0,
        full: 0,
    };

    /// The shares in [`ValueClasses::NAMES`] order.
    fn shares(&self) -> [u32; 6] {
        [
            self.zero,
            self.one,
            self.up_to_8_bits,
            self.up_to_64_bits,
            self.negative_up_to_64_bits,
            self.full,
        ]
    }

    /// The shares' slots, in [`ValueClasses::NAMES`] order.
    fn shares_mut(&mut self) -> [&mut u32; 6] {
        [
            &mut self.zero,
            &mut self.one,
            &mut self.up_to_8_bits,
            &mut self.up_to_64_bits,
            &mut self.negative_up_to_64_bits,
            &mut self.full,
        ]
    }

    /// A value of a class drawn at the profile's shares.
    fn draw<F: PrimeField>(&self, rng: &mut impl Rng) -> F {
        let mut at = rng.gen_range(0..10_000u32);
        let class = self
            .shares()
            .iter()
            .position(|&share| {
                let here = at < share;
                at = at.saturating_sub(share);
                here
            })
            .unwrap_or(5);
        match class {
            0 => F::ZERO,
            1 => F::ONE,
            2 => F::from(rng.gen_range(2..1u64 << 8)),
            3 => F::from(rng.gen_range(1u64 << 8..=u64::MAX)),
            4 => -F::from(rng.gen_range(1..=u64::MAX)),
            _ => F::rand(rng),
        }
    }

    /// How far a witness's counts are from the profile: the largest difference of any
    /// class's share, in hundredths of a percent.
    pub fn distance(&self, counts: &ValueClasses) -> u32 {
        let seen = counts.counts();
        let total: u64 = seen.iter().sum();
        self.shares()
            .iter()
            .zip(seen)
            .map(|(&share, n)| {
                let got = (n * 10_000).checked_div(total).unwrap_or(0) as u32;
                got.abs_diff(share)
            })
            .max()
            .unwrap_or(0)
    }
}

/// Why `--values` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0} (give random, sha256, or shares in percent such as zero=60,one=40)")]
pub struct ValuesError(String);

/// `random` (the rows' products), `sha256` ([`ValueProfile::SHA256`]), or shares in
/// percent by class, as `zkpipe inspect --json` names them: `zero=58.2,one=41.8`
/// (classes left out have none; the shares sum to 100).
impl FromStr for Values {
    type Err = ValuesError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "random" => return Ok(Values::Products),
            "sha256" => return Ok(Values::Profile(ValueProfile::SHA256)),
            _ => {}
        }
        let mut p = ValueProfile {
            zero: 0,
            one: 0,
            up_to_8_bits: 0,
            up_to_64_bits: 0,
            negative_up_to_64_bits: 0,
            full: 0,
        };
        for part in s.split(',') {
            let (name, share) = part
                .split_once('=')
                .ok_or_else(|| ValuesError(format!("{part:?} is not class=percent")))?;
            let share: f64 = share
                .trim()
                .parse()
                .ok()
                .filter(|v: &f64| (0.0..=100.0).contains(v))
                .ok_or_else(|| ValuesError(format!("{part:?}: not a percent from 0 to 100")))?;
            let name = name.trim();
            let class = ValueClasses::NAMES
                .iter()
                .position(|&n| n == name)
                .ok_or_else(|| {
                    ValuesError(format!(
                        "unknown value class {name:?} ({})",
                        ValueClasses::NAMES.join(", ")
                    ))
                })?;
            *p.shares_mut()[class] = (share * 100.0).round() as u32;
        }
        let sum: u32 = p.shares().iter().sum();
        if sum != 10_000 {
            return Err(ValuesError(format!(
                "the shares in {s:?} sum to {}%, not 100%",
                f64::from(sum) / 100.0
            )));
        }
        Ok(Values::Profile(p))
    }
}

/// `random`, `sha256`, or the shares as `FromStr` reads them.
impl fmt::Display for Values {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = match self {
            Values::Products => return f.write_str("random"),
            Values::Profile(p) if *p == ValueProfile::SHA256 => return f.write_str("sha256"),
            Values::Profile(p) => p,
        };
        let shares: Vec<String> = ValueClasses::NAMES
            .iter()
            .zip(p.shares())
            .filter(|&(_, s)| s > 0)
            .map(|(name, s)| format!("{name}={}", f64::from(s) / 100.0))
            .collect();
        f.write_str(&shares.join(","))
    }
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
    let mut divisions = Divisions::default();
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
        // A linear combination of earlier signals: its terms and its value.
        let lc = |len: usize, rng: &mut rand_chacha::ChaCha20Rng| {
            let mut acc = E::ScalarField::ZERO;
            let mut terms = Vec::with_capacity(len);
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
                terms.push((wire, coeff));
            }
            (terms, acc)
        };
        let (mut a_terms, mut a) = lc(a_len, &mut rng);
        let (mut b_terms, mut b) = if b_len == 0 {
            (vec![(0, E::ScalarField::ONE)], E::ScalarField::ONE)
        } else {
            lc(b_len, &mut rng)
        };
        // The row makes the drawn value: B·w made non-zero, then A·w made value / B·w by
        // a term on the constant signal w₀ = 1, whose coefficient waits for the division.
        let mut division = None;
        if let Values::Profile(profile) = &spec.values {
            let value: E::ScalarField = profile.draw(&mut rng);
            if b.is_zero() {
                add_to_constant(&mut b_terms, E::ScalarField::ONE);
                b = E::ScalarField::ONE;
            }
            // A·w already equals value / B·w exactly when A·w · B·w = value: no term then.
            if a * b != value {
                let at = constant_term(&mut a_terms);
                division = Some((at, a_terms[at].1 - a, value, b));
            }
            a = value;
            b = E::ScalarField::ONE;
        }
        lc_starts.push(terms.len());
        let a_start = terms.len();
        terms.extend(a_terms.iter().map(|(wire, coeff)| term(*wire, coeff)));
        if let Some((at, base, value, divisor)) = division {
            divisions.push(a_start + at, base, value, divisor, &mut terms);
        }
        lc_starts.push(terms.len());
        terms.extend(b_terms.iter().map(|(wire, coeff)| term(*wire, coeff)));
        lc_starts.push(terms.len());
        terms.push(term(new, &E::ScalarField::ONE));
        w.push(a * b);
    }
    divisions.flush(&mut terms);
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
    let values = w.iter().flat_map(le32).collect();
    let wtns = Wtns {
        curve: E::ID,
        n_witness: n_wires as u32,
        values,
    };
    (r1cs, wtns)
}

/// Adds `d` to the coefficient of the constant signal w₀ in `lc` (one term per signal, as
/// circom writes them).
fn add_to_constant<F: PrimeField>(lc: &mut Vec<(usize, F)>, d: F) {
    if d.is_zero() {
        return;
    }
    let at = constant_term(lc);
    lc[at].1 += d;
}

/// The index of `lc`'s term on the constant signal w₀, added with coefficient 0 where it
/// has none.
fn constant_term<F: PrimeField>(lc: &mut Vec<(usize, F)>) -> usize {
    lc.iter()
        .position(|(wire, _)| *wire == 0)
        .unwrap_or_else(|| {
            lc.push((0, F::ZERO));
            lc.len() - 1
        })
}

/// The constant terms a profile's rows still owe: term `at`'s coefficient is
/// `base + value / divisor`. One field inversion a row was over half of a 2^25 synth's
/// time; the divisors are inverted together ([`batch_inversion`]: three multiplications
/// each and one inversion a batch), [`Self::BATCH`] at a time so they take little memory.
/// The terms come out the same as dividing row by row.
#[derive(Default)]
struct Divisions<F> {
    /// Per row: `(at, base, value)`.
    owed: Vec<(usize, F, F)>,
    /// Per row: its divisor, side by side for [`batch_inversion`].
    divisors: Vec<F>,
}

impl<F: PrimeField> Divisions<F> {
    const BATCH: usize = 1 << 16;

    fn push(&mut self, at: usize, base: F, value: F, divisor: F, terms: &mut [Term]) {
        self.owed.push((at, base, value));
        self.divisors.push(divisor);
        if self.owed.len() == Self::BATCH {
            self.flush(terms);
        }
    }

    /// Writes every owed coefficient into its placeholder in `terms` (each row's A terms
    /// are in `terms` before its division is pushed).
    fn flush(&mut self, terms: &mut [Term]) {
        batch_inversion(&mut self.divisors);
        for ((at, base, value), inverse) in self.owed.drain(..).zip(self.divisors.drain(..)) {
            terms[at] = term(terms[at].wire as usize, &(base + value * inverse));
        }
    }
}

/// `x` as 32 little-endian bytes (both curves' scalars are four limbs), written without
/// the allocations of [`crate::curve::field_to_le`]: a 2^26 circuit has ~600M terms.
fn le32<F: PrimeField>(x: &F) -> [u8; 32] {
    let mut v = [0u8; 32];
    let limbs = x.into_bigint();
    debug_assert!(limbs.as_ref().len() <= 4, "a scalar wider than 32 bytes");
    for (bytes, limb) in v.chunks_exact_mut(8).zip(limbs.as_ref()) {
        bytes.copy_from_slice(&limb.to_le_bytes());
    }
    v
}

fn term<F: PrimeField>(wire: usize, value: &F) -> Term {
    Term {
        wire: wire as u32,
        value: le32(value),
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
                values: Values::Products,
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
        let spec = |seed| SynthSpec {
            constraints: 300,
            public: 3,
            seed,
            values: Values::Products,
        };
        assert_ne!(synth::<E>(&spec(9)).0, synth::<E>(&spec(2)).0);
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
            values: Values::Products,
        });
        let last = wtns.values.len() - 32;
        wtns.values[last] ^= 1;
        let err = check_r1cs::<crate::Bn254>(&r1cs, &wtns).unwrap_err();
        assert!(err.to_string().contains("constraint 99"), "{err}");
    }

    /// Every class of a profile, at its share: the circuit stays satisfied and the same
    /// for a seed, and the witness's classes (as `zkpipe inspect` counts them) fall
    /// within 1% of the profile.
    fn profiled<E: Curve>() {
        let every = "zero=30,one=20,upTo8Bits=10,upTo64Bits=15,negativeUpTo64Bits=5,full=20";
        for profile in ["sha256", every] {
            let values: Values = profile.parse().unwrap();
            let Values::Profile(p) = values else {
                panic!("{profile} is not a profile")
            };
            let spec = SynthSpec {
                constraints: 20_000,
                public: 2,
                seed: 7,
                values,
            };
            let (r1cs, wtns) = synth::<E>(&spec);
            check_r1cs::<E>(&r1cs, &wtns).unwrap();
            assert_eq!(synth::<E>(&spec), (r1cs, wtns.clone()));
            let classes = wtns.value_classes();
            assert!(p.distance(&classes) <= 100, "{profile}: {classes:?}");
        }
        // Today's values are almost all full-size: far from the SHA-256 profile.
        let (_, products) = synth::<E>(&SynthSpec {
            constraints: 2_000,
            public: 2,
            seed: 7,
            values: Values::Products,
        });
        assert!(ValueProfile::SHA256.distance(&products.value_classes()) > 5_000);
    }

    /// A seed makes the same files as the versions before, byte for byte (the digests
    /// are what the row-by-row division of dedacd5 wrote), so keys and timings made in
    /// different sessions compare. The profiled circuit's 102,070 divisions cross a
    /// batch's end ([`Divisions::BATCH`]).
    #[test]
    fn a_seed_makes_the_files_it_made_before() {
        use sha2::{Digest, Sha256};
        let digests = |(r1cs, wtns): (R1cs, Wtns)| {
            [r1cs.to_bytes(), wtns.to_bytes()].map(|b| format!("{:x}", Sha256::digest(b)))
        };
        let spec = |log: u32, seed, values| SynthSpec {
            constraints: (1 << log) - 5,
            public: 4,
            seed,
            values,
        };
        let sha256 = Values::Profile(ValueProfile::SHA256);
        assert_eq!(
            digests(synth::<crate::Bn254>(&spec(17, 3, sha256))),
            [
                "e932acd30772e8c0f2c4e48b0cb93d9a0d7e222afb7bd1a4a5ddd184ef7cee13",
                "cddf9107273d3a272be2e10e4d74e60bf3140c2787a7a4195d4820e2fc2223bc"
            ]
        );
        assert_eq!(
            digests(synth::<crate::Bls12_381>(&spec(12, 2, Values::Products))),
            [
                "d7a24534048c8acf0669b2cbd8ca255564cc6e38e631ce19e50602534561645f",
                "905a7f3874b171c7d36bfc017845a081f068a5f8bcc73af1d5b5c0ddb239fe23"
            ]
        );
    }

    #[test]
    fn bn254_profiles_hold() {
        profiled::<crate::Bn254>();
    }

    #[test]
    fn bls12_381_profiles_hold() {
        profiled::<crate::Bls12_381>();
    }

    /// `--values` reads names and shares, writes them back, and names what is wrong.
    #[test]
    fn values_parse_and_print() {
        for s in ["random", "sha256", "zero=62.5,one=30,full=7.5"] {
            let v: Values = s.parse().unwrap();
            assert_eq!(v.to_string(), s);
        }
        assert_eq!(
            "zero=58.2,one=41.8".parse::<Values>(),
            Ok(Values::Profile(ValueProfile::SHA256))
        );
        for (bad, says) in [
            ("zero=50,one=40", "sum to 90%"),
            ("zero=50,two=50", "unknown value class \"two\""),
            ("zero=fifty,one=50", "not a percent"),
            ("zero", "not class=percent"),
            ("zero=150,one=-50", "not a percent"),
        ] {
            let err = bad.parse::<Values>().unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
