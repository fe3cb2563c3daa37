//! `zkpipe-bench sweep` on the CPU backend: two variants (daemons it starts and stops itself)
//! × two client counts on a small key; sweep.json has every cell with consistent numbers,
//! the traces and the chart are written, a second run into the same folder is refused,
//! and a daemon that cannot start is a one-line error quoting its log.

use crate::common;
use common::*;
use std::path::{Path, PathBuf};

/// A folder with `keys/bn254-multi.zkey` and a zkpipe.toml serving it (plus `extra`).
fn setup(extra: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    serving_folder(&format!(
        "[reduce]\nworkers = 2\nthreads = 2\n[device]\nworkers = 2\nthreads = 2\n\
         [tail]\nworkers = 2\nthreads = 1\n{extra}"
    ))
}

/// `zkpipe-bench sweep` of bn254-multi with two variants without settings, c = 1,2; its
/// daemons run the `zkpipe` binary beside zkpipe-bench (the default).
fn sweep(cfg: &Path, wtns: &Path, out: &Path) -> std::process::Output {
    zkpipe_beside();
    zkpipe_bench(&[
        "sweep".as_ref(),
        "--config".as_ref(),
        cfg,
        "--backend".as_ref(),
        "cpu".as_ref(),
        "bn254-multi".as_ref(),
        wtns,
        "-c".as_ref(),
        "1,2".as_ref(),
        "-j".as_ref(),
        "1".as_ref(),
        "-p".as_ref(),
        "2".as_ref(),
        "--rounds".as_ref(),
        "1".as_ref(),
        "--variant".as_ref(),
        "a:".as_ref(),
        "--variant".as_ref(),
        "b: env.ZKPIPE_LOG_FORMAT=json".as_ref(),
        // Loadtest's default is a connection per client; the sweep here shares one.
        "--connections".as_ref(),
        "shared".as_ref(),
        "--out".as_ref(),
        out,
    ])
}

#[test]
fn sweep_measures_every_cell_and_refuses_to_overwrite() {
    let (dir, cfg, wtns) = setup("");
    let out = dir.path().join("out");
    let o = sweep(&cfg, &wtns, &out);
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("s/proof") && stdout.contains("over rounds"),
        "{stdout}"
    );

    let json = std::fs::read(out.join("sweep.json")).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2 * 2, "2 variants × 2 client counts");
    for variant in ["a", "b"] {
        for c in [1u64, 2] {
            let cell = cells
                .iter()
                .find(|x| x["variant"] == variant && x["clients"] == c)
                .unwrap_or_else(|| panic!("no cell {variant} c={c}"));
            let at = |k: &str| cell[k].as_f64().unwrap_or_else(|| panic!("{k} in {cell}"));
            assert_eq!(cell["proofs"], c * 2, "c × j × p: {cell}");
            assert!(at("seconds_per_proof") > 0.0);
            assert!(at("proofs_per_second") > 0.0);
            assert!(at("avg_job_latency_s") > 0.0);
            assert!(at("avg_device_ms_per_partition") > 0.0);
            assert!((0.0..=1.0).contains(&at("device_utilisation")), "{cell}");
            assert_eq!(cell["job_ids"].as_array().unwrap().len(), c as usize);
            assert_eq!(cell["partitions"], 2);
            assert!(cell["retries"].as_u64().is_some(), "retries in {cell}");
            assert_eq!(
                cell["trace_partitions"],
                c * 2,
                "the trace has every partition"
            );
            let stages = cell["stage_median_ms"].as_object().unwrap();
            for stage in ["reduce", "device", "tail", "device_wait"] {
                assert!(stages[stage].as_f64().unwrap() >= 0.0, "{stage}: {cell}");
            }
            let inflation = cell["stage_inflation"].as_object().unwrap();
            if c == 1 {
                for (stage, x) in inflation {
                    if stages[stage].as_f64().unwrap() > 0.0 {
                        assert_eq!(x.as_f64(), Some(1.0), "{stage} at the smallest c");
                    }
                }
                assert_eq!(inflation["device"].as_f64(), Some(1.0));
            } else {
                assert!(inflation["device"].as_f64().unwrap() > 0.0);
            }
            assert!(cell["device_gaps"]["count"].as_u64().is_some());
            assert!(cell["device_gaps"]["total_s"].as_f64().unwrap() >= 0.0);
            let trace = out.join(cell["trace"].as_str().unwrap());
            let t: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
            assert!(t["traceEvents"].as_array().unwrap().len() > 4, "{t}");
            assert_eq!(
                trace.file_name().unwrap().to_str().unwrap(),
                format!("{variant}-c{c}-r1.trace.json")
            );
            // The record written as the cell ended: the same measurements.
            let own = out.join(format!("cells/{variant}-c{c}-r1.json"));
            let own: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&own).unwrap()).unwrap();
            for k in [
                "seconds_per_proof",
                "proofs",
                "job_ids",
                "retries",
                "kernel",
            ] {
                assert_eq!(own[k], cell[k], "{k}: {own}");
            }
        }
        // Stopped with SIGTERM: the daemon's last log line.
        let log = std::fs::read_to_string(out.join(format!("{variant}.serve.log"))).unwrap();
        let last = log.trim_end().lines().last().unwrap_or_default();
        assert!(last.contains("stopped"), "{log}");
        // Variant b's env.ZKPIPE_LOG_FORMAT=json reached its daemon only.
        assert_eq!(last.starts_with('{'), variant == "b", "{log}");
    }
    assert_eq!(v["summary"].as_array().unwrap().len(), 4);
    assert_eq!(v["connections"], "Shared");
    assert!(std::fs::read_to_string(out.join("sweep.svg"))
        .unwrap()
        .starts_with("<svg"));

    // A second run into the same folder is refused and leaves it as it was.
    let o = sweep(&cfg, &wtns, &out);
    assert_one_line_error(&o, &["sweep.json", "already exists"]);
    assert_eq!(std::fs::read(out.join("sweep.json")).unwrap(), json);
}

#[test]
fn a_daemon_that_cannot_start_is_a_one_line_error() {
    let (dir, cfg, wtns) = setup("[pipeline]\nno_such_knob = 1\n");
    let out = dir.path().join("out");
    let o = sweep(&cfg, &wtns, &out);
    assert_one_line_error(&o, &["variant a", "failed to start", "no_such_knob"]);
    assert!(!out.join("sweep.json").exists());

    let o = zkpipe_bench(&[
        "sweep".as_ref(),
        "k".as_ref(),
        wtns.as_ref(),
        "-c".as_ref(),
        "1,0".as_ref(),
        "--out".as_ref(),
        out.as_ref(),
    ]);
    assert_one_line_error(&o, &["bad -c list"]);
    assert_eq!(o.status.code(), Some(2));

    // --zkpipe names the daemons' binary: one that does not exist is a one-line error.
    let (dir, cfg, wtns) = setup("");
    let out = dir.path().join("out");
    let missing = dir.path().join("no-such-zkpipe");
    let o = zkpipe_bench(&[
        "sweep".as_ref(),
        "--config".as_ref(),
        cfg.as_ref(),
        "--backend".as_ref(),
        "cpu".as_ref(),
        "bn254-multi".as_ref(),
        wtns.as_ref(),
        "-c".as_ref(),
        "1".as_ref(),
        "--zkpipe".as_ref(),
        missing.as_ref(),
        "--out".as_ref(),
        out.as_ref(),
    ]);
    assert_one_line_error(&o, &["no-such-zkpipe"]);
    assert!(!out.join("sweep.json").exists());
}
