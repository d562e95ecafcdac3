#!/usr/bin/env bash
# The 5.x gRPC protocol, side by side in one run (issue 17), with the same
# Java 5.x client (rocketmq-client-java, scripts/java5 GrpcBench):
#
#  1. our broker's gRPC endpoint (enableGrpcServer=true) against Apache
#     rocketmq-proxy 5.5.0 in local mode (one JVM: the proxy with its
#     broker; scripts/apache/start.sh with APACHE_PROXY_GRPC_PORT, from
#     Maven Central) and Apache's nameserver: send TPS and latency, then
#     receive+ack TPS (SimpleConsumers, batches of 32, every message acked)
#     draining what was sent, and the broker process's CPU per message
#     (/proc/<pid>/stat utime+stime over the measured window; the proxy's
#     JVM for Apache);
#  2. on our broker, the same send load through remoting (the remoting Java
#     client rocketmq-client 5.5.0, scripts/java RemotingBench) against
#     gRPC: TPS, latency and broker CPU per message. With GO_CLIENTS=1 also
#     with light Go clients (tests/cmd/protobench: raw gRPC SendMessage
#     rpcs against our SDK's remoting producer), whose own CPU cost bends
#     the protocol comparison less than the Java clients'; after the Go
#     gRPC sends, a Go receive+ack run drains as many (protobench -proto
#     grpc-recv: batches of 32, one AckMessage per message, as GrpcBench
#     recv), so that the broker's CPU per received and acked message is
#     measured with a light client too.
#
# One system up at a time, fresh stores each round, the order alternating
# each round (and gRPC/remoting alternating on ours). The client JVM runs on
# the same machine as the broker, so on a small machine both compete for
# the cores: the broker CPU per message is the figure least bent by that.
#
#   scripts/bench/grpc.sh                  # 2 rounds: 25 s warm-up + 15 s sends, 1 KiB, 32 threads
#   ROUNDS=3 DURATION=20s scripts/bench/grpc.sh
#   SYSTEMS=ours scripts/bench/grpc.sh     # our broker only (gRPC vs remoting)
#
# Environment: DURATION (15s, measured send window), WARMUP (25 s, sends not
# counted before it), ROUNDS (2), SIZE (1024), THREADS (32 sending
# threads), PRODUCERS (1 Producer shared by the threads), CONSUMERS (2
# SimpleConsumers), RECV_THREADS (8, sharing the consumers), RECV_TIMEOUT
# (45 s at most to drain), QUEUES (8), FLUSH_DISK_TYPE (ASYNC_FLUSH),
# SYSTEMS ("apache ours"), GO_CLIENTS (1: the Go-client pair too),
# GO_CONNS (1: gRPC connections of the Go client), BENCH_JVM_OPTS (the
# client JVMs' options), A_NS_PORT A_BR_PORT A_GRPC_PORT and O_NS_PORT
# O_BR_PORT O_GRPC_PORT (Apache's and our ports; free ones by default), OUT
# (a results file, one JSON line per system, protocol and round, appended
# to), KEEP (keep the work directory), BROKER_BIN (our broker binary,
# bin/broker by default: another build's, for an A/B of two builds),
# BROKER_ARGS (more flags for it, e.g. --pprof-addr 127.0.0.1:6060).
#
# Run lengths: each send run is WARMUP + DURATION (40 s), a receive run at
# most RECV_TIMEOUT; a round of ours is three runs (six with GO_CLIENTS),
# of Apache two plus ~20 s of start-up. The warm-up is long because
# Apache's freshly started JVM is still compiling after 5 s (it then used
# 4-10x the CPU per message it uses warm; docs/operations.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench-lib.sh
. scripts/bench/bench-lib.sh
bench_defaults 15s bench-grpc
WARMUP=${WARMUP:-25}
PRODUCERS=${PRODUCERS:-1}
CONSUMERS=${CONSUMERS:-2}
RECV_THREADS=${RECV_THREADS:-8}
RECV_TIMEOUT=${RECV_TIMEOUT:-45}
SYSTEMS=${SYSTEMS:-apache ours}
GO_CLIENTS=${GO_CLIENTS:-}
GO_CONNS=${GO_CONNS:-1}
BROKER_BIN=${BROKER_BIN:-bin/broker}
BROKER_ARGS=${BROKER_ARGS:-}
BENCH_JVM_OPTS=${BENCH_JVM_OPTS:--Xms512m -Xmx512m -XX:+UseParallelGC}
secs=${DURATION%s}
case "$secs" in '' | *[!0-9]*)
  echo "grpc.sh: DURATION must be whole seconds (e.g. 15s), not $DURATION" >&2
  exit 2
  ;;
esac

make build >/dev/null
if [ -n "$GO_CLIENTS" ]; then
  (cd tests && go build -o ../bin/protobench ./cmd/protobench)
fi
work=$(mktemp -d -t bench-grpc-XXXX)
CLK=$(getconf CLK_TCK)
# Free loopback ports (bench-lib.sh free_ports), picked once per run unless
# given: a broker also listens on its port - 2 and + 1 (so four from port -
# 2), the proxy on its gRPC port and the one below (its remoting port).
A_NS_PORT=${A_NS_PORT:-$(free_ports 1)} A_BR_PORT=${A_BR_PORT:-$(($(free_ports 4) + 2))}
A_GRPC_PORT=${A_GRPC_PORT:-$(($(free_ports 2) + 1))}
O_NS_PORT=${O_NS_PORT:-$(free_ports 1)} O_BR_PORT=${O_BR_PORT:-$(($(free_ports 4) + 2))}
O_GRPC_PORT=${O_GRPC_PORT:-$(free_ports 1)}
TOPIC=BenchGrpc GROUP=bench_grpc_cg RTOPIC=BenchRemoting

# shellcheck source=../local-lib.sh
. scripts/local-lib.sh
apache_stop() {
  NAMESRV_PORT=$A_NS_PORT APACHE_RUN_DIR="$work/apache" APACHE_STOP_SIGNAL=KILL scripts/apache/stop.sh >/dev/null 2>&1 || true
}
cleanup() {
  stop_servers
  apache_stop
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT INT TERM

# The clients: compiled (and their classpaths resolved) before any server
# starts, so that Maven's work is not measured.
scripts/java5-client.sh GrpcBench >/dev/null 2>&1 || [ $? = 2 ] || {
  echo "grpc.sh: scripts/java5 (GrpcBench) does not build; see scripts/java5/target/mvn.log" >&2
  exit 1
}
jcp=$(scripts/java-classpath.sh)
jclasses=$(scripts/java-compile.sh)
mkdir -p "$work/jlog"

grpc_bench() { # GrpcBench arguments
  # shellcheck disable=SC2086 # word list on purpose
  JAVA5_JVM_OPTS="$BENCH_JVM_OPTS" RMQ_JAVA_LOG_DIR="$work/jlog" scripts/java5-client.sh GrpcBench "$@" 2>>"$work/client.err" | tail -1
}
remoting_bench() { # RemotingBench arguments
  # shellcheck disable=SC2086 # word list on purpose
  java $BENCH_JVM_OPTS -Drmq.logback.configurationFile=scripts/java/logback-client-check.xml \
    -Drocketmq.log.root="$work/jlog" -Drocketmq.client.logRoot="$work/jlog" -Drocketmq.client.logUseSlf4j=true \
    -cp "$jclasses:$jcp" rmqgo.RemotingBench "$@" 2>>"$work/client.err" | tail -1
}
# ok <json>: the client's line says ok.
ok() { python3 -c 'import json,sys; sys.exit(0 if json.loads(sys.argv[1]).get("ok") else 1)' "$1" 2>/dev/null; }
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

# prepare <namesrv>: the benchmark's topics and consumer group (the proxy
# refuses a group that does not exist).
prepare() {
  for t in $TOPIC $RTOPIC; do
    bin/mqadmin updateTopic -n "$1" -c DefaultCluster -t $t -r "$QUEUES" -w "$QUEUES" >/dev/null
  done
  bin/mqadmin updateSubGroup -n "$1" -c DefaultCluster -g $GROUP >/dev/null
  sleep 1
}

# grpc_runs <system> <round> <endpoint> <broker pid>: send, then drain.
grpc_runs() {
  local sys=$1 r=$2 ep=$3 pid=$4 s c
  s=$(grpc_bench send "$ep" $TOPIC "$PRODUCERS" "$THREADS" "$secs" "$WARMUP" "$SIZE" "$pid")
  ok "$s" || { echo "grpc.sh: $sys send failed: $s (client log: $work/jlog)" >&2; exit 1; }
  c=$(grpc_bench recv "$ep" $TOPIC $GROUP "$CONSUMERS" "$RECV_THREADS" "$(field "$s" sent)" "$RECV_TIMEOUT" "$pid")
  ok "$c" || { echo "grpc.sh: $sys receive failed: $c (client log: $work/jlog)" >&2; exit 1; }
  echo "{\"system\":\"$sys\",\"protocol\":\"grpc\",\"round\":$r,\"clkTck\":$CLK,\"send\":$s,\"recv\":$c}" >>"$OUT"
}

remoting_run() { # <round> <namesrv> <broker pid>
  local p
  p=$(remoting_bench "$2" $RTOPIC "$THREADS" "$secs" "$WARMUP" "$SIZE" "$3")
  ok "$p" || { echo "grpc.sh: remoting send failed: $p (client log: $work/jlog)" >&2; exit 1; }
  echo "{\"system\":\"ours\",\"protocol\":\"remoting\",\"round\":$1,\"clkTck\":$CLK,\"send\":$p}" >>"$OUT"
}

go_runs() { # <round> <namesrv> <gRPC endpoint> <broker pid>: gRPC then remoting, or the other way round
  local r=$1 p proto
  local order="grpc remoting"
  ((r % 2)) || order="remoting grpc"
  for proto in $order; do
    p=$(bin/protobench -proto "$proto" -n "$2" -e "$3" -t $RTOPIC -c "$THREADS" -conns "$GO_CONNS" -s "$SIZE" \
      -d "${secs}s" -warmup "${WARMUP}s" -pid "$4" 2>>"$work/client.err" | tail -1)
    ok "$p" || { echo "grpc.sh: Go $proto send failed: $p" >&2; exit 1; }
    local c=""
    if [ "$proto" = grpc ]; then
      c=$(bin/protobench -proto grpc-recv -e "$3" -t $RTOPIC -g $GROUP -c "$RECV_THREADS" -conns "$GO_CONNS" \
        -count "$(field "$p" sent)" -recv-timeout "${RECV_TIMEOUT}s" -pid "$4" 2>>"$work/client.err" | tail -1)
      ok "$c" || { echo "grpc.sh: Go receive failed: $c" >&2; exit 1; }
      c=",\"recv\":$c"
    fi
    echo "{\"system\":\"ours\",\"protocol\":\"go-$proto\",\"round\":$r,\"clkTck\":$CLK,\"send\":$p$c}" >>"$OUT"
  done
}

run_apache() { # <round>
  local r=$1
  rm -rf "$work/apache"
  NAMESRV_PORT=$A_NS_PORT BROKER_PORT=$A_BR_PORT APACHE_PROXY_GRPC_PORT=$A_GRPC_PORT \
    APACHE_RUN_DIR="$work/apache" APACHE_COMMITLOG_SIZE=$((1 << 30)) FLUSH_DISK_TYPE="$FLUSH_DISK_TYPE" \
    scripts/apache/start.sh >"$work/apache-start.out" 2>&1 || {
    cat "$work/apache-start.out" >&2
    exit 1
  }
  local pid
  pid=$(awk '/^proxy /{print $2}' "$work/apache/pids")
  prepare 127.0.0.1:$A_NS_PORT
  grpc_runs apache "$r" 127.0.0.1:$A_GRPC_PORT "$pid"
  apache_stop
}

run_ours() { # <round>
  local r=$1 dir="$work/ours-$1"
  mkdir -p "$dir"
  {
    broker_conf broker-ours $O_BR_PORT 127.0.0.1:$O_NS_PORT "$dir/store" "$FLUSH_DISK_TYPE"
    echo "enableGrpcServer=true"
    echo "grpcServerPort=$O_GRPC_PORT"
    echo "mappedFileSizeCommitLog=$((1 << 30))"
  } >"$dir/broker.conf"
  bin/namesrv --listen-port $O_NS_PORT --kv-config-path "$dir/kv.json" >"$dir/namesrv.log" 2>&1 &
  pids+=($!)
  DATA=$dir wait_port $O_NS_PORT
  # shellcheck disable=SC2086 # word list on purpose
  "$BROKER_BIN" -c "$dir/broker.conf" $BROKER_ARGS >"$dir/broker.log" 2>&1 &
  pids+=($!)
  local pid=$!
  DATA=$dir wait_port $O_BR_PORT
  DATA=$dir wait_port $O_GRPC_PORT
  sleep 2
  prepare 127.0.0.1:$O_NS_PORT
  if ((r % 2)); then
    grpc_runs ours "$r" 127.0.0.1:$O_GRPC_PORT "$pid"
    remoting_run "$r" 127.0.0.1:$O_NS_PORT "$pid"
  else
    remoting_run "$r" 127.0.0.1:$O_NS_PORT "$pid"
    grpc_runs ours "$r" 127.0.0.1:$O_GRPC_PORT "$pid"
  fi
  if [ -n "$GO_CLIENTS" ]; then
    go_runs "$r" 127.0.0.1:$O_NS_PORT 127.0.0.1:$O_GRPC_PORT "$pid"
  fi
  stop_servers
  pids=()
  # A round stores several GiB; the next one starts afresh anyway.
  [ -n "${KEEP:-}" ] || rm -rf "$dir/store"
}

for r in $(seq 1 "$ROUNDS"); do
  if ((r % 2)); then order="apache ours"; else order="ours apache"; fi
  for sys in $order; do
    case " $SYSTEMS " in *" $sys "*) ;; *) continue ;; esac
    if [ "$sys" = ours ]; then run_ours "$r"; else run_apache "$r"; fi
    echo "round $r $sys done" >&2
  done
done

python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")
def cpu(run, clk, who="brokerCpuTicks"):  # µs of CPU per message in the measured window
    return run[who] * 1e6 / clk / max(run["messages"], 1)
agg = {}
for r in rows:
    a = agg.setdefault((r["system"], r["protocol"]), {k: [] for k in ("tps", "p50", "p99", "cpu", "ccpu", "rtps", "rcpu", "rccpu", "complete")})
    s = r["send"]
    a["tps"].append(s["tps"]); a["p50"].append(s["latencyMs"]["p50"]); a["p99"].append(s["latencyMs"]["p99"])
    a["cpu"].append(cpu(s, r["clkTck"])); a["ccpu"].append(cpu(s, r["clkTck"], "clientCpuTicks"))
    if "recv" in r:
        c = r["recv"]
        a["rtps"].append(c["tps"]); a["rcpu"].append(cpu(c, r["clkTck"])); a["rccpu"].append(cpu(c, r["clkTck"], "clientCpuTicks"))
        a["complete"].append(c["complete"])
fmt = lambda x, f: "–" if x != x else format(x, f)
# Each run first: on a shared machine the load of other jobs moves every
# figure; runs next to each other in one round met the same load.
for r in rows:
    s, c = r["send"], r.get("recv")
    line = (f"round {r['round']} {r['system']:6s} {r['protocol']:8s} send {s['tps']:8.0f} TPS p50 {s['latencyMs']['p50']:6.2f} "
            f"p99 {s['latencyMs']['p99']:7.2f} ms, CPU µs/msg broker {cpu(s, r['clkTck']):6.1f} client {cpu(s, r['clkTck'], 'clientCpuTicks'):6.1f}")
    if c:
        line += (f" | recv+ack {c['tps']:8.0f} TPS ({c['messages']} in {c['seconds']} s{'' if c['complete'] else ', INCOMPLETE'}),"
                 f" CPU µs/msg broker {cpu(c, r['clkTck']):6.1f} client {cpu(c, r['clkTck'], 'clientCpuTicks'):6.1f}")
    print(line)
print()
print("CPU µs/msg: broker (client) CPU per message in the measured window")
print(f"{'':22s} {'send TPS':>9s} {'p50 ms':>7s} {'p99 ms':>7s} {'CPU µs/msg':>14s} {'recv+ack TPS':>12s} {'CPU µs/msg':>14s} rounds")
labels = {("ours", "grpc"): "ours, gRPC", ("apache", "grpc"): "Apache proxy 5.5.0", ("ours", "remoting"): "ours, remoting (Java)",
          ("ours", "go-grpc"): "ours, gRPC (Go)", ("ours", "go-remoting"): "ours, remoting (Go)"}
for k in labels:
    if k not in agg:
        continue
    a = agg[k]
    sc = f"{mean(a['cpu']):.1f} ({mean(a['ccpu']):.0f})"
    rc = "–" if not a["rcpu"] else f"{mean(a['rcpu']):.1f} ({mean(a['rccpu']):.0f})"
    print(f"{labels[k]:22s} {mean(a['tps']):9.0f} {mean(a['p50']):7.2f} {mean(a['p99']):7.2f} {sc:>14s} "
          f"{fmt(mean(a['rtps']), '12.0f'):>12s} {rc:>14s} {len(a['tps'])}")
    if a["complete"] and not all(a["complete"]):
        print(f"  ({labels[k]}: a receive run did not drain everything within RECV_TIMEOUT; its TPS is what it acked)")
def verdict(x, target, ge):
    return "met" if (x >= target if ge else x <= target) else "NOT met"
o, p, m = agg.get(("ours", "grpc")), agg.get(("apache", "grpc")), agg.get(("ours", "remoting"))
if o and p:
    x = mean(o["tps"]) / mean(p["tps"]); print(f"ours/Apache send TPS        {x:5.2f}x  (target >= 2x: {verdict(x, 2, True)})")
    x = mean(o["rtps"]) / mean(p["rtps"]); print(f"ours/Apache recv+ack TPS    {x:5.2f}x  (target >= 2x: {verdict(x, 2, True)})")
    x = mean(o["p99"]) / mean(p["p99"]); print(f"ours/Apache send p99        {x:5.2f}x  (target <= 0.5x: {verdict(x, 0.5, False)})")
    print(f"ours/Apache CPU per message send {mean(o['cpu']) / mean(p['cpu']):.2f}x, recv+ack {mean(o['rcpu']) / mean(p['rcpu']):.2f}x")
if o and m:
    x = mean(o["tps"]) / mean(m["tps"]); print(f"ours gRPC/remoting send TPS {x:5.2f}x  (target >= 0.8x: {verdict(x, 0.8, True)}); CPU per message {mean(o['cpu']) / mean(m['cpu']):.2f}x, p99 {mean(o['p99']) / mean(m['p99']):.2f}x")
g, gr = agg.get(("ours", "go-grpc")), agg.get(("ours", "go-remoting"))
if g and gr:
    x = mean(g["tps"]) / mean(gr["tps"]); print(f"Go clients: ours gRPC/remoting send TPS {x:5.2f}x  (target >= 0.8x: {verdict(x, 0.8, True)}); CPU per message {mean(g['cpu']) / mean(gr['cpu']):.2f}x, p99 {mean(g['p99']) / mean(gr['p99']):.2f}x")
PY
echo "raw results: $OUT" >&2
