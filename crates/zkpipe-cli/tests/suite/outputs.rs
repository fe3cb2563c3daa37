//! Outputs lose nothing and clobber nothing (issue 14): FIFOs, symlinks and `-` are
//! written through, not replaced; an output that is also an input or another output is
//! refused before any work; a failed run leaves existing files as they were; a missing
//! output directory is refused before the work, naming the output, not a temporary file.

use crate::common;
use common::*;
use std::ffi::OsStr;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

fn bn() -> PathBuf {
    fixture("bn254", "multi_public")
}

/// Runs zkpipe with `dir` as its working directory, so a stray file named `-` lands there.
fn zkpipe_in(dir: &Path, args: &[&OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zkpipe"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("zkpipe binary runs")
}

/// `zkpipe prove <fixture key> <wtns> <proof> <public>`.
fn prove(dir: &Path, wtns: &Path, proof: &str, public: &str) -> Output {
    let key = bn().join("circuit.zkey");
    zkpipe_in(
        dir,
        &[
            "prove".as_ref(),
            key.as_ref(),
            wtns.as_ref(),
            proof.as_ref(),
            public.as_ref(),
        ],
    )
}

fn assert_proof_json(bytes: &[u8], what: &str) {
    let v: serde_json::Value = serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("{what} is not JSON ({e}): {bytes:?}"));
    assert!(v.get("pi_a").is_some(), "{what} is not a proof: {v}");
}

/// Names in `dir` that look like a temporary or backup file of ours.
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".zkpipe-") || n.ends_with(".tmp") || n.ends_with(".bak"))
        .collect()
}

/// Finding 1: `prove K W /dev/stdout /dev/null` replaced both devices with plain files.
/// A FIFO stands in for the devices: it must stay a FIFO and carry the proof; a symlink
/// stays a link and the file it points to gets the proof; `-` is stdout.
#[test]
fn fifos_symlinks_and_dash_are_written_through_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let wtns = bn().join("witness.wtns");

    // A FIFO, read from a thread (opening it blocks until zkpipe opens it to write).
    let fifo = d.join("proof.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo failed");
    let (tx, rx) = std::sync::mpsc::channel();
    let reader_path = fifo.clone();
    std::thread::spawn(move || {
        let _ = tx.send(std::fs::read(&reader_path));
    });
    let o = prove(d, &wtns, "proof.fifo", "public.json");
    assert!(o.status.success(), "prove into a FIFO: {}", text(&o));
    let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(kind.is_fifo(), "the FIFO was replaced by {kind:?}");
    // Only waited on once we know zkpipe wrote to the FIFO itself (else the reader hangs).
    let got = rx.recv_timeout(Duration::from_secs(60)).unwrap().unwrap();
    assert_proof_json(&got, "what came through the FIFO");

    // A symlink: the file it points to is replaced, the link stays a link.
    let real = d.join("real.json");
    std::fs::write(&real, "old").unwrap();
    std::os::unix::fs::symlink("real.json", d.join("link.json")).unwrap();
    let o = prove(d, &wtns, "link.json", "public.json");
    assert!(o.status.success(), "prove into a symlink: {}", text(&o));
    let link = std::fs::symlink_metadata(d.join("link.json")).unwrap();
    assert!(link.file_type().is_symlink(), "the symlink was replaced");
    assert_proof_json(&std::fs::read(&real).unwrap(), "the symlink's target");

    // `-` is stdout, not a file named "-".
    let o = prove(d, &wtns, "-", "public.json");
    assert!(o.status.success(), "prove to stdout: {}", text(&o));
    assert_proof_json(&o.stdout, "stdout");
    assert!(!d.join("-").exists(), "a file named - was written");
    assert!(leftovers(d).is_empty(), "left behind: {:?}", leftovers(d));
}

/// Finding 2: `prove K W same.json same.json` lost the proof and `prove K w.wtns w.wtns
/// pub.json` overwrote the witness, both with exit 0. Clashes are refused before the work
/// (with an unsatisfied witness, the clash is what gets reported) and touch nothing.
#[test]
fn an_output_that_is_an_input_or_another_output_is_refused_before_the_work() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bad = bn().join("bad_witness.wtns");

    let o = prove(d, &bad, "same.json", "same.json");
    assert_one_line_error(&o, &["same.json", "same file"]);
    assert!(!d.join("same.json").exists());
    let o = prove(d, &bn().join("witness.wtns"), "same.json", "same.json");
    assert_one_line_error(&o, &["same.json", "same file"]);

    // The output is the witness being read.
    let wtns = d.join("w.wtns");
    std::fs::copy(bn().join("witness.wtns"), &wtns).unwrap();
    let before = std::fs::read(&wtns).unwrap();
    let o = prove(d, &wtns, "w.wtns", "pub.json");
    assert_one_line_error(&o, &["w.wtns", "input"]);
    assert_eq!(std::fs::read(&wtns).unwrap(), before, "the witness changed");
    assert!(!d.join("pub.json").exists());

    // Two names for one file (a hard link), and two outputs on stdout.
    std::fs::write(d.join("proof.json"), "old").unwrap();
    std::fs::hard_link(d.join("proof.json"), d.join("alias.json")).unwrap();
    let o = prove(d, &bad, "proof.json", "alias.json");
    assert_one_line_error(&o, &["alias.json", "same file", "proof.json"]);
    assert_eq!(
        std::fs::read_to_string(d.join("proof.json")).unwrap(),
        "old"
    );
    let o = prove(d, &bad, "-", "-");
    assert_one_line_error(&o, &["stdout"]);
    assert!(leftovers(d).is_empty(), "left behind: {:?}", leftovers(d));
}

/// Finding 3: after `prove K W keep.json adir` (adir a directory, exit 1) keep.json was
/// gone. A failed run leaves every existing file as it was.
#[test]
fn a_failed_run_leaves_existing_files_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("keep.json"), "X\n").unwrap();
    std::fs::create_dir(d.join("adir")).unwrap();
    let o = prove(d, &bn().join("witness.wtns"), "keep.json", "adir");
    assert!(!o.status.success(), "{}", text(&o));
    let kept = std::fs::read_to_string(d.join("keep.json"));
    assert_eq!(kept.ok().as_deref(), Some("X\n"), "keep.json was lost");
    assert_one_line_error(&o, &["adir", "is a directory"]);
    assert!(leftovers(d).is_empty(), "left behind: {:?}", leftovers(d));
}

/// Finding 4: output paths were checked only after the work (`setup --dev` failed after
/// the whole setup, naming `nodir/.zkpipe-HaDJwK.tmp`). A missing directory is refused
/// first: before an unsatisfied witness is noticed, before setup's warning is printed.
#[test]
fn a_missing_output_directory_is_refused_before_the_work() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = prove(
        d,
        &bn().join("bad_witness.wtns"),
        "nodir/proof.json",
        "public.json",
    );
    assert_one_line_error(&o, &["nodir/proof.json", "does not exist"]);

    let r1cs = bn().join("circuit.r1cs");
    let o = zkpipe_in(
        d,
        &[
            "setup".as_ref(),
            "--dev".as_ref(),
            r1cs.as_ref(),
            "nodir/k.zkey".as_ref(),
        ],
    );
    assert_one_line_error(&o, &["nodir/k.zkey", "does not exist"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !err.contains(".tmp") && !err.contains(".zkpipe-"),
        "a temporary name in {err:?}"
    );
}

/// A JSON text with every decimal string replaced by `"N"`: proofs are randomised, their
/// layout is not.
fn layout(bytes: &[u8]) -> String {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find('"') {
        out.push_str(&rest[..=i]);
        rest = &rest[i + 1..];
        let end = rest.find('"').unwrap();
        let s = &rest[..end];
        out.push_str(if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            "N"
        } else {
            s
        });
        out.push('"');
        rest = &rest[end + 1..];
    }
    out + rest
}

/// `public.json`, `proof.json` and `verification_key.json` are written byte for byte as
/// snarkjs 0.7.6 writes them (one-space indent, no newline at the end): compared with the
/// committed snarkjs files of every fixture, and, for a key with no public signals (which
/// snarkjs writes as `[` newline `]`), with what snarkjs writes in this test.
#[test]
fn json_outputs_are_snarkjs_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (curve, circuit) in FIXTURES {
        let f = fixture(curve, circuit);
        let what = format!("{curve}/{circuit}");
        let (proof, public) = prove_fixture(d, curve, circuit, &[]);
        let snarkjs_public = std::fs::read(f.join("public.json")).unwrap();
        assert_eq!(
            std::fs::read(&public).unwrap(),
            snarkjs_public,
            "{what}: public.json"
        );
        let snarkjs_proof = std::fs::read(f.join("proof.json")).unwrap();
        assert_eq!(
            layout(&std::fs::read(&proof).unwrap()),
            layout(&snarkjs_proof),
            "{what}: proof.json"
        );
        let vk = d.join("vk.json");
        let o = zkpipe(&["export-vk".as_ref(), &f.join("circuit.zkey"), &vk]);
        assert!(o.status.success(), "{what}: {}", text(&o));
        let snarkjs_vk = std::fs::read(f.join("verification_key.json")).unwrap();
        assert_eq!(std::fs::read(&vk).unwrap(), snarkjs_vk, "{what}: vk");
    }

    for curve in ["bn254", "bls12-381"] {
        let p = |n: &str| d.join(format!("{curve}-{n}"));
        let run =
            |o: Output, what: &str| assert!(o.status.success(), "{curve} {what}: {}", text(&o));
        run(
            zkpipe(&[
                "synth".as_ref(),
                &p("c.r1cs"),
                &p("c.wtns"),
                "--constraints=8".as_ref(),
                "--public=0".as_ref(),
                format!("--curve={curve}").as_ref(),
            ]),
            "synth",
        );
        run(
            zkpipe(&[
                "setup".as_ref(),
                "--dev".as_ref(),
                &p("c.r1cs"),
                &p("c.zkey"),
            ]),
            "setup",
        );
        run(
            zkpipe(&[
                "prove".as_ref(),
                &p("c.zkey"),
                &p("c.wtns"),
                &p("proof.json"),
                &p("public.json"),
            ]),
            "prove",
        );
        run(
            zkpipe(&["export-vk".as_ref(), &p("c.zkey"), &p("vk.json")]),
            "export-vk",
        );
        let s = |args: &[&str], paths: &[PathBuf]| {
            let mut v: Vec<&Path> = args.iter().map(Path::new).collect();
            v.extend(paths.iter().map(PathBuf::as_path));
            run(snarkjs(&v), &format!("snarkjs {args:?}"));
        };
        s(
            &["groth16", "prove"],
            &[
                p("c.zkey"),
                p("c.wtns"),
                p("sproof.json"),
                p("spublic.json"),
            ],
        );
        s(
            &["zkey", "export", "verificationkey"],
            &[p("c.zkey"), p("svk.json")],
        );
        let read = |n: &str| std::fs::read(p(n)).unwrap();
        assert_eq!(
            read("spublic.json"),
            b"[\n]",
            "{curve}: snarkjs's empty public.json"
        );
        assert_eq!(
            read("public.json"),
            read("spublic.json"),
            "{curve}: public.json"
        );
        assert_eq!(read("vk.json"), read("svk.json"), "{curve}: vk");
        assert_eq!(
            layout(&read("proof.json")),
            layout(&read("sproof.json")),
            "{curve}: proof"
        );
    }
}
