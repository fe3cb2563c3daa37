#!/usr/bin/env bash
# Experiment 013: two zkpipe binaries, A and B, proving the 2^16 bench keys with the
# default key checks, interleaved A B A B; wall time and peak RSS from /usr/bin/time -v,
# key_load from --timings; every proof verified against the key's vk.
#   lab/exp013_key_checks_ab.sh A_BIN B_BIN ROUNDS OUT.txt
# Needs lab/work/<curve>/{dev.zkey,witness.wtns,vk.json} (lab/snarkjs_vs_zkpipe.py makes them).
set -euo pipefail
a=$1; b=$2; rounds=${3:-5}; out=${4:?output file}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "# curve bin round wall_s peak_rss_mib load_key_ms" > "$out"
for round in $(seq 1 "$rounds"); do
  for curve in bn254 bls12-381; do
    w=lab/work/$curve
    for bin in A B; do
      z=$a; [ $bin = B ] && z=$b
      /usr/bin/time -v "$z" prove --timings "$w/dev.zkey" "$w/witness.wtns" \
        "$tmp/proof.json" "$tmp/public.json" 2> "$tmp/log"
      "$z" verify "$w/vk.json" "$tmp/public.json" "$tmp/proof.json" > /dev/null
      wall=$(grep "Elapsed (wall" "$tmp/log" | awk -F': ' '{split($2,t,":"); print t[1]*60+t[2]}')
      rss=$(grep "Maximum resident" "$tmp/log" | awk '{printf "%.1f", $6/1024}')
      lk=$(grep -E "^ *(key_load|load_key)" "$tmp/log" | awk '{print $2}')
      echo "$curve $bin $round $wall $rss $lk" | tee -a "$out"
    done
  done
done
python3 - "$out" <<'PY' | tee -a "$out"
import sys, statistics
rows = [l.split() for l in open(sys.argv[1]) if l[0].isalnum()]
print("| curve | bin | wall s min / median / max | peak RSS MiB min / median / max | load_key ms min / median / max |")
print("|---|---|---|---|---|")
for curve in ["bn254", "bls12-381"]:
    for b in "AB":
        r = [x for x in rows if x[0] == curve and x[1] == b]
        f = lambda i: "%s / %s / %s" % tuple(round(v, 2) for v in (min(float(x[i]) for x in r), statistics.median(float(x[i]) for x in r), max(float(x[i]) for x in r)))
        print(f"| {curve} | {b} | {f(3)} | {f(4)} | {f(5)} |")
PY
