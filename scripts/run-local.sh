#!/usr/bin/env bash
# Starts a nameserver and one broker on this machine with embedded defaults
# (no config file), data under ./data. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
DATA=${DATA:-data}
NAMESRV_PORT=${NAMESRV_PORT:-9876}
BROKER_PORT=${BROKER_PORT:-10911}
mkdir -p "$DATA/namesrv" "$DATA/broker" "$DATA/logs"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

wait_port() {
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "nothing is listening on 127.0.0.1:$1; see $DATA/logs" >&2
  return 1
}

"$BIN/namesrv" --listen-port "$NAMESRV_PORT" --kv-config-path "$DATA/namesrv/kvConfig.json" \
  >"$DATA/logs/namesrv.log" 2>&1 &
pids+=($!)
wait_port "$NAMESRV_PORT"

"$BIN/broker" -n "127.0.0.1:$NAMESRV_PORT" --listen-port "$BROKER_PORT" --store-path "$DATA/broker" \
  --broker-ip 127.0.0.1 >"$DATA/logs/broker.log" 2>&1 &
pids+=($!)
wait_port "$BROKER_PORT"

cat <<MSG
nameserver listening on 127.0.0.1:$NAMESRV_PORT   (log: $DATA/logs/namesrv.log)
broker     listening on 127.0.0.1:$BROKER_PORT  (log: $DATA/logs/broker.log, store: $DATA/broker)
try:  $BIN/mqadmin clusterList -n 127.0.0.1:$NAMESRV_PORT
Ctrl-C stops both.
MSG
wait -n "${pids[@]}"
echo "a server exited; see $DATA/logs" >&2
exit 1
