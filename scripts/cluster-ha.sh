#!/usr/bin/env bash
# Starts a local controller-mode cluster on loopback for manual testing and
# failover drills: 3 nameservers, each with an embedded HA controller, and
# 2 broker sets (broker-a, broker-b) of 3 replicas each, in controller mode
# with allAckInSyncStateSet=true (docs/replication.md). Data under
# ./data/cluster-ha. Ctrl-C stops them all.
#   scripts/cluster-ha.sh
# Ports: nameservers 9876, 9877, 9878; controllers (raft and requests on one
# port) 9880, 9881, 9882; broker set s, replica r listens on
# 10911 + 100*s + 10*r (its HA port is that + 1). Once everything listens,
# every server's process id is in $DATA/pids and $DATA/ready exists.
#   bin/mqadmin getControllerMetaData -a 127.0.0.1:9880
#   bin/mqadmin getSyncStateSet -a 127.0.0.1:9880 -b broker-a
#   bin/mqadmin clusterList -n 127.0.0.1:9876
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
DATA=${DATA:-data/cluster-ha}
CLUSTER=${CLUSTER:-DefaultCluster}
NS_PORTS=(9876 9877 9878)
CTL_PORTS=(9880 9881 9882)
SETS=(broker-a broker-b)
REPLICAS=3
mkdir -p "$DATA/logs"
rm -f "$DATA/ready" "$DATA/pids"

# shellcheck source=local-lib.sh
. scripts/local-lib.sh
cleanup() {
  stop_servers
  rm -f "$DATA/ready"
}
trap cleanup EXIT INT TERM

peers=""
for i in 0 1 2; do peers+="n$i-127.0.0.1:${CTL_PORTS[$i]};"; done
peers=${peers%;}
namesrvs=""
for p in "${NS_PORTS[@]}"; do namesrvs+="127.0.0.1:$p;"; done
namesrvs=${namesrvs%;}
controllers=""
for p in "${CTL_PORTS[@]}"; do controllers+="127.0.0.1:$p;"; done
controllers=${controllers%;}

for i in 0 1 2; do
  dir="$DATA/namesrv-$i"
  mkdir -p "$dir"
  ctl_namesrv_conf "${NS_PORTS[$i]}" "$dir" "$peers" "n$i" >"$dir/namesrv.conf"
  "$BIN/namesrv" -c "$dir/namesrv.conf" >"$DATA/logs/namesrv-$i.log" 2>&1 &
  pids+=($!)
done
for i in 0 1 2; do
  wait_port "${NS_PORTS[$i]}"
  wait_port "${CTL_PORTS[$i]}"
  echo "nameserver 127.0.0.1:${NS_PORTS[$i]}, controller n$i 127.0.0.1:${CTL_PORTS[$i]}"
done

for s in "${!SETS[@]}"; do
  name=${SETS[$s]}
  for ((r = 0; r < REPLICAS; r++)); do
    port=$((10911 + 100 * s + 10 * r))
    dir="$DATA/$name-$r"
    mkdir -p "$dir"
    {
      ctl_broker_conf "$CLUSTER" "$name" "$port" "$namesrvs" "$controllers" "$dir"
      echo flushDiskType=SYNC_FLUSH
    } >"$dir/broker.conf"
    "$BIN/broker" -c "$dir/broker.conf" >"$DATA/logs/$name-$r.log" 2>&1 &
    pids+=($!)
  done
done
for s in "${!SETS[@]}"; do
  for ((r = 0; r < REPLICAS; r++)); do
    port=$((10911 + 100 * s + 10 * r))
    wait_port "$port"
    echo "${SETS[$s]} replica $r 127.0.0.1:$port (config $DATA/${SETS[$s]}-$r/broker.conf)"
  done
done
echo "${pids[*]}" >"$DATA/pids"
touch "$DATA/ready"
echo "Ctrl-C stops the cluster."
wait_servers
