#!/usr/bin/env bash
# Runs the Java real-client check (scripts/java/src/main/java/rmqgo/ClientCheck.java,
# Apache rocketmq-client from Maven Central, version pinned in
# scripts/java/pom.xml) against any RocketMQ cluster:
#
#   scripts/java-client-check.sh roundtrip -n 127.0.0.1:9876 -t CheckTopic -count 1000
#   scripts/java-client-check.sh produce -n 127.0.0.1:9876 -t T -send-mode async
#   scripts/java-client-check.sh consume -n 127.0.0.1:9876 -t T -run <run id> -count 1000
#   scripts/java-client-check.sh help
#
# The last line on stdout is the check's JSON result (docs/interop.md).
# The sources are compiled with Maven once (`mvn -q -f scripts/java/pom.xml
# compile`, cached in scripts/java/target/classes; recompiled when a source
# or the pom changes); later runs start the JVM directly.
#
# Environment:
#   RMQ_JAVA_OPTS     extra JVM options
#   RMQ_JAVA_HEAP     -Xmx of the check's JVM (default 256m)
#   RMQ_JAVA_LOG_DIR  where the client's log file goes
#                     (default: scripts/java/target/logs/client-check-java.log)
#   MVN, JAVA_HOME    as usual
#
# Exit codes: 0 check passed, 1 check failed, 2 usage error, 3 java or mvn
# missing (stderr starts with "java/mvn not available:"), 4 Maven could not
# resolve or compile.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
javadir="$here/java"

java_bin=java
if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
	java_bin="$JAVA_HOME/bin/java"
elif ! command -v java >/dev/null 2>&1; then
	echo "java/mvn not available: java not found in PATH or JAVA_HOME (install a JDK 17+, e.g. apt-get install openjdk-17-jdk-headless)" >&2
	exit 3
fi

set +e
cp="$("$here/java-classpath.sh")"
rc=$?
set -e
if [ $rc -ne 0 ]; then
	exit $rc
fi

set +e
classes="$("$here/java-compile.sh")"
rc=$?
set -e
if [ $rc -ne 0 ]; then
	exit $rc
fi

if [ "${1:-}" = help ] || [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
	set -- -h
fi

logdir="${RMQ_JAVA_LOG_DIR:-$javadir/target/logs}"
mkdir -p "$logdir"

# A small client JVM: serial GC, C1 only, modest heap (the machine is shared
# with the brokers under test).
# shellcheck disable=SC2086 # RMQ_JAVA_OPTS is a word list on purpose
exec "$java_bin" -Xms64m -Xmx"${RMQ_JAVA_HEAP:-256m}" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
	-XX:MaxDirectMemorySize=256m \
	-Drmq.logback.configurationFile="$javadir/logback-client-check.xml" \
	-Drocketmq.log.root="$logdir" \
	-Drocketmq.client.logRoot="$logdir" \
	-Drocketmq.client.logUseSlf4j=true \
	${RMQ_JAVA_OPTS:-} \
	-cp "$classes:$cp" rmqgo.ClientCheck "$@"
