#!/usr/bin/env bash
# `setup --dev` of one circuit by two builds, interleaved (lab/experiments/043o-*.md):
# each run's wall, user CPU and peak RSS, the CLI's own breakdown and each part's time
# (debug log), and whether every key is the same file as the first.
#
#   lab/exp043/setup-ab.sh OUT CURVE LOG ROUNDS SIDE...
#
# SIDE is NAME=BIN_DIR[:BACKEND] (BACKEND cuda unless given), e.g. new=.carry/n
# old=.carry/o cpu=.carry/n:cpu. Round r runs the sides in order, r even in reverse;
# FROM=r starts at round r (a later call going on with the same circuit).
# The circuit (SHA-256 values unless VALUES says otherwise) is synthesized once into
# WORK (default lab/work/setup-ab, git-ignored) by the first side's binary; keys are
# removed after their comparison (a 2^24 BLS12-381 key is 16.4 GB). Everything goes to
# OUT/setup-CURVE-LOG.txt.
set -uo pipefail
out=${1:?output dir}; curve=${2:?curve}; log=${3:?log}; rounds=${4:?rounds}; shift 4
[ $# -ge 1 ] || { echo "setup-ab: no side" >&2; exit 2; }
work=${WORK:-lab/work/setup-ab}
values=${VALUES:-sha256}
mkdir -p "$out" "$work"
f=$out/setup-$curve-$log.txt
d=$work/$curve-$log
first_bin=${1#*=}; first_bin=${first_bin%%:*}
if [ ! -f "$d.r1cs" ]; then
  /usr/bin/time -f "synth $curve 2^$log ($values): %e s, %M KiB" "$first_bin/zkpipe" synth \
    --curve "$curve" --domain "2^$log" --public 4 --seed 1 --values "$values" "$d.r1cs" "$d.wtns" \
    >> "$f" 2>&1 || { echo "synth FAILED" >> "$f"; exit 1; }
  rm -f "$d.wtns"   # the setup reads the circuit only
fi
sides=("$@")
for r in $(seq "${FROM:-1}" "$rounds"); do
  order=("${sides[@]}")
  if [ $((r % 2)) = 0 ]; then
    order=(); for ((i = ${#sides[@]} - 1; i >= 0; i--)); do order+=("${sides[$i]}"); done
  fi
  for side in "${order[@]}"; do
    name=${side%%=*}; spec=${side#*=}; bin=${spec%%:*}; backend=cuda
    [ "$spec" != "$bin" ] && backend=${spec#*:}
    echo "== round $r $name ($bin, --backend $backend)" >> "$f"
    key=$d.$name.zkey
    /usr/bin/time -f "setup $name round $r: %e s wall, %U s user, %M KiB peak RSS" \
      timeout 580 env ZKPIPE_LOG=debug "$bin/zkpipe" setup --dev --seed 1 --backend "$backend" \
      "$d.r1cs" "$key" >> "$f" 2>&1 || echo "setup $name round $r FAILED rc=$?" >> "$f"
    if [ ! -f "$d.first.zkey" ] && [ -f "$key" ]; then
      mv -n "$key" "$d.first.zkey"; echo "setup $name round $r: the first key" >> "$f"
    elif [ -f "$key" ]; then
      if cmp -s "$key" "$d.first.zkey"; then
        echo "setup $name round $r: the same file as the first key ($(stat -c %s "$key") bytes)"
      else echo "setup $name round $r: KEY DIFFERS from the first"; fi >> "$f"
      rm -f "$key"
    fi
  done
done
rm -f "$d.first.zkey"
