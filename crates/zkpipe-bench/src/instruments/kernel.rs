//! Kernel-side counters of a process over an interval, from Linux's /proc, best effort:
//! a counter the kernel does not offer (or another OS) is `None`, never an error.
//!
//! - system-wide TLB shootdowns (`TLB:` line of /proc/interrupts, summed over CPUs),
//! - the process's voluntary / involuntary context switches, summed over its threads
//!   (/proc/PID/task/*/status: /proc/PID/status counts the main thread's only),
//! - its minor / major page faults and user / system CPU time (/proc/PID/stat),
//! - CPU time per thread group (/proc/PID/task/*/stat, grouped by [`thread_group`]),
//! - its peak RSS over the interval: writing "5" to /proc/PID/clear_refs resets VmHWM,
//! - the whole machine's busy CPU time (the `cpu` line of /proc/stat: all but idle and
//!   iowait), to tell a saturated machine from a waiting process.
//!
//! Per-thread counts of a thread that ends during the interval are lost.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Clock ticks per second of /proc's CPU times (USER_HZ: 100 on every Linux ABI).
const TICKS_PER_SECOND: f64 = 100.0;

/// The counters of a process at one instant.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    tlb_shootdowns: Option<u64>,
    machine_busy_ticks: Option<u64>,
    stat: Option<ProcStat>,
    /// Thread id → its counters.
    threads: Option<BTreeMap<u64, ThreadSample>>,
}

/// One thread's counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThreadSample {
    /// Its group ([`thread_group`] of its name).
    pub group: String,
    /// User + system CPU time, in clock ticks.
    pub ticks: u64,
    /// Voluntary context switches, where its status tells.
    pub voluntary: Option<u64>,
    /// Involuntary context switches, where its status tells.
    pub involuntary: Option<u64>,
}

/// Fields of /proc/PID/stat (or a task's stat).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcStat {
    /// Minor page faults.
    pub minor_faults: u64,
    /// Major page faults.
    pub major_faults: u64,
    /// User CPU time, in clock ticks.
    pub user_ticks: u64,
    /// System CPU time, in clock ticks.
    pub system_ticks: u64,
}

/// What changed between two snapshots (and the peak RSS of the interval).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Counters {
    /// TLB shootdowns on every CPU of the machine.
    pub tlb_shootdowns: Option<u64>,
    /// Busy CPU seconds of the whole machine, every process's.
    pub machine_cpu_s: Option<f64>,
    /// The process's voluntary context switches.
    pub voluntary_ctxt_switches: Option<u64>,
    /// Its involuntary context switches.
    pub nonvoluntary_ctxt_switches: Option<u64>,
    /// Its minor page faults.
    pub minor_faults: Option<u64>,
    /// Its major page faults.
    pub major_faults: Option<u64>,
    /// Its user CPU seconds.
    pub user_cpu_s: Option<f64>,
    /// Its system CPU seconds.
    pub system_cpu_s: Option<f64>,
    /// CPU seconds (user + system) by thread group; threads that ended during the
    /// interval are missing.
    pub cpu_s_by_thread: Option<BTreeMap<String, f64>>,
    /// Its peak resident set size, in bytes.
    pub peak_rss_bytes: Option<u64>,
    /// "interval" when VmHWM was reset before it, else "since start".
    pub peak_rss_scope: &'static str,
}

/// /proc/PID as a path.
fn proc_path(pid: u32, rest: &str) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}/{rest}"))
}

/// The sum of the per-CPU counts on the `TLB:` line of /proc/interrupts text.
pub fn parse_tlb(interrupts: &str) -> Option<u64> {
    let line = interrupts
        .lines()
        .find(|l| l.trim_start().starts_with("TLB:"))?;
    let counts = line.trim_start()["TLB:".len()..]
        .split_whitespace()
        .map_while(|w| w.parse::<u64>().ok());
    Some(counts.sum())
}

/// Busy clock ticks of every CPU from /proc/stat text: the `cpu` line's user, nice,
/// system, irq, softirq and steal (not idle, iowait, or guest, which user already counts).
pub fn parse_machine_busy(stat: &str) -> Option<u64> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line["cpu ".len()..]
        .split_whitespace()
        .map_while(|w| w.parse().ok())
        .collect();
    let at = |i: usize| f.get(i).copied();
    Some(at(0)? + at(1)? + at(2)? + at(5)? + at(6)? + at(7).unwrap_or(0))
}

/// A numeric field of /proc/PID/status text ("VmHWM:  1234 kB" → 1234).
pub fn status_field(status: &str, name: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Parses /proc/PID/stat text: (comm, counters). The command name is in parentheses and
/// may hold spaces or parentheses itself, so fields are counted after the last ')'.
pub fn parse_stat(text: &str) -> Option<(String, ProcStat)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    // Field 3 (state) is the first after the name; field n is at index n - 3.
    let f: Vec<&str> = text[close + 1..].split_whitespace().collect();
    let at = |n: usize| f.get(n - 3)?.parse::<u64>().ok();
    Some((
        comm,
        ProcStat {
            minor_faults: at(10)?,
            major_faults: at(12)?,
            user_ticks: at(14)?,
            system_ticks: at(15)?,
        },
    ))
}

/// The group of a thread name: the name less its index, i.e. less trailing digits, `-`
/// and a `-w` worker marker (zkpipe-reduce-3 and zkpipe-reduce-w0 → zkpipe-reduce,
/// zkpipe-device0-w1 → zkpipe-device, tokio-runtime-worker stays). Linux keeps 15 bytes of
/// a name, so some groups are cut short ("zkpipe-synthesi").
pub fn thread_group(name: &str) -> String {
    let mut g = name.trim();
    loop {
        let next = g
            .trim_end_matches(|c: char| c.is_ascii_digit())
            .trim_end_matches('-');
        let next = next.strip_suffix("-w").unwrap_or(next);
        if next == g || next.is_empty() {
            break;
        }
        g = next;
    }
    g.to_string()
}

/// Every thread of `pid`: id → its counters.
fn threads(pid: u32) -> Option<BTreeMap<u64, ThreadSample>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(proc_path(pid, "task")).ok()?.flatten() {
        let Some(tid) = entry.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        // A thread may end between the listing and the read: skip it.
        let Ok(text) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((comm, s)) = parse_stat(&text) else {
            continue;
        };
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        out.insert(
            tid,
            ThreadSample {
                group: thread_group(&comm),
                ticks: s.user_ticks + s.system_ticks,
                voluntary: status_field(&status, "voluntary_ctxt_switches"),
                involuntary: status_field(&status, "nonvoluntary_ctxt_switches"),
            },
        );
    }
    Some(out)
}

/// The counters of `pid` now.
pub fn snapshot(pid: u32) -> Snapshot {
    let read = |p: PathBuf| std::fs::read_to_string(p).ok();
    Snapshot {
        tlb_shootdowns: read("/proc/interrupts".into()).and_then(|t| parse_tlb(&t)),
        machine_busy_ticks: read("/proc/stat".into()).and_then(|t| parse_machine_busy(&t)),
        stat: read(proc_path(pid, "stat")).and_then(|t| parse_stat(&t).map(|x| x.1)),
        threads: threads(pid),
    }
}

/// The CPU seconds (user + system) `pid` has used so far.
pub fn process_cpu_s(pid: u32) -> Option<f64> {
    let (_, s) = parse_stat(&std::fs::read_to_string(proc_path(pid, "stat")).ok()?)?;
    Some((s.user_ticks + s.system_ticks) as f64 / TICKS_PER_SECOND)
}

/// Resets the peak RSS (VmHWM) of `pid`; false where the kernel refused or lacks it.
pub fn reset_peak_rss(pid: u32) -> bool {
    std::fs::write(proc_path(pid, "clear_refs"), "5").is_ok()
}

/// The peak RSS (VmHWM) of `pid`, in bytes.
pub fn peak_rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(proc_path(pid, "status")).ok()?;
    Some(status_field(&status, "VmHWM")? * 1024)
}

/// `after - before` where both are known.
fn diff(before: Option<u64>, after: Option<u64>) -> Option<u64> {
    Some(after?.saturating_sub(before?))
}

/// CPU seconds per thread group between two listings of a process's threads.
pub fn cpu_by_group(
    before: &BTreeMap<u64, ThreadSample>,
    after: &BTreeMap<u64, ThreadSample>,
) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for (tid, t) in after {
        let was = before.get(tid).map_or(0, |b| b.ticks);
        *out.entry(t.group.clone()).or_insert(0.0) +=
            t.ticks.saturating_sub(was) as f64 / TICKS_PER_SECOND;
    }
    out
}

/// A per-thread count summed over the threads between two listings (a thread that
/// started in between counts from 0); none if no thread has it.
pub fn thread_sum(
    before: &BTreeMap<u64, ThreadSample>,
    after: &BTreeMap<u64, ThreadSample>,
    count: fn(&ThreadSample) -> Option<u64>,
) -> Option<u64> {
    let mut total = None;
    for (tid, t) in after {
        let Some(now) = count(t) else { continue };
        let was = before.get(tid).and_then(count).unwrap_or(0);
        *total.get_or_insert(0) += now.saturating_sub(was);
    }
    total
}

/// What changed from `before` to `after`; `peak_rss_bytes` and its scope as measured.
pub fn counters(
    before: &Snapshot,
    after: &Snapshot,
    peak_rss_bytes: Option<u64>,
    peak_rss_reset: bool,
) -> Counters {
    let stat =
        |f: fn(&ProcStat) -> u64| diff(before.stat.as_ref().map(f), after.stat.as_ref().map(f));
    let seconds = |t: Option<u64>| t.map(|t| t as f64 / TICKS_PER_SECOND);
    let threads = before.threads.as_ref().zip(after.threads.as_ref());
    Counters {
        tlb_shootdowns: diff(before.tlb_shootdowns, after.tlb_shootdowns),
        machine_cpu_s: seconds(diff(before.machine_busy_ticks, after.machine_busy_ticks)),
        voluntary_ctxt_switches: threads.and_then(|(b, a)| thread_sum(b, a, |t| t.voluntary)),
        nonvoluntary_ctxt_switches: threads.and_then(|(b, a)| thread_sum(b, a, |t| t.involuntary)),
        minor_faults: stat(|s| s.minor_faults),
        major_faults: stat(|s| s.major_faults),
        user_cpu_s: seconds(stat(|s| s.user_ticks)),
        system_cpu_s: seconds(stat(|s| s.system_ticks)),
        cpu_s_by_thread: threads.map(|(b, a)| cpu_by_group(b, a)),
        peak_rss_bytes,
        peak_rss_scope: if peak_rss_reset {
            "interval"
        } else {
            "since start"
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_names_group_by_stage() {
        for (name, group) in [
            ("zkpipe-reduce-3", "zkpipe-reduce"),
            ("zkpipe-reduce-12", "zkpipe-reduce"),
            ("zkpipe-reduce-w", "zkpipe-reduce"), // zkpipe-reduce-w0, cut at 15 bytes
            ("zkpipe-device0-", "zkpipe-device"), // zkpipe-device0-w0, cut
            ("zkpipe-device-0", "zkpipe-device"),
            ("zkpipe-tail-w1", "zkpipe-tail"),
            ("zkpipe-janitor", "zkpipe-janitor"),
            ("tokio-runtime-w", "tokio-runtime"),
            ("zkpipe", "zkpipe"),
            ("42", "42"),
        ] {
            assert_eq!(thread_group(name), group, "{name}");
        }
    }

    #[test]
    fn proc_texts_parse() {
        let interrupts = "           CPU0       CPU1\n \
            NMI:          0          0   Non-maskable interrupts\n \
            TLB:        120         30   TLB shootdowns\n";
        assert_eq!(parse_tlb(interrupts), Some(150));
        assert_eq!(parse_tlb("CPU0\n"), None);
        // user nice system idle iowait irq softirq steal guest guest_nice
        let stat = "cpu  100 5 20 900 7 1 2 3 50 0\ncpu0 50 2 10 450 3 0 1 1 25 0\n";
        assert_eq!(parse_machine_busy(stat), Some(100 + 5 + 20 + 1 + 2 + 3));
        assert_eq!(parse_machine_busy("cpu0 1 2 3\n"), None);
        let status = "Name:\tzkpipe\nVmHWM:\t  2048 kB\nvoluntary_ctxt_switches:\t7\n";
        assert_eq!(status_field(status, "VmHWM"), Some(2048));
        assert_eq!(status_field(status, "voluntary_ctxt_switches"), Some(7));
        assert_eq!(status_field(status, "nonvoluntary_ctxt_switches"), None);
        // A name with a space and a parenthesis.
        let stat = "77 (a b) c) S 1 77 77 0 -1 4194560 11 0 2 0 30 5 0 0 20 0 3 0";
        let (comm, s) = parse_stat(stat).unwrap();
        assert_eq!(comm, "a b) c");
        assert_eq!(
            s,
            ProcStat {
                minor_faults: 11,
                major_faults: 2,
                user_ticks: 30,
                system_ticks: 5
            }
        );
    }

    #[test]
    fn thread_counts_are_summed_over_the_interval() {
        let t = |group: &str, ticks, voluntary| ThreadSample {
            group: group.into(),
            ticks,
            voluntary,
            involuntary: None,
        };
        let before = BTreeMap::from([
            (1, t("zkpipe-reduce", 100, Some(10))),
            (2, t("zkpipe-reduce", 50, Some(5))),
        ]);
        let after = BTreeMap::from([
            (1, t("zkpipe-reduce", 150, Some(12))),
            (2, t("zkpipe-reduce", 60, Some(9))),
            (3, t("zkpipe-tail", 20, Some(1))), // started during the interval
        ]);
        let g = cpu_by_group(&before, &after);
        assert_eq!(g["zkpipe-reduce"], 0.6);
        assert_eq!(g["zkpipe-tail"], 0.2);
        assert_eq!(thread_sum(&before, &after, |t| t.voluntary), Some(7));
        assert_eq!(thread_sum(&before, &after, |t| t.involuntary), None);
    }

    #[test]
    fn this_process_has_counters_on_linux() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let pid = std::process::id();
        let a = snapshot(pid);
        let b = snapshot(pid);
        let c = counters(&a, &b, peak_rss_bytes(pid), false);
        assert!(c.minor_faults.is_some() && c.user_cpu_s.is_some());
        assert!(c.cpu_s_by_thread.is_some() && c.voluntary_ctxt_switches.is_some());
        assert!(c.peak_rss_bytes.unwrap() > 0);
        assert!(c.machine_cpu_s.is_some());
    }
}
