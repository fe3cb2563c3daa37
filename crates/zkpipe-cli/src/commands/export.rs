//! `zkpipe export <what> …`: outputs derived from a key or a proof, named as snarkjs's
//! `zkey export …` commands are.

use anyhow::Result;

/// Arguments of `export`.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

/// What `export` writes.
#[derive(clap::Subcommand)]
enum What {
    /// A Solidity verifier contract (BN254): `zkpipe export solidityverifier
    /// <circuit.zkey | verification_key.json> <Verifier.sol>`.
    #[command(name = "solidityverifier", alias = "solidity-verifier")]
    SolidityVerifier(super::solidity_verifier::Args),
    /// The calldata of a proof for that contract, on stdout: `zkpipe export
    /// soliditycalldata <public.json> <proof.json>`.
    #[command(name = "soliditycalldata", alias = "solidity-calldata")]
    SolidityCalldata(super::solidity_calldata::Args),
    /// A zkey's verification key as `verification_key.json` (the same as `zkpipe
    /// export-vk`).
    #[command(name = "verificationkey", alias = "verification-key")]
    VerificationKey(super::export_vk::Args),
}

/// Runs `export`.
pub fn run(a: Args) -> Result<()> {
    match a.what {
        What::SolidityVerifier(a) => super::solidity_verifier::run(a),
        What::SolidityCalldata(a) => super::solidity_calldata::run(a),
        What::VerificationKey(a) => super::export_vk::run(a),
    }
}
