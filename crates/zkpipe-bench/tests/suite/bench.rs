//! `zkpipe-bench bench` on a small circuit: the JSON report carries every stage and the A/B
//! comparison, the SVG chart is written.

use crate::common;
use common::*;

#[test]
fn bench_json_has_every_stage_and_compare_has_a_verdict() {
    let f = fixture("bn254", "multi_public");
    let d = tempfile::tempdir().unwrap();
    let (json, svg) = (d.path().join("b.json"), d.path().join("b.svg"));
    let o = zkpipe_bench(&[
        "bench".as_ref(),
        &f.join("circuit.zkey"),
        &f.join("witness.wtns"),
        "--runs".as_ref(),
        "2".as_ref(),
        "--threads".as_ref(),
        "1,2".as_ref(),
        "--json".as_ref(),
        &json,
        "--plot".as_ref(),
        &svg,
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let series = v["series"].as_array().unwrap();
    assert_eq!(series.len(), 2);
    for s in series {
        for stage in [
            "reduce",
            "quotient",
            "msm_a",
            "msm_b1",
            "msm_b2_g2",
            "msm_c",
            "msm_h",
            "assemble",
            "verify",
        ] {
            let runs = s["stages"][stage]["runs_ms"]
                .as_array()
                .unwrap_or_else(|| panic!("{stage} missing in {s}"));
            assert_eq!(runs.len(), 2);
            assert!(s["stages"][stage]["summary"]["median"].as_f64().unwrap() >= 0.0);
        }
    }
    assert!(v["load_key_cold_ms"].as_f64().unwrap() > 0.0);
    assert!(v["peak_rss_mib"].as_f64().unwrap() > 0.0);
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));

    let o = zkpipe_bench(&[
        "bench".as_ref(),
        &f.join("circuit.zkey"),
        &f.join("witness.wtns"),
        "--runs".as_ref(),
        "3".as_ref(),
        "--only".as_ref(),
        "reduce".as_ref(),
        "--compare".as_ref(),
        "static".as_ref(),
        "dynamic:16".as_ref(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("GO"), "{out}");
    assert!(
        out.contains("static (baseline) vs dynamic:16 (variant)"),
        "{out}"
    );

    let o = zkpipe_bench(&[
        "bench".as_ref(),
        &f.join("circuit.zkey"),
        &f.join("witness.wtns"),
        "--threads".as_ref(),
        "0".as_ref(),
    ]);
    assert_one_line_error(&o, &["--threads"]);
    let o = zkpipe_bench(&[
        "bench".as_ref(),
        &f.join("circuit.zkey"),
        &f.join("witness.wtns"),
        "--schedule".as_ref(),
        "fast".as_ref(),
    ]);
    assert_one_line_error(&o, &["schedule"]);
}

#[test]
fn bench_batch_proves_several_in_one_device_stage() {
    let f = fixture("bn254", "multi_public");
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("b.json");
    let run = |extra: &[&str]| {
        let mut args: Vec<std::path::PathBuf> = vec![
            "bench".into(),
            f.join("circuit.zkey"),
            f.join("witness.wtns"),
            "--backend".into(),
            "cpu".into(),
        ];
        args.extend(extra.iter().map(std::path::PathBuf::from));
        let args: Vec<&std::path::Path> = args.iter().map(|a| a.as_path()).collect();
        zkpipe_bench(&args)
    };
    let o = run(&[
        "--batch",
        "3",
        "--runs",
        "2",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("per proof (total / 3)"), "{out}");
    assert!(
        out.contains("3 proofs per run in one device stage"),
        "{out}"
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["batch"], 3);
    // Every proof of the batch was self-checked: each one's verify span is there.
    let verify = &v["series"][0]["stages"]["verify"]["runs_ms"];
    assert_eq!(verify.as_array().map(Vec::len), Some(2), "{v}");

    let o = run(&["--batch", "0"]);
    assert_one_line_error(&o, &["--batch"]);
    let o = run(&["--batch", "2", "--only", "reduce"]);
    assert_one_line_error(&o, &["--batch"]);
}
