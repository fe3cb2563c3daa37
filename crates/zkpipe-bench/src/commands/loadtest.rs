//! `zkpipe-bench loadtest`: c concurrent clients × j jobs × p partitions against one running
//! daemon or several (`--addr A --addr B` or `--addr A,B`: client i goes to address i mod n,
//! as a fleet's users spread over its daemons). Reports seconds per proof, proofs per
//! second, job latency percentiles, device busy fraction over the run (from each daemon's
//! lock-held time) and the daemons' peak RSS, in total and per address. The run itself is
//! [`run_load`], which `sweep` runs once per cell. Jobs above 4 MiB of witnesses are
//! streamed (`--stream`, as `zkpipe submit` does; [`send`]). A submission the daemon
//! refuses with "retry later" (RESOURCE_EXHAUSTED, UNAVAILABLE) is sent again after a
//! backoff until the job's `--timeout` runs out, and counted (`retries`); `--no-retry`
//! fails the job on the first refusal instead.

mod send;
mod summary;

use anyhow::{bail, Result};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zkpipe_cli::client::{connect, duration, rpc, runtime, state_name, Client, ServerArg};
use zkpipe_engine::Priority;
use zkpipe_server::pb;

pub use send::Stream;
use summary::{mean_batch, metric, percentiles, server_parts, throttle_run};
pub use summary::{AddressSummary, Summary, ThrottleRun};

/// Arguments of `loadtest`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    server: ServerArg,
    /// Daemon addresses to spread the clients over, round-robin (repeat the flag or
    /// separate them with commas; default: --server, itself a comma-separated list).
    /// Each takes --server's token and CA certificate.
    #[arg(long = "addr", value_name = "URL", value_delimiter = ',')]
    addrs: Vec<String>,
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
    /// Longest time for one job, from its first submission to its reply (refused
    /// submissions sent again included).
    #[arg(long, default_value = "10m", value_parser = duration)]
    timeout: Duration,
    /// Fail a job whose submission the daemon refuses with "retry later"
    /// (RESOURCE_EXHAUSTED: server.max_inflight_request_bytes; UNAVAILABLE:
    /// pipeline.max_pending_partitions, a daemon starting or stopping) at once. By default
    /// such a submission is sent again after 50 ms, doubling up to 2 s (less a little
    /// jitter), until --timeout runs out, and counted in `retries`; other refusals fail
    /// the job at once (a job that can never fit the daemon's memory among them, though
    /// its code is RESOURCE_EXHAUSTED too: only the refusals saying "retry later" are).
    #[arg(long)]
    no_retry: bool,
    /// Each client's connection to the daemon: its own (as separate users have), or one
    /// shared by all.
    #[arg(long, value_enum, default_value_t = Connections::PerClient)]
    connections: Connections,
    /// How each job travels: auto streams jobs above 4 MiB of witnesses in chunks
    /// (SubmitProofStream, then AwaitProof), always streams every job, never sends each
    /// as one Prove message (the daemon's server.max_request_bytes bounds it).
    #[arg(long, value_enum, default_value_t = Stream::Auto)]
    stream: Stream,
    /// Send the witness as it is. By default one that packs to half its size or less
    /// travels packed, as `zkpipe submit` sends it (a circom witness of mostly 0s and 1s
    /// ~20 times smaller); the daemon reads both.
    #[arg(long)]
    no_pack: bool,
    /// Write the daemon's waterfall of this run (Chrome-trace JSON) here (`-`: stdout;
    /// one daemon only).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Write the summary as JSON here (`-`: stdout, and the summary text goes to stderr).
    #[arg(long)]
    json: Option<PathBuf>,
}

/// What one load run sends: `clients` concurrent clients, each proving `jobs` jobs one
/// after another, each of `partitions` copies of `witness`.
#[derive(Clone)]
pub struct Load {
    /// The key id.
    pub key: String,
    /// A witness (.wtns) or circuit inputs (input.json), as the daemon takes them; one
    /// copy that every client reads.
    pub witness: Arc<[u8]>,
    /// Concurrent clients.
    pub clients: usize,
    /// Jobs per client.
    pub jobs: usize,
    /// Partitions per job.
    pub partitions: usize,
    /// Priority of every job.
    pub priority: Priority,
    /// Longest time for one job, from its first submission.
    pub timeout: Duration,
    /// Whether a submission refused with "retry later" is sent again (see [`send`]).
    pub retry: bool,
    /// Whether each client opens its own connection to its daemon, or all the clients of
    /// a daemon share the caller's connection to it.
    pub own_connections: bool,
    /// How each job travels.
    pub stream: Stream,
}

/// A daemon a load run's clients reach: its address (with the token) and the caller's
/// connection to it.
pub struct Endpoint {
    /// Its address.
    pub server: ServerArg,
    /// The caller's connection.
    pub client: Client,
}

/// How a load run's clients reach the daemon.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Connections {
    /// Each client its own connection, as separate users have.
    #[default]
    PerClient,
    /// One connection for every client (HTTP/2 streams over one TCP connection, which one
    /// task on each side drives).
    Shared,
}

/// A job that completed.
#[derive(Clone, Debug)]
pub struct JobRecord {
    /// The daemon that ran it: its index in the run's endpoints.
    pub address: usize,
    /// Its id on that daemon.
    pub job_id: u64,
    /// First submission to reply, in seconds (waits between refused submissions
    /// included).
    pub latency_s: f64,
    /// Each partition's device time (lock held), in milliseconds.
    pub device_ms: Vec<f64>,
    /// The daemon's parts of the latency, in milliseconds, in order (see
    /// [`Summary::server_timing_ms`]).
    pub server_timing: Vec<(String, f64)>,
}

/// The outcome of a load run.
pub struct LoadRun {
    /// The numbers.
    pub summary: Summary,
    /// The jobs that completed, in no particular order.
    pub jobs: Vec<JobRecord>,
    /// One line for each job that did not complete.
    pub failed: Vec<String>,
}

/// The daemon's metrics text.
async fn metrics_text(c: &Client) -> Result<String> {
    c.clone()
        .get_metrics(pb::GetMetricsRequest {})
        .await
        .map(|r| r.into_inner().text)
        .map_err(rpc)
}

/// What one client's jobs came to.
struct ClientRun {
    /// The jobs that completed.
    done: Vec<JobRecord>,
    /// A line per job that did not.
    failed: Vec<String>,
    /// Submissions sent again after a "retry later" refusal.
    retries: usize,
}

/// One client of daemon `address`: its jobs one after another.
async fn client_jobs(mut c: Client, address: usize, load: Load) -> ClientRun {
    let mut done = Vec::new();
    let mut failed = Vec::new();
    let mut retries = 0;
    for _ in 0..load.jobs {
        // From the first attempt: a job's refusals and waits are part of its latency.
        let t0 = Instant::now();
        let sent = send::prove(&mut c, &load).await;
        retries += sent.retries;
        match sent.reply {
            Ok(r) if r.result.state == pb::JobState::Done as i32 => {
                let latency_s = t0.elapsed().as_secs_f64();
                done.push(JobRecord {
                    address,
                    job_id: r.result.job_id,
                    latency_s,
                    device_ms: r
                        .result
                        .proofs
                        .iter()
                        .map(|p| p.timings.map_or(0.0, |t| t.device_ms))
                        .collect(),
                    server_timing: r.server_timing,
                });
            }
            Ok(r) => failed.push(format!(
                "job {} {}: {}",
                r.result.job_id,
                state_name(r.result.state),
                r.result.error
            )),
            Err(line) => failed.push(line),
        }
    }
    ClientRun {
        done,
        failed,
        retries,
    }
}

/// The busy seconds of each device of each daemon, labelled by address where there are
/// several daemons.
fn busy_seconds(texts: &[String], endpoints: &[Endpoint]) -> Vec<(String, f64)> {
    texts
        .iter()
        .zip(endpoints)
        .flat_map(|(text, e)| {
            metric(text, "zkpipe_device_busy_seconds")
                .into_iter()
                .map(move |(labels, v)| match endpoints.len() {
                    1 => (labels, v),
                    _ => (format!("{}{labels}", e.server.server), v),
                })
        })
        .collect()
}

/// The metrics text of every daemon, in order.
async fn all_metrics(endpoints: &[Endpoint]) -> Result<Vec<String>> {
    let mut texts = Vec::with_capacity(endpoints.len());
    for e in endpoints {
        texts.push(metrics_text(&e.client).await?);
    }
    Ok(texts)
}

/// Runs `load` against the daemons of `endpoints`, client i to daemon i mod n, with the
/// device busy fractions from their metrics before and after. Jobs that fail are counted,
/// not an error.
pub async fn run_load(endpoints: &[Endpoint], load: &Load) -> Result<LoadRun> {
    if endpoints.is_empty() {
        bail!("no daemon address to load");
    }
    let n = endpoints.len();
    // Connections are opened before the clock starts.
    let mut clients = Vec::with_capacity(load.clients);
    for i in 0..load.clients {
        let e = &endpoints[i % n];
        clients.push(if load.own_connections {
            connect(&e.server).await?
        } else {
            e.client.clone()
        });
    }
    let before_texts = all_metrics(endpoints).await?;
    let before = busy_seconds(&before_texts, endpoints);
    let start = Instant::now();
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(i, client)| tokio::spawn(client_jobs(client, i % n, load.clone())))
        .collect();
    let mut jobs = Vec::new();
    let mut failed = Vec::new();
    let mut failed_at = vec![0; n];
    let mut retries = 0;
    for (i, t) in tasks.into_iter().enumerate() {
        let ClientRun {
            done: d,
            failed: f,
            retries: r,
        } = t.await?;
        jobs.extend(d);
        retries += r;
        failed_at[i % n] += f.len();
        failed.extend(f.into_iter().map(|line| match n {
            1 => line,
            _ => format!("{}: {line}", endpoints[i % n].server.server),
        }));
    }
    let wall = start.elapsed().as_secs_f64();
    let texts = all_metrics(endpoints).await?;
    let busy = busy_seconds(&texts, endpoints)
        .into_iter()
        .map(|(labels, v)| {
            let b = before
                .iter()
                .find(|(l, _)| *l == labels)
                .map_or(0.0, |x| x.1);
            (labels, ((v - b) / wall).clamp(0.0, 1.0))
        })
        .collect();
    let proofs = jobs.len() * load.partitions;
    let per_address = endpoints
        .iter()
        .enumerate()
        .map(|(a, e)| {
            let mine: Vec<&JobRecord> = jobs.iter().filter(|j| j.address == a).collect();
            let proofs = mine.len() * load.partitions;
            AddressSummary {
                address: e.server.server.clone(),
                clients: (0..load.clients).filter(|i| i % n == a).count(),
                proofs,
                failed_jobs: failed_at[a],
                proofs_per_second: proofs as f64 / wall,
                job_latency_ms: percentiles(mine.iter().map(|j| j.latency_s * 1e3).collect()),
            }
        })
        .collect();
    let summary = Summary {
        key: load.key.clone(),
        clients: load.clients,
        jobs_per_client: load.jobs,
        partitions: load.partitions,
        proofs,
        failed_jobs: failed.len(),
        retries,
        wall_s: wall,
        seconds_per_proof: if proofs > 0 {
            wall / proofs as f64
        } else {
            0.0
        },
        proofs_per_second: proofs as f64 / wall,
        job_latency_ms: percentiles(jobs.iter().map(|j| j.latency_s * 1e3).collect()),
        server_timing_ms: server_parts(&jobs),
        device_busy_fraction: busy,
        throttle: throttle_run(&before_texts.join("\n"), &texts.join("\n")),
        // Over every daemon's passes: their histograms' sums and counts add up.
        mean_device_batch: mean_batch(&before_texts.join("\n"), &texts.join("\n")),
        daemon_peak_rss_bytes: texts
            .iter()
            .filter_map(|t| {
                metric(t, "zkpipe_process_peak_rss_bytes")
                    .first()
                    .map(|x| x.1)
            })
            .reduce(f64::max),
        per_address,
    };
    Ok(LoadRun {
        summary,
        jobs,
        failed,
    })
}

/// The witness (or circuit inputs) at `source` as every job sends it: packed where that
/// halves it unless `no_pack` ([`zkpipe_cli::client::wire_form`]). Says on stderr which.
pub fn wire_witness(source: &Path, no_pack: bool) -> Result<Arc<[u8]>> {
    let bytes = zkpipe_formats::files::read_input(source)?;
    let read = bytes.len();
    let wire = if no_pack {
        bytes
    } else {
        zkpipe_cli::client::wire_form(bytes)
    };
    if wire.len() != read {
        eprintln!(
            "witness: {} bytes a partition, packed from {read}",
            wire.len()
        );
    }
    Ok(wire.into())
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
    let servers = addresses(&a.server, &a.addrs);
    if servers.is_empty() {
        bail!("--addr: no daemon address given");
    }
    if servers.len() > 1 && a.trace.is_some() {
        bail!("--trace takes one daemon's waterfall: give one address");
    }
    let plan = zkpipe_cli::replace_outputs(&outputs, &[source])?;
    let load = Load {
        key: a.key.clone(),
        witness: wire_witness(source, a.no_pack)?,
        clients: a.clients,
        jobs: a.jobs,
        partitions: a.partitions,
        priority: a.priority,
        timeout: a.timeout,
        retry: !a.no_retry,
        own_connections: a.connections == Connections::PerClient,
        stream: a.stream,
    };
    runtime()?.block_on(async {
        let mut endpoints = Vec::with_capacity(servers.len());
        for server in servers {
            let mut client = connect(&server).await?;
            let _ = client.get_trace(pb::GetTraceRequest {}).await; // connection warm-up
            endpoints.push(Endpoint { server, client });
        }
        let LoadRun {
            summary: s, failed, ..
        } = run_load(&endpoints, &load).await?;
        // With `--json -` or `--trace -` stdout carries that document: the text goes to stderr.
        let mut text = String::new();
        writeln!(
            text,
            "{} clients × {} jobs × {} partitions: {} proofs in {:.2} s, {:.4} s/proof, {:.2} proofs/s",
            s.clients, s.jobs_per_client, s.partitions, s.proofs, s.wall_s, s.seconds_per_proof, s.proofs_per_second
        )?;
        // Submissions the daemon refused with "retry later" and that were sent again.
        let no_retry = if a.no_retry { " (--no-retry)" } else { "" };
        writeln!(text, "retried submissions: {}{no_retry}", s.retries)?;
        let l = &s.job_latency_ms;
        writeln!(
            text,
            "job latency ms: min {:.1} p50 {:.1} p90 {:.1} p99 {:.1} max {:.1}",
            l.min, l.p50, l.p90, l.p99, l.max
        )?;
        if !s.server_timing_ms.is_empty() {
            let parts: Vec<String> = s
                .server_timing_ms
                .iter()
                .map(|(k, p)| format!("{k} {:.1}/{:.1}", p.p50, p.p90))
                .collect();
            writeln!(text, "of which (p50/p90 ms): {}", parts.join(", "))?;
        }
        for (d, f) in &s.device_busy_fraction {
            writeln!(text, "device {d} busy {:.1}%", f * 100.0)?;
        }
        if let Some(b) = s.mean_device_batch {
            writeln!(text, "partitions per device pass: {b:.1} (mean)")?;
        }
        if let Some(t) = s.throttle {
            writeln!(
                text,
                "throttle: {:.0} bursts, {:.0} steps aside, {:.3} s aside",
                t.bursts, t.steps_aside, t.paused_s
            )?;
        }
        if let Some(r) = s.daemon_peak_rss_bytes {
            writeln!(text, "daemon peak RSS {:.1} MiB", r / (1 << 20) as f64)?;
        }
        if s.per_address.len() > 1 {
            for p in &s.per_address {
                writeln!(
                    text,
                    "{}: {} clients, {} proofs, {:.2} proofs/s, {} failed, job latency ms p50 {:.1} p90 {:.1}",
                    p.address, p.clients, p.proofs, p.proofs_per_second, p.failed_jobs,
                    p.job_latency_ms.p50, p.job_latency_ms.p90
                )?;
            }
        }
        if plan.writes_stdout() {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
        // In the order the plan was made: --trace, then --json.
        let mut contents = Vec::new();
        if a.trace.is_some() {
            let t = endpoints[0].client.clone().get_trace(pb::GetTraceRequest {}).await.map_err(rpc)?.into_inner();
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

/// The daemons to load: `--addr`'s list, or else `--server`'s (comma-separated), each with
/// `server`'s token and CA certificate.
fn addresses(server: &ServerArg, addrs: &[String]) -> Vec<ServerArg> {
    let list: Vec<&str> = if addrs.is_empty() {
        server.server.split(',').collect()
    } else {
        addrs.iter().map(String::as_str).collect()
    };
    list.into_iter()
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(|a| ServerArg {
            server: a.to_string(),
            ..server.clone()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(s: &str) -> ServerArg {
        ServerArg {
            server: s.into(),
            token: Some("t".into()),
            token_file: None,
            ca_cert: None,
        }
    }

    #[test]
    fn addresses_come_from_addr_or_a_server_list() {
        let names = |v: Vec<ServerArg>| v.into_iter().map(|s| s.server).collect::<Vec<_>>();
        assert_eq!(names(addresses(&server("http://a:1"), &[])), ["http://a:1"]);
        assert_eq!(
            names(addresses(&server("http://a:1, http://b:2"), &[])),
            ["http://a:1", "http://b:2"]
        );
        let given = ["http://c:3".to_string(), "http://d:4".to_string()];
        let v = addresses(&server("http://a:1"), &given);
        assert!(v.iter().all(|s| s.token.as_deref() == Some("t")));
        assert_eq!(names(v), ["http://c:3", "http://d:4"]);
        assert!(addresses(&server(" , "), &[]).is_empty());
    }
}
