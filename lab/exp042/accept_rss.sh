#!/usr/bin/env bash
# The daemon's memory while it accepts N big streamed jobs at once (issue 42 item 2, on a
# CPU machine; lab/experiments/042f-staged-witnesses.md).
#
#   lab/exp042/accept_rss.sh ZKPIPE DIR [N=6]
#
# DIR holds zkpipe.toml (a daemon config whose server.grpc_listen is 127.0.0.1:50991 and
# whose keys.dir holds k20.zkey) and w20.wtns (the key's witness): `zkpipe synth --domain
# 2^20 --public 4 --seed 1 c20.r1cs w20.wtns` and `zkpipe setup --dev --seed 1 c20.r1cs
# keys/k20.zkey`. Starts the daemon (fresh state in DIR/zkpipe-state), preloads k20, sends
# N jobs of 10 × w20.wtns at once (`zkpipe submit --stream always`), and prints RSS after
# the preload and after every accept (VmHWM is the peak so far), each job's accept log
# line, and the peaks of the 0.2 s samples (VmRSS RssAnon RssFile, kB) while the daemon
# accepts and then proves. SUBMIT_FLAGS replaces `--stream always` (e.g. "--stream never
# --no-pack": unary requests of plain .wtns files). WINDOW=S (default 3) is how long it
# watches after the last accept.
set -euo pipefail
bin=$(realpath "${1:?zkpipe binary}"); dir=${2:?dir}; n=${3:-6}
cd "$dir"; rm -rf zkpipe-state; trace=$(mktemp)
server=http://127.0.0.1:50991
ZKPIPE_STATE_DIR=$PWD/zkpipe-state "$bin" serve --config zkpipe.toml > serve.log 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$trace"' EXIT
for _ in $(seq 50); do grep -q serving serve.log && break; sleep 0.2; done
"$bin" preload k20 --server "$server" > /dev/null
mem() { grep -E 'VmRSS|VmHWM' "/proc/$pid/status" | tr -s ' \t' ' ' | tr '\n' ' '; }
echo "after preload: $(mem)"
w=(); for _ in $(seq 10); do w+=(w20.wtns); done
t0=$(date +%s%N); subs=()
read -r -a flags <<< "${SUBMIT_FLAGS:---stream always}"
for j in $(seq "$n"); do "$bin" submit k20 "${w[@]}" --server "$server" "${flags[@]}" > /dev/null & subs+=($!); done
( while kill -0 "$pid" 2>/dev/null; do
    awk '/VmRSS/{r=$2} /RssAnon/{a=$2} /RssFile/{f=$2} END{print r, a, f}' "/proc/$pid/status" 2>/dev/null || true
    sleep 0.2; done ) > "$trace" &
wait "${subs[@]}"
echo "after $n accepts ($(( ($(date +%s%N) - t0) / 1000000 )) ms): $(mem)"
grep "job accepted" serve.log | sed 's/.*job accepted//'
sleep "${WINDOW:-3}"; echo "${WINDOW:-3} s later: $(mem)"
kill "$pid"; wait "$pid" 2>/dev/null || true
echo "peak VmRSS sample (VmRSS RssAnon RssFile kB): $(sort -n -k1 "$trace" | tail -1); peak RssAnon sample: $(sort -n -k2 "$trace" | tail -1)"
