//! `zkpipe wtns calculate <circuit.wasm | native generator> <input.json> <witness.wtns>`
//! (snarkjs's argument order): the witness of circuit inputs, byte for byte what snarkjs
//! 0.7.6's `wtns calculate` writes. circom `log()` lines go to stdout, as snarkjs prints
//! them (to stderr when the witness itself goes to stdout).

use anyhow::{anyhow, Result};
use std::path::{Path, PathBuf};
use zkpipe_formats::wtns::Wtns;
use zkpipe_witness::{Generator, Inputs};

/// Arguments of `wtns calculate`.
#[derive(clap::Args)]
#[command(after_help = super::outputs_help!("An existing witness file is replaced (as snarkjs does)."))]
pub struct Args {
    /// Witness generator: circom's `circuit.wasm`, or its native generator (`circom --c`,
    /// built); recognised by content.
    generator: PathBuf,
    /// Circuit inputs, as snarkjs reads them (signal name to value, or nested arrays);
    /// `-`: read them from stdin.
    input: PathBuf,
    /// Where to write the witness (`-`: stdout).
    wtns: PathBuf,
}

/// Runs `wtns calculate`.
pub fn run(a: Args) -> Result<()> {
    let plan = super::replace_outputs(&[&a.wtns], &[&a.generator, &a.input])?;
    let inputs = read_inputs(&a.input)?;
    let generator = Generator::open(&a.generator)?; // (its errors name the file)
    let stdout_free = !plan.writes_stdout();
    let wtns = calculate(&generator, &a.generator, &inputs, &a.input, stdout_free)?;
    plan.write(&[&wtns.to_bytes()])?;
    Ok(())
}

/// Reads `input.json`, `-` being stdin (bytes that are not UTF-8 are replaced, as node's
/// reader does).
pub fn read_inputs(path: &Path) -> Result<Inputs> {
    let bytes = zkpipe_formats::files::read_input_or_stdin(path)?;
    Inputs::parse(&String::from_utf8_lossy(&bytes)).map_err(|e| anyhow!("{}: {e}", shown(path)))
}

/// How messages name an input: `-` is stdin.
pub fn shown(path: &Path) -> std::path::Display<'_> {
    if path == Path::new("-") {
        Path::new(zkpipe_formats::files::STDIN_NAME).display()
    } else {
        path.display()
    }
}

/// Computes the witness of `inputs` (read from `input`) with `generator` (opened from
/// `generator_path`); `log()` lines go to stdout, or to stderr unless `stdout_free`.
pub fn calculate(
    generator: &Generator,
    generator_path: &Path,
    inputs: &Inputs,
    input: &Path,
    stdout_free: bool,
) -> Result<Wtns> {
    let mut log = |line: &str| {
        if stdout_free {
            println!("{line}");
        } else {
            eprintln!("{line}");
        }
    };
    generator.calculate(inputs, &mut log).map_err(|e| {
        anyhow!(
            "computing the witness of {} with {}: {e}",
            shown(input),
            generator_path.display()
        )
    })
}
