//! Development setup: a Groth16 key for an r1cs from random toxic waste, in snarkjs's zkey
//! layout, so snarkjs and zkpipe can both prove and verify with it.
//!
//! INSECURE by construction: whoever ran it could know τ, α, β, γ, δ and forge proofs.
//! It exists because snarkjs's ceremony tooling cannot make keys of 2^20 constraints on a
//! small machine (phase-2 preparation alone takes hours), and benchmarks need them.
//!
//! The key follows snarkjs's `zkey new`: domain n = next power of two ≥ constraints +
//! nPublic + 1; one extra A row per public signal (A[m+i][i] = 1); H points are the odd
//! Lagrange points of the 2n-domain at τ, over δ.

use crate::curve::{field_from_le, Curve};
use crate::error::Error;
use crate::key::montgomery_r;
use crate::quotient::QuotientDomain;
use ark_ec::scalar_mul::BatchMulPreprocessing;
use ark_ec::{AdditiveGroup, CurveGroup, PrimeGroup};
use ark_ff::{batch_inversion, BigInteger, FftField, Field, PrimeField, Zero};
use ark_poly::EvaluationDomain;
use ark_std::UniformRand;
use rand::RngCore;
use rayon::prelude::*;
use zkpipe_formats::r1cs::R1cs;
use zkpipe_formats::zkey::{Groth16Header, Matrix, ZkeyContents};

/// Points per progress step.
const CHUNK: usize = 1 << 14;

/// Reports (points done, points total) as the setup proceeds.
pub type Progress<'a> = &'a (dyn Fn(u64, u64) + Sync);

/// Makes a development key for `r1cs` from toxic waste drawn from `rng`.
pub fn dev_setup<E: Curve>(
    r1cs: &R1cs,
    rng: &mut impl RngCore,
    progress: Progress<'_>,
) -> Result<ZkeyContents, Error> {
    let h = &r1cs.header;
    if h.curve != E::ID {
        return Err(Error::CurveMismatch {
            what: "r1cs",
            found: h.curve,
            expected: E::ID,
        });
    }
    let (m, n_public, n_vars) = (
        h.n_constraints as usize,
        h.n_public() as usize,
        h.n_wires as usize,
    );
    let n = (m + n_public + 1).next_power_of_two();
    let domain = QuotientDomain::<E::ScalarField>::new(n)
        .filter(|_| n.trailing_zeros() < E::ScalarField::TWO_ADICITY)
        .ok_or_else(|| {
            Error::InvalidKey(format!(
                "{m} constraints need a domain of {n}, too large for {}",
                E::ID
            ))
        })?;
    let f = |t: &zkpipe_formats::r1cs::Term| -> Result<E::ScalarField, Error> {
        field_from_le(&t.value).ok_or_else(|| Error::InvalidScalar {
            what: "r1cs coefficient".into(),
            value: zkpipe_formats::curve::le_to_decimal(&t.value),
        })
    };

    let nonzero = |rng: &mut dyn RngCore| loop {
        let x = E::ScalarField::rand(rng);
        if !x.is_zero() {
            break x;
        }
    };
    let (tau, alpha, beta, gamma, delta) = (
        nonzero(rng),
        nonzero(rng),
        nonzero(rng),
        nonzero(rng),
        nonzero(rng),
    );
    let (gamma_inv, delta_inv) = (inv(gamma)?, inv(delta)?);

    // Lagrange basis of the n-domain at τ: L_j(τ) = (τⁿ − 1)/n · ωʲ/(τ − ωʲ).
    let omegas: Vec<E::ScalarField> = domain.domain.elements().collect();
    let lagrange = lagrange_at(&omegas, tau, tau.pow([n as u64]) - E::ScalarField::ONE, n)?;

    // QAP polynomials of each signal at τ, and the coefficient list of A and B.
    let (mut u, mut v, mut w) = (
        vec![E::ScalarField::ZERO; n_vars],
        vec![E::ScalarField::ZERO; n_vars],
        vec![E::ScalarField::ZERO; n_vars],
    );
    let r2 = montgomery_r::<E::ScalarField>().square();
    let encode = |x: E::ScalarField| (x * r2).into_bigint().to_bytes_le();
    let mut coefficients = Vec::new();
    for (c, l) in lagrange.iter().enumerate().take(m) {
        let [a, b, cc] = r1cs.constraint(c);
        for t in a {
            let x = f(t)?;
            u[t.wire as usize] += x * l;
            coefficients.push((Matrix::A, c as u32, t.wire, encode(x)));
        }
        for t in b {
            let x = f(t)?;
            v[t.wire as usize] += x * l;
            coefficients.push((Matrix::B, c as u32, t.wire, encode(x)));
        }
        for t in cc {
            w[t.wire as usize] += f(t)? * l;
        }
    }
    for i in 0..=n_public {
        u[i] += lagrange[m + i];
        coefficients.push((
            Matrix::A,
            (m + i) as u32,
            i as u32,
            encode(E::ScalarField::ONE),
        ));
    }

    let combined = |i: usize| beta * u[i] + alpha * v[i] + w[i];
    let ic: Vec<_> = (0..=n_public).map(|i| combined(i) * gamma_inv).collect();
    let c: Vec<_> = (n_public + 1..n_vars)
        .map(|i| combined(i) * delta_inv)
        .collect();
    // H_j = L^{2n}_{2j+1}(τ)/δ = (τ²ⁿ − 1)/(2n) · x_j/(τ − x_j)/δ, x_j the odd-coset points.
    let coset: Vec<E::ScalarField> = domain.coset.elements().collect();
    let mut hq = lagrange_at(
        &coset,
        tau,
        tau.pow([2 * n as u64]) - E::ScalarField::ONE,
        2 * n,
    )?;
    hq.par_iter_mut().for_each(|x| *x *= delta_inv);

    let total = (3 * n_vars + c.len() + n + ic.len()) as u64;
    let done = std::sync::atomic::AtomicU64::new(0);
    let g1_table = BatchMulPreprocessing::new(E::G1::generator(), n_vars.max(n));
    let g2_table = BatchMulPreprocessing::new(E::G2::generator(), n_vars);
    let g1_bytes = |s: &[E::ScalarField]| {
        encode_points(
            s,
            &|chunk| g1_table.batch_mul(chunk),
            &|p, out| E::g1_to_bytes(p, out),
            E::ID.g1_bytes(),
            &done,
            total,
            progress,
        )
    };
    let g2_bytes = |s: &[E::ScalarField]| {
        encode_points(
            s,
            &|chunk| g2_table.batch_mul(chunk),
            &|p, out| E::g2_to_bytes(p, out),
            E::ID.g2_bytes(),
            &done,
            total,
            progress,
        )
    };
    let point1 = |s: E::ScalarField| {
        let mut b = Vec::new();
        E::g1_to_bytes(&(E::G1::generator() * s).into_affine(), &mut b);
        b
    };
    let point2 = |s: E::ScalarField| {
        let mut b = Vec::new();
        E::g2_to_bytes(&(E::G2::generator() * s).into_affine(), &mut b);
        b
    };
    Ok(ZkeyContents {
        header: Groth16Header {
            curve: E::ID,
            n_vars: n_vars as u32,
            n_public: n_public as u32,
            domain_size: n as u32,
            alpha1: point1(alpha),
            beta1: point1(beta),
            beta2: point2(beta),
            gamma2: point2(gamma),
            delta1: point1(delta),
            delta2: point2(delta),
        },
        coefficients,
        ic: g1_bytes(&ic),
        a: g1_bytes(&u),
        b1: g1_bytes(&v),
        b2: g2_bytes(&v),
        c: g1_bytes(&c),
        h: g1_bytes(&hq),
    })
}

fn inv<F: Field>(x: F) -> Result<F, Error> {
    x.inverse()
        .ok_or_else(|| Error::InvalidKey("toxic waste not invertible".into()))
}

/// L_j(τ) = z · (1/size) · x_j/(τ − x_j) for the points x_j of a domain whose vanishing
/// polynomial takes the value z at τ.
fn lagrange_at<F: PrimeField>(points: &[F], tau: F, z: F, size: usize) -> Result<Vec<F>, Error> {
    let mut denom: Vec<F> = points.par_iter().map(|x| tau - x).collect();
    if denom.iter().any(|d| d.is_zero()) {
        return Err(Error::InvalidKey("τ fell on the domain; run again".into()));
    }
    batch_inversion(&mut denom);
    let scale = z * inv(F::from(size as u64))?;
    Ok(points
        .par_iter()
        .zip(denom)
        .map(|(x, d)| scale * x * d)
        .collect())
}

/// Fixed-base multiplications in chunks (for progress), serialized in file layout.
fn encode_points<F: Sync, P: Send + Sync>(
    scalars: &[F],
    mul: &(dyn Fn(&[F]) -> Vec<P> + Sync),
    write: &(dyn Fn(&P, &mut Vec<u8>) + Sync),
    size: usize,
    done: &std::sync::atomic::AtomicU64,
    total: u64,
    progress: Progress<'_>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(scalars.len() * size);
    for chunk in scalars.chunks(CHUNK) {
        let points = mul(chunk);
        let bytes: Vec<Vec<u8>> = points
            .par_iter()
            .map(|p| {
                let mut b = Vec::with_capacity(size);
                write(p, &mut b);
                b
            })
            .collect();
        for b in bytes {
            out.extend_from_slice(&b);
        }
        let d = done.fetch_add(chunk.len() as u64, std::sync::atomic::Ordering::Relaxed)
            + chunk.len() as u64;
        progress(d, total);
    }
    out
}
