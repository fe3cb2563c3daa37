#!/usr/bin/env bash
# Experiment 035 on the GPU machine: runs fp64_field (built here with
# `nvcc -O3 -arch=sm_90 -std=c++17 -I<sppark> -I<blst/src> lab/exp035/fp64_field.cu`,
# carried as .carry/fp64_field), and its SASS instruction mix when cuobjdump is there.
# Usage: lab/exp035/device.sh [repetitions]   (writes under $OUT)
set -uo pipefail
out=${OUT:-/tmp/exp035}; mkdir -p "$out"
bin=.carry/fp64_field
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw --format=csv >"$out/gpu.txt" 2>&1
# SM clock and power once a second while the runs go (the boost clock drops under load).
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv -l 1 >"$out/clocks.csv" 2>&1 &
smi=$!
for r in 1 2; do
  timeout 240 "$bin" "${1:-7}" >"$out/run$r.txt" 2>&1; echo "rc=$?" >>"$out/run$r.txt"
done
kill $smi 2>/dev/null
dump=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
if [ -n "$dump" ]; then
  "$dump" -sass "$bin" >/tmp/sass.txt 2>&1
  # Opcode counts per kernel (the first word of each instruction, modifiers dropped).
  awk '/Function :/ {k=$3} /\/\*[0-9a-f]+\*\// && k ~ /k_mul|k_madd|k_prod|peak/ {
         for (i = 1; i <= NF; i++) if ($i ~ /^[A-Z][A-Z0-9]+(\.|$)/) { split($i, a, "."); c[k" "a[1]]++; break } }
       END { for (x in c) print x, c[x] }' /tmp/sass.txt | sort -k1,1 -k3,3nr >"$out/sass-mix.txt"
else
  echo "no cuobjdump" >"$out/sass-mix.txt"
fi
