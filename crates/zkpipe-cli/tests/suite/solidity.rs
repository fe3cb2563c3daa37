//! On-chain verification in a real EVM: for every BN254 fixture, zkpipe's Solidity verifier
//! (from the zkey) is compiled with solc and deployed in an in-memory EVM
//! (`tests/fixtures/scripts/evm-verify.js`, @ethereumjs/vm), and `verifyProof` is called
//! with the calldata `zkpipe export soliditycalldata` prints. It accepts zkpipe's proof and
//! snarkjs's, rejects tampered ones; zkpipe's calldata is snarkjs's byte for byte, and
//! snarkjs's own verifier contract accepts it. Each contract is compiled once.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// BN254's scalar field modulus r.
const R: &str = "21888242871839275222246405745257275088548364400416034343698204186575808495617";

/// Runs zkpipe with string and path arguments.
fn zk(args: &[&dyn AsRef<Path>]) -> std::process::Output {
    let args: Vec<&Path> = args.iter().map(|a| a.as_ref()).collect();
    zkpipe(&args)
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn write_json(p: &Path, v: &serde_json::Value) -> PathBuf {
    std::fs::write(p, serde_json::to_vec(v).unwrap()).unwrap();
    p.to_path_buf()
}

/// Sum of two decimal strings.
fn add_decimal(a: &str, b: &str) -> String {
    let (a, b): (Vec<u8>, Vec<u8>) = (
        a.bytes().rev().map(|d| d - b'0').collect(),
        b.bytes().rev().map(|d| d - b'0').collect(),
    );
    let mut out = Vec::new();
    let mut carry = 0;
    for i in 0..a.len().max(b.len()) {
        let s = a.get(i).unwrap_or(&0) + b.get(i).unwrap_or(&0) + carry;
        out.push(b'0' + s % 10);
        carry = s / 10;
    }
    if carry > 0 {
        out.push(b'0' + carry);
    }
    out.reverse();
    String::from_utf8(out).unwrap()
}

/// `zkpipe export soliditycalldata`'s stdout, written to `out` for the EVM script.
fn zkpipe_calldata(public: &Path, proof: &Path, out: &Path) -> String {
    let o = zk(&[&"export", &"soliditycalldata", &public, &proof]);
    assert!(o.status.success(), "calldata: {}", text(&o));
    assert!(
        o.stderr.is_empty(),
        "calldata wrote to stderr: {}",
        text(&o)
    );
    std::fs::write(out, &o.stdout).unwrap();
    String::from_utf8(o.stdout).unwrap()
}

/// `snarkjs zkey export soliditycalldata`'s stdout.
fn snarkjs_calldata(public: &Path, proof: &Path) -> String {
    let o = snarkjs(&[
        "zkey".as_ref(),
        "export".as_ref(),
        "soliditycalldata".as_ref(),
        public,
        proof,
    ]);
    assert!(o.status.success(), "snarkjs calldata: {}", text(&o));
    String::from_utf8(o.stdout).unwrap()
}

/// Deploys `contract` once and calls verifyProof with each calldata file.
fn evm_verify(contract: &Path, calldata: &[&Path]) -> Vec<bool> {
    let script = fixtures().join("scripts/evm-verify.js");
    let o = Command::new("node")
        .arg(&script)
        .arg(contract)
        .args(calldata)
        .output()
        .expect("node runs");
    assert!(
        o.status.success(),
        "evm-verify {}: {}",
        contract.display(),
        text(&o)
    );
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| match l {
            "true" => true,
            "false" => false,
            other => panic!("evm-verify printed {other:?}"),
        })
        .collect()
}

fn on_chain(circuit: &str) {
    let f = fixture("bn254", circuit);
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name);

    // The contract, from the zkey and from the verification key: the same text.
    let ours = d("Verifier.sol");
    let o = zk(&[
        &"export",
        &"solidityverifier",
        &f.join("circuit.zkey"),
        &ours,
    ]);
    assert!(o.status.success(), "{circuit}: {}", text(&o));
    let from_vk = d("FromVk.sol");
    let o = zk(&[
        &"export",
        &"solidityverifier",
        &f.join("verification_key.json"),
        &from_vk,
    ]);
    assert!(o.status.success(), "{circuit}: {}", text(&o));
    assert_eq!(
        std::fs::read(&ours).unwrap(),
        std::fs::read(&from_vk).unwrap()
    );

    // A zkpipe proof.
    let (proof, public) = (d("proof.json"), d("public.json"));
    let o = zk(&[
        &"prove",
        &f.join("circuit.zkey"),
        &f.join("witness.wtns"),
        &proof,
        &public,
    ]);
    assert!(o.status.success(), "{circuit}: prove: {}", text(&o));

    // Calldata: zkpipe's text is snarkjs's, for zkpipe's proof and for snarkjs's.
    let cd_zkpipe = d("zkpipe.calldata");
    let text_zk = zkpipe_calldata(&public, &proof, &cd_zkpipe);
    assert_eq!(text_zk, snarkjs_calldata(&public, &proof), "{circuit}");
    let cd_snarkjs = d("snarkjs.calldata");
    let text_sj = zkpipe_calldata(&f.join("public.json"), &f.join("proof.json"), &cd_snarkjs);
    assert_eq!(
        text_sj,
        snarkjs_calldata(&f.join("public.json"), &f.join("proof.json")),
        "{circuit}"
    );
    // rapidsnark's shape (no `curve`) gives the same calldata.
    let mut p = json(&f.join("proof.json"));
    p.as_object_mut().unwrap().remove("curve");
    let curveless = write_json(&d("curveless.json"), &p);
    assert_eq!(
        zkpipe_calldata(&f.join("public.json"), &curveless, &d("curveless.calldata")),
        text_sj
    );

    // Tampered: one coordinate of π_A; B's Fq2 components in JSON order (not swapped); a
    // public signal + 1; a public signal + r (the same value mod r: the field check).
    let p = json(&proof);
    let mut t = p.clone();
    t["pi_a"][0] = add_decimal(p["pi_a"][0].as_str().unwrap(), "1").into();
    let bad_a = d("bad_a.calldata");
    zkpipe_calldata(&public, &write_json(&d("bad_a.json"), &t), &bad_a);
    let mut t = p.clone();
    for row in 0..2 {
        t["pi_b"][row] = serde_json::json!([p["pi_b"][row][1], p["pi_b"][row][0]]);
    }
    let unswapped_b = d("unswapped_b.calldata");
    zkpipe_calldata(
        &public,
        &write_json(&d("unswapped_b.json"), &t),
        &unswapped_b,
    );
    let pubs = json(&public);
    let last = pubs.as_array().unwrap().len() - 1;
    let mut t = pubs.clone();
    t[last] = add_decimal(pubs[last].as_str().unwrap(), "1").into();
    let bad_public = d("bad_public.calldata");
    zkpipe_calldata(&write_json(&d("bad_public.json"), &t), &proof, &bad_public);
    let mut t = pubs.clone();
    t[0] = add_decimal(pubs[0].as_str().unwrap(), R).into();
    let public_plus_r = d("public_plus_r.calldata");
    zkpipe_calldata(&write_json(&d("plus_r.json"), &t), &proof, &public_plus_r);

    let got = evm_verify(
        &ours,
        &[
            &cd_zkpipe,
            &cd_snarkjs,
            &bad_a,
            &unswapped_b,
            &bad_public,
            &public_plus_r,
        ],
    );
    assert_eq!(
        got,
        [true, true, false, false, false, false],
        "{circuit}: zkpipe's verifier on [zkpipe proof, snarkjs proof, bad A, unswapped B, \
         bad public, public + r]"
    );

    // snarkjs's own verifier takes zkpipe's calldata, and rejects what ours rejects.
    let theirs = d("SnarkjsVerifier.sol");
    let o = snarkjs(&[
        "zkey".as_ref(),
        "export".as_ref(),
        "solidityverifier".as_ref(),
        &f.join("circuit.zkey"),
        &theirs,
    ]);
    assert!(o.status.success(), "{circuit}: snarkjs: {}", text(&o));
    let got = evm_verify(&theirs, &[&cd_zkpipe, &bad_a, &bad_public, &public_plus_r]);
    assert_eq!(
        got,
        [true, false, false, false],
        "{circuit}: snarkjs's verifier on [zkpipe proof, bad A, bad public, public + r]"
    );
}

#[test]
fn verifier_in_evm_multi_public() {
    on_chain("multi_public");
}

#[test]
fn verifier_in_evm_poseidon() {
    on_chain("poseidon");
}

#[test]
fn bls12_381_is_refused_with_one_line_and_no_output() {
    let f = fixture("bls12-381", "multi_public");
    let dir = tempfile::tempdir().unwrap();
    for key in ["circuit.zkey", "verification_key.json"] {
        let out = dir.path().join("Verifier.sol");
        let o = zk(&[&"export", &"solidityverifier", &f.join(key), &out]);
        assert_one_line_error(&o, &[key, "BLS12-381", "EVM", "BN254"]);
        assert!(!out.exists(), "{key}: an output was written");
    }
    let o = zk(&[
        &"export",
        &"soliditycalldata",
        &f.join("public.json"),
        &f.join("proof.json"),
    ]);
    assert_one_line_error(&o, &["proof.json", "BLS12-381", "EVM"]);
    assert!(o.stdout.is_empty());
}

#[test]
fn calldata_arguments_in_the_wrong_order_are_named() {
    let f = fixture("bn254", "poseidon");
    let o = zk(&[
        &"export",
        &"soliditycalldata",
        &f.join("proof.json"),
        &f.join("public.json"),
    ]);
    assert_one_line_error(
        &o,
        &["proof.json", "holds proof", "<public.json> <proof.json>"],
    );
}
