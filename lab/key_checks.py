#!/usr/bin/env python3
"""Experiment 002: cost of validating a key's points when it is loaded, per mode
(per-point, batched, trusted), runs interleaved, on the 2^16 bench keys of both curves.

    python3 lab/key_checks.py [--runs 5]

Needs lab/work/<curve>/dev.zkey (lab/snarkjs_vs_zkpipe.py makes them).
Writes lab/results/key-checks.{md,json}.
"""
import argparse, json, re, statistics, subprocess, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ZKPIPE = ROOT / "target/release/zkpipe"
MODES = ["per-point", "batched", "trusted"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    res = {}
    for curve in ["bn254", "bls12-381"]:
        w = ROOT / "lab/work" / curve
        for i in range(a.runs):
            for mode in MODES:
                t0 = time.time()
                r = subprocess.run([ZKPIPE, "prove", w / "dev.zkey", w / "witness.wtns", "/tmp/kc-proof.json",
                                    "/tmp/kc-public.json", "--timings", "--key-checks", mode],
                                   capture_output=True, text=True, check=True)
                wall = time.time() - t0
                load = float(re.search(r"(?:key_load|load_key)\s+([\d.]+) ms", r.stderr).group(1))
                d = res.setdefault(curve, {}).setdefault(mode, {"load_key_ms": [], "wall_s": []})
                d["load_key_ms"].append(load)
                d["wall_s"].append(wall)
    lines = ["# 002: key point checks at load, per mode", "",
             f"`python3 lab/key_checks.py --runs {a.runs}`; 2^16 bench keys (poseidon chain, dev setup); "
             "this 2-core VM; `zkpipe prove --timings --key-checks MODE`, modes interleaved.", "",
             "| curve | mode | load_key min ms | median | max | whole prove median s |", "|---|---|---:|---:|---:|---:|"]
    for curve, modes in res.items():
        for mode in MODES:
            l = modes[mode]["load_key_ms"]
            lines.append(f"| {curve} | {mode} | {min(l):.0f} | {statistics.median(l):.0f} | {max(l):.0f} | "
                         f"{statistics.median(modes[mode]['wall_s']):.2f} |")
    md = "\n".join(lines) + "\n"
    (ROOT / "lab/results/key-checks.md").write_text(md)
    (ROOT / "lab/results/key-checks.json").write_text(json.dumps(res, indent=1))
    print(md)


if __name__ == "__main__":
    main()
