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

# shellcheck source=local-lib.sh
. scripts/local-lib.sh
trap stop_servers EXIT INT TERM

start_namesrv

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
wait_servers
