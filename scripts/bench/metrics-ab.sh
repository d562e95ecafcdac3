#!/usr/bin/env bash
# Broker CPU per message with metrics off and with metricsExporterType=PROM
# (scraped every second), under mqbench producer sends: alternating runs
# A (off) / B (PROM) of DURATION each, ROUNDS times. Prints the broker's
# CPU time (utime+stime from /proc) per message sent, per run.
# Usage: scripts/bench/metrics-ab.sh  (after make build)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
DURATION=${DURATION:-20s}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-16}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
tick=$(getconf CLK_TCK)
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return; sleep 0.1; done; echo "port $1 never opened" >&2; exit 1; }
cpu() { awk '{print $14+$15}' /proc/"$1"/stat; }

ns=$(free_port)
"$BIN/namesrv" --listen-port "$ns" >"$work/ns.log" 2>&1 &
wait_port "$ns"

run() { # $1 = off|prom
	local bp pp store pid c0 c1 sent
	bp=$(free_port); pp=$(free_port); store="$work/store-$RANDOM"
	local extra=()
	if [ "$1" = prom ]; then
		extra=(--set metricsExporterType=PROM --set metricsPromExporterHost=127.0.0.1 --set "metricsPromExporterPort=$pp")
	fi
	"$BIN/broker" -n "127.0.0.1:$ns" --listen-port "$bp" --store-path "$store" --broker-ip 127.0.0.1 \
		--set autoCreateTopicEnable=true "${extra[@]}" >"$work/broker.log" 2>&1 &
	pid=$!
	wait_port "$bp"
	sleep 1
	local scraper=
	if [ "$1" = prom ]; then
		( while sleep 1; do curl -s "http://127.0.0.1:$pp/metrics" >/dev/null || true; done ) &
		scraper=$!
	fi
	c0=$(cpu "$pid")
	sent=$("$BIN/mqbench" producer -n "127.0.0.1:$ns" -t MetricsAB -w "$THREADS" -s 128 --duration "$DURATION" --json 2>/dev/null |
		tail -1 | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["messages"])')
	c1=$(cpu "$pid")
	[ -n "$scraper" ] && kill "$scraper" 2>/dev/null || true
	kill "$pid"; wait "$pid" 2>/dev/null || true
	python3 -c "print('$1', 'sent', $sent, 'broker cpu', round(($c1-$c0)/$tick,2), 's', 'us/msg', round(($c1-$c0)/$tick*1e6/max($sent,1),2))"
}
for _ in $(seq "$ROUNDS"); do run off; run prom; done
