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
//! Measurements and the choices they led to: `docs/experiments/005-batch-affine-msm.md`.
//!
//! The pair additions go through [`PairAdder`]: on CPUs with AVX-512 IFMA, eight at a time
//! in vector lanes (`crate::ifma`, about twice as fast; experiment 012), elsewhere on
//! arkworks' affine points. `ZKPIPE_NO_IFMA=1` forces the latter.
//!
//! An affine addition costs 5M + 1S plus a share of one inversion, against 7M + 4S in
//! Jacobian coordinates. Sorting points by bucket before adding makes every addition of a
//! round independent of the others (no bucket appears twice in a pair list), so collisions
//! (the same bucket hit many times, as circuits' 0/1-heavy witnesses do) cost extra rounds,
//! never extra inversions per point. P + P, P + (−P) and the point at infinity are handled
//! exactly.

use ark_ec::short_weierstrass::{Affine, Projective, SWCurveConfig};
use ark_ec::{AdditiveGroup, AffineRepr, CurveConfig};
use ark_ff::{BigInteger, Field, PrimeField, Zero};
use rayon::prelude::*;
use std::borrow::Cow;

/// Scalars in the form [`msm`] takes: standard-form integers of the curve's scalar field.
pub type BigIntOf<P> = <<P as CurveConfig>::ScalarField as PrimeField>::BigInt;

/// Affine point types that have a batch-affine MSM (every short-Weierstrass curve).
pub trait BatchAffineMsm: AffineRepr {
    /// Σ scalarsᵢ·basesᵢ over the common prefix of both slices (as arkworks' `msm_bigint`).
    fn msm_batch_affine(
        bases: &[Self],
        scalars: &[<Self::ScalarField as PrimeField>::BigInt],
    ) -> Self::Group;

    /// Bytes per base that [`BatchAffineMsm::msm_batch_affine`] copies while it runs
    /// ([`base_copy_bytes`]).
    fn msm_copy_bytes() -> usize;
}

impl<P: SWCurveConfig> BatchAffineMsm for Affine<P> {
    fn msm_batch_affine(bases: &[Self], scalars: &[BigIntOf<P>]) -> Projective<P> {
        msm(bases, scalars)
    }

    fn msm_copy_bytes() -> usize {
        base_copy_bytes::<P>()
    }
}

/// How one MSM is cut into work: window width and point groups per window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsmPlan {
    /// Window width c in bits (2..=[`MAX_WINDOW_BITS`]); digits lie in [−2^{c−1}, 2^{c−1}],
    /// so 2^{c−1} buckets.
    pub window_bits: usize,
    /// Each window's points are split into this many groups, each its own parallel task
    /// with its own buckets (more parallelism, more bucket reductions).
    pub groups: usize,
    /// Points per sorting pass; buckets carry over from one pass to the next.
    pub chunk: usize,
}

/// Widest window: 2^19 buckets per task (about 38 MiB of BLS12-381 G2 points).
pub const MAX_WINDOW_BITS: usize = 20;

/// The planner's bound on one task's buckets (2^{c−1} affine points): c ≤ 16 for every
/// group here, c ≤ 17 for G1.
const MAX_BUCKET_BYTES: usize = 8 << 20;

/// Relative cost of reducing one bucket (two projective additions) against accumulating
/// one point (one batch-affine addition plus sorting); measured, see experiment 005.
const REDUCE_COST: f64 = 1.5;

impl MsmPlan {
    /// The plan with the least modelled time for `n` points of curve `P`, scalars of `bits`
    /// bits and `threads` workers.
    pub fn choose<P: SWCurveConfig>(n: usize, bits: usize, threads: usize) -> Self {
        let threads = threads.max(1);
        let chunk = chunk_len::<P>();
        let mut best = (
            f64::INFINITY,
            MsmPlan {
                window_bits: 2,
                groups: 1,
                chunk,
            },
        );
        for c in 2..=MAX_WINDOW_BITS {
            // Each task holds its buckets twice during the reduction: bound the memory.
            if c > 2 && (1usize << (c - 1)) * std::mem::size_of::<Affine<P>>() > MAX_BUCKET_BYTES {
                break;
            }
            let windows = (bits + 1).div_ceil(c);
            for groups in 1..=threads.div_ceil(windows).max(1) {
                let tasks = windows * groups;
                let rounds = tasks.div_ceil(threads) as f64;
                let per_task = n.div_ceil(groups) as f64 + (1u64 << (c - 1)) as f64 * REDUCE_COST;
                let t = rounds * per_task;
                if t < best.0 {
                    best = (
                        t,
                        MsmPlan {
                            window_bits: c,
                            groups,
                            chunk,
                        },
                    );
                }
            }
        }
        best.1
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
    let n = bases.len().min(scalars.len());
    let (bases, scalars) = (&bases[..n], &scalars[..n]);
    let useful = |(p, s): (&Affine<P>, &BigIntOf<P>)| !p.infinity && !s.is_zero();
    let kept = bases.par_iter().zip(scalars).filter(|&t| useful(t)).count();
    let threads = rayon::current_num_threads();
    if kept < n - n / 10 {
        let (b, s): (Vec<Affine<P>>, Vec<BigIntOf<P>>) = bases
            .par_iter()
            .zip(scalars)
            .filter(|&t| useful(t))
            .map(|(p, s)| (*p, *s))
            .unzip();
        let plan = MsmPlan::choose::<P>(kept, max_bits(&s), threads);
        return msm_with_plan(&b, &s, plan);
    }
    let plan = MsmPlan::choose::<P>(n, max_bits(scalars), threads);
    msm_with_plan(bases, scalars, plan)
}

/// [`msm`] with an explicit plan (for measurements and tests).
pub fn msm_with_plan<P: SWCurveConfig>(
    bases: &[Affine<P>],
    scalars: &[BigIntOf<P>],
    plan: MsmPlan,
) -> Projective<P> {
    with_adder(MsmTask {
        bases,
        scalars,
        plan,
    })
}

/// The point arithmetic of the bucket passes: arkworks' affine points ([`ArkAdder`]), or
/// eight of them at a time in AVX-512 IFMA lanes (`crate::ifma`, where the CPU has them).
pub(crate) trait PairAdder<P: SWCurveConfig>: Sync {
    /// A point as the passes store it.
    type Point: Copy + Send + Sync;
    /// One task's scratch, kept between calls.
    type Scratch: Default + Send;
    /// Whether [`PairAdder::import`] copies (else it borrows).
    const CONVERTS: bool;
    /// Additions per call of [`PairAdder::add_pairs`] (they share one inversion).
    const BATCH: usize;
    fn identity(&self) -> Self::Point;
    fn is_identity(&self, p: &Self::Point) -> bool;
    fn neg(&self, p: &Self::Point) -> Self::Point;
    /// The points in this adder's form (borrowed where it is arkworks' own).
    fn import<'a>(&self, points: &'a [Affine<P>]) -> Cow<'a, [Self::Point]>;
    /// The points back as arkworks affine points.
    fn export(&self, points: &[Self::Point]) -> Vec<Affine<P>>;
    /// work[i] ← work[i] + work[j] for every (i, j) in `pairs` (all indices distinct).
    fn add_pairs(
        &self,
        work: &mut [Self::Point],
        pairs: &[(u32, u32)],
        scratch: &mut Self::Scratch,
    );
}

/// Which arithmetic the CPU MSM's additions use on this machine: `"avx512-ifma lanes"` or
/// `"arkworks affine"` (for reports; every group of both curves fits the lanes).
pub fn cpu_adder() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    if crate::msm::ifma::available() {
        return "avx512-ifma lanes";
    }
    "arkworks affine"
}

/// Bytes per base point that an MSM on this machine copies while it runs (its adder's
/// point form), or 0 where the adder reads arkworks' points in place.
pub fn base_copy_bytes<P: SWCurveConfig>() -> usize {
    struct Size;
    impl<P: SWCurveConfig> AdderTask<P> for Size {
        type Output = usize;
        fn run<A: PairAdder<P>>(self, _: &A) -> usize {
            if A::CONVERTS {
                std::mem::size_of::<A::Point>()
            } else {
                0
            }
        }
    }
    with_adder::<P, _>(Size)
}

/// Work to run with whichever [`PairAdder`] this CPU has (a generic closure).
pub(crate) trait AdderTask<P: SWCurveConfig> {
    type Output;
    fn run<A: PairAdder<P>>(self, adder: &A) -> Self::Output;
}

/// Runs `task` with the IFMA lanes where this CPU has them and `P` fits them
/// (`ZKPIPE_NO_IFMA=1` turns them off), else with arkworks' affine arithmetic.
pub(crate) fn with_adder<P: SWCurveConfig, T: AdderTask<P>>(task: T) -> T::Output {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::msm::ifma::LaneAdder;
        if let Some(a) = LaneAdder::<P, 5, 1>::new() {
            return task.run(&a);
        }
        if let Some(a) = LaneAdder::<P, 5, 2>::new() {
            return task.run(&a);
        }
        if let Some(a) = LaneAdder::<P, 8, 1>::new() {
            return task.run(&a);
        }
        if let Some(a) = LaneAdder::<P, 8, 2>::new() {
            return task.run(&a);
        }
    }
    task.run(&ArkAdder)
}

struct MsmTask<'a, P: SWCurveConfig> {
    bases: &'a [Affine<P>],
    scalars: &'a [BigIntOf<P>],
    plan: MsmPlan,
}

impl<P: SWCurveConfig> AdderTask<P> for MsmTask<'_, P> {
    type Output = Projective<P>;
    fn run<A: PairAdder<P>>(self, adder: &A) -> Projective<P> {
        msm_with_adder(adder, self.bases, self.scalars, self.plan)
    }
}

/// [`msm_with_plan`] on a given adder.
pub(crate) fn msm_with_adder<P: SWCurveConfig, A: PairAdder<P>>(
    adder: &A,
    bases: &[Affine<P>],
    scalars: &[BigIntOf<P>],
    plan: MsmPlan,
) -> Projective<P> {
    let n = bases.len().min(scalars.len());
    let (bases, scalars) = (&bases[..n], &scalars[..n]);
    let bits = max_bits(scalars);
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
            let buckets = bucket_sums(&bases[lo..hi], 1 << (c - 1), chunk, &mut tree, |i| {
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

/// The largest bit length among the scalars.
fn max_bits<B: BigInteger>(scalars: &[B]) -> usize {
    scalars
        .par_iter()
        .map(|s| s.num_bits() as usize)
        .max()
        .unwrap_or(0)
}

/// `len` (≤ 32) bits of `limbs` starting at bit `lo`; bits past the end read as zero.
#[inline]
fn bits_at(limbs: &[u64], lo: usize, len: usize) -> u64 {
    let (i, sh) = (lo / 64, lo % 64);
    let Some(&first) = limbs.get(i) else {
        return 0;
    };
    let mut v = first >> sh;
    if sh + len > 64 {
        if let Some(&next) = limbs.get(i + 1) {
            v |= next << (64 - sh);
        }
    }
    v & ((1u64 << len) - 1)
}

/// The signed digit of window `w`: s = Σ_w d_w·2^{cw} with d_w ∈ [−2^{c−1}, 2^{c−1}].
///
/// The carry into window w is bit cw − 1 of s, so each digit is computed on its own:
/// d_w = bits[cw, cw + c) + bit(cw − 1) − 2^c·bit(cw + c − 1).
#[inline]
fn digit(limbs: &[u64], w: usize, c: usize) -> i64 {
    let lo = w * c;
    let carry_in = if lo == 0 {
        0
    } else {
        bits_at(limbs, lo - 1, 1)
    };
    let carry_out = bits_at(limbs, lo + c - 1, 1);
    (bits_at(limbs, lo, c) + carry_in) as i64 - ((carry_out as i64) << c)
}

/// Points per sorting pass: about 1.1 MiB of affine points, so the runs being summed stay
/// in a core's L2 (measured best among 2^13..2^16 for BN254 G1 on a 2 MiB-L2 Xeon); buckets
/// carry over from one pass to the next.
pub(crate) fn chunk_len<P: SWCurveConfig>() -> usize {
    (((1 << 20) + (1 << 17)) / std::mem::size_of::<Affine<P>>()).max(4096)
}

/// A run of consecutive points to be summed.
#[derive(Clone, Copy)]
struct Segment {
    start: u32,
    len: u32,
}

/// Bucket sums by signed digit, for several digit functions over the same bases (used by
/// [`crate::subgroup`]): for block b and every i with `digit(b, i)` = d ≠ 0
/// (|d| ≤ `buckets[b]`), bucket |d| − 1 receives sign(d)·basesᵢ. The bases are split into
/// `groups` contiguous parts summed in parallel; the result is indexed [group][block][bucket]
/// (infinity marks an empty bucket). Each group converts its bases to the adder's form one
/// sorting pass at a time and feeds every block from that one conversion, so no copy of
/// the whole input is held (experiment 013).
pub(crate) fn grouped_bucket_sums<P: SWCurveConfig>(
    bases: &[Affine<P>],
    groups: usize,
    buckets: &[usize],
    digit: impl Fn(usize, usize) -> i64 + Sync,
) -> Vec<Vec<Vec<Affine<P>>>> {
    struct Task<'a, P: SWCurveConfig, D> {
        bases: &'a [Affine<P>],
        groups: usize,
        buckets: &'a [usize],
        digit: D,
    }
    impl<P: SWCurveConfig, D: Fn(usize, usize) -> i64 + Sync> AdderTask<P> for Task<'_, P, D> {
        type Output = Vec<Vec<Vec<Affine<P>>>>;
        fn run<A: PairAdder<P>>(self, adder: &A) -> Self::Output {
            let len = self.bases.len().div_ceil(self.groups.max(1)).max(1);
            let chunk = chunk_len::<P>();
            let digit = &self.digit;
            self.bases
                .par_chunks(len)
                .enumerate()
                .map(|(g, part)| {
                    let mut tree = TreeAdder::new(adder);
                    let mut sort = SortScratch::default();
                    let mut sums: Vec<Vec<A::Point>> = self
                        .buckets
                        .iter()
                        .map(|&nb| vec![adder.identity(); nb])
                        .collect();
                    for (pass, points) in part.chunks(chunk).enumerate() {
                        let points = adder.import(points);
                        let first = g * len + pass * chunk;
                        for (b, block) in sums.iter_mut().enumerate() {
                            add_pass(block, &points, &mut tree, &mut sort, |i| {
                                digit(b, first + i)
                            });
                        }
                    }
                    sums.iter().map(|block| adder.export(block)).collect()
                })
                .collect()
        }
    }
    with_adder(Task {
        bases,
        groups,
        buckets,
        digit,
    })
}

/// Bucket sums by `digit(i)` over the indices of `bases` (as [`grouped_bucket_sums`]),
/// in sorting passes of `chunk` points whose buckets carry over.
fn bucket_sums<P: SWCurveConfig, A: PairAdder<P>>(
    bases: &[A::Point],
    nb: usize,
    chunk: usize,
    tree: &mut TreeAdder<'_, P, A>,
    digit: impl Fn(usize) -> i64,
) -> Vec<A::Point> {
    let mut sums = vec![tree.adder.identity(); nb];
    let mut sort = SortScratch::default();
    for (pass, points) in bases.chunks(chunk).enumerate() {
        add_pass(&mut sums, points, tree, &mut sort, |i| {
            digit(pass * chunk + i)
        });
    }
    sums
}

/// One task's buffers for sorting a pass's points by bucket (kept between passes).
struct SortScratch<T> {
    codes: Vec<u32>,
    counts: Vec<u32>,
    next: Vec<u32>,
    work: Vec<T>,
    segments: Vec<Segment>,
    seg_buckets: Vec<u32>,
}

impl<T> Default for SortScratch<T> {
    fn default() -> Self {
        SortScratch {
            codes: Vec::new(),
            counts: Vec::new(),
            next: Vec::new(),
            work: Vec::new(),
            segments: Vec::new(),
            seg_buckets: Vec::new(),
        }
    }
}

/// One sorting pass: sign(d)·pointsᵢ goes into `sums[|d| − 1]` for every i with
/// d = `digit(i)` ≠ 0. The points are laid out in one run per bucket hit (after the
/// bucket's value so far) and the runs are summed in place.
fn add_pass<P: SWCurveConfig, A: PairAdder<P>>(
    sums: &mut [A::Point],
    points: &[A::Point],
    tree: &mut TreeAdder<'_, P, A>,
    sort: &mut SortScratch<A::Point>,
    digit: impl Fn(usize) -> i64,
) {
    let adder = tree.adder;
    let nb = sums.len();
    let SortScratch {
        codes,
        counts,
        next,
        work,
        segments,
        seg_buckets,
    } = sort;
    // Digits → code (bucket << 1 | negative), u32::MAX for nothing to add; histogram.
    codes.clear();
    counts.clear();
    counts.resize(nb, 0);
    next.resize(nb, 0);
    // (Bases at infinity are not filtered here: the pair additions absorb them.)
    for i in 0..points.len() {
        let d = digit(i);
        if d == 0 {
            codes.push(u32::MAX);
        } else {
            let b = (d.unsigned_abs() - 1) as u32;
            counts[b as usize] += 1;
            codes.push(b << 1 | (d < 0) as u32);
        }
    }
    // Lay out one run per bucket hit: its current value (if any), then its new points.
    segments.clear();
    seg_buckets.clear();
    let mut len = 0usize;
    for b in 0..nb {
        if counts[b] == 0 {
            continue;
        }
        let start = len;
        if !adder.is_identity(&sums[b]) {
            if work.len() <= len {
                work.resize(len + 1, adder.identity());
            }
            work[len] = sums[b];
            len += 1;
        }
        next[b] = len as u32;
        len += counts[b] as usize;
        segments.push(Segment {
            start: start as u32,
            len: (len - start) as u32,
        });
        seg_buckets.push(b as u32);
    }
    if work.len() < len {
        work.resize(len, adder.identity());
    }
    // Scatter the points into their runs, reading them in order.
    for (p, &code) in points.iter().zip(codes.iter()) {
        if code != u32::MAX {
            let b = (code >> 1) as usize;
            work[next[b] as usize] = if code & 1 == 1 { adder.neg(p) } else { *p };
            next[b] += 1;
        }
    }
    tree.sum_segments(work, segments);
    for (seg, &b) in segments.iter().zip(seg_buckets.iter()) {
        sums[b as usize] = work[seg.start as usize];
    }
}

/// Sums runs of points in place with batch additions (scratch kept between calls).
struct TreeAdder<'a, P: SWCurveConfig, A: PairAdder<P>> {
    adder: &'a A,
    active: Vec<Segment>,
    pairs: Vec<(u32, u32)>,
    scratch: A::Scratch,
}

impl<'a, P: SWCurveConfig, A: PairAdder<P>> TreeAdder<'a, P, A> {
    fn new(adder: &'a A) -> Self {
        TreeAdder {
            adder,
            active: Vec::new(),
            pairs: Vec::new(),
            scratch: A::Scratch::default(),
        }
    }

    /// Leaves the sum of each segment (disjoint runs of `work`) at the segment's start.
    /// Round r adds element i + 2^r into element i, for every segment at once, so each
    /// round's additions are independent and share inversions in batches.
    fn sum_segments(&mut self, work: &mut [A::Point], segments: &[Segment]) {
        self.active.clear();
        self.active.extend(segments.iter().filter(|s| s.len >= 2));
        let mut stride = 1u32;
        while !self.active.is_empty() {
            self.pairs.clear();
            for s in &self.active {
                let mut i = 0;
                while i + stride < s.len {
                    self.pairs.push((s.start + i, s.start + i + stride));
                    i += 2 * stride;
                }
            }
            for batch in self.pairs.chunks(A::BATCH) {
                self.adder.add_pairs(work, batch, &mut self.scratch);
            }
            stride *= 2;
            self.active.retain(|s| s.len > stride);
        }
    }
}

/// arkworks' affine points, one addition at a time (the portable [`PairAdder`]).
pub(crate) struct ArkAdder;

impl<P: SWCurveConfig> PairAdder<P> for ArkAdder {
    type Point = Affine<P>;
    type Scratch = (Vec<P::BaseField>, Vec<PairKind>);
    const CONVERTS: bool = false;
    const BATCH: usize = 1024;

    fn identity(&self) -> Affine<P> {
        Affine::identity()
    }

    fn is_identity(&self, p: &Affine<P>) -> bool {
        p.infinity
    }

    fn neg(&self, p: &Affine<P>) -> Affine<P> {
        -*p
    }

    fn import<'a>(&self, points: &'a [Affine<P>]) -> Cow<'a, [Affine<P>]> {
        Cow::Borrowed(points)
    }

    fn export(&self, points: &[Affine<P>]) -> Vec<Affine<P>> {
        points.to_vec()
    }

    fn add_pairs(&self, work: &mut [Affine<P>], pairs: &[(u32, u32)], scratch: &mut Self::Scratch) {
        add_pairs_in_place(work, pairs, &mut scratch.0, &mut scratch.1);
    }
}

/// How one affine pair p + q is computed.
#[derive(Clone, Copy)]
pub(crate) enum PairKind {
    /// The sum is q (p is infinity).
    TakeQ,
    /// The sum is p (q is infinity).
    KeepP,
    /// The sum is infinity (q = −p).
    Infinity,
    /// Chord: λ = (y_q − y_p)/(x_q − x_p).
    Add,
    /// Tangent (q = p): λ = (3x_p² + a)/(2y_p).
    Double,
}

impl PairKind {
    /// The rule every adder follows, from what its point form answers: whether p and q are
    /// infinity, whether their x coordinates differ, and whether q = p with y ≠ 0.
    #[inline]
    pub(crate) fn of(
        p_infinity: bool,
        q_infinity: bool,
        x_differs: impl FnOnce() -> bool,
        tangent: impl FnOnce() -> bool,
    ) -> Self {
        if p_infinity {
            PairKind::TakeQ
        } else if q_infinity {
            PairKind::KeepP
        } else if x_differs() {
            PairKind::Add
        } else if tangent() {
            PairKind::Double
        } else {
            PairKind::Infinity
        }
    }
}

#[inline]
fn pair_kind<P: SWCurveConfig>(p: &Affine<P>, q: &Affine<P>) -> PairKind {
    PairKind::of(
        p.infinity,
        q.infinity,
        || p.x != q.x,
        || p.y == q.y && !p.y.is_zero(),
    )
}

/// work[i] ← work[i] + work[j] for every (i, j) in `pairs` (all indices distinct), with a
/// single inversion for the batch.
fn add_pairs_in_place<P: SWCurveConfig>(
    work: &mut [Affine<P>],
    pairs: &[(u32, u32)],
    prefix: &mut Vec<P::BaseField>,
    kinds: &mut Vec<PairKind>,
) {
    // Forward: prefix products of the denominators.
    prefix.clear();
    kinds.clear();
    let mut acc = P::BaseField::ONE;
    for &(i, j) in pairs {
        let (p, q) = (&work[i as usize], &work[j as usize]);
        let kind = pair_kind(p, q);
        match kind {
            PairKind::Add => acc *= q.x - p.x,
            PairKind::Double => acc *= p.y.double(),
            _ => {}
        }
        prefix.push(acc);
        kinds.push(kind);
    }
    // Every denominator is non-zero, so the product is.
    let Some(mut inv) = acc.inverse() else {
        unreachable!("a product of non-zero field elements is non-zero")
    };
    // Backward: peel one inverse off per pair and finish its addition.
    for (k, &(i, j)) in pairs.iter().enumerate().rev() {
        let (p, q) = (work[i as usize], work[j as usize]);
        let (num, den) = match kinds[k] {
            PairKind::TakeQ => {
                work[i as usize] = q;
                continue;
            }
            PairKind::KeepP => continue,
            PairKind::Infinity => {
                work[i as usize] = Affine::identity();
                continue;
            }
            PairKind::Add => (q.y - p.y, q.x - p.x),
            PairKind::Double => {
                let xx = p.x.square();
                let mut num = xx.double() + xx;
                if !P::COEFF_A.is_zero() {
                    num += P::COEFF_A;
                }
                (num, p.y.double())
            }
        };
        let den_inv = if k == 0 { inv } else { inv * prefix[k - 1] };
        inv *= den;
        let lambda = num * den_inv;
        let x3 = lambda.square() - p.x - q.x;
        let y3 = lambda * (p.x - x3) - p.y;
        work[i as usize] = Affine::new_unchecked(x3, y3);
    }
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
    use ark_ec::{CurveGroup, VariableBaseMSM};
    use ark_ff::UniformRand;
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

    fn same<P: SWCurveConfig>(bases: &[Affine<P>], scalars: &[BigIntOf<P>], what: &str) {
        let want = Projective::<P>::msm_bigint(bases, scalars);
        assert_eq!(msm(bases, scalars), want, "{what}: default plan");
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
            let got = msm_with_plan(bases, scalars, plan);
            assert_eq!(got, want, "{what}: {plan:?}");
            // The portable adder too (the default is the IFMA lanes where the CPU has them).
            let got = msm_with_adder(&ArkAdder, bases, scalars, plan);
            assert_eq!(got, want, "{what}: {plan:?}, arkworks adder");
        }
    }

    fn random_sizes<P: SWCurveConfig>(seed: u64, big: usize) {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let all = points::<P>(big, &mut rng);
        let s = scalars::<P>(big, &mut rng);
        for n in [0, 1, 2, 3, 5, 7, 13, 31, 33, 100, 257, (1 << 10) + 17, big] {
            same(&all[..n], &s[..n], &format!("random n={n}"));
        }
    }

    fn edge_cases<P: SWCurveConfig>(seed: u64) {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let n = 600;
        let pts = points::<P>(n, &mut rng);
        let mut s = scalars::<P>(n, &mut rng);
        let zero = BigIntOf::<P>::from(0u64);
        let one = BigIntOf::<P>::from(1u64);
        let big = r_minus_one::<P>();

        same(&pts, &vec![zero; n], "all scalars zero");
        for (i, x) in s.iter_mut().enumerate() {
            match i % 5 {
                0 => *x = zero,
                1 => *x = big,
                2 => *x = one,
                _ => {}
            }
        }
        same(&pts, &s, "zeros, ones and r-1 mixed in");
        same(&pts, &vec![big; n], "all scalars r-1");
        same(&pts, &vec![s[3]; n], "all scalars equal");

        let mut with_inf = pts.clone();
        for p in with_inf.iter_mut().step_by(3) {
            *p = Affine::identity();
        }
        same(&with_inf, &s, "points at infinity");
        same(
            &vec![Affine::<P>::identity(); n],
            &s,
            "all points at infinity",
        );

        // One point many times: equal digits in a bucket force P + P.
        let p0 = pts[0];
        same(&vec![p0; n], &s, "one point, random scalars");
        same(&vec![p0; n], &vec![s[4]; n], "one point, one scalar");
        // P and −P side by side with equal scalars: sums cancel to infinity, then refill.
        let pm: Vec<Affine<P>> = (0..n).map(|i| if i % 2 == 0 { p0 } else { -p0 }).collect();
        same(&pm, &vec![s[4]; n], "P and -P, one scalar");
        let pm: Vec<Affine<P>> = (0..n)
            .map(|i| if i % 3 == 0 { pts[i] } else { -pts[i - 1] })
            .collect();
        same(&pm, &vec![s[5]; n], "P, -P, -P runs");
        let few: Vec<Affine<P>> = (0..n).map(|i| pts[i % 3]).collect();
        let sc: Vec<BigIntOf<P>> = (0..n)
            .map(|i| BigIntOf::<P>::from((i % 4) as u64))
            .collect();
        same(&few, &sc, "three points, tiny scalars");
    }

    /// Scalars above the group order (all 256 bits set) still give Σ sᵢ·Pᵢ exactly.
    fn oversized_scalars<P: SWCurveConfig>(seed: u64) {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let pts = points::<P>(20, &mut rng);
        let mut s = scalars::<P>(20, &mut rng);
        for x in s.iter_mut().step_by(2) {
            for limb in x.as_mut() {
                *limb = rng.gen::<u64>() | (1 << 63);
            }
        }
        let want: Projective<P> = pts.iter().zip(&s).map(|(p, k)| p.mul_bigint(k)).sum();
        assert_eq!(msm(&pts, &s), want);
    }

    #[test]
    fn digits_recompose() {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        for c in 2..=17 {
            for _ in 0..50 {
                let s = ark_bn254::Fr::rand(&mut rng).into_bigint();
                let windows = (s.num_bits() as usize + 1).div_ceil(c);
                let mut acc = num_bigint::BigInt::from(0);
                for w in (0..windows).rev() {
                    let d = digit(s.as_ref(), w, c);
                    assert!(d.unsigned_abs() <= 1 << (c - 1));
                    acc = (acc << c) + d;
                }
                assert_eq!(acc, num_bigint::BigInt::from(num_bigint::BigUint::from(s)));
            }
        }
    }

    #[test]
    fn bn254_g1() {
        random_sizes::<ark_bn254::g1::Config>(11, 1 << 14);
        edge_cases::<ark_bn254::g1::Config>(12);
        oversized_scalars::<ark_bn254::g1::Config>(13);
    }

    #[test]
    fn bn254_g2() {
        random_sizes::<ark_bn254::g2::Config>(21, 1 << 14);
        edge_cases::<ark_bn254::g2::Config>(22);
        oversized_scalars::<ark_bn254::g2::Config>(23);
    }

    #[test]
    fn bls12_381_g1() {
        random_sizes::<ark_bls12_381::g1::Config>(31, 1 << 14);
        edge_cases::<ark_bls12_381::g1::Config>(32);
        oversized_scalars::<ark_bls12_381::g1::Config>(33);
    }

    #[test]
    fn bls12_381_g2() {
        random_sizes::<ark_bls12_381::g2::Config>(41, 1 << 14);
        edge_cases::<ark_bls12_381::g2::Config>(42);
        oversized_scalars::<ark_bls12_381::g2::Config>(43);
    }

    /// The copy the planner's memory estimates count is the adder's own point form.
    #[test]
    fn base_copies_follow_the_adder() {
        let lanes = cpu_adder() == "avx512-ifma lanes";
        let sizes = [
            base_copy_bytes::<ark_bn254::g1::Config>(),
            base_copy_bytes::<ark_bn254::g2::Config>(),
            base_copy_bytes::<ark_bls12_381::g1::Config>(),
            base_copy_bytes::<ark_bls12_381::g2::Config>(),
        ];
        let want = if lanes { [80, 160, 128, 256] } else { [0; 4] };
        assert_eq!(sizes, want, "lanes: {lanes}");
    }

    #[test]
    fn plan_is_sane() {
        for threads in [1, 2, 16, 64] {
            for n in [0, 1, 100, 1 << 16, 1 << 20] {
                let p = MsmPlan::choose::<ark_bn254::g1::Config>(n, 254, threads);
                assert!((2..=MAX_WINDOW_BITS).contains(&p.window_bits), "{p:?}");
                assert!(p.groups >= 1 && p.groups <= threads.max(1), "{p:?}");
                let q = MsmPlan::choose::<ark_bls12_381::g2::Config>(n, 255, threads);
                let bucket_bytes = (1usize << (q.window_bits - 1))
                    * std::mem::size_of::<Affine<ark_bls12_381::g2::Config>>();
                assert!(bucket_bytes <= MAX_BUCKET_BYTES, "{q:?}");
            }
        }
    }
}
