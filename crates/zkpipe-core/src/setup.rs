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
use ark_ff::{batch_inversion, FftField, Field, PrimeField, Zero};
use ark_poly::EvaluationDomain;
use ark_std::UniformRand;
use rand::RngCore;
use rayon::prelude::*;
use std::sync::OnceLock;
use zkpipe_formats::r1cs::R1cs;
use zkpipe_formats::zkey::{EncodedCoefficients, Groth16Header, Matrix, ZkeyContents};

/// Points per progress step.
const CHUNK: usize = 1 << 14;

/// Reports (points done, points total) as the setup proceeds.
pub type Progress<'a> = &'a (dyn Fn(u64, u64) + Sync);

/// Makes a development key for `r1cs` from toxic waste drawn from `rng`, its points on
/// the CPU ([`CpuFixedBase`]).
pub fn dev_setup<E: Curve>(
    r1cs: &R1cs,
    rng: &mut impl RngCore,
    progress: Progress<'_>,
) -> Result<ZkeyContents, Error> {
    dev_setup_with(r1cs, rng, progress, &CpuFixedBase::<E>::for_r1cs(r1cs))
}

/// The domain of `r1cs`'s key, as snarkjs's `zkey new` sizes it: the next power of two
/// ≥ constraints + nPublic + 1.
fn domain_size(r1cs: &R1cs) -> usize {
    let h = &r1cs.header;
    (h.n_constraints as usize + h.n_public() as usize + 1).next_power_of_two()
}

/// The fixed-base multiplications a dev key's points are made of: for scalars sᵢ, the
/// points sᵢ·G of the group's generator G, in the key file's layout. The CPU's is
/// [`CpuFixedBase`]; a GPU backend brings its own (zkpipe-cuda's `GpuFixedBase`). Every
/// implementation gives the same points for the same scalars, so a key does not depend on
/// which made it.
pub trait FixedBase<E: Curve>: Sync {
    /// sᵢ·G for each scalar, G₂'s generator where `g2` else G₁'s, in order, into `out` in
    /// file layout ([`point_bytes`] each: `out` holds exactly one point per scalar).
    fn encode(&self, scalars: &[E::ScalarField], g2: bool, out: &mut [u8]) -> Result<(), Error>;
    /// Scalars per call (progress is reported after each).
    fn chunk(&self) -> usize {
        CHUNK
    }
}

/// Bytes of one point [`FixedBase::encode`] writes: an affine G₂ point of `E` in the key
/// file where `g2`, else a G₁ one.
pub fn point_bytes<E: Curve>(g2: bool) -> usize {
    match g2 {
        true => E::ID.g2_bytes(),
        false => E::ID.g1_bytes(),
    }
}

/// [`FixedBase`] on the CPU: arkworks' window tables of the generators, each made at its
/// first use, with windows sized for the scalars per set it was told to expect.
pub struct CpuFixedBase<E: Curve> {
    sizes: (usize, usize),
    g1: OnceLock<BatchMulPreprocessing<E::G1>>,
    g2: OnceLock<BatchMulPreprocessing<E::G2>>,
}

impl<E: Curve> CpuFixedBase<E> {
    /// Tables for sets of up to `g1` and `g2` scalars (any count works; this sizes the
    /// windows).
    pub fn new(g1: usize, g2: usize) -> Self {
        Self {
            sizes: (g1.max(1), g2.max(1)),
            g1: OnceLock::new(),
            g2: OnceLock::new(),
        }
    }

    /// Tables sized for `r1cs`'s key: its G1 sets have up to max(signals, domain) points,
    /// [B]₂ one per signal.
    pub fn for_r1cs(r1cs: &R1cs) -> Self {
        let signals = r1cs.header.n_wires as usize;
        Self::new(signals.max(domain_size(r1cs)), signals)
    }

    /// sᵢ·G₁ for each scalar, in order.
    pub fn g1(&self, scalars: &[E::ScalarField]) -> Vec<E::G1Affine> {
        let table = self
            .g1
            .get_or_init(|| BatchMulPreprocessing::new(E::G1::generator(), self.sizes.0));
        table.batch_mul(scalars)
    }

    /// sᵢ·G₂ for each scalar, in order.
    pub fn g2(&self, scalars: &[E::ScalarField]) -> Vec<E::G2Affine> {
        let table = self
            .g2
            .get_or_init(|| BatchMulPreprocessing::new(E::G2::generator(), self.sizes.1));
        table.batch_mul(scalars)
    }
}

impl<E: Curve> FixedBase<E> for CpuFixedBase<E> {
    fn encode(&self, scalars: &[E::ScalarField], g2: bool, out: &mut [u8]) -> Result<(), Error> {
        match g2 {
            true => write_all(&self.g2(scalars), E::ID.g2_bytes(), E::g2_to_bytes, out),
            false => write_all(&self.g1(scalars), E::ID.g1_bytes(), E::g1_to_bytes, out),
        }
    }
}

/// Writes `points` in file layout into `out` (`size` bytes each, by `write`; in parallel),
/// or says how many points there were where they do not fill it.
fn write_all<P: Sync>(
    points: &[P],
    size: usize,
    write: fn(&P, &mut Vec<u8>),
    out: &mut [u8],
) -> Result<(), Error> {
    if points.len() * size != out.len() {
        return Err(Error::InvalidKey(format!(
            "{} points for {} scalars",
            points.len(),
            out.len() / size
        )));
    }
    // One buffer a thread, not one a point.
    out.par_chunks_mut(size).zip(points).for_each_init(
        || Vec::with_capacity(size),
        |b, (dst, p)| {
            b.clear();
            write(p, b);
            dst.copy_from_slice(b);
        },
    );
    Ok(())
}

/// Makes a development key for `r1cs` from toxic waste drawn from `rng`, its points by
/// `fixed`: the same key as [`dev_setup`] for the same draws.
pub fn dev_setup_with<E: Curve>(
    r1cs: &R1cs,
    rng: &mut impl RngCore,
    progress: Progress<'_>,
    fixed: &dyn FixedBase<E>,
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
    let n = domain_size(r1cs);
    let domain = QuotientDomain::<E::ScalarField>::new(n)
        .filter(|_| n.trailing_zeros() < E::ScalarField::TWO_ADICITY)
        .ok_or_else(|| {
            Error::InvalidKey(format!(
                "{m} constraints need a domain of {n}, too large for {}",
                E::ID
            ))
        })?;
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

    // Each part's time, at debug level (`ZKPIPE_LOG=debug zkpipe setup …`).
    let mut clock = std::time::Instant::now();
    let mut lap = |part: &str| {
        let now = std::time::Instant::now();
        tracing::debug!(part, ms = (now - clock).as_secs_f64() * 1e3, "setup");
        clock = now;
    };

    // Lagrange basis of the n-domain at τ: L_j(τ) = (τⁿ − 1)/n · ωʲ/(τ − ωʲ).
    let omegas: Vec<E::ScalarField> = domain.domain.elements().collect();
    let lagrange = lagrange_at(&omegas, tau, tau.pow([n as u64]) - E::ScalarField::ONE, n)?;
    lap("lagrange");

    // QAP polynomials of each signal at τ, and the coefficient list of A and B.
    let r2 = montgomery_r::<E::ScalarField>().square();
    let Qap {
        mut u,
        v,
        w,
        coefficients,
    } = qap::<E>(
        r1cs,
        &lagrange[..m],
        n_vars,
        r2,
        n_public + 1,
        (QAP_BLOCK, QAP_ROUND, qap_span(n_vars)),
    )?;
    for i in 0..=n_public {
        u[i] += lagrange[m + i];
    }
    lap("qap");

    let combined = |i: usize| beta * u[i] + alpha * v[i] + w[i];
    let ic: Vec<_> = (0..=n_public).map(|i| combined(i) * gamma_inv).collect();
    let c: Vec<_> = (n_public + 1..n_vars)
        .into_par_iter()
        .map(|i| combined(i) * delta_inv)
        .collect();
    lap("combine");
    // H_j = L^{2n}_{2j+1}(τ)/δ = (τ²ⁿ − 1)/(2n) · x_j/(τ − x_j)/δ, x_j the odd-coset points.
    let coset: Vec<E::ScalarField> = domain.coset.elements().collect();
    let mut hq = lagrange_at(
        &coset,
        tau,
        tau.pow([2 * n as u64]) - E::ScalarField::ONE,
        2 * n,
    )?;
    hq.par_iter_mut().for_each(|x| *x *= delta_inv);
    lap("h scalars");

    let total = (3 * n_vars + c.len() + n + ic.len()) as u64;
    let done = std::sync::atomic::AtomicU64::new(0);
    let points =
        |s: &[E::ScalarField], g2: bool| encode_points(fixed, s, g2, &done, total, progress);
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
    let header = Groth16Header {
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
    };
    let mut set = |name: &str, s: &[E::ScalarField], g2: bool| {
        let encoded = points(s, g2);
        lap(name);
        encoded
    };
    Ok(ZkeyContents {
        ic: set("ic points", &ic, false)?,
        a: set("a points", &u, false)?,
        b1: set("b1 points", &v, false)?,
        b2: set("b2 points", &v, true)?,
        c: set("c points", &c, false)?,
        h: set("h points", &hq, false)?,
        header,
        coefficients,
    })
}

/// Constraints per task of [`qap`].
const QAP_BLOCK: usize = 1 << 12;
/// Blocks whose products [`qap`] holds at once before adding them up (memory stays
/// bounded at any size: ~100 MB at nine terms a constraint).
const QAP_ROUND: usize = 64;

/// Signals per task of [`qap`]'s sums among `n_vars`: several tasks a thread, at least a
/// few pages of sums each.
fn qap_span(n_vars: usize) -> usize {
    n_vars
        .div_ceil(8 * rayon::current_num_threads())
        .max(1 << 10)
}

/// The QAP of a circuit at τ: for each signal the sums over constraints c of its A, B and C
/// coefficients times L_c(τ), and the key's A and B entries.
struct Qap<F> {
    u: Vec<F>,
    v: Vec<F>,
    w: Vec<F>,
    coefficients: EncodedCoefficients,
}

/// Section 4's encoding of a coefficient: x·R² in standard form, little-endian (snarkjs's
/// `zkey new`, so that a Montgomery read of it gives x·R), `r2` = R² (computed once by the
/// caller: it is a power, dearer than the rest). On the stack, not in a `Vec`: a large
/// key has hundreds of millions of entries.
fn encode<F: PrimeField>(x: F, r2: F) -> Encoded {
    let mut e = Encoded {
        bytes: [0; 64],
        len: 0,
    };
    // The limbs little-endian, one after another: `BigInteger::to_bytes_le`'s bytes.
    for limb in (x * r2).into_bigint().as_ref() {
        e.bytes[e.len..e.len + 8].copy_from_slice(&limb.to_le_bytes());
        e.len += 8;
    }
    e
}

/// One [`encode`]d coefficient: its first `len` bytes (a scalar field of up to 8 limbs).
struct Encoded {
    bytes: [u8; 64],
    len: usize,
}

impl std::ops::Deref for Encoded {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// [`Qap`] of `r1cs`'s first `lagrange.len()` constraints, L_c(τ) = `lagrange[c]`, its
/// entries encoded with `r2` = R² ([`encode`]) and followed by snarkjs's extra A rows,
/// A[m+i][i] = 1 for i < `public_rows`; its sums in tasks of `span` signals.
/// Parsing the coefficients, the products and the entries' encoding (nearly all the work)
/// run in parallel over blocks of `block_len` constraints, `round_len` blocks at a time;
/// each block's products sorted by signal, so that the sums run in parallel too, each task
/// over its own range of signals (they were one thread a vector: the QAP took 14.4 s of a
/// 2^24 setup on 16 cores, lab 043n). Each block writes its entries straight into their
/// place in the section (counted first), not into a vector of its own appended after.
fn qap<E: Curve>(
    r1cs: &R1cs,
    lagrange: &[E::ScalarField],
    n_vars: usize,
    r2: E::ScalarField,
    public_rows: usize,
    (block_len, round_len, span): (usize, usize, usize),
) -> Result<Qap<E::ScalarField>, Error> {
    type Products<F> = [Vec<(u32, F)>; 3];
    let f = |t: &zkpipe_formats::r1cs::Term| -> Result<E::ScalarField, Error> {
        field_from_le(&t.value).ok_or_else(|| Error::InvalidScalar {
            what: "r1cs coefficient".into(),
            value: zkpipe_formats::curve::le_to_decimal(&t.value),
        })
    };
    let m = lagrange.len();
    let one = encode(E::ScalarField::ONE, r2);
    let entry = EncodedCoefficients::entry_len(one.len());
    let starts: Vec<usize> = (0..m).step_by(block_len).collect();
    // Each block's entries (its constraints' A and B terms), then the extra rows'.
    let counts: Vec<usize> = starts
        .par_iter()
        .map(|&start| {
            (start..(start + block_len).min(m))
                .map(|c| {
                    let [a, b, _] = r1cs.constraint(c);
                    a.len() + b.len()
                })
                .sum()
        })
        .collect();
    let len = counts.iter().sum::<usize>() + public_rows;
    // Zeroed by the allocator (fresh pages): the blocks touch their own first.
    let mut bytes = vec![0u8; len * entry];
    let (mut places, mut rest) = (Vec::with_capacity(starts.len()), &mut bytes[..]);
    for count in &counts {
        let (place, tail) = rest.split_at_mut(count * entry);
        places.push(place);
        rest = tail;
    }
    for (i, dst) in rest.chunks_exact_mut(entry).enumerate() {
        EncodedCoefficients::write_entry(dst, Matrix::A, (m + i) as u32, i as u32, &one);
    }

    let block = |start: usize, place: &mut [u8]| -> Result<Products<E::ScalarField>, Error> {
        let mut products: Products<E::ScalarField> = Default::default();
        let mut entries = place.chunks_exact_mut(entry);
        for (c, l) in lagrange.iter().enumerate().skip(start).take(block_len) {
            for (k, terms) in r1cs.constraint(c).into_iter().enumerate() {
                for t in terms {
                    let x = f(t)?;
                    products[k].push((t.wire, x * l));
                    if k < 2 {
                        let matrix = [Matrix::A, Matrix::B][k];
                        let dst = entries.next().expect("counted");
                        EncodedCoefficients::write_entry(
                            dst,
                            matrix,
                            c as u32,
                            t.wire,
                            &encode(x, r2),
                        );
                    }
                }
            }
        }
        for p in &mut products {
            p.sort_unstable_by_key(|&(wire, _)| wire);
        }
        Ok(products)
    };
    let zero = vec![E::ScalarField::ZERO; n_vars];
    let (mut u, mut v, mut w) = (zero.clone(), zero.clone(), zero);
    // Where the QAP's time goes, at debug level with the setup's parts.
    let mut laps = [std::time::Duration::ZERO; 2];
    for (round, places) in starts.chunks(round_len).zip(places.chunks_mut(round_len)) {
        let clock = std::time::Instant::now();
        let blocks: Vec<_> = round
            .par_iter()
            .zip(places.par_iter_mut())
            .map(|(&start, place)| block(start, place))
            .collect::<Result<_, _>>()?;
        laps[0] += clock.elapsed();
        let clock = std::time::Instant::now();
        // Each task adds, block by block, the products of its signals: a sorted run.
        let add = |sums: &mut Vec<E::ScalarField>, k: usize| {
            sums.par_chunks_mut(span).enumerate().for_each(|(i, out)| {
                let (lo, hi) = (i * span, i * span + out.len());
                for products in &blocks {
                    let run = &products[k];
                    let start = run.partition_point(|&(wire, _)| (wire as usize) < lo);
                    for &(wire, p) in run[start..].iter().take_while(|x| (x.0 as usize) < hi) {
                        out[wire as usize - lo] += p;
                    }
                }
            });
        };
        add(&mut u, 0);
        add(&mut v, 1);
        add(&mut w, 2);
        laps[1] += clock.elapsed();
    }
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    tracing::debug!(
        products_ms = ms(laps[0]),
        sums_ms = ms(laps[1]),
        "setup qap"
    );
    Ok(Qap {
        u,
        v,
        w,
        coefficients: EncodedCoefficients::from_encoded(bytes, len),
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

/// sᵢ·G for every scalar, G₂'s generator where `g2` else G₁'s, in file layout, by
/// `fixed` in its chunks (progress after each).
fn encode_points<E: Curve>(
    fixed: &dyn FixedBase<E>,
    scalars: &[E::ScalarField],
    g2: bool,
    done: &std::sync::atomic::AtomicU64,
    total: u64,
    progress: Progress<'_>,
) -> Result<Vec<u8>, Error> {
    let size = point_bytes::<E>(g2);
    // Zeroed by the allocator (fresh pages), not by a serial fill: the threads that write
    // the points touch them first.
    let mut out = vec![0u8; scalars.len() * size];
    let per = fixed.chunk().max(1);
    for (chunk, dst) in scalars.chunks(per).zip(out.chunks_mut(per * size)) {
        fixed.encode(chunk, g2, dst)?;
        let d = done.fetch_add(chunk.len() as u64, std::sync::atomic::Ordering::Relaxed)
            + chunk.len() as u64;
        progress(d, total);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{synth, SynthSpec, Values};
    use ark_bls12_381::Bls12_381;
    use ark_bn254::Bn254;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// The CPU's multiplications in chunks of `chunk`, or one point short of each chunk.
    struct Chunked<E: Curve> {
        cpu: CpuFixedBase<E>,
        chunk: usize,
        short: bool,
    }

    impl<E: Curve> FixedBase<E> for Chunked<E> {
        fn encode(&self, s: &[E::ScalarField], g2: bool, out: &mut [u8]) -> Result<(), Error> {
            if g2 {
                return self.cpu.encode(s, g2, out);
            }
            let mut p = self.cpu.g1(s);
            p.truncate(p.len() - usize::from(self.short));
            write_all(&p, E::ID.g1_bytes(), E::g1_to_bytes, out)
        }
        fn chunk(&self) -> usize {
            self.chunk
        }
    }

    fn r1cs<E: Curve>() -> R1cs {
        let spec = SynthSpec {
            constraints: 200,
            public: 3,
            seed: 7,
            values: Values::Products,
        };
        synth::<E>(&spec).0
    }

    fn same_key_in_any_chunks<E: Curve>() {
        let r1cs = r1cs::<E>();
        let key = |fixed: &dyn FixedBase<E>| {
            let mut rng = ChaCha20Rng::seed_from_u64(3);
            dev_setup_with(&r1cs, &mut rng, &|_, _| {}, fixed)
                .unwrap()
                .to_bytes()
        };
        let whole = dev_setup::<E>(&r1cs, &mut ChaCha20Rng::seed_from_u64(3), &|_, _| {})
            .unwrap()
            .to_bytes();
        for chunk in [1, 7, 1 << 20] {
            let chunked = Chunked {
                cpu: CpuFixedBase::<E>::new(4, 4),
                chunk,
                short: false,
            };
            assert!(key(&chunked) == whole, "{:?}: chunks of {chunk}", E::ID);
        }
    }

    #[test]
    fn a_dev_key_does_not_depend_on_how_its_points_are_made() {
        same_key_in_any_chunks::<Bn254>();
        same_key_in_any_chunks::<Bls12_381>();
    }

    /// The extra A rows the QAP tests ask for.
    const PUBLIC_ROWS: usize = 4;

    /// The QAP the plain way: one constraint after another, one term after another.
    fn qap_serially<E: Curve>(r1cs: &R1cs, lagrange: &[E::ScalarField]) -> Qap<E::ScalarField> {
        let n_vars = r1cs.header.n_wires as usize;
        let mut sums = vec![vec![E::ScalarField::ZERO; n_vars]; 3];
        let mut coefficients = EncodedCoefficients::default();
        let r2 = montgomery_r::<E::ScalarField>().square();
        for (c, l) in lagrange.iter().enumerate() {
            for (k, terms) in r1cs.constraint(c).into_iter().enumerate() {
                for t in terms {
                    let x: E::ScalarField = field_from_le(&t.value).unwrap();
                    sums[k][t.wire as usize] += x * l;
                    if k < 2 {
                        let matrix = [Matrix::A, Matrix::B][k];
                        coefficients.push(matrix, c as u32, t.wire, &encode(x, r2));
                    }
                }
            }
        }
        let one = encode(E::ScalarField::ONE, r2);
        for i in 0..PUBLIC_ROWS {
            coefficients.push(Matrix::A, (lagrange.len() + i) as u32, i as u32, &one);
        }
        let [u, v, w] = <[_; 3]>::try_from(sums).unwrap();
        Qap {
            u,
            v,
            w,
            coefficients,
        }
    }

    fn qap_in_any_blocks<E: Curve>() {
        let r1cs = r1cs::<E>();
        let m = r1cs.header.n_constraints as usize;
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let lagrange: Vec<E::ScalarField> =
            (0..m).map(|_| E::ScalarField::rand(&mut rng)).collect();
        let want = qap_serially::<E>(&r1cs, &lagrange);
        let n_vars = r1cs.header.n_wires as usize;
        let shapes = [
            (1, 1, 1),
            (7, 3, 5),
            (64, 1, 3),
            (QAP_BLOCK, QAP_ROUND, qap_span(n_vars)),
        ];
        for shape in shapes {
            let r2 = montgomery_r::<E::ScalarField>().square();
            let got = qap::<E>(&r1cs, &lagrange, n_vars, r2, PUBLIC_ROWS, shape).unwrap();
            assert!(
                got.u == want.u && got.v == want.v && got.w == want.w,
                "{shape:?}"
            );
            assert!(got.coefficients == want.coefficients, "{shape:?}");
        }
    }

    #[test]
    fn the_qap_does_not_depend_on_its_blocks() {
        qap_in_any_blocks::<Bn254>();
        qap_in_any_blocks::<Bls12_381>();
    }

    #[test]
    fn points_that_do_not_match_their_scalars_are_refused() {
        let short = Chunked {
            cpu: CpuFixedBase::<Bn254>::new(4, 4),
            chunk: 64,
            short: true,
        };
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let err = dev_setup_with(&r1cs::<Bn254>(), &mut rng, &|_, _| {}, &short).unwrap_err();
        assert!(err.to_string().contains("3 points for 4 scalars"), "{err}");
    }
}
