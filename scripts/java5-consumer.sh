#!/usr/bin/env bash
# Runs one of scripts/java5's consumer programs (Apache
# rocketmq-client-java, the 5.x gRPC client, version pinned in
# scripts/java5/pom.xml) against a gRPC endpoint (issue 17):
#
#   scripts/java5-consumer.sh simple 127.0.0.1:8081 TopicTest GID true 3 -0 2 10 2
#
#   scripts/java5-consumer.sh push 127.0.0.1:8081 TopicTest GID true 3 -0 1
#
#   scripts/java5-consumer.sh lite 127.0.0.1:8081 LiteParent GID false a,b 4 1
#
# "simple" runs GrpcSimpleConsumer, "push" GrpcPushConsumer, "lite"
# GrpcLitePushConsumer (their arguments: see their sources).
#
# Compiled with Maven once (scripts/java5/target, recompiled when a source
# or the pom changes); the classpath is cached likewise.
#
# Exit codes: 0 consumed, 1 failed, 2 usage, 3 java or mvn missing (stderr
# starts with "java/mvn not available:"), 4 Maven could not resolve or
# compile.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
javadir="$here/java5"
# shellcheck source=java-lib.sh
. "$here/java-lib.sh"

case "${1:-}" in
simple) main=GrpcSimpleConsumer ;;
push) main=GrpcPushConsumer ;;
lite) main=GrpcLitePushConsumer ;;
*)
	echo "usage: java5-consumer.sh simple|push|lite <program arguments>" >&2
	exit 2
	;;
esac
shift

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
			echo "java5-consumer.sh: maven could not resolve or compile scripts/java5 (log: $log)" >&2
			exit 4
		fi
		mv -f "$stamp.new" "$stamp"
	fi
	exec 9>&-
fi

logdir="${RMQ_JAVA_LOG_DIR:-$target/logs}"
mkdir -p "$logdir"
exec "$java_bin" -Xms32m -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
	-Drocketmq.log.root="$logdir" -Dlogging.path="$logdir" \
	-cp "$classes:$(cat "$cache")" "rmqgo.$main" "$@"
