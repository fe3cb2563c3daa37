//! Constant-work MSMs end to end: a resident dev key bound through `CudaDevices` with
//! constant work off and on (the device set's `ConstantMode`, `ZKPIPE_CUDA_CONSTANT` in a
//! `lab` build, picks how it is kept constant: a mask on w and h by default). For every witness distribution (all zeros, all ones, mixed,
//! random, all r − 1, and the circuit's own witness) the device stage of one proof
//! against the CPU's, bit for bit; then its time and the CPU pass's (median of `runs`,
//! the distributions taken in turn), the spread (the slowest distribution's median over
//! the fastest's), and a whole proof that verifies.

use crate::checks::batch::distributions;
use crate::checks::seam::{cpu_sums, dev_key, matches, stage, Res};
use crate::common::{summarize, verdict, Cfg};
use ark_ff::PrimeField;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::sync::Arc;
use zkpipe_core::device::bind;
use zkpipe_core::reduce::DEFAULT_SCHEDULE;
use zkpipe_core::stages::ReduceOn;
use zkpipe_core::synth::Values;
use zkpipe_core::{
    prove, BindCurve, BindOptions, BoundKey, CpuBound, CpuOptions, ProveOptions, Timings, Witness,
};
use zkpipe_cuda::CudaDevices;

/// Keys of 2^12 and 2^16 constraints, up to 2^max_log.
pub fn check_constant_work<E: BindCurve>(name: &str, devices: &CudaDevices, cfg: &Cfg) -> bool {
    let mut ok = true;
    for log in [12u32, 16].into_iter().filter(|&l| l <= cfg.max_log) {
        for constant in [false, true] {
            let r = at::<E>(name, devices, log, constant, cfg);
            ok &= r.unwrap_or_else(|e| {
                println!("{name} constant work 2^{log}: {e}");
                false
            });
        }
    }
    ok
}

fn at<E: BindCurve>(
    name: &str,
    devices: &CudaDevices,
    log: u32,
    constant: bool,
    cfg: &Cfg,
) -> Res<bool> {
    let mode = if constant {
        format!("constant work on ({:?})", devices.options().lab().constant)
    } else {
        "constant work off".into()
    };
    let name = format!("{name} 2^{log} {mode}");
    let (key, witness) = dev_key::<E>(log, Values::Products)?;
    key.prepare_resident();
    let opts = BindOptions {
        constant_work: constant,
    };
    let gpu = bind(devices, 0, Arc::clone(&key), &opts)?;
    let cpu = CpuBound::new(Arc::clone(&key));
    let caps = gpu.caps();
    let on = ReduceOn::for_caps(caps, DEFAULT_SCHEDULE);
    let mont = caps.montgomery_w;
    let mut rng = StdRng::seed_from_u64(5);
    let mut cases: Vec<(&str, Witness<E::ScalarField>)> = distributions::<E>(key.n_vars, &mut rng)
        .into_iter()
        .map(|(what, s)| {
            let values = s
                .into_iter()
                .map(|x| E::ScalarField::from_bigint(x).expect("below r"))
                .collect();
            (what, Witness { values })
        })
        .collect();
    cases.push(("the circuit's witness", witness.clone()));
    let mut ok = true;
    for (what, wi) in &cases {
        let one = std::slice::from_ref(wi);
        let want = cpu_sums(&cpu, &key, one, caps.g2)?;
        let good = matches(&stage(&*gpu, &key, one, on, mont)?.0, &want);
        ok &= good;
        println!("{name}: {what}: {}", verdict(good));
    }
    // Timed round-robin, one run of each distribution in turn, so that drift and the
    // host's noise spread over all of them alike.
    let runs = cfg.runs.max(3);
    let cpu_on = ReduceOn::Cpu(DEFAULT_SCHEDULE);
    // The CPU's pass (its MSMs without [B]₂, which the tail makes there) is timed too,
    // for the CPU's own constant-work mode.
    // Bound as `--backend cpu` binds it: with a mask where constant work is on.
    let cpu_as_bound = CpuBound::bind(Arc::clone(&key), &opts, CpuOptions::default());
    let sides: [(&str, &dyn BoundKey<E>, ReduceOn, bool); 2] = [
        ("device stage", &*gpu, on, mont),
        ("CPU pass", &cpu_as_bound, cpu_on, false),
    ];
    for (side, bound, on, mont) in sides {
        let mut ms = vec![Vec::with_capacity(runs); cases.len()];
        for _ in 0..runs {
            for ((_, wi), t) in cases.iter().zip(ms.iter_mut()) {
                t.push(stage(bound, &key, std::slice::from_ref(wi), on, mont)?.1);
            }
        }
        let mut medians = Vec::new();
        for ((what, _), t) in cases.iter().zip(ms.iter_mut()) {
            println!("{name}: {what}: {side} {} ({runs} runs)", summarize(t));
            medians.push(t[t.len() / 2]); // sorted by summarize
        }
        let (lo, hi) = medians
            .iter()
            .fold((f64::MAX, 0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        println!(
            "{name}: spread of the {side}'s medians over {} distributions: {:.2}x ({lo:.2}..{hi:.2} ms)",
            medians.len(),
            hi / lo
        );
    }
    let proof = prove(
        &*gpu,
        &witness,
        &ProveOptions::default(),
        &mut StdRng::seed_from_u64(6),
        &mut Timings::default(),
    );
    println!(
        "{name}: a whole proof verifies: {}",
        if proof.is_ok() { "OK" } else { "NO" }
    );
    if let Err(e) = &proof {
        println!("  error: {e}");
    }
    Ok(ok && proof.is_ok())
}
