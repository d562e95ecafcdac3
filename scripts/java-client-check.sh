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
# shellcheck source=java-lib.sh
. "$here/java-lib.sh"

find_java
cp="$("$here/java-classpath.sh")" || exit $?
classes="$("$here/java-compile.sh")" || exit $?

if [ "${1:-}" = help ] || [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
	set -- -h
fi

tool_jvm_opts "$javadir/logback-client-check.xml" "${RMQ_JAVA_LOG_DIR:-$javadir/target/logs}"
# A small client JVM with a modest heap.
# shellcheck disable=SC2086 # RMQ_JAVA_OPTS is a word list on purpose
exec "$java_bin" -Xms64m -Xmx"${RMQ_JAVA_HEAP:-256m}" -XX:MaxDirectMemorySize=256m "${tool_jvm[@]}" \
	${RMQ_JAVA_OPTS:-} \
	-cp "$classes:$cp" rmqgo.ClientCheck "$@"
