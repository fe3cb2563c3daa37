#!/usr/bin/env bash
# stop 62 call 3 (2 x H200): one daemon (1 GPU) against two daemons of one GPU each
# (SPLIT=1) on one Postgres, witnesses over 64 KiB in a file:// object store; main's
# binary (l) against this change's (n: witnesses stored packed, object writes before the
# transaction), interleaved, 3 rounds: SHA-256 values (192 clients a daemon x 60 jobs),
# then random values (192 x 40).
set -uo pipefail
mkdir -p /tmp/a /tmp/b "$OUT/r" /tmp/work-sha /tmp/work-rand
xz -dc .carry/l/zkpipe.xz > /tmp/a/zkpipe; xz -dc .carry/n/zkpipe.xz > /tmp/b/zkpipe
xz -dc .carry/final/zkpipe-bench.xz > /tmp/a/zkpipe-bench; cp /tmp/a/zkpipe-bench /tmp/b/
chmod +x /tmp/a/* /tmp/b/*
. lab/exp020/pg.sh
pg_carried
pg_start /tmp/pgrun > "$OUT/r/pg.txt" 2>&1
echo "pg rc=$? $PG_URL" >> "$OUT/r/steps.txt"
PG="store.url=$PG_URL store.claim_ahead=384 store.poll=100ms store.inline_max=64KiB store.objects=file:///tmp/objects"
WORK=/tmp/work-sha VALUES=sha256 SETUP_ARGS="--backend cuda" SPLIT=1 SMALL_C=192 SMALL_J=60 SET_A="$PG" SET_B="$PG" \
  timeout 300 lab/exp042/scaling.sh "$OUT/r/sha" /tmp/a /tmp/b 3 "1 2" "main change" > "$OUT/r/sha.log" 2>&1
echo "sha rc=$?" >> "$OUT/r/steps.txt"
WORK=/tmp/work-rand SETUP_ARGS="--backend cuda" SPLIT=1 SMALL_C=192 SMALL_J=40 SET_A="$PG" SET_B="$PG" \
  timeout 240 lab/exp042/scaling.sh "$OUT/r/rand" /tmp/a /tmp/b 3 "1 2" "main change" > "$OUT/r/rand.log" 2>&1
echo "rand rc=$?" >> "$OUT/r/steps.txt"
pg_stop
tail -c 4000 /tmp/pgrun/postgres.log > "$OUT/r/postgres.log.tail" 2>/dev/null
python3 lab/exp042/accepts.py "$OUT"/r/*/*serve*.log > "$OUT/r/accepts.txt" 2>&1
for f in "$OUT"/r/*/*serve*.log; do tail -c 6000 "$f" > "$f.tail"; rm "$f"; done
tar -C "$OUT" -czf "$OUT/c3.tgz" r && rm -rf "$OUT/r"
