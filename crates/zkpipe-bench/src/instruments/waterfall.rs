//! The daemon's waterfall (GetTrace's Chrome-trace JSON) restricted to some jobs: the
//! median time of each partition span, and the gaps in the device timeline. The Rust
//! counterpart of `lab/waterfall_gaps.py` (without its per-gap cause sampling).
//!
//! Layout (zkpipe-engine's `trace.rs`): process 1 has partition spans whose `args.job` is
//! their job; process 2 has device spans named "job J part P"; thread-name metadata of
//! process 1 is named "job J part P (key)".

use crate::instruments::stats::Summary;
use anyhow::{Context, Result};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use zkpipe_core::Stage;

/// A span in microseconds of the trace's clock: (start, end).
pub type Span = (f64, f64);

/// Idle time between device spans.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct DeviceGaps {
    /// Gaps between the union of device spans, from the first start to the last end.
    pub count: usize,
    /// Their total, in seconds.
    pub total_s: f64,
    /// From the first device span's start to the last one's end, in seconds.
    pub window_s: f64,
    /// The union of device spans, in seconds.
    pub busy_s: f64,
}

/// The waterfall of some jobs.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Waterfall {
    /// Median duration of each partition span's stage, in milliseconds.
    pub stage_median_ms: BTreeMap<Stage, f64>,
    /// Distinct partitions (job, index) with spans in the trace.
    pub trace_partitions: usize,
    /// Device spans in the trace.
    pub device_spans: usize,
    /// The device timeline's gaps.
    pub device_gaps: DeviceGaps,
}

/// The job an event belongs to, if any: partition spans carry it in `args.job`, device
/// spans in their name ("job 12 part 0"), partition tracks in their `args.name`.
pub fn job_of(e: &Value) -> Option<u64> {
    let job_in = |name: &str| {
        name.strip_prefix("job ")?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    };
    if e["ph"] == "X" {
        if e["pid"] == 1 {
            e["args"]["job"].as_u64()
        } else {
            job_in(e["name"].as_str()?)
        }
    } else {
        job_in(e["args"]["name"].as_str()?)
    }
}

/// The trace with only the events of `jobs`, plus those of no job (process names,
/// device track names).
pub fn filter_jobs(trace: &Value, jobs: &BTreeSet<u64>) -> Value {
    let mut out = trace.clone();
    if let Some(ev) = out["traceEvents"].as_array_mut() {
        ev.retain(|e| job_of(e).is_none_or(|j| jobs.contains(&j)));
    }
    out
}

/// The union of spans, sorted: overlapping or touching spans merge.
pub fn union(mut spans: Vec<Span>) -> Vec<Span> {
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut merged: Vec<Span> = Vec::new();
    for (s, e) in spans {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
}

/// The gaps of a device timeline given its spans in microseconds.
pub fn gaps(spans: Vec<Span>) -> DeviceGaps {
    let merged = union(spans);
    let busy: f64 = merged.iter().map(|(s, e)| e - s).sum();
    let window = match (merged.first(), merged.last()) {
        (Some(f), Some(l)) => l.1 - f.0,
        _ => 0.0,
    };
    let idle: Vec<f64> = merged
        .windows(2)
        .map(|w| w[1].0 - w[0].1)
        .filter(|g| *g > 0.0)
        .collect();
    DeviceGaps {
        count: idle.len(),
        total_s: idle.iter().sum::<f64>() / 1e6,
        window_s: window / 1e6,
        busy_s: busy / 1e6,
    }
}

/// A complete ("X") event's span in microseconds.
fn span_of(e: &Value) -> Option<Span> {
    let ts = e["ts"].as_f64()?;
    Some((ts, ts + e["dur"].as_f64()?))
}

/// Analyses the waterfall of `jobs` in a Chrome-trace document.
pub fn analyse(trace: &Value, jobs: &BTreeSet<u64>) -> Result<Waterfall> {
    let events = trace["traceEvents"]
        .as_array()
        .context("the daemon's trace has no traceEvents")?;
    let mine = events
        .iter()
        .filter(|e| e["ph"] == "X" && job_of(e).is_some_and(|j| jobs.contains(&j)));
    let mut by_stage: BTreeMap<Stage, Vec<f64>> = BTreeMap::new();
    let mut partitions = BTreeSet::new();
    let mut device = Vec::new();
    for e in mine {
        let Some(span) = span_of(e) else { continue };
        if e["pid"] == 1 {
            // The engine names its spans by stage; a name no stage has is not one of them.
            if let Some(stage) = e["name"].as_str().and_then(|n| n.parse::<Stage>().ok()) {
                by_stage
                    .entry(stage)
                    .or_default()
                    .push((span.1 - span.0) / 1e3);
            }
            partitions.insert((job_of(e), e["args"]["partition"].as_u64()));
        } else if e["pid"] == 2 {
            device.push(span);
        }
    }
    Ok(Waterfall {
        stage_median_ms: by_stage
            .into_iter()
            .map(|(s, ms)| (s, Summary::of(&ms).median))
            .collect(),
        trace_partitions: partitions.len(),
        device_spans: device.len(),
        device_gaps: gaps(device),
    })
}

/// Each stage's median over its median in `baseline` (the same variant at its smallest
/// concurrency); none where the baseline lacks the stage or it took no time.
pub fn inflation(
    stages: &BTreeMap<Stage, f64>,
    baseline: &BTreeMap<Stage, f64>,
) -> BTreeMap<Stage, Option<f64>> {
    stages
        .iter()
        .map(|(s, ms)| {
            let base = baseline.get(s).copied().filter(|b| *b > 0.0);
            (*s, base.map(|b| ms / b))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gaps_are_between_the_union_of_spans() {
        // Two overlapping spans, one touching, then a 5 µs gap and a 10 µs gap.
        let g = gaps(vec![
            (30.0, 40.0),
            (0.0, 10.0),
            (5.0, 12.0),
            (12.0, 15.0),
            (20.0, 25.0),
        ]);
        assert_eq!(g.count, 2);
        assert!((g.total_s - 10e-6).abs() < 1e-12, "{g:?}");
        assert!((g.window_s - 40e-6).abs() < 1e-12);
        assert!((g.busy_s - 30e-6).abs() < 1e-12);
        assert_eq!(gaps(vec![]).count, 0);
        assert_eq!(gaps(vec![(1.0, 2.0)]).total_s, 0.0);
    }

    fn trace() -> Value {
        json!({"traceEvents": [
            {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "partitions"}},
            {"ph": "M", "pid": 1, "tid": 0, "name": "thread_name", "args": {"name": "job 1 part 0 (k)"}},
            {"ph": "M", "pid": 1, "tid": 1, "name": "thread_name", "args": {"name": "job 2 part 0 (k)"}},
            {"ph": "X", "pid": 1, "tid": 0, "name": "reduce", "ts": 0.0, "dur": 1000.0,
             "args": {"job": 1, "partition": 0}},
            {"ph": "X", "pid": 1, "tid": 1, "name": "reduce", "ts": 0.0, "dur": 3000.0,
             "args": {"job": 2, "partition": 0}},
            {"ph": "X", "pid": 1, "tid": 1, "name": "device", "ts": 3000.0, "dur": 2000.0,
             "args": {"job": 2, "partition": 0}},
            {"ph": "X", "pid": 2, "tid": 0, "name": "job 1 part 0", "ts": 1000.0, "dur": 500.0},
            {"ph": "X", "pid": 2, "tid": 0, "name": "job 2 part 0", "ts": 3000.0, "dur": 2000.0},
        ]})
    }

    #[test]
    fn analysis_and_filter_keep_only_the_jobs_asked_for() {
        let t = trace();
        let w = analyse(&t, &BTreeSet::from([2])).unwrap();
        assert_eq!(w.stage_median_ms[&Stage::Reduce], 3.0);
        assert_eq!(w.stage_median_ms[&Stage::Device], 2.0);
        assert_eq!(
            (w.trace_partitions, w.device_spans, w.device_gaps.count),
            (1, 1, 0)
        );
        let both = analyse(&t, &BTreeSet::from([1, 2])).unwrap();
        assert_eq!(both.stage_median_ms[&Stage::Reduce], 2.0);
        assert_eq!(both.device_gaps.count, 1);
        assert!((both.device_gaps.total_s - 1.5e-3).abs() < 1e-12);
        let kept = filter_jobs(&t, &BTreeSet::from([1]));
        let ev = kept["traceEvents"].as_array().unwrap();
        // Process name, job 1's track name, its reduce span, its device span.
        assert_eq!(ev.len(), 4);
        assert!(ev.iter().all(|e| job_of(e).is_none_or(|j| j == 1)));
    }

    #[test]
    fn inflation_is_relative_to_the_baseline() {
        let base = BTreeMap::from([(Stage::Reduce, 2.0), (Stage::Tail, 0.0)]);
        let now = BTreeMap::from([
            (Stage::Reduce, 3.0),
            (Stage::Tail, 1.0),
            (Stage::Device, 1.0),
        ]);
        let i = inflation(&now, &base);
        assert_eq!(i[&Stage::Reduce], Some(1.5));
        assert_eq!(i[&Stage::Tail], None);
        assert_eq!(i[&Stage::Device], None);
        assert_eq!(inflation(&base, &base)[&Stage::Reduce], Some(1.0));
    }
}
