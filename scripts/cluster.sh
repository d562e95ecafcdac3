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

# shellcheck source=local-lib.sh
. scripts/local-lib.sh
cleanup() {
  stop_servers
  rm -f "$DATA/ready"
}
trap cleanup EXIT INT TERM

start_namesrv
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
wait_servers
