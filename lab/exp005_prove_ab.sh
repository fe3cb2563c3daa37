#!/usr/bin/env bash
# Experiment 005: whole proofs with arkworks' MSM (ZKPIPE_CPU_MSM=arkworks) against the
# batch-affine Pippenger, interleaved A B A B. The switch was temporary: build the binary
# at commit b498f14 (branch cpu-msm) and pass it as ZKPIPE=path.
#   ZKPIPE=... lab/exp005_prove_ab.sh DIR ROUNDS THREADS [TAG]
#   (DIR holds bn254.{zkey,wtns} and bls.{zkey,wtns})
# Keys: zkpipe synth X.r1cs X.wtns --domain 2^16 --curve C; zkpipe setup --dev X.r1cs X.zkey --seed 1
set -euo pipefail
dir=$1; rounds=${2:-3}; threads=${3:-2}; tag=${4:-}
z=${ZKPIPE:-target/release/zkpipe}
out=lab/results/exp005-prove-t${threads}${tag}.md
: > "$out"
for round in $(seq 1 "$rounds"); do
  for curve in bn254 bls; do
    for impl in arkworks pippenger; do
      echo "### round $round curve $curve msm $impl" | tee -a "$out"
      if [ "$impl" = arkworks ]; then export ZKPIPE_CPU_MSM=arkworks; else unset ZKPIPE_CPU_MSM; fi
      "$z" bench "$dir/$curve.zkey" "$dir/$curve.wtns" --runs 3 --warmup 1 --trusted-key \
        --threads "$threads" 2>&1 | tee -a "$out" | grep -E "msm|total"
    done
  done
done
unset ZKPIPE_CPU_MSM
