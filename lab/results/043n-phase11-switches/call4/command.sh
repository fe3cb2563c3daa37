#!/usr/bin/env bash
# Lab 043n, call 4: the device budget after the fix (free at open), on one H200; the
# daemon's host-wait line (5e2c110); a streamed fixture proof; the seam check.
set -u
B=/tmp/b; mkdir -p $B $OUT/r; R=$OUT/r
for b in zkpipe zkpipe-gpu-check; do xz -dc .carry/p/$b.xz > $B/$b; chmod +x $B/$b; done
pack() { tar czf $OUT/r.tgz -C $OUT r; rm -rf $R; }
trap pack EXIT
nvidia-smi --query-gpu=memory.total,memory.used,memory.free --format=csv > $R/smi.txt
W=/tmp/v; mkdir -p $W/keys; cp tests/fixtures/bn254/multi_public/circuit.zkey $W/keys/mp.zkey
for lim in auto 8GiB 1TiB; do
  cat > $W/c.toml <<TOML
[server]
grpc_listen = "127.0.0.1:50071"
http_listen = "127.0.0.1:50072"
state_dir = "$W/state-$lim"
[keys]
dir = "$W/keys"
[memory]
device_limit = "$lim"
TOML
  $B/zkpipe serve --config $W/c.toml --backend cuda > $R/serve-$lim.log 2>&1 & p=$!
  for i in $(seq 50); do $B/zkpipe status --server http://127.0.0.1:50071 > /dev/null 2>&1 && break; sleep 0.2; done
  $B/zkpipe status --server http://127.0.0.1:50071 --json > $R/status-$lim.json 2>&1
  $B/zkpipe status --server http://127.0.0.1:50071 > $R/status-$lim.txt 2>&1
  nvidia-smi --query-gpu=memory.used --format=csv,noheader >> $R/smi.txt
  kill $p; wait $p
done
F=tests/fixtures/bn254/multi_public
for l in 1MiB 8MiB 64MiB; do
  timeout 60 $B/zkpipe prove --backend cuda --device-limit $l --timings $F/circuit.zkey $F/witness.wtns $R/p-$l.json $R/pub-$l.json >> $R/prove-stream.txt 2>&1; echo "$l rc $?" >> $R/prove-stream.txt
  timeout 60 $B/zkpipe verify $F/verification_key.json $R/pub-$l.json $R/p-$l.json >> $R/prove-stream.txt 2>&1; echo "$l verify rc $?" >> $R/prove-stream.txt
done
timeout 150 $B/zkpipe-gpu-check 16 3 16 seam > $R/seam.txt 2>&1; echo "rc $?" >> $R/seam.txt
