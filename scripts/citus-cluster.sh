#!/usr/bin/env bash
# A local multi-node Citus cluster for running the suite and trying the operator's path
# (docs/scaling.md, "The suite on a multi-node Citus"): a coordinator and two workers, three
# Postgres 15 instances of the machine's own Postgres with Citus installed into it (built from
# source: the commands are in that section). Nothing is registered here: Citus keeps its node
# list per database, so whoever creates a database adds the workers to it (the test support does
# it for each test database).
#
#   scripts/citus-cluster.sh start    # creates the instances on first use, then starts them
#   scripts/citus-cluster.sh stop
#   scripts/citus-cluster.sh status
#
# CITUS_CLUSTER_DIR (.data/citus, git-ignored), CITUS_CLUSTER_PORT (9700: the coordinator, the
# workers on the next ports), CITUS_CLUSTER_WORKERS (2; 3 adds worker3 to a running cluster, to
# try a rebalance) and PG_BINDIR (/usr/lib/postgresql/15/bin) move the defaults.
# CITUS_CLUSTER_OPTS adds server settings (e.g. "-c fsync=on" to time something durable).
set -euo pipefail
cd "$(dirname "$0")/.."

DIR="${CITUS_CLUSTER_DIR:-$PWD/.data/citus}"
BASE="${CITUS_CLUSTER_PORT:-9700}"
BIN="${PG_BINDIR:-/usr/lib/postgresql/15/bin}"
NODES=(coordinator)
for ((i = 1; i <= ${CITUS_CLUSTER_WORKERS:-2}; i++)); do NODES+=("worker$i"); done

# Postgres refuses to run as root: its programs then run as the "postgres" system user, who
# owns the data (as apps/ctl/src/local-postgres.ts does for the embedded Postgres).
as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# Throw-away test data: no fsync. Enough connections for the suite's two test processes, each
# file's pools and the connections Citus opens from the coordinator to the workers, and enough
# background workers for Citus's maintenance daemon, one per database with the extension (the
# default 8 runs out with a few test databases at once). No Unix socket: every client, Citus's
# own included, connects over TCP to 127.0.0.1.
settings() {
  echo "-p $1 -c listen_addresses=127.0.0.1 -c unix_socket_directories= \
-c shared_preload_libraries=citus,pg_stat_statements -c max_connections=400 -c max_worker_processes=64 \
-c fsync=off -c synchronous_commit=off -c full_page_writes=off ${CITUS_CLUSTER_OPTS:-}"
}

start() {
  if [ ! -f "$BIN/../lib/citus.so" ]; then
    echo "Citus is not installed into $BIN/../lib: build it first (docs/scaling.md)" >&2
    exit 1
  fi
  mkdir -p "$DIR"
  [ "$(id -u)" = 0 ] && chown postgres: "$DIR"
  for i in "${!NODES[@]}"; do
    local data="$DIR/${NODES[$i]}" port=$((BASE + i))
    if [ ! -f "$data/PG_VERSION" ]; then
      as_postgres "$BIN/initdb" -D "$data" -U postgres -A trust -E UTF8 --no-locale >"$DIR/${NODES[$i]}.initdb.log"
    fi
    if as_postgres "$BIN/pg_ctl" status -D "$data" >/dev/null; then
      echo "${NODES[$i]} already running on 127.0.0.1:$port"
      continue
    fi
    as_postgres "$BIN/pg_ctl" start -D "$data" -w -t 60 -l "$data.log" -o "$(settings "$port")" >/dev/null
    echo "${NODES[$i]} started on 127.0.0.1:$port (log: $data.log)"
  done
}

# Every instance of the directory, a worker added with CITUS_CLUSTER_WORKERS included.
stop() {
  for pidfile in "$DIR"/*/postmaster.pid; do
    [ -f "$pidfile" ] || continue
    local data
    data="$(dirname "$pidfile")"
    as_postgres "$BIN/pg_ctl" stop -D "$data" -w -m fast >/dev/null && echo "$(basename "$data") stopped"
  done
}

status() {
  local down=0
  for i in "${!NODES[@]}"; do
    if [ -d "$DIR/${NODES[$i]}" ] && as_postgres "$BIN/pg_ctl" status -D "$DIR/${NODES[$i]}" >/dev/null; then
      echo "${NODES[$i]}: running on 127.0.0.1:$((BASE + i))"
    else
      echo "${NODES[$i]}: not running"
      down=1
    fi
  done
  return $down
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
