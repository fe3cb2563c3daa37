//! `setup --dev` and `synth`: keys snarkjs accepts, satisfiable circuits, clear errors.

use crate::common;
use common::*;
use std::path::Path;

fn ok(o: &std::process::Output, what: &str) {
    assert!(o.status.success(), "{what}: {}", text(o));
}

#[test]
fn dev_key_works_in_zkpipe_and_snarkjs_on_both_curves() {
    for curve in ["bn254", "bls12-381"] {
        let f = fixture(curve, "multi_public");
        let d = tempfile::tempdir().unwrap();
        let p = |n: &str| d.path().join(n);
        let o = zkpipe(&[
            "setup".as_ref(),
            "--dev".as_ref(),
            &f.join("circuit.r1cs"),
            &p("dev.zkey"),
            "--seed".as_ref(),
            "3".as_ref(),
        ]);
        ok(&o, "setup");
        assert!(
            text(&o).contains("INSECURE"),
            "setup must warn: {}",
            text(&o)
        );
        ok(
            &snarkjs(&[
                "zkey".as_ref(),
                "export".as_ref(),
                "verificationkey".as_ref(),
                &p("dev.zkey"),
                &p("vk.json"),
            ]),
            "snarkjs export vk",
        );
        ok(
            &zkpipe(&[
                "prove".as_ref(),
                &p("dev.zkey"),
                &f.join("witness.wtns"),
                &p("proof.json"),
                &p("public.json"),
            ]),
            "prove",
        );
        let o = snarkjs(&[
            "groth16".as_ref(),
            "verify".as_ref(),
            &p("vk.json"),
            &p("public.json"),
            &p("proof.json"),
        ]);
        assert!(
            o.status.success() && text(&o).contains("OK"),
            "{curve}: snarkjs rejected zkpipe's proof on a dev key: {}",
            text(&o)
        );
        ok(
            &snarkjs(&[
                "groth16".as_ref(),
                "prove".as_ref(),
                &p("dev.zkey"),
                &f.join("witness.wtns"),
                &p("sproof.json"),
                &p("spublic.json"),
            ]),
            "snarkjs prove",
        );
        ok(
            &zkpipe(&[
                "verify".as_ref(),
                &p("vk.json"),
                &p("spublic.json"),
                &p("sproof.json"),
            ]),
            "zkpipe verifies snarkjs's proof",
        );
        // Same seed, same key.
        ok(
            &zkpipe(&[
                "setup".as_ref(),
                "--dev".as_ref(),
                &f.join("circuit.r1cs"),
                &p("again.zkey"),
                "--seed".as_ref(),
                "3".as_ref(),
            ]),
            "setup again",
        );
        assert_eq!(
            std::fs::read(p("dev.zkey")).unwrap(),
            std::fs::read(p("again.zkey")).unwrap()
        );
    }
}

#[test]
fn synthetic_circuits_are_satisfied_and_prove() {
    for (curve, size, public, seed, values) in [
        ("bn254", "2^10", "2", "1", "random"),
        ("bls12-381", "700", "3", "2", "sha256"),
        ("bn254", "3000", "1", "9", "zero=50,one=30,full=20"),
    ] {
        let d = tempfile::tempdir().unwrap();
        let p = |n: &str| d.path().join(n);
        let flag = if size.contains('^') {
            "--domain"
        } else {
            "--constraints"
        };
        let o = zkpipe(&[
            "synth".as_ref(),
            &p("c.r1cs"),
            &p("c.wtns"),
            flag.as_ref(),
            size.as_ref(),
            "--public".as_ref(),
            public.as_ref(),
            "--curve".as_ref(),
            curve.as_ref(),
            "--seed".as_ref(),
            seed.as_ref(),
            "--values".as_ref(),
            values.as_ref(),
        ]);
        ok(&o, "synth");
        // The witness's values are the profile's, as `inspect` counts them.
        let o = zkpipe(&["inspect".as_ref(), &p("c.wtns"), "--json".as_ref()]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let share = |class: &str| {
            let n = v["values"][class].as_u64().unwrap() as f64;
            100.0 * n / v["nWitness"].as_u64().unwrap() as f64
        };
        let expected: &[(&str, f64)] = match values {
            "random" => &[("full", 100.0)],
            "sha256" => &[("zero", 58.2), ("one", 41.8)],
            _ => &[("zero", 50.0), ("one", 30.0), ("full", 20.0)],
        };
        for &(class, want) in expected {
            let got = share(class);
            assert!(
                (got - want).abs() < 6.0,
                "{values}: {class} {got:.1}% of {v}"
            );
        }
        ok(
            &zkpipe(&["check".as_ref(), &p("c.r1cs"), &p("c.wtns")]),
            "check",
        );
        ok(
            &zkpipe(&[
                "setup".as_ref(),
                "--dev".as_ref(),
                &p("c.r1cs"),
                &p("c.zkey"),
            ]),
            "setup",
        );
        let o = zkpipe(&["inspect".as_ref(), &p("c.zkey")]);
        if flag == "--domain" {
            assert!(text(&o).contains("domain size:   1024"), "{}", text(&o));
        }
        ok(
            &zkpipe(&[
                "prove".as_ref(),
                &p("c.zkey"),
                &p("c.wtns"),
                &p("proof.json"),
                &p("public.json"),
            ]),
            "prove",
        );
        ok(
            &zkpipe(&[
                "verify".as_ref(),
                &p("c.zkey"),
                &p("public.json"),
                &p("proof.json"),
            ]),
            "verify",
        );
    }
}

#[test]
fn setup_and_synth_reject_bad_input() {
    let d = tempfile::tempdir().unwrap();
    let p = |n: &str| d.path().join(n);
    let r1cs = fixture("bn254", "multi_public").join("circuit.r1cs");
    let o = zkpipe(&["setup".as_ref(), &r1cs, &p("k.zkey")]);
    assert_one_line_error(&o, &["setup --dev"]);
    let o = zkpipe(&[
        "setup".as_ref(),
        "--dev".as_ref(),
        &p("missing.r1cs"),
        &p("k.zkey"),
    ]);
    assert_one_line_error(&o, &["missing.r1cs"]);
    // The GPU's setup in a build without CUDA (as CI's): refused in one line, no key.
    if !cfg!(feature = "cuda") {
        let o = zkpipe(&[
            "setup".as_ref(),
            "--dev".as_ref(),
            "--backend".as_ref(),
            "cuda".as_ref(),
            &r1cs,
            &p("k.zkey"),
        ]);
        assert_one_line_error(&o, &["--backend cuda", "without CUDA support"]);
        assert!(!p("k.zkey").exists());
    }
    let junk = p("junk.r1cs");
    std::fs::write(&junk, b"r1cs\x01\x00\x00\x00\x05").unwrap();
    let o = zkpipe(&["setup".as_ref(), "--dev".as_ref(), &junk, &p("k.zkey")]);
    assert_one_line_error(&o, &["junk.r1cs", "truncated"]);
    assert!(!p("k.zkey").exists());
    let existing = p("exists.zkey");
    std::fs::write(&existing, b"keep me").unwrap();
    let o = zkpipe(&["setup".as_ref(), "--dev".as_ref(), &r1cs, &existing]);
    assert_one_line_error(&o, &["exists.zkey", "already exists", "--force"]);
    assert_eq!(std::fs::read(&existing).unwrap(), b"keep me");
    let o = zkpipe(&[
        "setup".as_ref(),
        "--dev".as_ref(),
        &r1cs,
        &existing,
        "--force".as_ref(),
    ]);
    ok(&o, "setup --force");

    let synth = |extra: &[&str], r1cs: &Path| {
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "synth".as_ref(),
            r1cs.as_os_str(),
            p("s.wtns").into_os_string().leak(),
        ];
        args.extend(extra.iter().map(|s| std::ffi::OsStr::new(*s)));
        let paths: Vec<&Path> = args.iter().map(Path::new).collect();
        zkpipe(&paths)
    };
    assert_one_line_error(
        &synth(&["--domain", "1000"], &p("s.r1cs")),
        &["--domain 1000 is not a power of two"],
    );
    assert_one_line_error(
        &synth(&["--constraints", "3^4"], &p("s.r1cs")),
        &["only powers of 2"],
    );
    assert_one_line_error(
        &synth(&[], &p("s.r1cs")),
        &["--constraints N or --domain 2^k"],
    );
    assert_one_line_error(
        &synth(
            &["--constraints", "10", "--values", "zero=50"],
            &p("s.r1cs"),
        ),
        &["--values", "sum to 50%"],
    );
    assert_one_line_error(
        &synth(
            &["--constraints", "10", "--curve", "secp256k1"],
            &p("s.r1cs"),
        ),
        &["unknown curve"],
    );
    assert_one_line_error(
        &synth(&["--constraints", "10"], &existing),
        &["exists.zkey", "already exists"],
    );
    assert!(!p("s.wtns").exists(), "no partial output");
}
