//! Which [`PairAdder`] this machine's MSMs run on: eight additions at a time in AVX-512
//! IFMA lanes where the CPU has them, the curve fits them and the caller allows them
//! ([`crate::msm::MsmOptions::ifma`]), else arkworks' affine points. Work is handed over as an [`AdderTask`], a closure
//! generic over the adder; [`cpu_adder`] and [`base_copy_bytes`] report what was chosen.

use ark_ec::short_weierstrass::SWCurveConfig;

use crate::msm::adder::{ArkAdder, PairAdder};

/// Which arithmetic the CPU MSM's additions use on this machine, with IFMA lanes allowed
/// (`ifma`) or not: `"avx512-ifma lanes"` or `"arkworks affine"` (for reports; every group
/// of both curves fits the lanes).
pub fn cpu_adder(ifma: bool) -> &'static str {
    #[cfg(target_arch = "x86_64")]
    if ifma && crate::ifma::available() {
        return "avx512-ifma lanes";
    }
    "arkworks affine"
}

/// Bytes per base point that an MSM on this machine, IFMA lanes allowed (`ifma`) or not,
/// copies while it runs (its adder's point form), or 0 where the adder reads arkworks'
/// points in place.
pub fn base_copy_bytes<P: SWCurveConfig>(ifma: bool) -> usize {
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
    with_adder::<P, _>(Size, ifma)
}

/// Work to run with whichever [`PairAdder`] this CPU has (a generic closure).
pub(crate) trait AdderTask<P: SWCurveConfig> {
    type Output;
    fn run<A: PairAdder<P>>(self, adder: &A) -> Self::Output;
}

/// Runs `task` with the IFMA lanes where `ifma` allows them, this CPU has them and `P`
/// fits them, else with arkworks' affine arithmetic.
pub(crate) fn with_adder<P: SWCurveConfig, T: AdderTask<P>>(task: T, ifma: bool) -> T::Output {
    #[cfg(target_arch = "x86_64")]
    if ifma {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The copy the planner's memory estimates count is the adder's own point form.
    #[test]
    fn base_copies_follow_the_adder() {
        for ifma in [true, false] {
            let lanes = cpu_adder(ifma) == "avx512-ifma lanes";
            assert!(ifma || !lanes, "lanes although not allowed");
            let sizes = [
                base_copy_bytes::<ark_bn254::g1::Config>(ifma),
                base_copy_bytes::<ark_bn254::g2::Config>(ifma),
                base_copy_bytes::<ark_bls12_381::g1::Config>(ifma),
                base_copy_bytes::<ark_bls12_381::g2::Config>(ifma),
            ];
            let want = if lanes { [80, 160, 128, 256] } else { [0; 4] };
            assert_eq!(sizes, want, "lanes: {lanes}");
        }
    }
}
