//! A timing program, not a test (`#[ignore]`d): what recording a tail batch's proofs in
//! the SQLite store costs per proof, wall and CPU, three ways: one `partition_done` after
//! another, one per thread side by side (the tail stage's way before 042d), and one
//! `partitions_done` for the batch. Each job has one partition, as a 2^14 daemon's do.
//! Run by lab/experiments/042d-tail-cpu.md:
//!
//! ```text
//! ZKPIPE_BENCH_BATCH=16 ZKPIPE_BENCH_ROUNDS=20 ZKPIPE_BENCH_WITNESS=524288 \
//!   cargo test --profile ci -p zkpipe-store --test suite tail_record -- --ignored --nocapture
//! ```

use std::time::{Duration, Instant};
use zkpipe_engine::job_store::{fingerprint, Accepted, DonePartition, JobStore, NewJob};
use zkpipe_engine::{JobId, PartitionProof, Priority, ProofTimings, Stage};
use zkpipe_store::SqliteStore;

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

/// This process's CPU time (user + system), from /proc (clock ticks of 10 ms).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<u64> = after
        .split(' ')
        .skip(11)
        .take(2)
        .map(|x| x.parse().unwrap())
        .collect();
    Duration::from_millis((f[0] + f[1]) * 10)
}

#[derive(Clone, Copy, Debug)]
enum Mode {
    Serial,
    Threads,
    Batched,
}

#[test]
#[ignore = "a timing program: run with --ignored"]
fn tail_record() {
    let batch: usize = env_or("ZKPIPE_BENCH_BATCH", "16").parse().unwrap();
    let rounds: usize = env_or("ZKPIPE_BENCH_ROUNDS", "20").parse().unwrap();
    let size: usize = env_or("ZKPIPE_BENCH_WITNESS", "524288").parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).unwrap();
    // A snarkjs proof.json and public.json of a BN254 proof are about this long.
    let proof = PartitionProof {
        proof_json: "1".repeat(760),
        public_json: "2".repeat(200),
        timings: ProofTimings {
            by_stage: [Stage::Tail, Stage::Record]
                .map(|s| (s, Duration::from_micros(1234)))
                .into(),
            total: Duration::from_millis(48),
        },
    };
    let mut next = 0u64;
    let modes = [Mode::Serial, Mode::Threads, Mode::Batched];
    let mut per_mode: Vec<Vec<(f64, f64)>> = vec![Vec::new(); modes.len()];
    for _ in 0..rounds {
        for (m, mode) in modes.iter().enumerate() {
            let jobs: Vec<JobId> = (0..batch)
                .map(|_| {
                    next += 1;
                    let mut witness = vec![0u8; size];
                    witness[..8].copy_from_slice(&next.to_le_bytes());
                    let witnesses: Vec<&[u8]> = vec![&witness];
                    let job = NewJob {
                        key_id: "k",
                        priority: Priority::Normal,
                        request_id: "",
                        fingerprint: fingerprint("k", &witnesses),
                        key_shape: String::new(),
                        witnesses,
                    };
                    match store.accept(&job).unwrap() {
                        Accepted::New(id) | Accepted::Existing(id) => id,
                    }
                })
                .collect();
            let (t0, c0) = (Instant::now(), cpu_time());
            match mode {
                Mode::Serial => {
                    for &j in &jobs {
                        store.partition_done(j, 0, &proof, true).unwrap();
                    }
                }
                Mode::Threads => std::thread::scope(|s| {
                    for &j in &jobs {
                        let (store, proof) = (&store, &proof);
                        s.spawn(move || store.partition_done(j, 0, proof, true).unwrap());
                    }
                }),
                Mode::Batched => {
                    let done: Vec<DonePartition<'_>> = jobs
                        .iter()
                        .map(|&job| DonePartition {
                            job,
                            index: 0,
                            proof: &proof,
                            last: true,
                        })
                        .collect();
                    for r in store.partitions_done(&done) {
                        r.unwrap();
                    }
                }
            }
            let wall = t0.elapsed().as_secs_f64() * 1e6 / batch as f64;
            let cpu = (cpu_time() - c0).as_secs_f64() * 1e6 / batch as f64;
            per_mode[m].push((wall, cpu));
        }
    }
    println!("tail_record batch={batch} rounds={rounds} witness_bytes={size}");
    for (mode, cells) in modes.iter().zip(&per_mode) {
        let stats = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            (v[0], v[v.len() / 2], v[v.len() - 1])
        };
        let w = stats(cells.iter().map(|c| c.0).collect());
        let c = stats(cells.iter().map(|c| c.1).collect());
        // CPU time per round is in 10 ms ticks: its total over the rounds is the figure.
        let cpu_mean = cells.iter().map(|c| c.1).sum::<f64>() / cells.len() as f64;
        println!(
            "mode {:<8} wall_us_per_proof min={:.0} median={:.0} max={:.0} cpu_us_per_proof mean={cpu_mean:.0} (per-round min={:.0} max={:.0})",
            format!("{mode:?}"),
            w.0, w.1, w.2, c.0, c.2
        );
    }
}
