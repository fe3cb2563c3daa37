#!/usr/bin/env python3
"""Where a daemon's accepts spent their time: p50 / p90 / max of each field of its
"job accepted" log lines (ms, parse_ms, lock_wait_ms, record_ms, sync_ms), per serve log.

  lab/exp042/accepts.py SERVE_LOG [...]
"""
import re
import sys

FIELD = re.compile(r" (\w*ms)=([\d.]+)")


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))] if values else float("nan")


def main(paths):
    for path in paths:
        fields = {}
        with open(path, errors="replace") as f:
            for line in f:
                if "job accepted" not in line:
                    continue
                for name, value in FIELD.findall(line):
                    fields.setdefault(name, []).append(float(value))
        n = len(fields.get("ms", []))
        parts = [f"{k} {pct(v, 0.5):.1f}/{pct(v, 0.9):.1f}/{max(v):.1f}" for k, v in fields.items()]
        print(f"{path}: {n} accepts, p50/p90/max ms: " + ", ".join(parts))


if __name__ == "__main__":
    main(sys.argv[1:])
