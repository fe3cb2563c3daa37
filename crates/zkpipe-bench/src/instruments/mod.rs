//! Measuring instruments for `zkpipe-bench bench` and `zkpipe-bench sweep`: statistics with a
//! noise-aware verdict, markdown and JSON reports, SVG charts, the daemon's waterfall
//! restricted to some jobs, and kernel counters of a process.

pub mod kernel;
pub mod plot;
pub mod stats;
pub mod waterfall;

/// Peak resident set size of this process so far (VmHWM), in MiB, if the OS reports it.
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}
