#!/usr/bin/env bash
# The daemon's receive path for large streamed jobs (lab/experiments/043k-receive-path.md):
# a CPU daemon (one worker per stage) receives jobs of P copies of a witness from
# `zkpipe submit`; per job, the CPU seconds of its tokio threads (the gRPC receive path and
# the staged writes), the whole daemon's CPU seconds until the job is proved (the accept's
# parse runs on rayon's threads), the machine's TLB shootdowns and the submit's wall time.
# Variants differ in GLIBC_TUNABLES and in `zkpipe submit`'s flags (after a '|', e.g.
# --no-pack), interleaved round by round.
#
#   lab/exp043/receive.sh OUT ZKPIPE KEYDIR KEY WTNS P ROUNDS 'NAME=TUNABLES[|FLAGS]' ...
set -euo pipefail
out=${1:?out}; zkpipe=${2:?zkpipe}; keys=${3:?key dir}; key=${4:?key id}; wtns=${5:?wtns}
parts=${6:?partitions}; rounds=${7:?rounds}; shift 7
mkdir -p "$out"; work=$(mktemp -d); trap 'pkill -f "serve --config $work" || true; rm -rf "$work"' EXIT
cat > "$work/z.toml" <<TOML
[server]
grpc_listen = "127.0.0.1:50073"
http_listen = "127.0.0.1:9473"
witness_sync = false
[keys]
dir = "$keys"
checks = "trusted"
[pipeline]
max_partitions_per_job = 64
[reduce]
workers = 1
threads = 1
[device]
workers = 1
threads = 1
[tail]
workers = 1
threads = 1
TOML
export ZKPIPE_SERVER=http://127.0.0.1:50073
tlb() { awk '$1 == "TLB:" { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) n += $i } END { print n + 0 }' /proc/interrupts; }
tokio_ticks() { for t in /proc/"$1"/task/*; do [ "$(cat "$t/comm")" = tokio-rt-worker ] && awk '{ print $14 + $15 }' "$t/stat"; done | awk '{ s += $1 } END { print s + 0 }'; }
ws=(); for _ in $(seq "$parts"); do ws+=("$wtns"); done
hz=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
echo "variant round tokio_cpu_s tlb_shootdowns submit_s daemon_cpu_s job_s" > "$out/receive.tsv"
for r in $(seq "$rounds"); do
  for v in "$@"; do
    name=${v%%=*}; rest=${v#*=}; tunables=${rest%%|*}; flags=()
    [ "$rest" != "$tunables" ] && read -ra flags <<< "${rest#*|}"
    rm -rf "$work/state"
    GLIBC_TUNABLES=$tunables "$zkpipe" serve --config "$work/z.toml" --backend cpu \
      --state-dir "$work/state" > "$out/serve-$name-$r.log" 2>&1 &
    pid=$!
    for _ in $(seq 50); do "$zkpipe" status > /dev/null 2>&1 && break; sleep 0.2; done
    "$zkpipe" preload "$key" > /dev/null
    c0=$(tokio_ticks $pid); d0=$(cpu_ticks $pid); t0=$(tlb); s0=$(date +%s.%N)
    job=$("$zkpipe" submit "${flags[@]}" "$key" "${ws[@]}")
    s1=$(date +%s.%N); c1=$(tokio_ticks $pid); t1=$(tlb)
    "$zkpipe" await "$job" > /dev/null
    s2=$(date +%s.%N); d1=$(cpu_ticks $pid)
    secs() { echo "$1" | bc -l | xargs printf %.2f; }
    echo "$name $r $(secs "($c1 - $c0) / $hz") $((t1 - t0)) $(secs "$s1 - $s0") $(secs "($d1 - $d0) / $hz") $(secs "$s2 - $s0")" >> "$out/receive.tsv"
    kill $pid; wait $pid 2>/dev/null || true
  done
done
cat "$out/receive.tsv"
