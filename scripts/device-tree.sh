#!/usr/bin/env bash
# The GPU machine's tool copies this checkout's tracked files and what a call carries, at
# most 64 MiB in all; the tracked files alone are ~72 MiB, ~49 MiB of them lab/results,
# which no device step reads (tests/fixtures stays: `run.sh fixtures` reads it). `aside`
# moves lab/results out of the checkout (to a sibling folder) before a device call;
# `back` returns it afterwards. Neither overwrites anything: each refuses if its
# destination is there already. `aside --fixtures` also moves tests/fixtures (~20 MiB),
# for calls that do not prove the fixtures, to leave room for what they carry.
#
#   scripts/device-tree.sh aside [--fixtures]|back|size
set -euo pipefail
cd "$(dirname "$0")/.."
aside="../.$(basename "$PWD")-aside"
paths=(lab/results)
case ${1:-} in
  aside)
    [ -e "$aside" ] && { echo "device-tree: $aside exists; run 'back' first" >&2; exit 1; }
    [ "${2:-}" = --fixtures ] && paths+=(tests/fixtures)
    for p in "${paths[@]}"; do mkdir -p "$aside/$(dirname "$p")"; mv "$p" "$aside/$p"; done
    echo "moved ${paths[*]} to $aside" ;;
  back)
    [ -d "$aside" ] || { echo "device-tree: nothing aside at $aside" >&2; exit 1; }
    [ -e "$aside/tests/fixtures" ] && paths+=(tests/fixtures)
    for p in "${paths[@]}"; do
      [ -e "$p" ] && { echo "device-tree: $p exists; not overwriting it" >&2; exit 1; }
    done
    for p in "${paths[@]}"; do mv "$aside/$p" "$p"; done
    rm -r "$aside"
    echo "returned ${paths[*]}" ;;
  size)
    # What travels: tracked files present (not those set aside), untracked files not
    # ignored, and .carry.
    { git ls-files -z; git ls-files -z --others --exclude-standard; } |
      { xargs -0 stat -c %s 2>/dev/null || true; } |
      awk '{s += $1} END {printf "tree %.1f MiB\n", s / 1048576}'
    if [ -d .carry ]; then du -sh .carry; fi ;;
  *) echo "usage: $0 aside|back|size" >&2; exit 2 ;;
esac
