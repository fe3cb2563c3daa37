#!/usr/bin/env bash
# Issue 43, item 4: what a real SHA-256 circuit's witness values look like, and what a
# synthetic witness of that profile costs to prove (lab/experiments/043b-sha256-values.md).
#
#   lab/exp043/sha256-values.sh OUT BIN_DIR values|speed [ROUNDS=3] [LOG=16]
#
# values: circomlib's Sha256(BITS) for BITS in 448 512 2048, compiled by the pinned
#         circom2 (tests/fixtures, scripts/install-snarkjs.sh) with --O2 and --O1; a
#         witness for each of three messages by snarkjs; the classes `zkpipe inspect`
#         counts, into OUT/values.tsv.
# speed:  a 2^LOG BN254 dev key with `synth --values random` against `--values sha256`
#         (same seed, so the same rows but for one term on w0), `zkpipe-bench bench`
#         (3 runs, 1 warm-up; BENCH_FLAGS adds flags, e.g. --backend cuda), ROUNDS rounds
#         interleaved, into OUT/speed-LOG.txt. Needs no node: runs on the GPU machine.
# BIN_DIR holds zkpipe and zkpipe-bench.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?output dir}; bin=$(cd "${2:?binary dir}" && pwd); what=${3:?values or speed}
rounds=${4:-3}; log=${5:-16}
mkdir -p "$out"; out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

values() {
  fixtures=$PWD/tests/fixtures
  [ -e "$fixtures/node_modules/circom2/cli.js" ] || scripts/install-snarkjs.sh
  # circom2 is a WASI build: it reads circuits under its working directory only.
  circuits=$(mktemp -d "$fixtures/.lab-sha256-XXXXXX")
  trap 'rm -rf "$work" "$circuits"' EXIT

  printf 'bits\topt\tmessage\tnWitness\tzero\tone\tupTo8Bits\tupTo64Bits\tnegativeUpTo64Bits\tfull\n' \
    > "$out/values.tsv"
  for bits in 448 512 2048; do
    name=sha256_$bits
    printf 'pragma circom 2.0.0;\ninclude "../node_modules/circomlib/circuits/sha256/sha256.circom";\ncomponent main = Sha256(%s);\n' \
      "$bits" > "$circuits/$name.circom"
    for opt in O2 O1; do
      dir=$work/$name-$opt; mkdir -p "$dir"
      (cd "$fixtures" && node node_modules/circom2/cli.js "$(basename "$circuits")/$name.circom" \
        --r1cs --wasm --"$opt" --prime bn128 -o "$dir" > "$dir/compile.log")
      for msg in 1 2 3; do
        # The message: SHA-256 of the seed, repeated to BITS bits.
        node -e '
          const c = require("crypto"); const bits = +process.argv[1];
          const h = c.createHash("sha256").update("zkpipe-" + process.argv[2]).digest();
          const in_ = Array.from({length: bits}, (_, i) => (h[(i >> 3) % 32] >> (7 - i % 8)) & 1);
          process.stdout.write(JSON.stringify({in: in_}));' "$bits" "$msg" > "$dir/in$msg.json"
        node "$fixtures/node_modules/snarkjs/cli.js" wtns calculate \
          "$dir/${name}_js/$name.wasm" "$dir/in$msg.json" "$dir/w$msg.wtns" > /dev/null
        "$bin/zkpipe" inspect --json "$dir/w$msg.wtns" | node -e '
          const v = JSON.parse(require("fs").readFileSync(0)); const c = v.values;
          console.log([process.argv[1], process.argv[2], process.argv[3], v.nWitness, c.zero, c.one,
            c.upTo8Bits, c.upTo64Bits, c.negativeUpTo64Bits, c.full].join("\t"));' \
          "$bits" "$opt" "$msg" >> "$out/values.tsv"
      done
    done
  done
}

speed() {
  for values in random sha256; do
    d=$work/dev-$values; mkdir -p "$d"
    "$bin/zkpipe" synth --domain "2^$log" --public 4 --seed 1 --values "$values" \
      "$d/c.r1cs" "$d/c.wtns" 2>> "$out/speed-$log.txt"
    "$bin/zkpipe" setup --dev --seed 1 "$d/c.r1cs" "$d/c.zkey" 2> /dev/null
    "$bin/zkpipe" inspect "$d/c.wtns" | grep '^values' >> "$out/speed-$log.txt"
  done
  for r in $(seq "$rounds"); do
    for values in random sha256; do
      d=$work/dev-$values
      echo "== 2^$log round $r values $values" >> "$out/speed-$log.txt"
      # shellcheck disable=SC2086 # BENCH_FLAGS is a list of flags
      timeout 300 "$bin/zkpipe-bench" bench --trusted-key --runs 3 --warmup 1 ${BENCH_FLAGS:-} \
        "$d/c.zkey" "$d/c.wtns" >> "$out/speed-$log.txt" 2>&1 || echo "FAILED rc=$?" >> "$out/speed-$log.txt"
    done
  done
}

case $what in
  values) values; echo "wrote $out/values.tsv" ;;
  speed) speed; echo "wrote $out/speed-$log.txt" ;;
  *) echo "values or speed, not $what" >&2; exit 2 ;;
esac
