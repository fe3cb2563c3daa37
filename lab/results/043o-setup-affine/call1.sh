#!/usr/bin/env bash
# Lab 043o call 1: GPU setup's points made affine on the device. Correctness (gpu-check's
# setup checks, keys new == old == cpu at 2^16 on both curves, fixtures' keys cuda == cpu,
# proved and verified), then BLS12-381 2^24 new vs old, rounds 1-2.
set -u
R=$OUT/r; N=/tmp/n; O=/tmp/o; mkdir -p $R $N $O /tmp/w
for b in zkpipe zkpipe-bench zkpipe-gpu-check; do xz -dc .carry/n/$b.xz > $N/$b; chmod +x $N/$b; done
xz -dc .carry/o/zkpipe.xz > $O/zkpipe; chmod +x $O/zkpipe
trap 'tar czf $OUT/r.tgz -C $OUT r' EXIT
{ nvidia-smi; nproc; free -g; df -h /tmp; } > $R/machine.txt 2>&1
echo "$(date +%T) gpu-check" >> $R/log
timeout 100 $N/zkpipe-gpu-check 16 3 16 setup > $R/gpu-check-setup.txt 2>&1; echo "gpu-check rc=$?" >> $R/log
for c in bn254 bls12-381; do
  echo "$(date +%T) setup-ab $c 16" >> $R/log
  WORK=/tmp/w timeout 120 lab/exp043/setup-ab.sh $R $c 16 1 new=$N old=$O cpu=$N:cpu
done
echo "$(date +%T) fixtures" >> $R/log
for c in bn254 bls12-381; do for fx in poseidon multi_public; do
  d=tests/fixtures/$c/$fx; k=/tmp/w/$c-$fx
  { echo "== $c $fx"
    $N/zkpipe setup --dev --seed 7 --backend cuda $d/circuit.r1cs $k.cuda.zkey 2>&1 | tail -1
    $N/zkpipe setup --dev --seed 7 --backend cpu $d/circuit.r1cs $k.cpu.zkey 2>&1 | tail -1
    cmp $k.cuda.zkey $k.cpu.zkey && echo "cuda key == cpu key"
    $N/zkpipe prove --backend cuda $k.cuda.zkey $d/witness.wtns $k.proof.json $k.public.json && echo proved
    $N/zkpipe export-vk $k.cuda.zkey $k.vk.json
    $N/zkpipe verify $k.vk.json $k.public.json $k.proof.json
  } >> $R/fixtures.txt 2>&1
done; done
echo "$(date +%T) 2^24" >> $R/log
WORK=/tmp/w timeout 400 lab/exp043/setup-ab.sh $R bls12-381 24 2 new=$N old=$O
echo "$(date +%T) done" >> $R/log
df -h /tmp >> $R/machine.txt
