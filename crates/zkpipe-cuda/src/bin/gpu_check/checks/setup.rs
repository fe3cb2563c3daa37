//! `setup --dev --backend cuda`: dev keys whose points the GPU made ([`GpuFixedBase`])
//! against the same keys made on the CPU (same circuit, same seed), byte for byte, with
//! both times.

use crate::common::verdict;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::time::Instant;
use zkpipe_core::setup::{dev_setup, dev_setup_with, point_bytes};
use zkpipe_core::synth::{synth, SynthSpec, Values};
use zkpipe_core::BindCurve;
use zkpipe_cuda::{GpuCurve, GpuFixedBase};

/// Keys of 2^10 up to 2^min(max_log, 16) constraints, GPU against CPU.
pub fn check_setup<E: BindCurve + GpuCurve>(name: &str, max_log: u32) -> bool {
    let gpu = match GpuFixedBase::<E>::new(0) {
        Ok(g) => g,
        Err(e) => {
            println!("{name} setup: no GPU tables: {e}");
            return false;
        }
    };
    let mut ok = probe::<E>(name, &gpu);
    for log in [10u32, 13, 16]
        .into_iter()
        .filter(|&l| l <= max_log.max(10))
    {
        let spec = SynthSpec {
            constraints: (1 << log) - 5,
            public: 4,
            seed: 1,
            values: Values::Products,
        };
        let (r1cs, _) = synth::<E>(&spec);
        let key = |on_gpu: bool| {
            let mut rng = StdRng::seed_from_u64(7);
            let start = Instant::now();
            let key = match on_gpu {
                true => dev_setup_with(&r1cs, &mut rng, &|_, _| {}, &gpu),
                false => dev_setup::<E>(&r1cs, &mut rng, &|_, _| {}),
            };
            (key.map(|k| k.to_bytes()), start.elapsed().as_secs_f64())
        };
        let ((cpu, cpu_s), (on_gpu, gpu_s)) = (key(false), key(true));
        let same = match (&cpu, &on_gpu) {
            (Ok(c), Ok(g)) => c == g,
            _ => false,
        };
        ok &= same;
        println!(
            "{name} setup 2^{log}: GPU key equals the CPU's ({} bytes; CPU {cpu_s:.2} s, GPU {gpu_s:.2} s): {}",
            cpu.as_ref().map_or(0, |k| k.len()),
            verdict(same)
        );
        if let Err(e) = on_gpu {
            println!("  GPU: {e}");
        }
    }
    ok
}

/// Single multiplications against the CPU's, each printed where it differs: 0, 1, 2, 255,
/// 256, 2^16 + 5, −1 and a random scalar, in G1 and in G2 (in file layout: the identity
/// as zeros).
fn probe<E: BindCurve + GpuCurve>(name: &str, gpu: &GpuFixedBase<E>) -> bool {
    use ark_ff::{Field, UniformRand};
    use zkpipe_core::setup::CpuFixedBase;
    let mut rng = StdRng::seed_from_u64(9);
    let f = |x: u64| E::ScalarField::from(x);
    let scalars = vec![
        f(0),
        f(1),
        f(2),
        f(255),
        f(256),
        f((1 << 16) + 5),
        -E::ScalarField::ONE,
        E::ScalarField::rand(&mut rng),
    ];
    let cpu = CpuFixedBase::<E>::new(scalars.len(), scalars.len());
    let mut ok = true;
    for g2 in [true, false] {
        let (group, size) = (if g2 { "G2" } else { "G1" }, point_bytes::<E>(g2));
        let (on_gpu, on_cpu) = (encoded(gpu, &scalars, g2), encoded(&cpu, &scalars, g2));
        let (g, c) = match (&on_gpu, &on_cpu) {
            (Ok(g), Ok(c)) => (g, c),
            (Err(e), _) | (_, Err(e)) => {
                println!("{name} setup probe {group}: {e}");
                ok = false;
                continue;
            }
        };
        for ((s, g), c) in scalars.iter().zip(g.chunks(size)).zip(c.chunks(size)) {
            if g != c {
                ok = false;
                println!("{name} setup probe {group} s={s}: GPU {g:02x?} CPU {c:02x?}");
            }
        }
    }
    println!("{name} setup probe (8 scalars, G1 and G2): {}", verdict(ok));
    ok & across_calls::<E>(name, gpu)
}

/// One call's worth of scalars and a few more (the GPU's buffers refilled), both groups:
/// every point against the CPU's.
fn across_calls<E: BindCurve + GpuCurve>(name: &str, gpu: &GpuFixedBase<E>) -> bool {
    use ark_ff::UniformRand;
    use zkpipe_core::setup::{CpuFixedBase, FixedBase};
    let mut rng = StdRng::seed_from_u64(10);
    let scalars: Vec<E::ScalarField> = (0..gpu.chunk() + 3)
        .map(|_| E::ScalarField::rand(&mut rng))
        .collect();
    let cpu = CpuFixedBase::<E>::new(scalars.len(), scalars.len());
    let same = |g2: bool| {
        let (g, c) = (encoded(gpu, &scalars, g2), encoded(&cpu, &scalars, g2));
        matches!((g, c), (Ok(g), Ok(c)) if g == c)
    };
    let (g1, g2) = (same(false), same(true));
    println!(
        "{name} setup across calls ({} scalars): G1 {}, G2 {}",
        scalars.len(),
        verdict(g1),
        verdict(g2)
    );
    g1 && g2
}

/// `fixed`'s points of `scalars` in file layout (G2's where `g2`), into a buffer filled
/// with 0xa5 first: bytes a call left unwritten show.
fn encoded<E: BindCurve>(
    fixed: &dyn zkpipe_core::setup::FixedBase<E>,
    scalars: &[E::ScalarField],
    g2: bool,
) -> Result<Vec<u8>, zkpipe_core::Error> {
    let mut out = vec![0xa5; scalars.len() * point_bytes::<E>(g2)];
    fixed.encode(scalars, g2, &mut out)?;
    Ok(out)
}
