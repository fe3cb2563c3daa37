//! A witness as field elements, checked against the key it is proved with.

use crate::curve::{field_from_le, Curve};
use crate::error::Error;
use crate::key::CompiledKey;
use ark_ff::PrimeField;
use rayon::prelude::*;
use zkpipe_formats::wtns::Wtns;

/// Witnesses from this size on raise the bandwidth throttle while they are converted.
const LARGE_WITNESS_BYTES: usize = 16 << 20;

/// The values of all signals: w[0] = 1, then public outputs and inputs, then private ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Witness<F> {
    /// Values in signal order.
    pub values: Vec<F>,
}

impl<F: PrimeField> Witness<F> {
    /// Converts a parsed `.wtns` (whose values the parser has range-checked).
    pub fn from_wtns(wtns: &Wtns) -> Result<Self, Error> {
        // A large witness's conversion is a bandwidth burst of its own.
        let _burst = (wtns.values.len() >= LARGE_WITNESS_BYTES).then(crate::throttle::burst);
        let values = wtns
            .values
            .par_chunks_exact(wtns.curve.n8r())
            .enumerate()
            .map(|(i, b)| {
                field_from_le::<F>(b).ok_or_else(|| Error::InvalidScalar {
                    what: format!("witness value {i}"),
                    value: zkpipe_formats::curve::le_to_decimal(b),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { values })
    }

    /// Checks that this witness can be proved with `key`: same curve, nVars values.
    pub fn check_for<E: Curve<ScalarField = F>>(
        wtns: &Wtns,
        key: &CompiledKey<E>,
    ) -> Result<Self, Error> {
        if wtns.curve != E::ID {
            return Err(Error::CurveMismatch {
                what: "witness",
                found: wtns.curve,
                expected: E::ID,
            });
        }
        if wtns.n_witness as usize != key.n_vars {
            return Err(Error::WitnessLength {
                expected: key.n_vars,
                found: wtns.n_witness as usize,
            });
        }
        Self::from_wtns(wtns)
    }

    /// The public signals w[1..=n_public].
    pub fn public(&self, n_public: usize) -> &[F] {
        &self.values[1..=n_public]
    }
}
