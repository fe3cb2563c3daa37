#!/usr/bin/env bash
# Sourced by experiment 020's scripts: pg_start DIR starts a Postgres in DIR on a free
# loopback port, with durable commits (fsync on, the default: the embedded store it is
# compared with syncs every commit too), and sets PG_URL; pg_stop stops it. The binaries
# come from $PG_BIN, else the newest /usr/lib/postgresql/*/bin. As root, the server runs
# as the postgres user (or as $PG_USER). pg_carried unpacks .carry/pg.tar.xz
# (lab/exp020/pg-pack.sh) where a machine has no PostgreSQL of its own (the GPU machines).

# .carry/pg.tar.xz unpacked under $PG_HOME (default /tmp/zkpipe-pg), where the postgres
# user can reach it, and PG_BIN and LD_LIBRARY_PATH set to use it; nothing when PG_BIN is
# set already or nothing was carried.
pg_carried() {
    local home=${PG_HOME:-/tmp/zkpipe-pg}
    [ -z "${PG_BIN:-}" ] && [ -e .carry/pg.tar.xz ] || return 0
    [ -x "$home/usr/lib/postgresql/15/bin/postgres" ] || { mkdir -p "$home"; tar -xJf .carry/pg.tar.xz -C "$home"; }
    export PG_BIN=$home/usr/lib/postgresql/15/bin LD_LIBRARY_PATH=$home/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    # The server must not run as root; the GPU machine may have no postgres user.
    id "${PG_USER:-postgres}" >/dev/null 2>&1 || useradd --system --no-create-home "${PG_USER:-postgres}" 2>/dev/null || true
    chmod -R a+rX "$home"
}

pg_bin() {
    if [ -n "${PG_BIN:-}" ]; then echo "$PG_BIN"; return; fi
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1
}

pg_as() {
    if [ "$(id -u)" = 0 ]; then runuser -u "${PG_USER:-postgres}" -- "$@"; else "$@"; fi
}

pg_start() {
    local dir=$1 bin port
    bin=$(pg_bin)
    [ -x "$bin/initdb" ] || { echo "pg.sh: no initdb (set PG_BIN)" >&2; return 1; }
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown -R "${PG_USER:-postgres}" "$dir"
    pg_as "$bin/initdb" -A trust -U postgres -E UTF8 -D "$dir/data" >"$dir/initdb.log" 2>&1 \
        || { echo "pg.sh: initdb failed:" >&2; cat "$dir/initdb.log" >&2; return 1; }
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    pg_as "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=400 -c shared_buffers=512MB" start >/dev/null \
        || { echo "pg.sh: postgres did not start:" >&2; cat "$dir/postgres.log" >&2; return 1; }
    PG_URL="postgres://postgres@127.0.0.1:$port/postgres"
    PG_DIR=$dir
    export PG_URL PG_DIR
}

pg_stop() {
    pg_as "$(pg_bin)/pg_ctl" -D "$PG_DIR/data" -m fast stop >/dev/null 2>&1 || true
}
