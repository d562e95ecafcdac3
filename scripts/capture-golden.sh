#!/usr/bin/env bash
# Reproduces the golden frames in remoting/testdata/golden: raw remoting
# frames (length prefix included) sent by real RocketMQ clients, recorded by
# the capture listener in tests/cmd/capture (tests/internal/capture).
#
# Not run in CI: it needs Maven Central for the Java client and rewrites the
# committed files (timestamps, message ids and client ids change on every run,
# so expect a diff). Run from anywhere:
#
#   scripts/capture-golden.sh [OUTDIR]     # default: remoting/testdata/golden
#
# Steps (each with its own listener on 127.0.0.1, answering with a route
# that points at itself so producers go on to send to it as their broker):
#   go_105_json, go_10_json        client-go v2 producer SendSync (tests/cmd/gosend)
#   java_105_json                  Java mqadmin topicRoute
#   java_105_rocketmq              same with -Drocketmq.serialize.type=ROCKETMQ
#   java_310_json, java_35_json    Java mqadmin sendMessage (DefaultMQProducer:
#                                  SEND_MESSAGE_V2, then UNREGISTER_CLIENT at shutdown)
#   java_310_rocketmq, java_35_rocketmq   same with ROCKETMQ serialization
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/remoting/testdata/golden}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

work="$(mktemp -d)"
cap_pid=""
cleanup() {
	if [ -n "$cap_pid" ]; then kill "$cap_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

echo "building capture and gosend..." >&2
(cd "$root/tests" && CGO_ENABLED=0 go build -o "$work/bin/" ./cmd/capture ./cmd/gosend)

# Make sure the Java tooling resolves before starting anything (exit 3 when
# java/mvn is missing).
"$root/scripts/java-classpath.sh" >/dev/null

# start_capture NAME: starts a listener writing to $work/NAME, sets $addr.
start_capture() {
	local dir="$work/$1"
	mkdir -p "$dir"
	: >"$dir.stdout"
	"$work/bin/capture" -listen 127.0.0.1:0 -out "$dir" -answer -duration 120s \
		>"$dir.stdout" 2>"$dir.log" &
	cap_pid=$!
	addr=""
	for _ in $(seq 1 100); do
		addr="$(sed -n 's/^listening on //p' "$dir.stdout" 2>/dev/null || true)"
		[ -n "$addr" ] && break
		sleep 0.1
	done
	[ -n "$addr" ] || { echo "capture did not start" >&2; cat "$dir.log" >&2; exit 1; }
}

stop_capture() {
	kill "$cap_pid" 2>/dev/null || true
	wait "$cap_pid" 2>/dev/null || true
	cap_pid=""
}

# pick NAME PATTERN DEST: copies the first captured frame matching PATTERN.
pick() {
	local f
	f="$(ls "$work/$1"/*"$2" 2>/dev/null | head -n1 || true)"
	if [ -z "$f" ]; then
		echo "no frame matching *$2 captured in step $1; log:" >&2
		cat "$work/$1.log" >&2
		exit 1
	fi
	cp "$f" "$out/$3"
	echo "  $3 <- $(basename "$f")" >&2
}

echo "client-go producer..." >&2
start_capture go
"$work/bin/gosend" -n "$addr" -t TopicTest -g golden_producer_group -body 'hello golden' -tag TagA -keys key1
stop_capture
pick go _105_json.bin go_105_json.bin
pick go _10_json.bin go_10_json.bin

echo "Java mqadmin topicRoute (JSON)..." >&2
start_capture java-route-json
"$root/scripts/mqadmin-java.sh" topicRoute -n "$addr" -t TopicTest >/dev/null
stop_capture
pick java-route-json _105_json.bin java_105_json.bin

echo "Java mqadmin topicRoute (ROCKETMQ)..." >&2
start_capture java-route-rocketmq
RMQ_JAVA_OPTS="-Drocketmq.serialize.type=ROCKETMQ" \
	"$root/scripts/mqadmin-java.sh" topicRoute -n "$addr" -t TopicTest >/dev/null
stop_capture
pick java-route-rocketmq _105_rocketmq.bin java_105_rocketmq.bin

echo "Java mqadmin sendMessage (JSON)..." >&2
start_capture java-send-json
"$root/scripts/mqadmin-java.sh" sendMessage -n "$addr" -t TopicTest -p 'hello golden' -c TagA -k key1
stop_capture
pick java-send-json _310_json.bin java_310_json.bin
pick java-send-json _35_json.bin java_35_json.bin

echo "Java mqadmin sendMessage (ROCKETMQ)..." >&2
start_capture java-send-rocketmq
RMQ_JAVA_OPTS="-Drocketmq.serialize.type=ROCKETMQ" \
	"$root/scripts/mqadmin-java.sh" sendMessage -n "$addr" -t TopicTest -p 'hello golden' -c TagA -k key1
stop_capture
pick java-send-rocketmq _310_rocketmq.bin java_310_rocketmq.bin
pick java-send-rocketmq _35_rocketmq.bin java_35_rocketmq.bin

echo "golden frames written to $out" >&2
