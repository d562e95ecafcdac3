#!/usr/bin/env bash
# Static topics (issue 7) on a nameserver and three brokers: remap of 64
# logic queues under producer load (wall time, target <= 2 s; messages lost
# and duplicated logic offsets, target 0), then send and pull TPS of a
# static topic against a normal topic of the same queue count (target
# >= 0.9x). Exits non-zero when a target is missed; the figures are
# printed anyway.
#
#   scripts/bench/statictopic.sh                 # cluster started by the test harness (free ports)
#   STATIC_BENCH_CLUSTER=script scripts/bench/statictopic.sh
#                                                # cluster started by scripts/cluster.sh 3 (fresh data
#                                                # dir; ports $NAMESRV_PORT, $BROKER_PORT_BASE or random)
#   STATIC_BENCH_NAMESRV=127.0.0.1:9876 scripts/bench/statictopic.sh
#                                                # a cluster you started (make cluster N=3);
#                                                # STATIC_BENCH_BROKER_PIDS="p1 p2 p3" adds broker CPU
#   STATIC_BENCH_ROUNDS=15 STATIC_BENCH_ROUND=3s STATIC_BENCH_SENDERS=32 scripts/bench/statictopic.sh
#
# Other knobs: STATIC_BENCH_QUEUES (64), STATIC_BENCH_PULLERS (8),
# STATIC_BENCH_BODY (256 bytes), STATIC_BENCH_WARMUP / _AFTER (3s),
# STATIC_BENCH_FAULT_AVOIDANCE=0 (producers without latency fault avoidance).
# Broker and mqadmin logs stay in the test's temp dirs (go test -v shows
# where on failure), or in the cluster's data dir (kept when a target is
# missed).
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
make build >/dev/null
export RMQ_E2E_BIN_DIR="$PWD/bin" RMQ_BENCH_STATIC=1

if [ "${STATIC_BENCH_CLUSTER:-}" = script ]; then
  export DATA NAMESRV_PORT BROKER_PORT_BASE
  DATA=$(mktemp -d "${TMPDIR:-/tmp}/static-bench-cluster.XXXXXX")
  # Random ports unless given: other clusters may run on the defaults.
  NAMESRV_PORT=${NAMESRV_PORT:-$((20000 + RANDOM % 10000))}
  BROKER_PORT_BASE=${BROKER_PORT_BASE:-$((30001 + RANDOM % 10000))}
  scripts/cluster.sh 3 >"$DATA/cluster.out" 2>&1 &
  cluster=$!
  trap 'kill -TERM "$cluster" 2>/dev/null || true; wait "$cluster" 2>/dev/null || true' EXIT
  for _ in $(seq 1 300); do
    [ -e "$DATA/ready" ] && break
    if ! kill -0 "$cluster" 2>/dev/null; then
      echo "scripts/cluster.sh exited:" >&2
      cat "$DATA/cluster.out" >&2
      exit 1
    fi
    sleep 0.1
  done
  [ -e "$DATA/ready" ] || { echo "the cluster did not start in 30 s; see $DATA" >&2; exit 1; }
  export STATIC_BENCH_NAMESRV="127.0.0.1:$NAMESRV_PORT" STATIC_BENCH_BROKER_PIDS="$(cat "$DATA/broker.pids")"
  echo "cluster: scripts/cluster.sh 3, data and logs in $DATA"
  status=0
  "$GO" test -count=1 -v -timeout 20m -run '^TestStaticTopicBench$' github.com/rmqgo/rmq/tests/bench/statictopic || status=$?
  kill -TERM "$cluster" 2>/dev/null || true
  wait "$cluster" 2>/dev/null || true
  trap - EXIT
  if [ "$status" = 0 ]; then
    rm -rf "$DATA"
  else
    echo "cluster data and logs kept in $DATA" >&2
  fi
  exit "$status"
fi
exec "$GO" test -count=1 -v -timeout 20m -run '^TestStaticTopicBench$' github.com/rmqgo/rmq/tests/bench/statictopic
