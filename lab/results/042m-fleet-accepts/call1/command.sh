#!/usr/bin/env bash
# stop 62 call 1 (2 x H200): the state disk alone (disk.sh); small proofs (2^14, SHA-256
# values, 192 clients a daemon x 60 jobs) from one daemon and two daemons of one GPU each
# (SPLIT=1), embedded stores against one Postgres (witnesses over 64 KiB in a file://
# object store), interleaved, 3 rounds.
set -uo pipefail
mkdir -p /tmp/b "$OUT/r" /tmp/work
xz -dc .carry/l/zkpipe.xz > /tmp/b/zkpipe; xz -dc .carry/final/zkpipe-bench.xz > /tmp/b/zkpipe-bench
chmod +x /tmp/b/*
nproc > "$OUT/r/machine.txt"; df -h /tmp >> "$OUT/r/machine.txt"; nvidia-smi -L >> "$OUT/r/machine.txt"
timeout 90 lab/exp042/disk.sh /tmp/work/disk "1 2 4 8" > "$OUT/r/disk.txt" 2>&1
echo "disk rc=$?" >> "$OUT/r/steps.txt"
. lab/exp020/pg.sh
pg_carried
pg_start /tmp/pgrun > "$OUT/r/pg.txt" 2>&1
echo "pg rc=$? $PG_URL" >> "$OUT/r/steps.txt"
PG="store.url=$PG_URL store.claim_ahead=384 store.poll=100ms store.inline_max=64KiB store.objects=file:///tmp/work/objects"
WORK=/tmp/work VALUES=sha256 SETUP_ARGS="--backend cuda" SPLIT=1 SMALL_C=192 SMALL_J=60 SET_B="$PG" \
  timeout 440 lab/exp042/scaling.sh "$OUT/r/pg" /tmp/b /tmp/b 3 "1 2" "embedded postgres" > "$OUT/r/pg.log" 2>&1
echo "scaling rc=$?" >> "$OUT/r/steps.txt"
pg_stop
tail -c 4000 /tmp/pgrun/postgres.log > "$OUT/r/postgres.log.tail" 2>/dev/null
python3 lab/exp042/accepts.py "$OUT"/r/pg/*serve*.log > "$OUT/r/accepts.txt" 2>&1
for f in "$OUT"/r/*/*serve*.log; do tail -c 6000 "$f" > "$f.tail"; rm "$f"; done
tar -C "$OUT" -czf "$OUT/c1.tgz" r && rm -rf "$OUT/r"
