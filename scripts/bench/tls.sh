#!/usr/bin/env bash
# Send TPS and broker CPU per message of our broker over plaintext, TLS and
# with authentication, side by side in one run (docs/operations.md "TLS"):
# one broker of one cluster per mode, each with its own topic,
#   plain       tls.server.mode=disabled (the netpoll path)
#   permissive  tls.server.mode=permissive, plaintext clients (goroutine path)
#   tls         tls.server.mode=enforcing, mqbench --tls
#   auth        plain with authentication and authorization on (ACL 2.0):
#               a Normal user "bench" allowed Pub on the topic, every send
#               signed by mqbench, authenticated and authorized
#   auth-tls    auth and tls together
# driven in turn by mqbench producer, the order rotating each round. Broker
# CPU is utime+stime of /proc/PID/stat over the run.
#
#   scripts/bench/tls.sh                       # 2 rounds of 20 s, 1 KiB, 32 threads
#   DURATION=10s ROUNDS=1 scripts/bench/tls.sh
#   MODES="plain auth auth-tls" scripts/bench/tls.sh   # make bench-auth
#
# Environment: DURATION (20s), ROUNDS (2), SIZE (1024), THREADS (32),
# QUEUES (8), FLUSH_DISK_TYPE (ASYNC_FLUSH), OUT (a results file), MODES
# ("plain permissive tls"; plain always runs, as the baseline), PPROF (0;
# 1: each broker serves /debug/pprof/ and a CPU profile of every run is
# kept beside OUT as OUT.MODE.ROUND.pprof, mqbench's as
# OUT.MODE.ROUND.client.pprof). Client CPU is mqbench's user+system time.
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

read -r -a modes <<<"${MODES:-plain permissive tls}"
[[ " ${modes[*]} " == *" plain "* ]] || modes=(plain "${modes[@]}")
PPROF=${PPROF:-0}
SUPER_AK=rocketmq SUPER_SK=12345678
BENCH_AK=bench BENCH_SK=bench-secret-1
declare -A port=([plain]=50911 [permissive]=51911 [tls]=52911 [auth]=53911 [auth-tls]=54911)
declare -A mode=([plain]=disabled [permissive]=permissive [tls]=enforcing [auth]=disabled [auth-tls]=enforcing)
declare -A bpid pport
isauth() { [[ $1 == auth* ]]; }
istls() { [[ $1 == tls || $1 == *-tls ]]; }
for m in "${modes[@]}"; do
  [ -n "${port[$m]:-}" ] || { echo "unknown mode $m (plain permissive tls auth auth-tls)" >&2; exit 2; }
  {
    broker_conf "broker-$m" "${port[$m]}" "$NS" "$work/$m" "$FLUSH_DISK_TYPE"
    echo "tls.server.mode=${mode[$m]}"
    echo "tls.config.file=$work/absent.properties"
    if isauth "$m"; then
      echo "authenticationEnabled=true"
      echo "authorizationEnabled=true"
      echo "initAuthenticationUser={\"username\":\"$SUPER_AK\",\"password\":\"$SUPER_SK\"}"
      echo "innerClientAuthenticationCredentials={\"accessKey\":\"$SUPER_AK\",\"secretKey\":\"$SUPER_SK\"}"
    fi
  } >"$work/$m.conf"
  pflag=()
  if [ "$PPROF" = 1 ]; then
    pport[$m]=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    pflag=(--pprof-addr "127.0.0.1:${pport[$m]}")
  fi
  bin/broker -c "$work/$m.conf" "${pflag[@]}" >"$work/$m.log" 2>&1 &
  pids+=($!)
  bpid[$m]=$!
done
for m in "${modes[@]}"; do
  up=0
  for _ in $(seq 1 300); do (exec 3<>/dev/tcp/127.0.0.1/"${port[$m]}") 2>/dev/null && { up=1; break; }; sleep 0.1; done
  [ "$up" = 1 ] || { echo "broker $m not listening on ${port[$m]} after 30 s:" >&2; tail -20 "$work/$m.log" >&2; exit 1; }
done
sleep 2
# clientflags <mode>: mqbench's and mqadmin's TLS flags of a mode.
clientflags() {
  if istls "$1"; then echo "--tls --tlsConfigFile $work/absent.properties"; fi
}
for m in "${modes[@]}"; do
  read -r -a tlsflag <<<"$(clientflags "$m")"
  adm=()
  isauth "$m" && adm=(-ak "$SUPER_AK" -sk "$SUPER_SK")
  bin/mqadmin updateTopic -n "$NS" -b "127.0.0.1:${port[$m]}" -t "BenchTls_$m" -r "$QUEUES" -w "$QUEUES" "${tlsflag[@]}" "${adm[@]}" >/dev/null
  if isauth "$m"; then
    bin/mqadmin createUser -b "127.0.0.1:${port[$m]}" -u "$BENCH_AK" -p "$BENCH_SK" -t Normal "${tlsflag[@]}" "${adm[@]}" >/dev/null
    bin/mqadmin createAcl -b "127.0.0.1:${port[$m]}" -s "User:$BENCH_AK" -r "Topic:BenchTls_$m" -a Pub -d Allow "${tlsflag[@]}" "${adm[@]}" >/dev/null
  fi
done

ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

run() { # mode round
  local m=$1 r=$2 flags=() before after p prof=""
  read -r -a flags <<<"$(clientflags "$m")"
  isauth "$m" && flags+=(--aclEnable true --accessKey "$BENCH_AK" --secretKey "$BENCH_SK")
  if [ "$PPROF" = 1 ]; then
    # The profile covers the middle of the run (a second in, DURATION - 2 s).
    (sleep 1; curl -s -o "$OUT.$m.$r.pprof" "http://127.0.0.1:${pport[$m]}/debug/pprof/profile?seconds=$(( ${DURATION%s} - 2 ))") &
    prof=$!
  fi
  local cprof=()
  [ "$PPROF" = 1 ] && cprof=(MQBENCH_CPUPROFILE="$OUT.$m.$r.client.pprof")
  before=$(cpu "${bpid[$m]}")
  p=$(env "${cprof[@]}" /usr/bin/time -f '%U %S' -o "$work/client-time" bin/mqbench producer -n "$NS" -t "BenchTls_$m" -s "$SIZE" -w "$THREADS" --duration "$DURATION" \
    --reportInterval 100000 --json "${flags[@]}" 2>/dev/null | tail -1)
  after=$(cpu "${bpid[$m]}")
  [ -z "$prof" ] || wait "$prof" || true
  local client
  client=$(awk '{printf "%.2f", $1 + $2}' "$work/client-time")
  echo "{\"mode\":\"$m\",\"round\":$r,\"cpu_ticks\":$((after - before)),\"clk_tck\":$ticks,\"client_cpu_s\":$client,\"producer\":$p}" >>"$OUT"
}

k=${#modes[@]}
for r in $(seq 1 "$ROUNDS"); do
  for i in $(seq 0 $((k - 1))); do
    m=${modes[$(((i + r - 1) % k))]}
    run "$m" "$r"
    echo "round $r $m done" >&2
  done
done

python3 - "$OUT" "${modes[@]}" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
agg = {}
for r in rows:
    a = agg.setdefault(r["mode"], {"msgs": 0, "ticks": 0, "client": 0.0, "clk": r["clk_tck"], "tps": []})
    p = r["producer"]
    a["msgs"] += p["messages"]
    a["ticks"] += r["cpu_ticks"]
    a["client"] += r["client_cpu_s"]
    a["tps"].append(p["tps"])
mean = lambda xs: sum(xs) / len(xs)
plain = agg["plain"]
print(f"{'mode':<11} {'send TPS':>10} {'x plain':>8} {'rounds x plain':>16} {'broker CPU µs/msg':>18} {'client CPU µs/msg':>18}")
for m in sys.argv[2:]:
    a = agg[m]
    per_round = " ".join(f"{t / p:.2f}" for t, p in zip(a["tps"], plain["tps"]))
    us = a["ticks"] / a["clk"] * 1e6 / max(a["msgs"], 1)
    cus = a["client"] * 1e6 / max(a["msgs"], 1)
    print(f"{m:<11} {mean(a['tps']):>10.0f} {mean(a['tps']) / mean(plain['tps']):>8.2f} {per_round:>16} {us:>18.1f} {cus:>18.1f}")
print(f"results: {sys.argv[1]}")
PY
