//! A circuit's witness generator, recognised by its content: a wasm module (`\0asm`) or a
//! native executable (ELF).

use crate::error::SynthError;
use crate::inputs::Inputs;
use crate::native::NativeGenerator;
use crate::wasm::{WasmCircuit, WasmInstance};
use std::io::Read;
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
    /// Opens `path` and recognises what it is by its first bytes: `\0asm` is compiled as
    /// circom's wasm, an ELF executable is circom's native generator; anything else is
    /// refused, saying what the file looks like.
    pub fn open(path: &Path) -> Result<Self, SynthError> {
        let refuse = |why: String| SynthError::Generator {
            path: path.to_owned(),
            why,
        };
        let mut head = [0u8; 8];
        let n = read_head(path, &mut head).map_err(|e| refuse(e.to_string()))?;
        let head = &head[..n];
        if head.starts_with(b"\0asm") {
            let bytes = std::fs::read(path).map_err(|e| refuse(e.to_string()))?;
            Ok(Generator::Wasm(WasmCircuit::compile(path, &bytes)?))
        } else if head.starts_with(b"\x7fELF") {
            Ok(Generator::Native(NativeGenerator::open(path)?))
        } else {
            Err(refuse(format!(
                "not a witness generator (circom's circuit.wasm or native executable): {}",
                looks_like(head)
            )))
        }
    }

    /// Checks `inputs`' signal names and lengths against the circuit without computing
    /// anything: a missing, unknown or wrongly sized signal is refused as computing the
    /// witness would refuse it. (A failed `assert` shows only when it is computed.)
    pub fn check(&self, inputs: &Inputs) -> Result<(), SynthError> {
        match self {
            Generator::Wasm(c) => c.check(inputs),
            Generator::Native(n) => n.check(inputs),
        }
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

/// Reads up to `buf.len()` bytes from the start of `path`.
fn read_head(path: &Path, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut f = std::fs::File::open(path)?;
    if f.metadata()?.is_dir() {
        return Err(std::io::Error::other("is a directory"));
    }
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// What a file that is no generator seems to be, from its first bytes.
fn looks_like(head: &[u8]) -> String {
    let kind = match head {
        [] => "it is empty",
        [b'z', b'k', b'e', b'y', ..] => "it is a zkey",
        [b'w', b't', b'n', b's', ..] => "it is a witness (.wtns)",
        [b'r', b'1', b'c', b's', ..] => "it is an r1cs",
        [b'p', b't', b'a', b'u', ..] => "it is a powers-of-tau file",
        [b'#', b'!', ..] => "it is a script",
        [b'M', b'Z', ..] => "it is a Windows executable",
        [0xcf, 0xfa, 0xed, 0xfe, ..]
        | [0xce, 0xfa, 0xed, 0xfe, ..]
        | [0xca, 0xfe, 0xba, 0xbe, ..] => "it is a macOS executable",
        _ if head
            .iter()
            .all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace()) =>
        {
            match head.iter().find(|b| !b.is_ascii_whitespace()) {
                Some(b'{' | b'[') => "it looks like JSON",
                _ => "it looks like text",
            }
        }
        _ => "",
    };
    if kind.is_empty() {
        let hex: Vec<String> = head.iter().take(4).map(|b| format!("{b:02x}")).collect();
        format!("unknown content starting with bytes {}", hex.join(" "))
    } else {
        kind.to_owned()
    }
}
