//! `loadtest --stream` against a CPU daemon whose largest message
//! (`server.max_request_bytes`) is smaller than a job: sent as one message each
//! (`--stream never`) the jobs are refused and the run fails in one line naming the limit;
//! streamed (`--stream always`), each chunk is below the limit and every proof comes back,
//! with the streamed call's `upload` part among the daemon's timings.

use crate::common::*;

/// A job of 4 partitions of the fixture witness (4 × 8,748 bytes) is above this; one
/// partition, which a stream sends as one chunk, is below it.
const LIMIT: &str = "20000";

#[test]
fn loadtest_streams_jobs_above_the_daemons_message_limit() {
    let (dir, cfg, wtns) = serving_folder(&format!(
        "[server]\nmax_request_bytes = {LIMIT}\n[reduce]\nworkers = 1\nthreads = 1\n\
         [device]\nworkers = 1\nthreads = 1\n[tail]\nworkers = 1\nthreads = 1\n"
    ));
    let serve = Serve::start(&cfg, &dir.path().join("state"));
    let run = |stream: &str, jobs: &str, more: &[&str]| {
        loadtest(&serve.grpc, &wtns, "2", jobs, stream, more)
    };
    // Without --json the summary goes to stdout, and stderr is the error alone.
    let o = run("never", "1", &[]);
    assert_one_line_error(
        &o,
        &[
            "2 job(s) did not complete",
            LIMIT,
            "server.max_request_bytes",
            "--stream",
        ],
    );
    let o = run("always", "2", &["--json", "-"]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["proofs"], 16, "{v}");
    assert_eq!(v["failed_jobs"], 0, "{v}");
    let parts = v["server_timing_ms"].as_object().unwrap();
    for part in ["upload", "accept", "outside"] {
        assert!(parts.contains_key(part), "{part} missing: {v}");
    }
}
