//! A timing program (an example, so that the test build does not compile it): how long
//! `synth` takes to make a circuit and its witness, and a digest of both files' bytes, so
//! that two builds can be compared for speed and for making the same files. Run by
//! lab/experiments/043m-ceiling-2-26.md:
//!
//! ```text
//! cargo run --release -p zkpipe-core --example synth_timing -- bn254 20 sha256 1
//! ```
//!
//! Arguments: curve (bn254 or bls12-381), log2 of the domain, values (random, sha256 or
//! shares), seed. Prints one line: milliseconds, then the r1cs's and the wtns's SHA-256.

use sha2::{Digest, Sha256};
use std::time::Instant;
use zkpipe_core::synth::{synth, SynthSpec, Values};
use zkpipe_core::{Bls12_381, Bn254};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [curve, log, values, seed] = &args[..] else {
        panic!("usage: synth_timing CURVE LOG VALUES SEED");
    };
    let log: u32 = log.parse().expect("LOG: an integer");
    let values: Values = values.parse().expect("VALUES");
    let spec = SynthSpec {
        // As `zkpipe synth --domain 2^LOG --public 4`.
        constraints: (1usize << log) - 5,
        public: 4,
        seed: seed.parse().expect("SEED: an integer"),
        values,
    };
    let t0 = Instant::now();
    let (r1cs, wtns) = match curve.as_str() {
        "bn254" => synth::<Bn254>(&spec),
        "bls12-381" => synth::<Bls12_381>(&spec),
        _ => panic!("CURVE: bn254 or bls12-381"),
    };
    let ms = t0.elapsed().as_millis();
    let digest = |b: Vec<u8>| format!("{:x}", Sha256::digest(&b));
    println!(
        "{curve} 2^{log} {values}: synth {ms} ms, r1cs {}, wtns {}",
        digest(r1cs.to_bytes()),
        digest(wtns.to_bytes())
    );
}
