//! How many jobs per second the embedded SQLite store accepts and ends with many
//! submitters at once, in one or more state directories (a disk, a memory filesystem):
//! the ceiling the job store puts on a daemon's small-proof rate
//! (lab/experiments/042h-disk-bound-accepts.md).
//!
//! ```text
//! cargo run --release -p zkpipe-store --example accept_rate -- \
//!     --dir /var/tmp/state,/dev/shm/state --threads 64 --jobs 20000 --witness 524288 --rounds 3
//! ```
//!
//! A cell opens a fresh store in one `--dir` (removed before and after) and starts
//! `--threads` submitters that share `--jobs` one-partition jobs of `--witness` bytes: each
//! accepts its job, then records the job's proof (which ends it and drops its witness), as
//! the daemon does. Rounds interleave the directories. Prints TSV: jobs/s (until the
//! store is closed, its witness files removed), accept latency p50/p99 and the record
//! call's p50/p99 (the time a daemon's deliver stage waits for it).
//!
//! `--wtns FILE` submits that witness instead of `--witness` bytes of a pattern (a real
//! `.wtns` is stored packed where that halves it, as the daemon stores it), and
//! `--checkpoint-pages N` sets the store's WAL checkpoint interval
//! (`SqliteOptions::checkpoint_pages`). `--result-batch N` has each submitter accept N
//! jobs, then record their N proofs with one `partitions_done` call, as the daemon's
//! deliver stage records a tail batch's (1: one `partition_done` each).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use zkpipe_engine::job_store::{fingerprint, Accepted, NewJob, ProvedPartition};
use zkpipe_engine::{JobStore, PartitionProof, Priority};
use zkpipe_store::{SqliteOptions, SqliteStore};

struct Args {
    dirs: Vec<PathBuf>,
    threads: usize,
    jobs: usize,
    witness: usize,
    wtns: Option<Vec<u8>>,
    checkpoint_pages: Option<u32>,
    result_batch: usize,
    rounds: usize,
}

fn args() -> Args {
    let mut a = Args {
        dirs: vec![std::env::temp_dir().join("zkpipe-accept-rate")],
        threads: 64,
        jobs: 20_000,
        witness: 512 << 10,
        wtns: None,
        checkpoint_pages: None,
        result_batch: 1,
        rounds: 3,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        let n = || v.parse::<usize>().expect("a number");
        match flag.as_str() {
            "--dir" => a.dirs = v.split(',').map(PathBuf::from).collect(),
            "--threads" => a.threads = n(),
            "--jobs" => a.jobs = n(),
            "--witness" => a.witness = n(),
            "--rounds" => a.rounds = n(),
            "--wtns" => a.wtns = Some(std::fs::read(&v).expect("reading --wtns")),
            "--checkpoint-pages" => a.checkpoint_pages = Some(n() as u32),
            "--result-batch" => a.result_batch = n().max(1),
            _ => panic!("unknown flag {flag}"),
        }
    }
    a
}

fn main() {
    let a = args();
    println!(
        "round\tdir\tthreads\tjobs\twitness\tresult_batch\tjobs_per_s\taccept_p50_ms\taccept_p99_ms\trecord_p50_ms\trecord_p99_ms"
    );
    for round in 1..=a.rounds {
        for dir in &a.dirs {
            let (rate, accept, record) = cell(&a, dir);
            println!(
                "{round}\t{}\t{}\t{}\t{}\t{}\t{rate:.2}\t{:.2}\t{:.2}\t{:.2}\t{:.2}",
                dir.display(),
                a.threads,
                a.jobs,
                a.wtns.as_ref().map_or(a.witness, Vec::len),
                a.result_batch,
                accept.0,
                accept.1,
                record.0,
                record.1
            );
        }
    }
}

/// Records each job's one proof, ending it: one call for all, or `partition_done` for one.
fn record(store: &SqliteStore, ids: &[u64], proof: &PartitionProof) {
    match ids {
        [] => {}
        [id] => store.partition_done(*id, 0, proof, true).expect("result"),
        _ => {
            let done: Vec<ProvedPartition<'_>> = ids
                .iter()
                .map(|&job| ProvedPartition {
                    job,
                    index: 0,
                    proof,
                    last: true,
                })
                .collect();
            store
                .partitions_done(&done)
                .map_err(|(_, e)| e)
                .expect("results");
        }
    }
}

/// One cell in `dir`: jobs/s, and the accept's and the record's latency p50/p99 (ms).
fn cell(a: &Args, dir: &Path) -> (f64, (f64, f64), (f64, f64)) {
    let _ = std::fs::remove_dir_all(dir);
    let mut options = SqliteOptions::default();
    if let Some(pages) = a.checkpoint_pages {
        options.checkpoint_pages = pages;
    }
    let store = SqliteStore::open_with(dir, &options).expect("opening the store");
    let next = AtomicUsize::new(0);
    let proof = PartitionProof {
        proof_json: "{}".repeat(400),
        public_json: "[\"1\"]".into(),
        timings: Default::default(),
    };
    let start = Instant::now();
    let (mut accepts, mut records): (Vec<Duration>, Vec<Duration>) = std::thread::scope(|s| {
        let workers: Vec<_> = (0..a.threads)
            .map(|t| {
                let (store, next, proof) = (&store, &next, &proof);
                s.spawn(move || {
                    let (mut mine, mut recorded) = (Vec::new(), Vec::new());
                    let witness: Vec<u8> = match &a.wtns {
                        Some(w) => w.clone(),
                        None => (0..a.witness).map(|i| (i + t) as u8).collect(),
                    };
                    // Once per submitter: hashing 512 KiB per job would be most of this
                    // program's CPU, and the daemon hashes only requests with an id.
                    let fingerprint = fingerprint("k", &[&witness]);
                    let mut ids = Vec::with_capacity(a.result_batch);
                    while next.fetch_add(1, Ordering::Relaxed) < a.jobs {
                        let job = NewJob {
                            key_shape: String::new(),
                            key_id: "k",
                            priority: Priority::Normal,
                            request_id: "",
                            fingerprint,
                            witnesses: vec![&witness],
                            packed: false,
                            staged: Vec::new(),
                        };
                        let t0 = Instant::now();
                        let Accepted::New(id) = store.accept(&job).expect("accept") else {
                            panic!("no request id, no existing job")
                        };
                        mine.push(t0.elapsed());
                        ids.push(id);
                        if ids.len() == a.result_batch {
                            let t0 = Instant::now();
                            record(store, &ids, proof);
                            recorded.push(t0.elapsed());
                            ids.clear();
                        }
                    }
                    record(store, &ids, proof);
                    (mine, recorded)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a submitter panicked"))
            .fold((Vec::new(), Vec::new()), |(mut a, mut r), (a1, r1)| {
                a.extend(a1);
                r.extend(r1);
                (a, r)
            })
    });
    drop(store);
    let rate = a.jobs as f64 / start.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(dir);
    (rate, quantiles(&mut accepts), quantiles(&mut records))
}

/// p50 and p99 of `d`, in ms.
fn quantiles(d: &mut [Duration]) -> (f64, f64) {
    d.sort();
    let at = |q: f64| {
        d.get(((d.len() as f64 * q) as usize).min(d.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    (at(0.5), at(0.99))
}
