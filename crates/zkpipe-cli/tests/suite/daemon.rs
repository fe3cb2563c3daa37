//! The daemon as a real process on loopback, driven through its gRPC API and HTTP
//! endpoints: 50 concurrent mixed jobs (both curves, all priorities, multi-partition) that
//! all verify (a sample with snarkjs), idempotency, cancel, every bad input of issue 5, a
//! client disconnecting mid-await, metrics scraped and parsed, graceful shutdown, and a
//! budget that fits one job at a time.

use crate::common;

use common::{
    await_job, check_done, client, http_get, key_fixture, parse_metrics, snarkjs_verifies,
    start_daemon, KEYS,
};
use std::process::{Command, Stdio};
use std::time::Duration;
use tonic::Code;
use zkpipe_server::pb::{self, JobState, Priority};

fn witness(id: &str) -> Vec<u8> {
    std::fs::read(key_fixture(id).join("witness.wtns")).unwrap()
}

fn submit_req(id: &str, partitions: usize, priority: Priority) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        key_id: id.into(),
        witnesses: vec![witness(id); partitions],
        priority: priority as i32,
        request_id: String::new(),
    }
}

fn code<T: std::fmt::Debug>(r: Result<T, tonic::Status>) -> (Code, String) {
    let s = r.unwrap_err();
    (s.code(), s.message().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn daemon_serves_concurrent_mixed_jobs_and_refuses_bad_input() {
    let d = start_daemon(&KEYS.map(|k| k.0), "[memory]\nhost_limit = \"1GiB\"\n");
    assert_eq!(http_get(&d.http, "/healthz").trim(), "ok");
    let mut c = client(&d).await;

    // 50 concurrent jobs over four keys, both curves, all priorities, 1-3 partitions.
    let prios = [
        Priority::Low,
        Priority::Normal,
        Priority::High,
        Priority::Critical,
    ];
    let tasks: Vec<_> = (0..50)
        .map(|i| {
            let mut c = c.clone();
            tokio::spawn(async move {
                let id = KEYS[i % 4].0;
                let r = c
                    .submit_proof(submit_req(id, 1 + i % 3, prios[(i / 4) % 4]))
                    .await
                    .unwrap()
                    .into_inner();
                await_job(&mut c, r.job_id).await
            })
        })
        .collect();
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.unwrap());
    }
    for r in &results {
        check_done(r);
    }
    // A sample with snarkjs: one proof per key.
    let out = tempfile::tempdir().unwrap();
    for (id, _, _) in KEYS {
        let r = results.iter().find(|r| r.key_id == id).unwrap();
        let p = r.proofs.last().unwrap();
        let vk = key_fixture(id).join("verification_key.json");
        snarkjs_verifies(&vk, &p.proof_json, &p.public_json, out.path(), id);
    }
    let proofs: usize = results.iter().map(|r| r.proofs.len()).sum();

    // Idempotency: a repeated request id returns the same job.
    let mut r = submit_req("bn254-multi", 2, Priority::Normal);
    r.request_id = "client-42".into();
    let a = c.submit_proof(r.clone()).await.unwrap().into_inner();
    let b = c.submit_proof(r).await.unwrap().into_inner();
    assert_eq!(a.job_id, b.job_id);
    assert!(!a.existing && b.existing);
    check_done(&await_job(&mut c, a.job_id).await);

    // Cancel: a queue of low-priority jobs, cancel the last; then cancel again and unknown.
    let mut queued = Vec::new();
    for _ in 0..6 {
        let r = c
            .submit_proof(submit_req("bls-poseidon", 3, Priority::Low))
            .await
            .unwrap();
        queued.push(r.into_inner().job_id);
    }
    let victim = *queued.last().unwrap();
    let cr = c
        .cancel_proof(pb::CancelProofRequest { job_id: victim })
        .await
        .unwrap();
    assert_eq!(cr.into_inner().state, JobState::Cancelled as i32);
    assert_eq!(
        await_job(&mut c, victim).await.state,
        JobState::Cancelled as i32
    );
    let (k, m) = code(
        c.cancel_proof(pb::CancelProofRequest { job_id: victim })
            .await,
    );
    assert_eq!(k, Code::FailedPrecondition, "{m}");
    let (k, _) = code(
        c.cancel_proof(pb::CancelProofRequest { job_id: 123_456 })
            .await,
    );
    assert_eq!(k, Code::NotFound);
    let (k, _) = code(
        c.await_proof(pb::AwaitProofRequest {
            job_id: 123_456,
            timeout_ms: 10,
        })
        .await,
    );
    assert_eq!(k, Code::NotFound);

    // A client that disconnects mid-await: the job still completes.
    let slow = c
        .submit_proof(submit_req("bls-poseidon", 4, Priority::Low))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let mut waiter = Command::new(env!("CARGO_BIN_EXE_zkpipe"))
        .args([
            "await",
            &slow.to_string(),
            "--timeout",
            "60s",
            "--server",
            &d.grpc,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    waiter.kill().unwrap();
    waiter.wait().unwrap();
    for &j in &queued[..5] {
        check_done(&await_job(&mut c, j).await);
    }
    check_done(&await_job(&mut c, slow).await);

    // Bad input: each an error status; the daemon keeps serving.
    let bad = |f: fn(&mut pb::SubmitProofRequest)| {
        let mut r = submit_req("bn254-poseidon", 1, Priority::Normal);
        f(&mut r);
        r
    };
    let cases: Vec<(pb::SubmitProofRequest, Code, &str)> = vec![
        (
            bad(|r| r.key_id = "no-such-key".into()),
            Code::NotFound,
            "unknown key id",
        ),
        (
            bad(|r| r.key_id = "../keys/bn254-poseidon".into()),
            Code::InvalidArgument,
            "invalid key id",
        ),
        (
            bad(|r| r.witnesses = vec![b"not a witness".to_vec()]),
            Code::InvalidArgument,
            "malformed witness",
        ),
        (
            bad(|r| r.witnesses = vec![witness("bn254-multi")]),
            Code::InvalidArgument,
            "expects nVars",
        ),
        (
            bad(|r| r.witnesses = vec![witness("bls-poseidon")]),
            Code::InvalidArgument,
            "witness is for BLS12-381",
        ),
        (
            bad(|r| r.witnesses.clear()),
            Code::InvalidArgument,
            "at least one witness",
        ),
        (
            bad(|r| r.witnesses = vec![r.witnesses[0].clone(); 65]),
            Code::InvalidArgument,
            "at most 64",
        ),
        (bad(|r| r.priority = 99), Code::InvalidArgument, "priority"),
    ];
    for (req, want, needle) in cases {
        let (k, m) = code(c.submit_proof(req).await);
        assert_eq!(k, want, "{m}");
        assert!(m.contains(needle), "{m:?} should mention {needle:?}");
        assert_eq!(m.lines().count(), 1);
    }
    // Oversize request: more than max_request_bytes (4 MiB).
    let (k, m) = code(
        c.submit_proof(bad(|r| r.witnesses = vec![vec![0u8; 5 << 20]]))
            .await,
    );
    assert!(
        matches!(k, Code::ResourceExhausted | Code::OutOfRange),
        "{k:?} {m}"
    );
    // The words the CLI recognises to name server.max_request_bytes (commands::client::rpc).
    assert!(m.contains("message length too large"), "{m}");
    // A witness that does not satisfy the circuit fails its job with a message.
    let mut r = submit_req("bn254-multi", 1, Priority::Normal);
    r.witnesses = vec![std::fs::read(key_fixture("bn254-multi").join("bad_witness.wtns")).unwrap()];
    let failed = c
        .prove(pb::ProveRequest {
            submit: Some(r),
            timeout_ms: 60_000,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(failed.state, JobState::Failed as i32);
    assert!(
        failed.error.contains("does not satisfy"),
        "{}",
        failed.error
    );
    // Evicting a key, then using it again.
    let e = c
        .evict_key(pb::KeyRequest {
            key_id: "bls-multi".into(),
            timeout_ms: 0,
        })
        .await
        .unwrap();
    assert_eq!(e.into_inner().residency, "cold");
    let p = c
        .preload_key(pb::KeyRequest {
            key_id: "bls-multi".into(),
            timeout_ms: 0,
        })
        .await
        .unwrap();
    assert_eq!(p.into_inner().residency, "hot");
    let ok = c
        .prove(pb::ProveRequest {
            submit: Some(submit_req("bls-multi", 2, Priority::Critical)),
            timeout_ms: 60_000,
        })
        .await
        .unwrap()
        .into_inner();
    check_done(&ok);

    // Status: keys resident and unreferenced, nothing pending, memory within the budget.
    let s = c
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(s.keys.len(), 4);
    assert!(
        s.keys.iter().all(|k| k.refs == 0 && k.residency == "hot"),
        "{:?}",
        s.keys
    );
    assert_eq!(s.pending_partitions, 0);
    assert!(s.memory_used <= s.memory_limit);
    assert_eq!(s.devices.len(), 1);

    // Metrics: scraped over HTTP and parsed.
    let m = parse_metrics(&http_get(&d.http, "/metrics"));
    let get = |name: &str| m.iter().find(|(k, _)| k == name).map(|x| x.1);
    let completed = get("zkpipe_proofs_completed_total").unwrap();
    assert!(completed >= (proofs + 2 + 15 + 4 + 2) as f64, "{completed}");
    assert_eq!(
        get("zkpipe_proofs_failed_total{kind=\"not_satisfied\"}"),
        Some(1.0)
    );
    let busy = get("zkpipe_device_busy_fraction{device=\"cpu\"}").unwrap();
    assert!((0.0..=1.0).contains(&busy));
    assert!(get("zkpipe_memory_limit_bytes").unwrap() > 0.0);
    assert!(m
        .iter()
        .any(|(k, _)| k.starts_with("zkpipe_stage_seconds_bucket{le=")
            || k.starts_with("zkpipe_stage_seconds_bucket{")));
    assert_eq!(get("zkpipe_queue_depth{queue=\"admission\"}"), Some(0.0));
    // The waterfall is Chrome-trace JSON.
    let trace: serde_json::Value = serde_json::from_str(&http_get(&d.http, "/trace")).unwrap();
    assert!(trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["name"] == "device"));

    // Graceful shutdown on SIGTERM.
    let pid = d.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let mut d = d;
    let status = d.child.wait().unwrap();
    assert!(status.success(), "daemon exit: {status:?}");
    let log = d.log.take().unwrap().join().unwrap();
    assert!(
        log.last().is_some_and(|l| l.contains("stopped")),
        "the last log line: {log:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_for_one_job_at_a_time_completes_twenty_jobs_and_refuses_a_larger_one() {
    // Sizes as the daemon accounts them, from a first daemon's status.
    let probe = start_daemon(&KEYS.map(|k| k.0), "");
    let s = client(&probe)
        .await
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    drop(probe);
    let need = |id: &str| {
        let k = s.keys.iter().find(|k| k.id == id).unwrap();
        k.host_bytes + k.partition_bytes
    };
    let small = ["bn254-poseidon", "bn254-multi", "bls-multi"];
    let limit = small.iter().map(|id| need(id)).max().unwrap() + 1024;
    assert!(
        need("bls-poseidon") > limit,
        "the test needs one key larger than the rest"
    );
    let d = start_daemon(
        &KEYS.map(|k| k.0),
        &format!("[memory]\nhost_limit = {limit}\n"),
    );
    let mut c = client(&d).await;
    let (k, m) = code(
        c.submit_proof(submit_req("bls-poseidon", 1, Priority::Normal))
            .await,
    );
    assert_eq!(k, Code::ResourceExhausted, "{m}");
    assert!(m.contains("can never fit"), "{m}");
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let mut c = c.clone();
            tokio::spawn(async move {
                let r = c
                    .submit_proof(submit_req(small[i % 3], 1, Priority::Normal))
                    .await
                    .unwrap()
                    .into_inner();
                await_job(&mut c, r.job_id).await
            })
        })
        .collect();
    for t in tasks {
        check_done(&t.await.unwrap());
    }
    let s = c
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(s.memory_used <= limit);
    assert_eq!(s.pending_partitions, 0);
}

/// `memory.stream_batch` reaches the daemon's devices: a streamed key's plan serves that
/// many proofs a stream (1 here, where 160 KiB holds 2), and its proofs verify.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_stream_batch_setting_sets_a_streamed_keys_batch() {
    let mut d = start_daemon(
        &["bn254-poseidon"],
        "[memory]\ndevice_limit = \"160KiB\"\nstream_batch = 1\n",
    );
    let mut c = client(&d).await;
    let req = submit_req("bn254-poseidon", 2, Priority::Normal);
    let r = c.submit_proof(req).await.unwrap().into_inner();
    check_done(&await_job(&mut c, r.job_id).await);
    let s = c
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    let k = s.keys.iter().find(|k| k.id == "bn254-poseidon").unwrap();
    assert!(
        !k.paths.is_empty() && k.paths.iter().all(|p| p.starts_with("streamed: batch 1,")),
        "{k:?}"
    );
    let _ = d.child.kill();
    let _ = d.child.wait();
}

/// `memory.device_limit` below a key's points makes the CPU device stream it, as a GPU
/// under that budget would: 160 KiB holds two poseidon proofs (BN254 and BLS12-381) and
/// two chunks, and BLS12-381 multi_public (191 KB of points), but not their points whole.
/// Multi-partition jobs (passes of two) and single ones all verify; the daemon logs each
/// key's residency when it binds it, and status shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keys_larger_than_the_device_limit_stream_and_verify() {
    let keys = ["bn254-poseidon", "bls-poseidon", "bls-multi"];
    let mut d = start_daemon(&keys, "[memory]\ndevice_limit = \"160KiB\"\n");
    let c = client(&d).await;
    let tasks: Vec<_> = (0..9)
        .map(|i| {
            let mut c = c.clone();
            tokio::spawn(async move {
                let req = submit_req(keys[i % 3], 1 + i % 3, Priority::Normal);
                let r = c.submit_proof(req).await.unwrap().into_inner();
                await_job(&mut c, r.job_id).await
            })
        })
        .collect();
    for t in tasks {
        check_done(&t.await.unwrap());
    }
    // Status names the path each key's proofs take on the device it is bound to.
    let s = c
        .clone()
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    for id in keys {
        let k = s.keys.iter().find(|k| k.id == id).unwrap();
        assert_eq!(k.paths.len(), k.devices.len(), "{k:?}");
        assert!(
            k.paths.iter().all(|p| p.starts_with("streamed: batch 2")) && !k.paths.is_empty(),
            "{k:?}"
        );
    }
    let _ = d.child.kill();
    let _ = d.child.wait();
    let log = d.log.take().unwrap().join().unwrap();
    for id in keys {
        let bound = log
            .iter()
            .find(|l| l.contains("key bound") && l.contains(&format!("key={id}")))
            .unwrap_or_else(|| panic!("no 'key bound' line for {id}: {log:?}"));
        assert!(bound.contains("residency=streamed: batch 2"), "{bound}");
    }
}
