//! What can go wrong turning inputs into a witness.

use std::path::PathBuf;

/// A witness could not be computed. Each message is one line naming what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    /// `input.json` is not what snarkjs accepts (not JSON, not an object, a value that is not
    /// an integer, ...). `at` names the signal when there is one.
    #[error("bad input{}: {why}", at.as_ref().map(|s| format!(" {s}")).unwrap_or_default())]
    BadInput { at: Option<String>, why: String },
    /// The inputs do not fit the circuit: an unknown signal, a wrong number of values, or
    /// inputs left unset. Names the signal.
    #[error("{0}")]
    Signal(String),
    /// The circuit rejected the inputs: a failed `assert` or constraint, with circom's
    /// message (which names the template and line).
    #[error("{0}")]
    Circuit(String),
    /// The generator file is neither a circom wasm module nor a native generator, or it does
    /// not fit (wrong field, unsupported circom version, missing `.dat`).
    #[error("{path}: {why}")]
    Generator { path: PathBuf, why: String },
    /// The generator failed in a way that is not the inputs' fault (a wasm trap, a crashed
    /// native process, an I/O error).
    #[error("witness generator failed: {0}")]
    Runtime(String),
}

impl SynthError {
    /// Whether the caller's inputs are at fault (a daemon answers INVALID_ARGUMENT), as
    /// opposed to the generator or the machine.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            SynthError::BadInput { .. } | SynthError::Signal(_) | SynthError::Circuit(_)
        )
    }
}
