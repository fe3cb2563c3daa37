//! `loadtest` against a CPU daemon that holds fewer partitions pending
//! (`pipeline.max_pending_partitions`) than its clients send at once: the daemon refuses
//! the jobs it has no room for (UNAVAILABLE; a streamed job at its header), the clients
//! send them again after a backoff, and every job completes, streamed and as one message,
//! with the retries counted; with `--no-retry` a refused job fails the run, naming the
//! limit.

use crate::common::*;

#[test]
fn loadtest_retries_the_submissions_the_daemon_has_no_room_for_yet() {
    // One job of 4 partitions pending at a time, against 4 clients sending 4 each.
    let (dir, cfg, wtns) = serving_folder(
        "[pipeline]\nmax_partitions_per_job = 4\nmax_pending_partitions = 4\n\
         [reduce]\nworkers = 1\nthreads = 1\n[device]\nworkers = 1\nthreads = 1\n\
         [tail]\nworkers = 1\nthreads = 1\n",
    );
    let serve = Serve::start(&cfg, &dir.path().join("state"));
    let run = |stream: &str, jobs: &str, more: &[&str]| {
        loadtest(&serve.grpc, &wtns, "4", jobs, stream, more)
    };
    for stream in ["always", "never"] {
        let o = run(stream, "2", &["--json", "-"]);
        assert!(o.status.success(), "--stream {stream}: {}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["proofs"], 4 * 2 * 4, "--stream {stream}: {v}");
        assert_eq!(v["failed_jobs"], 0, "--stream {stream}: {v}");
        let retries = v["retries"].as_u64().unwrap_or_else(|| panic!("{v}"));
        assert!(
            retries > 0,
            "--stream {stream}: no submission was refused: {v}"
        );
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            stderr.contains(&format!("retried submissions: {retries}")),
            "{stderr}"
        );
    }
    // A refusal of the request itself, mid-stream (another circuit's witness, refused by
    // its first bytes): not sent again.
    let other = key_fixture("bn254-poseidon").join("witness.wtns");
    let o = zkpipe_bench(&[
        "loadtest".as_ref(),
        "--server".as_ref(),
        serve.grpc.as_ref(),
        "bn254-multi".as_ref(),
        other.as_ref(),
        "-c".as_ref(),
        "1".as_ref(),
        "-j".as_ref(),
        "1".as_ref(),
        "--stream".as_ref(),
        "always".as_ref(),
        "--json".as_ref(),
        "-".as_ref(),
    ]);
    assert!(!o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (&v["failed_jobs"], &v["retries"]),
        (&1.into(), &0.into()),
        "{v}"
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("InvalidArgument"), "{stderr}");

    // Without retries the refused jobs fail the run, on the daemon's refusal.
    let o = run("always", "1", &["--no-retry"]);
    assert_one_line_error(
        &o,
        &[
            "did not complete",
            "Unavailable",
            "pipeline.max_pending_partitions",
        ],
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("retried submissions: 0 (--no-retry)"),
        "{stdout}"
    );
}
