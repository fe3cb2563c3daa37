//! `zkpipe-bench sweep KEY (WITNESS | --input input.json) -c 1,4,8,16 --variant 'A: …' --variant
//! 'B: …' --out DIR`: a concurrency sweep, with daemon configurations compared A/B in
//! interleaved cells.
//!
//! It starts one daemon per variant (`zkpipe serve --set section.key=value` for each of the
//! variant's settings, loopback ports, a fresh state folder, its log in
//! `DIR/<variant>.serve.log`), all at once; preloads the key and runs one unmeasured job on
//! each; then runs the cells (`loadtest`'s load, c clients × j jobs × p partitions) round by
//! round, client count by client count, every variant in turn, starting from a different
//! one each time. Each cell records throughput, latency, device utilisation, the
//! submissions its clients sent again after a "retry later" refusal (`retries`), the
//! daemon's waterfall of the cell's jobs (stage medians and their inflation over the
//! smallest c, device gaps) and kernel counters. The daemons are stopped (SIGTERM) at the
//! end, on error too.
//!
//! `--gpus 1,2,4` makes each variant one daemon per GPU count, named `NAME-gN`, that sees
//! the first N GPUs (`CUDA_VISIBLE_DEVICES`), so that the cells compare GPU counts
//! interleaved like any variants.

mod daemon;
mod report;
mod variant;

use super::loadtest::{run_load, wire_witness, Connections, Endpoint, Load, LoadRun, Stream};
use crate::instruments::kernel;
use crate::instruments::waterfall::{analyse, filter_jobs};
use anyhow::{anyhow, bail, Context, Result};
use clap::ValueEnum;
use daemon::{Daemon, ServeCommand};
use report::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use variant::{parse_concurrency, schedule, Concurrency, Variant};
use zkpipe_cli::backend::BackendChoice;
use zkpipe_cli::client::{connect, duration, rpc, runtime, Client, ServerArg};
use zkpipe_engine::Priority;
use zkpipe_server::pb;

/// Arguments of `sweep`.
#[derive(clap::Args)]
#[command(after_help = "\
Each variant is a daemon: `zkpipe serve --config FILE --backend B` (the zkpipe binary beside \
this one, or --zkpipe FILE) plus `--set \
section.key=value` for each of its settings, on loopback ports chosen by the OS, with a \
fresh state folder; its log goes to DIR/<variant>.serve.log. Without --variant there is one \
variant, \"default\", with no settings. A setting of the `env` section is an environment \
variable of that daemon instead (`env.ZKPIPE_CUDA_HOST_REDUCE=1`, \
`env.CUDA_VISIBLE_DEVICES=0`), for switches only the environment sets. Before its first \
cell each daemon preloads the key and proves one unmeasured job.

Cells run interleaved: for each round, for each c (ascending), every variant, starting from \
a different variant each time (rotated by round + the index of c).

Per cell: proofs, s/proof, proofs/s, average job latency, the submissions sent again after \
a \"retry later\" refusal (retries), average device time per partition, device utilisation \
(the daemon's zkpipe_device_busy_seconds over the cell's wall time), from the daemon's \
waterfall of the cell's jobs the median of each partition span and its inflation over the \
same variant at the smallest c (same round), the device's idle gaps \
(between the union of device spans), and the daemon's kernel counters (Linux, best effort: \
TLB shootdowns machine-wide, context switches, page faults, CPU seconds in all and by thread \
group, peak RSS over the cell).

Writes DIR/sweep.json (every cell, and min/median/max over rounds), \
DIR/cells/<variant>-c<C>-r<R>.trace.json (each cell's waterfall, for ui.perfetto.dev), \
DIR/cells/<variant>-c<C>-r<R>.json (each cell's record as it ends, so that a sweep cut short \
keeps the cells it finished; inflation is in sweep.json only) and \
DIR/sweep.svg; refuses a DIR that has a sweep.json already.

The daemons' gRPC calls carry $ZKPIPE_TOKEN if set (a config with a token file needs it); \
a config with TLS is not supported.")]
pub struct Args {
    /// The configuration file every daemon starts from (see zkpipe.example.toml).
    #[arg(long, env = "ZKPIPE_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    /// Where the daemons' device stage runs: auto (GPU 0 if there is one), cpu, cuda.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendChoice,
    /// The key id (file stem of a .zkey in the daemons' key directory).
    key: String,
    /// The witness every partition proves, or with `--input`, the circuit inputs.
    wtns: Option<PathBuf>,
    /// Circuit inputs every partition is computed from (instead of a witness).
    #[arg(long, value_name = "input.json", conflicts_with = "wtns")]
    input: Option<PathBuf>,
    /// Concurrent clients of each cell, a comma-separated list (run ascending).
    #[arg(short = 'c', long = "clients", value_name = "LIST", default_value = "1,4,8,16",
          value_parser = parse_concurrency)]
    clients: Concurrency,
    /// Jobs per client, one after another.
    #[arg(short = 'j', long, default_value_t = 3)]
    jobs: usize,
    /// Partitions per job.
    #[arg(short = 'p', long, default_value_t = 10)]
    partitions: usize,
    /// Rounds: every cell is measured this many times.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// A daemon configuration: 'NAME: section.key=value; section.key=value' (repeat for
    /// A/B, at most 4; 'NAME:' has no settings; 'env.VAR=value' sets the daemon's
    /// environment).
    #[arg(long = "variant", value_name = "NAME: KEY=VALUE; ...")]
    variants: Vec<Variant>,
    /// GPU counts to compare, a comma-separated list: each variant runs once per count,
    /// as `NAME-gN`, its daemon seeing the first N GPUs (of $CUDA_VISIBLE_DEVICES if set,
    /// else GPUs 0..N) through CUDA_VISIBLE_DEVICES; at most 8 daemons in all.
    #[arg(long, value_name = "LIST", value_parser = parse_concurrency)]
    gpus: Option<Concurrency>,
    /// Each client's connection to its daemon: its own (as separate users have), or one
    /// shared by all.
    #[arg(long, value_enum, default_value_t = Connections::PerClient)]
    connections: Connections,
    /// How each job travels: auto streams jobs above 4 MiB of witnesses in chunks, always
    /// streams every job, never sends each as one message (see loadtest --stream).
    #[arg(long, value_enum, default_value_t = Stream::Auto)]
    stream: Stream,
    /// Send the witness as it is. By default one that packs to half its size or less
    /// travels packed, as `zkpipe submit` sends it (a circom witness of mostly 0s and 1s
    /// ~20 times smaller); the daemon reads both.
    #[arg(long)]
    no_pack: bool,
    /// Longest time for one job, from its first submission (and for the key's preload).
    #[arg(long, default_value = "10m", value_parser = duration)]
    timeout: Duration,
    /// Fail a job whose submission a daemon refuses with "retry later"
    /// (RESOURCE_EXHAUSTED, UNAVAILABLE) at once, and with it the sweep; by default it is
    /// sent again with a backoff until --timeout runs out (see loadtest --no-retry), and
    /// each cell records its `retries`.
    #[arg(long)]
    no_retry: bool,
    /// The output folder (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// The zkpipe binary the daemons run (default: the `zkpipe` in this binary's folder,
    /// where cargo and scripts/build-cuda.sh put both).
    #[arg(long, value_name = "FILE")]
    zkpipe: Option<PathBuf>,
}

/// The output folder.
struct OutDir {
    dir: PathBuf,
}

impl OutDir {
    /// Creates `dir` and `dir/cells` as needed; refuses a folder with a sweep.json.
    fn prepare(dir: &Path) -> Result<Self> {
        let json = dir.join("sweep.json");
        if json.exists() {
            bail!(
                "{}: already exists; a sweep does not overwrite another (choose another --out)",
                json.display()
            );
        }
        std::fs::create_dir_all(dir.join("cells")).with_context(|| format!("{}", dir.display()))?;
        Ok(Self { dir: dir.into() })
    }

    /// A path in the folder.
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Writes `name` (relative to the folder).
    fn write(&self, name: &str, contents: &[u8]) -> Result<()> {
        let p = self.path(name);
        std::fs::write(&p, contents).with_context(|| format!("{}", p.display()))
    }

    /// Writes sweep.json, refusing one that appeared meanwhile.
    fn write_new(&self, name: &str, contents: &[u8]) -> Result<()> {
        let p = self.path(name);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&p)
            .with_context(|| format!("{}", p.display()))?;
        f.write_all(contents)
            .with_context(|| format!("{}", p.display()))
    }
}

/// What every cell shares.
struct Plan {
    key: String,
    witness: Arc<[u8]>,
    clients: Vec<usize>,
    jobs: usize,
    partitions: usize,
    rounds: usize,
    timeout: Duration,
    retry: bool,
    connections: Connections,
    stream: Stream,
}

impl Plan {
    /// The load of one cell with `clients` clients.
    fn load(&self, clients: usize, jobs: usize) -> Load {
        Load {
            key: self.key.clone(),
            witness: Arc::clone(&self.witness),
            clients,
            jobs,
            partitions: self.partitions,
            priority: Priority::Normal,
            timeout: self.timeout,
            retry: self.retry,
            own_connections: self.connections == Connections::PerClient,
            stream: self.stream,
        }
    }
}

/// A daemon and a connection to it.
struct Target {
    daemon: Daemon,
    /// Its address and the connection, as load runs take them.
    endpoint: [Endpoint; 1],
}

impl Target {
    fn client(&mut self) -> &mut Client {
        &mut self.endpoint[0].client
    }
}

/// Runs `sweep`.
pub fn run(a: Args) -> Result<()> {
    if a.jobs == 0 || a.partitions == 0 || a.rounds == 0 {
        bail!("-j, -p and --rounds must be at least 1");
    }
    let mut variants =
        variant::variants(a.variants.clone()).map_err(|e| anyhow!("--variant: {e}"))?;
    if let Some(gpus) = &a.gpus {
        let visible = std::env::var(variant::VISIBLE_GPUS).ok();
        variants = variant::by_gpus(variants, &gpus.0, visible.as_deref())
            .map_err(|e| anyhow!("--gpus: {e}"))?;
    }
    let Some(source) = a.wtns.as_ref().or(a.input.as_ref()) else {
        bail!("give a witness, or circuit inputs with --input");
    };
    let plan = Plan {
        key: a.key.clone(),
        witness: wire_witness(source, a.no_pack)?,
        clients: a.clients.0.clone(),
        jobs: a.jobs,
        partitions: a.partitions,
        rounds: a.rounds,
        timeout: a.timeout,
        retry: !a.no_retry,
        connections: a.connections,
        stream: a.stream,
    };
    let out = OutDir::prepare(&a.out)?;
    let serve = ServeCommand {
        exe: match &a.zkpipe {
            Some(exe) => exe.clone(),
            None => daemon::sibling_zkpipe()?,
        },
        config: a.config.clone(),
        backend: a
            .backend
            .to_possible_value()
            .map_or("auto".into(), |v| v.get_name().to_string()),
    };
    let rt = runtime()?;
    let mut daemons = Vec::new();
    let measured = rt.block_on(measure(&serve, &variants, &plan, &out, &mut daemons));
    // Stopped on success and on error alike; a failure to stop is reported after the
    // measurement's own error.
    let mut stopped = Ok(());
    for t in &mut daemons {
        if let Err(e) = t.daemon.stop() {
            stopped = stopped.and(Err(e));
        }
    }
    let mut cells = measured?;
    stopped?;
    report::fill_inflation(&mut cells);
    write_results(&a, &variants, &plan, &out, &cells)
}

/// Starts the daemons (into `targets`, so that the caller stops them whatever happens),
/// warms each up, and runs every cell; returns the cells in the order they ran.
async fn measure(
    serve: &ServeCommand,
    variants: &[Variant],
    plan: &Plan,
    out: &OutDir,
    targets: &mut Vec<Target>,
) -> Result<Vec<Cell>> {
    for v in variants {
        let log = out.path(&format!("{}.serve.log", v.name));
        let daemon = Daemon::start(serve, &v.name, &v.config_settings(), &v.environment(), &log)?;
        let server = ServerArg {
            server: daemon.grpc.clone(),
            token: std::env::var("ZKPIPE_TOKEN").ok().filter(|t| !t.is_empty()),
            token_file: None,
            ca_cert: None,
        };
        let client = connect(&server)
            .await
            .with_context(|| format!("variant {}", v.name))?;
        targets.push(Target {
            daemon,
            endpoint: [Endpoint { server, client }],
        });
    }
    for t in targets.iter_mut() {
        warm_up(t, plan).await?;
    }
    let names: Vec<String> = variants.iter().map(|v| v.name.clone()).collect();
    let width = report::width_for(names.iter().map(String::as_str));
    println!("{}", report::header(width));
    let mut cells = Vec::new();
    for (r, ci, vi) in schedule(plan.rounds, plan.clients.len(), variants.len()) {
        let t = &mut targets[vi];
        let cell = run_cell(t, plan, out, plan.clients[ci], r + 1)
            .await
            .map_err(|e| match t.daemon.exit_note() {
                Some(note) => e.context(note),
                None => e,
            })?;
        println!("{}", report::row(&cell, width));
        let _ = std::io::stdout().flush();
        cells.push(cell);
    }
    Ok(cells)
}

/// Preloads the key on a daemon and proves one unmeasured job of p partitions.
async fn warm_up(t: &mut Target, plan: &Plan) -> Result<()> {
    let v = t.daemon.variant.clone();
    let fail = |what: &str| format!("variant {v}: {what}");
    t.client()
        .preload_key(pb::KeyRequest {
            key_id: plan.key.clone(),
            timeout_ms: plan.timeout.as_millis() as u64,
        })
        .await
        .map_err(rpc)
        .with_context(|| fail(&format!("preloading key {}", plan.key)))?;
    let run = run_load(&t.endpoint, &plan.load(1, 1))
        .await
        .with_context(|| fail("the warm-up job"))?;
    if let Some(f) = run.failed.first() {
        bail!("{}: {f}", fail("the warm-up job failed"));
    }
    Ok(())
}

/// How many times a cell's trace is fetched, 20 ms apart, before its missing partitions
/// are taken to be past the daemon's trace capacity.
const TRACE_ATTEMPTS: usize = 50;

/// Runs one cell on a daemon and measures it; a failed job is an error.
async fn run_cell(
    t: &mut Target,
    plan: &Plan,
    out: &OutDir,
    clients: usize,
    round: usize,
) -> Result<Cell> {
    let v = t.daemon.variant.clone();
    let where_ = format!("variant {v}, c={clients}, round {round}");
    let pid = t.daemon.pid();
    let rss_reset = kernel::reset_peak_rss(pid);
    let before = kernel::snapshot(pid);
    let client_before = kernel::process_cpu_s(std::process::id());
    let run = run_load(&t.endpoint, &plan.load(clients, plan.jobs))
        .await
        .context(where_.clone())?;
    let client_cpu_s = kernel::process_cpu_s(std::process::id())
        .zip(client_before)
        .map(|(a, b)| a - b);
    let after = kernel::snapshot(pid);
    let counters = kernel::counters(&before, &after, kernel::peak_rss_bytes(pid), rss_reset);
    if let Some(f) = run.failed.first() {
        bail!(
            "{where_}: {} job(s) did not complete; first: {f}",
            run.failed.len()
        );
    }
    let jobs: BTreeSet<u64> = run.jobs.iter().map(|j| j.job_id).collect();
    // A partition enters the trace just after its job is seen done (its `record` span
    // times the store write that makes it so), so the last ones may be missing for a
    // moment: ask again for up to ~1 s until every partition of the cell is there.
    let mut attempt = 0;
    let (trace, waterfall) = loop {
        let trace = t
            .client()
            .get_trace(pb::GetTraceRequest {})
            .await
            .map_err(rpc)
            .with_context(|| format!("{where_}: the daemon's trace"))?
            .into_inner()
            .chrome_json;
        let trace: serde_json::Value = serde_json::from_str(&trace)
            .with_context(|| format!("{where_}: the daemon's trace"))?;
        let waterfall = analyse(&trace, &jobs).with_context(|| where_.clone())?;
        attempt += 1;
        if waterfall.trace_partitions >= run.summary.proofs || attempt == TRACE_ATTEMPTS {
            break (trace, waterfall);
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    if waterfall.trace_partitions < run.summary.proofs {
        eprintln!(
            "zkpipe: note: {where_}: the daemon's trace holds {} of the cell's {} partitions \
             (raise pipeline.trace_capacity)",
            waterfall.trace_partitions, run.summary.proofs
        );
    }
    let trace_name = format!("cells/{}.trace.json", Cell::stem(&v, clients, round));
    out.write(
        &trace_name,
        filter_jobs(&trace, &jobs).to_string().as_bytes(),
    )?;
    let mut cell = cell(&v, round, run, waterfall, counters, trace_name);
    cell.client_cpu_s = client_cpu_s;
    // The record as the cell ends (its inflation, which needs the smallest c's cell, is in
    // sweep.json only), so that a sweep cut short keeps every cell it finished.
    out.write(
        &format!("cells/{}.json", Cell::stem(&v, clients, round)),
        &serde_json::to_vec_pretty(&cell)?,
    )?;
    Ok(cell)
}

/// A cell's record from its load run and measurements.
fn cell(
    variant: &str,
    round: usize,
    run: LoadRun,
    waterfall: crate::instruments::waterfall::Waterfall,
    kernel: kernel::Counters,
    trace: String,
) -> Cell {
    let s = run.summary;
    let device_ms: Vec<f64> = run.jobs.iter().flat_map(|j| j.device_ms.clone()).collect();
    let mean = |xs: &[f64]| {
        if xs.is_empty() {
            0.0
        } else {
            xs.iter().sum::<f64>() / xs.len() as f64
        }
    };
    let latency: Vec<f64> = run.jobs.iter().map(|j| j.latency_s).collect();
    let busy: Vec<f64> = s.device_busy_fraction.iter().map(|x| x.1).collect();
    let latency_parts_ms = s
        .server_timing_ms
        .iter()
        .map(|(part, p)| (part.clone(), p.p50))
        .collect();
    let mut job_ids: Vec<u64> = run.jobs.iter().map(|j| j.job_id).collect();
    job_ids.sort_unstable();
    Cell {
        variant: variant.into(),
        round,
        clients: s.clients,
        jobs_per_client: s.jobs_per_client,
        partitions: s.partitions,
        proofs: s.proofs,
        wall_s: s.wall_s,
        seconds_per_proof: s.seconds_per_proof,
        proofs_per_second: s.proofs_per_second,
        avg_job_latency_s: mean(&latency),
        avg_device_ms_per_partition: mean(&device_ms),
        device_utilisation: mean(&busy),
        device_busy_fraction: s
            .device_busy_fraction
            .into_iter()
            .collect::<BTreeMap<_, _>>(),
        waterfall,
        stage_inflation: BTreeMap::new(),
        kernel,
        mean_device_batch: s.mean_device_batch,
        throttle: s.throttle,
        client_cpu_s: None,
        latency_parts_ms,
        trace,
        job_ids,
        retries: s.retries,
    }
}

/// Prints the tables and writes sweep.svg and sweep.json.
fn write_results(
    a: &Args,
    variants: &[Variant],
    plan: &Plan,
    out: &OutDir,
    cells: &[Cell],
) -> Result<()> {
    let names: Vec<String> = variants.iter().map(|v| v.name.clone()).collect();
    let rows = report::summarize(cells, &names, &plan.clients);
    println!();
    print!("{}", report::stage_table(cells));
    println!();
    print!("{}", report::kernel_table(cells));
    println!();
    print!("{}", report::request_table(cells));
    println!();
    let throttle = report::throttle_table(cells);
    if !throttle.is_empty() {
        print!("{throttle}");
        println!();
    }
    print!("{}", report::summary_table(&rows));
    let title = format!(
        "zkpipe sweep: {}, j={} p={}, {} round(s)",
        plan.key, plan.jobs, plan.partitions, plan.rounds
    );
    out.write(
        "sweep.svg",
        report::chart(&title, &rows, &names, &plan.clients).as_bytes(),
    )?;
    let json = serde_json::json!({
        "key": plan.key,
        "backend": a.backend.to_possible_value().map(|v| v.get_name().to_string()),
        "config": a.config,
        "clients": plan.clients,
        "jobs_per_client": plan.jobs,
        "partitions": plan.partitions,
        "rounds": plan.rounds,
        "gpus": a.gpus.as_ref().map(|g| &g.0),
        "connections": format!("{:?}", plan.connections),
        "stream": plan.stream.to_possible_value().map(|v| v.get_name().to_string()),
        "variants": variants.iter().map(|v| serde_json::json!({
            "name": v.name,
            "settings": v.settings.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "log": format!("{}.serve.log", v.name),
        })).collect::<Vec<_>>(),
        "cells": cells,
        "summary": rows,
    });
    let mut text = serde_json::to_vec_pretty(&json)?;
    text.push(b'\n');
    out.write_new("sweep.json", &text)?;
    println!(
        "\nwrote {} (sweep.json, sweep.svg, {} cell traces, daemon logs)",
        out.dir.display(),
        cells.len()
    );
    Ok(())
}
