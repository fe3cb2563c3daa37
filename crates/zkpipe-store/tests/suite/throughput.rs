//! A timing program, not a test (`#[ignore]`d): accepted jobs per second of the SQLite
//! store at several numbers of concurrent submitters, each job accepted as the engine
//! does (recorded, then made durable). Run by lab/experiments/042c-group-commit.md:
//!
//! ```text
//! ZKPIPE_BENCH_CLIENTS=1,8,64 ZKPIPE_BENCH_JOBS=256 ZKPIPE_BENCH_WITNESS=524288 \
//!   cargo test --profile ci -p zkpipe-store --test suite throughput -- --ignored --nocapture
//! ```
//!
//! `ZKPIPE_BENCH_DIR` names where the state directories go (default: the temporary
//! directory); each cell opens a fresh store.

use std::time::Instant;
use zkpipe_engine::job_store::{fingerprint, JobStore, NewJob};
use zkpipe_engine::Priority;
use zkpipe_store::SqliteStore;

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

#[test]
#[ignore = "a timing program: run with --ignored"]
fn throughput() {
    let clients: Vec<usize> = env_or("ZKPIPE_BENCH_CLIENTS", "1,8,64")
        .split(',')
        .map(|c| c.trim().parse().expect("ZKPIPE_BENCH_CLIENTS: numbers"))
        .collect();
    let jobs: usize = env_or("ZKPIPE_BENCH_JOBS", "256").parse().unwrap();
    let size: usize = env_or("ZKPIPE_BENCH_WITNESS", "524288").parse().unwrap();
    let base = std::env::var_os("ZKPIPE_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    for &c in &clients {
        let dir = tempfile::tempdir_in(&base).unwrap();
        let store = SqliteStore::open(dir.path()).unwrap();
        let per_client = jobs.div_ceil(c);
        let t0 = Instant::now();
        std::thread::scope(|s| {
            for client in 0..c {
                let store = &store;
                s.spawn(move || {
                    for j in 0..per_client {
                        let mut witness = vec![0u8; size];
                        // Distinct bytes per job: nothing below may share work between jobs.
                        witness[..8].copy_from_slice(&(client as u32).to_le_bytes().repeat(2));
                        witness[8..16].copy_from_slice(&(j as u64).to_le_bytes());
                        let witnesses: Vec<&[u8]> = vec![&witness];
                        let job = NewJob {
                            key_id: "k",
                            priority: Priority::Normal,
                            request_id: "",
                            fingerprint: fingerprint("k", &witnesses),
                            key_shape: String::new(),
                            witnesses,
                            packed: false,
                            staged: Vec::new(),
                        };
                        let (_, mark) = store.accept_unsynced(&job).unwrap();
                        store.make_durable(mark).unwrap();
                    }
                });
            }
        });
        let secs = t0.elapsed().as_secs_f64();
        let n = per_client * c;
        println!(
            "cell clients={c} jobs={n} witness_bytes={size} secs={secs:.3} jobs_per_s={:.1}",
            n as f64 / secs
        );
    }
}
