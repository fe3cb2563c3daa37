#!/usr/bin/env python3
"""Where a proof's wall time goes, from a daemon's waterfall (Chrome-trace JSON, as
`zkpipe-bench loadtest --trace` writes it): per step (stage or wait), the mean and p50/p90
milliseconds over the partitions in the trace, and each device track's busy share.

    lab/exp042/waterfall.py TRACE.json [TRACE.json ...]
"""
import json
import statistics
import sys


def summary(path):
    events = json.load(open(path))["traceEvents"]
    steps, devices = {}, {}
    for e in events:
        if e.get("ph") != "X":
            continue
        if e["pid"] == 1:
            steps.setdefault(e["name"], []).append(e["dur"] / 1000)
        elif e["pid"] == 2:
            devices.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    print(f"## {path}")
    print("| step | partitions | mean ms | p50 ms | p90 ms |")
    print("|---|---|---|---|---|")
    for name, d in sorted(steps.items(), key=lambda kv: -statistics.mean(kv[1])):
        d.sort()
        print(f"| {name} | {len(d)} | {statistics.mean(d):.2f} | {d[len(d) // 2]:.2f} | {d[int(len(d) * 0.9)]:.2f} |")
    for tid, spans in sorted(devices.items()):
        # Spans of one pass overlap (a batch): the busy time is their union.
        spans.sort()
        busy, end = 0.0, None
        start0 = spans[0][0]
        for s, e in spans:
            if end is None or s > end:
                busy += e - s
                end = e
            elif e > end:
                busy += e - end
                end = e
        print(f"device {tid}: {len(spans)} partitions, busy {100 * busy / (end - start0):.1f}% of its traced span")


for p in sys.argv[1:]:
    summary(p)
