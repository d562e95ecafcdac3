#!/usr/bin/env bash
# Send TPS and broker CPU per message of our broker over plaintext and TLS,
# side by side in one run (docs/operations.md "TLS"): three brokers of one
# cluster, each with its own topic,
#   plain       tls.server.mode=disabled (the netpoll path)
#   permissive  tls.server.mode=permissive, plaintext clients (goroutine path)
#   tls         tls.server.mode=enforcing, mqbench --tls
# driven in turn by mqbench producer, the order rotating each round. Broker
# CPU is utime+stime of /proc/PID/stat over the run.
#
#   scripts/bench/tls.sh                       # 2 rounds of 20 s, 1 KiB, 32 threads
#   DURATION=10s ROUNDS=1 scripts/bench/tls.sh
#
# Environment: DURATION (20s), ROUNDS (2), SIZE (1024), THREADS (32),
# QUEUES (8), FLUSH_DISK_TYPE (ASYNC_FLUSH), OUT (a results file).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench-lib.sh
. scripts/bench/bench-lib.sh
bench_defaults 20s bench-tls
# shellcheck source=../local-lib.sh
. scripts/local-lib.sh

make build >/dev/null
work=$(mktemp -d -t bench-tls-XXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

NS_PORT=49876
NS=127.0.0.1:$NS_PORT
# The nameserver accepts both (it is not on the send path).
printf 'listenPort=%s\nkvConfigPath=%s\ntls.server.mode=permissive\ntls.config.file=%s\n' \
  "$NS_PORT" "$work/kv.json" "$work/absent.properties" >"$work/namesrv.conf"
bin/namesrv -c "$work/namesrv.conf" >"$work/namesrv.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$NS_PORT) 2>/dev/null && break; sleep 0.1; done

declare -A port=([plain]=50911 [permissive]=51911 [tls]=52911)
declare -A mode=([plain]=disabled [permissive]=permissive [tls]=enforcing)
declare -A bpid
for m in plain permissive tls; do
  {
    broker_conf "broker-$m" "${port[$m]}" "$NS" "$work/$m" "$FLUSH_DISK_TYPE"
    echo "tls.server.mode=${mode[$m]}"
    echo "tls.config.file=$work/absent.properties"
  } >"$work/$m.conf"
  bin/broker -c "$work/$m.conf" >"$work/$m.log" 2>&1 &
  pids+=($!)
  bpid[$m]=$!
done
for m in plain permissive tls; do
  for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/"${port[$m]}") 2>/dev/null && break; sleep 0.1; done
done
sleep 2
for m in plain permissive tls; do
  tlsflag=()
  [ "$m" = tls ] && tlsflag=(--tls --tlsConfigFile "$work/absent.properties")
  bin/mqadmin updateTopic -n "$NS" -b "127.0.0.1:${port[$m]}" -t "BenchTls_$m" -r "$QUEUES" -w "$QUEUES" "${tlsflag[@]}" >/dev/null
done

ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

run() { # mode round
  local m=$1 r=$2 flags=() before after p
  [ "$m" = tls ] && flags=(--tls --tlsConfigFile "$work/absent.properties")
  before=$(cpu "${bpid[$m]}")
  p=$(bin/mqbench producer -n "$NS" -t "BenchTls_$m" -s "$SIZE" -w "$THREADS" --duration "$DURATION" \
    --reportInterval 100000 --json "${flags[@]}" 2>/dev/null | tail -1)
  after=$(cpu "${bpid[$m]}")
  echo "{\"mode\":\"$m\",\"round\":$r,\"cpu_ticks\":$((after - before)),\"clk_tck\":$ticks,\"producer\":$p}" >>"$OUT"
}

modes=(plain permissive tls)
for r in $(seq 1 "$ROUNDS"); do
  for i in 0 1 2; do
    m=${modes[$(((i + r - 1) % 3))]}
    run "$m" "$r"
    echo "round $r $m done" >&2
  done
done

python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
agg = {}
for r in rows:
    a = agg.setdefault(r["mode"], {"msgs": 0, "secs": 0.0, "ticks": 0, "clk": r["clk_tck"], "tps": []})
    p = r["producer"]
    a["msgs"] += p["messages"]
    a["ticks"] += r["cpu_ticks"]
    a["tps"].append(p["tps"])
plain = sum(agg["plain"]["tps"]) / len(agg["plain"]["tps"])
print(f"{'mode':<11} {'send TPS':>10} {'x plain':>8} {'broker CPU µs/msg':>18}")
for m in ("plain", "permissive", "tls"):
    a = agg[m]
    tps = sum(a["tps"]) / len(a["tps"])
    us = a["ticks"] / a["clk"] * 1e6 / max(a["msgs"], 1)
    print(f"{m:<11} {tps:>10.0f} {tps / plain:>8.2f} {us:>18.1f}")
print(f"results: {sys.argv[1]}")
PY
