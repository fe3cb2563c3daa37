#!/usr/bin/env python3
"""Where a daemon's batched passes spent their wall time, from its serve log under
ZKPIPE_CUDA_PASS_TRACE=1: per GPU, the passes, their mean size, and p50 / p90 of the
quotient phase and the MSM phase (ms), each also per proof; then p50 of the MSMs' ends
(plan_w, a, b1, b2, c, h: ms from the w plan's start), for passes of every size and for
passes of MIN_K..MAX_K proofs (default 24..36, the full passes of a 2^14 cell).

  lab/exp042/passes.py SERVE_LOG [...]      (MIN_K / MAX_K in the environment)
"""
import os
import re
import sys

from accepts import pct  # this folder's: one percentile rule for the lab's log readers

PASS = re.compile(r"pass trace: gpu=(\d+) k=(\d+) quotients=([\d.]+) msms=([\d.]+) ms")
MSMS = re.compile(r"pass trace: k=(\d+) plan_w=([\d.]+) a=([\d.]+) b1=([\d.]+) b2=([\d.-]+) c=([\d.]+) h=([\d.]+)")


def main(paths):
    lo, hi = int(os.environ.get("MIN_K", 24)), int(os.environ.get("MAX_K", 36))
    for path in paths:
        by_gpu, msms = {}, []
        with open(path, errors="replace") as f:
            for line in f:
                m = PASS.search(line)
                if m:
                    g, k, q, t = int(m[1]), int(m[2]), float(m[3]), float(m[4])
                    by_gpu.setdefault(g, []).append((k, q, t))
                    continue
                m = MSMS.search(line)
                if m:
                    msms.append([int(m[1])] + [float(x) if x != "-" else float("nan") for x in m.groups()[1:]])
        print(f"{path}:")
        for g, passes in sorted(by_gpu.items()):
            proofs = sum(k for k, _, _ in passes)
            full = [p for p in passes if lo <= p[0] <= hi]
            line = (
                f"  gpu {g}: {len(passes)} passes, {proofs} proofs, mean k {proofs / len(passes):.1f}; "
                f"all passes: quotients {sum(q for _, q, _ in passes) / proofs:.3f} ms/proof, "
                f"msms {sum(t for _, _, t in passes) / proofs:.3f} ms/proof"
            )
            if full:
                line += (
                    f"; k {lo}-{hi} ({len(full)}): quotients p50/p90 {pct([q for _, q, _ in full], .5):.2f}/"
                    f"{pct([q for _, q, _ in full], .9):.2f}, msms {pct([t for _, _, t in full], .5):.2f}/"
                    f"{pct([t for _, _, t in full], .9):.2f} ms a pass"
                )
            print(line)
        for label, rows in (("all", msms), (f"k {lo}-{hi}", [r for r in msms if lo <= r[0] <= hi])):
            if rows:
                names = ["plan_w", "a", "b1", "b2", "c", "h"]
                ends = ", ".join(f"{n} {pct([r[i + 1] for r in rows], .5):.2f}" for i, n in enumerate(names))
                print(f"  msm ends p50, {label} ({len(rows)} passes): {ends} ms")


if __name__ == "__main__":
    main(sys.argv[1:])
