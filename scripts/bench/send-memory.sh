#!/usr/bin/env bash
# Broker memory under send load (issue 18: anonymous memory <= 96 MiB): one
# nameserver and one broker (ASYNC_FLUSH) on free loopback ports, mqbench
# producer with THREADS (64) threads of SIZE (1024) B for DURATION (30s);
# prints the broker's RssAnon sampled every second (max and at the end),
# VmRSS, the send TPS and p99, and saves a heap profile of the broker
# (go tool pprof -sample_index=inuse_space) to HEAP (no profile if unset).
#
#   scripts/bench/send-memory.sh
#   BROKER=/path/to/other/broker HEAP=/tmp/heap.out scripts/bench/send-memory.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
make build >/dev/null
BROKER=${BROKER:-$PWD/bin/broker}
THREADS=${THREADS:-64} SIZE=${SIZE:-1024} DURATION=${DURATION:-30s}
work=$(mktemp -d -t send-memory-XXXX)
pids=()
trap 'kill -TERM "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT INT TERM
port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
ns_port=$(port) br_port=$(port) pprof_port=$(port)
# shellcheck source=../local-lib.sh
. scripts/local-lib.sh
broker_conf b1 "$br_port" "127.0.0.1:$ns_port" "$work/store" ASYNC_FLUSH >"$work/broker.conf"
bin/namesrv --listen-port "$ns_port" --kv-config-path "$work/kv.json" >"$work/namesrv.log" 2>&1 &
pids+=($!)
sleep 1
"$BROKER" -c "$work/broker.conf" --pprof-addr "127.0.0.1:$pprof_port" >"$work/broker.log" 2>&1 &
broker_pid=$!
pids+=($broker_pid)
for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/"$br_port") 2>/dev/null && break; sleep 0.1; done
sleep 2
bin/mqadmin updateTopic -n "127.0.0.1:$ns_port" -c DefaultCluster -t SendMemory -r 8 -w 8 >/dev/null
status() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$broker_pid/status"; }
(
  max=0
  while kill -0 "$broker_pid" 2>/dev/null; do
    a=$(status RssAnon || echo 0)
    if [ "${a:-0}" -gt "$max" ]; then max=$a; fi
    echo "$max" >"$work/maxanon"
    sleep 1
  done
) &
pids+=($!)
bin/mqbench producer -n "127.0.0.1:$ns_port" -t SendMemory -s "$SIZE" -w "$THREADS" --duration "$DURATION" \
  --reportInterval 100000 --json 2>/dev/null | tail -1 >"$work/producer.json"
python3 - "$work/producer.json" "$(status RssAnon)" "$(cat "$work/maxanon")" "$(status VmRSS)" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
end, peak, rss = (int(x) // 1024 for x in sys.argv[2:5])
print(f"send TPS {p['tps']:.0f}, p99 {p['latencyMs']['p99']} ms; broker RssAnon max {peak} MiB, at the end {end} MiB; VmRSS {rss} MiB")
PY
if [ -n "${HEAP:-}" ]; then
  curl -s -o "$HEAP" "http://127.0.0.1:$pprof_port/debug/pprof/heap"
fi
