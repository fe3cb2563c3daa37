//! What a load run reports ([`Summary`], per address [`AddressSummary`]), and the
//! helpers that make it from the jobs' records and the daemons' metrics texts.

use super::JobRecord;
use std::collections::BTreeMap;

/// The run's numbers.
#[derive(serde::Serialize)]
pub struct Summary {
    /// The key id.
    pub key: String,
    /// Concurrent clients.
    pub clients: usize,
    /// Jobs per client.
    pub jobs_per_client: usize,
    /// Partitions per job.
    pub partitions: usize,
    /// Proofs of the jobs that completed.
    pub proofs: usize,
    /// Jobs that failed, were cancelled or timed out.
    pub failed_jobs: usize,
    /// Submissions sent again after the daemon refused them with "retry later"
    /// (RESOURCE_EXHAUSTED or UNAVAILABLE), over every job.
    pub retries: usize,
    /// Seconds from the first submission to the last reply.
    pub wall_s: f64,
    /// `wall_s` / `proofs`.
    pub seconds_per_proof: f64,
    /// `proofs` / `wall_s`.
    pub proofs_per_second: f64,
    /// Latency of the completed jobs (first submission to reply).
    pub job_latency_ms: Percentiles,
    /// The daemon's parts of that latency (its `server-timing` reply metadata: receive,
    /// accept, prove, wake; a streamed job's: receive of both its calls, upload, accept,
    /// wait, wake), and `outside`: the latency less those parts (the request's send before
    /// its headers arrived, the reply's return, this client's scheduling).
    pub server_timing_ms: BTreeMap<String, Percentiles>,
    /// Partitions per device pass over the run, all devices (the daemon's
    /// `zkpipe_device_batch_size` histogram); none if no pass ran.
    pub mean_device_batch: Option<f64>,
    /// Each device's lock-held seconds over the run / `wall_s`, by metric label set.
    pub device_busy_fraction: Vec<(String, f64)>,
    /// What the bandwidth throttle did over the run, all daemons; none where it raised
    /// no burst (it is off by default).
    pub throttle: Option<ThrottleRun>,
    /// The daemon's peak RSS since it started, as its metrics report it (the largest of
    /// the daemons').
    pub daemon_peak_rss_bytes: Option<f64>,
    /// Each daemon address's share of the run, in the order given.
    pub per_address: Vec<AddressSummary>,
}

/// One daemon address's share of a load run.
#[derive(serde::Serialize)]
pub struct AddressSummary {
    /// The address.
    pub address: String,
    /// Clients sent to it.
    pub clients: usize,
    /// Proofs of its jobs that completed.
    pub proofs: usize,
    /// Its jobs that failed, were cancelled or timed out.
    pub failed_jobs: usize,
    /// `proofs` / the run's `wall_s`.
    pub proofs_per_second: f64,
    /// Latency of its completed jobs.
    pub job_latency_ms: Percentiles,
}

/// Percentiles of a sample.
#[derive(serde::Serialize)]
pub struct Percentiles {
    /// Smallest.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

pub(super) fn percentiles(mut v: Vec<f64>) -> Percentiles {
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

/// Percentiles of each server-timing part over `jobs`, and of `outside` (latency less
/// the parts) over the jobs that carried parts.
pub(super) fn server_parts(jobs: &[JobRecord]) -> BTreeMap<String, Percentiles> {
    let mut parts: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for j in jobs.iter().filter(|j| !j.server_timing.is_empty()) {
        let mut inside = 0.0;
        for (name, ms) in &j.server_timing {
            parts.entry(name.clone()).or_default().push(*ms);
            inside += ms;
        }
        parts
            .entry("outside".into())
            .or_default()
            .push(j.latency_s * 1e3 - inside);
    }
    parts
        .into_iter()
        .map(|(k, v)| (k, percentiles(v)))
        .collect()
}

/// Mean partitions per device pass between two metrics texts (sum and count of the
/// `zkpipe_device_batch_size` histogram, over every device).
pub(super) fn mean_batch(before: &str, after: &str) -> Option<f64> {
    let delta = |name: &str| metric_delta(before, after, name, "");
    let passes = delta("zkpipe_device_batch_size_count");
    (passes > 0.0).then(|| delta("zkpipe_device_batch_size_sum") / passes)
}

/// The bandwidth throttle's counters over a run (`zkpipe_throttle_events`,
/// `zkpipe_throttle_paused_seconds`), so an A/B of its modes shows whether the row loops
/// stepped aside at all.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ThrottleRun {
    /// Bursts raised.
    pub bursts: f64,
    /// Row-loop checks that stepped aside.
    pub steps_aside: f64,
    /// Seconds the loops spent aside.
    pub paused_s: f64,
}

/// [`ThrottleRun`] between two metrics texts; none if no burst was raised.
pub(super) fn throttle_run(before: &str, after: &str) -> Option<ThrottleRun> {
    let delta = |name: &str, label: &str| metric_delta(before, after, name, label);
    let bursts = delta("zkpipe_throttle_events", "\"burst\"");
    (bursts > 0.0).then(|| ThrottleRun {
        bursts,
        steps_aside: delta("zkpipe_throttle_events", "\"step_aside\""),
        paused_s: delta("zkpipe_throttle_paused_seconds", ""),
    })
}

/// How much a metric grew between two metrics texts, summed over its label sets that
/// contain `label` (every one for "").
fn metric_delta(before: &str, after: &str, name: &str, label: &str) -> f64 {
    let total = |text: &str| {
        metric(text, name)
            .iter()
            .filter(|(labels, _)| labels.contains(label))
            .map(|x| x.1)
            .sum::<f64>()
    };
    total(after) - total(before)
}

/// Values of a metric by its label set, from Prometheus text.
pub(super) fn metric(text: &str, name: &str) -> Vec<(String, f64)> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_throttle_over_a_run_is_the_counters_difference_and_none_without_bursts() {
        let text = |bursts, steps, paused| {
            format!(
                "# HELP zkpipe_throttle_events x\n\
                 zkpipe_throttle_events{{event=\"burst\"}} {bursts}\n\
                 zkpipe_throttle_events{{event=\"step_aside\"}} {steps}\n\
                 zkpipe_throttle_paused_seconds {paused}\n"
            )
        };
        let run = throttle_run(&text(3, 10, 0.5), &text(8, 25, 1.25)).unwrap();
        assert_eq!(
            run,
            ThrottleRun {
                bursts: 5.0,
                steps_aside: 15.0,
                paused_s: 0.75
            }
        );
        assert_eq!(throttle_run(&text(3, 10, 0.5), &text(3, 10, 0.5)), None);
        assert_eq!(throttle_run("", ""), None);
    }
}
