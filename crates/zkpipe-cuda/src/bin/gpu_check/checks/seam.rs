//! The seam end to end: a dev key bound to GPU 0 through [`CudaDevices`] (as the CLI and
//! the engine bind it) against the same key on the CPU ([`CpuBound`]): every verb
//! (`msm_g1` over each point set, `msm_g2`, `quotient`), one scalar short refused as a
//! `cuda:0` error, a pass of one proof and of several (a batch where the key is small),
//! with a, b, c reduced on the GPU and from the host; then whole proofs on the GPU,
//! verified by their self-check, and a witness that does not satisfy the circuit refused.

use crate::common::{once, random_scalars, summarize, verdict, Cfg};
use ark_ff::{Field, One, PrimeField, Zero};
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::cell::Cell;
use std::sync::Arc;
use zkpipe_core::device::bind;
use zkpipe_core::key::PointChecks;
use zkpipe_core::msm::{DeviceSums, ScalarInt};
use zkpipe_core::reduce::{QapEvals, DEFAULT_SCHEDULE};
use zkpipe_core::setup::dev_setup;
use zkpipe_core::stages::{device_stage, reduce_stage, ReduceOn};
use zkpipe_core::synth::{synth, SynthSpec, ValueProfile, Values};
use zkpipe_core::{prove, BindCurve, BoundKey, CompiledKey, CpuBound, Devices, Error, G1Set};
use zkpipe_core::{KeyShape, PassInput, PassWitness, ProveOptions, Timings, Witness};
use zkpipe_cuda::{CudaDevices, CudaError};
use zkpipe_formats::zkey::ZkeyFile;

pub(crate) type Res<T> = Result<T, Box<dyn std::error::Error>>;
pub(crate) type Sums<E> = Vec<Result<DeviceSums<E>, Error>>;

/// The seam at 2^12 (batched passes) and 2^16 (one proof a pass), up to 2^max_log, for
/// a key bound once (a one-shot proof's) and a resident one (with window tables and
/// blinding tables, as the daemon binds them); then each streamed through the GPU under
/// a device budget that cuts its point sets into at least 8 chunks, the walk's chunks in
/// the first proof's idle quotient vectors; in a `lab` build also beside them
/// (`LabSwitches::walk_beside`, the path a budget takes whose chunks beside the proofs
/// are larger than that room).
pub fn check_seam<E: BindCurve>(name: &str, devices: &CudaDevices, cfg: &Cfg) -> bool {
    let mut ok = true;
    for log in [12u32, 16].into_iter().filter(|&l| l <= cfg.max_log) {
        for resident in [false, true] {
            let name = if resident {
                format!("{name} (resident key)")
            } else {
                name.to_string()
            };
            ok &= seam_at::<E>(&name, devices, log, resident, None).unwrap_or_else(|e| {
                println!("{name} seam 2^{log}: {e}");
                false
            });
        }
        for &walk in Walk::ALL {
            let name = format!("{name} (streamed, 8+ chunks, {})", walk.name());
            ok &= seam_at::<E>(&name, devices, log, true, Some(walk)).unwrap_or_else(|e| {
                println!("{name} seam 2^{log}: {e}");
                false
            });
        }
    }
    ok & check_bit_path::<E>(name, devices, cfg)
}

/// The bit path (`crate::enabled::bits`): a dev key whose witness holds a SHA-256
/// circuit's values (0s and 1s, a few others; the perturbed witnesses add a 2),
/// streamed in 8+ chunks, and in a `lab` build also in-core with a lone proof on sppark's
/// path (which a domain over 2^20 takes by default), against the CPU.
fn check_bit_path<E: BindCurve>(name: &str, devices: &CudaDevices, cfg: &Cfg) -> bool {
    let values = Values::Profile(ValueProfile::SHA256);
    let log = 16u32.min(cfg.max_log);
    let mut runs: Vec<(String, Res<CudaDevices>, Option<Walk>)> = vec![(
        format!("{name} (SHA-256 values, streamed, 8+ chunks)"),
        Ok(devices.clone()),
        Some(Walk::InRoom),
    )];
    #[cfg(feature = "lab")]
    {
        let mut opts = *devices.options();
        opts.lab.lone_msm = Some(false);
        runs.push((
            format!("{name} (SHA-256 values, in-core, sppark's lone path)"),
            CudaDevices::new(opts).map_err(Into::into),
            None,
        ));
    }
    let mut ok = true;
    for (name, on, walk) in runs {
        ok &= on
            .and_then(|on| seam_with::<E>(&name, &on, log, true, walk, values))
            .unwrap_or_else(|e| {
                println!("{name} seam 2^{log}: {e}");
                false
            });
    }
    ok
}

/// Where a streamed seam's walk puts its chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walk {
    /// In the first proof's idle quotient vectors (the product's choice where larger).
    InRoom,
    /// Beside the proofs' buffers (`LabSwitches::walk_beside`).
    #[cfg(feature = "lab")]
    Beside,
}

impl Walk {
    #[cfg(feature = "lab")]
    const ALL: &[Walk] = &[Walk::InRoom, Walk::Beside];
    #[cfg(not(feature = "lab"))]
    const ALL: &[Walk] = &[Walk::InRoom];

    fn name(self) -> &'static str {
        match self {
            Walk::InRoom => "walk in room",
            #[cfg(feature = "lab")]
            Walk::Beside => "walk beside",
        }
    }
}

/// Points a largest G1 chunk holds under [`streaming_devices`]: an eighth of a set.
const CHUNKS: usize = 8;

/// The GPUs of `devices` under a device budget that streams `shape`'s G1 sets in at
/// least [`CHUNKS`] chunks: the budget of two proofs, the fixed scratch and the scratch
/// of a chunk of an eighth of the largest G1 set (the walk's two chunks in the first
/// proof's room), or also two such chunks beside the proofs ([`Walk::Beside`]).
fn streaming_devices(devices: &CudaDevices, shape: &KeyShape, walk: Walk) -> Res<CudaDevices> {
    let mut opts = *devices.options();
    let in_room = match walk {
        Walk::InRoom => true,
        #[cfg(feature = "lab")]
        Walk::Beside => {
            opts.lab.walk_beside = true;
            false
        }
    };
    // The sizes below (proofs, points, scratch) are the same with the walk in or beside.
    let sets = devices.key_sets(shape);
    let chunk = (shape.n_vars.max(shape.domain_size) / CHUNKS) as u64;
    let per_point = match in_room {
        true => sets.scratch.per_point,
        false => 2 * sets.g1_bytes as u64 + sets.scratch.per_point,
    };
    opts.memory_limit = Some(2 * sets.proof_bytes + sets.scratch.fixed + chunk * per_point);
    Ok(CudaDevices::new(opts)?)
}

fn seam_at<E: BindCurve>(
    name: &str,
    devices: &CudaDevices,
    log: u32,
    resident: bool,
    streamed: Option<Walk>,
) -> Res<bool> {
    seam_with::<E>(name, devices, log, resident, streamed, Values::Products)
}

/// The seam of a dev key of 2^log whose witness holds `values`, on `devices` (which
/// stream it where `streamed` says how).
fn seam_with<E: BindCurve>(
    name: &str,
    devices: &CudaDevices,
    log: u32,
    resident: bool,
    streamed: Option<Walk>,
    values: Values,
) -> Res<bool> {
    let (key, witness) = dev_key::<E>(log, values)?;
    let others = witness
        .values
        .iter()
        .filter(|v| !v.is_zero() && !v.is_one())
        .count();
    println!("{name} seam 2^{log}: {others} values neither 0 nor 1");
    if resident {
        key.prepare_resident();
    }
    let shape = KeyShape::of_key(&key);
    let streaming;
    let devices = match streamed {
        Some(walk) => {
            streaming = streaming_devices(devices, &shape, walk)?;
            &streaming
        }
        None => devices,
    };
    let gpu = bind(devices, 0, Arc::clone(&key), &Default::default())?;
    let cpu = CpuBound::new(Arc::clone(&key));
    let caps = gpu.caps();
    let ok = Cell::new(devices.caps(&shape, &Default::default()) == caps);
    println!(
        "{name} seam 2^{log}: caps {caps:?}, as CudaDevices says: {}",
        if ok.get() { "OK" } else { "NO" }
    );
    let residency = gpu.residency();
    let as_asked = match (&residency, streamed) {
        (Ok(zkpipe_core::Residency::InCore), None) => true,
        (Ok(zkpipe_core::Residency::Streamed(p)), Some(walk)) => {
            [G1Set::A, G1Set::B1, G1Set::H]
                .iter()
                .all(|&s| p.chunk_count(s.into()) >= CHUNKS)
                && p.walk_in_room() == (walk == Walk::InRoom)
        }
        _ => false,
    };
    ok.set(ok.get() && as_asked);
    println!(
        "{name} seam 2^{log}: residency {}: {}",
        residency.map_or_else(|e| e.to_string(), |r| r.to_string()),
        if as_asked { "OK" } else { "NOT AS ASKED" }
    );
    let say = |what: &str, good: bool, text: &str| {
        ok.set(ok.get() && good);
        println!("{name} seam 2^{log} {what}: {text}");
    };
    let line = |what: &str, good: bool| say(what, good, verdict(good));
    let refusal = |what: &str, good: bool| {
        say(
            what,
            good,
            if good { "refused (OK)" } else { "NOT REFUSED" },
        )
    };

    // The verbs, against the CPU's.
    let w: Vec<ScalarInt<E>> = witness.values.iter().map(|x| x.into_bigint()).collect();
    let h = random_scalars::<E>(key.domain_size(), &mut StdRng::seed_from_u64(2));
    let private = &w[key.n_public + 1..];
    for (set, s) in [
        (G1Set::A, &w[..]),
        (G1Set::B1, &w[..]),
        (G1Set::C, private),
        (G1Set::H, &h[..]),
    ] {
        line(
            &format!("msm_g1({set:?})"),
            same(gpu.msm_g1(set, s), cpu.msm_g1(set, s)),
        );
        refusal(
            &format!("msm_g1({set:?}), one scalar short"),
            refused(gpu.msm_g1(set, &s[1..])),
        );
    }
    line("msm_g2", same(gpu.msm_g2(&w), cpu.msm_g2(&w)));
    refusal("msm_g2, one scalar short", refused(gpu.msm_g2(&w[1..])));
    let (mut on_gpu, mut on_cpu) = (
        reduced_on_cpu(&key, &witness)?,
        reduced_on_cpu(&key, &witness)?,
    );
    let r = gpu.quotient(&mut on_gpu);
    cpu.quotient(&mut on_cpu)?;
    line("quotient", r.is_ok() && on_gpu.a == on_cpu.a);

    // Passes: one proof, then three (a batch where caps allow), each against the CPU's
    // pass of it alone plus its [B]₂.
    let first_private = key.n_public + 1;
    let witnesses = [
        witness.clone(),
        perturbed(&witness, first_private),
        perturbed(&witness, first_private + 1),
    ];
    let want = cpu_sums(&cpu, &key, &witnesses, caps.g2)?;
    let on = ReduceOn::for_caps(caps, DEFAULT_SCHEDULE);
    let mont = caps.montgomery_w;
    let (one, ms) = stage(&*gpu, &key, &witnesses[..1], on, mont)?;
    line(
        &format!("pass of one proof ({ms:.1} ms)"),
        matches(&one, &want[..1]),
    );
    let mut runs = Vec::new();
    for _ in 0..5 {
        runs.push(stage(&*gpu, &key, &witnesses[..1], on, mont)?.1);
    }
    println!(
        "{name} seam 2^{log} pass of one proof, device stage: {} (5 runs)",
        summarize(&mut runs)
    );
    let (three, ms) = stage(&*gpu, &key, &witnesses, on, mont)?;
    let what = if caps.batch_limit >= 3 {
        "a batch pass"
    } else {
        "passes"
    };
    line(
        &format!("{what} of three proofs ({ms:.1} ms)"),
        matches(&three, &want),
    );
    // The witness's other form (ZKPIPE_CUDA_HOST_SCALARS's, or the default under it).
    let form = if mont { "scalars" } else { "Montgomery" };
    let (other, _) = stage(&*gpu, &key, &witnesses, on, !mont)?;
    line(
        &format!("{what} of three proofs, w as {form}"),
        matches(&other, &want),
    );
    if caps.reduces {
        // a, b, c from the host: the pass's other quotient path (ZKPIPE_CUDA_HOST_REDUCE's).
        let host = direct_pass(&*gpu, &key, &witnesses)?;
        line(
            "pass of three proofs, a, b, c from the host",
            matches(&host, &want),
        );
    }

    // Pinned (the daemon's pinned tier): the chunks cross from the key's page-locked copy.
    if streamed.is_some() {
        let bytes = gpu.pinnable_bytes();
        let pinned = gpu.pin();
        line(
            &format!("pinned ({bytes} bytes)"),
            pinned.is_ok() && gpu.is_pinned() && bytes > 0,
        );
        let (three, ms) = stage(&*gpu, &key, &witnesses, on, mont)?;
        line(
            &format!("{what} of three proofs, pinned ({ms:.1} ms)"),
            matches(&three, &want),
        );
        let (one, _) = stage(&*gpu, &key, &witnesses[1..2], on, mont)?;
        line("pass of one proof, pinned", matches(&one, &want[1..2]));
        for set in [G1Set::A, G1Set::H] {
            let s = if set == G1Set::H { &h[..] } else { &w[..] };
            line(
                &format!("msm_g1({set:?}), pinned"),
                same(gpu.msm_g1(set, s), cpu.msm_g1(set, s)),
            );
        }
        line("msm_g2, pinned", same(gpu.msm_g2(&w), cpu.msm_g2(&w)));
        gpu.unpin();
        line("unpinned", !gpu.is_pinned());
    } else {
        line("in-core: nothing to pin", gpu.pinnable_bytes() == 0);
    }

    // Whole proofs: self-checked against the key's verification key.
    let mut rng = StdRng::seed_from_u64(3);
    let opts = ProveOptions::default();
    let proof = prove(&*gpu, &witness, &opts, &mut rng, &mut Timings::default());
    line("proof on the GPU verifies", proof.is_ok());
    if let Err(e) = proof {
        println!("  error: {e}");
    }
    let bad = prove(
        &*gpu,
        &witnesses[1],
        &opts,
        &mut rng,
        &mut Timings::default(),
    );
    line(
        "a witness that does not satisfy the circuit, refused",
        matches!(bad, Err(Error::NotSatisfied)),
    );
    Ok(ok.get())
}

/// Each witness's device-stage sums on the CPU (its pass alone, plus [B]₂ where `g2`).
pub(crate) fn cpu_sums<E: BindCurve>(
    cpu: &CpuBound<E>,
    key: &CompiledKey<E>,
    witnesses: &[Witness<E::ScalarField>],
    g2: bool,
) -> Res<Vec<DeviceSums<E>>> {
    witnesses
        .iter()
        .map(|wi| -> Res<DeviceSums<E>> {
            let on = ReduceOn::Cpu(DEFAULT_SCHEDULE);
            let sums = stage(cpu, key, std::slice::from_ref(wi), on, false)?
                .0
                .remove(0)?;
            let w: Vec<ScalarInt<E>> = wi.values.iter().map(|x| x.into_bigint()).collect();
            let b2 = if g2 { Some(cpu.msm_g2(&w)?) } else { None };
            Ok(DeviceSums { b2, ..sums })
        })
        .collect()
}

/// A key and a witness that satisfies it.
pub(crate) type DevKey<E> = (
    Arc<CompiledKey<E>>,
    Witness<<E as ark_ec::pairing::Pairing>::ScalarField>,
);

/// A dev key of domain 2^log (4 public inputs) and a witness of `values` that satisfies it.
pub(crate) fn dev_key<E: BindCurve>(log: u32, values: Values) -> Res<DevKey<E>> {
    let public = 4;
    let spec = SynthSpec {
        constraints: (1 << log) - public - 1,
        public,
        seed: 1,
        values,
    };
    let (r1cs, wtns) = synth::<E>(&spec);
    let zkey = dev_setup::<E>(&r1cs, &mut StdRng::seed_from_u64(1), &|_, _| {})?;
    let path = std::env::temp_dir().join(format!(
        "zkpipe-gpu-check-{}-{log}.zkey",
        std::process::id()
    ));
    std::fs::write(&path, zkey.to_bytes())?;
    let key = ZkeyFile::open(&path)
        .map_err(Error::from)
        .and_then(|z| CompiledKey::<E>::compile(&z, PointChecks::Trusted));
    let _ = std::fs::remove_file(&path);
    let key = key?;
    let witness = Witness::check_for(&wtns, &key)?;
    Ok((Arc::new(key), witness))
}

/// The witness with signal `index` changed: a device stage with other sums, and a proof
/// that fails its self-check.
fn perturbed<F: Field>(w: &Witness<F>, index: usize) -> Witness<F> {
    let mut w = w.clone();
    w.values[index] += F::ONE;
    w
}

/// The witness's a, b, c on the CPU.
fn reduced_on_cpu<E: BindCurve>(
    key: &CompiledKey<E>,
    witness: &Witness<E::ScalarField>,
) -> Res<QapEvals<E::ScalarField>> {
    let (mut evals, mut w) = (QapEvals::zeroed(0), Vec::new());
    let on = ReduceOn::Cpu(DEFAULT_SCHEDULE);
    let mut t = Timings::default();
    reduce_stage(key, witness, &mut evals, &mut w, on, false, &mut t)?;
    Ok(evals)
}

/// Buffers of one proof for a device pass: a, b, c (or none), w (or none), h, timings.
type Buffers<E> = (
    QapEvals<<E as ark_ec::pairing::Pairing>::ScalarField>,
    Vec<ScalarInt<E>>,
    Vec<ScalarInt<E>>,
    Timings,
);

/// The reduce stage of each witness; w as scalars unless `mont`.
fn reduce_all<E: BindCurve>(
    key: &CompiledKey<E>,
    witnesses: &[Witness<E::ScalarField>],
    on: ReduceOn,
    mont: bool,
) -> Res<Vec<Buffers<E>>> {
    let mut all = Vec::new();
    for wi in witnesses {
        let (mut evals, mut w, mut t) = (QapEvals::zeroed(0), Vec::new(), Timings::default());
        reduce_stage(key, wi, &mut evals, &mut w, on, !mont, &mut t)?;
        all.push((evals, w, Vec::new(), t));
    }
    Ok(all)
}

/// The pass inputs of `bufs`, each with its witness in Montgomery form if `mont`.
fn inputs<'a, E: BindCurve>(
    bufs: &'a mut [Buffers<E>],
    witnesses: &'a [Witness<E::ScalarField>],
    mont: bool,
) -> Vec<PassInput<'a, E>> {
    bufs.iter_mut()
        .zip(witnesses)
        .map(|((evals, w, h, t), wi)| PassInput {
            evals,
            w: if mont {
                PassWitness::Montgomery(&wi.values)
            } else {
                PassWitness::Scalars(w)
            },
            h,
            t,
        })
        .collect()
}

/// The reduce stage (`on`) and the device stage of each witness on `bound` (w in
/// Montgomery form if `mont`), and the milliseconds of the device stage.
pub(crate) fn stage<E: BindCurve>(
    bound: &dyn BoundKey<E>,
    key: &CompiledKey<E>,
    witnesses: &[Witness<E::ScalarField>],
    on: ReduceOn,
    mont: bool,
) -> Res<(Sums<E>, f64)> {
    let mut bufs = reduce_all(key, witnesses, on, mont)?;
    let mut inputs = inputs(&mut bufs, witnesses, mont);
    Ok(once(|| device_stage(bound, &mut inputs)))
}

/// One pass of all the witnesses on `bound`, a, b, c reduced on the CPU whatever its caps
/// (w in the form its caps ask for).
fn direct_pass<E: BindCurve>(
    bound: &dyn BoundKey<E>,
    key: &CompiledKey<E>,
    witnesses: &[Witness<E::ScalarField>],
) -> Res<Sums<E>> {
    let mont = bound.caps().montgomery_w;
    let mut bufs = reduce_all(key, witnesses, ReduceOn::Cpu(DEFAULT_SCHEDULE), mont)?;
    Ok(bound.pass(&mut inputs(&mut bufs, witnesses, mont)))
}

fn same<T: PartialEq>(gpu: Result<T, Error>, cpu: Result<T, Error>) -> bool {
    match (gpu, cpu) {
        (Ok(g), Ok(c)) => g == c,
        (g, c) => {
            for e in [g.err(), c.err()].into_iter().flatten() {
                println!("  error: {e}");
            }
            false
        }
    }
}

pub(crate) fn matches<E: BindCurve>(got: &Sums<E>, want: &[DeviceSums<E>]) -> bool {
    got.len() == want.len()
        && got.iter().zip(want).all(|(g, w)| match g {
            Ok(g) => g == w,
            Err(e) => {
                println!("  error: {e}");
                false
            }
        })
}

/// A length error from GPU 0, typed: `cuda:0`, with a [`CudaError::Length`] source.
fn refused<T>(r: Result<T, Error>) -> bool {
    match r {
        Err(Error::Device { device, source }) => {
            device == "cuda:0"
                && matches!(
                    source.downcast_ref::<CudaError>(),
                    Some(CudaError::Length(_))
                )
        }
        _ => false,
    }
}
