//! `-` as stdin for the one input a pipe feeds: the witness of `prove` (from `wtns
//! calculate … -`), the circuit inputs of `wtns calculate` and `fullprove`. Named `<stdin>`
//! in messages. In a pipe no progress line appears (stderr stays empty on success).

use crate::common;
use common::*;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs zkpipe with `input` on its stdin.
fn zkpipe_stdin(args: &[&Path], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zkpipe"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // Written from a thread: zkpipe may fail (and stop reading) before taking it all.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let o = child.wait_with_output().unwrap();
    writer.join().unwrap();
    o
}

#[test]
fn dash_reads_the_witness_or_the_inputs_from_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let f = fixture("bn254", "poseidon");
    let wtns = std::fs::read(f.join("witness.wtns")).unwrap();
    let input = std::fs::read(f.join("input.json")).unwrap();
    let snarkjs_public = std::fs::read(f.join("public.json")).unwrap();

    let o = zkpipe_stdin(
        &[
            "prove".as_ref(),
            &f.join("circuit.zkey"),
            "-".as_ref(),
            &p("proof.json"),
            &p("public.json"),
        ],
        &wtns,
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(o.stderr.is_empty(), "stderr in a pipe: {}", text(&o));
    assert_eq!(std::fs::read(p("public.json")).unwrap(), snarkjs_public);
    assert!(!p("-").exists());

    // The witness from stdin, to stdout: byte for byte snarkjs's (the committed one).
    let o = zkpipe_stdin(
        &[
            "wtns".as_ref(),
            "calculate".as_ref(),
            &f.join("circuit.wasm"),
            "-".as_ref(),
            "-".as_ref(),
        ],
        &input,
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(o.stdout, wtns);

    let o = zkpipe_stdin(
        &[
            "fullprove".as_ref(),
            "-".as_ref(),
            &f.join("circuit.wasm"),
            &f.join("circuit.zkey"),
            &p("proof2.json"),
            &p("public2.json"),
        ],
        &input,
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read(p("public2.json")).unwrap(), snarkjs_public);

    // Empty or wrong input on stdin is named <stdin>.
    let o = zkpipe_stdin(
        &[
            "prove".as_ref(),
            &f.join("circuit.zkey"),
            "-".as_ref(),
            &p("proof3.json"),
            &p("public3.json"),
        ],
        b"",
    );
    assert_one_line_error(&o, &["<stdin>", "is empty"]);
    let o = zkpipe_stdin(
        &[
            "prove".as_ref(),
            &f.join("circuit.zkey"),
            "-".as_ref(),
            &p("proof3.json"),
            &p("public3.json"),
        ],
        &input,
    );
    assert_one_line_error(&o, &["<stdin>", "not a wtns file"]);
    assert!(!p("proof3.json").exists());
}
