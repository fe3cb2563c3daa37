//! circom's native generator on the committed fixtures (tests/fixtures/<curve>/<circuit>/
//! circuit + circuit.dat, built statically by make-fixtures.sh): the witness must be byte
//! for byte the `witness.wtns` snarkjs computed from the same `input.json`.
//!
//! `cargo test --release -p zkpipe-witness --test native`

#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

use num_bigint::{BigInt, Sign};
use std::path::{Path, PathBuf};
use zkpipe_formats::CurveId;
use zkpipe_witness::inputs::Inputs;
use zkpipe_witness::native::NativeGenerator;
use zkpipe_witness::SynthError;

const CURVES: [&str; 2] = ["bn254", "bls12-381"];
const CIRCUITS: [&str; 2] = ["multi_public", "poseidon"];

fn fixture(curve: &str, circuit: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(curve)
        .join(circuit)
}

/// `input.json` flattened per signal (enough for the fixtures: decimal strings, numbers,
/// nested arrays; no dependency on `Inputs::parse`).
fn inputs(dir: &Path) -> Inputs {
    fn flatten(v: &serde_json::Value, out: &mut Vec<BigInt>) {
        match v {
            serde_json::Value::Array(a) => a.iter().for_each(|x| flatten(x, out)),
            serde_json::Value::String(s) => out.push(s.parse().expect("decimal string")),
            serde_json::Value::Number(n) => out.push(n.to_string().parse().expect("integer")),
            other => panic!("unexpected input value {other}"),
        }
    }
    let text = std::fs::read_to_string(dir.join("input.json")).expect("input.json");
    let json: serde_json::Value = serde_json::from_str(&text).expect("json");
    let obj = json.as_object().expect("object");
    Inputs {
        signals: obj
            .iter()
            .map(|(k, v)| {
                let mut vals = Vec::new();
                flatten(v, &mut vals);
                (k.clone(), vals)
            })
            .collect(),
    }
}

fn open(dir: &Path) -> NativeGenerator {
    NativeGenerator::open(&dir.join("circuit")).expect("open native generator")
}

fn run(gen: &NativeGenerator, inputs: &Inputs) -> Result<Vec<u8>, SynthError> {
    let mut logged = Vec::new();
    let w = gen.calculate(inputs, &mut |l| logged.push(l.to_owned()))?;
    assert!(logged.is_empty(), "fixtures log nothing: {logged:?}");
    Ok(w.to_bytes())
}

fn expected(dir: &Path) -> Vec<u8> {
    std::fs::read(dir.join("witness.wtns")).expect("witness.wtns")
}

fn without(inputs: &Inputs, name: &str) -> Inputs {
    Inputs {
        signals: inputs
            .signals
            .iter()
            .filter(|(n, _)| n != name)
            .cloned()
            .collect(),
    }
}

#[test]
fn witness_is_snarkjs_byte_for_byte() {
    for curve in CURVES {
        for circuit in CIRCUITS {
            let dir = fixture(curve, circuit);
            let gen = open(&dir);
            let got = run(&gen, &inputs(&dir)).expect("calculate");
            assert!(got == expected(&dir), "{curve}/{circuit}: witness differs");
        }
    }
}

#[test]
fn learns_the_curve_from_the_executable() {
    assert_eq!(open(&fixture("bn254", "poseidon")).curve(), CurveId::Bn254);
    assert_eq!(
        open(&fixture("bls12-381", "poseidon")).curve(),
        CurveId::Bls12_381
    );
}

/// snarkjs reduces every input into [0, p); so must we (the native rejects a minus sign):
/// v + p, v - p (negative) and v + 5p give the committed witness.
#[test]
fn negative_and_oversized_inputs_reduce_like_snarkjs() {
    for curve in CURVES {
        let dir = fixture(curve, "multi_public");
        let gen = open(&dir);
        let p = BigInt::from_bytes_le(Sign::Plus, &gen.curve().r_le());
        let mut inp = inputs(&dir);
        for (i, (_, vals)) in inp.signals.iter_mut().enumerate() {
            for v in vals.iter_mut() {
                *v = match i % 3 {
                    0 => &*v + &p,
                    1 => &*v - &p,
                    _ => &*v + &p * 5,
                };
            }
        }
        assert!(inp
            .signals
            .iter()
            .any(|(_, v)| v.iter().any(|x| x.sign() == Sign::Minus)));
        assert!(
            run(&gen, &inp).expect("calculate") == expected(&dir),
            "{curve}"
        );
    }
}

/// One generator, cloned to several threads at once: each call has its own temp dir.
#[test]
fn concurrent_calls_do_not_share_files() {
    let dir = fixture("bn254", "poseidon");
    let gen = open(&dir);
    let inp = inputs(&dir);
    let want = expected(&dir);
    std::thread::scope(|s| {
        for _ in 0..4 {
            let gen = gen.clone();
            let (inp, want) = (&inp, &want);
            s.spawn(move || {
                for _ in 0..3 {
                    assert!(&run(&gen, inp).expect("calculate") == want);
                }
            });
        }
    });
}

#[test]
fn missing_signal_is_a_signal_error() {
    let dir = fixture("bn254", "multi_public");
    let err = run(&open(&dir), &without(&inputs(&dir), "x")).unwrap_err();
    assert!(
        matches!(&err, SynthError::Signal(m) if m.contains("Not all inputs have been set")),
        "{err}"
    );
    assert!(err.is_bad_input());
}

#[test]
fn wrong_length_names_the_signal() {
    let dir = fixture("bls12-381", "multi_public");
    let gen = open(&dir);
    for n in [3, 5] {
        let mut inp = inputs(&dir);
        let k = inp.signals.iter_mut().find(|(n, _)| n == "k").expect("k");
        k.1.resize(n, BigInt::from(1));
        let err = run(&gen, &inp).unwrap_err();
        assert!(
            matches!(&err, SynthError::Signal(m) if m.contains("signal k")),
            "{n} values: {err}"
        );
    }
}

#[test]
fn unknown_signal_is_named() {
    let dir = fixture("bn254", "poseidon");
    let mut inp = inputs(&dir);
    inp.signals.push(("nope".into(), vec![BigInt::from(1)]));
    let err = run(&open(&dir), &inp).unwrap_err();
    assert!(
        matches!(&err, SynthError::Signal(m) if m == "Signal nope not found in the circuit"),
        "{err}"
    );
}

#[test]
fn missing_dat_is_refused_at_open() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let exe = tmp.path().join("circuit");
    std::fs::copy(fixture("bn254", "multi_public").join("circuit"), &exe).expect("copy");
    let err = NativeGenerator::open(&exe).unwrap_err();
    assert!(
        matches!(&err, SynthError::Generator { why, .. } if why.contains("circuit.dat is missing")),
        "{err}"
    );

    // A symlink to a good generator: circom's main would look for <link>.dat.
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(fixture("bn254", "multi_public").join("circuit"), &link)
        .expect("symlink");
    assert!(matches!(
        NativeGenerator::open(&link),
        Err(SynthError::Generator { .. })
    ));
    // With the .dat beside the link (as `<link>.dat`) it runs, from any cwd.
    std::fs::copy(
        fixture("bn254", "multi_public").join("circuit.dat"),
        tmp.path().join("link.dat"),
    )
    .expect("copy dat");
    let dir = fixture("bn254", "multi_public");
    assert!(
        run(&NativeGenerator::open(&link).expect("open"), &inputs(&dir)).expect("calculate")
            == expected(&dir)
    );
}

#[test]
fn a_dat_removed_after_open_is_a_generator_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = fixture("bn254", "multi_public");
    let exe = tmp.path().join("circuit");
    std::fs::copy(dir.join("circuit"), &exe).expect("copy");
    std::fs::copy(dir.join("circuit.dat"), tmp.path().join("circuit.dat")).expect("copy");
    let gen = NativeGenerator::open(&exe).expect("open");
    std::fs::remove_file(tmp.path().join("circuit.dat")).expect("rm");
    let err = run(&gen, &inputs(&dir)).unwrap_err();
    assert!(
        matches!(&err, SynthError::Generator { why, .. } if why.contains("circuit.dat is missing")),
        "{err}"
    );
}

#[test]
fn non_elf_files_are_refused() {
    let dir = fixture("bn254", "multi_public");
    for f in ["circuit.wasm", "input.json", "circuit.dat"] {
        let err = NativeGenerator::open(&dir.join(f)).unwrap_err();
        assert!(
            matches!(&err, SynthError::Generator { why, .. } if why.contains("not an ELF")),
            "{f}: {err}"
        );
    }
    assert!(matches!(
        NativeGenerator::open(&dir.join("no-such-file")),
        Err(SynthError::Generator { .. })
    ));
}
