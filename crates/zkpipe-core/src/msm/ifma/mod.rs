//! The MSM's batch-affine pair additions on AVX-512 IFMA: eight additions side by side, one
//! per 64-bit lane.
//!
//! Why hand-written: the bucket passes of [`crate::msm::pippenger`] spent about half their time
//! in arkworks' scalar Montgomery multiplication, and no maintained crate offers vectorized
//! Montgomery arithmetic over arkworks' BN254 and BLS12-381 fields. `vpmadd52luq` and
//! `vpmadd52huq` multiply 52-bit limbs in eight lanes at once, so field elements here are
//! radix 2^52.
//!
//! ```text
//!  element a of F_p (or F_p² = F_p[u]/(u² + 1)): each F_p component as L limbs of 52 bits,
//!      holding a·R' mod p, R' = 2^{52L}, fully reduced (L = 5 for ≤ 258-bit p, 8 for ≤ 414)
//!  point: x then y ([`LanePoint`]); the point at infinity has u64::MAX as its first word
//!  pair additions (one round of the tree sums, ≤ 4096 pairs per call):
//!      scalar: classify each pair (infinity / equal x / add / double), do the trivial ones
//!      lanes:  forward  — gather x₁, x₂ of 8 pairs, chain the products of x₂ − x₁ (4 chains)
//!              invert the 32 chain products at once (arkworks, one inversion)
//!              backward — λ = (y₂ − y₁)/(x₂ − x₁), x₃ = λ² − x₁ − x₂, y₃ = λ(x₁ − x₃) − y₁,
//!                         scattered back to the first point of each pair
//! ```
//!
//! Points enter and leave in standard form through arkworks' `into_bigint`/`from_bigint`, so
//! this module is generic over the curve: any short-Weierstrass curve with a = 0 whose base
//! field is F_p or a quadratic extension with u² = −1 (every group here).
//!
//! The lane field arithmetic is in [`crate::ifma::field`]; this file holds the point layout,
//! the conversions and the pair additions.

#![allow(unsafe_code)]
// Limb loops index several arrays by the same j, as the arithmetic is written on paper.
#![allow(clippy::needless_range_loop)]

use std::arch::x86_64::*;
use std::borrow::Cow;
use std::marker::PhantomData;

use ark_ec::short_weierstrass::{Affine, SWCurveConfig};
use ark_ff::{Field, PrimeField, Zero};

use crate::ifma::available;
use crate::msm::adder::{PairAdder, PairKind};

use crate::ifma::field::{
    dump, el_add, el_blend, el_mul, el_square, el_sub, fe_mul, from52, gather, pack, scatter,
    splat, to52, undump, unpack, vmod, El, Fe, Modulus, LANES,
};

/// Independent product chains in the batch inversion, so that the chained products'
/// latency overlaps.
const CHAINS: usize = 4;

/// A point in lane form: L limbs per F_p component, D components per coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct LanePoint<const L: usize, const D: usize> {
    x: [[u64; L]; D],
    y: [[u64; L]; D],
}

impl<const L: usize, const D: usize> LanePoint<L, D> {
    const INFINITY: Self = {
        let mut x = [[0; L]; D];
        x[0][0] = u64::MAX;
        LanePoint { x, y: [[0; L]; D] }
    };
    /// u64 words from one point to the next, and from x to y.
    const STRIDE: usize = 2 * L * D;
    const Y: usize = L * D;

    fn is_infinity(&self) -> bool {
        self.x[0][0] == u64::MAX
    }
}

/// Pair additions and conversions for curve `P` in lanes of L limbs, D components.
pub(crate) struct LaneAdder<P, const L: usize, const D: usize> {
    modulus: Modulus<L>,
    _curve: PhantomData<P>,
}

/// Scratch of one task: the pairs needing arithmetic, which of them double, and the
/// forward pass's prefix products.
pub(crate) struct LaneScratch<const L: usize, const D: usize> {
    pairs: Vec<(u32, u32)>,
    doubles: Vec<bool>,
    prefix: Vec<[[[u64; LANES]; L]; D]>,
}

impl<const L: usize, const D: usize> Default for LaneScratch<L, D> {
    fn default() -> Self {
        LaneScratch {
            pairs: Vec::new(),
            doubles: Vec::new(),
            prefix: Vec::new(),
        }
    }
}

type Bpf<P> = <<P as ark_ec::CurveConfig>::BaseField as Field>::BasePrimeField;

impl<P: SWCurveConfig, const L: usize, const D: usize> LaneAdder<P, L, D> {
    /// The adder for `P`, if this CPU has the lanes and `P` fits this layout (a = 0, base
    /// field of degree D over a prime field that fits L limbs with two bits to spare).
    pub(crate) fn new() -> Option<Self> {
        let bits = Bpf::<P>::MODULUS_BIT_SIZE as usize;
        let fits = bits + 2 <= 52 * L && (L == 5 || bits + 2 > 52 * 5);
        let degree = P::BaseField::extension_degree() as usize;
        let sqrt_minus_one = D == 1 || {
            // u² = −1: the quadratic non-residue the extension is built on.
            let u = P::BaseField::from_base_prime_field_elems([Bpf::<P>::zero(), Bpf::<P>::ONE]);
            u.is_some_and(|u| u.square() == -P::BaseField::ONE)
        };
        (available() && fits && degree == D && sqrt_minus_one && P::COEFF_A.is_zero()).then(|| {
            LaneAdder {
                modulus: Modulus::of::<Bpf<P>>(),
                _curve: PhantomData,
            }
        })
    }

    /// Standard-form limbs of each F_p component of `f`.
    fn components(f: &P::BaseField) -> [[u64; L]; D] {
        let mut out = [[0; L]; D];
        for (o, c) in out.iter_mut().zip(f.to_base_prime_field_elements()) {
            *o = to52(c.into_bigint().as_ref());
        }
        out
    }

    fn field_of(components: &[[u64; L]; D]) -> P::BaseField {
        let elems = components.iter().map(|c| {
            let mut big = <Bpf<P> as PrimeField>::BigInt::default();
            from52(c, big.as_mut());
            Bpf::<P>::from_bigint(big).expect("lane values are reduced below p")
        });
        P::BaseField::from_base_prime_field_elems(elems).expect("D components")
    }

    /// Multiplies every coordinate of `points` by `factor` in lanes (standard form × R'²
    /// enters lane form, lane form × 1 leaves it).
    fn rescale(&self, points: &mut [LanePoint<L, D>], factor: &[u64; L]) {
        // SAFETY: `available()` held when this adder was made.
        unsafe { rescale_lanes(points, factor, &self.modulus) }
    }
}

#[target_feature(enable = "avx512f,avx512ifma")]
fn rescale_lanes<const L: usize, const D: usize>(
    points: &mut [LanePoint<L, D>],
    factor: &[u64; L],
    modulus: &Modulus<L>,
) {
    let m = vmod(modulus);
    let f = splat(factor);
    for block in points.chunks_mut(LANES) {
        let mut xs = [[[0u64; L]; D]; LANES];
        let mut ys = xs;
        for (l, p) in block.iter().enumerate() {
            (xs[l], ys[l]) = (p.x, p.y);
        }
        let (x, y): (El<L, D>, El<L, D>) = (pack(&xs), pack(&ys));
        let xs = unpack::<L, D>(std::array::from_fn(|c| fe_mul(x[c], f, &m)));
        let ys = unpack::<L, D>(std::array::from_fn(|c| fe_mul(y[c], f, &m)));
        for (l, p) in block.iter_mut().enumerate() {
            if !p.is_infinity() {
                (p.x, p.y) = (xs[l], ys[l]);
            }
        }
    }
}

impl<P: SWCurveConfig, const L: usize, const D: usize> PairAdder<P> for LaneAdder<P, L, D> {
    type Point = LanePoint<L, D>;
    type Scratch = LaneScratch<L, D>;
    const CONVERTS: bool = true;
    // Larger than arkworks' batches: the inversion here also converts 32 lane values.
    const BATCH: usize = 4096;

    fn identity(&self) -> Self::Point {
        LanePoint::INFINITY
    }

    fn is_identity(&self, p: &Self::Point) -> bool {
        p.is_infinity()
    }

    fn neg(&self, p: &Self::Point) -> Self::Point {
        if p.is_infinity() {
            return *p;
        }
        LanePoint {
            x: p.x,
            y: p.y.map(|c| self.modulus.neg(&c)),
        }
    }

    fn import<'a>(&self, points: &'a [Affine<P>]) -> Cow<'a, [Self::Point]> {
        let mut out: Vec<Self::Point> = points
            .iter()
            .map(|p| {
                if p.infinity {
                    LanePoint::INFINITY
                } else {
                    LanePoint {
                        x: Self::components(&p.x),
                        y: Self::components(&p.y),
                    }
                }
            })
            .collect();
        self.rescale(&mut out, &self.modulus.r2);
        Cow::Owned(out)
    }

    fn export(&self, points: &[Self::Point]) -> Vec<Affine<P>> {
        let mut one = [0u64; L];
        one[0] = 1;
        let mut standard = points.to_vec();
        self.rescale(&mut standard, &one);
        standard
            .iter()
            .map(|p| {
                if p.is_infinity() {
                    Affine::identity()
                } else {
                    Affine::new_unchecked(Self::field_of(&p.x), Self::field_of(&p.y))
                }
            })
            .collect()
    }

    fn add_pairs(
        &self,
        work: &mut [Self::Point],
        pairs: &[(u32, u32)],
        scratch: &mut Self::Scratch,
    ) {
        // Trivial pairs now; the rest (chord or tangent) go to the lanes.
        scratch.pairs.clear();
        scratch.doubles.clear();
        for &(i, j) in pairs {
            let (p, q) = (&work[i as usize], &work[j as usize]);
            let kind = PairKind::of(
                p.is_infinity(),
                q.is_infinity(),
                || p.x[0][0] != q.x[0][0] || p.x != q.x,
                || p.y == q.y && p.y.iter().flatten().any(|&w| w != 0),
            );
            match kind {
                PairKind::TakeQ => work[i as usize] = *q,
                PairKind::KeepP => {}
                PairKind::Infinity => work[i as usize] = LanePoint::INFINITY,
                PairKind::Add | PairKind::Double => {
                    scratch.pairs.push((i, j));
                    scratch.doubles.push(matches!(kind, PairKind::Double));
                }
            }
        }
        if scratch.pairs.is_empty() {
            return;
        }
        // SAFETY: `available()` held when this adder was made; every index in
        // `scratch.pairs` is below `work.len()` and the first indices are distinct.
        unsafe { add_in_lanes::<P, L, D>(work, scratch, &self.modulus) }
    }
}

/// work[i] ← work[i] + work[j] for the (i, j) in `scratch.pairs`: chords, or tangents
/// where `scratch.doubles` says so. No input is infinity and no sum is.
///
/// # Safety
/// Every index is below `work.len()`, and the first indices are distinct.
#[target_feature(enable = "avx512f,avx512ifma")]
unsafe fn add_in_lanes<P: SWCurveConfig, const L: usize, const D: usize>(
    work: &mut [LanePoint<L, D>],
    scratch: &mut LaneScratch<L, D>,
    modulus: &Modulus<L>,
) {
    let m = vmod(modulus);
    let one: El<L, D> = std::array::from_fn(|c| {
        if c == 0 {
            splat(&modulus.one)
        } else {
            Fe([_mm512_setzero_si512(); L])
        }
    });
    let (pairs, doubles) = (&scratch.pairs, &scratch.doubles);
    let groups = pairs.len().div_ceil(LANES);
    let stride = LanePoint::<L, D>::STRIDE as i64;
    let base = work.as_mut_ptr() as *mut u64;

    // Word indices of both points of group g's pairs, which lanes are live, which double.
    // Dead lanes repeat the group's first pair: harmless reads, no writes.
    let group = |g: usize| {
        let lo = g * LANES;
        let hi = (lo + LANES).min(pairs.len());
        let (mut i, mut j) = ([0i64; LANES], [0i64; LANES]);
        let mut doubling: __mmask8 = 0;
        for l in 0..LANES {
            let k = if lo + l < hi { lo + l } else { lo };
            i[l] = pairs[k].0 as i64 * stride;
            j[l] = pairs[k].1 as i64 * stride;
            if lo + l < hi && doubles[k] {
                doubling |= 1 << l;
            }
        }
        let live: __mmask8 = ((1u32 << (hi - lo)) - 1) as u8;
        // SAFETY: 8 i64s each.
        let load = |a: &[i64; LANES]| unsafe { _mm512_loadu_si512(a.as_ptr().cast()) };
        (load(&i), load(&j), live, doubling)
    };
    // The denominator: x₂ − x₁, or 2y₁ where doubling, 1 in dead lanes.
    let denominator = |at_i: __m512i, at_j: __m512i, live: __mmask8, doubling: __mmask8| {
        // SAFETY: indices from `pairs`, in bounds by this function's contract.
        let (x1, x2) = unsafe { (gather::<L, D>(base, at_i, 0), gather::<L, D>(base, at_j, 0)) };
        let mut den = el_sub(x2, x1, &m);
        if doubling != 0 {
            // SAFETY: as above.
            let y1 = unsafe { gather::<L, D>(base, at_i, LanePoint::<L, D>::Y) };
            den = el_blend(doubling, den, el_add(y1, y1, &m));
        }
        el_blend(live, one, den)
    };

    // Forward: prefix[g] = the product of the earlier denominators of g's chain.
    scratch.prefix.clear();
    let mut acc = [one; CHAINS];
    for g in 0..groups {
        let (at_i, at_j, live, doubling) = group(g);
        let den = denominator(at_i, at_j, live, doubling);
        scratch.prefix.push(dump(acc[g % CHAINS]));
        acc[g % CHAINS] = el_mul(acc[g % CHAINS], den, &m);
    }

    // Invert the chains' products: out of lane form, one arkworks batch inversion, back.
    let chains = groups.min(CHAINS);
    let mut totals: Vec<P::BaseField> = Vec::with_capacity(chains * LANES);
    let mut std_one = [0u64; L];
    std_one[0] = 1;
    let std_one = splat(&std_one);
    for a in &acc[..chains] {
        for lane in unpack::<L, D>(std::array::from_fn(|c| fe_mul(a[c], std_one, &m))) {
            totals.push(LaneAdder::<P, L, D>::field_of(&lane));
        }
    }
    invert_in_place(&mut totals);
    let r2 = splat(&modulus.r2);
    let mut inv: [El<L, D>; CHAINS] = std::array::from_fn(|chain| {
        if chain >= chains {
            return one;
        }
        let lanes: [[[u64; L]; D]; LANES] =
            std::array::from_fn(|l| LaneAdder::<P, L, D>::components(&totals[chain * LANES + l]));
        let v: El<L, D> = pack(&lanes);
        std::array::from_fn(|c| fe_mul(v[c], r2, &m))
    });

    // Backward: peel each group's inverse off its chain and finish its additions.
    for g in (0..groups).rev() {
        let (at_i, at_j, live, doubling) = group(g);
        let chain = g % CHAINS;
        let den = denominator(at_i, at_j, live, doubling);
        let den_inv = el_mul(inv[chain], undump(&scratch.prefix[g]), &m);
        inv[chain] = el_mul(inv[chain], den, &m);
        // SAFETY: as in `denominator`.
        let (x1, y1, x2, y2) = unsafe {
            (
                gather::<L, D>(base, at_i, 0),
                gather::<L, D>(base, at_i, LanePoint::<L, D>::Y),
                gather::<L, D>(base, at_j, 0),
                gather::<L, D>(base, at_j, LanePoint::<L, D>::Y),
            )
        };
        let mut num = el_sub(y2, y1, &m);
        if doubling != 0 {
            let xx = el_square(x1, &m);
            num = el_blend(doubling, num, el_add(el_add(xx, xx, &m), xx, &m));
        }
        let lambda = el_mul(num, den_inv, &m);
        let x3 = el_sub(el_sub(el_square(lambda, &m), x1, &m), x2, &m);
        let y3 = el_sub(el_mul(lambda, el_sub(x1, x3, &m), &m), y1, &m);
        // SAFETY: live lanes' first indices are distinct and in bounds.
        unsafe {
            scatter(base, at_i, 0, live, x3);
            scatter(base, at_i, LanePoint::<L, D>::Y, live, y3);
        }
    }
}

/// Replaces every nonzero element of `v` by its inverse (zeros stay zero, as in arkworks'
/// `batch_inversion`), with one field inversion (Montgomery's trick), on this thread.
///
/// Why not `ark_ff::batch_inversion`: with arkworks' `parallel` feature it splits its input
/// into one chunk per rayon thread and inverts each chunk on its own, so the 32 chain
/// products of a call cost 16 inversions and 16 rayon tasks on a 16-core machine, not one
/// (11% of a 2^20 CPU proof's samples there; lab/experiments/027-cpu-vs-rapidsnark.md).
fn invert_in_place<F: Field>(v: &mut [F]) {
    let mut prefix = Vec::with_capacity(v.len());
    let mut acc = F::one();
    for x in v.iter().filter(|x| !x.is_zero()) {
        prefix.push(acc);
        acc *= x;
    }
    let Some(mut inv) = acc.inverse() else {
        return; // unreachable: a product of nonzero elements
    };
    for (x, before) in v
        .iter_mut()
        .filter(|x| !x.is_zero())
        .rev()
        .zip(prefix.into_iter().rev())
    {
        let next = inv * *x;
        *x = inv * before;
        inv = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ec::short_weierstrass::Projective;
    use ark_ec::CurveGroup;
    use ark_ff::UniformRand;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    /// Pairs of every kind, summed in lanes and by arkworks. Counts that are not multiples
    /// of 8 leave dead lanes; more than 32 groups use every chain more than once.
    fn pairs_match<P: SWCurveConfig, const L: usize, const D: usize>(seed: u64) {
        let Some(adder) = LaneAdder::<P, L, D>::new() else {
            eprintln!("ifma: this CPU has no AVX-512 IFMA; lane additions not exercised");
            return;
        };
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        for n in [1usize, 7, 8, 9, 33, 300, 1001] {
            let mut pts: Vec<Affine<P>> = Vec::with_capacity(2 * n);
            for k in 0..n {
                let p = Projective::<P>::rand(&mut rng).into_affine();
                let q = match (k + rng.gen_range(0..2)) % 6 {
                    0 => p,                  // tangent
                    1 => -p,                 // sum is infinity
                    2 => Affine::identity(), // q at infinity
                    _ => Projective::<P>::rand(&mut rng).into_affine(),
                };
                let p = if k % 11 == 5 { Affine::identity() } else { p };
                pts.extend([p, q]);
            }
            let want: Vec<Affine<P>> = pts.chunks(2).map(|c| (c[0] + c[1]).into_affine()).collect();
            let mut work = adder.import(&pts).into_owned();
            let pairs: Vec<(u32, u32)> = (0..n as u32).map(|k| (2 * k, 2 * k + 1)).collect();
            adder.add_pairs(&mut work, &pairs, &mut LaneScratch::default());
            let got = adder.export(&work);
            for k in 0..n {
                assert_eq!(got[2 * k], want[k], "n = {n}, pair {k}");
                assert_eq!(
                    got[2 * k + 1],
                    pts[2 * k + 1],
                    "n = {n}: second point untouched"
                );
            }
        }
    }

    /// Conversion in and out of lane form keeps every point, negation included.
    fn round_trip<P: SWCurveConfig, const L: usize, const D: usize>(seed: u64) {
        let Some(adder) = LaneAdder::<P, L, D>::new() else {
            eprintln!("ifma: this CPU has no AVX-512 IFMA; conversions not exercised");
            return;
        };
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let mut pts: Vec<Affine<P>> = (0..37)
            .map(|_| Projective::<P>::rand(&mut rng).into_affine())
            .collect();
        pts.push(Affine::identity());
        pts.push(P::GENERATOR);
        let lanes = adder.import(&pts);
        assert_eq!(adder.export(&lanes), pts);
        let neg: Vec<_> = lanes.iter().map(|p| adder.neg(p)).collect();
        let want: Vec<Affine<P>> = pts.iter().map(|p| -*p).collect();
        assert_eq!(adder.export(&neg), want);
    }

    #[test]
    fn bn254() {
        pairs_match::<ark_bn254::g1::Config, 5, 1>(1);
        pairs_match::<ark_bn254::g2::Config, 5, 2>(2);
        round_trip::<ark_bn254::g1::Config, 5, 1>(3);
        round_trip::<ark_bn254::g2::Config, 5, 2>(4);
    }

    /// One inversion for the lot, zeros left as they are, on any thread count.
    #[test]
    fn invert_in_place_matches_one_by_one() {
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        for n in [0usize, 1, 2, 31, 32, 33] {
            let mut v: Vec<ark_bn254::Fq> = (0..n).map(|_| ark_bn254::Fq::rand(&mut rng)).collect();
            if n > 2 {
                v[1] = ark_bn254::Fq::zero();
            }
            let want: Vec<_> = v.iter().map(|x| x.inverse().unwrap_or_default()).collect();
            invert_in_place(&mut v);
            assert_eq!(v, want, "n = {n}");
        }
    }

    #[test]
    fn bls12_381() {
        pairs_match::<ark_bls12_381::g1::Config, 8, 1>(5);
        pairs_match::<ark_bls12_381::g2::Config, 8, 2>(6);
        round_trip::<ark_bls12_381::g1::Config, 8, 1>(7);
        round_trip::<ark_bls12_381::g2::Config, 8, 2>(8);
    }

    /// Layouts that do not fit a curve are refused, so dispatch falls through correctly.
    #[test]
    fn layouts_are_exclusive() {
        assert!(LaneAdder::<ark_bn254::g1::Config, 8, 1>::new().is_none());
        assert!(LaneAdder::<ark_bn254::g1::Config, 5, 2>::new().is_none());
        assert!(LaneAdder::<ark_bls12_381::g1::Config, 5, 1>::new().is_none());
        assert!(LaneAdder::<ark_bls12_381::g2::Config, 8, 1>::new().is_none());
    }
}
