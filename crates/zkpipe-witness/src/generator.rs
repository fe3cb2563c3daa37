//! A circuit's witness generator, recognised by its content: a wasm module (`\0asm`) or a
//! native executable (ELF).
//
// PLACEHOLDER (filled in by the wasm work): `open` fails loudly until then.

use crate::error::SynthError;
use crate::inputs::Inputs;
use crate::native::NativeGenerator;
use crate::wasm::{WasmCircuit, WasmInstance};
use std::path::Path;
use zkpipe_formats::wtns::Wtns;

/// A loaded witness generator. Cheap to share (`Arc` it); each thread that computes
/// witnesses takes its own [`Worker`].
pub enum Generator {
    /// circom's `circuit.wasm`, compiled.
    Wasm(WasmCircuit),
    /// circom's native generator.
    Native(NativeGenerator),
}

impl Generator {
    /// Opens `path` and recognises what it is by its first bytes.
    pub fn open(path: &Path) -> Result<Self, SynthError> {
        Err(SynthError::Generator {
            path: path.to_owned(),
            why: "witness generators are not built yet".into(),
        })
    }

    /// A worker: for wasm, its own instance of the compiled module.
    pub fn worker(&self) -> Result<Worker, SynthError> {
        Ok(match self {
            Generator::Wasm(c) => Worker::Wasm(c.instance()?),
            Generator::Native(n) => Worker::Native(n.clone()),
        })
    }

    /// Computes one witness with a throwaway worker.
    pub fn calculate(
        &self,
        inputs: &Inputs,
        log: &mut dyn FnMut(&str),
    ) -> Result<Wtns, SynthError> {
        self.worker()?.calculate(inputs, log)
    }
}

/// What one thread uses to compute witnesses, one at a time. Owns what it needs, so a
/// worker thread can keep it.
pub enum Worker {
    /// An instance of the wasm module.
    Wasm(WasmInstance),
    /// The native generator (a subprocess per witness).
    Native(NativeGenerator),
}

impl Worker {
    /// Computes the witness for `inputs`; circom `log()` lines go to `log`.
    pub fn calculate(
        &mut self,
        inputs: &Inputs,
        log: &mut dyn FnMut(&str),
    ) -> Result<Wtns, SynthError> {
        match self {
            Worker::Wasm(i) => i.calculate(inputs, log),
            Worker::Native(n) => n.calculate(inputs, log),
        }
    }
}
