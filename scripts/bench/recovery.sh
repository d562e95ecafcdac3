#!/usr/bin/env bash
# Recovery time after kill -9: fills a broker's CommitLog to SIZE_GB with
# mqbench, kills the broker with SIGKILL, restarts it and measures the time
# until it serves again (a GET_BROKER_RUNTIME_INFO answer), then checks
# that the topic's offsets survived.
#
# For each restart it prints the time to serving again and the
# CommitLog's recovery from the broker's log: the re-scan (bytes verified
# record by record — header, CRC, layout, position — over the scan's time,
# issue 18's target >= 1 GB/s) and the whole CommitLog recovery (scan,
# zeroing the tail after the end, fsyncs), then the consume-queue
# re-dispatch.
#
#   scripts/bench/recovery.sh            # 2 GiB, ASYNC_FLUSH
#   SIZE_GB=1 FLUSH_DISK_TYPE=SYNC_FLUSH scripts/bench/recovery.sh
#   RESTARTS=6 BROKER_BINS="/work/main/bin/broker bin/broker" scripts/bench/recovery.sh
#
# RESTARTS (1): kill -9 and restart that many times on the same store;
# BROKER_BINS (bin/broker): broker binaries the restarts take in turn (A/B
# comparisons in alternated rounds on one filled store); KEEP=1 keeps the
# work directory, and WORK=<that directory> starts from it (a CommitLog
# already filled is not filled again). STARTUP_PROFILE=1: each restart
# writes a CPU profile of its start-up to <work>/startup-<n>.cpu (brokers
# with --startup-cpuprofile; go tool pprof -top). NO_CHECKPOINT=1 removes
# the checkpoint file before each restart: the re-scan then covers every
# segment (a rate over gigabytes, not over the tail after the checkpoint).
set -euo pipefail
cd "$(dirname "$0")/../.."
SIZE_GB=${SIZE_GB:-2}
FLUSH_DISK_TYPE=${FLUSH_DISK_TYPE:-ASYNC_FLUSH}
make build >/dev/null
work=${WORK:-$(mktemp -d -t recovery-XXXX)}
# shellcheck source=bench-lib.sh
. scripts/bench/bench-lib.sh
NS_PORT=${NS_PORT:-$(free_ports 1)}
BR_PORT=${BR_PORT:-$(( $(free_ports 4) + 2 ))}
# shellcheck source=../local-lib.sh
. scripts/local-lib.sh
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"; }
trap cleanup EXIT INT TERM
broker_conf broker-rec "$BR_PORT" "127.0.0.1:$NS_PORT" "$work/store" "$FLUSH_DISK_TYPE" >"$work/broker.conf"
bin/namesrv --listen-port $NS_PORT --kv-config-path "$work/kv.json" >"$work/namesrv.log" 2>&1 &
pids+=($!)
RESTARTS=${RESTARTS:-1}
read -r -a bins <<<"${BROKER_BINS:-bin/broker}"
start_broker() {
  "${1:-bin/broker}" -c "$work/broker.conf" "${@:2}" >>"$work/broker.log" 2>&1 &
  pids+=($!)
  broker=$!
}
wait_serving() {
  until bin/mqadmin brokerStatus -n 127.0.0.1:$NS_PORT -b 127.0.0.1:$BR_PORT >/dev/null 2>&1; do sleep 0.05; done
}
start_broker
wait_serving
# The broker answers before its first registration reaches the nameserver.
until bin/mqadmin updateTopic -n 127.0.0.1:$NS_PORT -c DefaultCluster -t RecoveryTopic -r 8 -w 8 >/dev/null 2>&1; do sleep 0.2; done
target=$((SIZE_GB << 30))
echo "filling the CommitLog to $SIZE_GB GiB..." >&2
# Segments are preallocated: count written bytes via the runtime info.
commitlog_max() { bin/mqadmin brokerStatus -n 127.0.0.1:$NS_PORT -b 127.0.0.1:$BR_PORT 2>/dev/null | awk '$1=="commitLogMaxOffset"{print $3}'; }
max=$(commitlog_max)
if [ -z "$max" ] || [ "$max" -lt "$target" ]; then
  bin/mqbench producer -n 127.0.0.1:$NS_PORT -t RecoveryTopic -s 1024 -w 32 -y true --reportInterval 1000000 >/dev/null 2>&1 &
  bench=$!
  while :; do
    max=$(commitlog_max)
    [ -n "$max" ] && [ "$max" -ge "$target" ] && break
    sleep 1
  done
  kill "$bench" 2>/dev/null || true
  wait "$bench" 2>/dev/null || true
fi
before=$(bin/mqadmin topicStatus -n 127.0.0.1:$NS_PORT -t RecoveryTopic | awk 'NR>1{s+=$4} END{print s}')
echo "CommitLog max offset $max; topic max offsets sum $before; kill -9" >&2
for i in $(seq 1 "$RESTARTS"); do
  bin=${bins[$(((i - 1) % ${#bins[@]}))]}
  kill -9 "$broker"; wait "$broker" 2>/dev/null || true
  # NO_CHECKPOINT=1: as if the checkpoint file were lost, so the re-scan
  # verifies the whole CommitLog instead of the segments after it.
  [ -n "${NO_CHECKPOINT:-}" ] && rm -f "$work/store/checkpoint"
  mark=$(wc -l <"$work/broker.log")
  t0=$(date +%s.%N)
  prof=()
  [ -n "${STARTUP_PROFILE:-}" ] && prof=(--startup-cpuprofile "$work/startup-$i.cpu")
  start_broker "$bin" "${prof[@]}"
  wait_serving
  t1=$(date +%s.%N)
  # The route comes with the broker's first registration, after it serves.
  until after=$(bin/mqadmin topicStatus -n 127.0.0.1:$NS_PORT -t RecoveryTopic 2>/dev/null | awk 'NR>1{s+=$4} END{print s}') && [ -n "$after" ]; do sleep 0.2; done
  tail -n +"$((mark + 1))" "$work/broker.log" | python3 -c "
import re, sys
log = sys.stdin.read()
print(f'restart {$i} ($bin): recovery after kill -9 with {$max/2**30:.2f} GiB CommitLog ($FLUSH_DISK_TYPE): serving again in {$t1-$t0:.2f} s; topic offsets before {$before}, after {$after}')
m = re.search(r'msg=\"recovery scanned the CommitLog\".* bytes=(\d+) verifyCRC=(\w+) scanTook=(\S+) scanMBps=(\d+) took=(\S+)', log)
if m:
    print(f'  CommitLog re-scan: {int(m[1])/1e6:.0f} MB verified (CRC {m[2]}) in {m[3]} = {m[4]} MB/s; CommitLog recovery in all {m[5]}')
else:
    print('  CommitLog re-scan: no \"recovery scanned\" line in the broker log (an older broker)')
m = re.search(r'msg=\"re-dispatched CommitLog tail\".* bytes=(\d+) took=(\S+)', log)
if m:
    print(f'  consume queues: {int(m[1])/1e6:.0f} MB re-dispatched in {m[2]}')
"
done
