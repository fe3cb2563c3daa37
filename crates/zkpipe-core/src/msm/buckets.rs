//! Bucket sums by sorting passes: each pass counting-sorts its points by the bucket their
//! signed digit names (negating for negative digits) and tree-sums each bucket's run, the
//! buckets carrying over from one pass to the next. [`bucket_sums`] fills one window of the
//! MSM; [`grouped_bucket_sums`] serves the subgroup checks ([`crate::subgroup`]), several
//! digit functions over one conversion of the bases.

use ark_ec::short_weierstrass::{Affine, SWCurveConfig};
use rayon::prelude::*;

use crate::msm::adder::PairAdder;
use crate::msm::dispatch::{with_adder, AdderTask};
use crate::msm::plan::chunk_len;
use crate::msm::tree::{Segment, TreeAdder};

/// Bucket sums by signed digit, for several digit functions over the same bases (used by
/// [`crate::subgroup`]): for block b and every i with `digit(b, i)` = d ≠ 0
/// (|d| ≤ `buckets[b]`), bucket |d| − 1 receives sign(d)·basesᵢ. The bases are split into
/// `groups` contiguous parts summed in parallel; the result is indexed [group][block][bucket]
/// (infinity marks an empty bucket). Each group converts its bases to the adder's form one
/// sorting pass at a time and feeds every block from that one conversion, so no copy of
/// the whole input is held.
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
                            add_pass(block, &points, &mut tree, &mut sort, false, |i| {
                                digit(b, first + i)
                            });
                        }
                    }
                    sums.iter().map(|block| adder.export(block)).collect()
                })
                .collect()
        }
    }
    // The subgroup checks are no MSM of a device: lanes wherever the CPU has them.
    with_adder(
        Task {
            bases,
            groups,
            buckets,
            digit,
        },
        true,
    )
}

/// Bucket sums by `digit(i)` over the indices of `bases` (as [`grouped_bucket_sums`]),
/// in sorting passes of `chunk` points whose buckets carry over. With `constant_work`
/// a zero digit's point is added too, into a bucket that is then dropped.
pub(super) fn bucket_sums<P: SWCurveConfig, A: PairAdder<P>>(
    bases: &[A::Point],
    nb: usize,
    chunk: usize,
    tree: &mut TreeAdder<'_, P, A>,
    constant_work: bool,
    digit: impl Fn(usize) -> i64,
) -> Vec<A::Point> {
    let mut sums = vec![tree.adder.identity(); nb + constant_work as usize];
    let mut sort = SortScratch::default();
    for (pass, points) in bases.chunks(chunk).enumerate() {
        add_pass(&mut sums, points, tree, &mut sort, constant_work, |i| {
            digit(pass * chunk + i)
        });
    }
    sums.truncate(nb);
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
/// d = `digit(i)` ≠ 0 (and, with `zeros_to_last`, pointsᵢ into the last of `sums` where
/// d = 0). The points are laid out in one run per bucket hit (after the bucket's value
/// so far) and the runs are summed in place.
fn add_pass<P: SWCurveConfig, A: PairAdder<P>>(
    sums: &mut [A::Point],
    points: &[A::Point],
    tree: &mut TreeAdder<'_, P, A>,
    sort: &mut SortScratch<A::Point>,
    zeros_to_last: bool,
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
        if d == 0 && zeros_to_last {
            let b = nb as u32 - 1;
            counts[b as usize] += 1;
            codes.push(b << 1);
        } else if d == 0 {
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
