//! The engine end to end on the CPU with the committed fixtures: mixed keys and curves,
//! priorities, partitions, cancellation, idempotency, bad input, and a budget that fits
//! one job at a time. Every proof is verified against the key's verification key.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use zkpipe_core::verify::public_from_json;
use zkpipe_core::{verify, Bls12_381, Bn254, Curve, PointChecks, Proof, VerifyingKey};
use zkpipe_engine::{
    CpuFactory, Engine, EngineConfig, EngineError, JobState, Priority, Residency, StageConfig,
    SubmitRequest,
};
use zkpipe_formats::json::ProofJson;
use zkpipe_formats::zkey::ZkeyFile;

fn fixture(curve: &str, circuit: &str, file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(curve)
        .join(circuit)
        .join(file)
}

/// (key id, curve folder, circuit) of the keys in the test key directory.
const KEYS: [(&str, &str, &str); 4] = [
    ("bn254-poseidon", "bn254", "poseidon"),
    ("bn254-multi", "bn254", "multi_public"),
    ("bls-poseidon", "bls12-381", "poseidon"),
    ("bls-multi", "bls12-381", "multi_public"),
];

fn key_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (id, curve, circuit) in KEYS {
        std::fs::copy(
            fixture(curve, circuit, "circuit.zkey"),
            dir.path().join(format!("{id}.zkey")),
        )
        .unwrap();
    }
    dir
}

fn config(dir: &Path) -> EngineConfig {
    let small = StageConfig {
        workers: 2,
        threads: 2,
    };
    EngineConfig {
        key_dir: dir.to_path_buf(),
        key_checks: PointChecks::Trusted,
        memory_limit: 1 << 30,
        reduce: small,
        device: small,
        tail: small,
        pool_max_bytes: 16 << 20,
        ..EngineConfig::default()
    }
}

fn witness(id: &str) -> Vec<u8> {
    let (_, curve, circuit) = KEYS.iter().find(|k| k.0 == id).unwrap();
    std::fs::read(fixture(curve, circuit, "witness.wtns")).unwrap()
}

fn request(id: &str, partitions: usize, priority: Priority) -> SubmitRequest {
    SubmitRequest {
        key_id: id.into(),
        witnesses: vec![witness(id); partitions],
        priority,
        request_id: String::new(),
    }
}

fn check_proof<E: Curve>(dir: &Path, id: &str, proof_json: &str, public_json: &str) {
    let z = ZkeyFile::open(dir.join(format!("{id}.zkey"))).unwrap();
    let vk = VerifyingKey::<E>::from_zkey(&z, PointChecks::Trusted).unwrap();
    let pj: ProofJson = serde_json::from_str(proof_json).unwrap();
    let proof = Proof::<E>::from_json(&pj).unwrap();
    let public: Vec<String> = serde_json::from_str(public_json).unwrap();
    let public = public_from_json::<E>(&public).unwrap();
    assert!(
        verify(&vk, &public, &proof).unwrap(),
        "proof of {id} verifies"
    );
}

fn check_job(engine: &Engine, dir: &Path, job: u64) {
    let s = engine.wait(job, Duration::from_secs(300)).unwrap();
    assert_eq!(s.state, JobState::Done, "job {job}: {:?}", s.error);
    assert_eq!(s.proofs.len(), s.partitions);
    for p in &s.proofs {
        if s.key_id.starts_with("bn254") {
            check_proof::<Bn254>(dir, &s.key_id, &p.proof_json, &p.public_json);
        } else {
            check_proof::<Bls12_381>(dir, &s.key_id, &p.proof_json, &p.public_json);
        }
        assert!(p.timings.total >= p.timings.reduce);
    }
}

#[test]
fn mixed_concurrent_jobs_all_verify_and_memory_returns_to_the_keys() {
    let dir = key_dir();
    let engine = Engine::start(config(dir.path()), Arc::new(CpuFactory)).unwrap();
    let prios = [
        Priority::Low,
        Priority::Normal,
        Priority::High,
        Priority::Critical,
    ];
    let mut jobs = Vec::new();
    for i in 0..12 {
        let id = KEYS[i % 4].0;
        let s = engine.submit(request(id, 1 + i % 3, prios[i % 4])).unwrap();
        assert!(!s.existing);
        jobs.push(s.job_id);
    }
    for j in jobs {
        check_job(&engine, dir.path(), j);
    }
    let st = engine.status();
    let resident: u64 = st
        .keys
        .iter()
        .filter(|k| k.residency == Residency::Hot)
        .map(|k| k.meta.host_bytes)
        .sum();
    assert_eq!(st.keys.len(), 4);
    assert!(st.keys.iter().all(|k| k.refs == 0));
    assert_eq!(st.memory_used, resident, "only resident keys hold memory");
    assert_eq!(st.pending_partitions, 0);
    assert!(st.pool.recycled > 0, "buffers are recycled");
    let trace: serde_json::Value = serde_json::from_str(&engine.trace_json()).unwrap();
    assert!(trace["traceEvents"].as_array().unwrap().len() > 24);
    let m = engine.metrics_text();
    assert!(m.contains("zkpipe_proofs_completed_total 24"), "{m}");
    // Evict an idle key; it becomes cold and is loaded again on demand.
    assert!(engine.evict("bn254-multi").unwrap());
    let s = engine
        .submit(request("bn254-multi", 1, Priority::Normal))
        .unwrap();
    check_job(&engine, dir.path(), s.job_id);
    engine.shutdown();
}

#[test]
fn cancel_idempotency_and_bad_input() {
    let dir = key_dir();
    let engine = Engine::start(config(dir.path()), Arc::new(CpuFactory)).unwrap();
    // Idempotency: the same request id gives the same job.
    let mut r = request("bn254-poseidon", 2, Priority::Normal);
    r.request_id = "req-1".into();
    let a = engine.submit(r.clone()).unwrap();
    let b = engine.submit(r).unwrap();
    assert_eq!(a.job_id, b.job_id);
    assert!(b.existing && !a.existing);
    // Cancel: many queued low-priority jobs, cancel the last one.
    let many: Vec<u64> = (0..6)
        .map(|_| {
            engine
                .submit(request("bls-poseidon", 2, Priority::Low))
                .unwrap()
                .job_id
        })
        .collect();
    let victim = *many.last().unwrap();
    engine.cancel(victim).unwrap();
    assert_eq!(
        engine.job_status(victim).unwrap().state,
        JobState::Cancelled
    );
    check_job(&engine, dir.path(), a.job_id);
    for &j in &many[..5] {
        check_job(&engine, dir.path(), j);
    }
    // Cancel of a finished job and of an unknown one.
    assert!(matches!(
        engine.cancel(a.job_id),
        Err(EngineError::AlreadyFinished { .. })
    ));
    assert!(matches!(
        engine.cancel(9999),
        Err(EngineError::UnknownJob(9999))
    ));
    // Bad input, each refused at submit.
    let err = |r: SubmitRequest| engine.submit(r).unwrap_err();
    assert!(matches!(
        err(request("bn254-poseidon", 0, Priority::Normal)),
        EngineError::InvalidRequest(_)
    ));
    let mut r = request("bn254-poseidon", 1, Priority::Normal);
    r.key_id = "nope".into();
    assert!(matches!(err(r.clone()), EngineError::UnknownKey(_)));
    r.key_id = "../bn254/poseidon/circuit".into();
    assert!(matches!(err(r), EngineError::InvalidKeyId(_)));
    let mut r = request("bn254-poseidon", 1, Priority::Normal);
    r.witnesses = vec![b"wtns but not really".to_vec()];
    assert!(matches!(err(r), EngineError::MalformedWitness { .. }));
    let mut r = request("bn254-poseidon", 1, Priority::Normal);
    r.witnesses = vec![witness("bls-poseidon")];
    assert!(matches!(err(r), EngineError::WrongCurve { .. }));
    let mut r = request("bn254-poseidon", 1, Priority::Normal);
    r.witnesses = vec![witness("bn254-multi")];
    assert!(matches!(err(r), EngineError::WitnessMismatch { .. }));
    // A witness that does not satisfy the circuit fails its job, with a message.
    let mut r = request("bn254-multi", 2, Priority::Normal);
    r.witnesses[1] = std::fs::read(fixture("bn254", "multi_public", "bad_witness.wtns")).unwrap();
    let bad = engine.submit(r).unwrap();
    let s = engine.wait(bad.job_id, Duration::from_secs(120)).unwrap();
    assert_eq!(s.state, JobState::Failed);
    assert!(s.error.unwrap().contains("does not satisfy"));
    // Still serving.
    let ok = engine
        .submit(request("bls-multi", 1, Priority::High))
        .unwrap();
    check_job(&engine, dir.path(), ok.job_id);
    let st = engine.status();
    assert_eq!(st.pending_partitions, 0);
    assert!(st.keys.iter().all(|k| k.refs == 0));
    engine.shutdown();
}

#[test]
fn a_budget_for_one_job_at_a_time_still_completes_every_job() {
    let dir = key_dir();
    // Probe the sizes, then give the engine room for one key and one partition only.
    let probe = Engine::start(config(dir.path()), Arc::new(CpuFactory)).unwrap();
    let meta = probe
        .status()
        .keys
        .into_iter()
        .find(|k| k.meta.id == "bls-poseidon")
        .unwrap()
        .meta;
    probe.shutdown();
    let mut cfg = config(dir.path());
    cfg.memory_limit = meta.host_bytes + meta.partition_bytes + 1024;
    let engine = Engine::start(cfg, Arc::new(CpuFactory)).unwrap();
    // A job that can never fit is refused at once.
    let mut big = config(dir.path());
    big.memory_limit = meta.host_bytes;
    let tiny = Engine::start(big, Arc::new(CpuFactory)).unwrap();
    assert!(matches!(
        tiny.submit(request("bls-poseidon", 1, Priority::Normal)),
        Err(EngineError::TooLarge { .. })
    ));
    tiny.shutdown();
    let ids = ["bls-poseidon", "bn254-poseidon", "bls-multi", "bn254-multi"];
    let jobs: Vec<u64> = (0..20)
        .map(|i| {
            engine
                .submit(request(ids[i % 4], 1, Priority::Normal))
                .unwrap()
                .job_id
        })
        .collect();
    for j in jobs {
        check_job(&engine, dir.path(), j);
    }
    let st = engine.status();
    assert!(st.memory_used <= st.memory_limit);
    engine.shutdown();
}

/// Two CPU "devices" with device-memory budgets, to exercise placement and device admission.
struct TwoDevices;

impl zkpipe_engine::BackendFactory for TwoDevices {
    fn devices(&self) -> Vec<zkpipe_engine::DeviceInfo> {
        (0..2)
            .map(|i| zkpipe_engine::DeviceInfo {
                name: format!("fake{i}"),
                memory_total: Some(64 << 20),
            })
            .collect()
    }
    fn key_device_bytes(&self, key: &zkpipe_engine::KeyMeta) -> u64 {
        key.host_bytes
    }
    fn partition_device_bytes(&self, key: &zkpipe_engine::KeyMeta) -> u64 {
        key.partition_bytes
    }
    fn bind_bn254(
        &self,
        k: &Arc<zkpipe_core::CompiledKey<Bn254>>,
        d: usize,
    ) -> Result<Arc<dyn zkpipe_core::Backend<Bn254>>, zkpipe_core::Error> {
        CpuFactory.bind_bn254(k, d)
    }
    fn bind_bls12_381(
        &self,
        k: &Arc<zkpipe_core::CompiledKey<Bls12_381>>,
        d: usize,
    ) -> Result<Arc<dyn zkpipe_core::Backend<Bls12_381>>, zkpipe_core::Error> {
        CpuFactory.bind_bls12_381(k, d)
    }
}

#[test]
fn keys_are_placed_across_devices_and_device_memory_is_accounted() {
    use zkpipe_engine::BackendFactory;
    let dir = key_dir();
    let one_device_per_key = EngineConfig {
        key_max_devices: 1,
        ..config(dir.path())
    };
    let engine = Engine::start(one_device_per_key, Arc::new(TwoDevices)).unwrap();
    let jobs: Vec<u64> = (0..8)
        .map(|i| {
            engine
                .submit(request(KEYS[i % 4].0, 2, Priority::Normal))
                .unwrap()
                .job_id
        })
        .collect();
    for j in jobs {
        check_job(&engine, dir.path(), j);
    }
    let st = engine.status();
    assert_eq!(st.devices.len(), 2);
    assert!(st.devices.iter().all(|d| d.keys == 2), "{:?}", st.devices);
    for (i, d) in st.devices.iter().enumerate() {
        let resident: u64 = st
            .keys
            .iter()
            .filter(|k| k.devices == [i])
            .map(|k| TwoDevices.key_device_bytes(&k.meta))
            .sum();
        assert_eq!(
            d.memory_reserved, resident,
            "only resident key copies remain"
        );
    }
    assert!(engine.evict("bls-multi").unwrap());
    let st = engine.status();
    let total: u64 = st.devices.iter().map(|d| d.memory_reserved).sum();
    let resident: u64 = st
        .keys
        .iter()
        .filter(|k| k.residency == Residency::Hot)
        .map(|k| k.meta.host_bytes)
        .sum();
    assert_eq!(total, resident, "eviction frees the device copy too");
    engine.shutdown();
}

/// [`TwoDevices`] whose quotient takes 30 ms longer, so that partitions queue for a device.
struct SlowTwoDevices;

struct Slow<B>(B);

impl<E: Curve, B: zkpipe_core::Backend<E>> zkpipe_core::Backend<E> for Slow<B> {
    fn name(&self) -> &'static str {
        "slow"
    }
    fn quotient(
        &self,
        d: &zkpipe_core::quotient::QuotientDomain<E::ScalarField>,
        e: &mut zkpipe_core::reduce::QapEvals<E::ScalarField>,
    ) -> Result<(), zkpipe_core::Error> {
        std::thread::sleep(Duration::from_millis(30));
        self.0.quotient(d, e)
    }
    fn msm_g1(
        &self,
        b: &[E::G1Affine],
        s: &[zkpipe_core::backend::ScalarInt<E>],
    ) -> Result<E::G1, zkpipe_core::Error> {
        self.0.msm_g1(b, s)
    }
    fn msm_g2(
        &self,
        b: &[E::G2Affine],
        s: &[zkpipe_core::backend::ScalarInt<E>],
    ) -> Result<E::G2, zkpipe_core::Error> {
        self.0.msm_g2(b, s)
    }
}

impl zkpipe_engine::BackendFactory for SlowTwoDevices {
    fn devices(&self) -> Vec<zkpipe_engine::DeviceInfo> {
        TwoDevices.devices()
    }
    fn key_device_bytes(&self, key: &zkpipe_engine::KeyMeta) -> u64 {
        TwoDevices.key_device_bytes(key)
    }
    fn partition_device_bytes(&self, key: &zkpipe_engine::KeyMeta) -> u64 {
        TwoDevices.partition_device_bytes(key)
    }
    fn bind_bn254(
        &self,
        _: &Arc<zkpipe_core::CompiledKey<Bn254>>,
        _: usize,
    ) -> Result<Arc<dyn zkpipe_core::Backend<Bn254>>, zkpipe_core::Error> {
        Ok(Arc::new(Slow(zkpipe_core::CpuBackend)))
    }
    fn bind_bls12_381(
        &self,
        _: &Arc<zkpipe_core::CompiledKey<Bls12_381>>,
        _: usize,
    ) -> Result<Arc<dyn zkpipe_core::Backend<Bls12_381>>, zkpipe_core::Error> {
        Ok(Arc::new(Slow(zkpipe_core::CpuBackend)))
    }
}

/// One busy key spreads over both devices (a copy on each), unless limited to one.
#[test]
fn a_busy_key_is_copied_to_a_less_loaded_device_up_to_max_devices() {
    use zkpipe_engine::BackendFactory;
    let dir = key_dir();
    for (max_devices, expect) in [(usize::MAX, vec![0usize, 1]), (1, vec![0])] {
        let cfg = EngineConfig {
            key_max_devices: max_devices,
            ..config(dir.path())
        };
        let engine = Engine::start(cfg, Arc::new(SlowTwoDevices)).unwrap();
        let job = engine
            .submit(request("bn254-poseidon", 12, Priority::Normal))
            .unwrap()
            .job_id;
        check_job(&engine, dir.path(), job);
        let st = engine.status();
        let key = st
            .keys
            .iter()
            .find(|k| k.meta.id == "bn254-poseidon")
            .unwrap();
        let mut devices = key.devices.clone();
        devices.sort();
        assert_eq!(devices, expect, "max_devices {max_devices}");
        let busy: Vec<bool> = st.devices.iter().map(|d| d.busy_fraction > 0.0).collect();
        assert_eq!(busy, [true, expect.len() == 2], "which devices worked");
        for (i, d) in st.devices.iter().enumerate() {
            let copies = u64::from(devices.contains(&i));
            assert_eq!(
                d.memory_reserved,
                copies * SlowTwoDevices.key_device_bytes(&key.meta),
                "device {i} holds one copy of the key if it is placed there"
            );
        }
        engine.shutdown();
    }
}
