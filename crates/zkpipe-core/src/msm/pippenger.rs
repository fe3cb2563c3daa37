//! CPU multi-scalar multiplication: signed-digit Pippenger with batch-affine buckets.
//!
//! Why hand-written: arkworks 0.5's `VariableBaseMSM::msm_bigint` accumulates buckets in
//! Jacobian coordinates (7M + 4S per mixed addition), and no maintained crate offers a
//! batch-affine Pippenger over arkworks 0.5 types for both BN254 and BLS12-381, G1 and G2.
//! This module is generic over [`SWCurveConfig`] and returns exactly the group element
//! arkworks returns.
//!
//! ```text
//!  scalars ──signed c-bit digits──► per window w, per bucket b: the points whose digit is ±(b+1)
//!  per window: counting sort by bucket → pairwise tree sums in affine coordinates,
//!              each round's additions sharing one inversion per batch (Montgomery's trick)
//!              → S_w = Σ (b+1)·bucket_b: row and column tree sums of the buckets laid
//!                on a grid (affine again), then two short projective running sums
//!  result = Σ 2^{cw}·S_w (Horner over windows); one rayon task per (window, point group)
//! ```
//!
//! Measurements and the choices they led to: `lab/experiments/005-batch-affine-msm.md`.
//!
//! The pair additions go through [`PairAdder`]: on CPUs with AVX-512 IFMA, eight at a time
//! in vector lanes (`crate::msm::ifma`, about twice as fast; lab/experiments/012-ifma-msm.md),
//! elsewhere on arkworks' affine points. [`MsmOptions::ifma`] off forces the latter.
//!
//! An affine addition costs 5M + 1S plus a share of one inversion, against 7M + 4S in
//! Jacobian coordinates. Sorting points by bucket before adding makes every addition of a
//! round independent of the others (no bucket appears twice in a pair list), so collisions
//! (the same bucket hit many times, as circuits' 0/1-heavy witnesses do) cost extra rounds,
//! never extra inversions per point. P + P, P + (−P) and the point at infinity are handled
//! exactly.
//!
//! The driver is here; its parts are in the files beside it: `plan` (windows, digits,
//! chunking), `adder` (the `PairAdder` seam and arkworks' adder), `dispatch` (which adder
//! runs), `buckets` (the sorting passes), `tree` (the batch-affine tree sums) and `ifma`
//! (the lanes). Their public items are re-exported here, under this module's path.

use ark_ec::short_weierstrass::{Affine, Projective, SWCurveConfig};
use ark_ec::{AdditiveGroup, AffineRepr};
use ark_ff::{BigInteger, PrimeField, Zero};
use rayon::prelude::*;
use std::borrow::Cow;

use crate::msm::adder::PairAdder;
use crate::msm::buckets::bucket_sums;
use crate::msm::dispatch::{with_adder, AdderTask};
use crate::msm::plan::{digit, max_bits};
use crate::msm::tree::{Segment, TreeAdder};

// The MSM's public paths stay `msm::pippenger::…`, whichever file holds the item.
pub(crate) use crate::msm::buckets::grouped_bucket_sums;
pub use crate::msm::dispatch::{base_copy_bytes, cpu_adder};
#[cfg(test)]
pub(crate) use crate::msm::plan::chunk_len; // subgroup's tests size their input by it
pub use crate::msm::plan::{BigIntOf, MsmOptions, MsmPlan, MAX_WINDOW_BITS};

/// Affine point types that have a batch-affine MSM (every short-Weierstrass curve).
pub trait BatchAffineMsm: AffineRepr {
    /// Σ scalarsᵢ·basesᵢ over the common prefix of both slices (as arkworks' `msm_bigint`),
    /// run as `opts` says.
    fn msm_batch_affine(
        bases: &[Self],
        scalars: &[<Self::ScalarField as PrimeField>::BigInt],
        opts: MsmOptions,
    ) -> Self::Group;

    /// Bytes per base that [`BatchAffineMsm::msm_batch_affine`] copies while it runs, with
    /// IFMA lanes allowed or not ([`base_copy_bytes`]).
    fn msm_copy_bytes(ifma: bool) -> usize;
}

impl<P: SWCurveConfig> BatchAffineMsm for Affine<P> {
    fn msm_batch_affine(
        bases: &[Self],
        scalars: &[BigIntOf<P>],
        opts: MsmOptions,
    ) -> Projective<P> {
        msm_with(bases, scalars, opts)
    }

    fn msm_copy_bytes(ifma: bool) -> usize {
        base_copy_bytes::<P>(ifma)
    }
}

/// Σ scalarsᵢ·basesᵢ over the common prefix of both slices, on the current rayon pool.
///
/// Any scalar integers are accepted (not only those below the group order); the result
/// equals arkworks' `VariableBaseMSM::msm_bigint` for scalars below 2^`MODULUS_BIT_SIZE`,
/// which every canonical field element is.
///
/// Terms with a zero scalar or a base at infinity contribute nothing; when they are more
/// than a tenth of the input (witnesses are often sparse, key sections hold infinity for
/// unused wires) the rest is copied out first, so no window pays for them.
pub fn msm<P: SWCurveConfig>(bases: &[Affine<P>], scalars: &[BigIntOf<P>]) -> Projective<P> {
    msm_with(bases, scalars, MsmOptions::default())
}

/// [`msm`] as `opts` says. With [`MsmOptions::constant_work`] every term is kept and every
/// window is as wide as the scalar field.
pub fn msm_with<P: SWCurveConfig>(
    bases: &[Affine<P>],
    scalars: &[BigIntOf<P>],
    opts: MsmOptions,
) -> Projective<P> {
    let n = bases.len().min(scalars.len());
    let (bases, scalars) = (&bases[..n], &scalars[..n]);
    let threads = rayon::current_num_threads();
    if opts.constant_work {
        let plan = MsmPlan::choose::<P>(n, full_bits::<P>(), threads);
        return msm_with_plan_and(bases, scalars, plan, opts);
    }
    let useful = |(p, s): (&Affine<P>, &BigIntOf<P>)| !p.infinity && !s.is_zero();
    let kept = bases.par_iter().zip(scalars).filter(|&t| useful(t)).count();
    if kept < n - n / 10 {
        let (b, s): (Vec<Affine<P>>, Vec<BigIntOf<P>>) = bases
            .par_iter()
            .zip(scalars)
            .filter(|&t| useful(t))
            .map(|(p, s)| (*p, *s))
            .unzip();
        let plan = MsmPlan::choose::<P>(kept, max_bits(&s), threads);
        return msm_with_plan_and(&b, &s, plan, opts);
    }
    let plan = MsmPlan::choose::<P>(n, max_bits(scalars), threads);
    msm_with_plan_and(bases, scalars, plan, opts)
}

/// The scalar integers' width: every window any of them can need (constant work must
/// not depend on the values, and scalars above the group order are accepted).
fn full_bits<P: SWCurveConfig>() -> usize {
    use ark_ff::BigInteger;
    64 * <BigIntOf<P> as BigInteger>::NUM_LIMBS
}

/// [`msm`] with an explicit plan (for measurements and tests).
pub fn msm_with_plan<P: SWCurveConfig>(
    bases: &[Affine<P>],
    scalars: &[BigIntOf<P>],
    plan: MsmPlan,
) -> Projective<P> {
    msm_with_plan_and(bases, scalars, plan, MsmOptions::default())
}

/// [`msm_with_plan`] as `opts` says.
pub fn msm_with_plan_and<P: SWCurveConfig>(
    bases: &[Affine<P>],
    scalars: &[BigIntOf<P>],
    plan: MsmPlan,
    opts: MsmOptions,
) -> Projective<P> {
    with_adder(
        MsmTask {
            bases,
            scalars,
            plan,
            constant_work: opts.constant_work,
        },
        opts.ifma,
    )
}

struct MsmTask<'a, P: SWCurveConfig> {
    bases: &'a [Affine<P>],
    scalars: &'a [BigIntOf<P>],
    plan: MsmPlan,
    constant_work: bool,
}

impl<P: SWCurveConfig> AdderTask<P> for MsmTask<'_, P> {
    type Output = Projective<P>;
    fn run<A: PairAdder<P>>(self, adder: &A) -> Projective<P> {
        msm_with_adder(
            adder,
            self.bases,
            self.scalars,
            self.plan,
            self.constant_work,
        )
    }
}

/// [`msm_with_plan`] on a given adder, with every window run where `constant_work`.
pub(crate) fn msm_with_adder<P: SWCurveConfig, A: PairAdder<P>>(
    adder: &A,
    bases: &[Affine<P>],
    scalars: &[BigIntOf<P>],
    plan: MsmPlan,
    constant_work: bool,
) -> Projective<P> {
    let n = bases.len().min(scalars.len());
    let (bases, scalars) = (&bases[..n], &scalars[..n]);
    let bits = if constant_work {
        full_bits::<P>()
    } else {
        max_bits(scalars)
    };
    if n == 0 || bits == 0 {
        return Projective::zero();
    }
    let c = plan.window_bits.clamp(2, MAX_WINDOW_BITS);
    let windows = (bits + 1).div_ceil(c);
    let groups = plan.groups.clamp(1, n);
    let group_len = n.div_ceil(groups);
    let chunk = plan.chunk.max(1);
    let bases = convert(adder, bases);

    let sums: Vec<Projective<P>> = (0..windows * groups)
        .into_par_iter()
        .map(|task| {
            let (w, g) = (task / groups, task % groups);
            let lo = (g * group_len).min(n);
            let hi = ((g + 1) * group_len).min(n);
            let mut tree = TreeAdder::new(adder);
            let nb = 1 << (c - 1);
            let buckets = bucket_sums(&bases[lo..hi], nb, chunk, &mut tree, constant_work, |i| {
                digit(scalars[lo + i].as_ref(), w, c)
            });
            reduce_buckets(buckets, &mut tree)
        })
        .collect();

    let mut total = Projective::<P>::zero();
    for w in (0..windows).rev() {
        for _ in 0..c {
            total.double_in_place();
        }
        for s in &sums[w * groups..(w + 1) * groups] {
            total += s;
        }
    }
    total
}

/// The bases in the adder's form (converted in parallel where the adder converts).
fn convert<'a, P: SWCurveConfig, A: PairAdder<P>>(
    adder: &A,
    bases: &'a [Affine<P>],
) -> Cow<'a, [A::Point]> {
    if !A::CONVERTS {
        return adder.import(bases);
    }
    Cow::Owned(
        bases
            .par_chunks(4096)
            .flat_map_iter(|c| adder.import(c).into_owned())
            .collect(),
    )
}

/// Σ (i + 1)·buckets[i], with most additions batch-affine.
///
/// Index i = hi·2^k + lo splits the buckets into a 2^{m−k} × 2^k grid. With row sums
/// R_hi = Σ_lo B_{hi,lo} and column sums C_lo = Σ_hi B_{hi,lo} (both tree sums in affine,
/// 2·m additions in all), Σ (i + 1)·B_i = 2^k·Σ hi·R_hi + Σ lo·C_lo + Σ R_hi, where the
/// two weighted sums are short running sums in projective coordinates (2·(rows + columns)
/// additions instead of 2·m).
fn reduce_buckets<P: SWCurveConfig, A: PairAdder<P>>(
    mut buckets: Vec<A::Point>,
    tree: &mut TreeAdder<'_, P, A>,
) -> Projective<P> {
    let adder = tree.adder;
    let m = buckets.len();
    let Some(top) = buckets.iter().rposition(|b| !adder.is_identity(b)) else {
        return Projective::zero();
    };
    if top < 64 {
        let (weighted, total) = running_sums(&adder.export(&buckets[..=top]));
        return weighted + total;
    }
    let log_m = m.trailing_zeros();
    let k = log_m.div_ceil(2);
    let (rows, cols) = (m >> k, 1usize << k);
    // Columns from a transposed copy, rows in place (the buckets are not needed after).
    let mut by_column: Vec<A::Point> = Vec::with_capacity(m);
    for lo in 0..cols {
        by_column.extend((0..rows).map(|hi| buckets[hi * cols + lo]));
    }
    let runs = |count: usize, len: usize| -> Vec<Segment> {
        (0..count)
            .map(|r| Segment {
                start: (r * len) as u32,
                len: len as u32,
            })
            .collect()
    };
    tree.sum_segments(&mut by_column, &runs(cols, rows));
    tree.sum_segments(&mut buckets, &runs(rows, cols));
    let row_sums: Vec<A::Point> = (0..rows).map(|hi| buckets[hi * cols]).collect();
    let col_sums: Vec<A::Point> = (0..cols).map(|lo| by_column[lo * rows]).collect();
    let (mut by_row, total) = running_sums(&adder.export(&row_sums));
    let (by_col, _) = running_sums(&adder.export(&col_sums));
    for _ in 0..k {
        by_row.double_in_place();
    }
    by_row + by_col + total
}

/// (Σ i·xᵢ, Σ xᵢ) by running sums from the top down.
fn running_sums<P: SWCurveConfig>(xs: &[Affine<P>]) -> (Projective<P>, Projective<P>) {
    let mut running = Projective::<P>::zero();
    let mut weighted = Projective::<P>::zero();
    if let Some((first, rest)) = xs.split_first() {
        for x in rest.iter().rev() {
            running += x;
            weighted += &running;
        }
        running += first;
    }
    (weighted, running)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msm::adder::ArkAdder;
    use ark_ec::{CurveGroup, VariableBaseMSM};
    use ark_ff::{Field, UniformRand};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    /// `n` distinct-ish points cheaply: running sums of a few random points.
    fn points<P: SWCurveConfig>(n: usize, rng: &mut ChaCha20Rng) -> Vec<Affine<P>> {
        let seeds: Vec<Projective<P>> = (0..7).map(|_| Projective::rand(rng)).collect();
        let mut acc = Projective::<P>::rand(rng);
        let proj: Vec<Projective<P>> = (0..n)
            .map(|i| {
                acc += seeds[i % seeds.len()];
                acc
            })
            .collect();
        Projective::normalize_batch(&proj)
    }

    fn scalars<P: SWCurveConfig>(n: usize, rng: &mut ChaCha20Rng) -> Vec<BigIntOf<P>> {
        (0..n)
            .map(|_| P::ScalarField::rand(rng).into_bigint())
            .collect()
    }

    fn r_minus_one<P: SWCurveConfig>() -> BigIntOf<P> {
        (-P::ScalarField::ONE).into_bigint()
    }

    fn same_with<P: SWCurveConfig>(
        bases: &[Affine<P>],
        scalars: &[BigIntOf<P>],
        what: &str,
        opts: MsmOptions,
    ) {
        let want = Projective::<P>::msm_bigint(bases, scalars);
        assert_eq!(msm_with(bases, scalars, opts), want, "{what}: default plan");
        let bits = max_bits(scalars);
        for (c, groups, chunk) in [(2, 1, 5), (3, 3, 64), (5, 2, 1000), (9, 1, 4096)] {
            let plan = MsmPlan {
                window_bits: c,
                groups,
                chunk,
            };
            if bits > 0 && bits.div_ceil(c) * bases.len().max(1) > 400_000 {
                continue; // small windows on big inputs: slow and already covered
            }
            let got = msm_with_plan_and(bases, scalars, plan, opts);
            assert_eq!(got, want, "{what}: {plan:?}");
            // The portable adder too (the default is the IFMA lanes where the CPU has them).
            let got = msm_with_adder(&ArkAdder, bases, scalars, plan, opts.constant_work);
            assert_eq!(got, want, "{what}: {plan:?}, arkworks adder");
        }
    }

    fn random_sizes<P: SWCurveConfig>(seed: u64, big: usize, opts: MsmOptions) {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let all = points::<P>(big, &mut rng);
        let s = scalars::<P>(big, &mut rng);
        for n in [0, 1, 2, 3, 5, 7, 13, 31, 33, 100, 257, (1 << 10) + 17, big] {
            same_with(&all[..n], &s[..n], &format!("random n={n}"), opts);
        }
    }

    fn edge_cases<P: SWCurveConfig>(seed: u64, opts: MsmOptions) {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let n = 600;
        let pts = points::<P>(n, &mut rng);
        let mut s = scalars::<P>(n, &mut rng);
        let zero = BigIntOf::<P>::from(0u64);
        let one = BigIntOf::<P>::from(1u64);
        let big = r_minus_one::<P>();

        same_with(&pts, &vec![zero; n], "all scalars zero", opts);
        for (i, x) in s.iter_mut().enumerate() {
            match i % 5 {
                0 => *x = zero,
                1 => *x = big,
                2 => *x = one,
                _ => {}
            }
        }
        same_with(&pts, &s, "zeros, ones and r-1 mixed in", opts);
        same_with(&pts, &vec![big; n], "all scalars r-1", opts);
        same_with(&pts, &vec![s[3]; n], "all scalars equal", opts);

        let mut with_inf = pts.clone();
        for p in with_inf.iter_mut().step_by(3) {
            *p = Affine::identity();
        }
        same_with(&with_inf, &s, "points at infinity", opts);
        same_with(
            &vec![Affine::<P>::identity(); n],
            &s,
            "all points at infinity",
            opts,
        );

        // One point many times: equal digits in a bucket force P + P.
        let p0 = pts[0];
        same_with(&vec![p0; n], &s, "one point, random scalars", opts);
        same_with(&vec![p0; n], &vec![s[4]; n], "one point, one scalar", opts);
        // P and −P side by side with equal scalars: sums cancel to infinity, then refill.
        let pm: Vec<Affine<P>> = (0..n).map(|i| if i % 2 == 0 { p0 } else { -p0 }).collect();
        same_with(&pm, &vec![s[4]; n], "P and -P, one scalar", opts);
        let pm: Vec<Affine<P>> = (0..n)
            .map(|i| if i % 3 == 0 { pts[i] } else { -pts[i - 1] })
            .collect();
        same_with(&pm, &vec![s[5]; n], "P, -P, -P runs", opts);
        let few: Vec<Affine<P>> = (0..n).map(|i| pts[i % 3]).collect();
        let sc: Vec<BigIntOf<P>> = (0..n)
            .map(|i| BigIntOf::<P>::from((i % 4) as u64))
            .collect();
        same_with(&few, &sc, "three points, tiny scalars", opts);
    }

    /// Scalars above the group order (all 256 bits set) still give Σ sᵢ·Pᵢ exactly.
    fn oversized_scalars<P: SWCurveConfig>(seed: u64, opts: MsmOptions) {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let pts = points::<P>(20, &mut rng);
        let mut s = scalars::<P>(20, &mut rng);
        for x in s.iter_mut().step_by(2) {
            for limb in x.as_mut() {
                *limb = rng.gen::<u64>() | (1 << 63);
            }
        }
        let want: Projective<P> = pts.iter().zip(&s).map(|(p, k)| p.mul_bigint(k)).sum();
        assert_eq!(msm_with(&pts, &s, opts), want);
    }

    /// Constant-work MSMs (zero digits into a discarded bucket, every window) give the same
    /// sums on every distribution.
    #[test]
    fn constant_work_gives_the_same_sums() {
        let opts = MsmOptions {
            constant_work: true,
            ..MsmOptions::default()
        };
        edge_cases::<ark_bn254::g1::Config>(52, opts);
        oversized_scalars::<ark_bn254::g1::Config>(53, opts);
        edge_cases::<ark_bls12_381::g2::Config>(54, opts);
        random_sizes::<ark_bn254::g1::Config>(55, 1 << 11, opts);
    }

    #[test]
    fn bn254_g1() {
        random_sizes::<ark_bn254::g1::Config>(11, 1 << 14, MsmOptions::default());
        edge_cases::<ark_bn254::g1::Config>(12, MsmOptions::default());
        oversized_scalars::<ark_bn254::g1::Config>(13, MsmOptions::default());
    }

    #[test]
    fn bn254_g2() {
        random_sizes::<ark_bn254::g2::Config>(21, 1 << 14, MsmOptions::default());
        edge_cases::<ark_bn254::g2::Config>(22, MsmOptions::default());
        oversized_scalars::<ark_bn254::g2::Config>(23, MsmOptions::default());
    }

    #[test]
    fn bls12_381_g1() {
        random_sizes::<ark_bls12_381::g1::Config>(31, 1 << 14, MsmOptions::default());
        edge_cases::<ark_bls12_381::g1::Config>(32, MsmOptions::default());
        oversized_scalars::<ark_bls12_381::g1::Config>(33, MsmOptions::default());
    }

    #[test]
    fn bls12_381_g2() {
        random_sizes::<ark_bls12_381::g2::Config>(41, 1 << 14, MsmOptions::default());
        edge_cases::<ark_bls12_381::g2::Config>(42, MsmOptions::default());
        oversized_scalars::<ark_bls12_381::g2::Config>(43, MsmOptions::default());
    }
}
