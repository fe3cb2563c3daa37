#!/usr/bin/env python3
"""Min / median / max over rounds of `zkpipe-bench loadtest --json` results named
<workload>-c<C>-r<R>.json (as lab/exp017_inputs_gpu.sh writes them), as a Markdown table:
proofs/s, job latency p50 (ms), device busy (%).

    python3 lab/loadtest_summary.py DIR [DIR ...]
"""
import glob
import json
import os
import re
import statistics
import sys

NAME = re.compile(r"(?P<workload>.+)-c(?P<c>\d+)-r(?P<r>\d+)\.json$")


def mmm(xs, fmt):
    return " / ".join(fmt.format(x) for x in (min(xs), statistics.median(xs), max(xs)))


def main():
    runs = {}
    for d in sys.argv[1:]:
        for path in glob.glob(os.path.join(d, "*-c*-r*.json")):
            m = NAME.search(os.path.basename(path))
            if not m:
                continue
            r = json.load(open(path))
            runs.setdefault((m["workload"], int(m["c"])), []).append(r)
    print("| workload | c | rounds | proofs per run | proofs/s min / median / max "
          "| p50 latency ms | device busy % |")
    print("|---|---:|---:|---:|---|---|---|")
    for (w, c), rs in sorted(runs.items(), key=lambda kv: (kv[0][0].split("-")[0], kv[0][1], kv[0][0])):
        failed = sum(r["failed_jobs"] for r in rs)
        note = f" ({failed} failed jobs)" if failed else ""
        print(f"| {w}{note} | {c} | {len(rs)} | {rs[0]['proofs']} "
              f"| {mmm([r['proofs_per_second'] for r in rs], '{:.1f}')} "
              f"| {mmm([r['job_latency_ms']['p50'] for r in rs], '{:.0f}')} "
              f"| {mmm([100 * r['device_busy_fraction'][0][1] for r in rs], '{:.0f}')} |")


if __name__ == "__main__":
    main()
