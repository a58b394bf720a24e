#!/usr/bin/env bash
# A local Redis Cluster of three primaries (no replicas) for running the suite on a cluster
# (TEST_REDIS=cluster, docs/operations-redis.md "The suite on a Redis Cluster") and for the
# shards benchmark (bench/shards.mjs): three redis-server processes of the machine's own Redis
# with cluster-enabled, on loopback, their slots spread evenly by `redis-cli --cluster create`.
#
#   scripts/redis-cluster.sh start    # creates the nodes and the cluster on first use, then starts them
#   scripts/redis-cluster.sh stop
#   scripts/redis-cluster.sh status
#
# REDIS_CLUSTER_DIR (.data/redis-cluster, git-ignored) and REDIS_CLUSTER_PORT (7001: the first
# node, the others on the next ports; each node's cluster bus on its port + 10000) move the
# defaults. Throw-away test data: no persistence, so REDIS_DURABILITY=warn (as the tests set it).
set -euo pipefail
cd "$(dirname "$0")/.."

DIR="${REDIS_CLUSTER_DIR:-$PWD/.data/redis-cluster}"
BASE="${REDIS_CLUSTER_PORT:-7001}"
PORTS=("$BASE" "$((BASE + 1))" "$((BASE + 2))")

ping() {
  redis-cli -p "$1" ping 2>/dev/null | grep -q PONG
}

start() {
  for port in "${PORTS[@]}"; do
    mkdir -p "$DIR/$port"
    if ping "$port"; then
      echo "node $port already running"
      continue
    fi
    # The node's identity and its view of the cluster are in nodes.conf: a restart rejoins it.
    redis-server --port "$port" --bind 127.0.0.1 --dir "$DIR/$port" --daemonize yes \
      --pidfile "$DIR/$port/redis.pid" --logfile "$DIR/$port/redis.log" \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
      --appendonly no --save "" --maxmemory-policy noeviction
    for _ in $(seq 50); do ping "$port" && break || sleep 0.1; done
    echo "node $port started (log: $DIR/$port/redis.log)"
  done
  if redis-cli -p "$BASE" cluster info | grep -q "cluster_slots_assigned:16384"; then
    echo "cluster already created"
  else
    redis-cli --cluster create "${PORTS[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes >"$DIR/create.log"
    echo "cluster created (log: $DIR/create.log)"
  fi
  for _ in $(seq 100); do
    redis-cli -p "$BASE" cluster info | grep -q "cluster_state:ok" && break || sleep 0.1
  done
  status
}

stop() {
  for port in "${PORTS[@]}"; do
    if ping "$port"; then
      redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
      echo "node $port stopped"
    fi
  done
}

status() {
  local down=0
  for port in "${PORTS[@]}"; do
    if ping "$port"; then echo "node $port: running"; else
      echo "node $port: not running"
      down=1
    fi
  done
  ping "$BASE" && redis-cli -p "$BASE" cluster info | grep cluster_state
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
