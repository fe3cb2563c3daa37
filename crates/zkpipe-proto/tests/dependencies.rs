//! The client comes without the daemon: zkpipe-proto's dependency tree (what a program
//! that only talks to a daemon compiles) holds no other zkpipe crate and none of the
//! daemon's heavy stacks (wasm runtime, SQL, object stores).

use std::process::Command;

/// Crates that must not appear, by name or as a name's prefix (`wasmtime-environ`).
const FORBIDDEN: [&str; 5] = ["zkpipe-", "wasmtime", "sqlx", "object_store", "ark-"];

#[test]
fn the_client_builds_without_the_daemon() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "--offline", "--locked", "-p", "zkpipe-proto"])
        .args(["-e", "normal", "--prefix", "none", "--format", "{p}"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "cargo tree failed: {stderr}");
    let tree = String::from_utf8(out.stdout).expect("cargo tree prints UTF-8");
    let names: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    // The tree was read: the client's own stack is in it.
    for needed in ["zkpipe-proto", "tonic", "prost"] {
        assert!(names.contains(&needed), "{needed} missing from:\n{tree}");
    }
    let bad: Vec<&str> = names
        .iter()
        .copied()
        .filter(|&n| n != "zkpipe-proto")
        .filter(|n| FORBIDDEN.iter().any(|f| n.starts_with(f)))
        .collect();
    assert!(bad.is_empty(), "the client depends on {bad:?}:\n{tree}");
}
