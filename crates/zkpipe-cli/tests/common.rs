//! Helpers shared by the CLI integration tests: fixture paths and the two real clients,
//! our binary and snarkjs from npm.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
