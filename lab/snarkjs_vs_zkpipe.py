#!/usr/bin/env python3
"""CPU prove time and peak RSS of zkpipe vs `snarkjs groth16 prove` on the same key and
witness, runs interleaved (snarkjs, zkpipe, zkpipe --trusted-key) on the same machine.

    python3 lab/snarkjs_vs_zkpipe.py [--runs 5] [--curves bn254,bls12-381]

Inputs: the ~60k-constraint Poseidon chain (lab/circuits), a development key from
`zkpipe setup --dev`. Every proof is checked with `snarkjs groth16 verify`.
Writes lab/results/snarkjs-vs-zkpipe-<curve>-<tag>.{md,json}; prints the markdown.
"""
import argparse, json, os, platform, re, statistics, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNARKJS = ROOT / "tests/fixtures/node_modules/.bin/snarkjs"
ZKPIPE = ROOT / "target/release/zkpipe"
SNARKJS_CURVE = {"bn254": "bn128", "bls12-381": "bls12381"}


def run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True, **kw)


def timed(cmd):
    """Wall seconds and peak RSS (MiB) of one command, via /usr/bin/time -v."""
    r = subprocess.run(["/usr/bin/time", "-v"] + [str(c) for c in cmd], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, cmd))}\n{r.stdout}{r.stderr}")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", r.stderr).group(1)
    secs = sum(float(p) * 60 ** i for i, p in enumerate(reversed(wall.split(":"))))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1)) / 1024
    stages = {m.group(1): float(m.group(2)) for m in re.finditer(r"^\s+(\w+)\s+([\d.]+) ms$", r.stderr, re.M)}
    return secs, rss, stages


def summary(xs):
    return {"min": min(xs), "median": statistics.median(xs), "max": max(xs)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--curves", default="bn254,bls12-381")
    ap.add_argument("--tag", required=True, help="names the result files, e.g. run3")
    ap.add_argument("--portable", action="store_true",
                    help="also run zkpipe with ZKPIPE_NO_IFMA=1 (the MSM without AVX-512 IFMA lanes)")
    a = ap.parse_args()
    run(["cargo", "build", "--release", "--locked", "--bin", "zkpipe"], cwd=ROOT)
    for curve in a.curves.split(","):
        w = ROOT / "lab/work" / curve
        if not (w / "circuit.r1cs").exists():
            run(["bash", ROOT / "lab/circuits/build.sh", SNARKJS_CURVE[curve], w])
        key = w / "dev.zkey"
        if not key.exists():
            t0 = time.time()
            run([ZKPIPE, "setup", "--dev", w / "circuit.r1cs", key, "--seed", "1"])
            print(f"{curve}: setup --dev {time.time() - t0:.1f} s", file=sys.stderr)
        vk = w / "vk.json"
        run([SNARKJS, "zkey", "export", "verificationkey", key, vk])
        wtns = w / "witness.wtns"
        tools = {
            "snarkjs groth16 prove": lambda o: [SNARKJS, "groth16", "prove", key, wtns, o / "proof.json", o / "public.json"],
            "zkpipe prove": lambda o: [ZKPIPE, "prove", key, wtns, o / "proof.json", o / "public.json", "--timings"],
            "zkpipe prove --trusted-key": lambda o: [ZKPIPE, "prove", key, wtns, o / "proof.json", o / "public.json", "--timings", "--trusted-key"],
        }
        if a.portable:
            portable = ["env", "ZKPIPE_NO_IFMA=1"]
            tools["zkpipe prove, ZKPIPE_NO_IFMA=1"] = lambda o: portable + tools["zkpipe prove"](o)
            tools["zkpipe prove --trusted-key, ZKPIPE_NO_IFMA=1"] = lambda o: portable + tools["zkpipe prove --trusted-key"](o)
        res = {t: {"wall_s": [], "rss_mib": [], "stages": []} for t in tools}
        out = w / "out"
        out.mkdir(exist_ok=True)
        for i in range(a.runs):
            for name, cmd in tools.items():
                secs, rss, stages = timed(cmd(out))
                res[name]["wall_s"].append(secs)
                res[name]["rss_mib"].append(rss)
                res[name]["stages"].append(stages)
                v = run([SNARKJS, "groth16", "verify", vk, out / "public.json", out / "proof.json"])
                assert "OK" in v.stdout, f"snarkjs rejected the proof of {name}: {v.stdout}"
                print(f"{curve} run {i + 1}: {name}: {secs:.2f} s, {rss:.0f} MiB", file=sys.stderr)
        zkey_mib = key.stat().st_size / 2**20
        info = run([ZKPIPE, "inspect", key]).stdout
        cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
        flags = next((l.split(":", 1)[1].split() for l in open("/proc/cpuinfo") if l.startswith("flags")), [])
        cpu += ", AVX-512 IFMA" if "avx512ifma" in flags else ", no AVX-512 IFMA"
        lines = [
            f"# snarkjs vs zkpipe, CPU prove, {curve}",
            "",
            f"- machine: {platform.node()}, {os.cpu_count()} cores ({cpu}), {platform.system()} {platform.release()}",
            f"- circuit: lab/circuits/poseidon_chain_64k.circom; key: `zkpipe setup --dev --seed 1`, {zkey_mib:.1f} MiB",
            "- " + ", ".join(l.strip() for l in info.splitlines() if l.split(":")[0] in ("nVars", "nPublic", "domain size", "coefficients")),
            f"- {a.runs} runs each, interleaved; wall time and peak RSS from /usr/bin/time -v; every proof verified by snarkjs",
            f"- command: `python3 lab/snarkjs_vs_zkpipe.py --runs {a.runs} --curves {curve} --tag {a.tag}{' --portable' if a.portable else ''}`",
            "",
            "| tool | min s | median s | max s | median peak RSS MiB | speed-up vs snarkjs (median) |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        base = statistics.median(res["snarkjs groth16 prove"]["wall_s"])
        for name, r in res.items():
            s = summary(r["wall_s"])
            lines.append(f"| {name} | {s['min']:.2f} | {s['median']:.2f} | {s['max']:.2f} | {statistics.median(r['rss_mib']):.0f} | {base / s['median']:.1f}× |")
        lines += ["", f"RSS budget (issue 2): 1.5 × zkey + 64 MiB = {1.5 * zkey_mib + 64:.0f} MiB", "",
                  "zkpipe per-stage medians (ms, from --timings):", "",
                  "| stage | zkpipe prove | zkpipe prove --trusted-key |", "|---|---:|---:|"]
        names = list(res["zkpipe prove"]["stages"][0].keys())
        for st in names:
            med = [statistics.median(s[st] for s in res[t]["stages"]) for t in ("zkpipe prove", "zkpipe prove --trusted-key")]
            lines.append(f"| {st} | {med[0]:.1f} | {med[1]:.1f} |")
        md = "\n".join(lines) + "\n"
        (ROOT / "lab/results").mkdir(exist_ok=True)
        (ROOT / f"lab/results/snarkjs-vs-zkpipe-{curve}-{a.tag}.md").write_text(md)
        (ROOT / f"lab/results/snarkjs-vs-zkpipe-{curve}-{a.tag}.json").write_text(json.dumps({"curve": curve, "zkey_mib": zkey_mib, "results": res}, indent=1))
        print(md)


if __name__ == "__main__":
    main()
