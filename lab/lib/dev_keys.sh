# Sourced by the device bench scripts (lab/exp019/run.sh, lab/exp020/run.sh): dev keys
# made on the GPU machine, and the daemon config their 2^14 sweeps use. The caller sets
# $bin (the zkpipe binary), $work (keys in $work/keys), $out (steps.log) and log().

key() { # name curve log2-domain: synth + setup --dev, unless $work/keys/name.zkey exists
  local name=$1 curve=$2 k=$3
  if [ ! -e "$work/keys/$name.zkey" ]; then
    log "synth + setup --dev $name ($curve 2^$k)"
    "$bin" synth --curve "$curve" --domain "2^$k" --public 4 --seed 1 "$work/$name.r1cs" "$work/keys/$name.wtns" 2>>"$out/steps.log"
    "$bin" setup --dev --seed 1 "$work/$name.r1cs" "$work/keys/$name.zkey" 2>>"$out/steps.log"
    rm -f "$work/$name.r1cs"
  fi
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
