#!/usr/bin/env bash
# Static topics (issue 7) on a nameserver and three brokers started on free
# loopback ports (tests/bench/statictopic): remap of 64 logic queues under
# producer load (wall time, target <= 2 s; messages lost and duplicated
# logic offsets, target 0), then send and pull TPS of a static topic
# against a normal topic of the same queue count (target >= 0.9x).
# Exits non-zero when a target is missed; the figures are printed anyway.
#
#   scripts/bench/statictopic.sh
#   STATIC_BENCH_ROUNDS=15 STATIC_BENCH_ROUND=3s STATIC_BENCH_SENDERS=32 scripts/bench/statictopic.sh
#
# Other knobs: STATIC_BENCH_QUEUES (64), STATIC_BENCH_PULLERS (8),
# STATIC_BENCH_BODY (256 bytes), STATIC_BENCH_WARMUP / _AFTER (3s),
# STATIC_BENCH_FAULT_AVOIDANCE=0 (producers without latency fault avoidance).
# Broker and mqadmin logs stay in the test's temp dirs (go test -v shows
# where on failure).
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
make build >/dev/null
export RMQ_E2E_BIN_DIR="$PWD/bin" RMQ_BENCH_STATIC=1
exec "$GO" test -count=1 -v -timeout 20m -run '^TestStaticTopicBench$' github.com/rmqgo/rmq/tests/bench/statictopic
