#!/usr/bin/env bash
# Side by side on this machine, in one run: send TPS and consume (catch-up)
# TPS of our broker against Apache RocketMQ 5.5.0's broker (from Maven
# Central, scripts/apache/start.sh), same client (mqbench), same settings,
# one system up at a time, alternating the order each round so drift hits
# both. Also broker memory (anonymous, idle and after each round's phases).
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
# broker's CPU per message over its own window). GO_CATCHUP (0; 1 with
# CLIENT=apache: after Apache's Consumer, the same backlog is read again by
# rocketmq-client-go v2's push consumer, tests/cmd/gocatchup, timed from its
# first message to its last, with the broker's CPU over that window).
# Broker CPU per message is utime+stime of /proc/PID/stat over the sends:
# with mqbench over its whole run; with Apache's Producer and BatchProducer
# also over the measured window (the last DURATION reports, whose mean is
# the TPS: the CPU rate over that window divided by that TPS), since their
# whole run includes the client JVM's start and warm-up (JAVA_START).
# One system is up at a time: each round starts each system afresh (fresh
# store), runs its phases, reads its memory and stops it.
# HALF_RATE (1; 0: off): after each system's phases, mqbench sends at half
# of the peak send TPS that system just reached in the same round, open
# loop (mqbench --rate: each latency counted from when its send was due),
# for HALF_SECS (DURATION) from HALF_THREADS (128) senders (enough that
# in-flight sends never cap the rate: at 10k/s a 10 ms stall needs 100),
# and the summary prints its p50/p99 side by
# side (issue 18: ours <= 0.5x Apache's p99), after a sync (the dirty pages
# the phases before left are written back first). The same client, mqbench,
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
GO_CATCHUP=${GO_CATCHUP:-0}
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
if [ "$GO_CATCHUP" = 1 ]; then
  [ "$CLIENT" = apache ] && [ "$AUTH" != 1 ] && [ "$TLS" != 1 ] || { echo "vs-apache.sh: GO_CATCHUP=1 needs CLIENT=apache, without AUTH and TLS" >&2; exit 2; }
  go build -o "$work/gocatchup" ./tests/cmd/gocatchup
fi
# Ports: free ones unless given (other runs may hold the old fixed ones);
# a broker also listens on its port - 2 and + 1.
A_NS_PORT=${A_NS_PORT:-$(free_ports 1)} A_BR_PORT=${A_BR_PORT:-$(($(free_ports 4) + 2))}
O_NS_PORT=${O_NS_PORT:-$(free_ports 1)} O_BR_PORT=${O_BR_PORT:-$(($(free_ports 4) + 2))}
A_NS=127.0.0.1:$A_NS_PORT A_BR=127.0.0.1:$A_BR_PORT
O_NS=127.0.0.1:$O_NS_PORT O_BR=127.0.0.1:$O_BR_PORT

# shellcheck source=../local-lib.sh
. scripts/local-lib.sh
pids=()
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
# One system up at a time (the other's idle JVMs or goroutines would take
# CPU and cache from the one measured): each round starts each system on
# a fresh store, runs its phases and stops it before the next one starts.
tlsflags=()
if [ "$TLS" = 1 ]; then
  # Apache's defaults (tls.server.mode=permissive, tls.test.mode.enable):
  # Apache needs no setting, ours gets the mode.
  export NAMESRV_TLS_SERVER_MODE=permissive NAMESRV_TLS_CONFIG_FILE="$work/absent.properties"
  tlsflags=(--tls --tlsConfigFile "$work/absent.properties")
fi
authflags=()
super=()
if [ "$AUTH" = 1 ]; then
  authflags=(--aclEnable true --accessKey "$BENCH_AK" --secretKey "$BENCH_SK")
  super=(-ak "$SUPER_AK" -sk "$SUPER_SK")
fi
systems=(ours apache)
[ "$PLAIN" = 1 ] && systems+=(plain)
declare -A ns_of=([ours]=$O_NS [apache]=$A_NS) br_of=([ours]=$O_BR [apache]=$A_BR) pid_of
if [ "$PLAIN" = 1 ]; then
  P_NS_PORT=${P_NS_PORT:-$(free_ports 1)} P_BR_PORT=${P_BR_PORT:-$(($(free_ports 4) + 2))}
  ns_of[plain]=127.0.0.1:$P_NS_PORT br_of[plain]=127.0.0.1:$P_BR_PORT
fi

# start_system <system> <round>: the system on a fresh store, its topic
# (and under AUTH its user and ACL) created; sets pid_of[<system>].
start_system() {
  local sys=$1 r=$2 dir="$work/$1-$2"
  mkdir -p "$dir"
  pids=()
  if [ "$sys" = apache ]; then
    echo "starting Apache RocketMQ 5.5.0 ($FLUSH_DISK_TYPE, AUTH=$AUTH TLS=$TLS)..." >&2
    NAMESRV_PORT=$A_NS_PORT BROKER_PORT=$A_BR_PORT APACHE_COMMITLOG_SIZE=$((1 << 30)) APACHE_BROKER_CONF_EXTRA="$apache_extra" \
      scripts/apache/start.sh >"$work/apache.out" 2>&1 || {
      cat "$work/apache.out" >&2; exit 1; }
    pid_of[apache]=$(awk '/^broker /{print $2}' "${TMPDIR:-/tmp}/rmq-apache-$A_NS_PORT/pids")
  else
    echo "starting $sys ($FLUSH_DISK_TYPE)..." >&2
    local nsp brp
    if [ "$sys" = ours ]; then nsp=$O_NS_PORT brp=$O_BR_PORT; else nsp=$P_NS_PORT brp=$P_BR_PORT; fi
    broker_conf "broker-$sys" "$brp" "127.0.0.1:$nsp" "$dir/store" "$FLUSH_DISK_TYPE" >"$dir/broker.conf"
    if [ "$sys" = ours ] && [ "$TLS" = 1 ]; then
      printf 'tls.server.mode=permissive\ntls.config.file=%s\n' "$work/absent.properties" >>"$dir/broker.conf"
    fi
    if [ "$sys" = ours ] && [ "$AUTH" = 1 ]; then
      cat >>"$dir/broker.conf" <<CONF
authenticationEnabled=true
authorizationEnabled=true
initAuthenticationUser={"username":"$SUPER_AK","password":"$SUPER_SK"}
innerClientAuthenticationCredentials={"accessKey":"$SUPER_AK","secretKey":"$SUPER_SK"}
CONF
    fi
    if [ "$sys" = ours ]; then
      bin/namesrv --listen-port "$nsp" --kv-config-path "$dir/kv.json" >"$dir/namesrv.log" 2>&1 &
    else
      # Ours without auth and TLS: the environment above is for the other one.
      env -u NAMESRV_TLS_SERVER_MODE -u NAMESRV_TLS_CONFIG_FILE bin/namesrv --listen-port "$nsp" --kv-config-path "$dir/kv.json" >"$dir/namesrv.log" 2>&1 &
    fi
    pids+=($!)
    sleep 1
    bin/broker -c "$dir/broker.conf" >"$dir/broker.log" 2>&1 &
    pids+=($!)
    pid_of[$sys]=$!
    for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$brp") 2>/dev/null && break; sleep 0.1; done
  fi
  sleep 2
  local adm=()
  [ "$sys" != plain ] && adm=("${super[@]}")
  bin/mqadmin updateTopic -n "${ns_of[$sys]}" -c DefaultCluster -t BenchVs -r $QUEUES -w $QUEUES "${adm[@]}" >/dev/null
  if [ "$AUTH" = 1 ] && [ "$sys" != plain ]; then
    bin/mqadmin createUser -b "${br_of[$sys]}" -u "$BENCH_AK" -p "$BENCH_SK" -t Normal "${adm[@]}" >/dev/null
    bin/mqadmin createAcl -b "${br_of[$sys]}" -s "User:$BENCH_AK" -r "Topic:BenchVs,Group:vs_*" -a Pub,Sub -d Allow "${adm[@]}" >/dev/null
  fi
  sleep 1
}

stop_system() { # <system>
  if [ "$1" = apache ]; then
    NAMESRV_PORT=$A_NS_PORT APACHE_STOP_SIGNAL=KILL scripts/apache/stop.sh >/dev/null 2>&1 || true
    # A killed JVM's command line is gone before its sockets are: wait
    # until nothing listens, or the next start finds its ports in use.
    local port
    for port in "$A_NS_PORT" "$((A_BR_PORT - 2))" "$A_BR_PORT" "$((A_BR_PORT + 1))"; do
      for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break; sleep 0.1; done
    done
  else
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    wait "${pids[@]}" 2>/dev/null || true
  fi
  pids=()
}

rss() { awk '/VmRSS/{print $2}' /proc/$1/status; }
anon() { awk '/RssAnon/{print $2}' /proc/$1/status; }

ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# sample_cpu <pid> <file>: "<epoch seconds> <utime+stime ticks>" lines, five
# a second, until killed (bash builtins only: no process per sample), so
# that a Java benchmark's CPU can be read over the window of the reports
# its TPS comes from, not over its JVM's start.
sample_cpu() {
  local f
  while read -r -a f <"/proc/$1/stat" 2>/dev/null; do
    echo "$EPOCHREALTIME $((f[13] + f[14]))"
    sleep 0.2
  done >"$2"
}

# window_cpu <samples file>: reads a summary JSON line on stdin and adds
# "windowTicks" (the broker's CPU ticks over [windowStart, windowEnd],
# interpolated between samples) and "windowMessages" (the TPS of that
# window times its length).
window_cpu() {
  python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
pts = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if len(l.split()) == 2]
def at(t):
    prev = pts[0]
    for p in pts:
        if p[0] >= t:
            if p[0] == prev[0]:
                return p[1]
            return prev[1] + (p[1] - prev[1]) * (t - prev[0]) / (p[0] - prev[0])
        prev = p
    return pts[-1][1]
a, b = d.get("windowStart"), d.get("windowEnd")
if pts and a and b and b > a:
    d["windowTicks"] = at(b) - at(a)
    d["windowMessages"] = d["mps" if "mps" in d else "tps"] * (b - a)
print(json.dumps(d))' "$1"
}

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
import time
rows = [(time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")) + int(m.group(2)) / 1000,) + tuple(map(float, m.groups()[2:])) for m in re.finditer(
    r"Current Time: (\S+ \S+),(\d+) \| Send TPS: (\d+) \| Max RT\(ms\): (\d+) \| Average RT\(ms\): +([\d.]+) \| Send Failed: (\d+)", open(sys.argv[1]).read())]
sent = int(sum(r[1] for r in rows))
rows = [r for r in rows if r[1] > 0][-int(sys.argv[2]):]
tps = sum(r[1] for r in rows) / max(len(rows), 1)
# Each report is the mean rate of its last seconds: the window the TPS
# stands for starts a second before the first report kept.
print(json.dumps({"tps": tps, "messages": sent, "sendFailed": int(rows[-1][4]) if rows else 0,
                  "windowStart": rows[0][0] - 1 if rows else 0, "windowEnd": rows[-1][0] if rows else 0,
                  "latencyMs": {"p99": max((r[2] for r in rows), default=0)}, "client": "apache-benchmark-producer"}))
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
import time
rows = [(time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")) + int(m.group(2)) / 1000,) + tuple(map(float, m.groups()[2:])) for m in re.finditer(
    r"Current Time: (\S+ \S+),(\d+) \| Send TPS: (\d+) \| Send MPS: (\d+) \| Max RT\(ms\): (\d+)", open(sys.argv[1]).read())]
sent = int(sum(r[2] for r in rows))
rows = [r for r in rows if r[2] > 0][-int(sys.argv[2]):]
n = max(len(rows), 1)
print(json.dumps({"tps": sum(r[1] for r in rows) / n, "mps": sum(r[2] for r in rows) / n, "messages": sent,
                  "windowStart": rows[0][0] - 1 if rows else 0, "windowEnd": rows[-1][0] if rows else 0,
                  "latencyMs": {"p99": max((r[3] for r in rows), default=0)}, "client": "apache-benchmark-batchproducer"}))
PY
}

# apache_consumer <ns> <system> <group> <broker addr> <cpu samples>:
# Apache's benchmark Consumer (a push consumer; a new group starts from the
# first offset) catching up, for CONSUME_SECS (30) after its JVM's start.
# Its own reports cannot time a catch-up: each is the mean of the last ten
# seconds and the first comes ten seconds after it starts, about when a
# catch-up of this size ends. So the broker's count of messages it served
# (msgGetTotalTodayNow, GET_BROKER_RUNTIME_INFO, read five times a second
# with our mqadmin: both brokers keep it live) times the catch-up: from the
# first message served to the last; "windowTicks" is the broker's CPU over
# that window (from the samples file).
# {"tps", "messages", "windowStart", "windowEnd", "windowTicks"}.
apache_consumer() {
  local log="$work/jconsumer.log" gets="$work/gets-$2" watcher adm=()
  [ "$2" != plain ] && adm=("${super[@]}")
  while :; do
    echo "$EPOCHREALTIME $(bin/mqadmin brokerStatus -b "$4" "${adm[@]}" 2>/dev/null | awk '$1 == "msgGetTotalTodayNow" {print $NF}')"
    sleep 0.2
  done >"$gets" &
  watcher=$!
  apache_java "$log" Consumer "${CONSUME_SECS:-30}" "$2" -n "$1" -t BenchVs -g "$3" -w 20
  kill "$watcher" 2>/dev/null || true
  wait "$watcher" 2>/dev/null || true
  python3 - "$gets" <<'PY' | window_cpu "$5"
import json, sys
pts = [(float(a), int(b)) for a, b in (l.split() for l in open(sys.argv[1]) if len(l.split()) == 2)]
base, last = (pts[0][1], pts[-1][1]) if pts else (0, 0)
n = last - base
start = end = 0
if n > 0:
    # The window opens at the last sample before the first message served
    # and closes at the first sample that shows the final count.
    start = max(t for t, c in pts if c == base and t < next(t2 for t2, c2 in pts if c2 > base))
    end = next(t for t, c in pts if c == last)
print(json.dumps({"tps": n / (end - start) if end > start else 0, "messages": n, "windowStart": start,
                  "windowEnd": end, "client": "apache-benchmark-consumer"}))
PY
}

run() { # system round
  local sys=$1 r=$2
  local ns=${ns_of[$sys]} p c n before after flags=()
  [ "$sys" != plain ] && flags=("${tlsflags[@]}" "${authflags[@]}")
  local pid=${pid_of[$sys]} sampler samples="$work/cpu-$sys-$r"
  start_sampler() { sample_cpu "$pid" "$samples" & sampler=$!; }
  stop_sampler() { kill "$sampler" 2>/dev/null || true; wait "$sampler" 2>/dev/null || true; }
  before=$(cpu "$pid")
  if [ "$CLIENT" = apache ]; then
    start_sampler
    p=$(apache_producer "$ns" "$sys" | window_cpu "$samples")
    stop_sampler
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
    start_sampler
    c=$(apache_consumer "$ns" "$sys" "vs_${sys}_$r" "${br_of[$sys]}" "$samples")
    stop_sampler
    after2=$(cpu "${pid_of[$sys]}")
    if [ "$GO_CATCHUP" = 1 ]; then
      # The same backlog again, read by client-go's push consumer (a new
      # group), before BatchProducer adds to it.
      local g
      start_sampler
      g=$("$work/gocatchup" -n "$ns" -t BenchVs -g "vs_go_${sys}_$r" -count "$n" -timeout 180s 2>/dev/null | tail -1 | window_cpu "$samples")
      stop_sampler
      extra="$extra,\"gocatchup\":$g"
    fi
    local bp before3 after3
    before3=$(cpu "${pid_of[$sys]}")
    start_sampler
    bp=$(apache_batch "$ns" "$sys" | window_cpu "$samples")
    stop_sampler
    after3=$(cpu "${pid_of[$sys]}")
    extra="$extra,\"consume_ticks\":$((after2 - before2)),\"batch_ticks\":$((after3 - before3)),\"batch\":$bp"
  else
    c=$(bin/mqbench consumer -n "$ns" -t BenchVs -g "vs_${sys}_$r" --from-first --count "$n" --duration 180s --reportInterval 100000 --json "${flags[@]}" 2>/dev/null | tail -1)
  fi
  if [ "$HALF_RATE" = 1 ]; then
    # Half of the peak this system just reached, same client for both.
    local rate h t0
    rate=$(echo "$p" | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["tps"] / 2))')
    # Under ASYNC_FLUSH the phases before can leave page cache to write
    # back (the faster system more): written back first, so that the p99
    # is of the half-rate load alone. (Under SYNC_FLUSH it takes ~0 s.)
    t0=$SECONDS
    sync
    echo "$sys: sync before the half-rate phase took $((SECONDS - t0)) s" >&2
    h=$(bin/mqbench producer -n "$ns" -t BenchVs -s "$SIZE" -w "$HALF_THREADS" --rate "$rate" --duration "${HALF_SECS}s" --reportInterval 100000 --json "${flags[@]}" 2>/dev/null | tail -1)
    extra="$extra,\"half\":$h"
  fi
  local mem="\"rssKiB\":$(rss "$pid"),\"anonKiB\":$(anon "$pid"),\"idleAnonKiB\":${idle_anon:-0}"
  echo "{\"system\":\"$sys\",\"round\":$r,\"cpu_ticks\":$((after - before)),\"clk_tck\":$ticks,\"producer\":$p,\"consumer\":$c$extra,$mem}" >>"$OUT"
}

k=${#systems[@]}
for r in $(seq 1 "$ROUNDS"); do
  for i in $(seq 0 $((k - 1))); do
    sys=${systems[$(((i + r - 1) % k))]}
    start_system "$sys" "$r"
    idle_anon=$(anon "${pid_of[$sys]}")
    run "$sys" "$r"
    stop_system "$sys"
    echo "round $r $sys done" >&2
  done
done

python3 - "$OUT" "AUTH=$AUTH TLS=$TLS" "$out_lines_before" <<'PY'
import json, sys
# OUT is appended to: only this run's rows (after the lines it had).
rows = [json.loads(l) for l in open(sys.argv[1])][int(sys.argv[3]):]
agg = {}
for r in rows:
    a = agg.setdefault(r["system"], {"send": [], "consume": [], "p99": [], "msgs": 0, "ticks": 0, "clk": r["clk_tck"]})
    a["send"].append(r["producer"]["tps"]); a["consume"].append(r["consumer"]["tps"]); a["p99"].append(r["producer"]["latencyMs"]["p99"])
    a["msgs"] += r["producer"]["messages"]; a["ticks"] += r["cpu_ticks"]
    if "windowTicks" in r["producer"]:
        a["wticks"] = a.get("wticks", 0) + r["producer"]["windowTicks"]; a["wmsgs"] = a.get("wmsgs", 0) + r["producer"]["windowMessages"]
    if "anonKiB" in r:
        a.setdefault("anon", []).append(r["anonKiB"]); a.setdefault("idle", []).append(r["idleAnonKiB"])
    if "half" in r:
        h = r["half"]
        a.setdefault("half", []).append((h["rate"], h["tps"], h["latencyMs"]["p50"], h["latencyMs"]["p99"]))
    if "batch" in r:
        a.setdefault("bmps", []).append(r["batch"]["mps"]); a["bmsgs"] = a.get("bmsgs", 0) + r["batch"]["messages"]
        a["bticks"] = a.get("bticks", 0) + r["batch_ticks"]
        if "windowTicks" in r["batch"]:
            a["bwticks"] = a.get("bwticks", 0) + r["batch"]["windowTicks"]; a["bwmsgs"] = a.get("bwmsgs", 0) + r["batch"]["windowMessages"]
        a["cmsgs"] = a.get("cmsgs", 0) + r["consumer"]["messages"]; a["cticks"] = a.get("cticks", 0) + r["consume_ticks"]
        if "windowTicks" in r["consumer"]:
            a["cwticks"] = a.get("cwticks", 0) + r["consumer"]["windowTicks"]
    if "gocatchup" in r:
        g = r["gocatchup"]
        a.setdefault("gtps", []).append(g["tps"]); a["gmsgs"] = a.get("gmsgs", 0) + g["messages"]
        a["gwticks"] = a.get("gwticks", 0) + g.get("windowTicks", 0)
mean = lambda xs: sum(xs) / len(xs)
print(f"ours and apache: {sys.argv[2]}; plain: ours without either")
for s in ("ours", "apache", "plain"):
    if s not in agg:
        continue
    a = agg[s]
    us = a["ticks"] / a["clk"] * 1e6 / max(a["msgs"], 1)
    wus = f"{a['wticks'] / a['clk'] * 1e6 / max(a['wmsgs'], 1):.1f} µs/msg over the measured window, " if a.get("wmsgs") else ""
    print(f"{s:7s} send TPS {mean(a['send']):10.0f}  consume TPS {mean(a['consume']):10.0f}  send p99 {mean(a['p99']):.2f} ms  broker CPU {wus}{us:.1f} µs/msg over the whole run  rounds {len(a['send'])}")
    if "bmps" in a:
        bus = a["bticks"] / a["clk"] * 1e6 / max(a["bmsgs"], 1)
        bwus = f"{a['bwticks'] / a['clk'] * 1e6 / max(a['bwmsgs'], 1):.1f} µs/msg over the window, " if a.get("bwmsgs") else ""
        cus = a.get("cwticks", a["cticks"]) / a["clk"] * 1e6 / max(a["cmsgs"], 1)
        print(f"{'':7s} BatchProducer {mean(a['bmps']):10.0f} msgs/s  broker CPU {bwus}{bus:.1f} over the run;  Consumer catch-up broker CPU {cus:.1f} µs/msg")
    if "gtps" in a:
        print(f"{'':7s} client-go catch-up {mean(a['gtps']):10.0f} msgs/s  broker CPU {a['gwticks'] / a['clk'] * 1e6 / max(a['gmsgs'], 1):.1f} µs/msg over its window")
    if "anon" in a:
        print(f"{'':7s} anonymous memory KiB: idle {max(a['idle'])}, after the phases {max(a['anon'])} (max over rounds)")
for s in ("ours", "apache", "plain"):
    if s in agg and "half" in agg[s]:
        hs = agg[s]["half"]
        cells = "  ".join(f"{rate:.0f}/s (got {tps:.0f}): p50 {p50:.2f} p99 {p99:.2f} ms" for rate, tps, p50, p99 in hs)
        print(f"{s:7s} at half its peak (mqbench --rate, open loop): {cells}")
o, p = agg["ours"], agg["apache"]
print(f"ratio   send {mean(o['send'])/mean(p['send']):.2f}x  consume {mean(o['consume'])/mean(p['consume']):.2f}x  (ours / apache)")
if "gtps" in o and "gtps" in p:
    print(f"ratio   client-go catch-up {mean(o['gtps'])/mean(p['gtps']):.2f}x  (ours / apache)")
if "bmps" in o and "bmps" in p:
    print(f"ratio   BatchProducer {mean(o['bmps'])/mean(p['bmps']):.2f}x  (ours / apache)")
if "half" in o and "half" in p:
    print(f"ratio   p99 at half peak {mean([h[3] for h in o['half']])/mean([h[3] for h in p['half']]):.2f}x  p50 {mean([h[2] for h in o['half']])/mean([h[2] for h in p['half']]):.2f}x  (ours / apache; target p99 <= 0.5x)")
if "plain" in agg:
    b = agg["plain"]
    print(f"ratio   send {mean(o['send'])/mean(b['send']):.2f}x  consume {mean(o['consume'])/mean(b['consume']):.2f}x  (ours / plain)")
PY
echo "raw results: $OUT" >&2
