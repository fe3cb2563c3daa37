//! Tree sums of runs of points in the adder's form: round r adds element i + 2^r into
//! element i of every run at once, so a round's additions are independent and share their
//! inversions. The sorting passes sum each bucket's run with it, and the bucket reduction
//! the rows and columns of its bucket grid.

use ark_ec::short_weierstrass::SWCurveConfig;

use crate::msm::adder::PairAdder;

/// A run of consecutive points to be summed.
#[derive(Clone, Copy)]
pub(super) struct Segment {
    pub(super) start: u32,
    pub(super) len: u32,
}

/// Sums runs of points in place with batch additions (scratch kept between calls).
pub(super) struct TreeAdder<'a, P: SWCurveConfig, A: PairAdder<P>> {
    pub(super) adder: &'a A,
    active: Vec<Segment>,
    pairs: Vec<(u32, u32)>,
    scratch: A::Scratch,
}

impl<'a, P: SWCurveConfig, A: PairAdder<P>> TreeAdder<'a, P, A> {
    pub(super) fn new(adder: &'a A) -> Self {
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
    pub(super) fn sum_segments(&mut self, work: &mut [A::Point], segments: &[Segment]) {
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
