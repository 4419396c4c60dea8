#!/usr/bin/env bash
# Runs the server's test suite against Postgres: starts a throwaway cluster (PostgreSQL's
# initdb/pg_ctl must be installed; Debian: /usr/lib/postgresql/*/bin), points the tests
# at it with REDLINE_TEST_DATABASE_URL (each test makes its own database), and stops and
# removes the cluster afterwards. Extra arguments go to `cargo test` (and then only the
# suite as they select it runs, not the Postgres-only tests too).
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=$(dirname "$(ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -1)")
[ -x "$bin/initdb" ] || { echo "initdb not found; install PostgreSQL" >&2; exit 1; }
port=${REDLINE_PG_PORT:-55433}
dir=$(mktemp -d /tmp/redline-pg.XXXXXX)

# initdb refuses to run as root: run the cluster as the postgres user then.
as_owner() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$dir"

stop() {
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap stop EXIT

as_owner "$bin/initdb" -D "$dir/data" -A trust -U postgres >/dev/null
# fsync off: a test cluster, thrown away afterwards. REDLINE_PG_FSYNC=on makes it
# durable, as a deployment is, for the benchmark's durable figures.
fsync=${REDLINE_PG_FSYNC:-off}
as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=$fsync" start >/dev/null

export REDLINE_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres"
cargo test -p redline-server "$@"
# The tests only Postgres can run (`postgres_…`) are ignored by default; run them too.
if [ $# -eq 0 ]; then
    cargo test -p redline-server --tests -- --ignored postgres_
fi
