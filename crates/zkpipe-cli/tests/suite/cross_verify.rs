//! Cross-verification with the reference client: snarkjs verifies zkpipe's proofs,
//! zkpipe verifies snarkjs's, for every fixture of both curves; tampering is caught by both.

use crate::common;
use common::*;
use std::path::Path;

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn write_json(p: &Path, v: &serde_json::Value) {
    std::fs::write(p, serde_json::to_vec(v).unwrap()).unwrap();
}

#[test]
fn snarkjs_accepts_zkpipe_proofs_and_rejects_tampered_ones() {
    for (curve, circuit) in FIXTURES {
        let dir = tempfile::tempdir().unwrap();
        let (proof, public) = prove_fixture(dir.path(), curve, circuit, &[]);
        let f = fixture(curve, circuit);
        let vk = f.join("verification_key.json");
        assert_eq!(
            json(&public),
            json(&f.join("public.json")),
            "{curve}/{circuit} public signals"
        );
        let p = json(&proof);
        assert_eq!(p["curve"], json(&f.join("proof.json"))["curve"]);

        let o = snarkjs(&["groth16".as_ref(), "verify".as_ref(), &vk, &public, &proof]);
        assert!(
            o.status.success() && text(&o).contains("OK"),
            "{curve}/{circuit}: snarkjs: {}",
            text(&o)
        );
        let o = zkpipe(&["verify".as_ref(), &vk, &public, &proof]);
        assert!(
            o.status.success(),
            "{curve}/{circuit}: zkpipe verify: {}",
            text(&o)
        );

        // Swap π_A and π_C: still valid points, no longer a valid proof.
        let mut t = p.clone();
        t["pi_a"] = p["pi_c"].clone();
        t["pi_c"] = p["pi_a"].clone();
        let tampered = dir.path().join("tampered.json");
        write_json(&tampered, &t);
        let o = snarkjs(&[
            "groth16".as_ref(),
            "verify".as_ref(),
            &vk,
            &public,
            &tampered,
        ]);
        assert!(
            !text(&o).contains("OK!"),
            "{curve}/{circuit}: snarkjs accepted a tampered proof"
        );
        let o = zkpipe(&["verify".as_ref(), &vk, &public, &tampered]);
        assert_one_line_error(&o, &["tampered.json", "INVALID"]);

        // Same proof, a different public signal.
        let mut pubs = json(&public);
        let first = pubs[0]
            .as_str()
            .unwrap()
            .parse::<u128>()
            .map(|v| v + 1)
            .unwrap_or(7);
        pubs[0] = serde_json::Value::String(first.to_string());
        let wrong_public = dir.path().join("wrong_public.json");
        write_json(&wrong_public, &pubs);
        let o = zkpipe(&["verify".as_ref(), &vk, &wrong_public, &proof]);
        assert_one_line_error(&o, &["INVALID"]);
        let o = snarkjs(&[
            "groth16".as_ref(),
            "verify".as_ref(),
            &vk,
            &wrong_public,
            &proof,
        ]);
        assert!(
            !text(&o).contains("OK!"),
            "{curve}/{circuit}: snarkjs accepted a wrong public input"
        );
    }
}

#[test]
fn zkpipe_accepts_snarkjs_proofs_with_vk_json_or_zkey() {
    for (curve, circuit) in FIXTURES {
        let f = fixture(curve, circuit);
        for key in ["verification_key.json", "circuit.zkey"] {
            let o = zkpipe(&[
                "verify".as_ref(),
                &f.join(key),
                &f.join("public.json"),
                &f.join("proof.json"),
            ]);
            assert!(
                o.status.success(),
                "{curve}/{circuit} with {key}: {}",
                text(&o)
            );
            assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "OK");
        }
    }
}

/// rapidsnark writes proof.json without a `curve` field (and its keys in alphabetical
/// order): the curve is the key's. A `curve` that names the other curve still fails.
#[test]
fn zkpipe_accepts_proofs_without_curve_field_and_refuses_a_wrong_one() {
    for (curve, circuit) in FIXTURES {
        let f = fixture(curve, circuit);
        let dir = tempfile::tempdir().unwrap();
        let mut p = json(&f.join("proof.json"));
        let obj = p.as_object_mut().unwrap();
        obj.remove("curve");
        let sorted: std::collections::BTreeMap<_, _> = obj.clone().into_iter().collect();
        let curveless = dir.path().join("rapidsnark_proof.json");
        std::fs::write(&curveless, serde_json::to_vec(&sorted).unwrap()).unwrap();
        assert!(!std::fs::read_to_string(&curveless)
            .unwrap()
            .contains("curve"));
        for key in ["verification_key.json", "circuit.zkey"] {
            let o = zkpipe(&[
                "verify".as_ref(),
                &f.join(key),
                &f.join("public.json"),
                &curveless,
            ]);
            assert!(
                o.status.success(),
                "{curve}/{circuit} with {key}: {}",
                text(&o)
            );
            assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "OK");
        }

        let other = if curve == "bn254" {
            "bls12381"
        } else {
            "bn128"
        };
        p["curve"] = other.into();
        let wrong = dir.path().join("wrong_curve.json");
        write_json(&wrong, &p);
        for key in ["verification_key.json", "circuit.zkey"] {
            let o = zkpipe(&[
                "verify".as_ref(),
                &f.join(key),
                &f.join("public.json"),
                &wrong,
            ]);
            assert_one_line_error(&o, &["wrong_curve.json", "curve mismatch"]);
        }
    }
}

#[test]
fn exported_vk_equals_snarkjs_export() {
    for (curve, circuit) in FIXTURES {
        let f = fixture(curve, circuit);
        let dir = tempfile::tempdir().unwrap();
        for cmd in [&["export-vk"][..], &["export", "verificationkey"]] {
            let out = dir.path().join("vk.json");
            let mut args: Vec<&std::path::Path> = cmd.iter().map(|c| c.as_ref()).collect();
            let zkey = f.join("circuit.zkey");
            args.extend([zkey.as_path(), out.as_path()]);
            let o = zkpipe(&args);
            assert!(o.status.success(), "{cmd:?}: {}", text(&o));
            assert_eq!(
                json(&out),
                json(&f.join("verification_key.json")),
                "{curve}/{circuit} {cmd:?}"
            );
        }
    }
}

#[test]
fn check_accepts_good_witness_and_names_the_failing_constraint() {
    for curve in ["bn254", "bls12-381"] {
        let f = fixture(curve, "multi_public");
        let o = zkpipe(&[
            "check".as_ref(),
            &f.join("circuit.r1cs"),
            &f.join("witness.wtns"),
        ]);
        assert!(o.status.success(), "{}", text(&o));
        let o = zkpipe(&[
            "check".as_ref(),
            &f.join("circuit.r1cs"),
            &f.join("bad_witness.wtns"),
        ]);
        assert_one_line_error(&o, &["bad_witness.wtns", "constraint", "not satisfied"]);
    }
}
