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

/// The file names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
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
    // The key that proved is bound in-core on its device, and says so in both forms.
    let s = json(&cli(&["status", "--json"]));
    let multi = s["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["id"] == "bn254-multi")
        .unwrap();
    assert_eq!(multi["paths"], serde_json::json!(["in-core"]), "{s}");
    let o = cli(&["status"]);
    assert!(text(&o).contains("on device 0 in-core"), "{}", text(&o));

    // `--out`'s naming rule: proof.json/public.json for one partition, proof-<i>.json/
    // public-<i>.json for several; public files are the fixture's (snarkjs's) bytes.
    let out = tempfile::tempdir().unwrap();
    let one = out.path().join("one");
    let o = cli(&["await", &job, "--out", one.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(names(&one), ["proof.json", "public.json"]);
    let snarkjs_public = std::fs::read(key_fixture("bn254-multi").join("public.json")).unwrap();
    assert_eq!(
        std::fs::read(one.join("public.json")).unwrap(),
        snarkjs_public
    );
    let two = out.path().join("two");
    let job2 = submit("bn254-multi", 2, "normal");
    let o = cli(&[
        "await",
        &job2,
        "--out",
        two.to_str().unwrap(),
        "--timeout",
        "300s",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        names(&two),
        [
            "proof-0.json",
            "proof-1.json",
            "public-0.json",
            "public-1.json"
        ]
    );
    assert_eq!(
        std::fs::read(two.join("public-1.json")).unwrap(),
        snarkjs_public
    );

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

/// The subcommand names a `--help` text lists under "Commands:".
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// Every command's `--help` (long and short), walked from `zkpipe --help`: no rustdoc link
/// syntax leaks from the doc comments; `await --help` states the output naming rule.
#[test]
fn help_texts_show_no_rustdoc_syntax() {
    let mut todo = vec![vec![]];
    let mut seen = 0;
    while let Some(path) = todo.pop() {
        for flag in ["--help", "-h"] {
            let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
            args.push(flag);
            let h = help(&args);
            assert!(!h.contains("[`") && !h.contains("`]"), "{args:?}:\n{h}");
            if flag == "--help" {
                for sub in subcommands(&h) {
                    let mut p = path.clone();
                    p.push(sub);
                    todo.push(p);
                }
            }
        }
        seen += 1;
    }
    assert!(seen > 20, "only {seen} commands found");
    let h = help(&["await", "--help"]);
    assert!(
        h.contains("proof.json and public.json for a job of one") && h.contains("proof-<i>.json"),
        "{h}"
    );
}

#[test]
fn completions_and_man_page() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef zkpipe"),
        ("fish", "complete -c zkpipe"),
    ] {
        let o = zkpipe(&["completions".as_ref(), shell.as_ref()]);
        assert!(o.status.success(), "{shell}: {}", text(&o));
        let script = String::from_utf8_lossy(&o.stdout);
        assert!(script.contains(marker), "{shell}: {script}");
        for sub in ["fullprove", "export-vk", "solidityverifier", "completions"] {
            assert!(script.contains(sub), "{shell} completes {sub}");
        }
    }
    let o = zkpipe(&["completions".as_ref(), "tcsh".as_ref()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));

    let page = |args: &[&str]| -> String {
        let mut v: Vec<&Path> = vec!["man".as_ref()];
        v.extend(args.iter().map(Path::new));
        let o = zkpipe(&v);
        assert!(o.status.success(), "{args:?}: {}", text(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    let top = page(&[]);
    let th = top
        .lines()
        .find(|l| l.starts_with(".TH "))
        .unwrap_or_else(|| panic!("{top}"));
    assert!(th.starts_with(".TH zkpipe 1 "), "{th}");
    assert!(
        top.contains(".SH NAME") && top.contains("fullprove"),
        "{top}"
    );
    let sub = page(&["export", "solidityverifier"]);
    assert!(
        sub.lines()
            .any(|l| l.starts_with(".TH zkpipe-export-solidityverifier 1 ")),
        "{sub}"
    );
    let o = zkpipe(&["man".as_ref(), "nosuch".as_ref()]);
    assert_one_line_error(&o, &["nosuch"]);
    // Where man(1) and groff are installed, the page renders without warnings.
    let man_ok = Command::new("man")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if man_ok {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("zkpipe.1");
        std::fs::write(&file, &top).unwrap();
        let o = Command::new("man")
            .arg("-l")
            .arg(&file)
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "80")
            .output()
            .unwrap();
        if o.status.success() {
            assert!(
                String::from_utf8_lossy(&o.stdout).contains("fullprove"),
                "{}",
                text(&o)
            );
        }
    }
}

/// `inspect` names a zkey's sections and shows a verification key's nPublic and IC count.
#[test]
fn inspect_names_sections_and_counts_ic() {
    let f = fixture("bn254", "multi_public");
    let v = json(&zkpipe(&[
        "inspect".as_ref(),
        "--json".as_ref(),
        &f.join("circuit.zkey"),
    ]));
    let names: Vec<(u64, String)> = v["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_u64().unwrap(),
                s["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        "header-protocol",
        "header",
        "IC",
        "coefficients",
        "A",
        "B1",
        "B2",
        "C",
        "H",
        "contributions",
    ];
    for (id, name) in &names {
        assert_eq!(name, want[*id as usize - 1], "section {id}");
    }
    assert_eq!(names.len(), 10, "{names:?}");
    let o = zkpipe(&["inspect".as_ref(), &f.join("circuit.zkey")]);
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out
        .lines()
        .find(|l| l.split_whitespace().next() == Some("9"))
        .unwrap();
    assert!(
        line.contains(" H ") && line.contains("bytes at offset"),
        "{out}"
    );

    let vk = f.join("verification_key.json");
    let v = json(&zkpipe(&["inspect".as_ref(), "--json".as_ref(), &vk]));
    assert_eq!(v["type"], "verification key", "{v}");
    assert_eq!(v["nPublic"], 5, "{v}");
    assert_eq!(v["icPoints"], 6, "{v}");
    let o = zkpipe(&["inspect".as_ref(), &vk]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("nPublic:       5") && out.contains("6 points (nPublic + 1)"),
        "{out}"
    );
}

/// A `.zkey` in the key directory that cannot be served is named at start (a warning with
/// the file and the reason) and in `status`, not first at a submit.
#[test]
fn unservable_key_files_are_reported_at_start_and_in_status() {
    let mut d = start_daemon_with_more_keys(&["bn254-multi"], "", |dir| {
        std::fs::write(dir.join("broken.zkey"), b"not a key at all").unwrap();
        std::fs::copy(
            key_fixture("bn254-multi").join("circuit.zkey"),
            dir.join("bad name.zkey"),
        )
        .unwrap();
    });
    let cli = |args: &[&str]| -> Output {
        Command::new(env!("CARGO_BIN_EXE_zkpipe"))
            .args(args)
            .args(["--server", &d.grpc])
            .output()
            .unwrap()
    };
    let s = json(&cli(&["status", "--json"]));
    let keys = s["keys"].as_array().unwrap();
    let key = |id: &str| {
        keys.iter()
            .find(|k| k["id"] == id)
            .unwrap_or_else(|| panic!("{id}: {s}"))
    };
    assert_eq!(key("bn254-multi")["residency"], "cold", "{s}");
    assert!(key("bn254-multi")["error"].is_null(), "{s}");
    assert_eq!(key("broken")["residency"], "failed", "{s}");
    let why = key("broken")["error"].as_str().unwrap();
    assert!(why.contains("not a zkey file"), "{why}");
    assert_eq!(key("bad name")["residency"], "failed", "{s}");
    assert!(
        key("bad name")["error"]
            .as_str()
            .unwrap()
            .contains("invalid key id"),
        "{s}"
    );
    let o = cli(&["status"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("key broken: failed — "), "{out}");

    d.child.kill().unwrap();
    d.child.wait().unwrap();
    let log = d.log.take().unwrap().join().unwrap();
    let warned = |file: &str| {
        log.iter()
            .any(|l| l.contains("WARN") && l.contains("cannot be served") && l.contains(file))
    };
    assert!(warned("broken.zkey") && warned("bad name.zkey"), "{log:#?}");
}
