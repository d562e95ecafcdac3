#!/usr/bin/env bash
# Side by side on this machine, in one run: send TPS and consume (catch-up)
# TPS of our broker against Apache RocketMQ 5.5.0's broker (from Maven
# Central, scripts/apache/start.sh), same client (mqbench), same settings,
# alternating the order each round so drift hits both. Also broker memory.
#
#   scripts/bench/vs-apache.sh                 # 2 rounds of 30 s, 1 KiB, 32 threads, ASYNC_FLUSH
#   FLUSH_DISK_TYPE=SYNC_FLUSH DURATION=20s ROUNDS=3 scripts/bench/vs-apache.sh
#   TLS=1 scripts/bench/vs-apache.sh           # mqbench --tls against both
#
# Environment: DURATION (30s), ROUNDS (2), SIZE (1024), THREADS (32),
# FLUSH_DISK_TYPE (ASYNC_FLUSH), QUEUES (8), OUT (a results file), TLS (0;
# 1: both systems in tls.server.mode=permissive — Apache's default, with
# its self-signed certificate — and the clients over TLS).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench-lib.sh
. scripts/bench/bench-lib.sh
bench_defaults 30s vs-apache
export FLUSH_DISK_TYPE
TLS=${TLS:-0}

make build >/dev/null
work=$(mktemp -d -t vs-apache-XXXX)
A_NS=127.0.0.1:19876 A_BR=127.0.0.1:20911
O_NS_PORT=39876 O_BR_PORT=40911
O_NS=127.0.0.1:$O_NS_PORT O_BR=127.0.0.1:$O_BR_PORT

# shellcheck source=../local-lib.sh
. scripts/local-lib.sh
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  NAMESRV_PORT=19876 scripts/apache/stop.sh >/dev/null 2>&1 || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

echo "starting Apache RocketMQ 5.5.0 ($FLUSH_DISK_TYPE)..." >&2
NAMESRV_PORT=19876 BROKER_PORT=20911 APACHE_COMMITLOG_SIZE=$((1 << 30)) scripts/apache/start.sh >"$work/apache.out" 2>&1 || {
  cat "$work/apache.out" >&2; exit 1; }

echo "starting ours ($FLUSH_DISK_TYPE)..." >&2
broker_conf broker-ours "$O_BR_PORT" "$O_NS" "$work/ours" "$FLUSH_DISK_TYPE" >"$work/broker.conf"
tlsflags=()
if [ "$TLS" = 1 ]; then
  # Apache's defaults (tls.server.mode=permissive, tls.test.mode.enable):
  # Apache needs no setting, ours gets the mode.
  printf 'tls.server.mode=permissive\ntls.config.file=%s\n' "$work/absent.properties" >>"$work/broker.conf"
  export NAMESRV_TLS_SERVER_MODE=permissive NAMESRV_TLS_CONFIG_FILE="$work/absent.properties"
  tlsflags=(--tls --tlsConfigFile "$work/absent.properties")
fi
bin/namesrv --listen-port $O_NS_PORT --kv-config-path "$work/kv.json" >"$work/namesrv.log" 2>&1 &
pids+=($!)
sleep 1
bin/broker -c "$work/broker.conf" >"$work/broker.log" 2>&1 &
pids+=($!)
ours_pid=$!
for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$O_BR_PORT) 2>/dev/null && break; sleep 0.1; done
sleep 2
apache_pid=$(awk '/^broker /{print $2}' "${TMPDIR:-/tmp}/rmq-apache-19876/pids")

rss() { awk '/VmRSS/{print $2}' /proc/$1/status; }
anon() { awk '/RssAnon/{print $2}' /proc/$1/status; }
echo "idle RSS KiB: ours $(rss $ours_pid) (anon $(anon $ours_pid)), apache $(rss $apache_pid) (anon $(anon $apache_pid))" | tee -a "$OUT.txt" >&2

for ns in $O_NS $A_NS; do
  bin/mqadmin updateTopic -n $ns -c DefaultCluster -t BenchVs -r $QUEUES -w $QUEUES >/dev/null
done

run() { # system ns round
  local sys=$1 ns=$2 r=$3
  local p c
  p=$(bin/mqbench producer -n "$ns" -t BenchVs -s "$SIZE" -w "$THREADS" --duration "$DURATION" --reportInterval 100000 --json "${tlsflags[@]}" 2>/dev/null | tail -1)
  local n
  n=$(echo "$p" | python3 -c 'import json,sys; print(json.load(sys.stdin)["messages"])')
  c=$(bin/mqbench consumer -n "$ns" -t BenchVs -g "vs_${sys}_$r" --from-first --count "$n" --duration 180s --reportInterval 100000 --json "${tlsflags[@]}" 2>/dev/null | tail -1)
  echo "{\"system\":\"$sys\",\"round\":$r,\"producer\":$p,\"consumer\":$c}" >>"$OUT"
}

for r in $(seq 1 "$ROUNDS"); do
  if (( r % 2 )); then order="ours apache"; else order="apache ours"; fi
  for sys in $order; do
    if [ "$sys" = ours ]; then run ours $O_NS $r; else run apache $A_NS $r; fi
    echo "round $r $sys done" >&2
  done
done
echo "loaded RSS KiB: ours $(rss $ours_pid) (anon $(anon $ours_pid)), apache $(rss $apache_pid) (anon $(anon $apache_pid))" | tee -a "$OUT.txt" >&2

python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
agg = {}
for r in rows:
    a = agg.setdefault(r["system"], {"send": [], "consume": [], "p99": []})
    a["send"].append(r["producer"]["tps"]); a["consume"].append(r["consumer"]["tps"]); a["p99"].append(r["producer"]["latencyMs"]["p99"])
mean = lambda xs: sum(xs) / len(xs)
for s in ("ours", "apache"):
    a = agg[s]
    print(f"{s:7s} send TPS {mean(a['send']):10.0f}  consume TPS {mean(a['consume']):10.0f}  send p99 {mean(a['p99']):.2f} ms  rounds {len(a['send'])}")
o, p = agg["ours"], agg["apache"]
print(f"ratio   send {mean(o['send'])/mean(p['send']):.2f}x  consume {mean(o['consume'])/mean(p['consume']):.2f}x")
PY
echo "raw results: $OUT" >&2
