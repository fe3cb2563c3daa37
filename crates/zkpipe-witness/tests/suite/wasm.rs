//! circom's wasm generators on wasmtime against the witnesses snarkjs wrote for the
//! committed fixtures (byte for byte), and the life of a reused worker.

use std::path::{Path, PathBuf};
use zkpipe_witness::{Generator, Inputs, SynthError};

fn fixture(curve: &str, circuit: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(curve)
        .join(circuit)
}

fn inputs(json: &str) -> Inputs {
    Inputs::parse(json).unwrap()
}

const CURVES: [&str; 2] = ["bn254", "bls12-381"];

#[test]
fn witnesses_equal_snarkjs_ones() {
    for curve in CURVES {
        for circuit in ["multi_public", "poseidon", "assert"] {
            let dir = fixture(curve, circuit);
            let g = Generator::open(&dir.join("circuit.wasm")).unwrap();
            let i = inputs(&std::fs::read_to_string(dir.join("input.json")).unwrap());
            let mut lines = Vec::new();
            let w = g.calculate(&i, &mut |l| lines.push(l.to_owned())).unwrap();
            let want = std::fs::read(dir.join("witness.wtns")).unwrap();
            assert!(
                w.to_bytes() == want,
                "{curve}/{circuit}: witness differs from snarkjs's"
            );
            let want_log: &[&str] = if circuit == "assert" {
                &["a = 3 b = 5"]
            } else {
                &[]
            };
            assert_eq!(lines, want_log, "{curve}/{circuit}");
        }
    }
}

#[test]
fn a_worker_is_reusable_after_success_and_failure() {
    let dir = fixture("bn254", "assert");
    let g = Generator::open(&dir.join("circuit.wasm")).unwrap();
    let mut worker = g.worker().unwrap();
    let good = inputs(r#"{"a": 3, "b": 5}"#);
    let mut lines = Vec::new();
    let first = worker
        .calculate(&good, &mut |l| lines.push(l.to_owned()))
        .unwrap();
    let again = worker
        .calculate(&good, &mut |l| lines.push(l.to_owned()))
        .unwrap();
    assert_eq!(first, again);
    let e = worker
        .calculate(&inputs(r#"{"a": 5, "b": 3}"#), &mut |l| {
            lines.push(l.to_owned())
        })
        .unwrap_err();
    assert!(
        matches!(&e, SynthError::Circuit(m) if m == "Assert Failed. Error in template AssertLess_0 line: 12"),
        "{e:?}"
    );
    assert!(e.is_bad_input());
    let e = worker
        .calculate(&inputs(r#"{"a": 5}"#), &mut |_| {})
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "Not all inputs have been set. Only 1 out of 2"
    );
    // Other inputs give another witness; the same ones the same witness as before.
    let other = worker
        .calculate(&inputs(r#"{"a": 1, "b": 2}"#), &mut |_| {})
        .unwrap();
    assert_ne!(other, first);
    assert_eq!(worker.calculate(&good, &mut |_| {}).unwrap(), first);
    assert_eq!(lines, ["a = 3 b = 5", "a = 3 b = 5", "a = 5 b = 3"]);
}

#[test]
fn signal_errors_use_circom_runtime_words() {
    let dir = fixture("bls12-381", "multi_public");
    let g = Generator::open(&dir.join("circuit.wasm")).unwrap();
    let full = r#""a": 3, "b": 5, "c": 7, "x": 2, "y": 3"#;
    let cases = [
        // circom 2.2's getInputSignalSize answers 0 for a name it does not know, so an
        // extra signal is "too many values" (snarkjs says the same).
        (
            format!("{{{full}, \"k\": [1, 2, 3, 4], \"z\": 1}}"),
            "Too many values for input signal z",
        ),
        (
            format!("{{{full}, \"k\": [1, 2, 3]}}"),
            "Not enough values for input signal k",
        ),
        (
            format!("{{{full}, \"k\": [1, 2, 3, 4, 5]}}"),
            "Too many values for input signal k",
        ),
        (
            format!("{{{full}}}"),
            "Not all inputs have been set. Only 5 out of 9",
        ),
    ];
    for (json, want) in cases {
        let e = g.calculate(&inputs(&json), &mut |_| {}).unwrap_err();
        assert!(matches!(e, SynthError::Signal(_)), "{e:?}");
        assert_eq!(e.to_string(), want);
    }
}

#[test]
fn values_are_reduced_like_snarkjs() {
    // -1 is p - 1, 10p + 3 is 3: the witness must equal that of the reduced inputs.
    let dir = fixture("bn254", "assert");
    let g = Generator::open(&dir.join("circuit.wasm")).unwrap();
    let p = "21888242871839275222246405745257275088548364400416034343698204186575808495617";
    let a = g
        .calculate(
            &inputs(&format!(r#"{{"a": "-1", "b": "{p}3"}}"#)),
            &mut |_| {},
        )
        .unwrap();
    let p_minus_1 = "21888242871839275222246405745257275088548364400416034343698204186575808495616";
    let b = g
        .calculate(
            &inputs(&format!(r#"{{"a": "{p_minus_1}", "b": 3}}"#)),
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(a, b);
    let x = g
        .calculate(&inputs(r#"{"a": "0x01", "b": 1e1}"#), &mut |_| {})
        .unwrap();
    let y = g
        .calculate(&inputs(r#"{"b": "10", "a": true}"#), &mut |_| {})
        .unwrap();
    assert_eq!(x, y);
}

#[test]
fn generator_is_recognised_by_content() {
    let dir = tempfile_dir();
    let cases: [(&str, &[u8], &str); 4] = [
        ("empty", b"", "it is empty"),
        ("key.zkey", b"zkey\x01\0\0\0", "it is a zkey"),
        ("input.json", b"{\"a\": 1}", "it looks like JSON"),
        (
            "junk.bin",
            b"\x01\x02\x03\x04\x05",
            "unknown content starting with bytes 01 02 03 04",
        ),
    ];
    for (name, bytes, want) in cases {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        let e = Generator::open(&p).err().unwrap();
        assert!(matches!(e, SynthError::Generator { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(msg.starts_with(&p.display().to_string()), "{msg}");
        assert!(msg.contains("not a witness generator"), "{msg}");
        assert!(msg.contains(want), "{msg} should say {want}");
    }
    // A wasm module that is not circom's.
    let p = dir.join("other.wasm");
    std::fs::write(&p, b"\0asm\x01\0\0\0").unwrap();
    let e = Generator::open(&p).err().unwrap();
    assert!(
        e.to_string().contains("unsupported circom version 1"),
        "{e}"
    );
    let e = Generator::open(&dir.join("missing.wasm")).err().unwrap();
    assert!(matches!(e, SynthError::Generator { .. }), "{e:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn shareable_across_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Generator>();
    send::<zkpipe_witness::Worker>();
}

/// A fresh directory under the target dir (no tempfile dependency for one test).
fn tempfile_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("zkpipe-witness-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}
