#!/usr/bin/env python3
"""A waterfall figure (SVG) of a daemon trace: one row per partition (in the order they were
queued), each span of its life coloured by stage or wait, and above them the device
timeline (the union of device spans) with its idle gaps in red.

    python3 lab/waterfall_svg.py TRACE.json[.gz] OUT.svg [--jobs N] [--title TEXT]

--jobs N keeps the last N jobs of the trace (a daemon trace holds its recent history); by
default all. The trace is `zkpipe-bench loadtest --trace` or a `zkpipe-bench sweep` cell's
`cells/*.trace.json`. Written by hand (an SVG is a few rectangles; no plotting library is
installed on the machines that run the benchmarks).
"""
import argparse
from collections import defaultdict
from xml.sax.saxutils import escape

from waterfall_gaps import device_gaps, device_union, load

# Stages (solid) and waits (light), in the order a partition meets them.
COLOURS = {
    "queued": "#d9d9d9",
    "synthesize_wait": "#fde0c5",
    "synthesize": "#f28e2b",
    "reduce_wait": "#c6dbef",
    "key_load": "#9467bd",
    "reduce": "#4e79a7",
    "device_wait": "#c7e9c0",
    "device": "#59a14f",
    "tail_wait": "#f4c7c3",
    "tail": "#e15759",
}
WIDTH, LEFT, RIGHT, TOP, ROW_MAX, DEVICE_ROW = 1100, 60, 20, 56, 6.0, 14


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--jobs", type=int, default=10**9, help="the last JOBS jobs (one run)")
    ap.add_argument("--title", default="")
    args = ap.parse_args()
    parts, device = load(args.trace, args.jobs)
    if not parts:
        raise SystemExit(f"{args.trace}: no partition spans")
    rows = defaultdict(list)
    for e in parts:
        rows[(e["args"]["job"], e["args"]["partition"])].append(e)
    order = sorted(rows, key=lambda r: min(e["ts"] for e in rows[r]))
    t0 = min(e["ts"] for e in parts)
    t1 = max(e["ts"] + e["dur"] for e in parts)
    span = max(t1 - t0, 1.0)
    row_h = max(1.0, min(ROW_MAX, 600.0 / len(order)))
    plot_w = WIDTH - LEFT - RIGHT
    height = TOP + DEVICE_ROW + 8 + row_h * len(order) + 40

    def x(ts):
        return LEFT + (ts - t0) / span * plot_w

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0f}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="100%" height="100%" fill="white"/>',
        f'<text x="{LEFT}" y="16" font-size="13">{escape(args.title or args.trace)}</text>',
    ]
    merged = device_union(device)
    gaps = device_gaps(merged)
    busy = sum(b - a for a, b in merged)
    idle = sum(b - a for a, b in gaps)
    out.append(
        f'<text x="{LEFT}" y="32">{len(order)} partitions over {span / 1e6:.2f} s; device '
        f"busy {busy / span:.0%} of it; {len(gaps)} idle gaps, {idle / 1e6:.2f} s</text>"
    )
    y = TOP
    out.append(f'<text x="4" y="{y + 10}">device</text>')
    out.append(f'<rect x="{LEFT}" y="{y}" width="{plot_w}" height="{DEVICE_ROW}" fill="#fbb4ae"/>')
    for a, b in merged:
        out.append(
            f'<rect x="{x(a):.2f}" y="{y}" width="{max(x(b) - x(a), 0.3):.2f}" '
            f'height="{DEVICE_ROW}" fill="{COLOURS["device"]}"/>'
        )
    y += DEVICE_ROW + 8
    out.append(f'<text x="4" y="{y + 10}">partitions</text>')
    for i, r in enumerate(order):
        top = y + i * row_h
        for e in rows[r]:
            colour = COLOURS.get(e["name"], "#bab0ac")
            out.append(
                f'<rect x="{x(e["ts"]):.2f}" y="{top:.2f}" '
                f'width="{max(x(e["ts"] + e["dur"]) - x(e["ts"]), 0.2):.2f}" '
                f'height="{row_h:.2f}" fill="{colour}"/>'
            )
    y += row_h * len(order) + 14
    # Time axis: about ten ticks at a round step.
    step = next(s for s in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1e9)
                if span / 1e6 / s <= 10)
    t = 0.0
    while t <= span / 1e6:
        tx = x(t0 + t * 1e6)
        out.append(f'<line x1="{tx:.1f}" y1="{y - 10}" x2="{tx:.1f}" y2="{y - 6}" stroke="black"/>')
        out.append(f'<text x="{tx:.1f}" y="{y + 4}" text-anchor="middle">{t:g} s</text>')
        t += step
    # Legend: only the names present.
    seen = [n for n in COLOURS if any(e["name"] == n for e in parts)]
    lx = LEFT
    for n in seen + ["idle gap"]:
        colour = COLOURS.get(n, "#fbb4ae")
        out.append(f'<rect x="{lx}" y="{y + 12}" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{lx + 14}" y="{y + 21}">{n}</text>')
        lx += 20 + 7 * len(n)
    out.append("</svg>")
    with open(args.out, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
