#!/usr/bin/env bash
# The state disk's synced write rate alone, as a daemon's staged witnesses use it: W
# writers at once, each writing FILES files of MIB MiB (1 MiB writes) and syncing each
# (`dd conv=fdatasync`), for W in WRITERS. Prints one line per W: GB written, seconds,
# GB/s. The files go in DIR (made, then removed) on the disk under test.
#
#   lab/exp042/disk.sh DIR [WRITERS="1 2 4 8"] [FILES=4] [MIB=128]
set -euo pipefail
dir=${1:?dir on the disk under test}
read -r -a writers <<< "${2:-1 2 4 8}"
files=${3:-4} mib=${4:-128}
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
for w in "${writers[@]}"; do
  sync
  start=$(date +%s.%N)
  for i in $(seq "$w"); do
    ( for f in $(seq "$files"); do
        dd if=/dev/zero of="$dir/w$i-$f" bs=1M count="$mib" conv=fdatasync status=none
      done ) &
  done
  wait
  end=$(date +%s.%N)
  rm -f "$dir"/w*
  awk -v w="$w" -v n="$files" -v m="$mib" -v s="$start" -v e="$end" 'BEGIN {
    gb = w * n * m * 1048576 / 1e9
    printf "writers=%d written_gb=%.2f seconds=%.2f gb_per_s=%.2f\n", w, gb, e - s, gb / (e - s) }'
done
