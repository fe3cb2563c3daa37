//! A device set seen as more devices, to exercise and measure scheduling across devices on
//! a machine with fewer (`device.split`): each device of an inner set appears as `ways`
//! devices, each with its own share of the device's memory, bound separately (its own
//! copy of a key) and scheduled separately by the engine (its own queue, gate, workers
//! and pool). The CPU split in two is two CPU devices proving for real, so every proof
//! passes the self-check; one GPU split in two is the "two daemons on one GPU" cell in
//! one process.
//!
//! With a stub delay (`device.stub_delay`, a lab setting), a pass is replaced by that
//! fixed delay: it runs the real pass once per distinct witness and hands back its sums
//! (which do not depend on the proof's blinding) for every later pass of that witness, so
//! the host path (receive, decode, reduce, tail, self-check, reply) runs at full rate
//! with the device's time fixed, and every proof still verifies. Its sums include [B]₂
//! (summed once per witness where the inner device leaves it to the tail, as the CPU
//! does), it reduces in its pass (the real pass's a, b, c made by the stub where the
//! inner device does not reduce), and its passes take batches as a GPU's do: the host's
//! work around the pass is a GPU host's. A witness is known by a
//! sample of its values: two witnesses alike in every sampled value would share sums,
//! and the second one's proof would fail its self-check (loudly, never a wrong proof).

use ark_ff::PrimeField;
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zkpipe_core::device::{
    BindOptions, BoundKey, Caps, DeviceInfo, Devices, G1Set, KeyShape, PassInput, PassWitness,
};
use zkpipe_core::msm::{DeviceSums, ScalarInt};
use zkpipe_core::reduce::{reduce, QapEvals, DEFAULT_SCHEDULE};
use zkpipe_core::{Bls12_381, Bn254, CompiledKey, Curve, Error as CoreError};
use zkpipe_core::{Residency, StreamPlanError};

/// Witnesses whose sums a stubbed binding keeps; beyond it the cache starts over.
const STUB_CACHE: usize = 4096;

/// The most proofs a stubbed pass takes, as a GPU's pass of a small in-core key does
/// (`zkpipe_cuda`'s `BATCH_MAX_PROOFS`), whatever the inner device batches: the tail then
/// gets a GPU host's batches.
const STUB_BATCH: usize = 64;

/// A stubbed binding's caps: the inner device's, with the reduce and [B]₂ in the pass and
/// batches of up to [`STUB_BATCH`], as a GPU's.
fn stub_caps(inner: Caps) -> Caps {
    Caps {
        reduces: true,
        g2: true,
        batch_limit: inner.batch_limit.max(STUB_BATCH),
        ..inner
    }
}

/// Values of a witness its fingerprint samples, spread evenly (plus the first few, where
/// the public signals are).
const SAMPLES: usize = 64;

/// `inner`'s devices, each seen as `ways` devices, passes optionally stubbed (see the
/// module doc).
pub struct SplitDevices {
    inner: Arc<dyn Devices>,
    ways: usize,
    stub: Option<Duration>,
}

impl SplitDevices {
    /// `inner`'s devices split `ways` ways (at least 1), each pass replaced by `stub`
    /// where set.
    pub fn new(inner: Arc<dyn Devices>, ways: usize, stub: Option<Duration>) -> Self {
        Self {
            inner,
            ways: ways.max(1),
            stub,
        }
    }

    fn bind<E: Curve>(
        &self,
        bound: Result<Box<dyn BoundKey<E>>, CoreError>,
    ) -> Result<Box<dyn BoundKey<E>>, CoreError> {
        let bound = bound?;
        Ok(match self.stub {
            Some(delay) => Box::new(Stubbed {
                inner: bound,
                delay,
                sums: Mutex::new(HashMap::new()),
            }),
            None => bound,
        })
    }
}

impl Devices for SplitDevices {
    /// Each inner device `ways` times, named `<name>.<k>`, with its share of the memory.
    fn list(&self) -> Vec<DeviceInfo> {
        let ways = self.ways;
        self.inner
            .list()
            .into_iter()
            .flat_map(|d| {
                (0..ways).map(move |k| DeviceInfo {
                    name: format!("{}.{k}", d.name),
                    memory_total: d.memory_total.map(|m| m / ways as u64),
                })
            })
            .collect()
    }
    fn caps(&self, shape: &KeyShape, opts: &BindOptions) -> Caps {
        let caps = self.inner.caps(shape, opts);
        match self.stub {
            Some(_) => stub_caps(caps),
            None => caps,
        }
    }
    fn max_batch(&self) -> usize {
        match self.stub {
            Some(_) => self.inner.max_batch().max(STUB_BATCH),
            None => self.inner.max_batch(),
        }
    }
    fn passes_per_device(&self) -> usize {
        self.inner.passes_per_device()
    }
    fn key_device_bytes(&self, shape: &KeyShape, opts: &BindOptions) -> u64 {
        self.inner.key_device_bytes(shape, opts)
    }
    fn partition_device_bytes(&self, shape: &KeyShape, opts: &BindOptions) -> u64 {
        self.inner.partition_device_bytes(shape, opts)
    }
    /// The inner device's; a stub over a device that does not reduce also makes the real
    /// pass's a, b, c (and the field elements of w they are made from) itself, where the
    /// engine, seeing a device that reduces, counts none.
    fn partition_host_bytes(&self, shape: &KeyShape, opts: &BindOptions) -> u64 {
        let inner = self.inner.partition_host_bytes(shape, opts);
        match self.stub {
            Some(_) if !self.inner.caps(shape, opts).reduces => {
                inner + (32 * (3 * shape.domain_size + shape.n_vars)) as u64
            }
            _ => inner,
        }
    }
    fn bind_bn254(
        &self,
        device: usize,
        key: Arc<CompiledKey<Bn254>>,
        opts: &BindOptions,
    ) -> Result<Box<dyn BoundKey<Bn254>>, CoreError> {
        self.bind(self.inner.bind_bn254(device / self.ways, key, opts))
    }
    fn bind_bls12_381(
        &self,
        device: usize,
        key: Arc<CompiledKey<Bls12_381>>,
        opts: &BindOptions,
    ) -> Result<Box<dyn BoundKey<Bls12_381>>, CoreError> {
        self.bind(self.inner.bind_bls12_381(device / self.ways, key, opts))
    }
}

/// One proof's result of a pass.
type PassResult<E> = Result<DeviceSums<E>, CoreError>;

/// A binding whose passes are stubbed by a fixed delay (see the module doc).
struct Stubbed<E: Curve> {
    inner: Box<dyn BoundKey<E>>,
    delay: Duration,
    /// Sums by witness fingerprint.
    sums: Mutex<HashMap<u64, DeviceSums<E>>>,
}

impl<E: Curve> Stubbed<E> {
    /// a = A·w, b = B·w, c = a∘b of a pass's witness, where the inner device wants them
    /// (empty otherwise).
    fn reduce(&self, w: PassWitness<'_, E>) -> QapEvals<E::ScalarField> {
        if self.inner.caps().reduces {
            return QapEvals::zeroed(0);
        }
        let key = self.inner.key();
        let values: Vec<E::ScalarField> = match w {
            PassWitness::Scalars(s) => s
                .iter()
                .map(|&x| E::ScalarField::from_bigint(x).expect("a scalar made of a field element"))
                .collect(),
            PassWitness::Montgomery(f) => f.to_vec(),
        };
        let mut evals = QapEvals::zeroed(key.domain_size());
        reduce(&key.a, &key.b, &values, &mut evals, DEFAULT_SCHEDULE);
        evals
    }

    /// Σ wᵢ·B₂ᵢ of a pass's witness, on the inner device.
    fn b2(&self, w: PassWitness<'_, E>) -> Result<E::G2, CoreError> {
        self.inner.msm_g2(&w.scalars())
    }
}

/// A witness's fingerprint: its length, its first values and a sample of the rest.
fn fingerprint<E: Curve>(w: PassWitness<'_, E>) -> u64 {
    fn sample<T>(values: &[T], h: &mut DefaultHasher, one: impl Fn(&T, &mut DefaultHasher)) {
        values.len().hash(h);
        let step = (values.len() / SAMPLES).max(1);
        values.iter().take(16).for_each(|v| one(v, h));
        values.iter().step_by(step).for_each(|v| one(v, h));
    }
    let mut h = DefaultHasher::new();
    match w {
        PassWitness::Scalars(s) => sample(s, &mut h, |v, h| v.as_ref().hash(h)),
        PassWitness::Montgomery(f) => sample(f, &mut h, |v, h| v.hash(h)),
    }
    h.finish()
}

impl<E: Curve> BoundKey<E> for Stubbed<E> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn key(&self) -> &Arc<CompiledKey<E>> {
        self.inner.key()
    }
    fn caps(&self) -> Caps {
        stub_caps(self.inner.caps())
    }
    fn residency(&self) -> Result<Residency, StreamPlanError> {
        self.inner.residency()
    }
    fn pinnable_bytes(&self) -> u64 {
        self.inner.pinnable_bytes()
    }
    fn host_bytes(&self) -> u64 {
        self.inner.host_bytes()
    }
    fn pin(&self) -> Result<(), CoreError> {
        self.inner.pin()
    }
    fn unpin(&self) {
        self.inner.unpin()
    }
    fn is_pinned(&self) -> bool {
        self.inner.is_pinned()
    }
    fn quotient(&self, evals: &mut QapEvals<E::ScalarField>) -> Result<(), CoreError> {
        self.inner.quotient(evals)
    }
    fn msm_g1(&self, set: G1Set, s: &[ScalarInt<E>]) -> Result<E::G1, CoreError> {
        self.inner.msm_g1(set, s)
    }
    fn msm_g2(&self, s: &[ScalarInt<E>]) -> Result<E::G2, CoreError> {
        self.inner.msm_g2(s)
    }

    /// The known sums of each input's witness, the real pass for the others, and the
    /// rest of the delay.
    fn pass(&self, inputs: &mut [PassInput<'_, E>]) -> Vec<PassResult<E>> {
        let started = Instant::now();
        let prints: Vec<u64> = inputs.iter().map(|p| fingerprint(p.w)).collect();
        let mut out: Vec<Option<PassResult<E>>> = {
            let known = self.sums.lock().unwrap_or_else(|e| e.into_inner());
            prints
                .iter()
                .map(|f| known.get(f).copied().map(Ok))
                .collect()
        };
        let missing: Vec<usize> = (0..out.len()).filter(|&i| out[i].is_none()).collect();
        if !missing.is_empty() {
            // The stub reduces as a GPU does (the reduce stage left `evals` empty); an
            // inner device that does not reduce gets a, b, c made here.
            let mut reduced: Vec<QapEvals<E::ScalarField>> =
                missing.iter().map(|&i| self.reduce(inputs[i].w)).collect();
            let mut real: Vec<PassInput<'_, E>> = inputs
                .iter_mut()
                .enumerate()
                .filter(|(i, _)| out[*i].is_none())
                .zip(&mut reduced)
                .map(|((_, p), evals)| PassInput {
                    evals: if self.inner.caps().reduces {
                        &mut *p.evals
                    } else {
                        evals
                    },
                    w: p.w,
                    h: &mut *p.h,
                    t: &mut *p.t,
                })
                .collect();
            let sums = self.inner.pass(&mut real);
            // [B]₂ too, where the inner device leaves it to the tail (the CPU): a GPU sums
            // it in its pass, and the stub stands for one, so the tail's CPU is a GPU
            // host's.
            let sums: Vec<PassResult<E>> = missing
                .iter()
                .zip(sums)
                .map(|(&i, s)| match s {
                    Ok(s) if s.b2.is_none() => Ok(DeviceSums {
                        b2: Some(self.b2(inputs[i].w)?),
                        ..s
                    }),
                    s => s,
                })
                .collect();
            let mut known = self.sums.lock().unwrap_or_else(|e| e.into_inner());
            if known.len() + missing.len() > STUB_CACHE {
                known.clear();
            }
            for (&i, s) in missing.iter().zip(sums) {
                if let Ok(s) = &s {
                    known.insert(prints[i], *s);
                }
                out[i] = Some(s);
            }
        }
        if let Some(rest) = self.delay.checked_sub(started.elapsed()) {
            std::thread::sleep(rest);
        }
        out.into_iter()
            .map(|s| {
                s.unwrap_or_else(|| {
                    Err(CoreError::Backend {
                        backend: "stub",
                        message: "the device pass returned fewer results than proofs".into(),
                    })
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zkpipe_core::CpuDevices;

    #[test]
    fn each_device_is_listed_ways_times_with_its_share_of_memory() {
        let split = SplitDevices::new(Arc::new(CpuDevices::default()), 3, None);
        let names: Vec<String> = split.list().into_iter().map(|d| d.name).collect();
        assert_eq!(names, ["cpu.0", "cpu.1", "cpu.2"]);
        assert_eq!(
            SplitDevices::new(Arc::new(CpuDevices::default()), 0, None)
                .list()
                .len(),
            1
        );
    }

    /// A stub over the CPU (which neither reduces in its pass nor sums [B]₂) is passed
    /// what a GPU is, no a, b, c, and hands back the CPU's own sums with [B]₂ added, from
    /// its real pass and from its cache alike.
    #[test]
    fn a_stubbed_cpu_pass_reduces_and_sums_b2_as_a_gpu_does() {
        use zkpipe_core::reduce::{QapEvals, DEFAULT_SCHEDULE};
        use zkpipe_core::stages::{reduce_stage, ReduceOn};
        use zkpipe_core::{CpuBound, PointChecks, Timings, Witness};
        use zkpipe_formats::{wtns::Wtns, zkey::ZkeyFile};
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/bn254/multi_public");
        let zkey = ZkeyFile::open(dir.join("circuit.zkey")).unwrap();
        let key = Arc::new(CompiledKey::<Bn254>::compile(&zkey, PointChecks::Trusted).unwrap());
        let wtns = Wtns::read(dir.join("witness.wtns")).unwrap();
        let witness = Witness::check_for(&wtns, &key).unwrap();
        let cpu = CpuBound::new(Arc::clone(&key));
        let stub = Stubbed {
            inner: Box::new(CpuBound::new(Arc::clone(&key))),
            delay: Duration::ZERO,
            sums: Mutex::new(HashMap::new()),
        };
        // The reduce stage as it runs for each binding's caps: the stub's leaves a, b, c
        // to the pass.
        let pass = |bound: &dyn BoundKey<Bn254>| {
            let (mut evals, mut w, mut h) = (QapEvals::zeroed(0), Vec::new(), Vec::new());
            let mut t = Timings::default();
            let on = ReduceOn::for_caps(bound.caps(), DEFAULT_SCHEDULE);
            reduce_stage(&key, &witness, &mut evals, &mut w, on, true, &mut t).unwrap();
            let mut input = [PassInput {
                evals: &mut evals,
                w: PassWitness::Scalars(&w),
                h: &mut h,
                t: &mut t,
            }];
            (bound.pass(&mut input).remove(0).unwrap(), w)
        };
        let (plain, w) = pass(&cpu);
        assert_eq!(plain.b2, None, "the CPU leaves [B]2 to the tail");
        let b2 = Some(cpu.msm_g2(&w).unwrap());
        let real = pass(&stub).0;
        assert_eq!(
            (real.a, real.h, real.b2),
            (plain.a, plain.h, b2),
            "the real pass"
        );
        let cached = pass(&stub).0;
        assert_eq!(cached.b2, b2, "from the cache");
        assert_eq!(stub.sums.lock().unwrap().len(), 1);
        let caps = stub.caps();
        assert!(
            caps.reduces && caps.g2 && caps.batch_limit == STUB_BATCH,
            "{caps:?}"
        );
    }

    #[test]
    fn a_fingerprint_tells_witnesses_apart_by_their_sampled_values() {
        use ark_ff::{One, Zero};
        type F = <Bn254 as ark_ec::pairing::Pairing>::ScalarField;
        let a: Vec<F> = (0..1000u64).map(F::from).collect();
        let mut b = a.clone();
        let print = |w: &[F]| fingerprint::<Bn254>(PassWitness::Montgomery(w));
        assert_eq!(print(&a), print(&b));
        b[3] += F::one();
        assert_ne!(print(&a), print(&b), "a public signal differs");
        let zeros = vec![F::zero(); 1000];
        assert_ne!(print(&zeros), print(&zeros[..999]), "lengths differ");
    }
}
