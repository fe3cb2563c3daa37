//! A timing program (an example, so that the test build does not compile it): the CPU a
//! packed witness's conversion takes (`Witness::from_packed`, the daemon's synthesis
//! stage for a witness sent packed), per value. Run by
//! lab/experiments/042r-packed-conversion.md:
//!
//! ```text
//! cargo run --release -p zkpipe-core --example packed_timing -- bn254 14 sha256 2000
//! ```
//!
//! Arguments: curve (bn254 or bls12-381), log2 of the domain, values (as `zkpipe synth
//! --values`; ones that pack, e.g. sha256), conversions. The witness is `zkpipe synth`'s (seed 1), packed as `zkpipe
//! submit` packs it. Prints the conversion's ns per value, min / median / max over runs
//! of 100 conversions each, and a digest of the converted values.

use ark_ff::{BigInteger, PrimeField};
use sha2::{Digest, Sha256};
use std::time::Instant;
use zkpipe_core::synth::{synth, SynthSpec, Values};
use zkpipe_core::{Bls12_381, Bn254, Curve, Witness};
use zkpipe_formats::packed_wtns::{pack, PackedView};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [curve, log, values, n] = &args[..] else {
        panic!("usage: packed_timing CURVE LOG VALUES CONVERSIONS");
    };
    let log: u32 = log.parse().expect("LOG: an integer");
    let values: Values = values.parse().expect("VALUES");
    let n: usize = n.parse().expect("CONVERSIONS: an integer");
    let spec = SynthSpec {
        constraints: (1usize << log) - 5,
        public: 4,
        seed: 1,
        values,
    };
    match curve.as_str() {
        "bn254" => run::<Bn254>(&spec, n),
        "bls12-381" => run::<Bls12_381>(&spec, n),
        _ => panic!("CURVE: bn254 or bls12-381"),
    }
}

fn run<E: Curve>(spec: &SynthSpec, n: usize) {
    let (_, wtns) = synth::<E>(spec);
    let packed = pack(&wtns.to_bytes()).expect("a witness that packs");
    let view = PackedView::parse(&packed).expect("a packed witness");
    let values = view.n_witness as usize;
    let mut per_value = Vec::new();
    let mut digest = String::new();
    for _ in 0..n.div_ceil(100) {
        let t0 = Instant::now();
        let mut last = None;
        for _ in 0..100 {
            last = Some(Witness::<E::ScalarField>::from_packed(&view).expect("converts"));
        }
        per_value.push(t0.elapsed().as_nanos() as f64 / (100 * values) as f64);
        let w = last.expect("one conversion");
        let mut h = Sha256::new();
        for v in &w.values {
            h.update(v.into_bigint().to_bytes_le());
        }
        digest = format!("{:x}", h.finalize());
    }
    per_value.sort_by(f64::total_cmp);
    println!(
        "{} values, {} packed bytes: {:.2} / {:.2} / {:.2} ns a value (min / median / max of {} runs of 100), values {}",
        values,
        packed.len(),
        per_value[0],
        per_value[per_value.len() / 2],
        per_value[per_value.len() - 1],
        per_value.len(),
        digest
    );
}
