#!/usr/bin/env bash
# Builds the CPU container image (deploy/container/Dockerfile) and, inside it, proves the
# bundled Poseidon circuit on both curves and verifies each proof. Needs a working docker
# or podman; where there is none (not installed, or its daemon not reachable) it says
# "skipped" and exits 0. A first build compiles zkpipe in release mode: ~20 minutes on 2
# cores, which is why CI does not run it (crates/zkpipe-cli/tests/suite/container.rs runs
# it on request).
# Usage: scripts/container-demo.sh   (ZKPIPE_IMAGE names the image; default zkpipe:demo)
set -euo pipefail
cd "$(dirname "$0")/.."

engine=
for candidate in docker podman; do
  if command -v "$candidate" > /dev/null && "$candidate" info > /dev/null 2>&1; then
    engine=$candidate
    break
  fi
done
if [ -z "$engine" ]; then
  echo "container-demo: skipped: no docker/podman (none installed, or its daemon is not reachable)"
  exit 0
fi

image=${ZKPIPE_IMAGE:-zkpipe:demo}
build=("$engine" build -f deploy/container/Dockerfile -t "$image")
if [ "$engine" = podman ]; then
  # podman does not look for <Dockerfile>.dockerignore by itself.
  build+=(--ignorefile deploy/container/Dockerfile.dockerignore)
fi
echo "== $engine: build $image"
DOCKER_BUILDKIT=1 "${build[@]}" .

for curve in bn254 bls12-381; do
  echo "== $curve: prove and verify tests/fixtures/$curve/poseidon inside $image"
  "$engine" run --rm -v "$PWD/tests/fixtures/$curve/poseidon:/demo:ro" --entrypoint sh "$image" -c '
    set -e
    zkpipe prove /demo/circuit.zkey /demo/witness.wtns /tmp/proof.json /tmp/public.json
    zkpipe verify /demo/verification_key.json /tmp/public.json /tmp/proof.json'
done
echo "container-demo: OK, the image proves and verifies on both curves"
