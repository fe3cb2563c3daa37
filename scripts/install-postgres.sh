#!/usr/bin/env bash
# Installs Debian's PostgreSQL server binaries when they are missing: the fleet tests
# start a throwaway server of their own from them (crates/zkpipe-store/tests/support/
# postgres.rs). Nothing is started or enabled here; the package's own cluster, if the
# package creates one, is not used.
set -euo pipefail

if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || [ -n "${ZKPIPE_PG_BIN:-}" ]; then
    exit 0
fi
echo "== installing PostgreSQL (server binaries for the fleet tests)"
sudo=""
if [ "$(id -u)" != 0 ]; then
    sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends postgresql >/dev/null
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || {
    echo "install-postgres.sh: postgresql installed but no initdb under /usr/lib/postgresql" >&2
    exit 1
}
