//! Every kind of bad input gets a one-line error naming the file and what is wrong, a
//! non-zero exit, and leaves no output file behind.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};

struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A copy of `src` with `edit` applied, saved under `name`.
    fn edited(&self, src: &Path, name: &str, edit: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
        let mut bytes = std::fs::read(src).unwrap();
        edit(&mut bytes);
        let p = self.path(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    /// Runs prove and asserts it failed cleanly with no outputs.
    fn prove_fails(&self, zkey: &Path, wtns: &Path, needles: &[&str]) {
        let (proof, public) = (self.path("proof.json"), self.path("public.json"));
        let o = zkpipe(&["prove".as_ref(), zkey, wtns, &proof, &public]);
        assert_one_line_error(&o, needles);
        assert!(
            !proof.exists() && !public.exists(),
            "no output may be left behind"
        );
        let leftovers: Vec<_> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    }
}

fn bn() -> PathBuf {
    fixture("bn254", "multi_public")
}

#[test]
fn truncated_zkey_and_wtns() {
    let c = Case::new();
    let zkey = bn().join("circuit.zkey");
    let len = std::fs::metadata(&zkey).unwrap().len() as usize;
    for cut in [0, 3, 11, 40, len / 2, len - 1] {
        let t = c.edited(&zkey, "cut.zkey", |b| b.truncate(cut));
        c.prove_fails(&t, &bn().join("witness.wtns"), &["cut.zkey"]);
    }
    let t = c.edited(&bn().join("witness.wtns"), "cut.wtns", |b| {
        b.truncate(b.len() - 5)
    });
    c.prove_fails(&zkey, &t, &["cut.wtns", "truncated"]);
}

#[test]
fn foreign_files_wrong_magic_and_version() {
    let c = Case::new();
    let (zkey, wtns) = (bn().join("circuit.zkey"), bn().join("witness.wtns"));
    // A witness passed as the key, a key passed as the witness.
    c.prove_fails(&wtns, &wtns, &["witness.wtns", "not a zkey file"]);
    c.prove_fails(&zkey, &zkey, &["circuit.zkey", "not a wtns file"]);
    let json = c.edited(&bn().join("proof.json"), "key.zkey", |_| {});
    c.prove_fails(&json, &wtns, &["key.zkey", "not a zkey file"]);
    let v2 = c.edited(&zkey, "v2.zkey", |b| b[4] = 2);
    c.prove_fails(&v2, &wtns, &["v2.zkey", "unsupported zkey version 2"]);
    let w1 = c.edited(&wtns, "v1.wtns", |b| b[4] = 1);
    c.prove_fails(&zkey, &w1, &["v1.wtns", "unsupported wtns version 1"]);
    c.prove_fails(&c.path("missing.zkey"), &wtns, &["missing.zkey"]);
}

#[test]
fn curve_and_length_mismatches() {
    let c = Case::new();
    let bls = fixture("bls12-381", "multi_public");
    c.prove_fails(
        &bn().join("circuit.zkey"),
        &bls.join("witness.wtns"),
        &["witness.wtns", "curve mismatch", "BLS12-381"],
    );
    c.prove_fails(
        &bls.join("circuit.zkey"),
        &bn().join("witness.wtns"),
        &["witness.wtns", "curve mismatch", "BN254"],
    );
    let other = fixture("bn254", "poseidon").join("witness.wtns");
    c.prove_fails(
        &bn().join("circuit.zkey"),
        &other,
        &["witness.wtns", "values", "nVars"],
    );
}

#[test]
fn unsatisfied_witness_is_reported_not_proved() {
    for curve in ["bn254", "bls12-381"] {
        let c = Case::new();
        let f = fixture(curve, "multi_public");
        c.prove_fails(
            &f.join("circuit.zkey"),
            &f.join("bad_witness.wtns"),
            &["bad_witness.wtns", "does not satisfy"],
        );
    }
}

#[test]
fn corrupted_key_points_and_coefficients() {
    let c = Case::new();
    let zkey = bn().join("circuit.zkey");
    let wtns = bn().join("witness.wtns");
    // Section 5 (A) starts after sections 1-4; find it through inspect's offsets.
    let o = zkpipe(&["inspect".as_ref(), &zkey]);
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let offset = |id: &str| -> usize {
        let line = out
            .lines()
            .find(|l| l.split_whitespace().next() == Some(id))
            .unwrap_or_else(|| panic!("section {id} in {out}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let a = offset("5");
    // x = 1, y = 1 is not on y² = x³ + 3 (Montgomery form of 1 is what matters little here:
    // any small non-zero limbs make a non-curve point with overwhelming probability).
    let off = c.edited(&zkey, "offcurve.zkey", |b| {
        b[a] = 1;
        b[a + 32] = 1;
        for i in 1..32 {
            b[a + i] = 0;
            b[a + 32 + i] = 0;
        }
    });
    c.prove_fails(
        &off,
        &wtns,
        &["offcurve.zkey", "section 5 (A)", "not on the curve"],
    );
    // Coordinate ≥ q.
    let big = c.edited(&zkey, "bigcoord.zkey", |b| b[a..a + 32].fill(0xff));
    c.prove_fails(&big, &wtns, &["bigcoord.zkey", "not a base-field element"]);
    // A coefficient whose matrix id is neither A nor B.
    let coef = offset("4");
    let bad = c.edited(&zkey, "badcoef.zkey", |b| b[coef + 4] = 7);
    c.prove_fails(&bad, &wtns, &["badcoef.zkey", "coefficient", "matrix 7"]);
    // A section whose size disagrees with the header (nVars + 1).
    let hdr = offset("2");
    let nvars = hdr + 4 + 32 + 4 + 32;
    let sized = c.edited(&zkey, "size.zkey", |b| b[nvars] = b[nvars].wrapping_add(1));
    c.prove_fails(&sized, &wtns, &["size.zkey", "section", "header implies"]);
}

#[test]
fn bad_proof_public_and_vk_json() {
    let c = Case::new();
    let f = bn();
    let (vk, public, proof) = (
        f.join("verification_key.json"),
        f.join("public.json"),
        f.join("proof.json"),
    );
    let verify_fails = |vk: &Path, public: &Path, proof: &Path, needles: &[&str]| {
        let o = zkpipe(&["verify".as_ref(), vk, public, proof]);
        assert_one_line_error(&o, needles);
    };
    let malformed = c.edited(&proof, "malformed.json", |b| b.truncate(b.len() / 2));
    verify_fails(
        &vk,
        &public,
        &malformed,
        &["malformed.json", "malformed JSON"],
    );
    let not_field = c.edited(&public, "big_public.json", |_| {});
    std::fs::write(
        &not_field,
        format!("[\"{}\",\"1\",\"1\",\"1\",\"1\"]", "9".repeat(80)),
    )
    .unwrap();
    verify_fails(
        &vk,
        &not_field,
        &proof,
        &["big_public.json", "not an element of the scalar field"],
    );
    let hex = c.path("hex_public.json");
    std::fs::write(&hex, "[\"0x10\",\"1\",\"1\",\"1\",\"1\"]").unwrap();
    verify_fails(&vk, &hex, &proof, &["hex_public.json", "public signal 0"]);
    let short = c.path("short_public.json");
    std::fs::write(&short, "[\"1\"]").unwrap();
    verify_fails(&vk, &short, &proof, &["short_public.json", "nPublic = 5"]);
    let offcurve = c.edited(&proof, "offcurve_proof.json", |b| {
        let mut v: serde_json::Value = serde_json::from_slice(b).unwrap();
        v["pi_a"][1] = "5".into();
        *b = serde_json::to_vec(&v).unwrap();
    });
    verify_fails(
        &vk,
        &public,
        &offcurve,
        &["offcurve_proof.json", "pi_a", "not on the curve"],
    );
    let wrong_curve = c.edited(&proof, "bls_proof.json", |b| {
        let mut v: serde_json::Value = serde_json::from_slice(b).unwrap();
        v["curve"] = "bls12381".into();
        *b = serde_json::to_vec(&v).unwrap();
    });
    verify_fails(
        &vk,
        &public,
        &wrong_curve,
        &["bls_proof.json", "curve mismatch"],
    );
    let bad_vk = c.edited(&vk, "bad_vk.json", |b| {
        let mut v: serde_json::Value = serde_json::from_slice(b).unwrap();
        v["IC"].as_array_mut().unwrap().pop();
        *b = serde_json::to_vec(&v).unwrap();
    });
    verify_fails(
        &bad_vk,
        &public,
        &proof,
        &["bad_vk.json", "IC has 5 points"],
    );
}

#[test]
fn existing_outputs_survive_a_failed_prove() {
    let c = Case::new();
    let proof = c.path("proof.json");
    std::fs::write(&proof, "previous").unwrap();
    let o = zkpipe(&[
        "prove".as_ref(),
        &bn().join("circuit.zkey"),
        &bn().join("bad_witness.wtns"),
        &proof,
        &c.path("public.json"),
    ]);
    assert!(!o.status.success());
    assert_eq!(std::fs::read_to_string(&proof).unwrap(), "previous");
}

#[test]
fn cuda_backend_without_cuda_is_a_clear_error() {
    // CI's binary is built without the `cuda` feature: asking for the GPU must say so,
    // write nothing, and `--backend cpu` / `auto` must still prove.
    let c = Case::new();
    let (proof, public) = (c.path("proof.json"), c.path("public.json"));
    let (zkey, wtns) = (bn().join("circuit.zkey"), bn().join("witness.wtns"));
    let o = zkpipe(&[
        "prove".as_ref(),
        "--backend".as_ref(),
        "cuda".as_ref(),
        zkey.as_ref(),
        wtns.as_ref(),
        proof.as_ref(),
        public.as_ref(),
    ]);
    assert_one_line_error(&o, &["--backend cuda", "without CUDA support"]);
    assert!(
        !proof.exists() && !public.exists(),
        "no output may be left behind"
    );
    for backend in ["cpu", "auto"] {
        let o = zkpipe(&[
            "prove".as_ref(),
            "--backend".as_ref(),
            backend.as_ref(),
            zkey.as_ref(),
            wtns.as_ref(),
            proof.as_ref(),
            public.as_ref(),
        ]);
        assert!(o.status.success(), "--backend {backend} failed: {o:?}");
    }
}

#[test]
fn daemon_on_cuda_without_cuda_is_a_clear_error() {
    let c = Case::new();
    std::fs::create_dir(c.path("keys")).unwrap();
    let cfg = c.path("zkpipe.toml");
    std::fs::write(
        &cfg,
        "[server]\ngrpc_listen = \"127.0.0.1:0\"\nhttp_listen = \"127.0.0.1:0\"\n[keys]\ndir = \"keys\"\n",
    )
    .unwrap();
    let o = zkpipe(&[
        "serve".as_ref(),
        "--config".as_ref(),
        cfg.as_ref(),
        "--backend".as_ref(),
        "cuda".as_ref(),
    ]);
    assert_one_line_error(&o, &["--backend cuda", "without CUDA support"]);
}

#[test]
fn directories_and_empty_files_as_inputs_say_so() {
    let c = Case::new();
    let (zkey, wtns) = (bn().join("circuit.zkey"), bn().join("witness.wtns"));
    let dir = c.path("adir");
    std::fs::create_dir(&dir).unwrap();
    // Mapping a directory used to say "No such device".
    c.prove_fails(&dir, &wtns, &["adir", "is a directory"]);
    c.prove_fails(&zkey, &dir, &["adir", "is a directory"]);
    let empty_zkey = c.edited(&zkey, "empty.zkey", |b| b.clear());
    c.prove_fails(&empty_zkey, &wtns, &["empty.zkey", "is empty"]);
    let empty_wtns = c.edited(&wtns, "empty.wtns", |b| b.clear());
    c.prove_fails(&zkey, &empty_wtns, &["empty.wtns", "is empty"]);

    let (vk, public, proof) = (
        bn().join("verification_key.json"),
        bn().join("public.json"),
        bn().join("proof.json"),
    );
    let o = zkpipe(&["verify".as_ref(), &dir, &public, &proof]);
    assert_one_line_error(&o, &["adir", "is a directory"]);
    let empty = c.edited(&public, "empty.json", |b| b.clear());
    let o = zkpipe(&["verify".as_ref(), &vk, &empty, &proof]);
    assert_one_line_error(&o, &["empty.json", "is empty"]);
    let o = zkpipe(&["inspect".as_ref(), &dir]);
    assert_one_line_error(&o, &["adir", "is a directory"]);
    let o = zkpipe(&["inspect".as_ref(), &empty]);
    assert_one_line_error(&o, &["empty.json", "is empty"]);
}

#[test]
fn verify_with_arguments_in_the_wrong_order_gives_the_order() {
    let f = bn();
    let (vk, public, proof) = (
        f.join("verification_key.json"),
        f.join("public.json"),
        f.join("proof.json"),
    );
    let order = "zkpipe verify <vk|zkey> <public.json> <proof.json>";
    // The vk and public.json swapped.
    let o = zkpipe(&["verify".as_ref(), &public, &vk, &proof]);
    assert_one_line_error(
        &o,
        &["public.json", "public signals", "verification key", order],
    );
    // public.json and proof.json swapped.
    let o = zkpipe(&["verify".as_ref(), &vk, &proof, &public]);
    assert_one_line_error(&o, &["proof.json", "holds a proof", order]);
    // snarkjs's order with the zkey works as before.
    let o = zkpipe(&["verify".as_ref(), &f.join("circuit.zkey"), &public, &proof]);
    assert!(o.status.success(), "{}", text(&o));
}

/// Asserts a one-line error with exit status `code`, containing every `needle` and none
/// of `not`.
fn fails_with(o: &std::process::Output, code: i32, needles: &[&str], not: &[&str]) {
    assert_one_line_error(o, needles);
    assert_eq!(o.status.code(), Some(code), "{}", text(o));
    let err = String::from_utf8_lossy(&o.stderr);
    for n in not {
        assert!(!err.contains(n), "error {err:?} should not mention {n:?}");
    }
}

/// Messages name the real cause: a key without public signals for a Solidity verifier
/// (not "malformed JSON" about a .zkey), a key whose checks were skipped as a suspect when
/// the proof fails its self-check, the r1cs (not a key) in `check`, a coordinate ≥ q as out
/// of range (not malformed).
#[test]
fn messages_name_the_real_cause() {
    let c = Case::new();
    let ok = |o: std::process::Output| assert!(o.status.success(), "{}", text(&o));
    ok(zkpipe(&[
        "synth".as_ref(),
        &c.path("none.r1cs"),
        &c.path("none.wtns"),
        "--constraints=8".as_ref(),
        "--public=0".as_ref(),
    ]));
    ok(zkpipe(&[
        "setup".as_ref(),
        "--dev".as_ref(),
        &c.path("none.r1cs"),
        &c.path("none.zkey"),
    ]));
    let o = zkpipe(&[
        "export".as_ref(),
        "solidityverifier".as_ref(),
        &c.path("none.zkey"),
        &c.path("Verifier.sol"),
    ]);
    fails_with(
        &o,
        1,
        &["none.zkey", "no public signals", "nPublic = 0"],
        &["malformed", "JSON"],
    );
    assert!(!c.path("Verifier.sol").exists());

    // An A point off the curve: refused by the key checks; under --trusted-key it makes
    // a proof that fails its self-check, which names the key as a suspect too.
    let zkey = bn().join("circuit.zkey");
    let o = zkpipe(&["inspect".as_ref(), "--json".as_ref(), &zkey]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let a = v["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == 5)
        .unwrap()["offset"]
        .as_u64()
        .unwrap() as usize;
    let off = c.edited(&zkey, "offcurve.zkey", |b| {
        b[a..a + 64].fill(0);
        b[a] = 1;
        b[a + 32] = 1;
    });
    let wtns = bn().join("witness.wtns");
    let (proof, public) = (c.path("proof.json"), c.path("public.json"));
    let o = zkpipe(&[
        "prove".as_ref(),
        "--trusted-key".as_ref(),
        &off,
        &wtns,
        &proof,
        &public,
    ]);
    fails_with(
        &o,
        1,
        &["does not satisfy", "the key is bad", "--trusted-key"],
        &[],
    );
    assert!(!proof.exists() && !public.exists());
    // A bad witness with a checked key is the witness's fault only.
    let o = zkpipe(&[
        "prove".as_ref(),
        &zkey,
        &bn().join("bad_witness.wtns"),
        &proof,
        &public,
    ]);
    fails_with(&o, 1, &["does not satisfy"], &["the key is bad"]);

    let o = zkpipe(&[
        "check".as_ref(),
        &bn().join("circuit.r1cs"),
        &fixture("bn254", "poseidon").join("witness.wtns"),
    ]);
    fails_with(
        &o,
        1,
        &["witness.wtns", "constraint system (r1cs)", "nWires = 271"],
        &["key"],
    );

    let big = c.edited(&bn().join("proof.json"), "big_proof.json", |b| {
        let mut v: serde_json::Value = serde_json::from_slice(b).unwrap();
        v["pi_a"][0] = "9".repeat(80).into();
        *b = serde_json::to_vec(&v).unwrap();
    });
    let o = zkpipe(&[
        "verify".as_ref(),
        &bn().join("verification_key.json"),
        &bn().join("public.json"),
        &big,
    ]);
    fails_with(
        &o,
        1,
        &["big_proof.json", "pi_a", "out of range"],
        &["malformed"],
    );
}

/// Usage errors exit 2 (`--threads 0` too) and point to the `--help` of the command they
/// are about.
#[test]
fn usage_errors_exit_2_and_point_to_their_commands_help() {
    let f = bn();
    let (zkey, wtns) = (f.join("circuit.zkey"), f.join("witness.wtns"));
    let c = Case::new();
    let o = zkpipe(&[
        "prove".as_ref(),
        "--threads".as_ref(),
        "0".as_ref(),
        &zkey,
        &wtns,
        &c.path("proof.json"),
        &c.path("public.json"),
    ]);
    fails_with(&o, 2, &["--threads", "at least 1"], &[]);
    for (args, help) in [
        (&["prove"][..], "(see zkpipe prove --help)"),
        (&["nosuchcommand"], "(see zkpipe --help)"),
        (
            &["export", "solidityverifier"],
            "(see zkpipe export solidityverifier --help)",
        ),
        (
            &["wtns", "calculate", "--bogus"],
            "(see zkpipe wtns calculate --help)",
        ),
        (&["verify", "--json"], "(see zkpipe verify --help)"),
    ] {
        let args: Vec<&Path> = args.iter().map(Path::new).collect();
        fails_with(&zkpipe(&args), 2, &[help], &[]);
    }
}
