#!/usr/bin/env bash
# Device call C1: setup --dev on the GPU. zkpipe-gpu-check's setup part (2^10/13/16 keys of
# both curves, GPU against CPU, byte for byte), then `zkpipe setup --dev --seed 1` on the
# GPU and on the CPU of synth keys (BN254 2^22, BN254 2^24): wall time, peak RSS, and
# whether the two keys are the same file.
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R $B
for f in zkpipe zkpipe-gpu-check; do xz -dc .carry/p/$f.xz > $B/$f; chmod +x $B/$f; done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $R/device.txt 2>&1
nproc >> $R/device.txt; free -g >> $R/device.txt; df -h /tmp >> $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
start=$(date +%s)
( timeout 120 $B/zkpipe-gpu-check 16 3 16 setup; echo "rc=$?" ) > $R/setup-check.txt 2>&1
echo "check done at $(( $(date +%s) - start )) s" >> $R/times.txt
pack
W=/tmp/w; mkdir -p $W
for k in 22 24; do
  d=$W/bn254-$k; mkdir -p $d
  /usr/bin/time -f "synth 2^$k: %e s" $B/zkpipe synth --domain "2^$k" --public 4 --seed 1 $d/c.r1cs $d/c.wtns >> $R/setup.txt 2>&1
  for backend in cuda cpu; do
    /usr/bin/time -f "bn254 2^$k $backend: %e s wall, %U s user, %M KiB peak RSS" \
      timeout 420 $B/zkpipe setup --dev --seed 1 --backend $backend $d/c.r1cs $d/$backend.zkey >> $R/setup.txt 2>&1
    echo "bn254 2^$k $backend rc=$? at $(( $(date +%s) - start )) s" >> $R/times.txt
    pack
  done
  if cmp -s $d/cuda.zkey $d/cpu.zkey; then echo "bn254 2^$k: the two keys are the same file ($(stat -c %s $d/cpu.zkey) bytes)"; else echo "bn254 2^$k: KEYS DIFFER"; fi >> $R/setup.txt
  rm -f $d/*.zkey
done
