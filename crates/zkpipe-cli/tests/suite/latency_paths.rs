//! Issue 17's user-facing switches: the checked-key cache (a key's point checks run once
//! per key file), `--constant-work` (proofs stay valid and snarkjs accepts them), and
//! `inspect`'s witness value classes.

use crate::common;
use common::*;
use std::path::Path;
use std::process::{Command, Output};

/// `zkpipe prove --timings` of a fixture with the checked-key cache in `cache`.
fn prove_with_cache(zkey: &Path, wtns: &Path, out: &Path, cache: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zkpipe"))
        .arg("prove")
        .args([
            zkey,
            wtns,
            &out.join("proof.json"),
            &out.join("public.json"),
        ])
        .args(["--timings", "--backend", "cpu"])
        .args(extra)
        .env("ZKPIPE_KEY_CACHE", cache)
        .output()
        .expect("zkpipe runs")
}

fn remembered(o: &Output) -> bool {
    String::from_utf8_lossy(&o.stderr).contains("passed before, remembered")
}

#[test]
fn key_checks_run_once_per_key_file_and_again_when_it_changes() {
    let f = fixture("bn254", "multi_public");
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("checked-keys");
    let (zkey, wtns) = (f.join("circuit.zkey"), f.join("witness.wtns"));

    let first = prove_with_cache(&zkey, &wtns, dir.path(), &cache, &[]);
    assert!(first.status.success(), "{}", text(&first));
    assert!(!remembered(&first), "{}", text(&first));
    let entries: Vec<_> = std::fs::read_dir(&cache).unwrap().collect();
    assert_eq!(entries.len(), 1, "one entry, for the batched checks");

    let second = prove_with_cache(&zkey, &wtns, dir.path(), &cache, &[]);
    assert!(second.status.success(), "{}", text(&second));
    assert!(remembered(&second), "{}", text(&second));
    // Stricter checks than were recorded run in full.
    let per_point = prove_with_cache(
        &zkey,
        &wtns,
        dir.path(),
        &cache,
        &["--key-checks", "per-point"],
    );
    assert!(per_point.status.success(), "{}", text(&per_point));
    assert!(!remembered(&per_point), "{}", text(&per_point));

    // The same key with one byte of a point changed is another file: checked again, and
    // its bad point found.
    let o = zkpipe(&["inspect".as_ref(), "--json".as_ref(), &zkey]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let h = v["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == 9)
        .expect("an H section");
    let at = h["offset"].as_u64().unwrap() as usize + 5;
    let mut bytes = std::fs::read(&zkey).unwrap();
    bytes[at] ^= 0x01; // the first H point's x: off the curve
    let changed = dir.path().join("changed.zkey");
    std::fs::write(&changed, &bytes).unwrap();
    let o = prove_with_cache(&changed, &wtns, dir.path(), &cache, &[]);
    assert!(
        !o.status.success(),
        "a corrupted key must not be remembered: {}",
        text(&o)
    );
    assert!(!remembered(&o));
    assert_one_line_error(&o, &["changed.zkey"]);

    // ZKPIPE_KEY_CACHE=off: checked every time, nothing written.
    let off = prove_with_cache(&zkey, &wtns, dir.path(), Path::new("off"), &[]);
    assert!(off.status.success() && !remembered(&off), "{}", text(&off));
}

#[test]
fn constant_work_proofs_verify_with_snarkjs() {
    for (curve, circuit) in FIXTURES {
        let dir = tempfile::tempdir().unwrap();
        let flags = ["--constant-work", "--backend", "cpu"];
        let (proof, public) = prove_fixture(dir.path(), curve, circuit, &flags);
        snarkjs_verifies(
            &fixture(curve, circuit).join("verification_key.json"),
            &std::fs::read_to_string(&proof).unwrap(),
            &std::fs::read_to_string(&public).unwrap(),
            dir.path(),
            &format!("{curve}-{circuit}-constant"),
        );
    }
}

#[test]
fn inspect_counts_witness_values_by_size() {
    let f = fixture("bn254", "poseidon");
    let o = zkpipe(&[
        "inspect".as_ref(),
        "--json".as_ref(),
        &f.join("witness.wtns"),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let classes = v["values"].as_object().expect("a values object");
    let total: u64 = classes.values().map(|c| c.as_u64().unwrap()).sum();
    assert_eq!(total, v["nWitness"].as_u64().unwrap());
    // Signal 0 is the constant 1.
    assert!(classes["one"].as_u64().unwrap() >= 1);
    let o = zkpipe(&["inspect".as_ref(), &f.join("witness.wtns")]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("values"),
        "{}",
        text(&o)
    );
}
