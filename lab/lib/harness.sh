# The lab scripts' one shared harness, sourced by them (`. "$(dirname "$0")/lib/harness.sh"`
# from lab/, `../lib/harness.sh` from lab/expNNN/): the machine's description, dev keys,
# the daemon's config, and a log line. The caller sets $out (results) and $work (scratch);
# key() also reads $bin (the zkpipe binary).

work_dir() { # sets $work: $WORK, kept for the next call on the same machine (its keys),
  # or a temporary folder removed on exit; the daemons are stopped on exit either way
  if [ -n "${WORK:-}" ]; then
    work=$WORK; mkdir -p "$work"
    trap 'pkill -f "zkpipe serve" 2>/dev/null || true' EXIT
  else
    work=$(mktemp -d)
    trap 'pkill -f "zkpipe serve" 2>/dev/null || true; rm -rf "$work"' EXIT
  fi
}

# log: a time-stamped line on stdout and in $out/steps.log (unless the caller has its own)
declare -F log >/dev/null || log() {
  echo "[$(date +%T)] $*" | tee -a "$out/steps.log"
}

machine_info() { # FILE: the GPUs (when there are any), the CPU and the disk
  { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true
    echo "$(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
    df -h "$work" | tail -1; } > "$1"
}

dev_keys() { # ZKPIPE K...: BN254 dev keys of 2^K constraints, $work/keys/kK.zkey, with
  # their circuits $work/cK.r1cs and witnesses $work/wK.wtns (synth + setup --dev, seed 1;
  # VALUES=sha256 makes a circom SHA-256 circuit's values, 0s and 1s, instead of random ones;
  # SETUP_ARGS adds to setup's, e.g. "--backend cuda": the same key, made on the GPU)
  local zkpipe=$1 k; shift
  mkdir -p "$work/keys"
  for k in "$@"; do
    # Kept from an earlier call in the same work folder (WORK=...): the same seed.
    [ -e "$work/keys/k$k.zkey" ] && [ -e "$work/w$k.wtns" ] && continue
    "$zkpipe" synth --domain "2^$k" --public 4 --seed 1 ${VALUES:+--values "$VALUES"} "$work/c$k.r1cs" "$work/w$k.wtns" 2>/dev/null
    # shellcheck disable=SC2086 # SETUP_ARGS is words
    "$zkpipe" setup --dev --seed 1 ${SETUP_ARGS:-} "$work/c$k.r1cs" "$work/keys/k$k.zkey" 2>/dev/null
  done
}

key() { # name curve log2-domain: synth + setup --dev, unless $work/keys/name.zkey exists
  local name=$1 curve=$2 k=$3
  if [ ! -e "$work/keys/$name.zkey" ]; then
    log "synth + setup --dev $name ($curve 2^$k)"
    "$bin" synth --curve "$curve" --domain "2^$k" --public 4 --seed 1 "$work/$name.r1cs" "$work/keys/$name.wtns" 2>>"$out/steps.log"
    "$bin" setup --dev --seed 1 "$work/$name.r1cs" "$work/keys/$name.zkey" 2>>"$out/steps.log"
    rm -f "$work/$name.r1cs"
  fi
}

daemon_config() { # GRPC_PORT HTTP_PORT [EXTRA_TOML]: $work/zkpipe.toml for the keys in
  # $work/keys, trusted (the lab measures proving, not key checks); the client
  # commands reach it through ZKPIPE_SERVER
  cat > "$work/zkpipe.toml" <<TOML
[server]
grpc_listen = "127.0.0.1:$1"
http_listen = "127.0.0.1:$2"
max_request_bytes = "1GiB"
[keys]
dir = "keys"
checks = "trusted"
${3:-}
TOML
  export ZKPIPE_SERVER=http://127.0.0.1:$1
}

small_daemon_config() { # the 2^14 key, trusted, and a queue deep enough for full batches
  key bn14 bn254 14
  cat > "$work/zkpipe.toml" <<TOML
[keys]
dir = "$work/keys"
checks = "trusted"
[pipeline]
queue_depth = 64
TOML
}
