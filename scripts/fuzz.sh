#!/usr/bin/env bash
# Coverage-guided fuzzing of zkpipe's parsers (cargo-fuzz, libFuzzer; the targets are in
# fuzz/, their bodies in crates/zkpipe-fuzz). Installs what it needs: a nightly toolchain
# (rustup) and cargo-fuzz.
#
#   scripts/fuzz.sh [--runs N] [TARGET... | all]   fuzz each target for N executions
#                                                  (default 10000000), one after another
#   scripts/fuzz.sh cmin [TARGET... | all]         minimize what fuzzing found, plus the
#                                                  committed corpus and the seeds, into
#                                                  fuzz/corpus/<target>/ (to commit; inputs
#                                                  up to FUZZ_CMIN_MAX_BYTES, 16384)
#   scripts/fuzz.sh seeds                          (re)write the seeds: fuzz/work/seeds/
#   scripts/fuzz.sh summary                        rewrite lab/results/fuzz/README.md
#   scripts/fuzz.sh list                           the targets
#
# A run reads fuzz/corpus/<target>/, fuzz/regressions/<target>/ (inputs of fixed crashes,
# kept whole) and the seeds, adds what it finds to
# fuzz/work/<target>/ (git-ignored), writes a crashing input to fuzz/artifacts/<target>/,
# its log to fuzz/work/<target>.log, and its final libFuzzer stats to
# lab/results/fuzz/<date>-<target>.txt; lab/results/fuzz/README.md summarizes them.
# It exits non-zero if any target crashed.
#
# Build: release, debug assertions and overflow checks on, no sanitizer (-s none): the
# code under test forbids unsafe code (zkpipe-formats' memory map aside, which the targets
# do not use), and without ASan's 2-3x slowdown the 2-core CI machine reaches 10^7 runs.
# FUZZ_SANITIZER=address uses ASan instead. Fuzzers run under `nice -n ${FUZZ_NICE:-19}`.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(zkey wtns r1cs proof_json public_json vk_json request)
runs=10000000
sanitizer=${FUZZ_SANITIZER:-none}
nice_level=${FUZZ_NICE:-19}
cmin_max_bytes=${FUZZ_CMIN_MAX_BYTES:-16384}
triple=$(rustc -vV | sed -n 's/^host: //p')
bin_dir=fuzz/target/$triple/release
results=lab/results/fuzz

die() { echo "fuzz.sh: $*" >&2; exit 1; }

setup() {
  if ! rustup toolchain list | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal
  fi
  if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
  fi
}

build() {
  # -O: release; -a: debug assertions and overflow checks.
  nice -n "$nice_level" cargo +nightly fuzz build -O -a -s "$sanitizer" "$@"
}

seeds() {
  rm -rf fuzz/work/seeds
  nice -n "$nice_level" cargo run --release --quiet -p zkpipe-fuzz --example seeds -- \
    fuzz/work/seeds tests/fixtures
}

targets_of() {
  if [ $# -eq 0 ] || [ "$1" = all ]; then
    echo "${TARGETS[@]}"
    return
  fi
  for t in "$@"; do
    [[ " ${TARGETS[*]} " == *" $t "* ]] || die "unknown target $t (targets: ${TARGETS[*]})"
  done
  echo "$@"
}

# Corpus folders of a target that exist, the writable one first.
corpus_dirs() {
  local t=$1 d
  mkdir -p "fuzz/work/$t" "fuzz/corpus/$t"
  for d in "fuzz/work/$t" "fuzz/corpus/$t" "fuzz/regressions/$t" "fuzz/work/seeds/$t"; do
    [ -d "$d" ] && echo "$d"
  done
}

# The libFuzzer dictionary of a target, if it has one.
dict_of() {
  case "$1" in
    proof_json|public_json|vk_json) echo "-dict=fuzz/dicts/json.dict" ;;
  esac
}

stat_of() { sed -n "s/^stat::$1: *//p" "$2" | tail -1; }

run_one() {
  local t=$1 log=fuzz/work/$1.log date start end status crashes artifacts out
  mkdir -p "fuzz/artifacts/$t" "$results"
  date=$(date -u +%Y-%m-%d)
  start=$(date +%s)
  echo "== $t: $runs runs (log: $log)"
  status=0
  # shellcheck disable=SC2046
  nice -n "$nice_level" "$bin_dir/$t" $(corpus_dirs "$t") $(dict_of "$t") \
    -runs="$runs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="fuzz/artifacts/$t/" >"$log" 2>&1 || status=$?
  end=$(date +%s)
  artifacts=$(find "fuzz/artifacts/$t" -type f -newermt "@$start" | wc -l)
  crashes=$(( status == 0 ? artifacts : (artifacts > 0 ? artifacts : 1) ))
  out=$results/$date-$t.txt
  {
    echo "target: $t"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates fuzz || echo +dirty)"
    echo "build: cargo +nightly fuzz build -O -a -s $sanitizer ($(cargo +nightly --version))"
    echo "machine: $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), nice $nice_level"
    echo "runs requested: $runs"
    echo "execs: $(stat_of number_of_executed_units "$log")"
    echo "exec/s: $(stat_of average_exec_per_sec "$log")"
    echo "time: $((end - start)) s"
    echo "corpus: $(grep -E '^#[0-9]+' "$log" | tail -1 | grep -o 'corp: [^ ]*' | cut -d' ' -f2) (inputs/bytes)"
    echo "new units: $(stat_of new_units_added "$log")"
    echo "peak rss: $(stat_of peak_rss_mb "$log") MB"
    echo "exit status: $status"
    echo "crashes: $crashes"
    echo "final line: $(grep -E '^#[0-9]+' "$log" | tail -1)"
  } >"$out"
  cat "$out"
  [ "$status" -eq 0 ] || { grep -E 'panicked|ERROR|SUMMARY' "$log" | head -5; return 1; }
}

field() { sed -n "s|^$1: ||p" "$2" | head -1; }

summary() {
  local f notes=""
  # A hand-written "## Notes" section at the end of the README is kept.
  [ -f "$results/README.md" ] && notes=$(sed -n '/^## Notes/,$p' "$results/README.md")
  {
    echo "# Fuzzing results"
    echo
    echo "Written by \`scripts/fuzz.sh\`: one file per run, \`<date>-<target>.txt\`, with the"
    echo "final libFuzzer stats. Build: release with debug assertions and overflow checks."
    echo
    echo "| date | target | execs | exec/s | time | edges (cov) | corpus (inputs/bytes) | crashes | build | machine |"
    echo "|---|---|---:|---:|---:|---:|---|---:|---|---|"
    for f in "$results"/*-*.txt; do
      [ -e "$f" ] || continue
      echo "| $(field date "$f" | cut -dT -f1) | $(field target "$f") | $(field execs "$f")" \
        "| $(field exec/s "$f") | $(field time "$f")" \
        "| $(field 'final line' "$f" | grep -o 'cov: [0-9]*' | cut -d' ' -f2)" \
        "| $(field corpus "$f" | cut -d' ' -f1)" \
        "| $(field crashes "$f") | $(field build "$f" | grep -o -- '-s [a-z]*')" \
        "| $(field machine "$f") |"
    done
    if [ -n "$notes" ]; then
      echo
      echo "$notes"
    fi
  } >"$results/README.md"
}

cmin_one() {
  local t=$1 input=fuzz/work/cmin-in-$1 merged=fuzz/work/cmin-$1 d
  rm -rf "$input" "$merged"
  mkdir -p "$input" "$merged"
  # The committed corpus stays small: inputs over $cmin_max_bytes bytes are left out (they
  # also slow every execution down), and inputs are kept for the edges they reach, not
  # for hit counts (-use_counters=0).
  for d in $(corpus_dirs "$t"); do
    find "$d" -type f -size -"$((cmin_max_bytes + 1))"c -exec cp -p {} "$input/" \;
  done
  nice -n "$nice_level" "$bin_dir/$t" -merge=1 -use_counters=0 "$merged" "$input" \
    >"fuzz/work/cmin-$t.log" 2>&1 || { tail -5 "fuzz/work/cmin-$t.log"; die "cmin $t failed"; }
  rm -rf "fuzz/corpus/$t" "$input"
  mv "$merged" "fuzz/corpus/$t"
  echo "$t: $(find "fuzz/corpus/$t" -type f | wc -l) inputs," \
    "$(du -sb --apparent-size "fuzz/corpus/$t" | cut -f1) bytes," \
    "$(grep -o '[0-9]* new coverage edges' "fuzz/work/cmin-$t.log" | tail -1)"
}

cmd=run
case "${1:-}" in
  cmin|seeds|list|summary) cmd=$1; shift ;;
esac
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --runs=*) runs=${1#--runs=}; shift ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done

case "$cmd" in
  list) echo "${TARGETS[@]}"; exit 0 ;;
  seeds) seeds; exit 0 ;;
  summary) summary; exit 0 ;;
esac

setup
read -r -a selected <<<"$(targets_of "$@")"
build
[ -d fuzz/work/seeds ] || seeds
failed=0
for t in "${selected[@]}"; do
  case "$cmd" in
    run) run_one "$t" || failed=1 ;;
    cmin) cmin_one "$t" ;;
  esac
done
if [ "$cmd" = run ]; then
  summary
  echo "summary: $results/README.md"
fi
exit "$failed"
