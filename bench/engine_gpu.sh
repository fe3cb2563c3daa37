#!/usr/bin/env bash
# Issue 5's measurements on the GPU machine: the daemon with its device stage on GPU 0.
#
#   bench/engine_gpu.sh OUT_DIR [BIN_DIR=target/cuda/release] [CLIENTS_BIG="1 4 16"] [CLIENTS_SMALL="1 16 64"]
#
# Workloads (made there): a 2^20-constraint BN254 dev key with 4-partition jobs, and a
# 2^14 one with 1-partition jobs; `zkpipe loadtest` against `zkpipe serve --backend cuda`.
# Writes OUT_DIR/{big,small}-c<C>.{txt,json}, OUT_DIR/big-c<last>.trace.json, serve.log,
# status.txt.
set -euo pipefail
out=${1:?output dir}
bin=${2:-target/cuda/release}
big=${3:-1 4 16}
small=${4:-1 16 64}
mkdir -p "$out"
work=$(mktemp -d)
mkdir -p "$work/keys"
for k in 20 14; do
  "$bin/zkpipe" synth --domain "2^$k" --public 4 --seed 1 "$work/c$k.r1cs" "$work/w$k.wtns" 2>/dev/null
  "$bin/zkpipe" setup --dev --seed 1 "$work/c$k.r1cs" "$work/keys/k$k.zkey" 2>/dev/null
done
cat > "$work/zkpipe.toml" <<TOML
[server]
grpc_listen = "127.0.0.1:50651"
http_listen = "127.0.0.1:9664"
max_request_bytes = "1GiB"
[keys]
dir = "keys"
checks = "trusted"
TOML
"$bin/zkpipe" serve --config "$work/zkpipe.toml" --backend cuda > "$out/serve.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do grep -q serving "$out/serve.log" && break; sleep 0.2; done
export ZKPIPE_SERVER=http://127.0.0.1:50651
"$bin/zkpipe" preload k20
"$bin/zkpipe" preload k14
last=$(echo $big | awk '{print $NF}')
for c in $big; do
  jobs=$(( c >= 16 ? 2 : (c >= 4 ? 4 : 8) ))
  trace=(); [ "$c" = "$last" ] && trace=(--trace "$out/big-c$c.trace.json")
  "$bin/zkpipe" loadtest k20 "$work/w20.wtns" -c "$c" -j "$jobs" -p 4 --json "$out/big-c$c.json" "${trace[@]}" > "$out/big-c$c.txt"
  echo "2^20 x4 partitions, c=$c:"; cat "$out/big-c$c.txt"
done
for c in $small; do
  jobs=$(( c >= 64 ? 8 : (c >= 16 ? 16 : 64) ))
  "$bin/zkpipe" loadtest k14 "$work/w14.wtns" -c "$c" -j "$jobs" -p 1 --json "$out/small-c$c.json" > "$out/small-c$c.txt"
  echo "2^14, c=$c:"; cat "$out/small-c$c.txt"
done
"$bin/zkpipe" status > "$out/status.txt" || true
