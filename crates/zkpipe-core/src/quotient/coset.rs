//! The quotient's change of basis, evaluations on the domain → evaluations on the coset,
//! cut for many cores.
//!
//! Written here rather than taken from arkworks: `Radix2EvaluationDomain` runs each of its
//! log n levels as its own parallel pass and permutes to bit-reversed order in both
//! transforms; the six transforms of a 2^16 proof took 21–24 ms on 16 cores (experiment
//! 028). Here one change of basis is
//!
//! 1. an inverse NTT by decimation in frequency (natural order in, bit-reversed out),
//! 2. the coset shift and the inverse's 1/n, one multiplication per element,
//! 3. a forward NTT by decimation in time (bit-reversed in, natural order out),
//!
//! so no permutation pass is needed; and every level below [`BLOCK`] elements, of both
//! transforms and the shift between them, runs in one task per block, in cache. Only the
//! levels above run as shared passes. Where the CPU has AVX-512 IFMA, the same steps run
//! eight butterflies at a time (`crate::ifma::ntt`); this file's scalar loops are the
//! fallback, and the reference the lanes are tested against.

pub use crate::curve::MontLimbs;
use ark_ff::Field;
use rayon::prelude::*;

/// Elements one task transforms alone: 128 KiB of 32-byte elements, inside a core's L2.
const BLOCK: usize = 1 << 12;

/// Butterflies per task in a shared level.
const SPAN: usize = 1 << 10;

/// The constants of one domain's change of basis.
pub struct CosetTransform<F> {
    tables: Tables<F>,
}

/// The constants for the scalar loops, or for the IFMA lanes.
enum Tables<F> {
    Scalar {
        /// `twiddles[m + j]` = ω_{2m}^j for every level m = 1, 2, 4, …, n/2 and j < m,
        /// where ω_{2m} = ω^{n/2m} (`twiddles[0]` is unused): each level's factors lie
        /// together.
        twiddles: Vec<F>,
        /// `shift[i]` = g^{rev(i)}/n, rev reversing log₂ n bits: the shift and 1/n, in the
        /// bit-reversed order the inverse NTT leaves the coefficients in.
        shift: Vec<F>,
    },
    #[cfg(target_arch = "x86_64")]
    Lanes(Box<crate::ifma::ntt::LaneNtt>),
}

impl<F: MontLimbs> CosetTransform<F> {
    /// The transform for the domain ⟨`omega`⟩ of size `n` (a power of two) and the coset
    /// `shift`·⟨`omega`⟩; in IFMA lanes where this CPU has them and n is at least 64.
    pub fn new(n: usize, omega: F, shift: F) -> Self {
        Self::with_lanes(n, omega, shift, true)
    }

    /// [`Self::new`], in lanes only if `lanes` and the CPU allow.
    pub fn with_lanes(n: usize, omega: F, shift: F, lanes: bool) -> Self {
        assert!(n.is_power_of_two(), "domain size {n} is not a power of two");
        #[cfg(target_arch = "x86_64")]
        if let Some(l) = lanes
            .then(|| crate::ifma::ntt::LaneNtt::new(n, omega, shift))
            .flatten()
        {
            return Self {
                tables: Tables::Lanes(Box::new(l)),
            };
        }
        let _ = lanes;
        let mut twiddles = vec![F::ZERO; n.max(2)];
        if n >= 2 {
            powers_into(omega, F::ONE, &mut twiddles[n / 2..]);
            // Level m takes every other factor of level 2m.
            let mut m = n / 4;
            while m >= 1 {
                let (lower, upper) = twiddles.split_at_mut(2 * m);
                lower[m..]
                    .par_iter_mut()
                    .zip(upper[..2 * m].par_iter().step_by(2))
                    .for_each(|(t, u)| *t = *u);
                m /= 2;
            }
        }
        let n_inv = F::from(n as u64)
            .inverse()
            .expect("n < field characteristic");
        let mut natural = vec![F::ZERO; n];
        powers_into(shift, n_inv, &mut natural);
        let bits = n.trailing_zeros();
        let shift = (0..n)
            .into_par_iter()
            .map(|i| natural[reverse_bits(i, bits)])
            .collect();
        Self {
            tables: Tables::Scalar { twiddles, shift },
        }
    }

    /// Evaluations of a polynomial of degree < n on the domain (natural order) → its
    /// evaluations on the coset (natural order), in place.
    pub fn to_coset(&self, v: &mut [F]) {
        match &self.tables {
            Tables::Scalar { twiddles, shift } => scalar_to_coset(twiddles, shift, v),
            #[cfg(target_arch = "x86_64")]
            Tables::Lanes(l) => l.to_coset(v),
        }
    }
}

/// [`CosetTransform::to_coset`] in scalar loops.
fn scalar_to_coset<F: Field>(tw: &[F], shift: &[F], v: &mut [F]) {
    let n = shift.len();
    assert_eq!(v.len(), n, "evaluations of the wrong domain size");
    let block = n.min(BLOCK);
    // Inverse NTT, levels of blocks above `block`: shared passes.
    let mut m = n / 2;
    while 2 * m > block {
        shared_level(v, m, |lo, hi, j0| dif_butterflies(lo, hi, j0, m, tw));
        m /= 2;
    }
    // The levels inside each block: the rest of the inverse, the shift, the forward
    // transform's first levels.
    v.par_chunks_mut(block)
        .zip(shift.par_chunks(block))
        .for_each(|(x, shift)| {
            let mut m = block / 2;
            while m >= 1 {
                for pair in x.chunks_exact_mut(2 * m) {
                    let (lo, hi) = pair.split_at_mut(m);
                    dif_butterflies(lo, hi, 0, m, tw);
                }
                m /= 2;
            }
            x.iter_mut().zip(shift).for_each(|(x, s)| *x *= s);
            let mut m = 1;
            while m < block {
                for pair in x.chunks_exact_mut(2 * m) {
                    let (lo, hi) = pair.split_at_mut(m);
                    dit_butterflies(lo, hi, 0, m, tw);
                }
                m *= 2;
            }
        });
    // Forward NTT, the levels above `block`.
    let mut m = block;
    while m < n {
        shared_level(v, m, |lo, hi, j0| dit_butterflies(lo, hi, j0, m, tw));
        m *= 2;
    }
}

/// One level of half-size `m` whose pairs of blocks are too big for one task: every pair's
/// butterflies are cut into spans of [`SPAN`], each a task. `f(lo, hi, j0)` runs the
/// butterflies j0, j0 + 1, … of one pair.
fn shared_level<F: Field>(v: &mut [F], m: usize, f: impl Fn(&mut [F], &mut [F], usize) + Sync) {
    v.par_chunks_mut(2 * m).for_each(|pair| {
        let (lo, hi) = pair.split_at_mut(m);
        lo.par_chunks_mut(SPAN)
            .zip(hi.par_chunks_mut(SPAN))
            .enumerate()
            .for_each(|(k, (lo, hi))| f(lo, hi, k * SPAN));
    });
}

/// Decimation-in-frequency butterflies j0, j0 + 1, … of level `m` of the inverse NTT:
/// (u, v) → (u + v, (u − v)·ω_{2m}^{−j}). Since ω_{2m}^{−j} = −ω_{2m}^{m−j}, that is
/// (v − u)·`twiddles[2m − j]`: the forward table serves both directions.
#[inline]
fn dif_butterflies<F: Field>(lo: &mut [F], hi: &mut [F], j0: usize, m: usize, tw: &[F]) {
    for (k, (u, v)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
        let j = j0 + k;
        let (a, b) = (*u, *v);
        *u = a + b;
        *v = if j == 0 {
            a - b
        } else {
            (b - a) * tw[2 * m - j]
        };
    }
}

/// Decimation-in-time butterflies j0, j0 + 1, … of level `m` of the forward NTT:
/// (u, v) → (u + ω_{2m}^j·v, u − ω_{2m}^j·v).
#[inline]
fn dit_butterflies<F: Field>(lo: &mut [F], hi: &mut [F], j0: usize, m: usize, tw: &[F]) {
    for (k, (u, v)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
        let t = *v * tw[m + j0 + k];
        let a = *u;
        *u = a + t;
        *v = a - t;
    }
}

/// `out[i]` = first·base^i, in parallel chunks.
fn powers_into<F: Field>(base: F, first: F, out: &mut [F]) {
    const CHUNK: usize = 1 << 12;
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(k, chunk)| {
            let mut p = first * base.pow([(k * CHUNK) as u64]);
            for x in chunk {
                *x = p;
                p *= base;
            }
        });
}

/// `i` with its low `bits` bits reversed.
fn reverse_bits(i: usize, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        i.reverse_bits() >> (usize::BITS - bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quotient::QuotientDomain;
    use ark_poly::EvaluationDomain;

    /// The same coset evaluations as arkworks' inverse FFT and coset FFT, for every size
    /// from 1 to past one block (so the shared levels run too); the scalar loops and, where
    /// this CPU has them, the IFMA lanes.
    fn matches_arkworks<F: MontLimbs>() {
        let rng = &mut ark_std::test_rng();
        for log_n in 0..=(BLOCK.trailing_zeros() + 2) {
            let n = 1usize << log_n;
            let d = QuotientDomain::<F>::new(n).unwrap();
            let (w, g) = (d.domain.group_gen, d.coset.coset_offset());
            let evals: Vec<F> = (0..n).map(|_| F::rand(rng)).collect();
            let mut expected = evals.clone();
            d.domain.ifft_in_place(&mut expected);
            d.coset.fft_in_place(&mut expected);
            for lanes in [false, true] {
                let t = CosetTransform::with_lanes(n, w, g, lanes);
                #[cfg(target_arch = "x86_64")]
                if lanes && !matches!(t.tables, Tables::Lanes(_)) && n >= crate::ifma::ntt::MIN_SIZE
                {
                    eprintln!("ifma: this CPU has no AVX-512 IFMA; the lane NTT not exercised");
                }
                let mut got = evals.clone();
                t.to_coset(&mut got);
                assert!(got == expected, "n = {n}, lanes = {lanes}");
            }
        }
    }

    #[test]
    fn bn254_matches_arkworks() {
        matches_arkworks::<ark_bn254::Fr>();
    }

    #[test]
    fn bls12_381_matches_arkworks() {
        matches_arkworks::<ark_bls12_381::Fr>();
    }

    #[test]
    fn bits_reverse() {
        assert_eq!(reverse_bits(0, 0), 0);
        assert_eq!(reverse_bits(1, 3), 4);
        assert_eq!(reverse_bits(6, 3), 3);
    }
}
