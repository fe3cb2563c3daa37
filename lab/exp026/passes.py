#!/usr/bin/env python3
"""Experiment 026: device passes and store stalls in `zkpipe-bench sweep` cell traces.

    lab/exp026/passes.py CELL.trace.json[.xz] ...

For each cell trace (Chrome-trace JSON from `sweep --out DIR`, DIR/cells/), prints:
- passes: how many device passes ran, and per pass size (partitions sharing one span of
  process 2, the device track) the count and median duration: "size:count x median ms";
- record: median, p99 and max of the `record` spans (a proof's job-store write and
  sync), and the stalls: clusters of records over 15 ms (start ms into the cell,
  longest ms, how many);
- gaps: the longest idle gaps of the device, and what the partitions were doing in the
  longest (span-milliseconds of each span name overlapping it).
"""
import collections
import json
import lzma
import statistics
import sys


def load(path):
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt") as f:
        return json.load(f)["traceEvents"]


def main(paths):
    for path in paths:
        ev = [e for e in load(path) if e.get("ph") == "X"]
        dev = collections.Counter((e["ts"], e["dur"]) for e in ev if e["pid"] == 2)
        by_size = collections.defaultdict(list)
        for (_, dur), n in dev.items():
            by_size[n].append(dur / 1000)
        sizes = " ".join(
            f"{n}:{len(v)}x{statistics.median(v):.1f}ms" for n, v in sorted(by_size.items()) if len(v) >= 3
        )
        print(f"{path}\n  passes {len(dev)}: {sizes}")
        rec = [(e["ts"], e["dur"] / 1000) for e in ev if e["name"] == "record"]
        if rec:
            t0 = min(t for t, _ in rec)
            durs = sorted(d for _, d in rec)
            stalls = []
            for t, d in sorted(rec):
                if d <= 15:
                    continue
                at = (t - t0) / 1000
                if stalls and at - stalls[-1][0] < 100:
                    stalls[-1][1] = max(stalls[-1][1], d)
                    stalls[-1][2] += 1
                else:
                    stalls.append([at, d, 1])
            print(
                f"  record p50 {statistics.median(durs):.1f} p99 {durs[int(len(durs) * 0.99)]:.1f} "
                f"max {durs[-1]:.1f} ms; stalls (at ms, longest ms, records): "
                + (", ".join(f"({a:.0f}, {m:.0f}, {n})" for a, m, n in stalls) or "none")
            )
        spans = sorted(set((t, t + d) for t, d in dev))
        gaps, end = [], spans[0][1] if spans else 0
        for s, e in spans[1:]:
            if s > end:
                gaps.append((s - end, end, s))
            end = max(end, e)
        gaps.sort(reverse=True)
        if gaps:
            g, a, b = gaps[0]
            busy = collections.Counter()
            for e in ev:
                if e["pid"] == 1:
                    overlap = min(e["ts"] + e["dur"], b) - max(e["ts"], a)
                    if overlap > 0:
                        busy[e["name"]] += overlap / 1000
            top = ", ".join(f"{k} {v:.0f}" for k, v in busy.most_common(5))
            print(
                "  device gaps, longest ms: "
                + ", ".join(f"{x / 1000:.1f}" for x, _, _ in gaps[:5])
                + f"; in the longest (span-ms): {top}"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
