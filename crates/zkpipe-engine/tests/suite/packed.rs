//! Witnesses packed as the job store keeps them (`zkpipe_formats::packed_wtns`): checked
//! against their key when submitted, held packed while queued, and converted by the
//! synthesis stage once admitted.

use crate::support::*;
use std::sync::Arc;
use zkpipe_core::{CpuDevices, Stage};
use zkpipe_engine::{Engine, EngineError, Priority, SubmitRequest};
use zkpipe_formats::packed_wtns::pack;
use zkpipe_formats::wtns::Wtns;
use zkpipe_formats::CurveId;

fn sha_request(witness: &[u8], partitions: usize) -> SubmitRequest {
    SubmitRequest {
        key_id: "bn254-sha".into(),
        witnesses: vec![witness.to_vec(); partitions],
        priority: Priority::Normal,
        request_id: String::new(),
    }
}

/// A packed witness proves as its `.wtns` does, its conversion timed as the partition's
/// synthesis (after admission). A `.wtns` that halves packed waits packed too, and is
/// converted after admission; one that does not (a Poseidon circuit's full-size values)
/// is converted at submit and has no synthesis time.
#[test]
fn a_packed_witness_is_converted_after_admission_and_proves() {
    let dir = key_dir();
    let raw = sha_key(dir.path());
    let packed = pack(&raw).expect("0s and 1s pack");
    let engine = Engine::start(config(dir.path()), Arc::new(CpuDevices::default())).unwrap();
    let jobs = [&packed, &raw].map(|w| engine.submit(sha_request(w, 3)).unwrap().job_id);
    let full = engine
        .submit(request("bn254-poseidon", 1, Priority::Normal))
        .unwrap()
        .job_id;
    check_job(&engine, dir.path(), full);
    let proofs = engine.job_status(full).unwrap().proofs;
    assert_eq!(
        proofs[0].timings.get(Stage::Synthesize),
        std::time::Duration::ZERO
    );
    let mut public = Vec::new();
    for job in jobs {
        check_job(&engine, dir.path(), job);
        for p in engine.job_status(job).unwrap().proofs {
            let converted = p.timings.get(Stage::Synthesize);
            assert!(converted > std::time::Duration::ZERO, "job {job}");
            public.push(p.public_json);
        }
    }
    assert!(public.windows(2).all(|p| p[0] == p[1]), "{public:?}");
    engine.shutdown();
}

/// What converting would refuse is refused at submit, before anything is queued: a value
/// at or above the modulus (named by its index), another count, a cut witness.
#[test]
fn a_bad_packed_witness_is_refused_at_submit() {
    let dir = key_dir();
    let raw = sha_key(dir.path());
    let engine = Engine::start(config(dir.path()), Arc::new(CpuDevices::default())).unwrap();
    let mut over = Wtns::parse(&raw).unwrap();
    let at = over.values.len() / 32 - 1;
    over.values[at * 32..].copy_from_slice(&CurveId::Bn254.r_le());
    let over = pack(&over.to_bytes()).expect("packing does not read values");
    let good = pack(&raw).unwrap();
    let short = {
        let mut w = Wtns::parse(&raw).unwrap();
        w.values.truncate(w.values.len() - 32);
        w.n_witness -= 1;
        pack(&w.to_bytes()).unwrap()
    };
    let cut = &good[..good.len() - 1];
    for (witness, want) in [
        (&over[..], format!("witness value at index {at}")),
        (&short[..], "witness has".to_string()),
        (cut, "truncated".to_string()),
    ] {
        let mut r = sha_request(&good, 2);
        r.witnesses[1] = witness.to_vec();
        let e = engine.submit(r).unwrap_err();
        assert!(
            matches!(
                e,
                EngineError::MalformedWitness { partition: 1, .. }
                    | EngineError::WitnessMismatch { partition: 1, .. }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains(&want), "{e}");
    }
    assert_eq!(engine.status().pending_partitions, 0);
    engine.shutdown();
}
