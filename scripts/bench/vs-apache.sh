#!/usr/bin/env bash
# Side by side on this machine, in one run: send TPS and consume (catch-up)
# TPS of our broker against Apache RocketMQ 5.5.0's broker (from Maven
# Central, scripts/apache/start.sh), same client (mqbench), same settings,
# alternating the order each round so drift hits both. Also broker memory.
#
#   scripts/bench/vs-apache.sh                 # 2 rounds of 30 s, 1 KiB, 32 threads, ASYNC_FLUSH
#   FLUSH_DISK_TYPE=SYNC_FLUSH DURATION=20s ROUNDS=3 scripts/bench/vs-apache.sh
#   TLS=1 scripts/bench/vs-apache.sh           # mqbench --tls against both
#   AUTH=1 TLS=1 PLAIN=1 scripts/bench/vs-apache.sh   # both with ACL 2.0 and TLS, and ours plain beside them
#
# Environment: DURATION (30s), ROUNDS (2), SIZE (1024), THREADS (32),
# FLUSH_DISK_TYPE (ASYNC_FLUSH), QUEUES (8), OUT (a results file), TLS (0;
# 1: both systems in tls.server.mode=permissive — Apache's default, with
# its self-signed certificate — and the clients over TLS), AUTH (0; 1: both
# brokers with authentication and authorization on — Apache with its
# DefaultAuthenticationProvider / DefaultAuthorizationProvider, super user
# rocketmq/12345678 as initAuthenticationUser and inner credentials — and a
# Normal user "bench" allowed Pub,Sub on Topic:BenchVs and Group:vs_*, which
# mqbench signs as: every send and pull is authenticated and authorized),
# PLAIN (0; 1: a third system, "plain", our broker without auth and TLS on
# ports of its own, in the same rotation: the baseline of AUTH/TLS), CLIENT
# (mqbench; apache: the sends are Apache's own benchmark Producer 5.5.0,
# org.apache.rocketmq.example.benchmark.Producer from rocketmq-example, with
# -a true -ak/-sk under AUTH=1 and -Dtls.enable=true under TLS=1; its TPS is
# the mean of its per-second reports, its p99 column their Max RT; then the
# catch-up is Apache's benchmark Consumer for CONSUME_SECS (30) and a third
# phase Apache's BatchProducer, batches of BATCH (16), each with the
# broker's CPU per message over its own window).
# Broker CPU per message is utime+stime of /proc/PID/stat over the sends.
# HALF_RATE (1; 0: off): after each system's phases, mqbench sends at half
# of the peak send TPS that system just reached in the same round, open
# loop (mqbench --rate: each latency counted from when its send was due),
# for HALF_SECS (DURATION) from HALF_THREADS (128) senders (enough that
# in-flight sends never cap the rate: at 10k/s a 10 ms stall needs 100),
# and the summary prints its p50/p99 side by
# side (issue 18: ours <= 0.5x Apache's p99). The same client, mqbench,
# for both systems whatever CLIENT is (Apache's Producer has no rate).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench-lib.sh
. scripts/bench/bench-lib.sh
bench_defaults 30s vs-apache
export FLUSH_DISK_TYPE
TLS=${TLS:-0}
AUTH=${AUTH:-0}
PLAIN=${PLAIN:-0}
CLIENT=${CLIENT:-mqbench}
HALF_RATE=${HALF_RATE:-1}
HALF_SECS=${HALF_SECS:-${DURATION%s}}
HALF_THREADS=${HALF_THREADS:-128}
SUPER_AK=rocketmq SUPER_SK=12345678
BENCH_AK=bench BENCH_SK=bench-secret-1

# Lines OUT already holds: the summary reads only the rows this run adds.
out_lines_before=0
[ -f "$OUT" ] && out_lines_before=$(wc -l < "$OUT")
make build >/dev/null
if [ "$CLIENT" = apache ]; then
  # shellcheck source=../java-lib.sh
  . scripts/java-lib.sh
  find_java
  jbench="$PWD/scripts/bench/apache-bench"
  resolve_classpath "$jbench/pom.xml" 5.5.0 "$jbench/target/classpath-5.5.0.txt" vs-apache.sh org.apache.rocketmq:rocketmq-example
  jcp=$(cat "$jbench/target/classpath-5.5.0.txt")
fi
work=$(mktemp -d -t vs-apache-XXXX)
# Ports: free ones unless given (other runs may hold the old fixed ones);
# a broker also listens on its port - 2 and + 1.
A_NS_PORT=${A_NS_PORT:-$(free_ports 1)} A_BR_PORT=${A_BR_PORT:-$(($(free_ports 4) + 2))}
O_NS_PORT=${O_NS_PORT:-$(free_ports 1)} O_BR_PORT=${O_BR_PORT:-$(($(free_ports 4) + 2))}
A_NS=127.0.0.1:$A_NS_PORT A_BR=127.0.0.1:$A_BR_PORT
O_NS=127.0.0.1:$O_NS_PORT O_BR=127.0.0.1:$O_BR_PORT

# shellcheck source=../local-lib.sh
. scripts/local-lib.sh
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  NAMESRV_PORT=$A_NS_PORT scripts/apache/stop.sh >/dev/null 2>&1 || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

apache_extra=""
if [ "$AUTH" = 1 ]; then
  apache_extra="authenticationEnabled=true
authenticationProvider=org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider
authenticationMetadataProvider=org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider
initAuthenticationUser={\"username\":\"$SUPER_AK\",\"password\":\"$SUPER_SK\"}
innerClientAuthenticationCredentials={\"accessKey\":\"$SUPER_AK\",\"secretKey\":\"$SUPER_SK\"}
authorizationEnabled=true
authorizationProvider=org.apache.rocketmq.auth.authorization.provider.DefaultAuthorizationProvider
authorizationMetadataProvider=org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider"
fi
echo "starting Apache RocketMQ 5.5.0 ($FLUSH_DISK_TYPE, AUTH=$AUTH TLS=$TLS)..." >&2
NAMESRV_PORT=$A_NS_PORT BROKER_PORT=$A_BR_PORT APACHE_COMMITLOG_SIZE=$((1 << 30)) APACHE_BROKER_CONF_EXTRA="$apache_extra" \
  scripts/apache/start.sh >"$work/apache.out" 2>&1 || {
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
authflags=()
super=()
if [ "$AUTH" = 1 ]; then
  cat >>"$work/broker.conf" <<CONF
authenticationEnabled=true
authorizationEnabled=true
initAuthenticationUser={"username":"$SUPER_AK","password":"$SUPER_SK"}
innerClientAuthenticationCredentials={"accessKey":"$SUPER_AK","secretKey":"$SUPER_SK"}
CONF
  authflags=(--aclEnable true --accessKey "$BENCH_AK" --secretKey "$BENCH_SK")
  super=(-ak "$SUPER_AK" -sk "$SUPER_SK")
fi
bin/namesrv --listen-port $O_NS_PORT --kv-config-path "$work/kv.json" >"$work/namesrv.log" 2>&1 &
pids+=($!)
sleep 1
bin/broker -c "$work/broker.conf" >"$work/broker.log" 2>&1 &
pids+=($!)
ours_pid=$!
for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$O_BR_PORT) 2>/dev/null && break; sleep 0.1; done
systems=(ours apache)
declare -A ns_of=([ours]=$O_NS [apache]=$A_NS) br_of=([ours]=$O_BR [apache]=$A_BR) pid_of
if [ "$PLAIN" = 1 ]; then
  # Ours without auth and TLS: the environment above is for the other one.
  P_NS_PORT=${P_NS_PORT:-$(free_ports 1)} P_BR_PORT=${P_BR_PORT:-$(($(free_ports 4) + 2))}
  P_NS=127.0.0.1:$P_NS_PORT P_BR=127.0.0.1:$P_BR_PORT
  broker_conf broker-plain "$P_BR_PORT" "$P_NS" "$work/plain" "$FLUSH_DISK_TYPE" >"$work/plain.conf"
  env -u NAMESRV_TLS_SERVER_MODE -u NAMESRV_TLS_CONFIG_FILE bin/namesrv --listen-port "$P_NS_PORT" --kv-config-path "$work/kv-plain.json" >"$work/namesrv-plain.log" 2>&1 &
  pids+=($!)
  sleep 1
  bin/broker -c "$work/plain.conf" >"$work/broker-plain.log" 2>&1 &
  pids+=($!)
  pid_of[plain]=$!
  for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$P_BR_PORT) 2>/dev/null && break; sleep 0.1; done
  systems+=(plain)
  ns_of[plain]=$P_NS br_of[plain]=$P_BR
fi
sleep 2
apache_pid=$(awk '/^broker /{print $2}' "${TMPDIR:-/tmp}/rmq-apache-$A_NS_PORT/pids")
pid_of[ours]=$ours_pid pid_of[apache]=$apache_pid

rss() { awk '/VmRSS/{print $2}' /proc/$1/status; }
anon() { awk '/RssAnon/{print $2}' /proc/$1/status; }
echo "idle RSS KiB: ours $(rss $ours_pid) (anon $(anon $ours_pid)), apache $(rss $apache_pid) (anon $(anon $apache_pid))" | tee -a "$OUT.txt" >&2

for sys in "${systems[@]}"; do
  adm=()
  [ "$sys" != plain ] && adm=("${super[@]}")
  bin/mqadmin updateTopic -n "${ns_of[$sys]}" -c DefaultCluster -t BenchVs -r $QUEUES -w $QUEUES "${adm[@]}" >/dev/null
  if [ "$AUTH" = 1 ] && [ "$sys" != plain ]; then
    bin/mqadmin createUser -b "${br_of[$sys]}" -u "$BENCH_AK" -p "$BENCH_SK" -t Normal "${adm[@]}" >/dev/null
    bin/mqadmin createAcl -b "${br_of[$sys]}" -s "User:$BENCH_AK" -r "Topic:BenchVs,Group:vs_*" -a Pub,Sub -d Allow "${adm[@]}" >/dev/null
  fi
done

ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# apache_producer <ns> <system>: Apache's benchmark Producer for DURATION,
# summarised as mqbench's --json line.
apache_producer() {
  local ns=$1 sys=$2 log="$work/jbench.log" jflags=() aflags=()
  if [ "$sys" != plain ]; then
    [ "$TLS" = 1 ] && jflags=(-Dtls.enable=true)
    [ "$AUTH" = 1 ] && aflags=(-a true -ak "$BENCH_AK" -sk "$BENCH_SK")
  fi
  # The JVM gets JAVA_START (15 s) to start and connect on top of DURATION;
  # the TPS is the mean of the reports of the last DURATION seconds.
  timeout -s INT "$(( ${DURATION%s} + ${JAVA_START:-15} ))" java -Xms256m -Xmx512m -XX:+UseSerialGC "${jflags[@]}" -cp "$jcp" \
    org.apache.rocketmq.example.benchmark.Producer -n "$ns" -t BenchVs -s "$SIZE" -w "$THREADS" -ri 1000 "${aflags[@]}" \
    >"$log" 2>&1 || true
  python3 - "$log" "${DURATION%s}" <<'PY'
import json, re, sys
rows = [tuple(map(float, m.groups())) for m in re.finditer(
    r"Current Time: .*? \| Send TPS: (\d+) \| Max RT\(ms\): (\d+) \| Average RT\(ms\): +([\d.]+) \| Send Failed: (\d+)", open(sys.argv[1]).read())]
sent = int(sum(r[0] for r in rows))
rows = [r for r in rows if r[0] > 0][-int(sys.argv[2]):]
tps = sum(r[0] for r in rows) / max(len(rows), 1)
print(json.dumps({"tps": tps, "messages": sent, "sendFailed": int(rows[-1][3]) if rows else 0,
                  "latencyMs": {"p99": max((r[1] for r in rows), default=0)}, "client": "apache-benchmark-producer"}))
PY
}

# apache_java <log> <class> <seconds> <args...>: one of Apache's benchmark
# programs for JAVA_START + seconds, with the system's TLS/ACL flags.
apache_java() {
  local log=$1 cls=$2 secs=$3 sys=$4 jflags=() aflags=()
  shift 4
  if [ "$sys" != plain ]; then
    [ "$TLS" = 1 ] && jflags=(-Dtls.enable=true)
    [ "$AUTH" = 1 ] && aflags=(-a true -ak "$BENCH_AK" -sk "$BENCH_SK")
  fi
  timeout -s INT "$(( secs + ${JAVA_START:-15} ))" java -Xms256m -Xmx512m -XX:+UseSerialGC "${jflags[@]}" -cp "$jcp" \
    "org.apache.rocketmq.example.benchmark.$cls" "$@" -ri 1000 "${aflags[@]}" >"$log" 2>&1 || true
}

# apache_batch <ns> <system>: Apache's BatchProducer (-b BATCH, 16) for
# DURATION: {"tps": sends/s, "mps": messages/s, "messages": ...}.
apache_batch() {
  local log="$work/jbatch.log"
  apache_java "$log" BatchProducer "${DURATION%s}" "$2" -n "$1" -t BenchVs -s "$SIZE" -w "$THREADS" -b "${BATCH:-16}"
  python3 - "$log" "${DURATION%s}" <<'PY'
import json, re, sys
rows = [tuple(map(float, m.groups())) for m in re.finditer(
    r"Current Time: .*? \| Send TPS: (\d+) \| Send MPS: (\d+) \| Max RT\(ms\): (\d+)", open(sys.argv[1]).read())]
sent = int(sum(r[1] for r in rows))
rows = [r for r in rows if r[1] > 0][-int(sys.argv[2]):]
n = max(len(rows), 1)
print(json.dumps({"tps": sum(r[0] for r in rows) / n, "mps": sum(r[1] for r in rows) / n, "messages": sent,
                  "latencyMs": {"p99": max((r[2] for r in rows), default=0)}, "client": "apache-benchmark-batchproducer"}))
PY
}

# apache_consumer <ns> <system> <group>: Apache's benchmark Consumer (a
# push consumer; a new group starts from the first offset) catching up
# for CONSUME_SECS (30): {"tps": mean of the non-zero reports, "messages"}.
apache_consumer() {
  local log="$work/jconsumer.log"
  apache_java "$log" Consumer "${CONSUME_SECS:-30}" "$2" -n "$1" -t BenchVs -g "$3" -w 20
  python3 - "$log" <<'PY'
import json, re, sys
rows = [float(m.group(1)) for m in re.finditer(r"Current Time: .*? \| Consume TPS: (\d+)", open(sys.argv[1]).read())]
got = int(sum(rows))
busy = [r for r in rows if r > 0]
# The first and last busy seconds are partial: left out when there are more.
core = busy[1:-1] if len(busy) > 2 else busy
print(json.dumps({"tps": sum(core) / max(len(core), 1), "messages": got, "client": "apache-benchmark-consumer"}))
PY
}

run() { # system round
  local sys=$1 r=$2
  local ns=${ns_of[$sys]} p c n before after flags=()
  [ "$sys" != plain ] && flags=("${tlsflags[@]}" "${authflags[@]}")
  before=$(cpu "${pid_of[$sys]}")
  if [ "$CLIENT" = apache ]; then
    p=$(apache_producer "$ns" "$sys")
  else
    p=$(bin/mqbench producer -n "$ns" -t BenchVs -s "$SIZE" -w "$THREADS" --duration "$DURATION" --reportInterval 100000 --json "${flags[@]}" 2>/dev/null | tail -1)
  fi
  after=$(cpu "${pid_of[$sys]}")
  n=$(echo "$p" | python3 -c 'import json,sys; print(json.load(sys.stdin)["messages"])')
  [ "$n" -gt 0 ] || { echo "$sys: nothing sent" >&2; exit 1; }
  local extra=""
  if [ "$CLIENT" = apache ]; then
    # Catch-up with Apache's Consumer, then BatchProducer, each with the
    # broker's CPU over its own window.
    local before2 after2
    before2=$(cpu "${pid_of[$sys]}")
    c=$(apache_consumer "$ns" "$sys" "vs_${sys}_$r")
    after2=$(cpu "${pid_of[$sys]}")
    local bp before3 after3
    before3=$(cpu "${pid_of[$sys]}")
    bp=$(apache_batch "$ns" "$sys")
    after3=$(cpu "${pid_of[$sys]}")
    extra=",\"consume_ticks\":$((after2 - before2)),\"batch_ticks\":$((after3 - before3)),\"batch\":$bp"
  else
    c=$(bin/mqbench consumer -n "$ns" -t BenchVs -g "vs_${sys}_$r" --from-first --count "$n" --duration 180s --reportInterval 100000 --json "${flags[@]}" 2>/dev/null | tail -1)
  fi
  if [ "$HALF_RATE" = 1 ]; then
    # Half of the peak this system just reached, same client for both.
    local rate h
    rate=$(echo "$p" | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["tps"] / 2))')
    h=$(bin/mqbench producer -n "$ns" -t BenchVs -s "$SIZE" -w "$HALF_THREADS" --rate "$rate" --duration "${HALF_SECS}s" --reportInterval 100000 --json "${flags[@]}" 2>/dev/null | tail -1)
    extra="$extra,\"half\":$h"
  fi
  echo "{\"system\":\"$sys\",\"round\":$r,\"cpu_ticks\":$((after - before)),\"clk_tck\":$ticks,\"producer\":$p,\"consumer\":$c$extra}" >>"$OUT"
}

k=${#systems[@]}
for r in $(seq 1 "$ROUNDS"); do
  for i in $(seq 0 $((k - 1))); do
    sys=${systems[$(((i + r - 1) % k))]}
    run "$sys" "$r"
    echo "round $r $sys done" >&2
  done
done
echo "loaded RSS KiB: ours $(rss $ours_pid) (anon $(anon $ours_pid)), apache $(rss $apache_pid) (anon $(anon $apache_pid))" | tee -a "$OUT.txt" >&2

python3 - "$OUT" "AUTH=$AUTH TLS=$TLS" "$out_lines_before" <<'PY'
import json, sys
# OUT is appended to: only this run's rows (after the lines it had).
rows = [json.loads(l) for l in open(sys.argv[1])][int(sys.argv[3]):]
agg = {}
for r in rows:
    a = agg.setdefault(r["system"], {"send": [], "consume": [], "p99": [], "msgs": 0, "ticks": 0, "clk": r["clk_tck"]})
    a["send"].append(r["producer"]["tps"]); a["consume"].append(r["consumer"]["tps"]); a["p99"].append(r["producer"]["latencyMs"]["p99"])
    a["msgs"] += r["producer"]["messages"]; a["ticks"] += r["cpu_ticks"]
    if "half" in r:
        h = r["half"]
        a.setdefault("half", []).append((h["rate"], h["tps"], h["latencyMs"]["p50"], h["latencyMs"]["p99"]))
    if "batch" in r:
        a.setdefault("bmps", []).append(r["batch"]["mps"]); a["bmsgs"] = a.get("bmsgs", 0) + r["batch"]["messages"]
        a["bticks"] = a.get("bticks", 0) + r["batch_ticks"]
        a["cmsgs"] = a.get("cmsgs", 0) + r["consumer"]["messages"]; a["cticks"] = a.get("cticks", 0) + r["consume_ticks"]
mean = lambda xs: sum(xs) / len(xs)
print(f"ours and apache: {sys.argv[2]}; plain: ours without either")
for s in ("ours", "apache", "plain"):
    if s not in agg:
        continue
    a = agg[s]
    us = a["ticks"] / a["clk"] * 1e6 / max(a["msgs"], 1)
    print(f"{s:7s} send TPS {mean(a['send']):10.0f}  consume TPS {mean(a['consume']):10.0f}  send p99 {mean(a['p99']):.2f} ms  broker CPU {us:.1f} µs/msg  rounds {len(a['send'])}")
    if "bmps" in a:
        bus = a["bticks"] / a["clk"] * 1e6 / max(a["bmsgs"], 1)
        cus = a["cticks"] / a["clk"] * 1e6 / max(a["cmsgs"], 1)
        print(f"{'':7s} BatchProducer {mean(a['bmps']):10.0f} msgs/s  broker CPU {bus:.1f} µs/msg;  Consumer catch-up broker CPU {cus:.1f} µs/msg")
for s in ("ours", "apache", "plain"):
    if s in agg and "half" in agg[s]:
        hs = agg[s]["half"]
        cells = "  ".join(f"{rate:.0f}/s (got {tps:.0f}): p50 {p50:.2f} p99 {p99:.2f} ms" for rate, tps, p50, p99 in hs)
        print(f"{s:7s} at half its peak (mqbench --rate, open loop): {cells}")
o, p = agg["ours"], agg["apache"]
print(f"ratio   send {mean(o['send'])/mean(p['send']):.2f}x  consume {mean(o['consume'])/mean(p['consume']):.2f}x  (ours / apache)")
if "bmps" in o and "bmps" in p:
    print(f"ratio   BatchProducer {mean(o['bmps'])/mean(p['bmps']):.2f}x  (ours / apache)")
if "half" in o and "half" in p:
    print(f"ratio   p99 at half peak {mean([h[3] for h in o['half']])/mean([h[3] for h in p['half']]):.2f}x  p50 {mean([h[2] for h in o['half']])/mean([h[2] for h in p['half']]):.2f}x  (ours / apache; target p99 <= 0.5x)")
if "plain" in agg:
    b = agg["plain"]
    print(f"ratio   send {mean(o['send'])/mean(b['send']):.2f}x  consume {mean(o['consume'])/mean(b['consume']):.2f}x  (ours / plain)")
PY
echo "raw results: $OUT" >&2
