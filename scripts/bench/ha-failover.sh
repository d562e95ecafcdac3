# shellcheck shell=bash
# The failover phase of scripts/bench/ha.sh (sourced by it; uses its
# $work, $OUT, $DURATION, $SIZE, $THREADS, $QUEUES, $FLUSH_DISK_TYPE,
# $SYSTEMS, $FO_ROUNDS, $FO_SYSTEM_ROUNDS): ours and Apache 5.5.0 in
# controller mode, 3 nameservers with embedded controllers + one set of 3
# replicas, one system up at a time. See ha.sh's header.

# shellcheck source=../local-lib.sh
. scripts/local-lib.sh

fo_pids=() # every server of the topology that is up, index = slot
fo_slot_ns() { echo "$1"; }
fo_slot_br() { echo $((3 + $1)); }

fo_stop() {
  # SIGKILL: the stores are thrown away, and Apache's graceful shutdown
  # takes ~15 s per broker.
  for p in "${fo_pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  for p in "${fo_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  fo_pids=()
}
trap 'fo_stop; stop_all; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT INT TERM

fo_wait() { # fo_wait <seconds> <what> <command...>
  local deadline=$((SECONDS + $1)) what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      echo "ha-failover: $what not reached within ${deadline}s" >&2
      return 1
    fi
    sleep 0.2
  done
}
fo_listens() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Ports per system: nameservers NSB+i, controllers NSB+4+i, brokers
# BRB+10*i (HA port +1; Apache also opens -2).
fo_ports() {
  if [ "$1" = ours ]; then NSB=${FO_NS_PORT:-39970} BRB=${FO_BROKER_PORT:-40950}; else NSB=49970 BRB=50950; fi
  fo_ns="" fo_ctl="" fo_peers=""
  for i in 0 1 2; do
    fo_ns+="127.0.0.1:$((NSB + i));"
    fo_ctl+="127.0.0.1:$((NSB + 4 + i));"
    fo_peers+="n$i-127.0.0.1:$((NSB + 4 + i));"
  done
  fo_ns=${fo_ns%;} fo_ctl=${fo_ctl%;} fo_peers=${fo_peers%;}
}

fo_start_ns() { # <system> <i>
  local sys=$1 i=$2 dir="$fo_dir/namesrv-$2"
  if [ "$sys" = ours ]; then
    mkdir -p "$dir"
    ctl_namesrv_conf $((NSB + i)) "$dir" "$fo_peers" "n$i" >"$dir/namesrv.conf"
    bin/namesrv -c "$dir/namesrv.conf" >>"$dir.log" 2>&1 &
    fo_pids[$(fo_slot_ns "$i")]=$!
  else
    apache_ha_namesrv "$i" $((NSB + i)) "$fo_peers" "n$i"
    fo_pids[$(fo_slot_ns "$i")]=$apache_pid
  fi
  fo_wait 120 "nameserver $i listening" fo_listens $((NSB + i))
  fo_wait 120 "controller $i listening" fo_listens $((NSB + 4 + i))
}

fo_start_broker() { # <system> <i>
  local sys=$1 i=$2 port=$((BRB + 10 * $2)) dir="$fo_dir/b$2"
  if [ "$sys" = ours ]; then
    mkdir -p "$dir"
    {
      ctl_broker_conf DefaultCluster broker-a "$port" "$fo_ns" "$fo_ctl" "$dir"
      echo "flushDiskType=$FLUSH_DISK_TYPE"
    } >"$dir.conf"
    "$BROKER_BIN" -c "$dir.conf" >>"$dir.log" 2>&1 &
    fo_pids[$(fo_slot_br "$i")]=$!
  else
    apache_ha_broker "$i" "$port" "$fo_ns" "$fo_ctl" "flushDiskType=$FLUSH_DISK_TYPE"
    fo_pids[$(fo_slot_br "$i")]=$apache_pid
  fi
  fo_wait 120 "broker $i listening" fo_listens "$port"
}

# fo_full: the set has a master and all 3 replicas in its SyncStateSet
# (asked of every controller: any one of them forwards to the leader).
fo_full() {
  local c out
  for c in ${fo_ctl//;/ }; do
    out=$(bin/mqadmin getSyncStateSet -a "$c" -b broker-a 2>/dev/null) || continue
    if grep -q '^#SyncStateSetNums[[:space:]]*3$' <<<"$out" && grep -q '^#MasterAddr[[:space:]]*127' <<<"$out"; then
      fo_master=$(awk '/^#MasterAddr/{print $2}' <<<"$out")
      return 0
    fi
  done
  return 1
}

# fo_leaders_known: every controller names a leader.
fo_leaders_known() {
  local c
  for c in ${fo_ctl//;/ }; do
    bin/mqadmin getControllerMetaData -a "$c" 2>/dev/null | grep -q '^#ControllerLeaderAddress[[:space:]]*127' || return 1
  done
}

# fo_alive <pid>: running (a killed child stays a zombie until waited for,
# and kill -0 still succeeds on a zombie).
fo_alive() { [ -r "/proc/$1/stat" ] && ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat"; }

fo_pidlist() { # <first slot> : addr=pid,... of the 3 servers from that slot
  local base=$1 i out="" port
  for i in 0 1 2; do
    if [ "$base" = 0 ]; then port=$((NSB + 4 + i)); else port=$((BRB + 10 * i)); fi
    out+="127.0.0.1:$port=${fo_pids[$((base + i))]},"
  done
  echo "${out%,}"
}

fo_record() { # <system> <round> <json>
  echo "{\"system\":\"$1\",\"round\":$2,${3#\{}" >>"$OUT"
}

# fo_kills <system> <system round> <rounds> <broker|controller> <first slot>
# <restart function> <ready check>: <rounds> times: wait for the ready
# check, let hafailover kill the master (or leader) and time it, restart
# whichever of the 3 servers is dead.
fo_kills() {
  local sys=$1 sr=$2 n=$3 kind=$4 base=$5 restart=$6 ready=$7 r i line
  for r in $(seq 1 "$n"); do
    fo_wait 240 "$sys: $ready before $kind kill $r" "$ready"
    if line=$(bin/hafailover "$kind" -n "$fo_ns" -t BenchHA -pids "$(fo_pidlist "$base")"); then
      fo_record "$sys" "$sr" "$line"
      echo "$sys $kind kill $r: $line" >&2
    else
      echo "$sys $kind kill $r failed" >&2
    fi
    for i in 0 1 2; do
      if ! fo_alive "${fo_pids[$((base + i))]}"; then
        wait "${fo_pids[$((base + i))]}" 2>/dev/null || true
        "$restart" "$sys" "$i"
      fi
    done
  done
  fo_wait 240 "$sys: $ready after the $kind kills" "$ready"
}

fo_run() { # <system> <system round> <kill rounds>
  local sys=$1 sr=$2 n=$3 i r line
  fo_ports "$sys"
  fo_dir="$work/fo-$sys-$sr"
  mkdir -p "$fo_dir"
  [ "$sys" = apache ] && apache_ha_init "$fo_dir"
  local t0=$SECONDS
  for i in 0 1 2; do fo_start_ns "$sys" "$i"; done
  for i in 0 1 2; do fo_start_broker "$sys" "$i"; done
  fo_wait 240 "$sys: a master with 3 replicas in sync" fo_full
  echo "$sys up in $((SECONDS - t0)) s, master $fo_master" >&2
  bin/mqadmin updateTopic -n "${fo_ns%%;*}" -c DefaultCluster -t BenchHA -r "$QUEUES" -w "$QUEUES" >/dev/null
  sleep 2

  # Send TPS and the master's replication lag under that load.
  local lagfile="$fo_dir/lag" p lag
  : >"$lagfile"
  (while sleep 2; do
    bin/mqadmin haStatus -n "${fo_ns%%;*}" -b "$fo_master" 2>/dev/null | awk '/^127\./{print $3}' >>"$lagfile" || true
  done) &
  local sampler=$!
  # CPU (utime+stime) of the master and of the two slaves over the send.
  local mi=$(((${fo_master##*:} - BRB) / 10)) m0 m1 s0=0 s1=0
  m0=$(ticks "${fo_pids[$(fo_slot_br "$mi")]}")
  for i in 0 1 2; do ((i == mi)) || s0=$((s0 + $(ticks "${fo_pids[$(fo_slot_br "$i")]}"))); done
  p=$(bin/mqbench producer -n "$fo_ns" -t BenchHA -s "$SIZE" -w "$THREADS" --duration "$DURATION" --reportInterval 100000 --json 2>/dev/null | tail -1)
  m1=$(ticks "${fo_pids[$(fo_slot_br "$mi")]}")
  for i in 0 1 2; do ((i == mi)) || s1=$((s1 + $(ticks "${fo_pids[$(fo_slot_br "$i")]}"))); done
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  lag=$(sort -n "$lagfile" | tail -1)
  fo_record "$sys" "$sr" "{\"kind\":\"tps\",\"maxLagBytes\":${lag:-0},\"masterCpuTicks\":$((m1 - m0)),\"slavesCpuTicks\":$((s1 - s0)),\"clkTck\":$CLK,\"producer\":${p:-null}}"

  fo_kills "$sys" "$sr" "$n" broker 3 fo_start_broker fo_full
  fo_kills "$sys" "$sr" "$n" controller 0 fo_start_ns fo_leaders_known
  fo_stop
}

if [[ " $SYSTEMS " == *" apache "* ]]; then
  # shellcheck source=../apache/ha-lib.sh
  . scripts/apache/ha-lib.sh
fi
read -ra fo_systems <<<"$SYSTEMS"
fo_each=$(((FO_ROUNDS + FO_SYSTEM_ROUNDS - 1) / FO_SYSTEM_ROUNDS))
for sr in $(seq 1 "$FO_SYSTEM_ROUNDS"); do
  order=("${fo_systems[@]}")
  if ((sr % 2 == 0)) && ((${#order[@]} == 2)); then order=("${order[1]}" "${order[0]}"); fi
  for sys in "${order[@]}"; do
    fo_run "$sys" "$sr" "$fo_each"
  done
done

python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rows = [r for r in rows if "system" in r]
def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")
agg = {}
for r in rows:
    a = agg.setdefault(r["system"], {"broker": [], "controller": [], "tps": [], "lag": [], "cpu": [], "scpu": []})
    if r["kind"] == "tps":
        if r.get("producer"):
            a["tps"].append(r["producer"]["tps"])
            if "masterCpuTicks" in r:  # µs per message
                n = max(r["producer"]["messages"], 1) / 1e6
                a["cpu"].append(r["masterCpuTicks"] / r["clkTck"] / n)
                a["scpu"].append(r["slavesCpuTicks"] / r["clkTck"] / n)
        a["lag"].append(r["maxLagBytes"])
    else:
        a[r["kind"]].append(r["ms"] / 1000)
mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")
for s, a in agg.items():
    for k, label in (("broker", "master kill -> first SEND_OK on new master"), ("controller", "leader controller kill -> new leader")):
        xs = a[k]
        print(f"{s:6s} {label:44s} p50 {pct(xs, .5):6.2f} s  p90 {pct(xs, .9):6.2f} s  max {max(xs) if xs else float('nan'):6.2f} s  n={len(xs)}")
    print(f"{s:6s} {'send TPS (3 replicas, allAckInSyncStateSet)':44s} {mean(a['tps']):9.0f}  max replication lag {max(a['lag']) if a['lag'] else 0} B"
          f"  master CPU {mean(a['cpu']):5.1f} µs/msg  slaves {mean(a['scpu']):5.1f} µs/msg")
if "ours" in agg and "apache" in agg:
    o, j = agg["ours"], agg["apache"]
    def ratio(x, y):
        return x / y if y else float("nan")
    print(f"ratio ours/apache: send TPS {ratio(mean(o['tps']), mean(j['tps'])):.2f}x (target >= 1.5x); "
          f"master failover p50 {ratio(pct(o['broker'], .5), pct(j['broker'], .5)):.2f}x, max {ratio(max(o['broker'], default=0), max(j['broker'], default=0)):.2f}x; "
          f"controller failover p50 {ratio(pct(o['controller'], .5), pct(j['controller'], .5)):.2f}x (lower is better)")
PY
