//! The memory switches: `ZKPIPE_ALLOCATOR` and `ZKPIPE_HUGE_PAGES` (environment, read
//! once at startup), a daemon proving with the non-default `[memory]` modes, and the lab's
//! modes refused by a product build (read by a build with `--features lab`).

use crate::common;
use common::*;
use serde_json::Value;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The variables these tests set, removed from what the binary would inherit.
const VARS: [&str; 4] = [
    "ZKPIPE_ALLOCATOR",
    "ZKPIPE_HUGE_PAGES",
    "GLIBC_TUNABLES",
    "MIMALLOC_SHOW_STATS",
];

fn command(env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_zkpipe"));
    for v in VARS {
        c.env_remove(v);
    }
    c.envs(env.iter().copied());
    c
}

fn run(env: &[(&str, &str)], args: &[&Path]) -> Output {
    command(env).args(args).output().unwrap()
}

/// mimalloc's statistics at exit (`MIMALLOC_SHOW_STATS=1`): the memory its arenas
/// committed at their peak ("committed :  39.0 MiB ..."), or None if it printed none (it
/// prints only a header when its heaps were never used).
fn mimalloc_committed(stderr: &str) -> Option<String> {
    stderr
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("committed"))
        .and_then(|l| l.trim_start().strip_prefix(':'))
        .and_then(|l| l.split_whitespace().next())
        .map(str::to_string)
}

#[test]
fn mimalloc_proves_and_the_system_allocator_stays_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let f = fixture("bn254", "poseidon");
    let (zkey, wtns) = (f.join("circuit.zkey"), f.join("witness.wtns"));
    for (env, name) in [
        (vec![("ZKPIPE_ALLOCATOR", "mimalloc")], "mimalloc"),
        (vec![("ZKPIPE_ALLOCATOR", "system")], "system"),
        (vec![], "system"),
    ] {
        let mut env = env;
        env.extend([("MIMALLOC_SHOW_STATS", "1"), ("ZKPIPE_LOG", "debug")]);
        let (proof, public) = (
            dir.path().join("proof.json"),
            dir.path().join("public.json"),
        );
        let o = run(&env, &[Path::new("prove"), &zkey, &wtns, &proof, &public]);
        assert!(o.status.success(), "{env:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("allocator=\"{name}\"")),
            "{env:?}: {err}"
        );
        // mimalloc is linked in either way; only when chosen do its heaps serve the
        // allocations (its statistics show the memory it committed then).
        let used = mimalloc_committed(&err).is_some_and(|b| b != "0");
        assert_eq!(used, name == "mimalloc", "{env:?}: {err}");
        let o = run(&[], &[Path::new("verify"), &zkey, &public, &proof]);
        assert!(o.status.success(), "{env:?}: {}", text(&o));
    }
}

#[test]
fn unknown_values_fail_at_startup_in_one_line() {
    let version = [Path::new("--version")];
    let o = run(&[("ZKPIPE_ALLOCATOR", "jemalloc")], &version);
    assert_one_line_error(
        &o,
        &["ZKPIPE_ALLOCATOR", "\"jemalloc\"", "system or mimalloc"],
    );
    assert_eq!(o.status.code(), Some(2));
    let o = run(&[("ZKPIPE_HUGE_PAGES", "yes")], &version);
    assert_one_line_error(&o, &["ZKPIPE_HUGE_PAGES", "\"yes\"", "0 or 1"]);
    assert_eq!(o.status.code(), Some(2));
    for env in [
        ("ZKPIPE_ALLOCATOR", "mimalloc"),
        ("ZKPIPE_ALLOCATOR", "system"),
        ("ZKPIPE_HUGE_PAGES", "0"),
        ("ZKPIPE_HUGE_PAGES", "1"),
    ] {
        let o = run(&[env], &version);
        assert!(o.status.success(), "{env:?}: {}", text(&o));
    }
}

/// A daemon on loopback serving `keys` (from [`KEYS`]), with `memory` as its `[memory]`
/// section; returns it with its gRPC address once it printed its addresses (so after
/// any re-execution for huge pages).
fn serve(env: &[(&str, &str)], keys: &[&str], memory: &str) -> (Child, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), keys, memory);
    let mut child = command(env)
        .arg("serve")
        .arg("--config")
        .arg(&cfg)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let grpc = common::printed(&common::first_line(&mut child), "grpc=");
    (child, format!("http://{grpc}"), dir)
}

/// A daemon's config in `dir` serving `keys`, with `memory` as its `[memory]` section.
fn write_config(dir: &Path, keys: &[&str], memory: &str) -> std::path::PathBuf {
    let key_dir = dir.join("keys");
    std::fs::create_dir(&key_dir).unwrap();
    for id in keys {
        std::fs::copy(
            key_fixture(id).join("circuit.zkey"),
            key_dir.join(format!("{id}.zkey")),
        )
        .unwrap();
    }
    let cfg = dir.join("zkpipe.toml");
    std::fs::write(
        &cfg,
        format!(
            "[server]\ngrpc_listen = \"127.0.0.1:0\"\nhttp_listen = \"127.0.0.1:0\"\n\
             state_dir = \"state\"\n[keys]\ndir = \"keys\"\nchecks = \"trusted\"\n\
             [memory]\n{memory}\n[reduce]\nworkers = 2\nthreads = 2\n\
             [device]\nworkers = 2\nthreads = 2\n[tail]\nworkers = 2\nthreads = 1\n"
        ),
    )
    .unwrap();
    cfg
}

/// The `[memory]` modes kept for the lab's comparisons: a lab build serves with them.
const LAB_MEMORY: [&str; 2] = [
    "dealloc = \"detached\"\nreturns = \"cas-pop\"\npool_max = \"64KiB\"",
    "dealloc = \"in-place\"\nreturns = \"free\"",
];

/// The daemon's environment as it runs now (after any re-execution).
fn environment(child: &Child) -> String {
    let raw = std::fs::read(format!("/proc/{}/environ", child.id())).unwrap();
    String::from_utf8_lossy(&raw).replace('\0', "\n")
}

/// SIGTERM, then the exit status within `limit`.
fn stop(mut child: Child, limit: Duration) -> std::process::ExitStatus {
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("the daemon did not exit within {limit:?} of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn huge_pages_are_asked_for_unless_switched_off() {
    let (child, _, _dir) = serve(&[], &[], "");
    let env = environment(&child);
    assert!(
        env.lines()
            .any(|l| l == "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"),
        "{env}"
    );
    assert!(stop(child, Duration::from_secs(60)).success());
    let (child, _, _dir) = serve(&[("ZKPIPE_HUGE_PAGES", "0")], &[], "");
    let env = environment(&child);
    assert!(!env.contains("GLIBC_TUNABLES"), "{env}");
    assert!(stop(child, Duration::from_secs(60)).success());
}

#[test]
fn a_daemon_proves_with_mimalloc_and_each_non_default_memory_mode() {
    // The product's modes; a lab build runs the lab's too.
    let product = ["dealloc = \"in-place\"\npool_max = \"64KiB\""];
    let lab: &[&str] = if cfg!(feature = "lab") {
        &LAB_MEMORY
    } else {
        &[]
    };
    for &memory in product.iter().chain(lab) {
        let env = [("ZKPIPE_ALLOCATOR", "mimalloc"), ("ZKPIPE_HUGE_PAGES", "0")];
        let (child, grpc, _dir) = serve(&env, &["bn254-multi"], memory);
        let cli = |args: &[&str]| -> Output {
            command(&[])
                .args(args)
                .args(["--server", &grpc])
                .output()
                .unwrap()
        };
        let w = key_fixture("bn254-multi").join("witness.wtns");
        let w = w.to_str().unwrap();
        for _ in 0..2 {
            let o = cli(&["submit", "bn254-multi", w, w, w]);
            assert!(o.status.success(), "{memory}: {}", text(&o));
            let job = String::from_utf8_lossy(&o.stdout).trim().to_string();
            let o = cli(&["await", &job, "--json", "--timeout", "300s"]);
            assert!(o.status.success(), "{memory}: {}", text(&o));
            let r: Value = serde_json::from_slice(&o.stdout).unwrap();
            // The daemon verified each proof before returning it (pipeline.self_check).
            assert_eq!(r["state"], "done", "{memory}: {r}");
            assert_eq!(r["proofs"].as_array().map(Vec::len), Some(3), "{r}");
        }
        // Shutdown waits until everything is freed, detached threads included.
        assert!(stop(child, Duration::from_secs(60)).success(), "{memory}");
    }
}

/// A product build refuses the lab's memory modes in one line that says how to get them,
/// before it starts anything.
#[cfg(not(feature = "lab"))]
#[test]
fn a_product_daemon_refuses_the_lab_memory_modes() {
    for (memory, what) in [
        (
            LAB_MEMORY[0],
            "memory.dealloc = \"detached\" is a lab setting",
        ),
        (LAB_MEMORY[1], "memory.returns = \"free\" is a lab setting"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = write_config(dir.path(), &[], memory);
        let o = command(&[("ZKPIPE_HUGE_PAGES", "0")])
            .arg("serve")
            .arg("--config")
            .arg(&cfg)
            .output()
            .unwrap();
        assert_one_line_error(&o, &[what, "build with --features lab"]);
        assert!(!dir.path().join("state").exists(), "{memory}");
    }
}
