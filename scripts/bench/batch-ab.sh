#!/usr/bin/env bash
# A/B of our broker builds under Apache's own benchmark programs 5.5.0
# (rocketmq-example): BatchProducer (batches of BATCH × SIZE bytes), then
# the catch-up Consumer reading what it stored. Only our broker, one build
# up at a time, builds alternated every round, each run on a fresh store:
# the phases of vs-apache.sh's CLIENT=apache without Apache's broker, for
# comparing two builds of ours (issue 18's batch and catch-up figures).
#
#   scripts/bench/batch-ab.sh                          # bin/ only, 3 rounds
#   BINS="/tmp/main-bin bin" ROUNDS=4 scripts/bench/batch-ab.sh
#   PROFILE=20 PHASES=batch BINS=bin ROUNDS=1 scripts/bench/batch-ab.sh
#
# Environment: BINS (bin: directories holding broker and namesrv, each a
# build of its own), ROUNDS (3), DURATION (20s: the BatchProducer's
# measured seconds, after JAVA_START (15) to start), CONSUME_SECS (20),
# SIZE (1024), BATCH (16), THREADS (32), QUEUES (8), FLUSH_DISK_TYPE
# (ASYNC_FLUSH), PHASES ("batch consume", run in that order: produce is
# Apache's benchmark.Producer -w THREADS for DURATION, batch its
# BatchProducer, consume its Consumer catching up from the first message;
# "produce consume batch" is vs-apache.sh's order), STORE_DIR (where the
# stores go, a fresh one per run; default a temporary directory: 20 s of
# BatchProducer store about 3 GB, /dev/shm keeps them off a full disk), PROFILE
# (0; n: a CPU profile of n seconds of each phase, started JAVA_START + 3 s
# into it, written to OUTDIR as <build>-r<round>-<phase>.pprof), OUTDIR (a
# new directory under /tmp: the profiles and results.jsonl).
# Printed per run: msgs/s (the mean of the client's per-second reports of
# the last DURATION seconds; the consumer's busy seconds), broker CPU per
# message (utime+stime of /proc/PID/stat over the phase / messages) and
# uptime's load average when the run started.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench-lib.sh
. scripts/bench/bench-lib.sh
# shellcheck source=../local-lib.sh
. scripts/local-lib.sh
OUT=${OUT:-/dev/null} # results go to OUTDIR
bench_defaults 20s batch-ab
ROUNDS=${ROUNDS:-3}
BINS=${BINS:-bin}
BATCH=${BATCH:-16}
PHASES=${PHASES:-batch consume}
PROFILE=${PROFILE:-0}
CONSUME_SECS=${CONSUME_SECS:-20}
JAVA_START=${JAVA_START:-15}
OUTDIR=${OUTDIR:-$(mktemp -d -t batch-ab-XXXX)}
mkdir -p "$OUTDIR"
for b in $BINS; do
  [ -x "$b/broker" ] && [ -x "$b/namesrv" ] || { echo "batch-ab: $b has no broker and namesrv" >&2; exit 2; }
done
[ -x bin/mqadmin ] || make build >/dev/null

# shellcheck source=../java-lib.sh
. scripts/java-lib.sh
find_java
jbench="$PWD/scripts/bench/apache-bench"
resolve_classpath "$jbench/pom.xml" 5.5.0 "$jbench/target/classpath-5.5.0.txt" batch-ab.sh org.apache.rocketmq:rocketmq-example
jcp=$(cat "$jbench/target/classpath-5.5.0.txt")

work=$(mktemp -d -t batch-ab-run-XXXX)
store_root=$work
[ -n "${STORE_DIR:-}" ] && store_root=$(mktemp -d "$STORE_DIR/batch-ab-store-XXXX")
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work" "$store_root"
}
trap cleanup EXIT INT TERM
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# java_run <log> <class> <seconds> <args...>
java_run() {
  local log=$1 cls=$2 secs=$3
  shift 3
  timeout -s INT "$((secs + JAVA_START))" java -Xms256m -Xmx512m -XX:+UseSerialGC -cp "$jcp" \
    "org.apache.rocketmq.example.benchmark.$cls" "$@" -ri 1000 >"$log" 2>&1 || true
}

# profile <pprof port> <file>: PROFILE seconds of CPU profile, in the
# background (prof_pid; profile_wait waits for it).
prof_pid=
profile() {
  prof_pid=
  [ "$PROFILE" -gt 0 ] || return 0
  (sleep $((JAVA_START + 3)); curl -s -o "$2" "http://127.0.0.1:$1/debug/pprof/profile?seconds=$PROFILE" || true) &
  prof_pid=$!
}
profile_wait() { [ -z "$prof_pid" ] || wait "$prof_pid" || true; }

run() { # build-dir label round
  local bin=$1 label=$2 r=$3 nsp brp pp load pid c0 c1 line
  nsp=$(free_ports 1) brp=$(($(free_ports 4) + 2)) pp=$(free_ports 1)
  rm -rf "$store_root/store" "$work/kv.json"
  broker_conf "broker-ab" "$brp" "127.0.0.1:$nsp" "$store_root/store" "$FLUSH_DISK_TYPE" >"$work/broker.conf"
  "$bin/namesrv" --listen-port "$nsp" --kv-config-path "$work/kv.json" >"$work/namesrv.log" 2>&1 &
  local nspid=$!
  pids+=("$nspid")
  wait_port "$nsp"
  "$bin/broker" -c "$work/broker.conf" --pprof-addr "127.0.0.1:$pp" >"$work/broker.log" 2>&1 &
  pid=$!
  pids+=("$pid")
  wait_port "$brp"
  sleep 2
  bin/mqadmin updateTopic -n "127.0.0.1:$nsp" -c DefaultCluster -t BenchAB -r "$QUEUES" -w "$QUEUES" >/dev/null
  load=$(awk '{print $1}' /proc/loadavg)
  line="{\"build\":\"$label\",\"round\":$r,\"load\":$load,\"clk_tck\":$ticks"
  for phase in $PHASES; do
    line="$line,$(phase "$phase" "$pp" "$pid" "$nsp" "$label" "$r")"
  done
  kill -TERM "$pid" "$nspid" 2>/dev/null || true
  wait "$pid" "$nspid" 2>/dev/null || true
  pids=()
  rm -rf "$store_root/store"
  echo "$line}" >>"$OUTDIR/results.jsonl"
  echo "$line}" >&2
}

# phase <name> <pprof port> <broker pid> <namesrv port> <label> <round>:
# runs one phase and prints its JSON fields.
phase() {
  local ph=$1 pp=$2 pid=$3 nsp=$4 label=$5 r=$6 c0 c1 out
  profile "$pp" "$OUTDIR/$label-r$r-$ph.pprof"
  c0=$(cpu "$pid")
  case $ph in
  produce | batch)
    # Both report "Send TPS: n" per second; BatchProducer also "Send MPS:
    # n", its messages (a send is a batch).
    if [ "$ph" = produce ]; then
      java_run "$work/jsend.log" Producer "${DURATION%s}" -n "127.0.0.1:$nsp" -t BenchAB -s "$SIZE" -w "$THREADS"
    else
      java_run "$work/jsend.log" BatchProducer "${DURATION%s}" -n "127.0.0.1:$nsp" -t BenchAB -s "$SIZE" -w "$THREADS" -b "$BATCH"
    fi
    c1=$(cpu "$pid")
    out=$(python3 - "$work/jsend.log" "${DURATION%s}" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
rows = [float(m.group(2) or m.group(1)) for m in re.finditer(r"Current Time: .*? \| Send TPS: (\d+)(?: \| Send MPS: (\d+))?", text)]
sent = int(sum(rows))
rows = [r for r in rows if r > 0][-int(sys.argv[2]):]
print(json.dumps({"mps": sum(rows) / max(len(rows), 1), "messages": sent}))
PY
) ;;
  consume)
    java_run "$work/jconsumer.log" Consumer "$CONSUME_SECS" -n "127.0.0.1:$nsp" -t BenchAB -g "ab_$r" -w 20
    c1=$(cpu "$pid")
    out=$(python3 - "$work/jconsumer.log" <<'PY'
import json, re, sys
rows = [float(m.group(1)) for m in re.finditer(r"Current Time: .*? \| Consume TPS: (\d+)", open(sys.argv[1]).read())]
busy = [r for r in rows if r > 0]
core = busy[1:-1] if len(busy) > 2 else busy
print(json.dumps({"mps": sum(core) / max(len(core), 1), "messages": int(sum(rows))}))
PY
) ;;
  *) echo "batch-ab: unknown phase $ph" >&2; exit 2 ;;
  esac
  profile_wait
  echo "\"$ph\":$out,\"${ph}_ticks\":$((c1 - c0))"
}

for r in $(seq 1 "$ROUNDS"); do
  set -- $BINS
  n=$#
  for i in $(seq 0 $((n - 1))); do
    idx=$(((i + r - 1) % n + 1))
    b=${!idx}
    run "$b" "$(basename "$(cd "$b" && pwd)")-$idx" "$r"
  done
done

python3 - "$OUTDIR/results.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for b in dict.fromkeys(r["build"] for r in rows):
    rs = [r for r in rows if r["build"] == b]
    for ph in ("produce", "batch", "consume"):
        got = [r for r in rs if ph in r]
        if not got:
            continue
        runs = "  ".join(f"{r[ph]['mps']:.0f}/s {r[ph+'_ticks']/r['clk_tck']*1e6/max(r[ph]['messages'],1):.2f}µs (load {r['load']})" for r in got)
        mps = sum(r[ph]["mps"] for r in got) / len(got)
        us = sum(r[ph + "_ticks"] for r in got) / got[0]["clk_tck"] * 1e6 / max(sum(r[ph]["messages"] for r in got), 1)
        print(f"{b:14s} {ph:8s} mean {mps:9.0f} msgs/s  broker {us:5.2f} µs/msg   runs: {runs}")
PY
echo "results and profiles: $OUTDIR" >&2
