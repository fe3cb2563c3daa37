#!/usr/bin/env bash
# Device call C1b: zkpipe-gpu-check's setup part with the probe of single multiplications.
set -u
B=/tmp/b; mkdir -p $B
xz -dc .carry/p/zkpipe-gpu-check.xz > $B/gc; chmod +x $B/gc
timeout 100 $B/gc 10 3 10 setup 2>&1 | cut -c1-1500
