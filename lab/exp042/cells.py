#!/usr/bin/env python3
"""A table of scaling.sh's cells: per label and GPU count, proofs/s min / median / max over
the rounds, and medians of the daemon's CPU per proof, the host's busy cores and what the
rest of the host (the load tool) took per proof, and the host's steal time (CPU the
hypervisor gave other guests) per cell where logged.

  lab/exp042/cells.py OUT_DIR/summary.txt [...]
"""
import re
import statistics
import sys

LINE = re.compile(
    r"^(?P<label>\S+)-g(?P<g>\d+)-(?P<cell>small|big)-r(?P<r>\d+) c=(?P<c>\d+): .*?"
    r"(?P<proofs>\d+) proofs in (?P<wall>[\d.]+) s.*?(?P<rate>[\d.]+) proofs/s"
    r" daemon_cpu_s=(?P<daemon>[\d.]+)(?: tlb_shootdowns=\d+)?"
    r"(?: host_busy_cpu_s=(?P<host>[\d.]+)(?: host_steal_s=(?P<steal>[\d.]+))? host_cores=(?P<cores>\d+))?"
)


def main(paths):
    cells = {}
    for path in paths:
        for line in open(path):
            m = LINE.match(line.strip())
            if not m:
                continue
            key = (m["label"], int(m["g"]), m["cell"], int(m["c"]))
            cells.setdefault(key, []).append(m)
    print("| variant | GPUs | clients | proofs/s min / median / max | daemon CPU ms/proof | host busy cores | rest of host ms/proof | steal s | rounds |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (label, g, cell, c), ms in cells.items():
        rates = sorted(float(m["rate"]) for m in ms)
        daemon = statistics.median(float(m["daemon"]) * 1000 / int(m["proofs"]) for m in ms)
        hosts = [m for m in ms if m["host"]]
        busy = rest = steal = "–"
        if hosts:
            busy = f"{statistics.median(float(m['host']) / float(m['wall']) for m in hosts):.1f} of {hosts[0]['cores']}"
            rest = f"{statistics.median((float(m['host']) - float(m['daemon'])) * 1000 / int(m['proofs']) for m in hosts):.2f}"
        steals = [float(m["steal"]) for m in ms if m["steal"]]
        if steals:
            steal = f"{min(steals):.1f}–{max(steals):.1f}"
        print(f"| {label} | {g} | {c} | {rates[0]:,.0f} / {statistics.median(rates):,.0f} / {rates[-1]:,.0f} | {daemon:.2f} | {busy} | {rest} | {steal} | {len(ms)} |")


if __name__ == "__main__":
    main(sys.argv[1:])
