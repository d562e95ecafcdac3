#!/usr/bin/env bash
# Starts a local cluster for manual testing: one nameserver and N master
# brokers (broker-a, broker-b, ...) in cluster DefaultCluster, data under
# ./data/cluster. Ctrl-C stops them all.
#   scripts/cluster.sh [N]     (default 2)
# Ports: nameserver $NAMESRV_PORT (9876); broker i listens on
# $BROKER_PORT_BASE + 10*i (10911). Once everything listens, the brokers'
# process ids are in $DATA/broker.pids (one line) and $DATA/ready exists.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-2}
BIN=${BIN:-bin}
DATA=${DATA:-data/cluster}
NAMESRV_PORT=${NAMESRV_PORT:-9876}
BROKER_PORT_BASE=${BROKER_PORT_BASE:-10911}
CLUSTER=${CLUSTER:-DefaultCluster}
mkdir -p "$DATA/logs"
rm -f "$DATA/ready" "$DATA/broker.pids"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -f "$DATA/ready"
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
echo "nameserver 127.0.0.1:$NAMESRV_PORT"

letters=(a b c d e f g h i j k l m n o p)
brokers=()
for ((i = 0; i < N; i++)); do
  name="broker-${letters[$i]}"
  port=$((BROKER_PORT_BASE + 10 * i))
  mkdir -p "$DATA/$name"
  cat >"$DATA/$name/broker.conf" <<CONF
brokerClusterName=$CLUSTER
brokerName=$name
brokerId=0
brokerIP1=127.0.0.1
listenPort=$port
namesrvAddr=127.0.0.1:$NAMESRV_PORT
storePathRootDir=$DATA/$name
autoCreateTopicEnable=true
CONF
  "$BIN/broker" -c "$DATA/$name/broker.conf" >"$DATA/logs/$name.log" 2>&1 &
  pids+=($!)
  brokers+=($!)
  wait_port "$port"
  echo "$name 127.0.0.1:$port (config $DATA/$name/broker.conf)"
done
echo "${brokers[*]}" >"$DATA/broker.pids"
touch "$DATA/ready"
echo "Ctrl-C stops the cluster."
wait -n "${pids[@]}"
echo "a server exited; see $DATA/logs" >&2
exit 1
