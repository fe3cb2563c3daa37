#!/usr/bin/env bash
# Lab 043n, what each device call ran (one H200, 16 cores; main's LAB=1 CUDA build at
# c2242294 in .carry/p, the machine kept warm across the three calls so the key and the
# list of cells done stayed):
# calls 1 and 2:
T=560 CELL_S=70 bash lab/exp043/phase11.sh
# call 3: the last three cells, then the CPU's setup of the same 2^24 BLS12-381 key (the
# GPU's is in call1/key-bls12-381-24.txt)
T=170 CELL_S=55 bash lab/exp043/phase11.sh; B=/tmp/b; W=lab/work/regime; f=$OUT/setup-cpu.txt
/usr/bin/time -f "synth: %e s" $B/zkpipe synth --curve bls12-381 --domain 2^24 --public 4 --seed 1 \
  --values sha256 $W/s.r1cs $W/s.wtns > $f 2>&1
left=$((585 - SECONDS)); echo "left $left" >> $f
ZKPIPE_LOG=debug /usr/bin/time -f "setup cpu: %e s wall, %U s user, %M KiB" timeout $left \
  $B/zkpipe setup --dev --seed 1 --backend cpu $W/s.r1cs $W/s.zkey >> $f 2>&1
echo "rc $?" >> $f; rm -f $W/s.zkey $W/s.r1cs $W/s.wtns
