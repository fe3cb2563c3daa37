#!/usr/bin/env bash
# Sourced by experiment 020's scripts: pg_start DIR starts a Postgres in DIR on a free
# loopback port, with durable commits (fsync on, the default: the embedded store it is
# compared with syncs every commit too), and sets PG_URL; pg_stop stops it. The binaries
# come from $PG_BIN, else the newest /usr/lib/postgresql/*/bin. As root, the server runs
# as the postgres user (or as $PG_USER).

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
