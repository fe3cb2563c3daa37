//! `Inputs::parse` + `normalize` against snarkjs itself: each input.json below goes
//! through node with snarkjs 0.7.6's own functions (`JSON.parse`, ffjavascript's
//! `unstringifyBigInts`, `Object.keys`, circom_runtime's `flatArray` and `normalize`) and
//! must give the same signals, in the same order, with the same field elements — or fail
//! in both. Needs node and `tests/fixtures/node_modules` (scripts/install-snarkjs.sh).

use num_bigint::BigUint;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use zkpipe_formats::curve::{le_to_decimal, CurveId};
use zkpipe_witness::inputs::normalize;
use zkpipe_witness::Inputs;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// What snarkjs makes of an input.json before handing values to the circuit.
const NODE: &str = r#"
const { utils } = require("ffjavascript");
(async () => {
  const { flatArray, normalize } = await import(process.cwd() + "/node_modules/circom_runtime/js/utils.js");
  const prime = BigInt(process.argv[1]);
  const cases = JSON.parse(require("fs").readFileSync(0, "utf8"));
  const out = cases.map((text) => {
    try {
      const input = utils.unstringifyBigInts(JSON.parse(text));
      return Object.keys(input).map((k) => [k, flatArray(input[k]).map((v) => normalize(v, prime).toString())]);
    } catch (e) {
      return e.constructor.name;
    }
  });
  console.log(JSON.stringify(out));
})();
"#;

/// Runs the cases through node; per case, the signals or the name of the error thrown.
fn snarkjs(cases: &[&str], prime: &str) -> Vec<serde_json::Value> {
    assert!(
        fixtures().join("node_modules/ffjavascript").exists(),
        "snarkjs is not installed: run scripts/install-snarkjs.sh"
    );
    let mut child = Command::new("node")
        .args(["-e", NODE, prime])
        .current_dir(fixtures())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("node runs");
    let input = serde_json::to_string(cases).unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "node failed");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// What zkpipe makes of them, in the same shape.
fn zkpipe(text: &str, prime: &BigUint) -> serde_json::Value {
    match Inputs::parse(text) {
        Ok(i) => i
            .signals
            .iter()
            .map(|(k, v)| {
                let v: Vec<String> = v.iter().map(|x| normalize(x, prime).to_string()).collect();
                serde_json::json!([k, v])
            })
            .collect(),
        Err(e) => serde_json::Value::String(format!("error: {e}")),
    }
}

/// Accepted by both, or refused by both.
const SAME: &[&str] = &[
    r#"{"a": "3", "b": "5", "c": "7", "x": "2", "y": "3", "k": ["11", "13", "17", "19"]}"#,
    r#"{"dec": "42", "neg": "-5", "plus": "+5", "hex": "0xff", "HEX": "0XFF", "oct": "0o17", "bin": "0b101"}"#,
    r#"{"blank": " ", "empty": "", "padded": " 12\n", "nbsp": "\u00a012\ufeff", "lead0": "007"}"#,
    r#"{"num": 7, "negnum": -7, "exp": 1.5e1, "zero": -0, "big": 1e23, "lost": 9007199254740993, "huge": 1.7976931348623157e308}"#,
    r#"{"t": true, "f": false}"#,
    r#"{"p": "21888242871839275222246405745257275088548364400416034343698204186575808495617", "p1": "-1", "pm": "-21888242871839275222246405745257275088548364400416034343698204186575808495618"}"#,
    r#"{"bls": "0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001", "over": "0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000002"}"#,
    r#"{"b": 1, "10": 2, "2": 3, "a": 4, "b": 5, "02": 6, "4294967295": 7, "4294967294": 8}"#,
    r#"{"m": [["1", 2], [], [[3]], "0x4"], "e": []}"#,
    r#"{"__proto__": 5, "a": 1}"#,
    r#"{"s\u00e9": 1, "\ud83d\ude00": 2}"#,
    r#"{}"#,
    // Refused by both.
    r#"{"a": 1.5}"#,
    r#"{"a": 1e400}"#,
    r#"{"a": "abc"}"#,
    r#"{"a": "1.0"}"#,
    r#"{"a": "1e3"}"#,
    r#"{"a": "-0x10"}"#,
    r#"{"a": "1_000"}"#,
    r#"{"a": "\u0085 1"}"#,
    r#"{"a": null}"#,
    r#"{"k": ["1", ["2", "x"]]}"#,
    r#"{"k": [1, null]}"#,
    r#"{"a": 1,}"#,
    r#"{"a": 01}"#,
    r#"null"#,
    "",
];

/// Nested objects: snarkjs 0.7.6 throws (BigInt of an object), zkpipe qualifies the names
/// as circom's own witness_calculator.js does. The one intended difference.
const ZKPIPE_ONLY: &[&str] = &[r#"{"s": {"x": 1}}"#, r#"{"l": [{"x": 5}, {"x": 6}]}"#];

#[test]
fn inputs_read_as_snarkjs_reads_them() {
    for curve in CurveId::ALL {
        let prime = le_to_decimal(&curve.r_le());
        let p: BigUint = prime.parse().unwrap();
        let theirs = snarkjs(SAME, &prime);
        for (case, want) in SAME.iter().zip(&theirs) {
            let got = zkpipe(case, &p);
            match want {
                serde_json::Value::String(thrown) => assert!(
                    got.is_string(),
                    "{curve:?} {case}: snarkjs throws {thrown}, zkpipe gives {got}"
                ),
                _ => assert_eq!(&got, want, "{curve:?} {case}"),
            }
        }
        let theirs = snarkjs(ZKPIPE_ONLY, &prime);
        for (case, want) in ZKPIPE_ONLY.iter().zip(&theirs) {
            assert!(want.is_string(), "{case}: snarkjs now accepts it: {want}");
            assert!(zkpipe(case, &p).is_array(), "{case}");
        }
    }
}
