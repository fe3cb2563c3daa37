#!/usr/bin/env bash
# Device call C2: setup --dev on the GPU with G2 on the CPU. zkpipe-gpu-check's setup part
# (the probe of single multiplications, then 2^10/13/16 keys of both curves byte for byte
# against the CPU), then `zkpipe setup --dev --seed 1` of a synth BN254 2^22 circuit on the
# GPU and on the CPU: wall time, peak RSS, and whether the two keys are the same file.
set -u
R=$OUT/r; B=/tmp/b; mkdir -p $R $B
for f in zkpipe zkpipe-gpu-check; do xz -dc .carry/p/$f.xz > $B/$f; chmod +x $B/$f; done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $R/device.txt 2>&1
nproc >> $R/device.txt
pack() { tar czf $OUT/r.tgz -C $OUT r; }
trap pack EXIT
start=$(date +%s)
( timeout 120 $B/zkpipe-gpu-check 16 3 16 setup; echo "rc=$?" ) > $R/setup-check.txt 2>&1
echo "check done at $(( $(date +%s) - start )) s" >> $R/times.txt
pack
W=/tmp/w; d=$W/bn254-22; mkdir -p $d
/usr/bin/time -f "synth 2^22: %e s" $B/zkpipe synth --domain "2^22" --public 4 --seed 1 $d/c.r1cs $d/c.wtns >> $R/setup.txt 2>&1
for backend in cuda cpu; do
  /usr/bin/time -f "bn254 2^22 $backend: %e s wall, %U s user, %M KiB peak RSS" \
    timeout 200 $B/zkpipe setup --dev --seed 1 --backend $backend $d/c.r1cs $d/$backend.zkey >> $R/setup.txt 2>&1
  echo "bn254 2^22 $backend rc=$? at $(( $(date +%s) - start )) s" >> $R/times.txt
  pack
done
if cmp -s $d/cuda.zkey $d/cpu.zkey; then echo "bn254 2^22: the two keys are the same file ($(stat -c %s $d/cpu.zkey) bytes)"; else echo "bn254 2^22: KEYS DIFFER"; fi >> $R/setup.txt
