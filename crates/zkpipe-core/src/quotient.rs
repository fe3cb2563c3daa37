//! Step 2, quotient: a, b, c are interpolated on the domain and evaluated on the odd coset
//! (the odd powers of a 2n-th root of unity), where h = a·b − c.
//!
//! snarkjs's H points are Lagrange points of that coset scaled by Z(τ)/δ, where
//! Z = xⁿ − 1 is the constant −2; so no division is needed, but the coset and its order
//! must be snarkjs's exactly: ω is derived as snarkjs (ffjavascript) derives it, from the
//! smallest quadratic non-residue, not from arkworks' generator.

pub mod coset;

use crate::reduce::QapEvals;
use ark_ff::{FftField, LegendreSymbol, PrimeField};
use ark_poly::{EvaluationDomain, Radix2EvaluationDomain};
use coset::{CosetTransform, MontLimbs};
use rayon::prelude::*;

/// The evaluation domain of size n and the coset where h is evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotientDomain<F: FftField> {
    /// ⟨ω_n⟩, in snarkjs's order.
    pub domain: Radix2EvaluationDomain<F>,
    /// ω_2n·⟨ω_n⟩ (or the non-residue squared when n is the full 2-adicity, as snarkjs does).
    pub coset: Radix2EvaluationDomain<F>,
}

impl<F: PrimeField> QuotientDomain<F> {
    /// snarkjs's domain of size `n` (a power of two), or None if too large for the field.
    pub fn new(n: usize) -> Option<Self> {
        if !n.is_power_of_two() {
            return None;
        }
        let log_n = n.trailing_zeros();
        let s = F::TWO_ADICITY;
        if log_n > s {
            return None;
        }
        let nqr = smallest_non_residue::<F>();
        let root_of_order = |log: u32| {
            let mut w = nqr.pow(F::TRACE);
            for _ in log..s {
                w.square_in_place();
            }
            w
        };
        let w_n = root_of_order(log_n);
        let shift = if log_n == s {
            nqr.square()
        } else {
            root_of_order(log_n + 1)
        };
        let mut domain = Radix2EvaluationDomain::<F>::new(n)?;
        domain.group_gen = w_n;
        domain.group_gen_inv = w_n.inverse()?;
        let coset = domain.get_coset(shift)?;
        Some(Self { domain, coset })
    }

    /// Domain size n.
    pub fn size(&self) -> usize {
        self.domain.size()
    }
}

impl<F: MontLimbs> QuotientDomain<F> {
    /// The change of basis from this domain to the coset. Its tables hold 2n field
    /// elements, or 3n × 40 bytes in IFMA lanes (120 MiB at 2^20). They are not kept with
    /// the key, which GPU bindings share; a CPU binding keeps one (`crate::cpu`).
    pub fn transform(&self) -> CosetTransform<F> {
        self.transform_with(true)
    }

    /// [`Self::transform`], in IFMA lanes only if `lanes` allows (and the CPU has them).
    pub fn transform_with(&self, lanes: bool) -> CosetTransform<F> {
        CosetTransform::with_lanes(
            self.size(),
            self.domain.group_gen,
            self.coset.coset_offset(),
            lanes,
        )
    }
}

/// ffjavascript's non-residue: the smallest of 2, 3, 4, … that is not a square.
fn smallest_non_residue<F: PrimeField>() -> F {
    let mut x = F::from(2u64);
    while x.legendre() != LegendreSymbol::QuadraticNonResidue {
        x += F::ONE;
    }
    x
}

/// The pointwise step on the coset: a ← a·b − c.
pub fn pointwise<F: PrimeField>(evals: &mut QapEvals<F>) {
    evals
        .a
        .par_iter_mut()
        .zip(evals.b.par_iter())
        .zip(evals.c.par_iter())
        .for_each(|((a, b), c)| *a = *a * b - c);
}

/// The whole stage on the CPU: three changes of basis, then the pointwise step.
pub fn quotient<F: MontLimbs>(d: &QuotientDomain<F>, evals: &mut QapEvals<F>) {
    quotient_with(&d.transform(), evals);
}

/// [`quotient`] with the domain's transform made beforehand.
pub fn quotient_with<F: MontLimbs>(t: &CosetTransform<F>, evals: &mut QapEvals<F>) {
    let QapEvals { a, b, c } = evals;
    rayon::join(
        || t.to_coset(a),
        || rayon::join(|| t.to_coset(b), || t.to_coset(c)),
    );
    pointwise(evals);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_poly::{univariate::DensePolynomial, DenseUVPolynomial, Polynomial};

    /// h on the coset must equal (A·B − C)(x) where A, B, C interpolate a, b, c on the domain.
    fn matches_polynomial_oracle<F: MontLimbs>() {
        let n = 16;
        let d = QuotientDomain::<F>::new(n).unwrap();
        let w = d.domain.group_gen;
        assert_eq!(w.pow([n as u64]), F::ONE);
        assert_ne!(w.pow([n as u64 / 2]), F::ONE);
        assert_eq!(
            d.coset.coset_offset().square(),
            w,
            "offset is a square root of ω_n"
        );

        let rng = &mut ark_std::test_rng();
        let pa = DensePolynomial::<F>::rand(n - 1, rng);
        let pb = DensePolynomial::<F>::rand(n - 1, rng);
        let elems: Vec<F> = d.domain.elements().collect();
        let c: Vec<F> = elems
            .iter()
            .map(|x| pa.evaluate(x) * pb.evaluate(x))
            .collect();
        let pc = DensePolynomial::from_coefficients_vec(d.domain.ifft(&c));
        let mut ev = QapEvals {
            a: elems.iter().map(|x| pa.evaluate(x)).collect(),
            b: elems.iter().map(|x| pb.evaluate(x)).collect(),
            c,
        };
        quotient(&d, &mut ev);
        for (j, x) in d.coset.elements().enumerate() {
            assert_eq!(
                x.pow([n as u64]),
                -F::ONE,
                "coset point {j} is an odd power of ω_2n"
            );
            let expected = pa.evaluate(&x) * pb.evaluate(&x) - pc.evaluate(&x);
            assert_eq!(ev.h()[j], expected, "h at coset point {j}");
        }
    }

    #[test]
    fn bn254_quotient_matches_oracle() {
        matches_polynomial_oracle::<ark_bn254::Fr>();
    }

    #[test]
    fn bls12_381_quotient_matches_oracle() {
        matches_polynomial_oracle::<ark_bls12_381::Fr>();
    }
}
