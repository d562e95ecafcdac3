#!/usr/bin/env bash
# Runs one of scripts/java5's programs (Apache rocketmq-client-java, the
# 5.x gRPC client, version pinned in scripts/java5/pom.xml) against a gRPC
# endpoint (issue 17):
#
#   scripts/java5-client.sh GrpcProducer 127.0.0.1:8081 TopicTest 3 true body
#   scripts/java5-client.sh GrpcSimpleConsumer 127.0.0.1:8081 TopicTest GID true 3 -0 2 10 2
#
# The first argument is the program's class in package rmqgo (its
# arguments: see its source). Compiled with Maven once
# (scripts/java5/target, recompiled when a source or the pom changes); the
# classpath is cached likewise.
#
# JAVA5_JVM_OPTS replaces the JVM's default options (a small heap, serial
# GC, C1 only: the machine is shared with the brokers under test); the
# benchmark (scripts/bench/grpc.sh) gives its load generator more.
#
# Exit codes: 0 done, 1 failed, 2 usage, 3 java or mvn missing (stderr
# starts with "java/mvn not available:"), 4 Maven could not resolve or
# compile.
set -euo pipefail

main=${1:-}
case "$main" in
'' | *[!A-Za-z0-9]*)
	echo "usage: java5-client.sh <program class in rmqgo> <program arguments>" >&2
	exit 2
	;;
esac
shift

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
javadir="$here/java5"
# shellcheck source=java-lib.sh
. "$here/java-lib.sh"

find_java
pom="$javadir/pom.xml"
target="$javadir/target"
classes="$target/classes"
cache="$target/classpath.txt"
stamp="$target/.compiled"

compiled_ok() {
	[ -f "$stamp" ] && [ -f "$classes/rmqgo/$main.class" ] && [ -s "$cache" ] || return 1
	[ "$stamp" -nt "$pom" ] || return 1
	[ -z "$(find "$javadir/src" -newer "$stamp" -type f -print -quit)" ] || return 1
	[ -f "$(cut -d: -f1 "$cache")" ]
}

if ! compiled_ok; then
	need_mvn
	lock_target "$target" compile
	if ! compiled_ok; then
		log="$target/mvn.log"
		touch "$stamp.new"
		if ! "$mvn" -q -B -f "$pom" compile dependency:build-classpath -Dmdep.outputFile="$cache" >"$log" 2>&1; then
			cat "$log" >&2
			rm -f "$stamp.new"
			echo "java5-client.sh: maven could not resolve or compile scripts/java5 (log: $log)" >&2
			exit 4
		fi
		mv -f "$stamp.new" "$stamp"
	fi
	exec 9>&-
fi

logdir="${RMQ_JAVA_LOG_DIR:-$target/logs}"
mkdir -p "$logdir"
# shellcheck disable=SC2086 # JAVA5_JVM_OPTS is a word list on purpose
exec "$java_bin" ${JAVA5_JVM_OPTS:--Xms32m -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1} \
	-Drocketmq.log.root="$logdir" -Dlogging.path="$logdir" \
	-cp "$classes:$(cat "$cache")" "rmqgo.$main" "$@"
