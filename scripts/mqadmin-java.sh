#!/usr/bin/env bash
# Runs the real Java RocketMQ admin tool (rocketmq-tools from Maven Central,
# version pinned in scripts/java/pom.xml) with the given arguments, exactly
# like the distribution's bin/mqadmin:
#
#   scripts/mqadmin-java.sh                      # list sub-commands
#   scripts/mqadmin-java.sh help topicRoute      # help of one sub-command
#   scripts/mqadmin-java.sh topicRoute -n 127.0.0.1:9876 -t TopicTest
#   scripts/mqadmin-java.sh clusterList -n 127.0.0.1:9876
#
# The first run resolves the classpath with Maven (scripts/java-classpath.sh,
# cached under scripts/java/target/); later runs start the JVM directly.
#
# Environment:
#   RMQ_JAVA_OPTS     extra JVM options, e.g. -Drocketmq.serialize.type=ROCKETMQ
#                     (the Java remoting then sends ROCKETMQ binary headers)
#   RMQ_JAVA_LOG_DIR  where the tool's log file goes
#                     (default: scripts/java/target/logs/mqadmin-java.log)
#   RMQ_JAVA_VERSION  RocketMQ Java version (default: the pom's)
#   JAVA_HOME         JDK to use (default: java from PATH)
#   RMQ_JAVA_FAST_EXIT=1  exit as soon as the command has run, instead of
#                     idling through the 2 s quiet period of Netty's graceful
#                     shutdown (rmqgo.MQAdminFastExit; the tests set it: the
#                     suite runs the tool dozens of times)
#
# Exit codes: the tool's own (note that mqadmin itself mostly exits 0 and
# prints errors), or 3 when java or mvn is missing (stderr message starts with
# "java/mvn not available:"; tests skip on it), 4 when Maven could not
# resolve the dependencies.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=java-lib.sh
. "$here/java-lib.sh"

find_java
cp="$("$here/java-classpath.sh")" || exit $?

main=org.apache.rocketmq.tools.command.MQAdminStartup
if [ "${RMQ_JAVA_FAST_EXIT:-}" = 1 ]; then
	classes="$("$here/java-compile.sh")" || exit $?
	cp="$classes:$cp"
	main=rmqgo.MQAdminFastExit
fi

tool_jvm_opts "$here/java/logback-tools.xml" "${RMQ_JAVA_LOG_DIR:-$here/java/target/logs}"
# shellcheck disable=SC2086 # RMQ_JAVA_OPTS is a word list on purpose
exec "$java_bin" -Xms32m -Xmx256m "${tool_jvm[@]}" \
	${RMQ_JAVA_OPTS:-} \
	-cp "$cp" "$main" "$@"
