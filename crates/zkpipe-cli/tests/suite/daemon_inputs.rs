//! The daemon proving from circuit inputs (issue 15): partitions submitted as snarkjs's
//! `input.json`, their witnesses computed by the key's generator in the synthesis stage
//! (circom's wasm for some keys, its native generator for others, both curves), mixed with
//! partitions submitted as witnesses; bad inputs refused with INVALID_ARGUMENT naming the
//! signal, without disturbing other jobs.

use crate::common;

use common::{
    await_job, check_done, fixture, key_fixture, snarkjs_verifies, start_daemon,
    start_daemon_with_generators, start_daemon_with_more_keys, text, zkpipe, Client, KEYS,
};
use tonic::Code;
use zkpipe_server::pb::{self, JobState};
use zkpipe_server::ProverClient;

async fn client(grpc: &str) -> Client {
    ProverClient::connect(grpc.to_string()).await.unwrap()
}

/// The fixture's input.json with every value `v` replaced by `v + shift` (so each job
/// proves a different witness).
fn inputs(id: &str, shift: u64) -> Vec<u8> {
    let text = std::fs::read_to_string(key_fixture(id).join("input.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    fn bump(v: &mut serde_json::Value, shift: u64) {
        match v {
            serde_json::Value::String(s) => {
                *s = (s.parse::<u64>().unwrap() + shift).to_string();
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| bump(x, shift)),
            serde_json::Value::Object(o) => o.values_mut().for_each(|x| bump(x, shift)),
            _ => panic!("unexpected input value {v}"),
        }
    }
    bump(&mut v, shift);
    serde_json::to_vec(&v).unwrap()
}

fn witness(id: &str) -> Vec<u8> {
    std::fs::read(key_fixture(id).join("witness.wtns")).unwrap()
}

fn submit(id: &str, partitions: Vec<Vec<u8>>) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        key_id: id.into(),
        witnesses: partitions,
        ..Default::default()
    }
}

fn public_of(id: &str) -> Vec<String> {
    let text = std::fs::read_to_string(key_fixture(id).join("public.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_daemon_proves_from_inputs_for_a_mix_of_keys_and_curves() {
    let d = start_daemon_with_generators(
        &KEYS.map(|k| k.0),
        "[synthesize]\nworkers = 2\nthreads = 1\n",
    );
    let mut c = client(&d.grpc).await;
    // Per key: a job of three input partitions (different inputs), and a job mixing a
    // witness and the inputs it was computed from; all in flight at once.
    let mut jobs = Vec::new();
    for (id, _, _) in KEYS {
        let parts = (0..3).map(|i| inputs(id, i)).collect();
        let r = c
            .submit_proof(submit(id, parts))
            .await
            .unwrap()
            .into_inner();
        jobs.push((id, r.job_id, true));
        let mixed = vec![witness(id), inputs(id, 0)];
        let r = c
            .submit_proof(submit(id, mixed))
            .await
            .unwrap()
            .into_inner();
        jobs.push((id, r.job_id, false));
    }
    let dir = tempfile::tempdir().unwrap();
    for (id, job, computed) in jobs {
        let r = await_job(&mut c, job).await;
        check_done(&r);
        // Shift 0 is the committed input.json: the public signals snarkjs computed.
        let first = if computed { 0 } else { 1 };
        let public: Vec<String> = serde_json::from_str(&r.proofs[first].public_json).unwrap();
        assert_eq!(public, public_of(id), "{id}: public signals from inputs");
        if !computed {
            assert_eq!(r.proofs[0].public_json, r.proofs[1].public_json);
            assert!(r.proofs[0].timings.unwrap().synthesize_ms == 0.0);
            assert!(r.proofs[1].timings.unwrap().synthesize_ms > 0.0);
        }
        // snarkjs verifies one proof per key (computed from shifted inputs).
        if computed {
            let p = &r.proofs[2];
            let vk = key_fixture(id).join("verification_key.json");
            snarkjs_verifies(&vk, &p.proof_json, &p.public_json, dir.path(), id);
        }
    }
    // The waterfall has synthesis spans; the metrics a synthesis histogram.
    let trace = c
        .get_trace(pb::GetTraceRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert!(
        trace.chrome_json.contains("\"synthesize\""),
        "no synthesize span in the trace"
    );
    let metrics = c
        .get_metrics(pb::GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner()
        .text;
    assert!(
        metrics.contains("stage=\"synthesize\""),
        "no synthesize stage metric"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_inputs_are_refused_naming_the_signal_and_disturb_nothing() {
    let d = start_daemon_with_generators(&["bn254-poseidon", "bn254-multi"], "");
    let mut c = client(&d.grpc).await;
    // A good job runs alongside the bad requests and ends Done.
    let good = c
        .submit_proof(submit(
            "bn254-poseidon",
            vec![inputs("bn254-poseidon", 7); 2],
        ))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let cases: [(&str, &[u8], &str); 6] = [
        ("bn254-poseidon", b"{\"seed\": ", "partition 1"),
        ("bn254-poseidon", b"{\"seed\": \"1\", \"secret\": [\"1\", \"2\", \"3\"]}", "secret"),
        ("bn254-poseidon", b"{\"seed\": \"1\", \"secret\": [\"1\", \"2\", \"3\", \"4\"], \"nope\": \"1\"}", "nope"),
        ("bn254-poseidon", b"{\"secret\": [\"1\", \"2\", \"3\", \"4\"]}", "Not all inputs"),
        ("bn254-poseidon", b"{\"seed\": \"1.5\", \"secret\": [\"1\", \"2\", \"3\", \"4\"]}", "seed"),
        // The native generator names the signal too.
        ("bn254-multi", b"{\"a\": \"3\", \"b\": \"5\", \"c\": \"7\", \"x\": \"2\", \"y\": \"3\", \"k\": [\"11\"]}", "k"),
    ];
    for (id, body, needle) in cases {
        let r = c
            .submit_proof(submit(id, vec![witness(id), body.to_vec()]))
            .await;
        let s = r.expect_err(&format!("{id}: {} accepted", String::from_utf8_lossy(body)));
        assert_eq!(s.code(), Code::InvalidArgument, "{}", s.message());
        assert!(
            s.message().contains(needle),
            "{:?} should name {needle:?}",
            s.message()
        );
        assert!(!s.message().contains('\n'), "one line: {:?}", s.message());
    }
    check_done(&await_job(&mut c, good).await);
    let status = c
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status.jobs.len(), 1, "a refused request left a job behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inputs_for_a_key_without_a_generator_are_refused() {
    let d = start_daemon(&["bn254-poseidon"], "");
    let mut c = client(&d.grpc).await;
    let r = c
        .submit_proof(submit("bn254-poseidon", vec![inputs("bn254-poseidon", 0)]))
        .await;
    let s = r.unwrap_err();
    assert_eq!(s.code(), Code::FailedPrecondition);
    assert!(
        s.message().contains("no witness generator"),
        "{}",
        s.message()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_assert_fails_its_job_naming_template_and_line_and_disturbs_nothing() {
    // Signal names and lengths are checked at submit; an `assert` only fails while the
    // witness is computed, so the job is accepted and ends Failed with the generator's
    // one-line reason. A dev key for the assert fixture, with its wasm and (as a second
    // key) its native generator.
    let d = start_daemon_with_more_keys(&["bn254-poseidon"], "", |keys| {
        let f = fixture("bn254", "assert");
        let zkey = keys.join("assert.zkey");
        let o = zkpipe(&[
            "setup".as_ref(),
            "--dev".as_ref(),
            &f.join("circuit.r1cs"),
            &zkey,
        ]);
        assert!(o.status.success(), "setup --dev: {}", text(&o));
        std::fs::copy(&zkey, keys.join("assert-native.zkey")).unwrap();
        std::fs::copy(f.join("circuit.wasm"), keys.join("assert.wasm")).unwrap();
        std::fs::copy(f.join("circuit"), keys.join("assert-native")).unwrap();
        std::fs::copy(f.join("circuit.dat"), keys.join("assert-native.dat")).unwrap();
    });
    let mut c = client(&d.grpc).await;
    let good = c
        .submit_proof(submit(
            "bn254-poseidon",
            vec![inputs("bn254-poseidon", 3); 2],
        ))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let passing = b"{\"a\": \"3\", \"b\": \"5\"}".to_vec();
    let failing = b"{\"a\": \"5\", \"b\": \"3\"}".to_vec();
    for (key, needles) in [
        ("assert", ["Assert Failed", "AssertLess_0 line: 12"]),
        ("assert-native", ["Failed assert", "AssertLess line 12"]),
    ] {
        // The inputs that satisfy the assert prove.
        let ok = c
            .submit_proof(submit(key, vec![passing.clone()]))
            .await
            .unwrap()
            .into_inner()
            .job_id;
        let r = await_job(&mut c, ok).await;
        assert_eq!(r.state, JobState::Done as i32, "{key}: {}", r.error);
        let public: Vec<String> = serde_json::from_str(&r.proofs[0].public_json).unwrap();
        assert_eq!(public, ["15", "3"], "{key}: public signals (c = a * b, a)");
        // The failing ones fail the job, naming the template and line.
        let bad = c
            .submit_proof(submit(key, vec![passing.clone(), failing.clone()]))
            .await
            .unwrap()
            .into_inner()
            .job_id;
        let r = await_job(&mut c, bad).await;
        assert_eq!(r.state, JobState::Failed as i32, "{key}: {r:?}");
        for n in needles {
            assert!(
                r.error.contains(n),
                "{key}: {:?} should name {n:?}",
                r.error
            );
        }
        assert!(!r.error.contains('\n'), "one line: {:?}", r.error);
    }
    check_done(&await_job(&mut c, good).await);
}
