//! `setup --dev --backend cuda`: dev keys whose points the GPU made ([`GpuFixedBase`])
//! against the same keys made on the CPU (same circuit, same seed), byte for byte, with
//! both times.

use crate::common::verdict;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::time::Instant;
use zkpipe_core::setup::{dev_setup, dev_setup_with};
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
/// 256, 2^16 + 5, −1 and a random scalar, in G1 and in G2.
fn probe<E: BindCurve + GpuCurve>(name: &str, gpu: &GpuFixedBase<E>) -> bool {
    use ark_ff::{Field, UniformRand};
    use zkpipe_core::setup::{CpuFixedBase, FixedBase};
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
    // G2 first: a G2 call that wrote nothing would show G1's leftovers otherwise.
    let (g2, c2) = (gpu.g2(&scalars), cpu.g2(&scalars));
    let (g1, c1) = (gpu.g1(&scalars), cpu.g1(&scalars));
    for (i, s) in scalars.iter().enumerate() {
        let (same1, same2) = (same_at(&g1, &c1, i), same_at(&g2, &c2, i));
        ok &= same1 && same2;
        if !same1 {
            println!(
                "{name} setup probe G1 s={s}: GPU {:?} CPU {:?}",
                g1.as_ref().ok().and_then(|v| v.get(i)),
                c1.as_ref().ok().and_then(|v| v.get(i))
            );
        }
        if !same2 && i < 2 {
            println!(
                "{name} setup probe G2 s={s}: GPU {:?} CPU {:?}",
                g2.as_ref().ok().and_then(|v| v.get(i)),
                c2.as_ref().ok().and_then(|v| v.get(i))
            );
        }
    }
    if let (Err(e), _) | (_, Err(e)) = (&g1, &g2) {
        println!("{name} setup probe: {e}");
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
    let g1 = matches!((gpu.g1(&scalars), cpu.g1(&scalars)), (Ok(g), Ok(c)) if g == c);
    let g2 = matches!((gpu.g2(&scalars), cpu.g2(&scalars)), (Ok(g), Ok(c)) if g == c);
    println!(
        "{name} setup across calls ({} scalars): G1 {}, G2 {}",
        scalars.len(),
        verdict(g1),
        verdict(g2)
    );
    g1 && g2
}

/// Whether both made their point `i`, and the same one.
fn same_at<P: PartialEq, X>(g: &Result<Vec<P>, X>, c: &Result<Vec<P>, X>, i: usize) -> bool {
    match (g, c) {
        (Ok(g), Ok(c)) => g.get(i).is_some() && g.get(i) == c.get(i),
        _ => false,
    }
}
