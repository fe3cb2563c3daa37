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
    ///
    /// Contract Groth16Verifier with snarkjs's interface, verifyProof(uint[2] _pA,
    /// uint[2][2] _pB, uint[2] _pC, uint[nPublic] _pubSignals) returns (bool), taking the
    /// calldata that `zkpipe export soliditycalldata` prints. It calls the EVM's BN254
    /// precompiles (ecAdd 0x06, ecMul 0x07, ecPairing 0x08) and returns false, without
    /// reverting, for an invalid proof. BLS12-381 keys are refused: the EVM has no pairing
    /// for that curve. The key's points are checked before the contract is written.
    #[command(name = "solidityverifier", alias = "solidity-verifier")]
    SolidityVerifier(super::solidity_verifier::Args),
    /// The calldata of a proof for that contract, on stdout: `zkpipe export
    /// soliditycalldata <public.json> <proof.json>`.
    ///
    /// The four arguments of verifyProof, `[a0, a1],[[b01, b00],[b11, b10]],[c0, c1],[p0,…]`,
    /// as quoted 0x-prefixed 64-digit hex numbers: byte for byte what `snarkjs zkey export
    /// soliditycalldata` prints (B's coordinates imaginary part first, as the pairing
    /// precompile reads them). Proofs without a `curve` field (rapidsnark's) are taken as
    /// BN254; BLS12-381 proofs are refused. The points are not checked: `zkpipe verify`
    /// does that.
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
