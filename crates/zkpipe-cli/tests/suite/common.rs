//! Helpers shared by the CLI integration tests: fixture paths, the two real clients (our
//! binary and snarkjs from npm), and a daemon process on loopback.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use zkpipe_core::verify::public_from_json;
use zkpipe_core::{verify, Bls12_381, Bn254, Curve, PointChecks, Proof, VerifyingKey};
use zkpipe_formats::json::ProofJson;
use zkpipe_formats::zkey::ZkeyFile;
use zkpipe_server::pb::{self, JobState};
use zkpipe_server::ProverClient;

/// A gRPC client of the daemon.
pub type Client = ProverClient<tonic::transport::Channel>;

/// The repository's `tests/fixtures` folder.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// Every committed fixture: (curve folder, circuit folder).
pub const FIXTURES: [(&str, &str); 4] = [
    ("bn254", "multi_public"),
    ("bn254", "poseidon"),
    ("bls12-381", "multi_public"),
    ("bls12-381", "poseidon"),
];

/// A fixture's folder.
pub fn fixture(curve: &str, circuit: &str) -> PathBuf {
    fixtures().join(curve).join(circuit)
}

/// Runs the zkpipe binary.
pub fn zkpipe(args: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zkpipe"))
        .args(args)
        .output()
        .expect("zkpipe binary runs")
}

/// `zkpipe prove` of a fixture's committed witness (with `extra` flags) into `dir`: the
/// proof and public files, after asserting that it succeeded.
pub fn prove_fixture(dir: &Path, curve: &str, circuit: &str, extra: &[&str]) -> (PathBuf, PathBuf) {
    let f = fixture(curve, circuit);
    let (proof, public) = (dir.join("proof.json"), dir.join("public.json"));
    let (zkey, wtns) = (f.join("circuit.zkey"), f.join("witness.wtns"));
    let mut args: Vec<&Path> = vec!["prove".as_ref(), &zkey, &wtns, &proof, &public];
    args.extend(extra.iter().map(Path::new));
    let o = zkpipe(&args);
    assert!(
        o.status.success(),
        "{curve}/{circuit} {extra:?}: {}",
        text(&o)
    );
    (proof, public)
}

/// Asserts that `snarkjs groth16 verify` accepts a proof (its JSON texts, written into
/// `dir` as `<name>-proof.json` / `<name>-public.json`) against the verification key `vk`.
pub fn snarkjs_verifies(vk: &Path, proof_json: &str, public_json: &str, dir: &Path, name: &str) {
    let (proof, public) = (
        dir.join(format!("{name}-proof.json")),
        dir.join(format!("{name}-public.json")),
    );
    std::fs::write(&proof, proof_json).unwrap();
    std::fs::write(&public, public_json).unwrap();
    let o = snarkjs(&[
        Path::new("groth16"),
        Path::new("verify"),
        vk,
        &public,
        &proof,
    ]);
    assert!(
        o.status.success() && text(&o).contains("OK"),
        "{name}: snarkjs: {}",
        text(&o)
    );
}

/// Runs snarkjs from `tests/fixtures/node_modules`. Missing snarkjs is a failure, not a
/// skip: the README's test command installs it.
pub fn snarkjs(args: &[&Path]) -> Output {
    let bin = fixtures().join("node_modules/.bin/snarkjs");
    assert!(
        bin.exists(),
        "snarkjs is not installed at {}: run `npm ci --prefix tests/fixtures` (scripts/test.sh does)",
        bin.display()
    );
    Command::new(bin).args(args).output().expect("snarkjs runs")
}

/// stdout + stderr as text.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Asserts a command failed with exactly one line on stderr containing every `needle`.
pub fn assert_one_line_error(o: &Output, needles: &[&str]) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success(),
        "expected failure, got success: {}",
        text(o)
    );
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "error must be one line: {err:?}"
    );
    for n in needles {
        assert!(err.contains(n), "error {err:?} should mention {n:?}");
    }
}

/// (key id, curve folder, circuit).
pub const KEYS: [(&str, &str, &str); 4] = [
    ("bn254-poseidon", "bn254", "poseidon"),
    ("bn254-multi", "bn254", "multi_public"),
    ("bls-poseidon", "bls12-381", "poseidon"),
    ("bls-multi", "bls12-381", "multi_public"),
];

/// The fixture folder of a key id in [`KEYS`].
pub fn key_fixture(id: &str) -> PathBuf {
    let (_, curve, circuit) = KEYS.iter().find(|k| k.0 == id).unwrap();
    fixture(curve, circuit)
}

/// A daemon process; killed on drop if still running.
pub struct Daemon {
    pub child: Child,
    /// `http://host:port` of its gRPC API.
    pub grpc: String,
    /// `host:port` of its HTTP endpoints.
    pub http: String,
    /// Its log (stderr), read as it comes so that a full pipe never stalls it; joined,
    /// every line once it exited.
    pub log: Option<std::thread::JoinHandle<Vec<String>>>,
    _dir: tempfile::TempDir,
}

impl Daemon {
    /// The folder of its config file, where its job store (`zkpipe-state`) lives.
    pub fn dir(&self) -> &Path {
        self._dir.path()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `zkpipe serve` on loopback with the [`KEYS`] named in `keys` in its key
/// directory and `extra` appended to its config; returns once it printed its addresses.
pub fn start_daemon(keys: &[&str], extra: &str) -> Daemon {
    start(keys, extra, false, &[], |_| {})
}

/// Like [`start_daemon`], with `settings` given as `--set section.key=value` (for the
/// `[server]` section, which the config file already opened).
pub fn start_daemon_with_settings(keys: &[&str], extra: &str, settings: &[&str]) -> Daemon {
    start(keys, extra, false, settings, |_| {})
}

/// Like [`start_daemon`], with each key's witness generator beside its `.zkey`, so that
/// it proves from circuit inputs too: circom's wasm for `bn254-poseidon` and `bls-multi`,
/// its native generator for the other two.
pub fn start_daemon_with_generators(keys: &[&str], extra: &str) -> Daemon {
    start(keys, extra, true, &[], |_| {})
}

/// Like [`start_daemon_with_generators`]; `add` puts more keys (and generators) into the
/// key directory before the daemon starts.
pub fn start_daemon_with_more_keys(keys: &[&str], extra: &str, add: impl FnOnce(&Path)) -> Daemon {
    start(keys, extra, true, &[], add)
}

fn start(
    keys: &[&str],
    extra: &str,
    generators: bool,
    settings: &[&str],
    add: impl FnOnce(&Path),
) -> Daemon {
    let dir = tempfile::tempdir().unwrap();
    let key_dir = dir.path().join("keys");
    std::fs::create_dir(&key_dir).unwrap();
    for id in keys {
        let from = key_fixture(id);
        std::fs::copy(
            from.join("circuit.zkey"),
            key_dir.join(format!("{id}.zkey")),
        )
        .unwrap();
        if !generators {
            continue;
        }
        let copy =
            |name: &str, to: String| std::fs::copy(from.join(name), key_dir.join(to)).unwrap();
        if matches!(*id, "bn254-poseidon" | "bls-multi") {
            copy("circuit.wasm", format!("{id}.wasm"));
        } else {
            copy("circuit", id.to_string());
            copy("circuit.dat", format!("{id}.dat"));
        }
    }
    add(&key_dir);
    let cfg = dir.path().join("zkpipe.toml");
    std::fs::write(
        &cfg,
        format!(
            "[server]\ngrpc_listen = \"127.0.0.1:0\"\nhttp_listen = \"127.0.0.1:0\"\nmax_request_bytes = \"4MiB\"\n\
             [keys]\ndir = \"keys\"\nchecks = \"trusted\"\n\
             [reduce]\nworkers = 2\nthreads = 2\n[device]\nworkers = 2\nthreads = 2\n[tail]\nworkers = 2\nthreads = 1\n{extra}"
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_zkpipe"))
        .arg("serve")
        .arg("--config")
        .arg(&cfg)
        .args(settings.iter().flat_map(|v| ["--set", v]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let log = std::thread::spawn(move || stderr.lines().map_while(Result::ok).collect());
    let line = first_line(&mut child);
    Daemon {
        grpc: format!("http://{}", printed(&line, "grpc=")),
        http: printed(&line, "http="),
        child,
        log: Some(log),
        _dir: dir,
    }
}

/// Awaits `job` on the daemon (five minutes at most).
pub async fn await_job(c: &mut Client, job: u64) -> pb::JobResult {
    c.await_proof(pb::AwaitProofRequest {
        job_id: job,
        timeout_ms: 300_000,
    })
    .await
    .unwrap()
    .into_inner()
}

/// Asserts that a proof from the daemon verifies (zkpipe's verifier) against `zkey`.
pub fn assert_verifies<E: Curve>(zkey: &Path, p: &pb::PartitionProof) {
    let z = ZkeyFile::open(zkey).unwrap();
    let vk = VerifyingKey::<E>::from_zkey(&z, PointChecks::Trusted).unwrap();
    let proof =
        Proof::<E>::from_json(&serde_json::from_str::<ProofJson>(&p.proof_json).unwrap()).unwrap();
    let public: Vec<String> = serde_json::from_str(&p.public_json).unwrap();
    assert!(verify(&vk, &public_from_json::<E>(&public).unwrap(), &proof).unwrap());
}

/// Asserts that a job of a [`KEYS`] key ended Done with one proof per partition, each
/// verifying against the key, with timings that add up.
pub fn check_done(r: &pb::JobResult) {
    assert_eq!(
        r.state,
        JobState::Done as i32,
        "job {}: {}",
        r.job_id,
        r.error
    );
    assert_eq!(r.proofs.len(), r.partitions as usize);
    let zkey = key_fixture(&r.key_id).join("circuit.zkey");
    for p in &r.proofs {
        if r.key_id.starts_with("bn254") {
            assert_verifies::<Bn254>(&zkey, p);
        } else {
            assert_verifies::<Bls12_381>(&zkey, p);
        }
        let t = p.timings.unwrap();
        assert!(t.total_ms >= t.reduce_ms && t.total_ms > 0.0);
    }
}

/// The first line a daemon started with piped stdout printed (its bound addresses).
pub fn first_line(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    line
}

/// The address after `key` (`grpc=`, `http=`) in a daemon's first line.
pub fn printed(line: &str, key: &str) -> String {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key))
        .unwrap_or_else(|| panic!("daemon did not print its addresses: {line:?}"))
        .to_string()
}

/// The body of a plain HTTP GET of `path` on `addr`, which must answer 200.
pub fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(
        out.starts_with("HTTP/1.0 200") || out.starts_with("HTTP/1.1 200"),
        "{out}"
    );
    out.split_once("\r\n\r\n").unwrap().1.to_string()
}

/// A gRPC client of the daemon, without message size limits.
pub async fn client(d: &Daemon) -> Client {
    ProverClient::connect(d.grpc.clone())
        .await
        .unwrap()
        .max_decoding_message_size(usize::MAX)
        .max_encoding_message_size(usize::MAX)
}

/// Parses Prometheus text: every sample line is `name{labels} value`.
pub fn parse_metrics(text: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (k, v) = l
                .rsplit_once(' ')
                .unwrap_or_else(|| panic!("bad line {l:?}"));
            let v: f64 = v.parse().unwrap_or_else(|_| panic!("bad value in {l:?}"));
            (k.to_string(), v)
        })
        .collect()
}
