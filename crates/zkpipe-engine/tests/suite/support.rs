//! What the engine's suites share: the committed fixtures' keys and witnesses, an
//! engine's test configuration, proof checks, and [`TestDevices`]: CPU "devices" with
//! budgets, delays, planted faults and a log of their passes.

use ark_ec::PrimeGroup;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use zkpipe_core::device::{
    BindOptions, BoundKey, Caps, DeviceInfo, Devices, G1Set, KeyShape, PassInput, PassWitness,
};
use zkpipe_core::msm::{DeviceSums, ScalarInt};
use zkpipe_core::synth::{SynthSpec, ValueProfile, Values};
use zkpipe_core::verify::public_from_json;
use zkpipe_core::{verify, Bls12_381, Bn254, Curve, PointChecks, Proof, VerifyingKey};
use zkpipe_core::{CompiledKey, CpuBound, CpuDevices};
use zkpipe_engine::{Engine, EngineConfig, JobState, Priority, StageConfig, SubmitRequest};
use zkpipe_formats::json::ProofJson;
use zkpipe_formats::zkey::ZkeyFile;

pub(crate) fn fixture(curve: &str, circuit: &str, file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(curve)
        .join(circuit)
        .join(file)
}

/// (key id, curve folder, circuit) of the keys in the test key directory.
pub(crate) const KEYS: [(&str, &str, &str); 4] = [
    ("bn254-poseidon", "bn254", "poseidon"),
    ("bn254-multi", "bn254", "multi_public"),
    ("bls-poseidon", "bls12-381", "poseidon"),
    ("bls-multi", "bls12-381", "multi_public"),
];

pub(crate) fn key_dir() -> tempfile::TempDir {
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

pub(crate) fn config(dir: &Path) -> EngineConfig {
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

pub(crate) fn witness(id: &str) -> Vec<u8> {
    let (_, curve, circuit) = KEYS.iter().find(|k| k.0 == id).unwrap();
    std::fs::read(fixture(curve, circuit, "witness.wtns")).unwrap()
}

pub(crate) fn request(id: &str, partitions: usize, priority: Priority) -> SubmitRequest {
    SubmitRequest {
        key_id: id.into(),
        witnesses: vec![witness(id); partitions],
        priority,
        request_id: String::new(),
    }
}

pub(crate) fn check_proof<E: Curve>(dir: &Path, id: &str, proof_json: &str, public_json: &str) {
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

pub(crate) fn check_job(engine: &Engine, dir: &Path, job: u64) {
    let s = engine.wait(job, Duration::from_secs(300)).unwrap();
    assert_eq!(s.state, JobState::Done, "job {job}: {:?}", s.error);
    assert_eq!(s.proofs.len(), s.partitions);
    for p in &s.proofs {
        if s.key_id.starts_with("bn254") {
            check_proof::<Bn254>(dir, &s.key_id, &p.proof_json, &p.public_json);
        } else {
            check_proof::<Bls12_381>(dir, &s.key_id, &p.proof_json, &p.public_json);
        }
        assert!(p.timings.total >= p.timings.get(zkpipe_engine::Stage::Reduce));
    }
}

/// The engine's status once every finished partition has let go (a job is marked done
/// when its last proof is recorded; the partition's ticket and lease go just after).
pub(crate) fn settled(engine: &Engine) -> zkpipe_engine::EngineStatus {
    // A finished partition's reservation and witness are given back just after its job's
    // state is final (on its stage's thread and the deallocator): wait for its bytes too,
    // until only keys hold host memory.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let st = engine.status();
        let idle = st.pending_partitions == 0
            && st.keys.iter().all(|k| k.refs == 0)
            && st.memory_used == held_by_keys(&st);
        if idle || std::time::Instant::now() >= deadline {
            return st;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Host bytes the keys hold: loaded keys' compiled bytes, their bindings' own and their
/// pinned copies.
pub(crate) fn held_by_keys(st: &zkpipe_engine::EngineStatus) -> u64 {
    st.keys
        .iter()
        .filter(|k| k.residency.is_loaded())
        .map(|k| k.meta.host_bytes + k.binding_host_bytes)
        .sum::<u64>()
        + st.keys.iter().map(|k| k.pinned_bytes).sum::<u64>()
}

/// What a [`TestDevices`] device was asked to do: the size of each pass, and how many
/// proofs it reduced itself.
#[derive(Default)]
pub(crate) struct PassLog {
    pub(crate) passes: std::sync::Mutex<Vec<usize>>,
    /// Sizes of the passes inside the device now.
    pub(crate) inside: std::sync::Mutex<Vec<usize>>,
    /// (its size, the largest pass inside) of each pass that started while another was
    /// inside.
    pub(crate) overlapping: std::sync::Mutex<Vec<(usize, usize)>>,
    pub(crate) reduced: std::sync::atomic::AtomicUsize,
    /// (device, size) of each pass, logged as it starts.
    pub(crate) by_device: std::sync::Mutex<Vec<(usize, usize)>>,
    /// Proofs passed so far (`Fault::Corrupt` corrupts every third).
    pub(crate) proofs: std::sync::atomic::AtomicUsize,
}

impl PassLog {
    /// Sizes of the passes that started on `device`, in order.
    pub(crate) fn on(&self, device: usize) -> Vec<usize> {
        let log = self.by_device.lock().unwrap();
        log.iter().filter(|p| p.0 == device).map(|p| p.1).collect()
    }

    /// Sizes of the passes of more than one proof.
    pub(crate) fn batches(&self) -> Vec<usize> {
        self.passes
            .lock()
            .unwrap()
            .iter()
            .copied()
            .filter(|&n| n > 1)
            .collect()
    }
    /// Passes of one proof.
    pub(crate) fn singles(&self) -> usize {
        self.passes
            .lock()
            .unwrap()
            .iter()
            .filter(|&&n| n == 1)
            .count()
    }
}

/// CPU "devices" for the tests: `count` of them named `{name}{i}`, with a device-memory
/// budget if `memory` is set (a key's copy and a partition take what they take on the
/// host); passes of up to `batch_limit` proofs that each take `pass_delay` longer (as on
/// a GPU, where small proofs cost about a fixed time per pass); with `reduces`, the
/// device computes a, b, c itself from w and insists that the reduce stage left them out;
/// `hunger` more host bytes per partition; `binding_host` host bytes each binding holds
/// beside its key (`BoundKey::host_bytes`); `fail` makes binding or every pass fail.
#[derive(Clone)]
pub(crate) struct TestDevices {
    pub(crate) name: &'static str,
    pub(crate) count: usize,
    pub(crate) memory: Option<u64>,
    pub(crate) batch_limit: usize,
    pub(crate) pass_delay: Duration,
    pub(crate) reduces: bool,
    pub(crate) hunger: u64,
    pub(crate) binding_host: u64,
    pub(crate) fail: Fault,
    /// How long binding a key takes (as an upload does).
    pub(crate) bind_delay: Duration,
    pub(crate) log: Arc<PassLog>,
    /// Devices whose passes wait, once started, until released ([`Holds`]).
    pub(crate) holds: Arc<Holds>,
    /// Keys bind as streamed (as a GPU binds a key larger than its budget).
    pub(crate) streamed: bool,
}

/// Devices held busy: a pass on one of them, once started and logged, waits until the
/// test releases the device, so a test can keep a device busy for as long as it needs.
#[derive(Default)]
pub(crate) struct Holds {
    pub(crate) held: std::sync::Mutex<Vec<usize>>,
    pub(crate) released: std::sync::Condvar,
}

impl Holds {
    pub(crate) fn hold(&self, device: usize) {
        self.held.lock().unwrap().push(device);
    }
    pub(crate) fn release(&self, device: usize) {
        self.held.lock().unwrap().retain(|&d| d != device);
        self.released.notify_all();
    }
    pub(crate) fn wait(&self, device: usize) {
        let held = self.held.lock().unwrap();
        drop(
            self.released
                .wait_while(held, |h| h.contains(&device))
                .unwrap(),
        );
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    None,
    Bind,
    Pass,
    /// Every third proof's sums come back wrong (A off by the generator), as a faulty
    /// device's would: only the self-check can tell.
    Corrupt,
}

impl Default for TestDevices {
    fn default() -> Self {
        Self {
            name: "test",
            count: 1,
            memory: None,
            batch_limit: 1,
            pass_delay: Duration::ZERO,
            reduces: false,
            hunger: 0,
            binding_host: 0,
            fail: Fault::None,
            bind_delay: Duration::ZERO,
            log: Arc::default(),
            holds: Arc::default(),
            streamed: false,
        }
    }
}

impl TestDevices {
    pub(crate) fn caps(&self) -> Caps {
        // A device that reduces also reads the witness's field elements, as the GPU does.
        Caps {
            reduces: self.reduces,
            batch_limit: self.batch_limit,
            montgomery_w: self.reduces,
            ..zkpipe_core::cpu::CPU_CAPS
        }
    }

    pub(crate) fn bind<E: Curve>(
        &self,
        device: usize,
        key: Arc<CompiledKey<E>>,
    ) -> Result<Box<dyn BoundKey<E>>, zkpipe_core::Error> {
        std::thread::sleep(self.bind_delay);
        if self.fail == Fault::Bind {
            return Err(zkpipe_core::Error::Backend {
                backend: "test",
                message: "planted bind failure".into(),
            });
        }
        Ok(Box::new(TestBound {
            cpu: CpuBound::new(key),
            devices: self.clone(),
            device,
        }))
    }
}

impl Devices for TestDevices {
    fn list(&self) -> Vec<DeviceInfo> {
        (0..self.count)
            .map(|i| DeviceInfo {
                name: format!("{}{i}", self.name),
                memory_total: self.memory,
            })
            .collect()
    }
    fn caps(&self, _: &KeyShape, _: &BindOptions) -> Caps {
        TestDevices::caps(self)
    }
    fn max_batch(&self) -> usize {
        self.batch_limit
    }
    fn key_device_bytes(&self, shape: &KeyShape, _: &BindOptions) -> u64 {
        test_device_bytes(shape).0
    }
    fn partition_device_bytes(&self, shape: &KeyShape, _: &BindOptions) -> u64 {
        test_device_bytes(shape).1
    }
    /// Its passes run the CPU's MSMs, so they hold what the CPU's do.
    fn partition_host_bytes(&self, shape: &KeyShape, opts: &BindOptions) -> u64 {
        CpuDevices::default().partition_host_bytes(shape, opts) + self.hunger
    }
    fn bind_bn254(
        &self,
        device: usize,
        key: Arc<CompiledKey<Bn254>>,
        _: &BindOptions,
    ) -> Result<Box<dyn BoundKey<Bn254>>, zkpipe_core::Error> {
        self.bind(device, key)
    }
    fn bind_bls12_381(
        &self,
        device: usize,
        key: Arc<CompiledKey<Bls12_381>>,
        _: &BindOptions,
    ) -> Result<Box<dyn BoundKey<Bls12_381>>, zkpipe_core::Error> {
        self.bind(device, key)
    }
}

/// Device bytes of a key's copy and of a partition on these test devices (where they
/// have memory): sized from the key's shape, about what the host holds.
pub(crate) fn test_device_bytes(shape: &KeyShape) -> (u64, u64) {
    let n = (shape.n_vars + shape.domain_size) as u64;
    (2000 * n, 300 * n)
}

pub(crate) struct TestBound<E: Curve> {
    pub(crate) cpu: CpuBound<E>,
    pub(crate) devices: TestDevices,
    /// The device it is bound to.
    pub(crate) device: usize,
}

impl<E: Curve> TestBound<E> {
    /// The CPU's pass of one proof, after the reduce where this device does it.
    fn pass_one(&self, p: &mut PassInput<'_, E>) -> Result<DeviceSums<E>, zkpipe_core::Error> {
        if self.devices.fail == Fault::Pass {
            return Err(zkpipe_core::Error::Backend {
                backend: "test",
                message: "planted pass failure".into(),
            });
        }
        let nth = self
            .devices
            .log
            .proofs
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if self.devices.fail == Fault::Corrupt && nth % 3 == 2 {
            let mut sums = self.cpu.pass(std::slice::from_mut(p)).remove(0)?;
            sums.a += E::G1::generator();
            return Ok(sums);
        }
        if !self.devices.reduces {
            return self.cpu.pass(std::slice::from_mut(p)).remove(0);
        }
        assert!(
            p.evals.a.is_empty(),
            "the reduce stage computed a, b, c anyway"
        );
        let key = self.cpu.key();
        let PassWitness::Montgomery(witness) = p.w else {
            panic!("the engine handed scalars to a device that reads field elements")
        };
        let mut full = zkpipe_core::reduce::QapEvals::zeroed(key.domain_size());
        zkpipe_core::reduce::reduce(
            &key.a,
            &key.b,
            witness,
            &mut full,
            zkpipe_core::reduce::DEFAULT_SCHEDULE,
        );
        self.devices
            .log
            .reduced
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut input = PassInput {
            evals: &mut full,
            w: p.w,
            h: &mut *p.h,
            t: &mut *p.t,
        };
        self.cpu.pass(std::slice::from_mut(&mut input)).remove(0)
    }
}

impl<E: Curve> BoundKey<E> for TestBound<E> {
    fn name(&self) -> &'static str {
        "test"
    }
    fn key(&self) -> &Arc<CompiledKey<E>> {
        self.cpu.key()
    }
    fn caps(&self) -> Caps {
        self.devices.caps()
    }
    /// Streamed with the plan the CPU would make under a small limit, where the devices
    /// say so.
    fn residency(&self) -> Result<zkpipe_core::Residency, zkpipe_core::StreamPlanError> {
        if !self.devices.streamed {
            return Ok(zkpipe_core::Residency::InCore);
        }
        let sets = zkpipe_core::cpu::cpu_key_sets(&KeyShape::of_key(self.key()));
        let limit = 2 * sets.proof_bytes + 2 * sets.min_chunk_bytes();
        zkpipe_core::Residency::decide(&sets, Some(limit), 2)
    }
    fn host_bytes(&self) -> u64 {
        self.devices.binding_host
    }
    fn quotient(
        &self,
        e: &mut zkpipe_core::reduce::QapEvals<E::ScalarField>,
    ) -> Result<(), zkpipe_core::Error> {
        self.cpu.quotient(e)
    }
    fn msm_g1(&self, set: G1Set, s: &[ScalarInt<E>]) -> Result<E::G1, zkpipe_core::Error> {
        self.cpu.msm_g1(set, s)
    }
    fn msm_g2(&self, s: &[ScalarInt<E>]) -> Result<E::G2, zkpipe_core::Error> {
        self.cpu.msm_g2(s)
    }
    fn pass(
        &self,
        inputs: &mut [PassInput<'_, E>],
    ) -> Vec<Result<DeviceSums<E>, zkpipe_core::Error>> {
        let log = &self.devices.log;
        let n = inputs.len();
        log.passes.lock().unwrap().push(n);
        log.by_device.lock().unwrap().push((self.device, n));
        self.devices.holds.wait(self.device);
        {
            let mut inside = log.inside.lock().unwrap();
            if let Some(&theirs) = inside.iter().max() {
                log.overlapping.lock().unwrap().push((n, theirs));
            }
            inside.push(n);
        }
        std::thread::sleep(self.devices.pass_delay);
        let sums = inputs.iter_mut().map(|p| self.pass_one(p)).collect();
        let mut inside = log.inside.lock().unwrap();
        let i = inside.iter().position(|&m| m == n).unwrap();
        inside.swap_remove(i);
        sums
    }
}

/// A 1,000-constraint key (domain 2^10) whose witness has a SHA-256 circuit's values (mostly 0s and 1s,
/// so it packs), written as `bn254-sha.zkey` into `dir`; returns its witness as a `.wtns`.
pub(crate) fn sha_key(dir: &Path) -> Vec<u8> {
    let spec = SynthSpec {
        constraints: 1000,
        public: 1,
        seed: 7,
        values: Values::Profile(ValueProfile::SHA256),
    };
    let (r1cs, wtns) = zkpipe_core::synth::synth::<Bn254>(&spec);
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(1);
    let zkey = zkpipe_core::setup::dev_setup::<Bn254>(&r1cs, &mut rng, &|_, _| {}).unwrap();
    std::fs::write(dir.join("bn254-sha.zkey"), zkey.to_parts().concat()).unwrap();
    wtns.to_bytes()
}
