//! `zkpipe wtns calculate` and `zkpipe fullprove` against snarkjs: the same witness bytes
//! as the committed ones and as `snarkjs wtns calculate` run here on the same inputs, the
//! same `log()` output, proofs snarkjs accepts; each bad input fails on one line and
//! writes nothing.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};

/// The circuits with a committed `circuit.wasm`: the proving fixtures and `assert`.
fn wasm_fixtures() -> Vec<(&'static str, &'static str)> {
    let mut all = FIXTURES.to_vec();
    all.extend([("bn254", "assert"), ("bls12-381", "assert")]);
    all
}

fn wtns_calculate(wasm: &Path, input: &Path, out: &Path) -> std::process::Output {
    zkpipe(&["wtns".as_ref(), "calculate".as_ref(), wasm, input, out])
}

/// Writes `json` as a file in `dir`.
fn input(dir: &Path, name: &str, json: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, json).unwrap();
    p
}

#[test]
fn wtns_calculate_is_byte_identical_to_snarkjs() {
    for (curve, circuit) in wasm_fixtures() {
        let f = fixture(curve, circuit);
        let dir = tempfile::tempdir().unwrap();
        let (ours, theirs) = (dir.path().join("ours.wtns"), dir.path().join("theirs.wtns"));
        let wasm = f.join("circuit.wasm");
        let o = wtns_calculate(&wasm, &f.join("input.json"), &ours);
        assert!(o.status.success(), "{curve}/{circuit}: {}", text(&o));
        let ours_bytes = std::fs::read(&ours).unwrap();
        assert!(
            ours_bytes == std::fs::read(f.join("witness.wtns")).unwrap(),
            "{curve}/{circuit}: differs from the committed witness.wtns"
        );
        let s = snarkjs(&[
            "wtns".as_ref(),
            "calculate".as_ref(),
            &wasm,
            &f.join("input.json"),
            &theirs,
        ]);
        assert!(
            s.status.success(),
            "{curve}/{circuit}: snarkjs: {}",
            text(&s)
        );
        assert!(
            ours_bytes == std::fs::read(&theirs).unwrap(),
            "{curve}/{circuit}: differs from snarkjs wtns calculate"
        );
        // circom log() lines: what snarkjs prints on stdout, we print on stdout.
        assert_eq!(o.stdout, s.stdout, "{curve}/{circuit}: log output");
        // circom's native generator, recognised by its content, gives the same bytes.
        let native = dir.path().join("native.wtns");
        let o = wtns_calculate(&f.join("circuit"), &f.join("input.json"), &native);
        assert!(o.status.success(), "{curve}/{circuit} native: {}", text(&o));
        assert!(
            std::fs::read(&native).unwrap() == ours_bytes,
            "{curve}/{circuit}: the native generator's witness differs from snarkjs's"
        );
    }
}

#[test]
fn a_failed_assert_in_the_native_generator_names_template_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let i = input(dir.path(), "input.json", r#"{"a": 5, "b": 3}"#);
    let out = dir.path().join("w.wtns");
    let o = wtns_calculate(&fixture("bn254", "assert").join("circuit"), &i, &out);
    assert_one_line_error(&o, &["Failed assert in template", "line"]);
    assert!(!out.exists(), "a witness was written");
    // Its log() line comes first, as with the wasm.
    assert!(
        String::from_utf8_lossy(&o.stdout).starts_with("a = 5 b = 3"),
        "{}",
        text(&o)
    );
}

#[test]
fn every_value_form_gives_snarkjs_witness() {
    // Negative, hex, numbers, booleans, nested arrays, keys out of order: reduced mod p.
    let json = r#"{"k": [[11, "0xd"], [true, "-19"]], "y": -3, "x": "0b10", "c": 7e0,
                   "b": "21888242871839275222246405745257275088548364400416034343698204186575808495622",
                   "a": " 3 "}"#;
    for curve in ["bn254", "bls12-381"] {
        let f = fixture(curve, "multi_public");
        let dir = tempfile::tempdir().unwrap();
        let i = input(dir.path(), "input.json", json);
        let (ours, theirs) = (dir.path().join("ours.wtns"), dir.path().join("theirs.wtns"));
        let o = wtns_calculate(&f.join("circuit.wasm"), &i, &ours);
        assert!(o.status.success(), "{curve}: {}", text(&o));
        let s = snarkjs(&[
            "wtns".as_ref(),
            "calculate".as_ref(),
            &f.join("circuit.wasm"),
            &i,
            &theirs,
        ]);
        assert!(s.status.success(), "{curve}: snarkjs: {}", text(&s));
        assert!(
            std::fs::read(&ours).unwrap() == std::fs::read(&theirs).unwrap(),
            "{curve}: differs from snarkjs"
        );
    }
}

#[test]
fn fullprove_proofs_verify_with_snarkjs_and_zkpipe() {
    // With circom's wasm and with its native generator, for every fixture.
    for (curve, circuit) in FIXTURES {
        for generator in ["circuit.wasm", "circuit"] {
            let what = format!("{curve}/{circuit} ({generator})");
            let f = fixture(curve, circuit);
            let dir = tempfile::tempdir().unwrap();
            let (proof, public) = (
                dir.path().join("proof.json"),
                dir.path().join("public.json"),
            );
            let o = zkpipe(&[
                "fullprove".as_ref(),
                &f.join("input.json"),
                &f.join(generator),
                &f.join("circuit.zkey"),
                &proof,
                &public,
            ]);
            assert!(o.status.success(), "{what}: {}", text(&o));
            let json = |p: &Path| -> serde_json::Value {
                serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
            };
            assert_eq!(json(&public), json(&f.join("public.json")), "{what}");
            let vk = f.join("verification_key.json");
            let s = snarkjs(&["groth16".as_ref(), "verify".as_ref(), &vk, &public, &proof]);
            assert!(
                s.status.success() && text(&s).contains("OK"),
                "{what}: snarkjs verify: {}",
                text(&s)
            );
            let v = zkpipe(&["verify".as_ref(), &vk, &public, &proof]);
            assert!(v.status.success(), "{what}: {}", text(&v));
        }
    }
}

/// Runs `wtns calculate` on the bn254 `circuit` with `json`; it must fail with one line
/// holding every needle and leave no witness.
fn calculate_fails(circuit: &str, json: &str, needles: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let i = input(dir.path(), "input.json", json);
    let out = dir.path().join("witness.wtns");
    let o = wtns_calculate(&fixture("bn254", circuit).join("circuit.wasm"), &i, &out);
    assert_one_line_error(&o, needles);
    assert!(!out.exists(), "a failed run wrote {}", out.display());
    o
}

const MULTI: &str = r#""a": 3, "b": 5, "c": 7, "x": 2, "y": 3"#;

#[test]
fn missing_signal() {
    calculate_fails(
        "multi_public",
        &format!("{{{MULTI}}}"),
        &[
            "input.json",
            "circuit.wasm",
            "Not all inputs have been set. Only 5 out of 9",
        ],
    );
}

#[test]
fn extra_signal() {
    calculate_fails(
        "multi_public",
        &format!(r#"{{{MULTI}, "k": [1, 2, 3, 4], "z": 1}}"#),
        // circom 2.2's module gives an unknown name size 0: snarkjs says exactly this.
        &["Too many values for input signal z"],
    );
}

#[test]
fn wrong_array_length() {
    calculate_fails(
        "multi_public",
        &format!(r#"{{{MULTI}, "k": [1, 2, 3]}}"#),
        &["Not enough values for input signal k"],
    );
    calculate_fails(
        "multi_public",
        &format!(r#"{{{MULTI}, "k": [1, 2, 3, 4, 5]}}"#),
        &["Too many values for input signal k"],
    );
}

#[test]
fn non_numeric_value() {
    calculate_fails(
        "multi_public",
        &format!(r#"{{{MULTI}, "k": [1, 2, "three", 4]}}"#),
        &["input.json: bad input k[2]: cannot convert \"three\" to a BigInt"],
    );
    calculate_fails(
        "multi_public",
        r#"{"a": 1.5}"#,
        &["bad input a: the number 1.5 cannot be converted to a BigInt because it is not an integer"],
    );
    calculate_fails("multi_public", "[1, 2]", &["expected a JSON object"]);
    calculate_fails("multi_public", "{\"a\": 1", &["not valid JSON"]);
}

#[test]
fn failed_assert_prints_the_log_line_first() {
    let o = calculate_fails(
        "assert",
        r#"{"a": 5, "b": 3}"#,
        &["Assert Failed. Error in template AssertLess_0 line: 12"],
    );
    // snarkjs prints the same line on stdout before failing (checked here too).
    assert_eq!(String::from_utf8_lossy(&o.stdout), "a = 5 b = 3\n");
    let dir = tempfile::tempdir().unwrap();
    let i = input(dir.path(), "input.json", r#"{"a": 5, "b": 3}"#);
    let s = snarkjs(&[
        "wtns".as_ref(),
        "calculate".as_ref(),
        &fixture("bn254", "assert").join("circuit.wasm"),
        &i,
        &dir.path().join("w.wtns"),
    ]);
    assert!(!s.status.success());
    let stdout = String::from_utf8_lossy(&s.stdout);
    assert!(
        stdout.starts_with("a = 5 b = 3\n"),
        "snarkjs printed {stdout:?}"
    );
    assert!(stdout.contains("Assert Failed. Error in template AssertLess_0 line: 12"));
}

#[test]
fn neither_wasm_nor_elf() {
    let dir = tempfile::tempdir().unwrap();
    let f = fixture("bn254", "multi_public");
    let out = dir.path().join("witness.wtns");
    // The zkey in the generator's place.
    let o = wtns_calculate(&f.join("circuit.zkey"), &f.join("input.json"), &out);
    assert_one_line_error(
        &o,
        &["circuit.zkey", "not a witness generator", "it is a zkey"],
    );
    assert!(!out.exists());
    let script = input(dir.path(), "gen.sh", "#!/bin/sh\necho hi\n");
    let o = wtns_calculate(&script, &f.join("input.json"), &out);
    assert_one_line_error(&o, &["gen.sh", "not a witness generator", "it is a script"]);
    assert!(!out.exists());
}

#[test]
fn fullprove_with_a_wasm_of_the_other_field() {
    let dir = tempfile::tempdir().unwrap();
    let (proof, public) = (
        dir.path().join("proof.json"),
        dir.path().join("public.json"),
    );
    // An existing output is left as it was.
    std::fs::write(&proof, "keep").unwrap();
    let o = zkpipe(&[
        "fullprove".as_ref(),
        &fixture("bn254", "multi_public").join("input.json"),
        &fixture("bls12-381", "multi_public").join("circuit.wasm"),
        &fixture("bn254", "multi_public").join("circuit.zkey"),
        &proof,
        &public,
    ]);
    assert_one_line_error(
        &o,
        &[
            "the witness of",
            "curve mismatch: witness is for",
            "bls12-381/multi_public/circuit.wasm",
        ],
    );
    assert_eq!(std::fs::read_to_string(&proof).unwrap(), "keep");
    assert!(!public.exists());
}

#[test]
fn fullprove_with_bad_inputs_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (proof, public) = (
        dir.path().join("proof.json"),
        dir.path().join("public.json"),
    );
    let i = input(dir.path(), "input.json", &format!("{{{MULTI}}}"));
    let f = fixture("bn254", "multi_public");
    let o = zkpipe(&[
        "fullprove".as_ref(),
        &i,
        &f.join("circuit.wasm"),
        &f.join("circuit.zkey"),
        &proof,
        &public,
    ]);
    assert_one_line_error(&o, &["Not all inputs have been set"]);
    assert!(!proof.exists() && !public.exists());
}

#[test]
fn a_compiled_module_is_cached_reused_and_a_bad_cache_file_only_costs_a_compile() {
    let f = fixture("bn254", "poseidon");
    let expected = std::fs::read(f.join("witness.wtns")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let run = |cache_env: &Path| {
        let out = dir.path().join("w.wtns");
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_zkpipe"))
            .args(["wtns", "calculate"])
            .args([f.join("circuit.wasm"), f.join("input.json"), out.clone()])
            .env("ZKPIPE_WASM_CACHE", cache_env)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        assert!(std::fs::read(&out).unwrap() == expected, "witness differs");
    };
    let files = || -> Vec<PathBuf> {
        std::fs::read_dir(&cache)
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default()
    };
    // First run: compiled and stored, one file, private to the user.
    run(&cache);
    let stored = files();
    assert_eq!(stored.len(), 1, "{stored:?}");
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let mode = std::fs::metadata(&cache).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "cache directory mode {mode:o}");
    let first = std::fs::metadata(&stored[0]).unwrap();
    // Second run: read back, not written again.
    run(&cache);
    let again = std::fs::metadata(&stored[0]).unwrap();
    assert_eq!(
        (first.ino(), first.mtime_nsec()),
        (again.ino(), again.mtime_nsec())
    );
    // A damaged file (garbage, then a truncated artifact) is compiled over, not trusted.
    let good = std::fs::read(&stored[0]).unwrap();
    for bad in [
        b"not a compiled module".to_vec(),
        good[..good.len() / 2].to_vec(),
    ] {
        std::fs::write(&stored[0], &bad).unwrap();
        run(&cache);
        assert!(std::fs::read(&stored[0]).unwrap() == good, "not rewritten");
    }
    // "off": nothing is written (not even a directory named "off" in the working directory).
    let off = dir.path().join("off");
    run(Path::new("off"));
    assert!(!off.exists() && files().len() == 1);
}
