# shellcheck shell=bash
# Sourced (not run) by cluster.sh and run-local.sh, which start this
# repository's servers ($BIN) in the background with data and logs under
# $DATA, and by scripts that only need its conf writers (scripts/bench).

pids=() # the servers started, stopped by stop_servers

# stop_servers: stops every server started and waits for them.
stop_servers() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}

# wait_port <port>: waits up to 10 s for something to listen on the port.
wait_port() {
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "nothing is listening on 127.0.0.1:$1; see $DATA/logs" >&2
  return 1
}

# start_namesrv: starts the nameserver on $NAMESRV_PORT and waits for it.
start_namesrv() {
  "$BIN/namesrv" --listen-port "$NAMESRV_PORT" --kv-config-path "$DATA/namesrv/kvConfig.json" \
    >"$DATA/logs/namesrv.log" 2>&1 &
  pids+=($!)
  wait_port "$NAMESRV_PORT"
}

# wait_servers: exits 1 once the first server exits (whatever its status:
# under set -e a failed wait would end the script before the message).
wait_servers() {
  wait -n "${pids[@]}" || true
  echo "a server exited; see $DATA/logs" >&2
  exit 1
}

# broker_conf <broker name> <port> <namesrvs> <store dir> <flushDiskType>:
# prints the broker.conf lines of a lone master (brokerId 0) of
# DefaultCluster on loopback.
broker_conf() {
  cat <<CONF
brokerClusterName=DefaultCluster
brokerName=$1
brokerId=0
brokerIP1=127.0.0.1
listenPort=$2
namesrvAddr=$3
storePathRootDir=$4
flushDiskType=$5
CONF
}

# ctl_namesrv_conf <port> <dir> <controller peers> <self id>: prints the
# namesrv.conf lines of a nameserver with an embedded controller
# (docs/replication.md); Apache's nameserver reads the same keys.
ctl_namesrv_conf() {
  cat <<CONF
listenPort=$1
kvConfigPath=$2/kvConfig.json
enableControllerInNamesrv=true
controllerDLegerGroup=rmq-ha
controllerDLegerPeers=$3
controllerDLegerSelfId=$4
controllerStorePath=$2/controller
CONF
}

# ctl_broker_conf <cluster> <broker name> <port> <namesrvs> <controllers>
# <store dir>: prints the broker.conf lines of a controller-mode replica on
# loopback with allAckInSyncStateSet=true; Apache's broker reads the same
# keys. brokerId and brokerRole are ignored in controller mode: the
# controller assigns ids and elects the master.
ctl_broker_conf() {
  cat <<CONF
brokerClusterName=$1
brokerName=$2
brokerId=-1
brokerRole=SLAVE
brokerIP1=127.0.0.1
brokerIP2=127.0.0.1
listenPort=$3
haListenPort=$(($3 + 1))
namesrvAddr=$4
storePathRootDir=$6
autoCreateTopicEnable=true
enableControllerMode=true
controllerAddr=$5
allAckInSyncStateSet=true
CONF
}
