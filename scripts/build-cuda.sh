#!/usr/bin/env bash
# Builds zkpipe's GPU binaries (cargo feature `cuda`) on a machine without a system CUDA:
# the CUDA 13.0 toolchain (matching the GPU machine's driver) comes from PyPI wheels into
# .venv-cuda (git-ignored). Idempotent. Outputs, in their own target dir so CPU builds
# and tests are not rebuilt: target/cuda/release/zkpipe (the CLI with --backend cuda),
# target/cuda/release/zkpipe-bench (the lab's bench, loadtest and sweep, beside the zkpipe
# its sweep starts) and target/cuda/release/zkpipe-gpu-check (GPU vs CPU checks and kernel
# timings).
#
# LAB=1 builds them with the lab switches (`zkpipe-cli/lab`: ZKPIPE_CUDA_HOST_REDUCE and the
# other experiments' losing sides), which the product build refuses.
#
# Every package is pinned to 13.0: nvcc alone pulls newer crt/runtime/nvvm, a mismatched set.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.venv-cuda
if [ ! -e "$venv/bin/nvcc-ready" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q 'nvidia-cuda-nvcc==13.0.*' 'nvidia-cuda-runtime==13.0.*' \
    'nvidia-cuda-crt==13.0.*' 'nvidia-cuda-cccl==13.0.*' 'nvidia-nvvm==13.0.*'
  touch "$venv/bin/nvcc-ready"
fi
cu=$(echo "$PWD"/$venv/lib/python3*/site-packages/nvidia/cu13)
[ -x "$cu/bin/nvcc" ] || { echo "build-cuda: nvcc not found under $cu" >&2; exit 1; }
# The wheels have lib/, not lib64/: point the linker and sppark's probe at it.
export PATH="$cu/bin:$PATH" NVCC="$cu/bin/nvcc" LIBRARY_PATH="$cu/lib" CUDA_LIB_DIR="$cu/lib"
export CARGO_TARGET_DIR=target/cuda
# One invocation: the binaries share one resolution of features, so nothing is built twice.
features=zkpipe-cli/cuda,zkpipe-bench/cuda
[ "${LAB:-0}" = 1 ] && features+=,zkpipe-cli/lab
cargo build --release --locked -p zkpipe-cli -p zkpipe-bench -p zkpipe-cuda \
  --features "$features" --bin zkpipe --bin zkpipe-bench --bin zkpipe-gpu-check
echo "built target/cuda/release/{zkpipe,zkpipe-bench,zkpipe-gpu-check} ($(nvcc --version | grep -o 'release [0-9.]*'))"
