#!/usr/bin/env python3
"""CPU time per thread group of a running process, for the per-proof host budget.

  thread_cpu.py snapshot PID > before.json     (every thread's user+system ticks, by name)
  thread_cpu.py diff before.json after.json PROOFS [WALL_S]

A group is a thread's name (/proc/PID/task/TID/comm) with its trailing number removed
(zkpipe-tail-3 -> zkpipe-tail); threads that ended between the snapshots are counted
in 'ended' (their time is gone from /proc). The diff prints, per group, CPU seconds,
CPU milliseconds per proof and the average cores busy over WALL_S.
"""
import json
import os
import re
import sys


def snapshot(pid):
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # Fields after the name: state is 3rd overall, utime 14th, stime 15th.
        utime, stime = int(fields[11]), int(fields[12])
        out[tid] = {"name": name, "cpu_s": (utime + stime) / tick}
    return out


def group(name):
    return re.sub(r"[-_ ]?\d+$", "", name) or name


def diff(before, after, proofs, wall):
    groups = {}
    for tid, t in after.items():
        was = before.get(tid, {"cpu_s": 0.0})["cpu_s"]
        g = group(t["name"])
        groups[g] = groups.get(g, 0.0) + t["cpu_s"] - was
    gone = sum(t["cpu_s"] for tid, t in before.items() if tid not in after)
    if gone:
        groups["ended (before-snapshot time only)"] = -gone
    total = sum(v for v in groups.values() if v > 0)
    print(f"| thread group | CPU s | CPU ms/proof | cores busy |")
    print(f"|---|---|---|---|")
    for g, v in sorted(groups.items(), key=lambda kv: -kv[1]):
        if abs(v) < 0.005:
            continue
        cores = f"{v / wall:.2f}" if wall else "-"
        print(f"| {g} | {v:.2f} | {1000 * v / proofs:.3f} | {cores} |")
    cores = f"{total / wall:.2f}" if wall else "-"
    print(f"| **all** | {total:.2f} | {1000 * total / proofs:.3f} | {cores} |")


if __name__ == "__main__":
    if sys.argv[1] == "snapshot":
        json.dump(snapshot(int(sys.argv[2])), sys.stdout)
    elif sys.argv[1] == "diff":
        load = lambda p: json.load(open(p))
        wall = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
        diff(load(sys.argv[2]), load(sys.argv[3]), int(sys.argv[4]), wall)
    else:
        sys.exit(__doc__)
