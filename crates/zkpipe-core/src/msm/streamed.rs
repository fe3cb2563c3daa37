//! The streamed MSM: one walk over a point set's chunks ([`crate::msm::stream_plan`])
//! serves a batch of proofs. While a chunk is "on the device", every proof of the batch
//! runs the CPU MSM of its scalars' slice against it and adds the result to its partial
//! sum; the next chunk replaces it. Σ over chunks of Σᵢ∈chunk sᵢ·Pᵢ is Σᵢ sᵢ·Pᵢ, so the
//! result is the in-core MSM's group element exactly.

use crate::error::Error;
use crate::msm::pippenger::BatchAffineMsm;
use crate::msm::MsmOptions;
use ark_ff::PrimeField;
use ark_std::Zero;
use std::ops::Range;

/// Scalars of the MSM over points `A`.
pub type ScalarsOf<A> = <<A as ark_ec::AffineRepr>::ScalarField as PrimeField>::BigInt;

/// Σ scalars[k]ᵢ·basesᵢ for every proof k of a batch, walking `chunks` (consecutive
/// ranges that cover `bases`) once, in order: each chunk against every proof's slice of
/// scalars (as many scalars as bases, each proof) before the next. MSMs run as `opts`
/// says; the walk is a bandwidth burst for the current thread's throttle.
pub fn streamed_msm<A: BatchAffineMsm>(
    bases: &[A],
    chunks: &[Range<usize>],
    scalars: &[&[ScalarsOf<A>]],
    opts: MsmOptions,
) -> Result<Vec<A::Group>, Error> {
    check(bases.len(), chunks, scalars)?;
    let _burst = crate::throttle::burst();
    let mut sums = vec![A::Group::zero(); scalars.len()];
    for chunk in chunks {
        let points = &bases[chunk.clone()];
        for (sum, s) in sums.iter_mut().zip(scalars) {
            *sum += A::msm_batch_affine(points, &s[chunk.clone()], opts);
        }
    }
    Ok(sums)
}

/// The chunks cover `0..bases` in order, and every proof has a scalar per base.
fn check<S>(bases: usize, chunks: &[Range<usize>], scalars: &[&[S]]) -> Result<(), Error> {
    let bad = |message: String| {
        Err(Error::Backend {
            backend: "cpu",
            message,
        })
    };
    let mut next = 0;
    for c in chunks {
        if c.start != next || c.end < c.start {
            return bad(format!(
                "streamed MSM: chunk {c:?} does not follow {next} ({bases} bases)"
            ));
        }
        next = c.end;
    }
    if next != bases {
        return bad(format!(
            "streamed MSM: chunks cover {next} of {bases} bases"
        ));
    }
    if let Some((k, s)) = scalars.iter().enumerate().find(|(_, s)| s.len() != bases) {
        return bad(format!(
            "MSM with {bases} bases and {} scalars (proof {k} of the batch)",
            s.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msm::pippenger::msm;
    use ark_ec::short_weierstrass::{Affine, Projective, SWCurveConfig};
    use ark_ec::CurveGroup;
    use ark_ff::UniformRand;
    use rand::SeedableRng;

    type BigInt<P> = ScalarsOf<Affine<P>>;

    fn random<P: SWCurveConfig>(n: usize, batch: usize) -> (Vec<Affine<P>>, Vec<Vec<BigInt<P>>>) {
        let rng = &mut rand_chacha::ChaCha20Rng::seed_from_u64(7);
        let points: Vec<Projective<P>> = (0..n).map(|_| Projective::rand(rng)).collect();
        let scalars = (0..batch)
            .map(|k| {
                (0..n)
                    .map(|i| match (i + k) % 4 {
                        // Circom witnesses are mostly 0s and 1s.
                        0 => P::ScalarField::from(0u64).into_bigint(),
                        1 => P::ScalarField::from(1u64).into_bigint(),
                        _ => P::ScalarField::rand(rng).into_bigint(),
                    })
                    .collect()
            })
            .collect();
        (Projective::normalize_batch(&points), scalars)
    }

    /// Each proof's streamed sum is the in-core sum, for one chunk or many, uneven.
    fn streams_as_in_core<P: SWCurveConfig>() {
        let n = 300;
        let (bases, scalars) = random::<P>(n, 3);
        let refs: Vec<&[BigInt<P>]> = scalars.iter().map(|s| &s[..]).collect();
        let want: Vec<Projective<P>> = scalars.iter().map(|s| msm(&bases, s)).collect();
        assert_ne!(want[0], want[1]);
        for cuts in [
            vec![0, n],
            vec![0, 1, 2, 100, 101, 299, n],
            vec![0, 64, 128, 192, 256, n],
        ] {
            let chunks: Vec<Range<usize>> = cuts.windows(2).map(|w| w[0]..w[1]).collect();
            for opts in [
                MsmOptions::default(),
                MsmOptions {
                    constant_work: true,
                    ifma: false,
                },
            ] {
                let got = streamed_msm(&bases, &chunks, &refs, opts).unwrap();
                assert_eq!(got, want, "{cuts:?} {opts:?}");
            }
        }
        // A proof of the batch alone gets its own sum.
        let one = streamed_msm(&bases, &[0..150, 150..n], &refs[2..], MsmOptions::default());
        assert_eq!(one.unwrap(), want[2..]);
    }

    #[test]
    fn bn254_streams_as_in_core() {
        streams_as_in_core::<ark_bn254::g1::Config>();
        streams_as_in_core::<ark_bn254::g2::Config>();
    }

    #[test]
    fn bls12_381_streams_as_in_core() {
        streams_as_in_core::<ark_bls12_381::g1::Config>();
        streams_as_in_core::<ark_bls12_381::g2::Config>();
    }

    #[test]
    fn chunks_that_miss_points_and_short_scalars_are_refused() {
        type P = ark_bn254::g1::Config;
        let (bases, scalars) = random::<P>(10, 2);
        let refs: Vec<&[BigInt<P>]> = scalars.iter().map(|s| &s[..]).collect();
        let o = MsmOptions::default();
        for chunks in [
            vec![0..4, 5..10],
            vec![0..4, 4..9],
            vec![0..4, 4..11],
            vec![],
        ] {
            let err = streamed_msm(&bases, &chunks, &refs, o).unwrap_err();
            assert!(err.to_string().contains("streamed MSM: chunk"), "{err}");
        }
        let short = [refs[0], &refs[1][1..]];
        let whole = std::slice::from_ref(&(0..10));
        let err = streamed_msm(&bases, whole, &short, o).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cpu backend: MSM with 10 bases and 9 scalars (proof 1 of the batch)"
        );
    }
}
