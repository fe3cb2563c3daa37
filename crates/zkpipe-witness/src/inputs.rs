//! `input.json` read the way snarkjs 0.7.6 reads it (circom_runtime's witness calculator).
//
// PLACEHOLDER (filled in by the wasm/inputs work): every function fails loudly until then.

use crate::error::SynthError;
use num_bigint::BigInt;

/// Circuit inputs: qualified signal names (`a`, `s.x` for nested objects) in snarkjs's
/// order, each with its flattened values as signed integers, not yet reduced modulo the
/// field (the generator knows its prime).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Inputs {
    /// (signal name, values) in the order snarkjs sets them.
    pub signals: Vec<(String, Vec<BigInt>)>,
}

impl Inputs {
    /// Parses `input.json` text.
    pub fn parse(json: &str) -> Result<Self, SynthError> {
        let _ = json;
        Err(SynthError::Runtime(
            "input.json parsing is not built yet".into(),
        ))
    }

    /// Number of values over all signals.
    pub fn len(&self) -> usize {
        self.signals.iter().map(|(_, v)| v.len()).sum()
    }

    /// Whether there are no values at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
