#!/usr/bin/env bash
# Puts a daemon's threads at nice NICE, all but those that feed the GPUs (the device
# stage's workers and pools, `zkpipe-device*`, and CUDA's own): under a full host, the
# scheduler then runs a device thread that wakes before the CPU stages' threads. Threads
# started later take their creator's nice (tokio's, the tail's) or stay at 0 (a pass's
# MSM threads, started by a device thread). A scaling.sh hook:
#
#   lab/exp042/renice.sh NICE PID
set -euo pipefail
nice=${1:?nice} pid=${2:?pid}
n=0 kept=0
for t in /proc/"$pid"/task/*; do
  case $(cat "$t/comm") in
    zkpipe-device*|cuda*) kept=$((kept + 1)) ;;
    *) renice -n "$nice" -p "${t##*/}" > /dev/null && n=$((n + 1)) ;;
  esac
done
echo "renice: $n threads at nice $nice, $kept device threads kept at their nice"
