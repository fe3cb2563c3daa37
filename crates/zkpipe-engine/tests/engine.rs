//! The engine end to end on the CPU with the committed fixtures: mixed keys and curves,
//! priorities, partitions, cancellation, idempotency, bad input, and a budget that fits
//! one job at a time. Every proof is verified against the key's verification key.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use zkpipe_core::verify::public_from_json;
use zkpipe_core::{verify, Bls12_381, Bn254, Curve, PointChecks, Proof, VerifyingKey};
use zkpipe_engine::{
    BackendFactory, CpuFactory, Engine, EngineConfig, EngineError, JobState, Priority, Residency,
    StageConfig, SubmitRequest,
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

/// What the engine says of key `id` in `dir` (sizes, memory), from a probe engine.
fn key_meta(dir: &Path, id: &str) -> zkpipe_engine::KeyMeta {
    key_meta_on(dir, id, Arc::new(CpuFactory))
}

/// [`key_meta`] as an engine with `factory` sees it.
fn key_meta_on(dir: &Path, id: &str, factory: Arc<dyn BackendFactory>) -> zkpipe_engine::KeyMeta {
    let probe = Engine::start(config(dir), factory).unwrap();
    let meta = probe
        .status()
        .keys
        .into_iter()
        .find(|k| k.meta.id == id)
        .unwrap()
        .meta;
    probe.shutdown();
    meta
}

#[test]
fn a_budget_for_one_job_at_a_time_still_completes_every_job() {
    let dir = key_dir();
    // Probe the sizes, then give the engine room for one key and one partition only.
    let meta = key_meta(dir.path(), "bls-poseidon");
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

/// The `bind_*` methods of a test factory whose backends are the CPU's.
macro_rules! cpu_backends {
    () => {
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
    };
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
    cpu_backends!();
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

/// What a [`Batching`] backend was asked to do: the size of each `device_batch` call, how
/// many single `device_pass` calls it had, and how many proofs it reduced itself.
#[derive(Default)]
struct BatchLog {
    batches: std::sync::Mutex<Vec<usize>>,
    singles: std::sync::atomic::AtomicUsize,
    reduced: std::sync::atomic::AtomicUsize,
}

impl BatchLog {
    fn batches(&self) -> Vec<usize> {
        self.batches.lock().unwrap().clone()
    }
    fn singles(&self) -> usize {
        self.singles.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// How long every device pass takes on top of its work, one proof or a batch alike (as on
/// a GPU, where small proofs cost about a fixed time per pass): partitions queue meanwhile.
const PASS: Duration = Duration::from_millis(20);

/// A backend that batches up to `limit` proofs of a key, running them one by one on
/// `inner`, and logs what it was asked. With `reduces`, it computes a, b, c itself from
/// w, as a GPU that keeps the matrices does, and insists that stage 1 left them out.
struct Batching<B> {
    inner: B,
    limit: usize,
    reduces: bool,
    log: Arc<BatchLog>,
}

impl<B> Batching<B> {
    /// `inner`'s device pass, after the reduce where this backend does it.
    fn pass<E: Curve>(
        &self,
        key: &zkpipe_core::CompiledKey<E>,
        evals: &mut zkpipe_core::reduce::QapEvals<E::ScalarField>,
        w: &[zkpipe_core::backend::ScalarInt<E>],
        h: &mut Vec<zkpipe_core::backend::ScalarInt<E>>,
        g2: bool,
        t: &mut zkpipe_core::Timings,
    ) -> Result<zkpipe_core::stages::DeviceSums<E>, zkpipe_core::Error>
    where
        B: zkpipe_core::Backend<E>,
    {
        if !self.reduces {
            return self.inner.device_pass(key, evals, w, h, g2, t);
        }
        use ark_ff::PrimeField;
        assert!(evals.a.is_empty(), "stage 1 computed a, b, c anyway");
        let witness: Vec<E::ScalarField> = w
            .iter()
            .map(|x| E::ScalarField::from_bigint(*x).unwrap())
            .collect();
        let mut full = zkpipe_core::reduce::QapEvals::zeroed(key.domain_size());
        zkpipe_core::reduce::reduce(
            &key.a,
            &key.b,
            &witness,
            &mut full,
            zkpipe_core::reduce::DEFAULT_SCHEDULE,
        );
        self.log
            .reduced
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.device_pass(key, &mut full, w, h, g2, t)
    }
}

impl<E: Curve, B: zkpipe_core::Backend<E>> zkpipe_core::Backend<E> for Batching<B> {
    fn name(&self) -> &'static str {
        "batching"
    }
    fn quotient(
        &self,
        d: &zkpipe_core::quotient::QuotientDomain<E::ScalarField>,
        e: &mut zkpipe_core::reduce::QapEvals<E::ScalarField>,
    ) -> Result<(), zkpipe_core::Error> {
        self.inner.quotient(d, e)
    }
    fn msm_g1(
        &self,
        b: &[E::G1Affine],
        s: &[zkpipe_core::backend::ScalarInt<E>],
    ) -> Result<E::G1, zkpipe_core::Error> {
        self.inner.msm_g1(b, s)
    }
    fn msm_g2(
        &self,
        b: &[E::G2Affine],
        s: &[zkpipe_core::backend::ScalarInt<E>],
    ) -> Result<E::G2, zkpipe_core::Error> {
        self.inner.msm_g2(b, s)
    }
    fn device_pass(
        &self,
        key: &zkpipe_core::CompiledKey<E>,
        evals: &mut zkpipe_core::reduce::QapEvals<E::ScalarField>,
        w: &[zkpipe_core::backend::ScalarInt<E>],
        h: &mut Vec<zkpipe_core::backend::ScalarInt<E>>,
        g2: bool,
        t: &mut zkpipe_core::Timings,
    ) -> Result<zkpipe_core::stages::DeviceSums<E>, zkpipe_core::Error> {
        self.log
            .singles
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        std::thread::sleep(PASS);
        self.pass(key, evals, w, h, g2, t)
    }
    fn reduces_on_device(&self, _key: &zkpipe_core::CompiledKey<E>) -> bool {
        self.reduces
    }
    fn batch_limit(&self, _key: &zkpipe_core::CompiledKey<E>) -> usize {
        self.limit
    }
    fn device_batch(
        &self,
        key: &zkpipe_core::CompiledKey<E>,
        inputs: &mut [zkpipe_core::PassInput<'_, E>],
        g2: bool,
    ) -> Vec<Result<zkpipe_core::stages::DeviceSums<E>, zkpipe_core::Error>> {
        self.log.batches.lock().unwrap().push(inputs.len());
        std::thread::sleep(PASS);
        inputs
            .iter_mut()
            .map(|p| self.pass(key, p.evals, p.w, p.h, g2, p.t))
            .collect()
    }
}

/// One device whose backends are [`Batching`] CPU backends, with a device-memory budget
/// if `memory` is set (a key's copy and a partition take what they take on the host).
struct BatchingFactory {
    limit: usize,
    memory: Option<u64>,
    reduces: bool,
    log: Arc<BatchLog>,
}

impl BatchingFactory {
    fn backend(&self) -> Batching<zkpipe_core::CpuBackend> {
        Batching {
            inner: zkpipe_core::CpuBackend,
            limit: self.limit,
            reduces: self.reduces,
            log: Arc::clone(&self.log),
        }
    }
}

impl zkpipe_engine::BackendFactory for BatchingFactory {
    fn devices(&self) -> Vec<zkpipe_engine::DeviceInfo> {
        vec![zkpipe_engine::DeviceInfo {
            name: "batching0".into(),
            memory_total: self.memory,
        }]
    }
    fn reduces_on_device(&self) -> bool {
        self.reduces
    }
    fn max_batch(&self) -> usize {
        self.limit
    }
    fn key_device_bytes(&self, key: &zkpipe_engine::KeyMeta) -> u64 {
        key.host_bytes
    }
    fn partition_device_bytes(&self, key: &zkpipe_engine::KeyMeta) -> u64 {
        key.partition_bytes
    }
    /// Its backends run the CPU's MSMs, so they hold what the CPU's do.
    fn partition_host_bytes(&self, key: &zkpipe_engine::KeyMeta) -> u64 {
        CpuFactory.partition_host_bytes(key)
    }
    fn bind_bn254(
        &self,
        _: &Arc<zkpipe_core::CompiledKey<Bn254>>,
        _: usize,
    ) -> Result<Arc<dyn zkpipe_core::Backend<Bn254>>, zkpipe_core::Error> {
        Ok(Arc::new(self.backend()))
    }
    fn bind_bls12_381(
        &self,
        _: &Arc<zkpipe_core::CompiledKey<Bls12_381>>,
        _: usize,
    ) -> Result<Arc<dyn zkpipe_core::Backend<Bls12_381>>, zkpipe_core::Error> {
        Ok(Arc::new(self.backend()))
    }
}

/// An engine with `cfg` over one [`BatchingFactory`] device (batch limit 4), and the log
/// of what its backends were asked.
fn batching_engine(
    cfg: EngineConfig,
    memory: Option<u64>,
    reduces: bool,
) -> (Engine, Arc<BatchLog>) {
    let (factory, log) = batching_factory(memory, reduces);
    (Engine::start(cfg, factory).unwrap(), log)
}

/// A [`BatchingFactory`] (batch limit 4) and its log.
fn batching_factory(memory: Option<u64>, reduces: bool) -> (Arc<BatchingFactory>, Arc<BatchLog>) {
    let log = Arc::new(BatchLog::default());
    let factory = BatchingFactory {
        limit: 4,
        memory,
        reduces,
        log: Arc::clone(&log),
    };
    (Arc::new(factory), log)
}

/// Submits `n` single-partition jobs of `id` at once and checks every proof.
fn prove_many(engine: &Engine, dir: &Path, id: &str, n: usize) {
    let jobs: Vec<u64> = (0..n)
        .map(|_| {
            engine
                .submit(request(id, 1, Priority::Normal))
                .unwrap()
                .job_id
        })
        .collect();
    for j in jobs {
        check_job(engine, dir, j);
    }
}

/// (count, sum) of `zkpipe_device_batch_size` on device "batching0".
fn batch_size_metric(engine: &Engine) -> (f64, f64) {
    let text = engine.metrics_text();
    let value = |name: &str| -> f64 {
        let prefix = format!("{name}{{device=\"batching0\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .unwrap_or_else(|| panic!("no {prefix} in\n{text}"))
            .parse()
            .unwrap()
    };
    (
        value("zkpipe_device_batch_size_count"),
        value("zkpipe_device_batch_size_sum"),
    )
}

/// Proofs of one key queued for a device that batches share passes, never more than the
/// backend's limit, and every proof verifies.
#[test]
fn queued_proofs_of_one_key_share_device_passes_up_to_the_backend_limit() {
    let dir = key_dir();
    let (engine, log) = batching_engine(config(dir.path()), None, false);
    prove_many(&engine, dir.path(), "bn254-poseidon", 24);
    let batches = log.batches();
    assert!(
        batches.iter().any(|&n| n > 1),
        "some passes batch: {batches:?}"
    );
    assert!(batches.iter().all(|&n| (2..=4).contains(&n)), "{batches:?}");
    let partitions = batches.iter().sum::<usize>() + log.singles();
    assert_eq!(partitions, 24, "every partition had exactly one pass");
    let (count, sum) = batch_size_metric(&engine);
    assert_eq!(count as usize, batches.len() + log.singles());
    assert_eq!(sum as usize, 24);
    let st = engine.status();
    assert_eq!(st.pending_partitions, 0);
    assert!(st.keys.iter().all(|k| k.refs == 0));
    engine.shutdown();
}

/// A device's queue holds a full batch even where `queue_depth` is smaller: with a depth
/// of 1, batches still grow past the 2 proofs (the worker's and the one queued) that such
/// a queue would allow.
#[test]
fn a_device_queue_holds_a_full_batch_whatever_the_queue_depth() {
    let dir = key_dir();
    let cfg = EngineConfig {
        queue_depth: 1,
        ..config(dir.path())
    };
    let (engine, log) = batching_engine(cfg, None, false);
    prove_many(&engine, dir.path(), "bn254-poseidon", 24);
    let batches = log.batches();
    assert!(batches.iter().any(|&n| n > 2), "{batches:?}");
    assert!(batches.iter().all(|&n| n <= 4), "{batches:?}");
    engine.shutdown();
}

/// `device_batch = 1` turns batching off whatever the backend allows.
#[test]
fn a_device_batch_of_1_runs_every_partition_alone() {
    let dir = key_dir();
    let cfg = EngineConfig {
        device_batch: Some(1),
        ..config(dir.path())
    };
    let (engine, log) = batching_engine(cfg, None, false);
    prove_many(&engine, dir.path(), "bn254-poseidon", 12);
    assert_eq!(log.batches(), Vec::<usize>::new());
    assert_eq!(log.singles(), 12);
    assert_eq!(batch_size_metric(&engine), (12.0, 12.0), "12 passes of 1");
    engine.shutdown();
}

/// A device budget with room for the key and three and a half partitions: the worker in
/// the gate takes what fits without waiting, so batches stay below the backend's limit of
/// 4, every job completes (no deadlock), and the partitions' device memory comes back.
#[test]
fn a_full_device_budget_makes_batches_smaller_instead_of_waiting() {
    let dir = key_dir();
    // Sizes as this factory's engine counts them (its backends' host copies included).
    let meta = key_meta_on(
        dir.path(),
        "bn254-poseidon",
        batching_factory(None, false).0,
    );
    let (engine, log) = batching_engine(
        config(dir.path()),
        Some(meta.host_bytes + 3 * meta.partition_bytes + meta.partition_bytes / 2),
        false,
    );
    prove_many(&engine, dir.path(), "bn254-poseidon", 16);
    let batches = log.batches();
    assert!(
        batches.iter().any(|&n| n > 1),
        "some passes batch: {batches:?}"
    );
    assert!(
        batches.iter().all(|&n| n <= 3),
        "the budget caps: {batches:?}"
    );
    assert_eq!(batches.iter().sum::<usize>() + log.singles(), 16);
    let st = engine.status();
    assert_eq!(
        st.devices[0].memory_reserved, meta.host_bytes,
        "only the key's resident copy remains"
    );
    engine.shutdown();
}

/// Where the device computes a, b, c from the witness (as the GPU backend does), the
/// reduce stage hands it w alone, singly and in batches, and every proof still verifies.
#[test]
fn a_device_that_reduces_gets_the_witness_alone_and_proofs_verify() {
    let dir = key_dir();
    let (engine, log) = batching_engine(config(dir.path()), None, true);
    prove_many(&engine, dir.path(), "bn254-poseidon", 12);
    prove_many(&engine, dir.path(), "bls-poseidon", 4);
    assert_eq!(
        log.reduced.load(std::sync::atomic::Ordering::SeqCst),
        16,
        "the device reduced every partition"
    );
    assert_eq!(log.batches().iter().sum::<usize>() + log.singles(), 16);
    engine.shutdown();
}

/// A CPU factory whose backends hold 1 GiB more host memory per partition.
struct Hungry;

const HUNGER: u64 = 1 << 30;

impl BackendFactory for Hungry {
    fn devices(&self) -> Vec<zkpipe_engine::DeviceInfo> {
        CpuFactory.devices()
    }
    fn partition_host_bytes(&self, key: &zkpipe_engine::KeyMeta) -> u64 {
        CpuFactory.partition_host_bytes(key) + HUNGER
    }
    cpu_backends!();
}

#[test]
fn backends_host_memory_counts_in_each_partition() {
    let dir = key_dir();
    let meta = key_meta(dir.path(), "bn254-poseidon");
    let seen = key_meta_on(dir.path(), "bn254-poseidon", Arc::new(Hungry));
    assert_eq!(seen.partition_bytes, meta.partition_bytes + HUNGER);
    // A budget that fits the CPU backend's partition refuses the hungry one at once.
    let mut cfg = config(dir.path());
    cfg.memory_limit = meta.host_bytes + meta.partition_bytes + 1024;
    let tight = Engine::start(cfg, Arc::new(Hungry)).unwrap();
    assert!(matches!(
        tight.submit(request("bn254-poseidon", 1, Priority::Normal)),
        Err(EngineError::TooLarge { .. })
    ));
    tight.shutdown();
}
