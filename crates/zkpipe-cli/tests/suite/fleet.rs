//! A fleet: three daemons share one Postgres job store (a real server, started by the
//! test). 60 jobs over three keys of both curves are submitted through different daemons;
//! one daemon is killed with SIGKILL while it holds claimed partitions. Every job still
//! ends Done, each partition recorded exactly once, with proofs that verify, awaited
//! through a daemon other than the one that accepted it; the killed daemon's partitions
//! move to the others when their leases lapse; restarted under its name, it rejoins and
//! proves. The Grafana dashboard's every metric is in a real scrape of a fleet daemon.

use crate::common;
#[path = "../../../zkpipe-store/tests/support/postgres.rs"]
mod postgres;

use common::{check_done, client, http_get, key_fixture, parse_metrics, start_daemon, Daemon};
use postgres::TempPostgres;
use std::collections::{HashMap, HashSet};
use std::process::Command;
use std::time::{Duration, Instant};
use zkpipe_server::pb::{self, Priority};

const FLEET_KEYS: [&str; 3] = ["bn254-poseidon", "bn254-multi", "bls-multi"];

fn fleet_daemon(pg: &TempPostgres, name: &str) -> Daemon {
    start_daemon(
        &FLEET_KEYS,
        &format!(
            "[store]\nurl = \"{}\"\ndaemon = \"{name}\"\nlease = \"2s\"\npoll = \"200ms\"\nclaim_ahead = 3\n",
            pg.url
        ),
    )
}

fn signal(d: &Daemon, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &d.child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig}");
}

fn count(pg: &TempPostgres, sql: &str) -> usize {
    pg.query(sql)[0].parse().unwrap()
}

/// Lines "partition recorded" per (job, partition) in `logs`.
fn recorded(logs: &[String]) -> HashMap<(u64, usize), usize> {
    let mut n = HashMap::new();
    for l in logs
        .iter()
        .filter(|l| l.contains("partition recorded in the shared store"))
    {
        let field = |k: &str| -> u64 {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix(k))
                .and_then(|v| v.trim_matches(|c: char| !c.is_ascii_digit()).parse().ok())
                .unwrap_or_else(|| panic!("no {k} in {l:?}"))
        };
        *n.entry((field("job="), field("partition=") as usize))
            .or_default() += 1;
    }
    n
}

/// Every log line of a daemon that exited (or was killed).
fn logs_of(mut d: Daemon) -> Vec<String> {
    let _ = d.child.kill();
    let _ = d.child.wait();
    d.log.take().unwrap().join().unwrap()
}

/// Every log line of a daemon stopped as an operator stops it (SIGTERM): a daemon killed
/// just after a result commits has not logged it yet.
fn logs_after_stop(mut d: Daemon) -> Vec<String> {
    signal(&d, "-TERM");
    let end = Instant::now() + Duration::from_secs(30);
    while d.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < end, "the daemon did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
    d.log.take().unwrap().join().unwrap()
}

fn metric(text: &str, name: &str) -> f64 {
    parse_metrics(text)
        .into_iter()
        .find_map(|(k, v)| (k == name).then_some(v))
        .unwrap_or_else(|| panic!("no {name} in the scrape"))
}

fn request(i: usize) -> pb::SubmitProofRequest {
    let key = FLEET_KEYS[i % 3];
    let w = std::fs::read(key_fixture(key).join("witness.wtns")).unwrap();
    let priority = [
        Priority::Low,
        Priority::Normal,
        Priority::High,
        Priority::Critical,
    ][i % 4];
    pb::SubmitProofRequest {
        key_id: key.into(),
        witnesses: vec![w; 1 + i % 3],
        priority: priority as i32,
        request_id: format!("fleet-{i}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_daemons_share_one_queue_and_survive_kill_9() {
    let pg = TempPostgres::start();
    let mut daemons: Vec<Option<Daemon>> = ["d0", "d1", "d2"]
        .iter()
        .map(|n| Some(fleet_daemon(&pg, n)))
        .collect();
    let mut clients = Vec::new();
    for d in &daemons {
        clients.push(client(d.as_ref().unwrap()).await);
    }

    // 60 jobs, submitted round-robin; the same request again, through another daemon,
    // is the same job.
    let mut jobs: Vec<(u64, usize)> = Vec::new(); // (job id, daemon that accepted it)
    for i in 0..60 {
        let via = i % 3;
        let s = clients[via]
            .submit_proof(request(i))
            .await
            .unwrap()
            .into_inner();
        assert!(!s.existing);
        jobs.push((s.job_id, via));
    }
    let again = clients[1]
        .submit_proof(request(0))
        .await
        .unwrap()
        .into_inner();
    assert_eq!((again.job_id, again.existing), (jobs[0].0, true));
    let partitions: usize = (0..60).map(|i| 1 + i % 3).sum();

    // Freeze d2 once it holds claimed partitions, see that it does, and kill it.
    let start = Instant::now();
    let held_by_d2 =
        "SELECT count(*) FROM zkpipe_partitions WHERE owner = 'd2' AND state = 'claimed'";
    while count(&pg, held_by_d2) == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "d2 never claimed work"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let d2 = daemons[2].take().unwrap();
    signal(&d2, "-STOP");
    let held = count(&pg, held_by_d2);
    assert!(held > 0);
    signal(&d2, "-KILL");
    let d2_logs = logs_of(d2);

    // Every job ends Done, awaited through a live daemon other than the one that took it.
    for &(job, via) in &jobs {
        let through = if via == 0 { 1 } else { 0 };
        let r = common::await_job(&mut clients[through], job).await;
        check_done(&r);
    }
    let all_done = "SELECT count(*) FROM zkpipe_partitions WHERE state = 'done'";
    assert_eq!(count(&pg, all_done), partitions);
    // d2's partitions were taken over after their leases lapsed, and its late results
    // (none: it was killed) could not have been recorded.
    let moved = count(
        &pg,
        "SELECT count(*) FROM zkpipe_partitions WHERE attempts >= 2 AND done_by <> 'd2'",
    );
    assert!(moved >= held, "{moved} partitions re-run, d2 held {held}");
    let mut expiries = 0.0;
    for d in daemons.iter().flatten() {
        expiries += metric(
            &http_get(&d.http, "/metrics"),
            "zkpipe_fleet_lease_expiries_total",
        );
    }
    assert!(
        expiries >= held as f64,
        "{expiries} lease expiries, d2 held {held}"
    );

    // The killed daemon, restarted under its name, rejoins: with the others frozen it
    // proves new work alone.
    let d2 = fleet_daemon(&pg, "d2");
    let mut c2 = client(&d2).await;
    for d in daemons.iter().flatten() {
        signal(d, "-STOP");
    }
    let mut later = Vec::new();
    for i in 60..66 {
        later.push(
            c2.submit_proof(request(i))
                .await
                .unwrap()
                .into_inner()
                .job_id,
        );
    }
    for &job in &later {
        check_done(&common::await_job(&mut c2, job).await);
    }
    for d in daemons.iter().flatten() {
        signal(d, "-CONT");
    }
    let by_d2 = count(
        &pg,
        &format!(
            "SELECT count(*) FROM zkpipe_partitions WHERE done_by = 'd2' AND job_id >= {}",
            later[0]
        ),
    );
    assert_eq!(by_d2, (60..66).map(|i| 1 + i % 3).sum::<usize>());
    // And any daemon answers for those jobs too, and lists them in its status.
    check_done(&common::await_job(&mut clients[0], later[0]).await);
    let status = clients[1]
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(status.jobs.iter().any(|j| j.job_id == later[5]));

    // The dashboard's metrics are all in a fleet daemon's scrape.
    let scrape = http_get(&daemons[0].as_ref().unwrap().http, "/metrics");
    let dashboard = std::fs::read_to_string(
        common::fixtures().join("../../deploy/grafana/zkpipe-dashboard.json"),
    )
    .unwrap();
    let names = dashboard_metrics(&dashboard);
    assert!(
        names.len() >= 10,
        "the dashboard names {} metrics",
        names.len()
    );
    for name in &names {
        assert!(
            scrape
                .lines()
                .any(|l| !l.starts_with('#') && l.starts_with(name.as_str())),
            "dashboard metric {name} is not in a real /metrics scrape"
        );
    }

    // Each partition was recorded once, over every daemon's log (the killed run's too).
    // Only d2's first run may have recorded a partition without logging it: it was
    // frozen and killed, perhaps between a commit and its log line.
    let mut logs = d2_logs;
    logs.extend(logs_after_stop(d2));
    for d in daemons.iter_mut().filter_map(Option::take) {
        logs.extend(logs_after_stop(d));
    }
    let rec = recorded(&logs);
    for ((job, p), n) in &rec {
        assert_eq!(*n, 1, "job {job} partition {p} recorded {n} times");
    }
    let done = pg.query("SELECT job_id, idx, done_by FROM zkpipe_partitions WHERE state = 'done'");
    assert_eq!(
        done.len(),
        partitions + (60..66).map(|i| 1 + i % 3).sum::<usize>()
    );
    let mut in_store = HashSet::new();
    for row in &done {
        let f: Vec<&str> = row.split('|').collect();
        let key: (u64, usize) = (f[0].parse().unwrap(), f[1].parse().unwrap());
        assert!(
            rec.contains_key(&key) || f[2] == "d2",
            "partition {key:?}, done by {}, has no \"recorded\" line",
            f[2]
        );
        in_store.insert(key);
    }
    for key in rec.keys() {
        assert!(
            in_store.contains(key),
            "{key:?} logged as recorded, not done in the store"
        );
    }
}

/// The metric names in a Grafana dashboard's queries.
fn dashboard_metrics(json: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    let mut exprs = Vec::new();
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    match (k.as_str(), x) {
                        ("expr", serde_json::Value::String(s)) => out.push(s.clone()),
                        _ => walk(x, out),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    walk(&v, &mut exprs);
    let mut names: Vec<String> = exprs
        .iter()
        .flat_map(|e| {
            e.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| w.starts_with("zkpipe_"))
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .collect();
    names.sort();
    names.dedup();
    names
}
