//! circom's native witness generator (`circom --c`, built with its Makefile), run as a
//! subprocess.
//
// PLACEHOLDER (filled in by the native work): every function fails loudly until then.

use crate::error::SynthError;
use crate::inputs::Inputs;
use std::path::{Path, PathBuf};
use zkpipe_formats::wtns::Wtns;

/// A native generator executable (with its `.dat` beside it).
#[derive(Debug, Clone)]
pub struct NativeGenerator {
    /// The executable.
    pub path: PathBuf,
}

impl NativeGenerator {
    /// Checks that `path` is a native generator this machine can run.
    pub fn open(path: &Path) -> Result<Self, SynthError> {
        Err(SynthError::Generator {
            path: path.to_owned(),
            why: "the native witness generator is not built yet".into(),
        })
    }

    /// Runs the generator on `inputs`; its `log()` lines go to `log`.
    pub fn calculate(
        &self,
        inputs: &Inputs,
        log: &mut dyn FnMut(&str),
    ) -> Result<Wtns, SynthError> {
        let _ = (inputs, log);
        Err(SynthError::Runtime("not built yet".into()))
    }
}
