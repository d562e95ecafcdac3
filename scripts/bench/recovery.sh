#!/usr/bin/env bash
# Recovery time after kill -9: fills a broker's CommitLog to SIZE_GB with
# mqbench, kills the broker with SIGKILL, restarts it and measures the time
# until it serves again (a GET_BROKER_RUNTIME_INFO answer), then checks
# that the topic's offsets survived.
#
#   scripts/bench/recovery.sh            # 2 GiB, ASYNC_FLUSH
#   SIZE_GB=1 FLUSH_DISK_TYPE=SYNC_FLUSH scripts/bench/recovery.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
SIZE_GB=${SIZE_GB:-2}
FLUSH_DISK_TYPE=${FLUSH_DISK_TYPE:-ASYNC_FLUSH}
make build >/dev/null
work=$(mktemp -d -t recovery-XXXX)
NS_PORT=${NS_PORT:-41876} BR_PORT=${BR_PORT:-42911}
# shellcheck source=../local-lib.sh
. scripts/local-lib.sh
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"; }
trap cleanup EXIT INT TERM
broker_conf broker-rec "$BR_PORT" "127.0.0.1:$NS_PORT" "$work/store" "$FLUSH_DISK_TYPE" >"$work/broker.conf"
bin/namesrv --listen-port $NS_PORT --kv-config-path "$work/kv.json" >"$work/namesrv.log" 2>&1 &
pids+=($!)
start_broker() {
  bin/broker -c "$work/broker.conf" >>"$work/broker.log" 2>&1 &
  pids+=($!)
  broker=$!
}
wait_serving() {
  until bin/mqadmin brokerStatus -n 127.0.0.1:$NS_PORT -b 127.0.0.1:$BR_PORT >/dev/null 2>&1; do sleep 0.05; done
}
start_broker
wait_serving
bin/mqadmin updateTopic -n 127.0.0.1:$NS_PORT -c DefaultCluster -t RecoveryTopic -r 8 -w 8 >/dev/null
target=$((SIZE_GB << 30))
echo "filling the CommitLog to $SIZE_GB GiB..." >&2
bin/mqbench producer -n 127.0.0.1:$NS_PORT -t RecoveryTopic -s 1024 -w 32 -y true --reportInterval 1000000 >/dev/null 2>&1 &
bench=$!
while :; do
  used=$(du -sb "$work/store/commitlog" | awk '{print $1}')
  # Segments are preallocated: count written bytes via the runtime info instead.
  max=$(bin/mqadmin brokerStatus -n 127.0.0.1:$NS_PORT -b 127.0.0.1:$BR_PORT 2>/dev/null | awk '$1=="commitLogMaxOffset"{print $3}')
  [ -n "$max" ] && [ "$max" -ge "$target" ] && break
  sleep 1
done
kill "$bench" 2>/dev/null || true
wait "$bench" 2>/dev/null || true
before=$(bin/mqadmin topicStatus -n 127.0.0.1:$NS_PORT -t RecoveryTopic | awk 'NR>1{s+=$4} END{print s}')
echo "CommitLog max offset $max; topic max offsets sum $before; kill -9" >&2
kill -9 "$broker"; wait "$broker" 2>/dev/null || true
t0=$(date +%s.%N)
start_broker
wait_serving
t1=$(date +%s.%N)
after=$(bin/mqadmin topicStatus -n 127.0.0.1:$NS_PORT -t RecoveryTopic | awk 'NR>1{s+=$4} END{print s}')
python3 -c "print(f'recovery after kill -9 with {$max/2**30:.2f} GiB CommitLog ($FLUSH_DISK_TYPE): {$t1-$t0:.2f} s; topic offsets before {$before}, after {$after}')"
grep -E 're-dispatched|recover' "$work/broker.log" | tail -5 >&2 || true
