#!/usr/bin/env bash
# How fast one core runs while a cell loads the host: after DELAY seconds, the CPU seconds
# (not wall) a fixed single-threaded loop takes, three times (a small working set: the
# core's clock and whatever shares the core, not memory); with PERF (a perf binary or
# wrapper), then the daemons' cycles, instructions and task clock over 2 s (their GHz).
# Run in the background by scaling.sh (PROBE=1) during each small cell; alone, it gives the
# idle host's numbers.
#
#   lab/exp042/probe.sh OUT_FILE DELAY [PID...]
set -uo pipefail
file=${1:?out file} delay=${2:?delay}; shift 2
sleep "$delay"
for _ in 1 2 3; do
  python3 -c 'import time
t = time.process_time(); s = 0
for i in range(3_000_000): s += i * i
print(f"probe_cpu_ms={(time.process_time() - t) * 1e3:.1f}")'
done > "$file"
if [ -n "${PERF:-}" ] && [ $# -gt 0 ]; then
  pids=$(IFS=,; echo "$*")
  "$PERF" stat -x, -e cycles,instructions,task-clock -p "$pids" -- sleep 2 >> "$file" 2>&1 || true
fi
