#!/usr/bin/env python3
"""What the GPU waits on: reads a daemon trace (`zkpipe-bench loadtest --trace`, Chrome trace JSON)
and, for the last N jobs in it (one loadtest run), reports

  - the median time per stage and wait (synthesize, reduce, device, tail; *_wait),
  - device busy time over the run's window,
  - every gap in the device timeline (between the spans that hold the GPU), and what the
    partitions were doing during it, sampled at 20 instants per gap; each instant goes to
    the furthest-along state any partition was in: in the device stage or waiting for it
    (the GPU was not starved: the gap is the device stage's own host-side turnover), else
    reduce, else synthesis, else admission, else nothing in flight. Time is charged to
    synthesis only when no partition was past synthesis.

    python3 lab/waterfall_gaps.py TRACE.json JOBS [--json OUT.json] [--keep OUT.trace.json]

--keep writes the trace of just those jobs (the daemon's trace holds its recent history), for
Perfetto / chrome://tracing.
"""
import argparse
import bisect
import gzip
import json
import statistics

SAMPLES = 20


def job_of(e):
    """The job an event belongs to: partition spans carry it in args, device spans in
    their name ("job 12 part 0"), thread names in args.name."""
    if e.get("ph") == "X":
        return e["args"]["job"] if e["pid"] == 1 else int(e["name"].split()[1])
    name = e.get("args", {}).get("name", "")
    return int(name.split()[1]) if name.startswith("job ") else None


def load(path, jobs, keep_path=None):
    """The partition spans and device spans of the last `jobs` jobs in the trace at `path`
    (plain or gzipped JSON)."""
    trace = json.load(gzip.open(path) if path.endswith(".gz") else open(path))
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    ids = sorted({e["args"]["job"] for e in events if e["pid"] == 1})
    keep = set(ids[-jobs:])
    parts = [e for e in events if e["pid"] == 1 and job_of(e) in keep]
    device = [e for e in events if e["pid"] == 2 and job_of(e) in keep]
    if keep_path:
        trace["traceEvents"] = [e for e in trace["traceEvents"]
                                if job_of(e) is None or job_of(e) in keep]
        json.dump(trace, open(keep_path, "w"))
    return parts, device


def device_union(device):
    """The union of device spans as [start, end] pairs in time order (several device
    workers may overlap on one GPU)."""
    merged = []
    for s, e in sorted((e["ts"], e["ts"] + e["dur"]) for e in device):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return merged


def device_gaps(merged):
    """The idle stretches (start, end) between the merged device spans."""
    return [(a[1], b[0]) for a, b in zip(merged, merged[1:]) if b[0] > a[1]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("jobs", type=int, help="the last JOBS jobs in the trace (one run)")
    ap.add_argument("--json", help="write the summary here")
    ap.add_argument("--keep", help="write the trace of just these jobs here")
    args = ap.parse_args()
    path, jobs = args.trace, args.jobs
    parts, device = load(path, jobs, args.keep)
    t0 = min(e["ts"] for e in parts)
    t1 = max(e["ts"] + e["dur"] for e in parts)
    merged = device_union(device)
    busy = sum(e - s for s, e in merged)
    first_dev, last_dev = merged[0][0], merged[-1][1]
    gaps = device_gaps(merged)
    by_name = {}
    for e in parts:
        by_name.setdefault(e["name"], []).append(e)
    starts = {n: sorted((e["ts"], e["ts"] + e["dur"]) for e in es) for n, es in by_name.items()}

    def at(name, t):
        """How many `name` spans contain the instant t."""
        iv = starts.get(name, [])
        i = bisect.bisect_right(iv, (t, float("inf")))
        return sum(1 for s, e in iv[:i] if e > t)

    # Each gap is sampled at SAMPLES instants; each sample is charged to the furthest-along
    # state any partition was in at that instant (in the device stage or ready for it, then
    # reduce, synthesis, admission).
    causes = [
        ("device stage (work was ready)", ["device_wait", "device"]),
        ("reduce", ["reduce", "reduce_wait", "key_load"]),
        ("synthesis", ["synthesize", "synthesize_wait"]),
        ("admission (queued)", ["queue_wait", "queued"]),
    ]
    charge = {c: 0.0 for c, _ in causes}
    charge["nothing in flight"] = 0.0
    for a, b in gaps:
        for k in range(SAMPLES):
            t = a + (b - a) * (k + 0.5) / SAMPLES
            cause = next((c for c, names in causes if any(at(n, t) for n in names)),
                         "nothing in flight")
            charge[cause] += (b - a) / SAMPLES
    med = {n: statistics.median(e["dur"] for e in es) / 1000 for n, es in by_name.items()}
    gap_total = sum(b - a for a, b in gaps)
    out = {
        "trace": path, "jobs": jobs, "partitions": len(by_name.get("device", [])),
        "window_ms": (t1 - t0) / 1000,
        "device_window_ms": (last_dev - first_dev) / 1000,
        "device_busy_ms": busy / 1000,
        "device_busy_in_device_window": busy / (last_dev - first_dev),
        "device_gaps": len(gaps), "device_gap_ms": gap_total / 1000,
        "gap_ms_by_cause": {k: round(v / 1000, 2) for k, v in charge.items()},
        "median_ms": {k: round(v, 3) for k, v in sorted(med.items())},
    }
    print(f"{path}: last {jobs} jobs, {out['partitions']} partitions")
    print(f"  window {out['window_ms']:.0f} ms; device from first to last span "
          f"{out['device_window_ms']:.0f} ms, busy {out['device_busy_ms']:.0f} ms "
          f"({100 * out['device_busy_in_device_window']:.1f}%)")
    print(f"  {len(gaps)} device gaps, {out['device_gap_ms']:.1f} ms in all, by what the "
          f"next partitions were doing:")
    for k, v in out["gap_ms_by_cause"].items():
        print(f"    {k:36s} {v:9.2f} ms")
    print("  median per partition (ms): " + ", ".join(
        f"{k} {v:.2f}" for k, v in out["median_ms"].items()))
    if args.json:
        json.dump(out, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
