//! Helpers shared by zkpipe-bench's integration tests: fixture paths, the binaries, and
//! one-line error checks.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The repository's `tests/fixtures` folder.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// A fixture's folder.
pub fn fixture(curve: &str, circuit: &str) -> PathBuf {
    fixtures().join(curve).join(circuit)
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

/// Runs the zkpipe-bench binary.
pub fn zkpipe_bench(args: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zkpipe-bench"))
        .args(args)
        .output()
        .expect("zkpipe-bench binary runs")
}

/// `zkpipe-bench loadtest` against the daemon at `grpc`: `clients` clients × `jobs` jobs of
/// 4 partitions of `wtns` for the key "bn254-multi", sent as `stream` says, with `more`
/// arguments after.
pub fn loadtest(
    grpc: &str,
    wtns: &Path,
    clients: &str,
    jobs: &str,
    stream: &str,
    more: &[&str],
) -> Output {
    let args = [
        "loadtest",
        "--server",
        grpc,
        "bn254-multi",
        "-c",
        clients,
        "-j",
        jobs,
        "-p",
        "4",
        "--stream",
        stream,
    ];
    let mut args: Vec<&Path> = args.iter().chain(more).map(Path::new).collect();
    args.insert(4, wtns);
    zkpipe_bench(&args)
}

/// The `zkpipe` binary `sweep` starts daemons from: the one beside zkpipe-bench, in the
/// same cargo target folder (`target/<profile>/zkpipe`). Cargo builds it for the
/// workspace's tests (scripts/test.sh); `cargo test -p zkpipe-bench` alone does not, so
/// build it first (`cargo build --profile ci -p zkpipe-cli`).
pub fn zkpipe_beside() -> PathBuf {
    let exe = Path::new(env!("CARGO_BIN_EXE_zkpipe-bench"))
        .with_file_name(format!("zkpipe{}", std::env::consts::EXE_SUFFIX));
    assert!(
        exe.is_file(),
        "{} is missing: sweep runs the zkpipe binary beside zkpipe-bench; build it with \
         `cargo build --profile <this profile> -p zkpipe-cli`",
        exe.display()
    );
    exe
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

/// A folder with `keys/bn254-multi.zkey` and a `zkpipe.toml` serving it, trusted, with
/// `config` appended (the stages' workers and threads, other settings); the folder, the
/// config's path and the key's witness.
pub fn serving_folder(config: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("keys")).unwrap();
    let from = key_fixture("bn254-multi");
    std::fs::copy(
        from.join("circuit.zkey"),
        dir.path().join("keys/bn254-multi.zkey"),
    )
    .unwrap();
    let cfg = dir.path().join("zkpipe.toml");
    std::fs::write(
        &cfg,
        format!("[keys]\ndir = \"keys\"\nchecks = \"trusted\"\n{config}"),
    )
    .unwrap();
    (dir, cfg, from.join("witness.wtns"))
}

/// A `zkpipe serve` on loopback ports, killed on drop.
pub struct Serve {
    child: Child,
    /// Its gRPC address, `http://127.0.0.1:PORT`.
    pub grpc: String,
}

impl Serve {
    /// Starts `zkpipe serve --backend cpu` from `cfg` with its state in `state`; returns
    /// once it prints its addresses.
    pub fn start(cfg: &Path, state: &Path) -> Self {
        let mut child = Command::new(zkpipe_beside())
            .args(["serve", "--backend", "cpu", "--grpc-listen", "127.0.0.1:0"])
            .args(["--http-listen", "127.0.0.1:0", "--config"])
            .arg(cfg)
            .arg("--state-dir")
            .arg(state)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let grpc = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("grpc="))
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Self {
            child,
            grpc: format!("http://{grpc}"),
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
