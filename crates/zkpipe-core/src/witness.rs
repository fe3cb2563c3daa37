//! A witness as field elements, checked against the key it is proved with.

use crate::curve::{field_from_le, Curve};
use crate::error::Error;
use crate::key::CompiledKey;
use ark_ff::PrimeField;
use rayon::prelude::*;
use zkpipe_formats::packed_wtns::PackedView;
use zkpipe_formats::wtns::{Wtns, WtnsView};

/// Witnesses from this size on raise the bandwidth throttle while they are converted.
const LARGE_WITNESS_BYTES: usize = 16 << 20;

/// Values converted per rayon task (~1–2 ms of work). A witness of fewer than two tasks'
/// worth (a 2^14-constraint circuit's, say) is converted on the calling thread: the daemon
/// converts many small witnesses at once on its request threads, and splitting each
/// across the global pool costs more than the conversion (lab/experiments/025-daemon-host-path.md:
/// ~6 CPU-ms per 2^14 job, most of it work-stealing); a big one-shot witness still converts in
/// parallel.
const VALUES_PER_TASK: usize = 1 << 15;

/// Values per task of a one-shot proof's conversion ([`Witness::for_curve`]): its pool is
/// otherwise idle, so a 2^16 circuit's ~60k values spread over 16 cores instead of
/// taking ~5 ms on one (lab/experiments/029-cpu-one-shot-serial-path.md).
const ONE_SHOT_VALUES_PER_TASK: usize = 1 << 12;

/// The values of all signals: w[0] = 1, then public outputs and inputs, then private ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Witness<F> {
    /// Values in signal order.
    pub values: Vec<F>,
}

impl<F: PrimeField> Witness<F> {
    /// Converts a parsed `.wtns` (whose values the parser has range-checked), for callers
    /// that convert many witnesses at once (the daemon's request threads): a witness of
    /// fewer than two tasks' worth is converted on the calling thread.
    pub fn from_wtns(wtns: &Wtns) -> Result<Self, Error> {
        Self::convert(wtns.as_view(), VALUES_PER_TASK)
    }

    /// Converts as [`Self::from_wtns`] does, from a witness that borrows its values.
    pub fn from_view(wtns: WtnsView<'_>) -> Result<Self, Error> {
        Self::convert(wtns, VALUES_PER_TASK)
    }

    /// Converts `wtns` for a proof on curve `E`, for a caller that proves one witness at a
    /// time (the CLI's `prove`): the values are split over the whole pool in tasks of
    /// [`ONE_SHOT_VALUES_PER_TASK`]. Its curve is checked first, so that a witness of the
    /// other curve is named as such, not as out-of-range values.
    pub fn for_curve<E: Curve<ScalarField = F>>(wtns: &Wtns) -> Result<Self, Error> {
        check_curve::<E>(wtns)?;
        Self::convert(wtns.as_view(), ONE_SHOT_VALUES_PER_TASK)
    }

    /// Checks that this witness has a value for each of `key`'s nVars signals.
    pub fn check_len<E: Curve<ScalarField = F>>(&self, key: &CompiledKey<E>) -> Result<(), Error> {
        check_len(self.values.len(), key)
    }

    /// Checks that this witness can be proved with `key` (same curve, nVars values), then
    /// converts it as [`Self::for_curve`] does.
    pub fn check_for<E: Curve<ScalarField = F>>(
        wtns: &Wtns,
        key: &CompiledKey<E>,
    ) -> Result<Self, Error> {
        check_curve::<E>(wtns)?;
        check_len(wtns.n_witness as usize, key)?;
        Self::convert(wtns.as_view(), ONE_SHOT_VALUES_PER_TASK)
    }

    /// Converts a packed witness ([`PackedView`], as a client may send it) without
    /// unpacking it first: each value from its low bytes, in order on the calling thread
    /// (the values' lengths vary, so no task can start mid-stream; a job's partitions
    /// convert side by side). Its curve and count are the caller's to check against the key.
    pub fn from_packed(wtns: &PackedView<'_>) -> Result<Self, Error> {
        let bytes = wtns.n_witness as usize * wtns.curve.n8r();
        let _burst = (bytes >= LARGE_WITNESS_BYTES).then(crate::throttle::burst);
        // A circom witness is mostly 0s and 1s: their packed forms (no byte, one byte 1)
        // are matched before any integer is built (lab 042r).
        let values = wtns
            .decode(|low| match low {
                [] => Some(F::ZERO),
                [1] => Some(F::ONE),
                _ => field_from_le::<F>(low),
            })
            .map_err(Error::Witness)?;
        Ok(Self { values })
    }

    /// The values of `wtns`, in tasks of `per_task` values (on the calling thread when
    /// there are fewer than two tasks' worth).
    fn convert(wtns: WtnsView<'_>, per_task: usize) -> Result<Self, Error> {
        // A large witness's conversion is a bandwidth burst of its own.
        let _burst = (wtns.values.len() >= LARGE_WITNESS_BYTES).then(crate::throttle::burst);
        let n8 = wtns.curve.n8r();
        let value = |(i, b): (usize, &[u8])| {
            field_from_le::<F>(b).ok_or_else(|| Error::InvalidScalar {
                what: format!("witness value {i}"),
                value: zkpipe_formats::curve::le_to_decimal(b),
            })
        };
        let values = if wtns.values.len() / n8 < 2 * per_task {
            let mut values = Vec::with_capacity(wtns.values.len() / n8);
            for v in wtns.values.chunks_exact(n8).enumerate().map(value) {
                values.push(v?);
            }
            values
        } else {
            let tasks = wtns.values.par_chunks_exact(n8).with_min_len(per_task);
            tasks.enumerate().map(value).collect::<Result<_, _>>()?
        };
        Ok(Self { values })
    }

    /// The public signals w[1..=n_public].
    pub fn public(&self, n_public: usize) -> &[F] {
        &self.values[1..=n_public]
    }
}

fn check_curve<E: Curve>(wtns: &Wtns) -> Result<(), Error> {
    if wtns.curve != E::ID {
        return Err(Error::CurveMismatch {
            what: "witness",
            found: wtns.curve,
            expected: E::ID,
        });
    }
    Ok(())
}

fn check_len<E: Curve>(values: usize, key: &CompiledKey<E>) -> Result<(), Error> {
    if values != key.n_vars {
        return Err(Error::WitnessLength {
            expected: key.n_vars,
            found: values,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_bn254::Fr;
    use zkpipe_formats::curve::CurveId;

    fn wtns_of(values: &[u64]) -> Wtns {
        let mut bytes = Vec::new();
        for v in values {
            let mut b = [0u8; 32];
            b[..8].copy_from_slice(&v.to_le_bytes());
            bytes.extend_from_slice(&b);
        }
        Wtns {
            curve: CurveId::Bn254,
            n_witness: values.len() as u32,
            values: bytes,
        }
    }

    #[test]
    fn small_and_large_witnesses_convert_alike_in_order() {
        // Below two tasks' worth (converted on the calling thread) and above (in tasks).
        for n in [1, 10, 2 * VALUES_PER_TASK - 1, 2 * VALUES_PER_TASK + 5] {
            let raw: Vec<u64> = (0..n as u64).map(|i| i * 7 + 3).collect();
            let w = Witness::<Fr>::from_wtns(&wtns_of(&raw)).unwrap();
            let expected: Vec<Fr> = raw.iter().map(|&v| Fr::from(v)).collect();
            assert_eq!(w.values, expected, "{n} values");
        }
    }

    #[test]
    fn a_packed_witness_converts_as_its_wtns_does_and_refuses_what_it_refuses() {
        let raw: Vec<u64> = (0..3000u64)
            .map(|i| (i % 5) & 1)
            .chain([0, 1, 1 << 50])
            .collect();
        let wtns = wtns_of(&raw);
        let packed = zkpipe_formats::packed_wtns::pack(&wtns.to_bytes()).expect("0s and 1s pack");
        let view = PackedView::parse(&packed).unwrap();
        assert_eq!(
            Witness::<Fr>::from_packed(&view).unwrap(),
            Witness::<Fr>::from_wtns(&wtns).unwrap()
        );
        // The last value set to the modulus: out of range, by index.
        let mut big = wtns.clone();
        let last = big.values.len() - 32;
        big.values[last..].copy_from_slice(&CurveId::Bn254.r_le());
        let bytes = big.to_bytes();
        let packed = zkpipe_formats::packed_wtns::pack(&bytes).expect("still mostly bits");
        let e = Witness::<Fr>::from_packed(&PackedView::parse(&packed).unwrap()).unwrap_err();
        assert!(
            e.to_string().contains(&format!("index {}", raw.len() - 1)),
            "{e}"
        );
    }

    #[test]
    fn one_shot_conversion_matches_and_checks_the_curve_first() {
        for n in [
            3,
            2 * ONE_SHOT_VALUES_PER_TASK - 1,
            5 * ONE_SHOT_VALUES_PER_TASK + 7,
        ] {
            let raw: Vec<u64> = (0..n as u64).map(|i| i * 11 + 1).collect();
            let w = Witness::<Fr>::for_curve::<ark_bn254::Bn254>(&wtns_of(&raw)).unwrap();
            assert_eq!(
                w,
                Witness::<Fr>::from_wtns(&wtns_of(&raw)).unwrap(),
                "{n} values"
            );
        }
        // A BLS12-381 witness is named as one, whatever its values.
        let mut wtns = wtns_of(&[1, 2, 3]);
        wtns.curve = CurveId::Bls12_381;
        wtns.values[32..64].fill(0xff);
        let e = Witness::<Fr>::for_curve::<ark_bn254::Bn254>(&wtns).unwrap_err();
        assert!(matches!(e, Error::CurveMismatch { .. }), "{e}");
    }

    #[test]
    fn a_value_above_the_modulus_is_named_by_index_in_either_path() {
        for (n, bad) in [(5, 3), (2 * VALUES_PER_TASK + 5, VALUES_PER_TASK + 1)] {
            let mut wtns = wtns_of(&vec![1; n]);
            wtns.values[bad * 32..(bad + 1) * 32].fill(0xff);
            let e = Witness::<Fr>::from_wtns(&wtns).unwrap_err();
            assert!(
                e.to_string().contains(&format!("witness value {bad}")),
                "{n} values: {e}"
            );
        }
    }
}
