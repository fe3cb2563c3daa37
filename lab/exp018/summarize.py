#!/usr/bin/env python3
"""Summarizes lab/exp018/ab.sh output dirs: per variant and c, s/proof (min/median/max over
rounds), device busy (median), daemon peak RSS (max), job latency p50, and from the kernel
counters the TLB shootdowns, context switches and page faults per proof, and the GPU idle
gaps (count, seconds) from each cell's trace.

    python3 lab/exp018/summarize.py DIR... [--markdown]
"""
import glob
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import waterfall_gaps  # noqa: E402  (lab/, beside this folder)


def kernel(path):
    before, after = {}, {}
    cur = before
    for line in open(path):
        if line.startswith("-- after"):
            cur = after
            continue
        parts = line.replace(":", "").split()
        if len(parts) == 2 and parts[1].isdigit():
            cur[parts[0]] = int(parts[1])
    return {k: after[k] - before[k] for k in before if k in after}


def gaps(trace_path, jobs):
    """GPU idle gaps (count, seconds) of the cell's jobs, as lab/waterfall_gaps.py counts them."""
    if not os.path.exists(trace_path):
        trace_path += ".gz"
    _, device = waterfall_gaps.load(trace_path, jobs)
    g = waterfall_gaps.device_gaps(waterfall_gaps.device_union(device))
    return len(g), sum(b - a for a, b in g) / 1e6


def main():
    md = "--markdown" in sys.argv
    rows = {}
    for d in [a for a in sys.argv[1:] if not a.startswith("--")]:
        for f in sorted(glob.glob(f"{d}/*-r*-c*.json")):
            m = re.search(r"/([A-Za-z0-9_]+)-r(\d+)-c(\d+)\.json$", f)
            if not m:
                continue
            j = json.load(open(f))
            base = f[: -len(".json")]
            k = kernel(base + ".kernel")
            jobs = j["clients"] * j["jobs_per_client"]
            g = gaps(base + ".trace.json", jobs)
            busy = j["device_busy_fraction"][0][1] if j["device_busy_fraction"] else 0
            rows.setdefault((d.rstrip("/").split("/")[-1], m[1], int(m[3])), []).append(
                (j["seconds_per_proof"], busy, j["daemon_peak_rss_bytes"] or 0,
                 j["job_latency_ms"]["p50"], k, j["proofs"], g))
    head = ("run", "variant", "c", "rounds", "s/proof min", "median", "max", "busy",
            "peak RSS GiB", "job p50 s", "GPU gaps", "gap s", "TLB/proof", "minflt/proof")
    print(("| " + " | ".join(head) + " |") if md else "\t".join(head))
    if md:
        print("|" + "---|" * len(head))
    for (run, v, c), xs in sorted(rows.items()):
        sp = [x[0] for x in xs]
        proofs = sum(x[5] for x in xs)
        per = lambda key: sum(x[4].get(key, 0) for x in xs) / proofs
        cells = (run, v, c, len(xs), f"{min(sp):.4f}", f"{statistics.median(sp):.4f}", f"{max(sp):.4f}",
                 f"{statistics.median(x[1] for x in xs) * 100:.1f}%", f"{max(x[2] for x in xs) / 2**30:.1f}",
                 f"{statistics.median(x[3] for x in xs) / 1e3:.1f}",
                 f"{statistics.median(x[6][0] for x in xs):.0f}", f"{statistics.median(x[6][1] for x in xs):.1f}",
                 f"{per('tlb'):.0f}", f"{per('minflt'):.0f}")
        print(("| " + " | ".join(map(str, cells)) + " |") if md else "\t".join(map(str, cells)))


if __name__ == "__main__":
    main()
