//! circom's wasm witness generator (`circuit.wasm`) on wasmtime.
//
// PLACEHOLDER (filled in by the wasm work): every function fails loudly until then.

use crate::error::SynthError;
use crate::inputs::Inputs;
use std::path::Path;
use zkpipe_formats::wtns::Wtns;

/// A compiled circom wasm module: compile once per circuit, share across threads.
pub struct WasmCircuit {}

impl WasmCircuit {
    /// Compiles `bytes` (read from `path`, which only names it in errors).
    pub fn compile(path: &Path, bytes: &[u8]) -> Result<Self, SynthError> {
        let _ = bytes;
        Err(SynthError::Generator {
            path: path.to_owned(),
            why: "the wasm witness generator is not built yet".into(),
        })
    }

    /// A fresh instance for one worker.
    pub fn instance(&self) -> Result<WasmInstance, SynthError> {
        Err(SynthError::Runtime("not built yet".into()))
    }
}

/// One instance of a [`WasmCircuit`]; computes one witness at a time, reusable.
pub struct WasmInstance {}

impl WasmInstance {
    /// Computes the witness for `inputs`; circom `log()` lines go to `log`.
    pub fn calculate(
        &mut self,
        inputs: &Inputs,
        log: &mut dyn FnMut(&str),
    ) -> Result<Wtns, SynthError> {
        let _ = (inputs, log);
        Err(SynthError::Runtime("not built yet".into()))
    }
}
