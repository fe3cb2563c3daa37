//! The load tools over several daemons: `loadtest --addr A --addr B` against two CPU daemons
//! started here spreads its clients over both (each address runs jobs, the total is their
//! sum), and `sweep --gpus 1,2` starts one daemon per GPU count, each seeing that many
//! GPUs through `CUDA_VISIBLE_DEVICES` (on the CPU backend the test sees the setting reach
//! the daemon's process, through a wrapper that records it).

use crate::common::*;
use std::path::PathBuf;
use std::process::Command;

/// A folder with `keys/bn254-multi.zkey` and a small CPU config serving it.
fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
    serving_folder(
        "[reduce]\nworkers = 1\nthreads = 1\n[device]\nworkers = 1\nthreads = 1\n\
         [tail]\nworkers = 1\nthreads = 1\n",
    )
}

#[test]
fn loadtest_spreads_its_clients_over_every_address() {
    let (dir, cfg, wtns) = setup();
    let a = Serve::start(&cfg, &dir.path().join("state-a"));
    let b = Serve::start(&cfg, &dir.path().join("state-b"));
    // One address by --addr, the other after a comma: both forms are lists.
    let o = zkpipe_bench(&[
        "loadtest".as_ref(),
        "--addr".as_ref(),
        a.grpc.as_ref(),
        "--addr".as_ref(),
        format!("{},{}", b.grpc, a.grpc).as_ref(),
        "bn254-multi".as_ref(),
        wtns.as_ref(),
        "-c".as_ref(),
        "6".as_ref(),
        "-j".as_ref(),
        "1".as_ref(),
        "--json".as_ref(),
        "-".as_ref(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["proofs"], 6, "{v}");
    let per = v["per_address"].as_array().unwrap();
    assert_eq!(per.len(), 3, "{v}");
    // Round-robin: clients 0 and 3 to the first address, 1 and 4 to b, 2 and 5 to a again.
    let addresses: Vec<&str> = per.iter().map(|p| p["address"].as_str().unwrap()).collect();
    assert_eq!(addresses, [&a.grpc, &b.grpc, &a.grpc]);
    for p in per {
        assert_eq!(p["clients"], 2, "{p}");
        assert_eq!(p["proofs"], 2, "each address ran its clients' jobs: {p}");
        assert_eq!(p["failed_jobs"], 0, "{p}");
    }
    // Each daemon counts the jobs it ran: a got four, b two.
    for (serve, jobs) in [(&a, 4), (&b, 2)] {
        let o = Command::new(zkpipe_beside())
            .args(["status", "--json", "--all", "--server", &serve.grpc])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        let s = String::from_utf8_lossy(&o.stdout);
        let status: serde_json::Value = serde_json::from_str(&s).unwrap();
        let done = status["jobs"]
            .as_array()
            .unwrap_or_else(|| panic!("{status}"))
            .iter()
            .filter(|j| j["state"] == "done")
            .count();
        assert_eq!(done, jobs, "{}: {status}", serve.grpc);
    }
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains(&format!("{}: 2 clients", b.grpc)),
        "{stderr}"
    );
}

#[test]
fn sweep_by_gpu_count_tells_each_daemon_how_many_gpus_it_sees() {
    let (dir, cfg, wtns) = setup();
    let seen = dir.path().join("seen");
    let wrapper = dir.path().join("zkpipe-wrapper");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho \"$CUDA_VISIBLE_DEVICES\" >> '{}'\nexec '{}' \"$@\"\n",
            seen.display(),
            zkpipe_beside().display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = dir.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_zkpipe-bench"))
        .env_remove("CUDA_VISIBLE_DEVICES")
        .args(["sweep", "--backend", "cpu", "--config"])
        .arg(&cfg)
        .args(["bn254-multi"])
        .arg(&wtns)
        .args(["-c", "1", "-j", "1", "-p", "1", "--gpus", "2,1", "--zkpipe"])
        .arg(&wrapper)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let mut lines: Vec<String> = std::fs::read_to_string(&seen)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    assert_eq!(lines, ["0", "0,1"]);
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("sweep.json")).unwrap()).unwrap();
    let mut names: Vec<&str> = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["variant"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["g1", "g2"]);
    assert_eq!(v["gpus"], serde_json::json!([1, 2]));
}
