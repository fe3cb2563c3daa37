//! `zkpipe loadtest`: c concurrent clients × j jobs × p partitions against a running daemon.
//! Reports seconds per proof, proofs per second, job latency percentiles, device busy
//! fraction over the run (from the daemon's lock-held time), and the daemon's peak RSS.

use super::client::{connect, duration, rpc, runtime, state_name, ServerArg};
use anyhow::{bail, Result};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zkpipe_engine::Priority;
use zkpipe_server::pb;

/// Arguments of `loadtest`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    server: ServerArg,
    /// The key id.
    key: String,
    /// The witness every partition proves, or with `--input`, the circuit inputs
    /// (snarkjs's input.json) the daemon computes every partition's witness from.
    wtns: Option<PathBuf>,
    /// Circuit inputs every partition is computed from (instead of a witness).
    #[arg(long, value_name = "input.json", conflicts_with = "wtns")]
    input: Option<PathBuf>,
    /// Concurrent clients.
    #[arg(short = 'c', long, default_value_t = 4)]
    clients: usize,
    /// Jobs per client, one after another.
    #[arg(short = 'j', long, default_value_t = 4)]
    jobs: usize,
    /// Partitions per job.
    #[arg(short = 'p', long, default_value_t = 1)]
    partitions: usize,
    /// Priority of every job.
    #[arg(long, default_value = "normal")]
    priority: Priority,
    /// Longest wait for one job.
    #[arg(long, default_value = "10m", value_parser = duration)]
    timeout: Duration,
    /// Write the daemon's waterfall of this run (Chrome-trace JSON) here (`-`: stdout).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Write the summary as JSON here (`-`: stdout, and the summary text goes to stderr).
    #[arg(long)]
    json: Option<PathBuf>,
}

/// The run's numbers.
#[derive(serde::Serialize)]
struct Summary {
    key: String,
    clients: usize,
    jobs_per_client: usize,
    partitions: usize,
    proofs: usize,
    failed_jobs: usize,
    wall_s: f64,
    seconds_per_proof: f64,
    proofs_per_second: f64,
    job_latency_ms: Percentiles,
    device_busy_fraction: Vec<(String, f64)>,
    daemon_peak_rss_bytes: Option<f64>,
}

#[derive(serde::Serialize)]
struct Percentiles {
    min: f64,
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
}

fn percentiles(mut v: Vec<f64>) -> Percentiles {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| {
        if v.is_empty() {
            0.0
        } else {
            v[((v.len() - 1) as f64 * q).round() as usize]
        }
    };
    Percentiles {
        min: at(0.0),
        p50: at(0.5),
        p90: at(0.9),
        p99: at(0.99),
        max: at(1.0),
    }
}

/// Values of a metric by its label set, from Prometheus text.
fn metric(text: &str, name: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            let labels = k.strip_prefix(name)?;
            if !(labels.is_empty() || labels.starts_with('{')) {
                return None;
            }
            Some((labels.to_string(), v.parse().ok()?))
        })
        .collect()
}

/// Runs `loadtest`.
pub fn run(a: Args) -> Result<()> {
    if a.clients == 0 || a.jobs == 0 || a.partitions == 0 {
        bail!("--clients, --jobs and --partitions must be at least 1");
    }
    // Checked before the run, not after it.
    let outputs: Vec<&Path> = [&a.trace, &a.json]
        .into_iter()
        .flatten()
        .map(PathBuf::as_path)
        .collect();
    let Some(source) = a.wtns.as_ref().or(a.input.as_ref()) else {
        bail!("give a witness, or circuit inputs with --input");
    };
    let plan = super::replace_outputs(&outputs, &[source])?;
    let w = zkpipe_formats::files::read_input(source)?;
    runtime()?.block_on(async {
        let mut c = connect(&a.server).await?;
        let metrics = |c: &mut zkpipe_server::ProverClient<_>| {
            let mut c = c.clone();
            async move {
                c.get_metrics(pb::GetMetricsRequest {})
                    .await
                    .map(|r| r.into_inner().text)
                    .map_err(rpc)
            }
        };
        let before = metric(&metrics(&mut c).await?, "zkpipe_device_busy_seconds");
        let _ = c.get_trace(pb::GetTraceRequest {}).await; // connection warm-up
        let start = Instant::now();
        let tasks: Vec<_> = (0..a.clients)
            .map(|_| {
                let mut c = c.clone();
                let (w, key, p, jobs) = (w.clone(), a.key.clone(), a.partitions, a.jobs);
                let prio = super::submit::pb_priority(a.priority) as i32;
                let timeout_ms = a.timeout.as_millis() as u64;
                tokio::spawn(async move {
                    let mut lat = Vec::new();
                    let mut failed = Vec::new();
                    for _ in 0..jobs {
                        let t0 = Instant::now();
                        let r = c
                            .prove(pb::ProveRequest {
                                submit: Some(pb::SubmitProofRequest {
                                    key_id: key.clone(),
                                    witnesses: vec![w.clone(); p],
                                    priority: prio,
                                    request_id: String::new(),
                                }),
                                timeout_ms,
                            })
                            .await;
                        match r {
                            Ok(r) if r.get_ref().state == pb::JobState::Done as i32 => {
                                lat.push(t0.elapsed().as_secs_f64() * 1e3)
                            }
                            Ok(r) => failed.push(format!(
                                "job {} {}: {}",
                                r.get_ref().job_id,
                                state_name(r.get_ref().state),
                                r.get_ref().error
                            )),
                            Err(s) => failed.push(format!("{:?}: {}", s.code(), s.message())),
                        }
                    }
                    (lat, failed)
                })
            })
            .collect();
        let mut lat = Vec::new();
        let mut failed = Vec::new();
        for t in tasks {
            let (l, f) = t.await?;
            lat.extend(l);
            failed.extend(f);
        }
        let wall = start.elapsed().as_secs_f64();
        let text = metrics(&mut c).await?;
        let after = metric(&text, "zkpipe_device_busy_seconds");
        let busy = after
            .iter()
            .map(|(labels, v)| {
                let b = before.iter().find(|(l, _)| l == labels).map_or(0.0, |x| x.1);
                (labels.clone(), ((v - b) / wall).clamp(0.0, 1.0))
            })
            .collect();
        let proofs = lat.len() * a.partitions;
        let s = Summary {
            key: a.key.clone(),
            clients: a.clients,
            jobs_per_client: a.jobs,
            partitions: a.partitions,
            proofs,
            failed_jobs: failed.len(),
            wall_s: wall,
            seconds_per_proof: if proofs > 0 { wall / proofs as f64 } else { 0.0 },
            proofs_per_second: proofs as f64 / wall,
            job_latency_ms: percentiles(lat),
            device_busy_fraction: busy,
            daemon_peak_rss_bytes: metric(&text, "zkpipe_process_peak_rss_bytes").first().map(|x| x.1),
        };
        // With `--json -` or `--trace -` stdout carries that document: the text goes to stderr.
        let mut text = String::new();
        writeln!(
            text,
            "{} clients × {} jobs × {} partitions: {} proofs in {:.2} s, {:.4} s/proof, {:.2} proofs/s",
            s.clients, s.jobs_per_client, s.partitions, s.proofs, s.wall_s, s.seconds_per_proof, s.proofs_per_second
        )?;
        let l = &s.job_latency_ms;
        writeln!(
            text,
            "job latency ms: min {:.1} p50 {:.1} p90 {:.1} p99 {:.1} max {:.1}",
            l.min, l.p50, l.p90, l.p99, l.max
        )?;
        for (d, f) in &s.device_busy_fraction {
            writeln!(text, "device {d} busy {:.1}%", f * 100.0)?;
        }
        if let Some(r) = s.daemon_peak_rss_bytes {
            writeln!(text, "daemon peak RSS {:.1} MiB", r / (1 << 20) as f64)?;
        }
        if plan.writes_stdout() {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
        // In the order the plan was made: --trace, then --json.
        let mut contents = Vec::new();
        if a.trace.is_some() {
            let t = c.get_trace(pb::GetTraceRequest {}).await.map_err(rpc)?.into_inner();
            contents.push(t.chrome_json.into_bytes());
        }
        if a.json.is_some() {
            let mut j = serde_json::to_vec_pretty(&s)?;
            j.push(b'\n');
            contents.push(j);
        }
        let contents: Vec<&[u8]> = contents.iter().map(Vec::as_slice).collect();
        plan.write(&contents)?;
        if !failed.is_empty() {
            bail!("{} job(s) did not complete; first: {}", failed.len(), failed[0]);
        }
        Ok(())
    })
}
