#!/usr/bin/env python3
"""Where a job's time goes inside a daemon, from its log (experiment 020).

    lab/exp020/timeline.py DIR/*.serve.log[.xz] ...

Reads the lines a daemon logs for every job of one partition (the sweep's jobs):
"job accepted" (with `ms`, the submit call up to it), "partition claimed" (a fleet's
daemon, at debug level), "stage done" for reduce, device and tail, "partition recorded in
the shared store" or "job done", and "job awaited" (debug level of zkpipe_engine::control).
Prints, per log, the median / mean / p90 milliseconds of each step, and how many jobs
were in each step on average (Little's law: rate x mean time), which says where the
clients' jobs wait in a closed loop.
"""
import lzma
import re
import statistics
import sys
from datetime import datetime

STEPS = [
    ("submit", None),  # the `ms` field of the accepted line
    ("accepted", "claimed"),
    ("claimed", "reduce"),
    ("reduce", "device"),
    ("device", "tail"),
    ("tail", "recorded"),
    ("recorded", "awaited"),
]


def stamp(line):
    return datetime.strptime(line[:26], "%Y-%m-%dT%H:%M:%S.%f").timestamp()


def events(path):
    opener = lzma.open if path.endswith(".xz") else open
    jobs = {}
    with opener(path, "rt") as f:
        for line in f:
            m = re.search(r" job=(\d+)", line)
            if not m:
                continue
            j = jobs.setdefault(int(m.group(1)), {})
            t = stamp(line)
            if "job accepted" in line:
                j["accepted"] = t
                ms = re.search(r" ms=([\d.]+)", line)
                if ms:
                    j["submit_ms"] = float(ms.group(1))
            elif "partition claimed" in line:
                j["claimed"] = t
            elif 'stage="reduce"' in line:
                j["reduce"] = t
            elif 'stage="device"' in line:
                j["device"] = t
            elif 'stage="tail"' in line:
                j["tail"] = t
            elif "partition recorded" in line or ("job done" in line and "recorded" not in j):
                j["recorded"] = t
            elif "job awaited" in line:
                j["awaited"] = t
    # A local job has no claim: it is "claimed" when accepted.
    for j in jobs.values():
        if "claimed" not in j and "accepted" in j:
            j["claimed"] = j["accepted"]
    return jobs


def report(path):
    jobs = events(path)
    done = [j for j in jobs.values() if "accepted" in j and "recorded" in j]
    if not done:
        print(f"{path}: no finished jobs")
        return
    # The time some job was in the daemon (the sweep's cells, not the gaps between them).
    span, end = 0.0, None
    for a, b in sorted((j["accepted"], j["recorded"]) for j in done):
        if end is None or a > end:
            span += b - a
            end = b
        elif b > end:
            span += b - end
            end = b
    rate = len(done) / span if span > 0 else float("nan")
    print(f"{path}: {len(done)} jobs, {rate:.0f} jobs/s while any was in the daemon")
    print(f"  {'step':<22}{'median':>8}{'mean':>8}{'p90':>8}{'jobs in it':>12}")
    for a, b in STEPS:
        if b is None:
            xs = [j["submit_ms"] for j in done if "submit_ms" in j]
            name = "submit (until accepted)"
        else:
            xs = [(j[b] - j[a]) * 1e3 for j in done if a in j and b in j]
            name = f"{a} -> {b}"
        if not xs:
            continue
        xs.sort()
        mean = statistics.mean(xs)
        print(
            f"  {name:<22}{statistics.median(xs):8.1f}{mean:8.1f}"
            f"{xs[int(0.9 * (len(xs) - 1))]:8.1f}{rate * mean / 1e3:12.1f}"
        )


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in sys.argv[1:]:
        report(p)
