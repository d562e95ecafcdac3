#!/usr/bin/env bash
# Replication cost, side by side in one run: send TPS and the master's (and
# the slaves') CPU per message with synchronous replication to two slaves (classic
# SYNC_MASTER, inSyncReplicas=3: a send is answered once both slaves hold
# it) against one broker without replication, same client (mqbench), one
# topology up at a time, the order alternating each round. Also the
# replication lag the master reports (GET_BROKER_HA_STATUS) under full load.
# Everything on loopback on this machine, so the slaves' CPU competes with
# the master's and the client's: the ratio is a floor.
#
#   scripts/bench/ha.sh                      # 2 rounds of 20 s, 1 KiB, 32 threads
#   DURATION=30s ROUNDS=3 THREADS=64 scripts/bench/ha.sh
#
# Second phase, controller mode, ours against Apache RocketMQ 5.5.0 (from
# Maven, scripts/apache/ha-lib.sh) in the same topology: 3 nameservers with
# embedded controllers and one broker set of 3 controller-mode replicas
# (allAckInSyncStateSet=true), one system up at a time, the order
# alternating each round. Per system: send TPS (mqbench, DURATION) with the
# master's replication lag, then FO_ROUNDS kills of the master (SIGKILL;
# tests/cmd/hafailover times kill -> first SEND_OK stored on another
# replica; the victim is restarted and the set is back to 3 in sync before
# the next kill), then FO_ROUNDS kills of the raft leader controller (kill
# -> a survivor names a new leader that answers isLeader). Prints
# p50/p90/max and the ratios.
#
#   PHASES=failover FO_ROUNDS=50 scripts/bench/ha.sh
#
# PHASES=pop (not in the default) measures pop+ack (tests/cmd/popbench)
# in the first phase's two topologies; POP_FILL (8s) of mqbench sends make
# the backlog, POP_THREADS (8) goroutines drain it.
#
# Environment: DURATION (20s), ROUNDS (2), SIZE (1024), THREADS (32),
# QUEUES (8), FLUSH_DISK_TYPE (ASYNC_FLUSH), OUT (a results file),
# PHASES ("repl failover"), SYSTEMS ("ours apache"), FO_ROUNDS (10),
# FO_SYSTEM_ROUNDS (2: how often each system is brought up, the order
# alternating; the kills are split between them), KEEP (keep the work
# directory), NS_PORT (39976) and BROKER_PORT (40911: the replication
# phase's brokers listen on it, +10 and +20, HA ports one above),
# BROKER_BIN (bin/broker: our broker binary in both phases, to compare
# two builds run after run), FO_NS_PORT (39970) and FO_BROKER_PORT
# (40950): where our failover phase's nameservers (controllers at +4) and
# brokers (+10, +20) listen.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench-lib.sh
. scripts/bench/bench-lib.sh
bench_defaults 20s bench-ha
PHASES=${PHASES:-repl failover}
SYSTEMS=${SYSTEMS:-ours apache}
FO_ROUNDS=${FO_ROUNDS:-10}
FO_SYSTEM_ROUNDS=${FO_SYSTEM_ROUNDS:-2}
make build >/dev/null
(cd tests && go build -o ../bin/hafailover ./cmd/hafailover)
work=$(mktemp -d -t bench-ha-XXXX)
NS_PORT=${NS_PORT:-39976} NS=127.0.0.1:${NS_PORT:-39976}
BROKER_PORT=${BROKER_PORT:-40911}
BROKER_BIN=${BROKER_BIN:-bin/broker}
CLK=$(getconf CLK_TCK)

pids=()
stop_all() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}
trap 'stop_all; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT INT TERM

wait_port() { for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# start_topology <name> <replicas>: a nameserver and broker-a with
# <replicas> brokers (1: a lone ASYNC_MASTER; 3: SYNC_MASTER + 2 slaves).
start_topology() {
  local name=$1 n=$2 dir="$work/$1-$RANDOM"
  mkdir -p "$dir"
  bin/namesrv --listen-port $NS_PORT --kv-config-path "$dir/kv.json" >"$dir/namesrv.log" 2>&1 &
  pids+=($!)
  wait_port $NS_PORT
  for ((i = 0; i < n; i++)); do
    local port=$((BROKER_PORT + 10 * i)) role=SLAVE
    if ((i == 0)); then role=$([ "$n" -gt 1 ] && echo SYNC_MASTER || echo ASYNC_MASTER); fi
    cat >"$dir/b$i.conf" <<CONF
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=$i
brokerRole=$role
brokerIP1=127.0.0.1
brokerIP2=127.0.0.1
listenPort=$port
haListenPort=$((port + 1))
namesrvAddr=$NS
storePathRootDir=$dir/b$i
flushDiskType=$FLUSH_DISK_TYPE
inSyncReplicas=$n
totalReplicas=$n
CONF
    "$BROKER_BIN" -c "$dir/b$i.conf" >"$dir/b$i.log" 2>&1 &
    pids+=($!)
    if [ "$i" = 0 ]; then master_pid=$!; slave_pids=(); else slave_pids+=($!); fi
    wait_port $port
  done
  sleep 2
  bin/mqadmin updateTopic -n $NS -c DefaultCluster -t BenchHA -r "$QUEUES" -w "$QUEUES" >/dev/null
  sleep 1
}

run() { # name replicas round
  local name=$1 n=$2 r=$3
  start_topology "$name" "$n"
  local lagfile="$work/lag-$name-$r" t0 t1 p
  : >"$lagfile"
  ( while sleep 2; do
      # the master's slave table: address, ack offset, diff, ...
      bin/mqadmin haStatus -n $NS -b 127.0.0.1:$BROKER_PORT 2>/dev/null | awk '/^127\./{print $3}' >>"$lagfile" || true
    done ) &
  local sampler=$!
  local s0=0 s1=0 sp
  t0=$(ticks "$master_pid")
  for sp in "${slave_pids[@]}"; do s0=$((s0 + $(ticks "$sp"))); done
  p=$(bin/mqbench producer -n $NS -t BenchHA -s "$SIZE" -w "$THREADS" --duration "$DURATION" --reportInterval 100000 --json 2>/dev/null | tail -1)
  t1=$(ticks "$master_pid")
  for sp in "${slave_pids[@]}"; do s1=$((s1 + $(ticks "$sp"))); done
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  local lag
  lag=$(sort -n "$lagfile" | tail -1)
  echo "{\"topology\":\"$name\",\"round\":$r,\"masterCpuTicks\":$((t1 - t0)),\"slavesCpuTicks\":$((s1 - s0)),\"clkTck\":$CLK,\"maxLagBytes\":${lag:-0},\"producer\":$p}" >>"$OUT"
  stop_all
}

# alternate <runner> <label>: ROUNDS rounds of <runner> (name replicas
# round) in both topologies, the order alternating each round.
alternate() {
  local r t order
  for r in $(seq 1 "$ROUNDS"); do
    if ((r % 2)); then order="none sync2"; else order="sync2 none"; fi
    for t in $order; do
      if [ "$t" = none ]; then "$1" none 1 "$r"; else "$1" sync2 3 "$r"; fi
      echo "$2round $r $t done" >&2
    done
  done
}

repl_phase() {
alternate run ""

python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rows = [r for r in rows if "topology" in r]  # the failover phase's rows have "system"
agg = {}
for r in rows:
    a = agg.setdefault(r["topology"], {"tps": [], "cpu": [], "scpu": [], "lag": [], "p99": []})
    p = r["producer"]
    a["tps"].append(p["tps"])
    a["cpu"].append(r["masterCpuTicks"] * 1000.0 / r["clkTck"] / max(p["messages"], 1) * 1000)  # µs per message
    a["scpu"].append(r.get("slavesCpuTicks", 0) * 1000.0 / r["clkTck"] / max(p["messages"], 1) * 1000)
    a["lag"].append(r["maxLagBytes"]); a["p99"].append(p["latencyMs"]["p99"])
mean = lambda xs: sum(xs) / len(xs)
for t, label in (("none", "no replication"), ("sync2", "sync to 2 slaves")):
    a = agg[t]
    print(f"{label:18s} send TPS {mean(a['tps']):9.0f}  master CPU {mean(a['cpu']):6.1f} µs/msg  slaves {mean(a['scpu']):5.1f} µs/msg  p99 {mean(a['p99']):6.2f} ms  max lag {max(a['lag'])} B  rounds {len(a['tps'])}")
print(f"ratio sync2/none: send TPS {mean(agg['sync2']['tps'])/mean(agg['none']['tps']):.2f}x (target >= 0.7x), master CPU/msg {mean(agg['sync2']['cpu'])/mean(agg['none']['cpu']):.2f}x")
PY
}

# Pop phase (PHASES=pop, not in the default): the same two topologies;
# mqbench fills the topic for POP_FILL, then tests/cmd/popbench receives
# and acks it (POP_THREADS goroutines, batches of 32, one ack per message)
# for at most DURATION. Under sync2 every pop's checkpoint and every ack's
# record wait for both slaves, as Apache's CK and ack messages do.
pop_run() { # name replicas round
  local name=$1 n=$2 r=$3 t0 t1 s0=0 s1=0 sp p f
  start_topology "$name" "$n"
  f=$(bin/mqbench producer -n $NS -t BenchHA -s "$SIZE" -w "$THREADS" --duration "${POP_FILL:-8s}" --reportInterval 100000 --json 2>/dev/null | tail -1)
  t0=$(ticks "$master_pid")
  for sp in "${slave_pids[@]}"; do s0=$((s0 + $(ticks "$sp"))); done
  p=$(bin/popbench -n $NS -t BenchHA -g pop_bench_cg -c "${POP_THREADS:-8}" -d "$DURATION")
  t1=$(ticks "$master_pid")
  for sp in "${slave_pids[@]}"; do s1=$((s1 + $(ticks "$sp"))); done
  echo "{\"popTopology\":\"$name\",\"round\":$r,\"masterCpuTicks\":$((t1 - t0)),\"slavesCpuTicks\":$((s1 - s0)),\"clkTck\":$CLK,\"fill\":$f,\"pop\":$p}" >>"$OUT"
  stop_all
}

pop_phase() {
(cd tests && go build -o ../bin/popbench ./cmd/popbench)
alternate pop_run "pop "
python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rows = [r for r in rows if "popTopology" in r]
agg = {}
for r in rows:
    a = agg.setdefault(r["popTopology"], {"tps": [], "cpu": [], "scpu": []})
    p = r["pop"]
    a["tps"].append(p["tps"])
    a["cpu"].append(r["masterCpuTicks"] * 1e6 / r["clkTck"] / max(p["acked"], 1))
    a["scpu"].append(r["slavesCpuTicks"] * 1e6 / r["clkTck"] / max(p["acked"], 1))
mean = lambda xs: sum(xs) / len(xs)
for t, label in (("none", "no replication"), ("sync2", "sync to 2 slaves")):
    a = agg[t]
    print(f"{label:18s} pop+ack msgs/s {mean(a['tps']):9.0f}  master CPU {mean(a['cpu']):6.1f} µs/msg  slaves {mean(a['scpu']):5.1f} µs/msg  rounds {len(a['tps'])}  ({', '.join(f'{x:.0f}' for x in a['tps'])})")
print(f"ratio sync2/none: pop+ack msgs/s {mean(agg['sync2']['tps'])/mean(agg['none']['tps']):.2f}x")
PY
}

case " $PHASES " in *" repl "*) repl_phase ;; esac
case " $PHASES " in *" pop "*) pop_phase ;; esac
case " $PHASES " in *" failover "*) . scripts/bench/ha-failover.sh ;; esac
echo "raw results: $OUT" >&2
