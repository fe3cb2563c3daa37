#!/usr/bin/env bash
# What a restart costs the daemon when its job store holds big packed witnesses: the time
# from `zkpipe serve` to every unfinished job resumed, and the memory peak by then
# (lab/experiments/042n-resume-packed.md). On a CPU machine.
#
#   lab/exp042/resume_rss.sh DIR ROUNDS NAME=ZKPIPE...
#
# DIR holds keys/k.zkey and w.wtns (its witness, packed by `zkpipe submit`); see the page
# for how they were made. Once: a daemon (the first binary) accepts JOBS jobs (default 8)
# of 10 × w.wtns and is stopped at once (shutdown_grace 0 s), which leaves them in its
# store; the store is copied aside. Then ROUNDS rounds, each binary in turn (order
# reversed every other round): the store is put back, `zkpipe serve` starts on it, and as
# soon as the log shows JOBS "job resumed" lines the script reads VmHWM and kills the
# daemon (kill -9: nothing it proves meanwhile reaches the saved store). WINDOW=S (default
# 0) lets it prove S seconds more before VmHWM is read; SET="a.b=x c.d=y" adds `--set`s
# to every daemon (e.g. memory.host_limit). One line a run:
#   name round ms_to_serving ms_to_resumed vmhwm_kb
set -euo pipefail
dir=$(realpath "${1:?dir}"); rounds=${2:?rounds}; shift 2
names=(); bins=()
for nb in "$@"; do names+=("${nb%%=*}"); bins+=("$(realpath "${nb#*=}")"); done
jobs=${JOBS:-8}
cd "$dir"
grpc=127.0.0.1:50993
sets=(--set server.shutdown_grace=0s)
for s in ${SET:-}; do sets+=(--set "$s"); done
serve() { # bin state log; sets pid
    "$1" serve --key-dir keys --state-dir "$2" --grpc-listen "$grpc" \
        --http-listen 127.0.0.1:9473 "${sets[@]}" > "$3" 2>&1 &
    pid=$!
}
gone() { while kill -0 "$1" 2>/dev/null; do sleep 0.05; done; }
wait_for() { # pattern count log pid (at most 300 s)
    local end=$((SECONDS + 300))
    until [ "$(grep -c "$1" "$3" || true)" -ge "$2" ]; do
        kill -0 "$4" 2>/dev/null || { echo "daemon exited: $(tail -3 "$3")" >&2; exit 1; }
        [ "$SECONDS" -lt "$end" ] || { echo "no $2 \"$1\" in $3" >&2; kill -9 "$4"; exit 1; }
        sleep 0.01
    done
}

rm -rf state saved
serve "${bins[0]}" state accept.log
wait_for "serving" 1 accept.log "$pid"
w=(); for _ in $(seq 10); do w+=(w.wtns); done
for _ in $(seq "$jobs"); do "${bins[0]}" submit k "${w[@]}" --server "http://$grpc" > /dev/null; done
kill -TERM "$pid"; gone "$pid"
grep -q "unfinished jobs kept" accept.log || { echo "the jobs finished before the stop" >&2; exit 1; }
cp -a state saved
echo "# $(du -sb saved | cut -f1) bytes of store, $jobs jobs of 10 partitions"

for r in $(seq "$rounds"); do
    order=$(seq 0 $((${#bins[@]} - 1))); [ $((r % 2)) -eq 0 ] && order=$(echo "$order" | tac)
    for i in $order; do
        rm -rf state; cp -a saved state
        t0=$(date +%s%N)
        serve "${bins[$i]}" state run.log
        wait_for "serving" 1 run.log "$pid"; t1=$(date +%s%N)
        wait_for "job resumed" "$jobs" run.log "$pid"; t2=$(date +%s%N)
        sleep "${WINDOW:-0}"
        hwm=$(awk '/VmHWM/{print $2}' "/proc/$pid/status")
        { kill -9 "$pid"; wait "$pid"; } 2>/dev/null || true
        echo "${names[$i]} $r $(( (t1 - t0) / 1000000 )) $(( (t2 - t0) / 1000000 )) $hwm"
    done
done
