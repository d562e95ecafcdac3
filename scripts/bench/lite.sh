#!/usr/bin/env bash
# Lite topics (issue 6) on a nameserver and one broker started on free
# loopback ports (tests/bench/lite): send TPS to a new lite topic per
# message against plain sends (alternated rounds; target overhead <= 15%),
# broker RSS / Pebble bytes / creation rate with a million lite topics
# (target RSS <= 400 MiB; 10M with LITE_BENCH_STRETCH: <= 3 GiB), store-to-pop latency for one client subscribed to
# 100k lite topics, and one sweep expiring them all (target <= 2 s, plain
# send p99 unchanged meanwhile). Exits non-zero when a target is missed.
#
#   scripts/bench/lite.sh
#   LITE_BENCH_STRETCH=9000000 scripts/bench/lite.sh      # 10M lite topics on the fresh broker
#
# Knobs: LITE_BENCH_PER_ROUND (250000 messages, one new lite topic each),
# LITE_BENCH_ROUNDS (4 of each kind, P L L P P L L P), LITE_BENCH_SENDERS (32),
# LITE_BENCH_BODY (1024), LITE_BENCH_CREATE (1000000 lite topics on a fresh
# broker, 128 B each), LITE_BENCH_SUBSCRIBED (100000),
# LITE_BENCH_LATENCY_RATE (2000 msgs/s), LITE_BENCH_LATENCY_SECONDS (10),
# LITE_BENCH_SWEEP_RATE (4000 plain msgs/s during the sweep, open loop; 0:
# 8 senders back to back), LITE_BENCH_SWEEP_TIMELINE=1 (slow sends by
# 100 ms around the sweep), LITE_BENCH_SWEEP_TRACE=file (an execution trace
# of the broker during the sweep, for go tool trace, and a CPU profile in
# file.cpu), LITE_BENCH_HEAP_PROFILE=prefix (heap profiles of the broker after
# the creation and the stretch: prefix.create, prefix.stretch), LITE_BENCH_GCTRACE=1 (the broker's GC cycles around the sweep),
# LITE_BENCH_BROKER_CONF (key=value,... added to broker.conf),
# LITE_BENCH_GC_SECONDS (30; 0: off) and LITE_BENCH_GC_RATE (4000 plain
# msgs/s, open loop): after the creation, sends at that rate split by
# whether a broker GC cycle (gctrace, on for this phase) overlapped them —
# p99 during a cycle against p99 outside (issue 18 target <= 1.5x).
#
#   LITE_BENCH_ROUNDS=0 LITE_BENCH_SUBSCRIBED=0 scripts/bench/lite.sh   # 1M lite topics, GC phase, sweep
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
make build >/dev/null
export RMQ_E2E_BIN_DIR="$PWD/bin" RMQ_BENCH_LITE=1
exec "$GO" test -count=1 -v -timeout 60m -run '^TestLiteBench$' github.com/rmqgo/rmq/tests/bench/lite
