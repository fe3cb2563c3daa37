//! Witness synthesis: from the inputs a circom user has (`input.json`) and the circuit's
//! witness generator to the `.wtns` that zkpipe proves, byte for byte what snarkjs 0.7.6's
//! `wtns calculate` writes.
//!
//! ```text
//!  input.json ──Inputs::parse──► Inputs ─┐
//!  circuit.wasm | native generator ──Generator::open──► Generator (compiled once)
//!                                        └──► Generator::calculate / Worker::calculate ──► Wtns
//! ```
//!
//! - [`inputs`]: reads `input.json` the way snarkjs does (decimal and hex strings, numbers,
//!   nested arrays and objects flattened to qualified signal names).
//! - [`wasm`]: circom's wasm witness ABI run on wasmtime: one compiled module per circuit,
//!   an instance per worker.
//! - [`native`]: circom's native generator (`circom --c`, built with its Makefile) run as a
//!   subprocess.
//! - [`generator`]: recognises which of the two a file is by its content, not its name.

pub mod error;
pub mod generator;
pub mod inputs;
pub mod native;
pub mod wasm;

pub use error::SynthError;
pub use generator::{Generator, Worker};
pub use inputs::Inputs;
