//! How many claims per second one Postgres sustains, with many simulated daemons and a
//! no-op backend (a claimed partition is "proved" at once), and what the shared store
//! costs per job beside the embedded one (docs/fleet.md, lab/experiments/020-fleet-store.md).
//!
//! ```text
//! cargo run --release -p zkpipe-store --example fleet_claims -- \
//!     --url postgres://postgres@127.0.0.1:5432/postgres --daemons 1,4,16,64 \
//!     --batch 1,8 --jobs 4000 --witness 65536 --rounds 3
//! ```
//!
//! Each daemon is a thread with its own `PgStore` (its own pool of 2 connections), as a
//! real daemon has. A cell queues `--jobs` one-partition jobs, then every daemon claims up
//! to `--batch` partitions at a time, reads each one's witness and records a result for it
//! at once, until the queue is empty;
//! claims/s is partitions over the wall time of that drain. The per-job cost is one job's
//! whole life through the store (accept, claim, record, read back), one at a time, for
//! the embedded SQLite store (accept, record) and the shared store. Prints TSV.

use std::sync::Arc;
use std::time::{Duration, Instant};
use zkpipe_engine::job_store::{fingerprint, NewJob, ServedKey, SharedQueue};
use zkpipe_engine::{JobStore, PartitionProof, Priority};
use zkpipe_store::{PgOptions, PgStore, SqliteStore};

struct Args {
    url: String,
    daemons: Vec<usize>,
    batch: Vec<usize>,
    jobs: usize,
    witness: usize,
    rounds: usize,
}

fn list(s: &str) -> Vec<usize> {
    s.split(',')
        .map(|x| x.trim().parse().expect("a number"))
        .collect()
}

fn args() -> Args {
    let mut a = Args {
        url: String::new(),
        daemons: vec![1, 4, 16, 64],
        batch: vec![1, 8],
        jobs: 4000,
        witness: 65536,
        rounds: 3,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--url" => a.url = v,
            "--daemons" => a.daemons = list(&v),
            "--batch" => a.batch = list(&v),
            "--jobs" => a.jobs = v.parse().unwrap(),
            "--witness" => a.witness = v.parse().unwrap(),
            "--rounds" => a.rounds = v.parse().unwrap(),
            _ => panic!("unknown argument {k}"),
        }
    }
    assert!(!a.url.is_empty(), "--url postgres://... is required");
    a
}

fn connect(url: &str, daemon: &str, connections: u32) -> Arc<PgStore> {
    Arc::new(
        PgStore::connect(&PgOptions {
            url: url.into(),
            daemon: daemon.into(),
            objects: None,
            inline_max: u64::MAX,
            connections,
        })
        .expect("connect"),
    )
}

fn new_job<'a>(witness: &'a [u8]) -> NewJob<'a> {
    NewJob {
        key_id: "bench",
        priority: Priority::Normal,
        request_id: "",
        fingerprint: fingerprint("bench", &[witness]),
        key_shape: "bench-shape".into(),
        witnesses: vec![witness],
        packed: false,
        staged: Vec::new(),
    }
}

fn proof() -> PartitionProof {
    PartitionProof {
        proof_json: "{\"pi_a\":[\"1\",\"2\",\"1\"]}".repeat(20),
        public_json: "[\"1\"]".into(),
        timings: Default::default(),
    }
}

/// Queues `jobs` jobs (through 8 threads), then drains them with `daemons` daemons
/// claiming `batch` at a time; returns the drain's partitions per second.
fn drain(
    stores: &[Arc<PgStore>],
    daemons: usize,
    batch: usize,
    jobs: usize,
    witness: &[u8],
) -> f64 {
    std::thread::scope(|s| {
        for t in 0..8 {
            let st = Arc::clone(&stores[t % stores.len()]);
            s.spawn(move || {
                for _ in (t..jobs).step_by(8) {
                    st.accept(&new_job(witness)).unwrap();
                }
            });
        }
    });
    let keys = [ServedKey {
        id: "bench".into(),
        shape: "bench-shape".into(),
        hot: true,
    }];
    let p = proof();
    let start = Instant::now();
    let done: usize = std::thread::scope(|s| {
        let hs: Vec<_> = stores[..daemons]
            .iter()
            .map(|st| {
                let keys = keys.clone();
                let p = p.clone();
                s.spawn(move || {
                    let mut n = 0;
                    loop {
                        let got = st.claim(&keys, batch, Duration::from_secs(60)).unwrap();
                        if got.is_empty() {
                            return n;
                        }
                        for c in &got {
                            assert_eq!(st.witness(c).unwrap().len(), witness.len());
                            st.partition_done(c.job, c.index, &p, true).unwrap();
                        }
                        n += got.len();
                    }
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    for st in &stores[..daemons] {
        assert!(st.flush_results(Duration::from_secs(60)));
    }
    assert_eq!(done, jobs, "every partition drained once");
    done as f64 / start.elapsed().as_secs_f64()
}

fn stats(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (v[0], v[v.len() / 2], v[v.len() - 1])
}

fn main() {
    let a = args();
    let witness = vec![0x5au8; a.witness];
    let max = *a.daemons.iter().max().unwrap();
    let stores: Vec<Arc<PgStore>> = (0..max)
        .map(|i| connect(&a.url, &format!("sim-{i}"), 2))
        .collect();

    println!(
        "# claims/s: {} one-partition jobs of {} witness bytes per cell, {} rounds",
        a.jobs, a.witness, a.rounds
    );
    println!("daemons\tbatch\tmin\tmedian\tmax");
    for &d in &a.daemons {
        for &b in &a.batch {
            let mut r: Vec<f64> = (0..a.rounds)
                .map(|_| drain(&stores, d, b, a.jobs, &witness))
                .collect();
            let (lo, med, hi) = stats(&mut r);
            println!("{d}\t{b}\t{lo:.0}\t{med:.0}\t{hi:.0}");
        }
    }

    // One job's life, one at a time: the embedded store against the shared one.
    let n = 500;
    let dir = tempfile_dir();
    let sqlite = SqliteStore::open(&dir).unwrap();
    let pg = &stores[0];
    let keys = [ServedKey {
        id: "bench".into(),
        shape: "bench-shape".into(),
        hot: true,
    }];
    let p = proof();
    println!("# per-job store time (accept + claim + record + read back), {n} jobs one at a time, microseconds");
    println!("store\tmin\tmedian\tmax");
    let mut embedded = Vec::new();
    let mut shared = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        let id = match sqlite.accept(&new_job(&witness)).unwrap() {
            zkpipe_engine::job_store::Accepted::New(id) => id,
            e => panic!("{e:?}"),
        };
        sqlite.partition_done(id, 0, &p, true).unwrap();
        embedded.push(t.elapsed().as_secs_f64() * 1e6);

        let t = Instant::now();
        pg.accept(&new_job(&witness)).unwrap();
        let c = pg.claim(&keys, 1, Duration::from_secs(60)).unwrap();
        assert_eq!(pg.witness(&c[0]).unwrap().len(), witness.len());
        pg.partition_done(c[0].job, 0, &p, true).unwrap();
        assert!(pg.flush_results(Duration::from_secs(10)));
        let s = pg.job(c[0].job).unwrap().unwrap();
        assert_eq!(s.proofs.len(), 1);
        shared.push(t.elapsed().as_secs_f64() * 1e6);
    }
    for (name, v) in [("embedded", &mut embedded), ("postgres", &mut shared)] {
        let (lo, med, hi) = stats(v);
        println!("{name}\t{lo:.0}\t{med:.0}\t{hi:.0}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("zkpipe-fleet-claims-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}
