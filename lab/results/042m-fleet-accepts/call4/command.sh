#!/usr/bin/env bash
# stop 62 call 4 (2 x H200): one daemon (1 GPU) against two daemons of one GPU each
# (SPLIT=1) on one Postgres, witnesses over 64 KiB in a file:// object store; main's
# binary (l) against this change's (n: witnesses packed, object writes before the
# transaction, and the lease renewal and result writer locking partition rows in one
# order), interleaved, 3 rounds, SHA-256 values (192 clients a daemon x 60 jobs); the
# Postgres server's CPU from /proc.
set -uo pipefail
mkdir -p /tmp/a /tmp/b "$OUT/r" /tmp/work-sha
xz -dc .carry/l/zkpipe.xz > /tmp/a/zkpipe; xz -dc .carry/n/zkpipe.xz > /tmp/b/zkpipe
xz -dc .carry/final/zkpipe-bench.xz > /tmp/a/zkpipe-bench; cp /tmp/a/zkpipe-bench /tmp/b/
chmod +x /tmp/a/* /tmp/b/*
. lab/exp020/pg.sh
pg_carried
pg_start /tmp/pgrun > "$OUT/r/pg.txt" 2>&1
echo "pg rc=$? $PG_URL" >> "$OUT/r/steps.txt"
PG="store.url=$PG_URL store.claim_ahead=384 store.poll=100ms store.inline_max=64KiB store.objects=file:///tmp/objects"
pg_cpu() { for p in $(pgrep -u "${PG_USER:-postgres}"); do awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null; done | awk -v hz="$(getconf CLK_TCK)" '{ s += $1 } END { printf "%.2f\n", s / hz }'; }
( while sleep 5; do echo "$(date +%T) postgres_cpu_s=$(pg_cpu)"; done ) > "$OUT/r/pg-cpu.txt" 2>&1 &
WORK=/tmp/work-sha VALUES=sha256 SETUP_ARGS="--backend cuda" SPLIT=1 SMALL_C=192 SMALL_J=60 SET_A="$PG" SET_B="$PG" \
  timeout 330 lab/exp042/scaling.sh "$OUT/r/sha" /tmp/a /tmp/b 3 "1 2" "main change" > "$OUT/r/sha.log" 2>&1
echo "sha rc=$?" >> "$OUT/r/steps.txt"
kill %1
pg_stop
grep -c "deadlock detected" /tmp/pgrun/postgres.log > "$OUT/r/deadlocks.txt" 2>&1
tail -c 4000 /tmp/pgrun/postgres.log > "$OUT/r/postgres.log.tail" 2>/dev/null
python3 lab/exp042/accepts.py "$OUT"/r/*/*serve*.log > "$OUT/r/accepts.txt" 2>&1
for f in "$OUT"/r/*/*serve*.log; do tail -c 6000 "$f" > "$f.tail"; rm "$f"; done
tar -C "$OUT" -czf "$OUT/c4.tgz" r && rm -rf "$OUT/r"
