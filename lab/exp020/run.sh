#!/usr/bin/env bash
# Issue 18's measurements (experiment 020): the fleet's shared Postgres job store.
#
#   lab/exp020/run.sh STEP OUT_DIR
#
# Postgres: a throwaway server per call (lab/exp020/pg.sh; $PG_BIN or Debian's
# /usr/lib/postgresql/*/bin; on the GPU machine, .carry/pg.tar.xz unpacked). Binaries:
# $ZKPIPE (default target/release/zkpipe, else .carry/zkpipe.xz; zkpipe-bench beside it,
# else .carry/zkpipe-bench.xz) and $FLEET_CLAIMS
# (default target/release/examples/fleet_claims). STEP:
#   claims  fleet_claims: claims/s with DAEMONS simulated daemons (default 1,4,16,64), claim
#           batches of 1 and 8, no-op backend; then one job's store time, embedded vs
#           Postgres.
#   sweep   `zkpipe-bench sweep` of KEY (default: the 2^14 dev key, made if missing; another must
#           be in $WORK/keys) at C (default 64) with the embedded store and with Postgres,
#           interleaved, ROUNDS rounds (default 3);
#           BACKEND cpu|cuda (default cuda), JOBS per client (default 16); PG_ENV adds
#           settings to the Postgres variants, ALL_ENV to every variant (e.g.
#           env.ZKPIPE_LOG=...); OBJECTS=1 adds a third variant, `pg-objects`, whose
#           witnesses go to a file:// object store instead of Postgres rows.
set -euo pipefail
step=${1:?step}; out=${2:?out}
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-lab/work/fleet}
mkdir -p "$out" "$work/keys" "$work/bin"
work=$(cd "$work" && pwd); out=$(cd "$out" && pwd)
log() { echo "[$(date +%T)] $*" | tee -a "$out/steps.log"; }
trap 'echo "run.sh: line $LINENO failed: $BASH_COMMAND" >&2' ERR

bin=${ZKPIPE:-target/release/zkpipe}
if [ ! -x "$bin" ] && [ -e .carry/zkpipe.xz ]; then xz -dc .carry/zkpipe.xz > "$work/bin/zkpipe"; chmod +x "$work/bin/zkpipe"; bin=$work/bin/zkpipe; fi
# The lab's binary, beside zkpipe (cargo and scripts/build-cuda.sh build both there).
bench=$(dirname "$bin")/zkpipe-bench
if [ ! -x "$bench" ] && [ -e .carry/zkpipe-bench.xz ]; then xz -dc .carry/zkpipe-bench.xz > "$bench"; chmod +x "$bench"; fi
claims_bin=${FLEET_CLAIMS:-target/release/examples/fleet_claims}
if [ ! -x "$claims_bin" ] && [ -e .carry/fleet_claims.xz ]; then xz -dc .carry/fleet_claims.xz > "$work/bin/fleet_claims"; chmod +x "$work/bin/fleet_claims"; claims_bin=$work/bin/fleet_claims; fi
# shellcheck source=pg.sh
. "$here/pg.sh"
pg_carried
# shellcheck source=../lib/harness.sh
. "$here/../lib/harness.sh"
pg_start "/tmp/zkpipe-pg-run-$$"
trap pg_stop EXIT
log "postgres at $PG_URL ($("$(pg_bin)/postgres" --version))"
log "machine: $(nproc) cores, $(uname -r)"

case $step in
claims)
  log "fleet_claims daemons=${DAEMONS:-1,4,16,64}"
  "$claims_bin" --url "$PG_URL" --daemons "${DAEMONS:-1,4,16,64}" --batch 1,8 \
    --jobs "${JOBS:-4000}" --witness "${WITNESS:-65536}" --rounds "${ROUNDS:-3}" | tee "$out/claims.tsv"
  ;;
sweep)
  small_daemon_config
  key=${KEY:-bn14}
  [ -e "$work/keys/$key.zkey" ] || { echo "run.sh: no key $work/keys/$key.zkey (KEY names one there)" >&2; exit 2; }
  c=${C:-64}
  all=${ALL_ENV:+$ALL_ENV; }
  pg="$all${PG_ENV:+$PG_ENV; }store.url=$PG_URL; store.daemon=sweep; store.claim_ahead=$((2 * c)); store.poll=100ms"
  variants=(--variant "embedded: $all" --variant "postgres: $pg")
  if [ "${OBJECTS:-0}" = 1 ]; then
    # A server of its own: the daemons of all variants run at once, and one that shared
    # the other's queue would claim its jobs.
    first_url=$PG_URL first_dir=$PG_DIR
    pg_start "/tmp/zkpipe-pg-run-$$-objects"
    pg2="${pg/$first_url/$PG_URL}" second_dir=$PG_DIR
    trap 'pg_stop; PG_DIR=$second_dir pg_stop' EXIT
    PG_URL=$first_url PG_DIR=$first_dir
    rm -rf "$work/objects"
    variants+=(--variant "pg-objects: $pg2; store.inline_max=65536; store.objects=file://$work/objects")
  fi
  log "sweep $key c=$c ${variants[*]}"
  timeout "${SWEEP_TIMEOUT:-540}" "$bench" sweep --config "$work/zkpipe.toml" --backend "${BACKEND:-cuda}" --out "$out/sweep" \
    --rounds "${ROUNDS:-3}" "${variants[@]}" \
    "$key" "$work/keys/$key.wtns" -c "$c" -j "${JOBS:-16}" -p 1 > "$out/sweep.txt" 2>&1 || log "sweep failed"
  tail -25 "$out/sweep.txt" | tee -a "$out/steps.log"
  ;;
*) echo "unknown step $step" >&2; exit 2 ;;
esac
