#!/usr/bin/env python3
"""What the GPU waits on: reads a daemon trace (`zkpipe loadtest --trace`, Chrome trace JSON)
and, for the last N jobs in it (one loadtest run), reports

  - the median time per stage and wait (synthesize, reduce, device, tail; *_wait),
  - device busy time over the run's window,
  - every gap in the device timeline, and what the partitions still to be proved were doing
    during it: ready in device_wait (so the device was not starved: the gap is the device
    stage's own turnover), or upstream (queued, synthesize_wait, synthesize, reduce_wait,
    reduce). A gap is charged to synthesis only when no partition was ready for the device
    and at least one was in synthesize or waiting for it.

    python3 bench/waterfall_gaps.py TRACE.json JOBS [--json OUT.json]
"""
import bisect
import json
import statistics
import sys

UPSTREAM = ["queued", "synthesize_wait", "synthesize", "reduce_wait", "key_load", "reduce"]


def load(path, jobs):
    events = [e for e in json.load(open(path))["traceEvents"] if e.get("ph") == "X"]
    ids = sorted({e["args"]["job"] for e in events if e["pid"] == 1})
    keep = set(ids[-jobs:])
    parts = [e for e in events if e["pid"] == 1 and e["args"]["job"] in keep]
    device = [e for e in events if e["pid"] == 2
              and int(e["name"].split()[1]) in keep]
    return parts, device


def main():
    path, jobs = sys.argv[1], int(sys.argv[2])
    parts, device = load(path, jobs)
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in device)
    t0 = min(e["ts"] for e in parts)
    t1 = max(e["ts"] + e["dur"] for e in parts)
    # Union of device spans (several device workers may overlap on one GPU).
    merged = []
    for s, e in spans:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    busy = sum(e - s for s, e in merged)
    first_dev, last_dev = merged[0][0], merged[-1][1]
    gaps = [(a[1], b[0]) for a, b in zip(merged, merged[1:]) if b[0] > a[1]]
    by_name = {}
    for e in parts:
        by_name.setdefault(e["name"], []).append(e)
    starts = {n: sorted((e["ts"], e["ts"] + e["dur"]) for e in es) for n, es in by_name.items()}

    def active(name, a, b):
        """How many `name` spans overlap [a, b)."""
        iv = starts.get(name, [])
        i = bisect.bisect_left(iv, (b, b))
        return sum(1 for s, e in iv[:i] if e > a)

    charge = {"device turnover (work was ready)": 0.0, "synthesis": 0.0,
              "reduce": 0.0, "admission (queued)": 0.0, "nothing in flight": 0.0}
    for a, b in gaps:
        if active("device_wait", a, b) or active("device", a, b):
            charge["device turnover (work was ready)"] += b - a
        elif active("synthesize", a, b) or active("synthesize_wait", a, b):
            charge["synthesis"] += b - a
        elif active("reduce", a, b) or active("reduce_wait", a, b) or active("key_load", a, b):
            charge["reduce"] += b - a
        elif active("queued", a, b):
            charge["admission (queued)"] += b - a
        else:
            charge["nothing in flight"] += b - a
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
    if len(sys.argv) > 4 and sys.argv[3] == "--json":
        json.dump(out, open(sys.argv[4], "w"), indent=1)


if __name__ == "__main__":
    main()
