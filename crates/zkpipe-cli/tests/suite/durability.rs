//! The daemon is killed with SIGKILL and restarted on the same state directory: every
//! accepted job still ends Done exactly once, with proofs that verify, under the id it was
//! given (ids are never reused); a request id names one request, before and after. Once
//! at a random moment of a 30-job run over two keys of both curves (and again with every
//! witness a file written without a sync), once while a key is being loaded.

use crate::common;

use common::{assert_verifies, fixture, Client};
use rand::Rng;
use std::collections::{HashMap, HashSet};

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tonic::Code;
use zkpipe_core::{Bls12_381, Bn254};
use zkpipe_server::pb::{self, JobState};
use zkpipe_server::ProverClient;

/// One daemon process over a directory that outlives it (config, keys, state, logs).
struct Daemon {
    child: Child,
    grpc: String,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Daemon {
    /// Starts `zkpipe serve` on `dir`'s config; its log goes to `dir/daemon-<run>.log`.
    /// Without the checked-key cache: the kill-while-loading test needs every load to run
    /// its point checks, and a key this test made before (same seed, same bytes) would be
    /// remembered.
    fn start(dir: &Path, run: usize) -> Daemon {
        let log = std::fs::File::create(dir.join(format!("daemon-{run}.log"))).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_zkpipe"))
            .arg("serve")
            .arg("--config")
            .arg(dir.join("zkpipe.toml"))
            .env("ZKPIPE_KEY_CACHE", "off")
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap();
        let grpc = common::printed(&common::first_line(&mut child), "grpc=");
        Daemon {
            child,
            grpc: format!("http://{grpc}"),
        }
    }

    /// SIGTERM; waits for it to exit and returns whether it exited 0.
    fn terminate(mut self) -> bool {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success());
        self.child.wait().unwrap().success()
    }

    /// SIGKILL, and reap it.
    fn kill_9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    async fn client(&self) -> Client {
        ProverClient::connect(self.grpc.clone())
            .await
            .unwrap()
            .max_decoding_message_size(usize::MAX)
    }
}

/// A directory with a config, keys copied in as `<id>.zkey`, `[keys] checks`, and
/// `server` lines added to its `[server]` section.
fn node_dir(keys: &[(&str, PathBuf)], checks: &str, server: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("keys")).unwrap();
    for (id, zkey) in keys {
        std::fs::copy(zkey, dir.path().join("keys").join(format!("{id}.zkey"))).unwrap();
    }
    std::fs::write(
        dir.path().join("zkpipe.toml"),
        format!(
            "[server]\ngrpc_listen = \"127.0.0.1:0\"\nhttp_listen = \"127.0.0.1:0\"\n{server}\n\
             [keys]\ndir = \"keys\"\nchecks = \"{checks}\"\n\
             [reduce]\nworkers = 2\nthreads = 2\n[device]\nworkers = 1\nthreads = 2\n\
             [tail]\nworkers = 1\nthreads = 1\n"
        ),
    )
    .unwrap();
    dir
}

/// A job the test submits: its request id, key, and witness file.
#[derive(Clone)]
struct Request {
    request_id: String,
    key_id: String,
    zkey: PathBuf,
    witnesses: Vec<Vec<u8>>,
}

impl Request {
    fn pb(&self) -> pb::SubmitProofRequest {
        pb::SubmitProofRequest {
            key_id: self.key_id.clone(),
            witnesses: self.witnesses.clone(),
            priority: pb::Priority::Normal as i32,
            request_id: self.request_id.clone(),
        }
    }
}

/// Awaits `job` and checks it is `r`'s, Done, with proofs that verify.
async fn check_done(c: &mut Client, job: u64, r: &Request, bls: &str) {
    let res = c
        .await_proof(pb::AwaitProofRequest {
            job_id: job,
            timeout_ms: 300_000,
        })
        .await
        .unwrap_or_else(|e| panic!("await job {job} ({}): {e}", r.request_id))
        .into_inner();
    assert_eq!(
        res.state,
        JobState::Done as i32,
        "job {job} ({}): {}",
        r.request_id,
        res.error
    );
    assert_eq!(res.key_id, r.key_id, "job {job} is {}'s job", r.request_id);
    assert_eq!(res.proofs.len(), r.witnesses.len());
    for p in &res.proofs {
        if r.key_id.starts_with(bls) {
            assert_verifies::<Bls12_381>(&r.zkey, p);
        } else {
            assert_verifies::<Bn254>(&r.zkey, p);
        }
    }
}

/// After a restart: the jobs accepted before it (`before`, request id → job id) are
/// awaited by id, without submitting anything; then every request is submitted again
/// (the accepted ones must come back as their job, the others are new) and awaited.
/// Returns request id → job id, all distinct.
async fn finish_all(
    c: &mut Client,
    requests: &[Request],
    before: &HashMap<String, u64>,
    bls: &str,
) -> HashMap<String, u64> {
    for r in requests {
        if let Some(&job) = before.get(&r.request_id) {
            check_done(c, job, r, bls).await;
        }
    }
    let mut ids = HashMap::new();
    for r in requests {
        let s = c.submit_proof(r.pb()).await.unwrap().into_inner();
        if let Some(&job) = before.get(&r.request_id) {
            assert_eq!((s.job_id, s.existing), (job, true), "{}", r.request_id);
        }
        ids.insert(r.request_id.clone(), s.job_id);
    }
    for r in requests {
        check_done(c, ids[&r.request_id], r, bls).await;
    }
    let unique: HashSet<u64> = ids.values().copied().collect();
    assert_eq!(
        unique.len(),
        requests.len(),
        "every request has its own job id"
    );
    ids
}

/// How many times each job was logged as done, over every log in `dir`.
fn done_lines(dir: &Path) -> HashMap<u64, usize> {
    let mut n = HashMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "log") {
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                if !line.contains("job done") {
                    continue;
                }
                let id = line
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix("job="))
                    .and_then(|v| v.trim_matches(|c: char| !c.is_ascii_digit()).parse().ok())
                    .unwrap_or_else(|| panic!("no job id in {line:?}"));
                *n.entry(id).or_default() += 1;
            }
        }
    }
    n
}

fn assert_done_at_most_once(dir: &Path, jobs: usize) {
    let done = done_lines(dir);
    // Every job ends once; one whose end was recorded just before the kill may have
    // missed its log line, but none is logged twice.
    assert!(
        done.len() + 1 >= jobs,
        "only {} of {jobs} jobs logged as done",
        done.len()
    );
    for (job, n) in done {
        assert_eq!(n, 1, "job {job} was proved {n} times");
    }
}

/// Submits requests one by one until `stop`; returns request id → job id of the accepted.
async fn submit_until_killed(c: &mut Client, requests: &[Request]) -> HashMap<String, u64> {
    let mut accepted = HashMap::new();
    for r in requests {
        match c.submit_proof(r.pb()).await {
            Ok(s) => {
                accepted.insert(r.request_id.clone(), s.into_inner().job_id);
            }
            Err(_) => break, // the daemon was killed
        }
    }
    accepted
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_jobs_survive_kill_9_at_a_random_moment() {
    thirty_jobs_survive_kill_9("").await;
}

/// Witnesses written without a sync (`server.witness_sync = false`) survive a crash of the
/// daemon: the kernel keeps them. Every witness is a file here (inline limit 0).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_jobs_survive_kill_9_without_witness_syncs() {
    thirty_jobs_survive_kill_9("witness_inline_max = 0\nwitness_sync = false").await;
}

/// 30 jobs over two keys of both curves, `server` lines added to the daemon's config,
/// the daemon killed at a random moment and restarted.
async fn thirty_jobs_survive_kill_9(server: &str) {
    let keys = [
        (
            "bn254-poseidon",
            fixture("bn254", "poseidon").join("circuit.zkey"),
        ),
        (
            "bls-multi",
            fixture("bls12-381", "multi_public").join("circuit.zkey"),
        ),
    ];
    let dir = node_dir(&keys, "trusted", server);
    let requests: Vec<Request> = (0..30)
        .map(|i| {
            let (id, zkey) = &keys[i % 2];
            let folder = zkey.parent().unwrap();
            Request {
                request_id: format!("crash-{i}"),
                key_id: id.to_string(),
                zkey: zkey.clone(),
                witnesses: vec![std::fs::read(folder.join("witness.wtns")).unwrap(); 1 + i % 2],
            }
        })
        .collect();
    let kill_after = Duration::from_millis(rand::thread_rng().gen_range(0..1500));
    eprintln!("killing after {kill_after:?}");

    let d = Daemon::start(dir.path(), 1);
    let mut c = d.client().await;
    let reqs = requests.clone();
    let submitting = tokio::spawn(async move { submit_until_killed(&mut c, &reqs).await });
    tokio::time::sleep(kill_after).await;
    d.kill_9();
    let before = submitting.await.unwrap();

    let d = Daemon::start(dir.path(), 2);
    let mut c = d.client().await;
    let after = finish_all(&mut c, &requests, &before, "bls").await;
    // A different request under a used request id is refused, after the restart too.
    let mut other = requests[0].pb();
    other.witnesses.push(other.witnesses[0].clone());
    let e = c.submit_proof(other).await.unwrap_err();
    assert_eq!(e.code(), Code::AlreadyExists, "{}", e.message());
    // New jobs get new ids.
    let mut fresh = requests[1].clone();
    fresh.request_id = "fresh".into();
    let next = finish_all(&mut c, &[fresh], &HashMap::new(), "bls").await["fresh"];
    assert!(after.values().all(|&j| j < next), "ids are never reused");
    drop(d);
    assert_done_at_most_once(dir.path(), requests.len() + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_kill_9_while_a_key_loads_loses_nothing() {
    // A key big enough, with per-point checks, that loading it takes a while.
    let work = tempfile::tempdir().unwrap();
    let (r1cs, wtns, zkey) = (
        work.path().join("big.r1cs"),
        work.path().join("big.wtns"),
        work.path().join("big.zkey"),
    );
    let run = |args: &[&std::ffi::OsStr]| {
        let o = Command::new(env!("CARGO_BIN_EXE_zkpipe"))
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", common::text(&o));
    };
    run(&[
        "synth".as_ref(),
        "--constraints".as_ref(),
        "2^14".as_ref(),
        r1cs.as_os_str(),
        wtns.as_os_str(),
    ]);
    run(&[
        "setup".as_ref(),
        "--dev".as_ref(),
        "--seed".as_ref(),
        "7".as_ref(),
        r1cs.as_os_str(),
        zkey.as_os_str(),
    ]);
    let small = fixture("bls12-381", "poseidon");
    let keys = [
        ("big", zkey.clone()),
        ("bls-poseidon", small.join("circuit.zkey")),
    ];
    let dir = node_dir(&keys, "per-point", "");
    let requests: Vec<Request> = (0..6)
        .map(|i| {
            let (id, zkey, w) = if i % 2 == 0 {
                ("big", zkey.clone(), wtns.clone())
            } else {
                (
                    "bls-poseidon",
                    keys[1].1.clone(),
                    small.join("witness.wtns"),
                )
            };
            Request {
                request_id: format!("load-{i}"),
                key_id: id.into(),
                zkey,
                witnesses: vec![std::fs::read(w).unwrap()],
            }
        })
        .collect();

    let d = Daemon::start(dir.path(), 1);
    let mut c = d.client().await;
    let before = submit_until_killed(&mut c, &requests).await;
    assert_eq!(before.len(), requests.len());
    // Kill the daemon while it is loading the big key.
    let t0 = Instant::now();
    loop {
        let s = c.get_status(pb::GetStatusRequest {}).await.unwrap();
        let big = s.into_inner().keys.into_iter().find(|k| k.id == "big");
        if big.is_some_and(|k| k.residency == "loading") {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the big key never showed as loading"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    d.kill_9();

    let d = Daemon::start(dir.path(), 2);
    let mut c = d.client().await;
    finish_all(&mut c, &requests, &before, "bls").await;
    drop(d);
    assert_done_at_most_once(dir.path(), requests.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn jobs_left_at_sigterm_run_after_the_restart() {
    let folder = fixture("bls12-381", "poseidon");
    let keys = [("bls-poseidon", folder.join("circuit.zkey"))];
    // No grace: what is not finished at the signal is left in the store.
    let dir = node_dir(&keys, "trusted", "shutdown_grace = \"0s\"");
    let requests: Vec<Request> = (0..12)
        .map(|i| Request {
            request_id: format!("term-{i}"),
            key_id: "bls-poseidon".into(),
            zkey: keys[0].1.clone(),
            witnesses: vec![std::fs::read(folder.join("witness.wtns")).unwrap(); 8],
        })
        .collect();
    let d = Daemon::start(dir.path(), 1);
    let mut c = d.client().await;
    let before = submit_until_killed(&mut c, &requests).await;
    assert_eq!(before.len(), requests.len());
    assert!(d.terminate(), "exit status 0 after SIGTERM");
    let log = std::fs::read_to_string(dir.path().join("daemon-1.log")).unwrap();
    assert!(
        log.contains("unfinished jobs kept in the job store"),
        "the test stopped the daemon too late, or it did not say so: {log}"
    );

    let d = Daemon::start(dir.path(), 2);
    let mut c = d.client().await;
    finish_all(&mut c, &requests, &before, "bls").await;
    drop(d);
    assert_done_at_most_once(dir.path(), requests.len());
}
