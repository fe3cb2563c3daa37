//! The command line itself: `--version`, `--json` documents, exit statuses and help texts.

use crate::common;
use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn json(o: &Output) -> Value {
    assert!(o.status.success(), "{}", text(o));
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {}", text(o)))
}

#[test]
fn version_names_the_commit() {
    let o = zkpipe(&["--version".as_ref()]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    // "zkpipe 0.1.0 (1a2b3c4)", or "(unknown)" outside a git checkout.
    let prefix = format!("zkpipe {} (", env!("CARGO_PKG_VERSION"));
    let commit = out
        .trim_end()
        .strip_prefix(&prefix)
        .and_then(|s| s.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{out:?}"));
    assert!(
        commit == "unknown" || (commit.len() >= 7 && commit.bytes().all(|b| b.is_ascii_hexdigit())),
        "{out:?}"
    );
}

#[test]
fn inspect_and_verify_print_one_json_document() {
    let f = fixture("bn254", "multi_public");
    let v = json(&zkpipe(&[
        "inspect".as_ref(),
        "--json".as_ref(),
        &f.join("circuit.zkey"),
    ]));
    assert_eq!(v["type"], "zkey");
    assert_eq!(v["curve"], "bn128");
    assert_eq!(v["nPublic"], 5);
    assert!(v["sections"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["id"] == 9));
    let v = json(&zkpipe(&[
        "inspect".as_ref(),
        "--json".as_ref(),
        &f.join("proof.json"),
    ]));
    assert_eq!(v["type"], "proof");

    let (vk, public, proof) = (
        f.join("verification_key.json"),
        f.join("public.json"),
        f.join("proof.json"),
    );
    let verify = |public: &Path| {
        zkpipe(&[
            "verify".as_ref(),
            "--json".as_ref(),
            vk.as_ref(),
            public,
            proof.as_ref(),
        ])
    };
    let v = json(&verify(&public));
    assert_eq!(v["valid"], true);
    // Another public signal: still one JSON document, `valid: false`, exit 1.
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("public.json");
    let mut signals: Vec<String> =
        serde_json::from_slice(&std::fs::read(&public).unwrap()).unwrap();
    signals[0] = if signals[0] == "7" { "8" } else { "7" }.into();
    std::fs::write(&other, serde_json::to_vec(&signals).unwrap()).unwrap();
    let o = verify(&other);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["valid"], false);
}

fn help(args: &[&str]) -> String {
    let args: Vec<&Path> = args.iter().map(Path::new).collect();
    let o = zkpipe(&args);
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn help_documents_exit_statuses() {
    for args in [&["--help"][..], &["await", "--help"], &["verify", "--help"]] {
        assert!(help(args).contains("Exit status"), "{args:?}");
    }
}

/// The product lists its own commands only: the lab's are `zkpipe-bench`'s.
#[test]
fn help_lists_no_lab_commands() {
    let top = help(&["--help"]);
    for lab in ["bench", "loadtest", "sweep"] {
        assert!(
            !top.lines()
                .any(|l| l.split_whitespace().next() == Some(lab)),
            "{lab} listed: {top}"
        );
    }
    assert!(top.contains("prove") && top.contains("serve"), "{top}");
}

#[test]
fn evict_help_is_about_evict() {
    let evict = help(&["evict", "--help"]);
    assert!(
        !evict.contains("--timeout") && !evict.contains("preload"),
        "{evict}"
    );
    assert!(help(&["preload", "--help"]).contains("--timeout"));
}

/// `status --json`, `await --json`, and `await`'s exit statuses: 0 done, 2 timed out,
/// 1 cancelled (saying so, with no timeout wording).
#[test]
fn status_and_await_against_a_daemon() {
    let d = start_daemon(&["bn254-multi", "bls-poseidon"], "");
    let cli = |args: &[&str]| -> Output {
        Command::new(env!("CARGO_BIN_EXE_zkpipe"))
            .args(args)
            .args(["--server", &d.grpc])
            .output()
            .unwrap()
    };
    let s = json(&cli(&["status", "--json"]));
    let keys: Vec<&str> = s["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["id"].as_str().unwrap())
        .collect();
    assert!(keys.contains(&"bn254-multi"), "{s}");
    assert!(s["uptime_s"].is_number() && s["jobs"].is_array(), "{s}");

    let submit = |key: &str, partitions: usize, priority: &str| -> String {
        let w = key_fixture(key).join("witness.wtns");
        let w = w.to_str().unwrap();
        let mut args = vec!["submit", key, "--priority", priority];
        args.extend(std::iter::repeat_n(w, partitions));
        let o = cli(&args);
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let job = submit("bn254-multi", 1, "normal");
    let r = json(&cli(&["await", &job, "--json", "--timeout", "300s"]));
    assert_eq!(r["state"], "done", "{r}");
    assert!(r["proofs"][0]["proof"]["pi_a"].is_array(), "{r}");
    assert!(r["proofs"][0]["public"].is_array(), "{r}");

    // A queue of slow low-priority jobs: the last is still queued a millisecond later.
    let queued: Vec<String> = (0..8).map(|_| submit("bls-poseidon", 4, "low")).collect();
    let last = queued.last().unwrap();
    let o = cli(&["await", last, "--timeout", "1ms"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("timed out"), "{}", text(&o));

    let o = cli(&["cancel", last]);
    assert!(o.status.success(), "{}", text(&o));
    let o = cli(&["await", last, "--timeout", "60s"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("was cancelled"), "{err}");
    assert!(
        !err.contains("timed out") && !err.contains("after"),
        "{err}"
    );
}
