#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the queue tests and benchmarks: a data
# folder in a temp dir, listening on 127.0.0.1 only, on a free port, its unix
# socket in the same temp dir; removed when stopped.
#
#   scripts/test-pg.sh <command> [args...]
#       runs the command with VAULTPLAN_TEST_PG set to the cluster's URL, then
#       stops the cluster; when VAULTPLAN_TEST_PG is already set, the command
#       runs against that database and no cluster is started.
#       e.g. scripts/test-pg.sh npm test    scripts/test-pg.sh npm run test:scale
#   . scripts/test-pg.sh
#       (sourced) defines pg_install, pg_start and pg_stop; pg_start exports
#       VAULTPLAN_TEST_PG. .ci/run uses it this way.
#
# PostgreSQL comes from Debian's packages (apt-get install postgresql) when it
# is missing and we are root. initdb refuses to run as root, so as root the
# cluster runs as the `postgres` user the package creates.

pg_bindir() {
  local dir
  if command -v pg_ctl >/dev/null 2>&1; then dirname "$(command -v pg_ctl)"; return 0; fi
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$dir/pg_ctl" ]; then echo "$dir"; return 0; fi
  done
  return 1
}

# Installs PostgreSQL from Debian's packages when it is missing (root only).
pg_install() {
  pg_bindir >/dev/null && return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "test-pg: PostgreSQL is not installed; install it (Debian: apt-get install postgresql)" >&2
    return 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
}

# Runs a command as the cluster's owner: `postgres` when we are root, else ourselves.
pg_as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# Starts the cluster and exports VAULTPLAN_TEST_PG (and PG_TEST_DIR, for pg_stop).
pg_start() {
  local bin port
  bin=$(pg_bindir) || { echo "test-pg: no pg_ctl found; run pg_install first" >&2; return 1; }
  PG_TEST_DIR=$(mktemp -d "${TMPDIR:-/tmp}/vaultplan-pg-XXXXXX")
  if [ "$(id -u)" = 0 ]; then chown postgres: "$PG_TEST_DIR"; fi
  port=$(node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })')
  pg_as_owner "$bin/initdb" -D "$PG_TEST_DIR/data" -U postgres -A trust --no-sync -E UTF8 >"$PG_TEST_DIR/initdb.log" 2>&1 \
    || { cat "$PG_TEST_DIR/initdb.log" >&2; return 1; }
  # Durability is not what these tests measure: a throwaway cluster need not flush.
  pg_as_owner "$bin/pg_ctl" -D "$PG_TEST_DIR/data" -l "$PG_TEST_DIR/server.log" -w -s \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $PG_TEST_DIR -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" start \
    || { cat "$PG_TEST_DIR/server.log" >&2; return 1; }
  export PG_TEST_DIR
  export VAULTPLAN_TEST_PG="postgres://postgres@127.0.0.1:$port/postgres"
  echo "test-pg: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') at $VAULTPLAN_TEST_PG (data in $PG_TEST_DIR)" >&2
}

# Stops the cluster pg_start started and removes its folder.
pg_stop() {
  [ -n "${PG_TEST_DIR:-}" ] && [ -d "$PG_TEST_DIR" ] || return 0
  local bin
  bin=$(pg_bindir)
  pg_as_owner "$bin/pg_ctl" -D "$PG_TEST_DIR/data" -m fast -w -s stop >/dev/null 2>&1 || true
  rm -rf "$PG_TEST_DIR"
  PG_TEST_DIR=
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  if [ $# -eq 0 ]; then
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
  fi
  if [ -n "${VAULTPLAN_TEST_PG:-}" ]; then exec "$@"; fi
  pg_install
  trap pg_stop EXIT
  pg_start
  status=0
  "$@" || status=$?
  exit "$status"
fi
