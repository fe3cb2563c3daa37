//! The seam between the bucket passes and the point arithmetic: [`PairAdder`] (batches of
//! affine pair additions sharing one inversion), [`PairKind`] (the rule every adder follows
//! for one pair) and [`ArkAdder`], the portable adder on arkworks' affine points.
//!
//! The AVX-512 IFMA lanes (`crate::msm::ifma`) implement the same trait; keeping it here,
//! apart from the passes and from the dispatch that picks an adder, lets all of them import
//! it without importing each other.

use ark_ec::short_weierstrass::{Affine, SWCurveConfig};
use ark_ec::AdditiveGroup;
use ark_ff::{Field, Zero};
use std::borrow::Cow;

/// The point arithmetic of the bucket passes: arkworks' affine points ([`ArkAdder`]), or
/// eight of them at a time in AVX-512 IFMA lanes (`crate::msm::ifma`, where the CPU has them).
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
