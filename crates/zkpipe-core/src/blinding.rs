//! Fixed-base tables of a resident key's blinding bases, for [`crate::assemble`]: the
//! four points its proofs multiply by fresh r and s every time.

use crate::curve::Curve;
use ark_ec::scalar_mul::BatchMulPreprocessing;
use ark_ec::CurveGroup;
use ark_ff::PrimeField;

/// Window tables of a key's fixed blinding bases (δ₁, α₁, β₁ in G1, δ₂ in G2): arkworks'
/// fixed-base precomputation, 8-bit windows (32 rows of 256 multiples each, ~0.5 MiB per
/// G1 base and ~1 MiB for δ₂). A multiplication by one of them is then ~32 additions
/// instead of ~255 doublings and additions.
pub struct BlindingBases<E: Curve> {
    pub(crate) delta1: BatchMulPreprocessing<E::G1>,
    pub(crate) alpha1: BatchMulPreprocessing<E::G1>,
    pub(crate) beta1: BatchMulPreprocessing<E::G1>,
    pub(crate) delta2: BatchMulPreprocessing<E::G2>,
}

impl<E: Curve> BlindingBases<E> {
    /// The four tables, built side by side (6–40 ms on 16 cores,
    /// lab/experiments/021-window-tables.md).
    pub(crate) fn new(
        delta1: E::G1Affine,
        alpha1: E::G1Affine,
        beta1: E::G1Affine,
        delta2: E::G2Affine,
    ) -> Self {
        // arkworks picks the window from the number of scalars it expects: 2^12 gives 8
        // bits, where a table's build (8,192 additions) still costs little.
        fn table<G: CurveGroup>(base: impl Into<G>) -> BatchMulPreprocessing<G> {
            let bits = G::ScalarField::MODULUS_BIT_SIZE as usize;
            BatchMulPreprocessing::with_num_scalars_and_scalar_size(base.into(), 1 << 12, bits)
        }
        let ((delta1, alpha1), (beta1, delta2)) = rayon::join(
            || rayon::join(|| table(delta1), || table(alpha1)),
            || rayon::join(|| table(beta1), || table(delta2)),
        );
        Self {
            delta1,
            alpha1,
            beta1,
            delta2,
        }
    }
}

impl<E: Curve> std::fmt::Debug for BlindingBases<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlindingBases")
            .field("window", &self.delta1.window)
            .finish_non_exhaustive()
    }
}
