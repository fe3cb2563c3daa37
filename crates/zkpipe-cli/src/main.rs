//! `zkpipe`: a Groth16 prover for snarkjs/circom users. The commands live in the library
//! (`cli.rs`); this file only installs the allocator and runs them.

use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: zkpipe_cli::allocator::Dispatch = zkpipe_cli::allocator::Dispatch;

fn main() -> ExitCode {
    zkpipe_cli::main()
}
