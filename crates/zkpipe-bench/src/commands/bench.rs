//! `zkpipe-bench bench <zkey> <wtns>`: proves repeatedly with the key resident and reports each
//! stage as min / median / mean / max over the measured runs, plus peak RSS.
//!
//! `--threads 1,2,4` repeats the measurement per thread count; `--compare A B` runs two
//! reduce schedules interleaved (A B A B …) and gives a GO / NO-GO verdict that accounts
//! for noise; `--only reduce` measures just that stage (for schedule experiments).

use crate::instruments::peak_rss_mib;
use crate::instruments::plot::{stacked_bars, Bar};
use crate::instruments::stats::{verdict, Summary};
use anyhow::{bail, Context, Result};
use serde_json::json;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use zkpipe_cli::backend::{select, BackendChoice, Proofs, Streaming};
use zkpipe_cli::with_curve;
use zkpipe_core::reduce::{reduce, QapEvals, RowSchedule, DEFAULT_SCHEDULE};
use zkpipe_core::{
    prove, prove_batch, BindCurve, BoundKey, CompiledKey, Curve, PointChecks, ProveOptions, Stage,
    Timings, Witness,
};
use zkpipe_formats::files::Plan;
use zkpipe_formats::wtns::Wtns;
use zkpipe_formats::zkey::ZkeyFile;

/// Which part of a proof to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Only {
    /// Every stage of a proof.
    All,
    /// Only the reduce stage.
    Reduce,
}

/// Arguments of `bench`.
#[derive(clap::Args)]
pub struct Args {
    /// Proving key.
    zkey: PathBuf,
    /// Witness.
    wtns: PathBuf,
    /// Measured runs per configuration.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Unmeasured warm-up runs per configuration.
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// Thread counts to measure, e.g. 1,2,4 (default: all cores).
    #[arg(long, value_delimiter = ',')]
    threads: Vec<usize>,
    /// Reduce schedule: static, dynamic:<rows> or stealing:<rows>.
    #[arg(long, default_value_t = DEFAULT_SCHEDULE)]
    schedule: RowSchedule,
    /// Compare reduce schedules, run interleaved round-robin: --compare BASELINE VARIANT…
    /// (each variant gets a verdict against the first).
    #[arg(long, num_args = 2.., value_names = ["BASELINE", "VARIANT"])]
    compare: Option<Vec<RowSchedule>>,
    /// Measure every stage, or only reduce.
    #[arg(long, value_enum, default_value = "all")]
    only: Only,
    /// Write the results as JSON here (`-`: stdout, and the tables go to stderr).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write an SVG chart of the per-stage medians here (`-`: stdout).
    #[arg(long)]
    plot: Option<PathBuf>,
    /// How to check the key's points: batched (default), per-point, or trusted (none).
    #[arg(long, default_value_t = PointChecks::Batched)]
    key_checks: PointChecks,
    /// Shorthand for --key-checks trusted, for keys you made yourself.
    #[arg(long, conflicts_with = "key_checks")]
    trusted_key: bool,
    /// Skip the self-check of each proof.
    #[arg(long)]
    no_verify: bool,
    /// Where the quotient stage and the MSMs run: auto (GPU if present), cpu, cuda.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendChoice,
    /// Which GPU the cuda backend uses (CUDA's device index).
    #[arg(long, default_value_t = 0)]
    gpu: usize,
    /// MSMs do the same work for every witness (as `prove --constant-work`).
    #[arg(long)]
    constant_work: bool,
    /// Proofs per run, sharing one device stage (as the daemon's batched device pass,
    /// up to the backend's batch limit): each run proves the witness this many times, and
    /// its stages are the batch's wall time (concurrent proofs' spans counted once).
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// The device budget (as `prove --device-limit`): a key larger than it streams.
    #[arg(long, value_name = "SIZE", value_parser = zkpipe_server::config::parse_size)]
    device_limit: Option<u64>,
    /// The most proofs one stream of a streamed key's points serves (fewer where the
    /// budget holds fewer); 0: the default.
    #[arg(long, value_name = "N", default_value_t = 0)]
    stream_batch: usize,
    /// Pin a streamed key before the runs (the daemon's pinned tier): its chunks then
    /// cross from a page-locked copy instead of being packed on every walk. The time it
    /// takes is printed, not counted in the runs.
    #[arg(long)]
    pin: bool,
}

/// The measurements of one configuration.
struct Series {
    threads: usize,
    schedule: RowSchedule,
    /// Milliseconds per run, per stage.
    stages: BTreeMap<Stage, Vec<f64>>,
    /// Milliseconds per run of the measured part (all stages, or reduce).
    total: Vec<f64>,
}

impl Series {
    fn new(threads: usize, schedule: RowSchedule) -> Self {
        Self {
            threads,
            schedule,
            stages: BTreeMap::new(),
            total: Vec::new(),
        }
    }

    fn label(&self) -> String {
        format!("threads={} schedule={}", self.threads, self.schedule)
    }

    /// Records one run; `batched`: `t` holds several proofs' spans, so each stage counts
    /// the wall time its spans cover rather than their sum.
    fn record(&mut self, t: &Timings, batched: bool) {
        for stage in Stage::ALL {
            if t.spans.iter().any(|s| s.stage == stage) {
                let d = if batched {
                    t.wall_of(&[stage])
                } else {
                    t.total(stage)
                };
                let ms = d.as_secs_f64() * 1e3;
                self.stages.entry(stage).or_default().push(ms);
            }
        }
        // Wall time: stages that overlapped (the CPU backend's MSMs) count once.
        self.total.push(t.wall().as_secs_f64() * 1e3);
    }
}

/// Runs `bench`.
pub fn run(a: Args) -> Result<()> {
    if a.runs == 0 {
        bail!("--runs must be at least 1");
    }
    if a.batch == 0 {
        bail!("--batch must be at least 1");
    }
    if a.batch > 1 && (a.only != Only::All || a.compare.is_some()) {
        bail!("--batch measures whole proofs: it does not combine with --only or --compare");
    }
    if a.threads.contains(&0) {
        bail!("--threads values must be at least 1");
    }
    // Checked before the work, not after minutes of measuring.
    let outputs: Vec<&Path> = [&a.json, &a.plot]
        .into_iter()
        .flatten()
        .map(PathBuf::as_path)
        .collect();
    let plan = zkpipe_cli::replace_outputs(&outputs, &[&a.zkey, &a.wtns])?;
    let zkey = ZkeyFile::open(&a.zkey)?;
    with_curve!(zkey.header.curve, E => bench_with::<E>(&a, &zkey, plan))
}

fn bench_with<E: BindCurve>(a: &Args, zkey: &ZkeyFile, plan: Plan) -> Result<()> {
    let checks = if a.trusted_key {
        PointChecks::Trusted
    } else {
        a.key_checks
    };
    let start = Instant::now();
    let key = Arc::new(CompiledKey::<E>::compile(zkey, checks)?);
    let load_cold = start.elapsed().as_secs_f64() * 1e3;
    // Proved many times, as by the daemon: assembly with the fixed-base tables.
    let start = Instant::now();
    key.prepare_resident();
    eprintln!(
        "blinding tables: {:.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    let start = Instant::now();
    drop(CompiledKey::<E>::compile(zkey, checks)?);
    let load_hot = start.elapsed().as_secs_f64() * 1e3;
    let wtns = Wtns::read(&a.wtns)?;
    let witness = Witness::check_for(&wtns, &key).with_context(|| a.wtns.display().to_string())?;
    let start = Instant::now();
    let bind = zkpipe_core::BindOptions {
        constant_work: a.constant_work,
    };
    let backend = select(
        a.backend,
        Arc::clone(&key),
        a.gpu,
        Proofs::Many,
        &bind,
        Streaming {
            device_limit: a.device_limit,
            batch: a.stream_batch,
        },
    )?;
    let upload = start.elapsed().as_secs_f64() * 1e3;
    eprintln!(
        "backend: {}{}",
        backend.name(),
        if backend.name() == "cuda" {
            format!(" (key upload {upload:.1} ms)")
        } else {
            format!(
                " (MSM additions: {})",
                zkpipe_core::msm::pippenger::cpu_adder(
                    zkpipe_cli::backend::DeviceOptions::from_process(Default::default())
                        .is_ok_and(|o| o.cpu.ifma)
                )
            )
        }
    );
    let residency = backend.residency();
    eprintln!(
        "residency: {}",
        residency.map_or_else(|e| e.to_string(), |r| r.to_string())
    );
    if a.pin {
        let (start, bytes) = (Instant::now(), backend.pinnable_bytes());
        backend.pin()?;
        eprintln!(
            "pinned: {:.1} MiB in {:.1} ms{}",
            bytes as f64 / (1u64 << 20) as f64,
            start.elapsed().as_secs_f64() * 1e3,
            if bytes == 0 { " (nothing streams)" } else { "" }
        );
    }
    let backend = backend.as_ref();

    let thread_counts = if a.threads.is_empty() {
        vec![rayon::current_num_threads()]
    } else {
        a.threads.clone()
    };
    let mut series = Vec::new();
    let mut comparisons = Vec::new();
    for &threads in &thread_counts {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()?;
        pool.install(|| -> Result<()> {
            match &a.compare {
                Some(schedules) => {
                    let mut s: Vec<Series> =
                        schedules.iter().map(|&x| Series::new(threads, x)).collect();
                    for i in 0..a.warmup + a.runs {
                        for s in s.iter_mut() {
                            let t = measure_once(a, &key, backend, &witness, s.schedule)?;
                            if i >= a.warmup {
                                s.record(&t, a.batch > 1);
                            }
                        }
                    }
                    for v in &s[1..] {
                        comparisons.push(Comparison {
                            threads,
                            baseline: s[0].schedule,
                            variant: v.schedule,
                            verdict: verdict(&s[0].total, &v.total),
                            baseline_ms: s[0].total.clone(),
                            variant_ms: v.total.clone(),
                        });
                    }
                    series.extend(s);
                }
                None => {
                    let mut s = Series::new(threads, a.schedule);
                    for i in 0..a.warmup + a.runs {
                        let t = measure_once(a, &key, backend, &witness, a.schedule)?;
                        if i >= a.warmup {
                            s.record(&t, a.batch > 1);
                        }
                    }
                    series.push(s);
                }
            }
            Ok(())
        })?;
    }
    let rss = peak_rss_mib();
    report(
        a,
        &key,
        backend.name(),
        load_cold,
        load_hot,
        &series,
        &comparisons,
        rss,
        plan,
    )
}

fn measure_once<E: Curve>(
    a: &Args,
    key: &CompiledKey<E>,
    backend: &dyn BoundKey<E>,
    w: &Witness<E::ScalarField>,
    schedule: RowSchedule,
) -> Result<Timings> {
    let mut t = Timings::default();
    match a.only {
        Only::Reduce => {
            let mut evals = QapEvals::zeroed(key.domain_size());
            t.time(Stage::Reduce, || {
                reduce(&key.a, &key.b, &w.values, &mut evals, schedule)
            });
        }
        Only::All => {
            let opts = ProveOptions {
                self_check: !a.no_verify,
                schedule,
            };
            if a.batch == 1 {
                prove(backend, w, &opts, &mut rand::rngs::OsRng, &mut t)?;
            } else {
                let witnesses = vec![w; a.batch];
                let mut each = vec![Timings::default(); a.batch];
                let proofs = prove_batch(
                    backend,
                    &witnesses,
                    &opts,
                    &mut rand::rngs::OsRng,
                    &mut each,
                );
                for p in proofs {
                    p?;
                }
                t.spans = each.into_iter().flat_map(|t| t.spans).collect();
            }
        }
    }
    Ok(t)
}

/// One variant measured against the baseline at one thread count.
struct Comparison {
    threads: usize,
    baseline: RowSchedule,
    variant: RowSchedule,
    verdict: crate::instruments::stats::Verdict,
    baseline_ms: Vec<f64>,
    variant_ms: Vec<f64>,
}

#[allow(clippy::too_many_arguments)]
fn report<E: Curve>(
    a: &Args,
    key: &CompiledKey<E>,
    backend: &str,
    load_cold: f64,
    load_hot: f64,
    series: &[Series],
    comparisons: &[Comparison],
    rss: Option<f64>,
    plan: Plan,
) -> Result<()> {
    // With `--json -` the JSON owns stdout: the tables go to stderr.
    let mut out: Box<dyn Write> = if plan.writes_stdout() {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    let measured = match a.only {
        Only::All => "prove",
        Only::Reduce => "reduce",
    };
    writeln!(
        out,
        "# zkpipe bench: {} ({}, nVars {}, domain 2^{}, backend {backend})",
        a.zkey.display(),
        E::ID,
        key.n_vars,
        key.domain_size().trailing_zeros()
    )?;
    writeln!(out)?;
    writeln!(out, "key load: cold {load_cold:.1} ms, hot (page cache warm) {load_hot:.1} ms; {} runs after {} warm-up; peak RSS {}", a.runs, a.warmup, rss.map_or("n/a".into(), |r| format!("{r:.1} MiB")))?;
    for s in series {
        writeln!(out)?;
        writeln!(out, "## {}", s.label())?;
        writeln!(out)?;
        writeln!(out, "| stage | min ms | median ms | mean ms | max ms |")?;
        writeln!(out, "|---|---:|---:|---:|---:|")?;
        for (stage, xs) in &s.stages {
            let m = Summary::of(xs);
            writeln!(
                out,
                "| {} | {:.2} | {:.2} | {:.2} | {:.2} |",
                stage.name(),
                m.min,
                m.median,
                m.mean,
                m.max
            )?;
        }
        let m = Summary::of(&s.total);
        writeln!(
            out,
            "| **{measured} total** | {:.2} | {:.2} | {:.2} | {:.2} |",
            m.min, m.median, m.mean, m.max
        )?;
        if a.batch > 1 {
            let k = a.batch as f64;
            writeln!(
                out,
                "| per proof (total / {}) | {:.3} | {:.3} | {:.3} | {:.3} |",
                a.batch,
                m.min / k,
                m.median / k,
                m.mean / k,
                m.max / k
            )?;
            writeln!(out)?;
            writeln!(
                out,
                "{} proofs per run in one device stage: {:.0} proofs/s at the median",
                a.batch,
                k / m.median * 1e3
            )?;
        }
    }
    for c in comparisons {
        let v = &c.verdict;
        writeln!(out)?;
        writeln!(
            out,
            "## compare at threads={}: {} (baseline) vs {} (variant), {measured} time",
            c.threads, c.baseline, c.variant
        )?;
        writeln!(out)?;
        writeln!(
            out,
            "| pair | baseline ms | variant ms | variant/baseline |"
        )?;
        writeln!(out, "|---:|---:|---:|---:|")?;
        for (i, (x, y)) in c.baseline_ms.iter().zip(&c.variant_ms).enumerate() {
            writeln!(out, "| {} | {x:.2} | {y:.2} | {:.3} |", i + 1, y / x)?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "**{}** (ratio of medians {:.3}): {}",
            if v.go { "GO" } else { "NO-GO" },
            v.ratio,
            v.reason
        )?;
    }
    if !comparisons.is_empty() {
        writeln!(out)?;
        writeln!(out, "## summary: median {measured} ms per schedule (GO = beats the baseline by more than its spread)")?;
        writeln!(out)?;
        writeln!(
            out,
            "| threads | schedule | min | median | max | vs baseline | verdict |"
        )?;
        writeln!(out, "|---:|---|---:|---:|---:|---:|---|")?;
        for s in series {
            let m = Summary::of(&s.total);
            let c = comparisons
                .iter()
                .find(|c| c.threads == s.threads && c.variant == s.schedule);
            let (ratio, go) = match c {
                Some(c) => (
                    format!("{:.3}", c.verdict.ratio),
                    if c.verdict.go { "GO" } else { "NO-GO" },
                ),
                None => ("1 (baseline)".into(), ""),
            };
            writeln!(
                out,
                "| {} | {} | {:.2} | {:.2} | {:.2} | {ratio} | {go} |",
                s.threads, s.schedule, m.min, m.median, m.max
            )?;
        }
    }
    // In the order the plan was made: --json, then --plot.
    let mut contents = Vec::new();
    if a.json.is_some() {
        let doc = json!({
            "zkey": a.zkey.display().to_string(),
            "curve": E::ID.to_string(),
            "n_vars": key.n_vars,
            "domain_size": key.domain_size(),
            "backend": backend,
            "runs": a.runs,
            "warmup": a.warmup,
            "batch": a.batch,
            "measured": measured,
            "load_key_cold_ms": load_cold,
            "load_key_hot_ms": load_hot,
            "peak_rss_mib": rss,
            "series": series.iter().map(|s| json!({
                "threads": s.threads,
                "schedule": s.schedule.to_string(),
                "stages": s.stages.iter().map(|(k, v)| (k.name().to_string(), json!({"summary": Summary::of(v).to_json(), "runs_ms": v}))).collect::<serde_json::Map<_, _>>(),
                "total": {"summary": Summary::of(&s.total).to_json(), "runs_ms": s.total},
            })).collect::<Vec<_>>(),
            "comparisons": comparisons.iter().map(|c| json!({
                "threads": c.threads, "baseline": c.baseline.to_string(), "variant": c.variant.to_string(),
                "go": c.verdict.go, "ratio_of_medians": c.verdict.ratio, "reason": c.verdict.reason,
                "baseline_ms": c.baseline_ms, "variant_ms": c.variant_ms,
            })).collect::<Vec<_>>(),
        });
        contents.push(zkpipe_formats::json::to_json_bytes(&doc));
    }
    if a.plot.is_some() {
        let bars: Vec<Bar> = series
            .iter()
            .map(|s| Bar {
                label: s.label(),
                segments: s
                    .stages
                    .iter()
                    .map(|(k, v)| (k.name().to_string(), Summary::of(v).median))
                    .collect(),
            })
            .collect();
        let title = format!(
            "zkpipe bench: {} ({}), median ms per stage",
            a.zkey.display(),
            E::ID
        );
        contents.push(stacked_bars(&title, &bars).into_bytes());
    }
    let contents: Vec<&[u8]> = contents.iter().map(Vec::as_slice).collect();
    plan.write(&contents)?;
    Ok(())
}
