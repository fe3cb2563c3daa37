//! `zkpipe-bench sweep`'s results: one [`Cell`] per (round, client count, variant), the tables
//! printed from them, the summary over rounds, and the chart.

use crate::commands::loadtest::ThrottleRun;
use crate::instruments::kernel::Counters;
use crate::instruments::plot::{line_panels, Line, Panel};
use crate::instruments::stats::Summary;
use crate::instruments::waterfall::{inflation, Waterfall};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use zkpipe_core::Stage;

/// The measurements of one cell: one variant at one client count in one round.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Cell {
    /// The variant's name.
    pub variant: String,
    /// The round, from 1.
    pub round: usize,
    /// Concurrent clients (c).
    pub clients: usize,
    /// Jobs per client (j).
    pub jobs_per_client: usize,
    /// Partitions per job (p).
    pub partitions: usize,
    /// Proofs made: c × j × p.
    pub proofs: usize,
    /// Seconds from the first submission to the last reply.
    pub wall_s: f64,
    /// wall_s / proofs.
    pub seconds_per_proof: f64,
    /// proofs / wall_s.
    pub proofs_per_second: f64,
    /// Mean job latency (Prove call to reply): the "average prove time".
    pub avg_job_latency_s: f64,
    /// Mean device time (lock held) per partition, from the proofs' timings.
    pub avg_device_ms_per_partition: f64,
    /// Mean over devices of their busy fraction over the cell.
    pub device_utilisation: f64,
    /// Each device's busy fraction, by metric labels.
    pub device_busy_fraction: BTreeMap<String, f64>,
    /// The cell's waterfall: stage medians, device gaps.
    #[serde(flatten)]
    pub waterfall: Waterfall,
    /// Each stage's median over that of the same variant and round at the smallest c.
    pub stage_inflation: BTreeMap<Stage, Option<f64>>,
    /// The daemon's kernel counters over the cell.
    pub kernel: Counters,
    /// Mean partitions per device pass over the cell.
    pub mean_device_batch: Option<f64>,
    /// What the bandwidth throttle did over the cell; none where it raised no burst.
    pub throttle: Option<ThrottleRun>,
    /// The sweep's own CPU seconds over the cell (user + system): its load clients'.
    pub client_cpu_s: Option<f64>,
    /// Median of each part of a job's latency, in ms: the daemon's `server-timing` parts
    /// and `outside` (the latency less them; see `loadtest`).
    pub latency_parts_ms: BTreeMap<String, f64>,
    /// The cell's trace (Chrome-trace JSON of its jobs), relative to the output folder.
    pub trace: String,
    /// The cell's jobs.
    pub job_ids: Vec<u64>,
    /// Submissions its clients sent again after a "retry later" refusal.
    pub retries: usize,
}

impl Cell {
    /// Its file stem: `<variant>-c<C>-r<R>`.
    pub fn stem(variant: &str, clients: usize, round: usize) -> String {
        format!("{variant}-c{clients}-r{round}")
    }
}

/// Sets every cell's stage inflation against the cell of the same variant and round at
/// the smallest client count (that cell's is 1.0 for every stage it has).
pub fn fill_inflation(cells: &mut [Cell]) {
    let Some(c_min) = cells.iter().map(|c| c.clients).min() else {
        return;
    };
    let baselines: BTreeMap<(String, usize), BTreeMap<Stage, f64>> = cells
        .iter()
        .filter(|c| c.clients == c_min)
        .map(|c| {
            (
                (c.variant.clone(), c.round),
                c.waterfall.stage_median_ms.clone(),
            )
        })
        .collect();
    for c in cells {
        if let Some(base) = baselines.get(&(c.variant.clone(), c.round)) {
            c.stage_inflation = inflation(&c.waterfall.stage_median_ms, base);
        }
    }
}

/// min / median / max of one measure over rounds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Spread {
    /// Smallest.
    pub min: f64,
    /// Median (mean of the middle two for an even count).
    pub median: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    /// Of a sample (zeros for an empty one).
    pub fn of(xs: &[f64]) -> Self {
        let s = Summary::of(xs);
        Self {
            min: s.min,
            median: s.median,
            max: s.max,
        }
    }
}

/// One variant at one client count over every round.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SummaryRow {
    /// The variant.
    pub variant: String,
    /// Concurrent clients.
    pub clients: usize,
    /// Rounds measured.
    pub rounds: usize,
    /// Seconds per proof over rounds.
    pub seconds_per_proof: Spread,
    /// Device utilisation over rounds.
    pub device_utilisation: Spread,
}

/// The summary rows: for each variant (in the order given), each client count (ascending).
pub fn summarize(cells: &[Cell], variants: &[String], clients: &[usize]) -> Vec<SummaryRow> {
    let mut rows = Vec::new();
    for v in variants {
        for &c in clients {
            let mine: Vec<&Cell> = cells
                .iter()
                .filter(|x| &x.variant == v && x.clients == c)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let of =
                |f: fn(&Cell) -> f64| Spread::of(&mine.iter().map(|x| f(x)).collect::<Vec<_>>());
            rows.push(SummaryRow {
                variant: v.clone(),
                clients: c,
                rounds: mine.len(),
                seconds_per_proof: of(|x| x.seconds_per_proof),
                device_utilisation: of(|x| x.device_utilisation),
            });
        }
    }
    rows
}

/// An optional number, or "-".
fn opt<T: std::fmt::Display>(x: Option<T>) -> String {
    x.map_or_else(|| "-".into(), |x| x.to_string())
}

/// Width of the variant column for these cells.
fn name_width(cells: &[Cell]) -> usize {
    width_for(cells.iter().map(|c| c.variant.as_str()))
}

/// Width of the variant column for these names.
pub fn width_for<'a>(names: impl IntoIterator<Item = &'a str>) -> usize {
    names.into_iter().map(str::len).max().unwrap_or(0).max(7)
}

/// The header of the main table.
pub fn header(name_width: usize) -> String {
    format!(
        "{:>5} {:<name_width$} {:>4} {:>3} {:>3} {:>6} {:>9} {:>9} {:>10} {:>11} {:>6} {:>5} {:>8} {:>8}",
        "round", "variant", "c", "j", "p", "proofs", "s/proof", "proofs/s", "latency_s",
        "dev_ms/part", "util%", "gaps", "gap_ms", "rss_MiB"
    )
}

/// A cell's row of the main table.
pub fn row(c: &Cell, name_width: usize) -> String {
    let rss = c
        .kernel
        .peak_rss_bytes
        .map(|b| format!("{:.1}", b as f64 / (1 << 20) as f64));
    format!(
        "{:>5} {:<name_width$} {:>4} {:>3} {:>3} {:>6} {:>9.4} {:>9.2} {:>10.3} {:>11.2} {:>6.1} {:>5} {:>8.2} {:>8}",
        c.round,
        c.variant,
        c.clients,
        c.jobs_per_client,
        c.partitions,
        c.proofs,
        c.seconds_per_proof,
        c.proofs_per_second,
        c.avg_job_latency_s,
        c.avg_device_ms_per_partition,
        c.device_utilisation * 100.0,
        c.waterfall.device_gaps.count,
        c.waterfall.device_gaps.total_s * 1e3,
        opt(rss)
    )
}

/// `names` once each, those in `order` first in its order, the others after them by name.
fn in_order<'a>(names: impl Iterator<Item = &'a String>, order: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = names.cloned().collect();
    names.sort_by_key(|n| {
        (
            order.iter().position(|s| s == n).unwrap_or(usize::MAX),
            n.clone(),
        )
    });
    names.dedup();
    names
}

/// The stages present in any cell, in pipeline order.
fn stages(cells: &[Cell]) -> BTreeSet<Stage> {
    cells
        .iter()
        .flat_map(|c| c.waterfall.stage_median_ms.keys().copied())
        .collect()
}

/// The waterfall table: each cell's stage medians (ms) and their inflation.
pub fn stage_table(cells: &[Cell]) -> String {
    let w = name_width(cells);
    let names = stages(cells);
    let mut s = String::from(
        "median ms per partition span (× the median at the smallest c, same variant and round)\n",
    );
    let _ = write!(s, "{:>5} {:<w$} {:>4}", "round", "variant", "c");
    for n in &names {
        let _ = write!(s, " {:>17}", n.name());
    }
    s.push('\n');
    for c in cells {
        let _ = write!(s, "{:>5} {:<w$} {:>4}", c.round, c.variant, c.clients);
        for n in &names {
            let cell = match c.waterfall.stage_median_ms.get(n) {
                Some(ms) => {
                    let x = c.stage_inflation.get(n).copied().flatten();
                    format!("{ms:.2} ({})", opt(x.map(|x| format!("×{x:.2}"))))
                }
                None => "-".into(),
            };
            let _ = write!(s, " {cell:>17}");
        }
        s.push('\n');
    }
    s
}

/// The kernel table: each cell's counters, and CPU seconds by thread group.
pub fn kernel_table(cells: &[Cell]) -> String {
    let w = name_width(cells);
    let mut s =
        String::from("daemon kernel counters over each cell (TLB shootdowns: whole machine)\n");
    let _ = writeln!(
        s,
        "{:>5} {:<w$} {:>4} {:>9} {:>9} {:>9} {:>9} {:>6} {:>8} {:>8} {:>11}  cpu_s by thread",
        "round",
        "variant",
        "c",
        "tlb_shoot",
        "ctxsw_vol",
        "ctxsw_inv",
        "minflt",
        "majflt",
        "user_s",
        "sys_s",
        "rss_scope"
    );
    for c in cells {
        let k = &c.kernel;
        let secs = |x: Option<f64>| opt(x.map(|x| format!("{x:.2}")));
        let mut threads: Vec<(&String, &f64)> = k
            .cpu_s_by_thread
            .iter()
            .flatten()
            .filter(|(_, s)| **s > 0.0)
            .collect();
        threads.sort_by(|a, b| b.1.total_cmp(a.1));
        let threads: Vec<String> = threads.iter().map(|(g, s)| format!("{g} {s:.2}")).collect();
        let _ = writeln!(
            s,
            "{:>5} {:<w$} {:>4} {:>9} {:>9} {:>9} {:>9} {:>6} {:>8} {:>8} {:>11}  {}",
            c.round,
            c.variant,
            c.clients,
            opt(k.tlb_shootdowns),
            opt(k.voluntary_ctxt_switches),
            opt(k.nonvoluntary_ctxt_switches),
            opt(k.minor_faults),
            opt(k.major_faults),
            secs(k.user_cpu_s),
            secs(k.system_cpu_s),
            k.peak_rss_scope,
            threads.join(", ")
        );
    }
    s
}

/// The bandwidth throttle's counters over each cell where it raised a burst; empty where
/// no cell did (it is off by default).
pub fn throttle_table(cells: &[Cell]) -> String {
    if cells.iter().all(|c| c.throttle.is_none()) {
        return String::new();
    }
    let w = name_width(cells);
    let mut s = String::from("bandwidth throttle over each cell\n");
    let _ = writeln!(
        s,
        "round {:<w$} {:>4} {:>9} {:>11} {:>9}",
        "variant", "c", "bursts", "steps_aside", "aside_s"
    );
    for c in cells {
        let t = c.throttle;
        let _ = writeln!(
            s,
            "{:>5} {:<w$} {:>4} {:>9} {:>11} {:>9}",
            c.round,
            c.variant,
            c.clients,
            opt(t.map(|t| format!("{:.0}", t.bursts))),
            opt(t.map(|t| format!("{:.0}", t.steps_aside))),
            opt(t.map(|t| format!("{:.3}", t.paused_s))),
        );
    }
    s
}

/// Parts of a job's latency in the order a job meets them (others follow, by name).
const LATENCY_PART_ORDER: [&str; 6] = ["receive", "accept", "prove", "wake", "wait", "outside"];

/// The request-path table: each cell's mean latency, the medians of its parts, and CPU
/// seconds of the daemon, the load clients and the whole machine over the cell.
pub fn request_table(cells: &[Cell]) -> String {
    let w = name_width(cells);
    let parts = in_order(
        cells.iter().flat_map(|c| c.latency_parts_ms.keys()),
        &LATENCY_PART_ORDER,
    );
    let mut s = String::from(
        "job latency: mean ms, median ms of each part (the daemon's server-timing; outside = \
         the rest), mean partitions per device pass, CPU s over the cell\n",
    );
    let _ = write!(
        s,
        "{:>5} {:<w$} {:>4} {:>9}",
        "round", "variant", "c", "latency"
    );
    for p in &parts {
        let _ = write!(s, " {p:>8}");
    }
    let _ = writeln!(
        s,
        " {:>6} {:>9} {:>9} {:>9}",
        "batch", "daemon_s", "client_s", "machine_s"
    );
    let secs = |x: Option<f64>| opt(x.map(|x| format!("{x:.2}")));
    for c in cells {
        let _ = write!(
            s,
            "{:>5} {:<w$} {:>4} {:>9.2}",
            c.round,
            c.variant,
            c.clients,
            c.avg_job_latency_s * 1e3
        );
        for p in &parts {
            let v = c.latency_parts_ms.get(p).map(|ms| format!("{ms:.2}"));
            let _ = write!(s, " {:>8}", opt(v));
        }
        let k = &c.kernel;
        let daemon = k.user_cpu_s.zip(k.system_cpu_s).map(|(u, s)| u + s);
        let _ = writeln!(
            s,
            " {:>6} {:>9} {:>9} {:>9}",
            opt(c.mean_device_batch.map(|b| format!("{b:.1}"))),
            secs(daemon),
            secs(c.client_cpu_s),
            secs(k.machine_cpu_s)
        );
    }
    s
}

/// The summary table over rounds.
pub fn summary_table(rows: &[SummaryRow]) -> String {
    let w = width_for(rows.iter().map(|r| r.variant.as_str()));
    let mut s = String::from("over rounds: min / median / max\n");
    let _ = writeln!(
        s,
        "{:<w$} {:>4} {:>6} {:>28} {:>22}",
        "variant", "c", "rounds", "s/proof", "device util %"
    );
    for r in rows {
        let (p, u) = (r.seconds_per_proof, r.device_utilisation);
        let _ = writeln!(
            s,
            "{:<w$} {:>4} {:>6} {:>28} {:>22}",
            r.variant,
            r.clients,
            r.rounds,
            format!("{:.4} / {:.4} / {:.4}", p.min, p.median, p.max),
            format!(
                "{:.1} / {:.1} / {:.1}",
                u.min * 100.0,
                u.median * 100.0,
                u.max * 100.0
            )
        );
    }
    s
}

/// The chart: median s/proof and median device utilisation over rounds against c, one
/// line per variant.
pub fn chart(title: &str, rows: &[SummaryRow], variants: &[String], clients: &[usize]) -> String {
    let line = |v: &String, f: fn(&SummaryRow) -> f64| Line {
        name: v.clone(),
        ys: clients
            .iter()
            .map(|&c| {
                rows.iter()
                    .find(|r| &r.variant == v && r.clients == c)
                    .map(f)
            })
            .collect(),
    };
    let panels = [
        Panel {
            y_label: "s/proof (median over rounds)".into(),
            y_max: None,
            lines: variants
                .iter()
                .map(|v| line(v, |r| r.seconds_per_proof.median))
                .collect(),
        },
        Panel {
            y_label: "device utilisation (median over rounds)".into(),
            y_max: Some(1.0),
            lines: variants
                .iter()
                .map(|v| line(v, |r| r.device_utilisation.median))
                .collect(),
        },
    ];
    let ticks: Vec<String> = clients.iter().map(ToString::to_string).collect();
    line_panels(title, "concurrent clients (c)", &ticks, &panels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instruments::waterfall::DeviceGaps;

    fn cell(variant: &str, round: usize, clients: usize, spp: f64, reduce_ms: f64) -> Cell {
        Cell {
            variant: variant.into(),
            round,
            clients,
            jobs_per_client: 1,
            partitions: 1,
            proofs: clients,
            wall_s: spp * clients as f64,
            seconds_per_proof: spp,
            proofs_per_second: 1.0 / spp,
            avg_job_latency_s: 0.1,
            avg_device_ms_per_partition: 1.0,
            device_utilisation: spp / 10.0,
            device_busy_fraction: BTreeMap::new(),
            waterfall: Waterfall {
                stage_median_ms: BTreeMap::from([(Stage::Reduce, reduce_ms), (Stage::Device, 1.0)]),
                trace_partitions: clients,
                device_spans: clients,
                device_gaps: DeviceGaps {
                    count: 0,
                    total_s: 0.0,
                    window_s: 0.0,
                    busy_s: 0.0,
                },
            },
            stage_inflation: BTreeMap::new(),
            kernel: Counters::default(),
            mean_device_batch: None,
            throttle: None,
            client_cpu_s: None,
            latency_parts_ms: BTreeMap::new(),
            trace: String::new(),
            job_ids: vec![1],
            retries: 0,
        }
    }

    /// The throttle's table is there only when a cell raised a burst, a dash for the others.
    #[test]
    fn the_throttle_table_lists_cells_only_when_the_throttle_ran() {
        let off = cell("off", 1, 4, 0.001, 1.0);
        assert_eq!(throttle_table(std::slice::from_ref(&off)), "");
        let mut on = cell("pause", 1, 4, 0.001, 1.0);
        on.throttle = Some(ThrottleRun {
            bursts: 80.0,
            steps_aside: 12.0,
            paused_s: 0.25,
        });
        let t = throttle_table(&[off, on]);
        let rows: Vec<Vec<&str>> = t
            .lines()
            .skip(2)
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(rows[0], ["1", "off", "4", "-", "-", "-"]);
        assert_eq!(rows[1], ["1", "pause", "4", "80", "12", "0.250"]);
    }

    /// The request-path table lists a job's parts in the order a job meets them (others
    /// after), with a dash where a cell lacks one, and the CPU columns.
    #[test]
    fn the_request_table_orders_the_latency_parts() {
        let mut a = cell("a", 1, 64, 0.001, 1.0);
        a.latency_parts_ms = BTreeMap::from([
            ("outside".to_string(), 0.9),
            ("prove".to_string(), 50.0),
            ("accept".to_string(), 5.25),
            ("receive".to_string(), 0.1),
            ("extra".to_string(), 1.0),
        ]);
        a.mean_device_batch = Some(9.5);
        a.client_cpu_s = Some(0.75);
        a.kernel.machine_cpu_s = Some(10.0);
        let mut b = cell("b", 1, 64, 0.001, 1.0);
        b.latency_parts_ms = BTreeMap::from([("wake".to_string(), 0.05)]);
        let t = request_table(&[a, b]);
        let lines: Vec<&str> = t.lines().collect();
        let header: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            header[4..10],
            ["receive", "accept", "prove", "wake", "outside", "extra"],
            "{t}"
        );
        let row_a: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(row_a[4..10], ["0.10", "5.25", "50.00", "-", "0.90", "1.00"]);
        assert_eq!(row_a[10..], ["9.5", "-", "0.75", "10.00"], "{t}");
        let row_b: Vec<&str> = lines[3].split_whitespace().collect();
        assert_eq!(row_b[7], "0.05", "{t}");
    }

    #[test]
    fn inflation_is_against_the_smallest_c_of_the_same_variant_and_round() {
        let mut cells = vec![
            cell("a", 1, 1, 1.0, 2.0),
            cell("b", 1, 1, 1.0, 4.0),
            cell("a", 1, 4, 1.0, 3.0),
            cell("b", 1, 4, 1.0, 4.0),
            cell("a", 2, 1, 1.0, 1.0),
            cell("a", 2, 4, 1.0, 3.0),
        ];
        fill_inflation(&mut cells);
        let infl = |i: usize| cells[i].stage_inflation[&Stage::Reduce].unwrap();
        assert_eq!(
            [infl(0), infl(1), infl(2), infl(3), infl(4), infl(5)],
            [1.0, 1.0, 1.5, 1.0, 1.0, 3.0]
        );
        assert_eq!(cells[2].stage_inflation[&Stage::Device], Some(1.0));
    }

    #[test]
    fn the_summary_spans_rounds() {
        let cells = vec![
            cell("a", 1, 1, 3.0, 1.0),
            cell("a", 2, 1, 1.0, 1.0),
            cell("a", 3, 1, 2.0, 1.0),
            cell("b", 1, 1, 5.0, 1.0),
        ];
        let names = ["a".to_string(), "b".to_string()];
        let rows = summarize(&cells, &names, &[1, 4]);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].rounds, 3);
        assert_eq!(
            rows[0].seconds_per_proof,
            Spread {
                min: 1.0,
                median: 2.0,
                max: 3.0
            }
        );
        assert_eq!(Spread::of(&[4.0, 1.0]).median, 2.5);
        assert_eq!(rows[1].device_utilisation.median, 0.5);
        let t = summary_table(&rows);
        assert!(t.contains("1.0000 / 2.0000 / 3.0000"), "{t}");
        assert!(chart("t", &rows, &names, &[1, 4]).contains("<polyline"));
        assert!(stage_table(&cells).contains("reduce"));
        assert!(kernel_table(&cells).lines().count() == 2 + cells.len());
        assert!(row(&cells[0], 7).len() == header(7).len());
    }
}
