# shellcheck shell=bash
# Sourced (not run) by the scripts that start a JVM or resolve jars with
# Maven: java-classpath.sh, java-compile.sh, java-client-check.sh,
# mqadmin-java.sh and apache/start.sh. Missing tools exit 3 with a message
# starting "java/mvn not available:" (the tests skip on it); Maven failures
# exit 4.

mvn="${MVN:-mvn}"

# find_java: sets java_bin to $JAVA_HOME/bin/java, else java from PATH.
find_java() {
	java_bin=java
	if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
		java_bin="$JAVA_HOME/bin/java"
	elif ! command -v java >/dev/null 2>&1; then
		echo "java/mvn not available: java not found in PATH or JAVA_HOME (install a JDK 17+, e.g. apt-get install openjdk-17-jdk-headless)" >&2
		exit 3
	fi
}

# need_mvn: exits 3 when there is no Maven.
need_mvn() {
	if ! command -v "$mvn" >/dev/null 2>&1; then
		echo "java/mvn not available: mvn not found in PATH (install Maven 3.8+, e.g. apt-get install maven)" >&2
		exit 3
	fi
}

# lock_target <dir> <name>: creates <dir> and holds the lock file
# <dir>/.<name>.lock on fd 9 (where flock exists), so that concurrent first
# runs (parallel tests) do the Maven work once.
lock_target() {
	mkdir -p "$1"
	exec 9>"$1/.$2.lock"
	if command -v flock >/dev/null 2>&1; then
		flock 9
	fi
}

# pom_version <pom>: the pom's rocketmq.version property.
pom_version() {
	sed -n 's:.*<rocketmq.version>\(.*\)</rocketmq.version>.*:\1:p' "$1" | head -n1
}

# classpath_ok <cache> <pom>: the classpath cache exists, is newer than the
# pom and its first jar is still in the local Maven repository (a fresh
# machine keeps no ~/.m2).
classpath_ok() {
	[ -s "$1" ] && [ "$1" -nt "$2" ] || return 1
	local first
	first="$(cut -d: -f1 "$1")"
	[ -f "$first" ]
}

# resolve_classpath <pom> <version> <cache> <who> <artifact>: writes the
# classpath of the pom's dependencies at <version> to <cache> with Maven,
# unless a valid cache is there; <who> and <artifact> name the caller and
# what it resolves in the error.
resolve_classpath() {
	local pom=$1 version=$2 cache=$3 who=$4 artifact=$5
	classpath_ok "$cache" "$pom" && return 0
	need_mvn
	local target
	target="$(dirname "$cache")"
	lock_target "$target" classpath
	if ! classpath_ok "$cache" "$pom"; then
		local tmp="$cache.tmp.$$" log="$target/mvn-classpath.log"
		if ! "$mvn" -q -B -f "$pom" -Drocketmq.version="$version" \
			dependency:build-classpath -Dmdep.outputFile="$tmp" >"$log" 2>&1; then
			cat "$log" >&2
			rm -f "$tmp"
			echo "$who: maven could not resolve $artifact:$version (log: $log)" >&2
			exit 4
		fi
		mv -f "$tmp" "$cache"
	fi
	exec 9>&-
}

# tool_jvm_opts <logback config> <log dir>: sets tool_jvm to the options of
# a small tool JVM (serial GC, C1 only: the machine is shared with the
# brokers under test) logging through <logback config> into <log dir>.
tool_jvm_opts() {
	mkdir -p "$2"
	tool_jvm=(
		-XX:+UseSerialGC -XX:TieredStopAtLevel=1
		-Drmq.logback.configurationFile="$1"
		-Drocketmq.log.root="$2"
		-Drocketmq.client.logRoot="$2"
		-Drocketmq.client.logUseSlf4j=true
	)
	# 4.x: the tools read their logback file from $ROCKETMQ_HOME/conf only,
	# and the client logs through plain logback (slf4j), whose default
	# configuration writes DEBUG lines to stdout, after a check's result
	# line too.
	case "${RMQ_JAVA_VERSION:-}" in
	4.*)
		mkdir -p "$2/home/conf"
		cp "$1" "$2/home/conf/logback_tools.xml"
		tool_jvm+=(-Drocketmq.home.dir="$2/home" -Dlogback.configurationFile="$1")
		;;
	esac
}

# apache_jvm_gc_jit: the GC and JIT options of an Apache server JVM. G1 and
# tiered compilation up to C2 as Apache's runbroker.sh runs them, unless
# APACHE_JVM_LIGHT=1 (the tests): the serial GC and C1 only, which on the
# 2-core test machine cut a JVM's start-up CPU (C2's compiler threads and
# G1's workers compete with the servers under test).
apache_jvm_gc_jit() {
	if [ "${APACHE_JVM_LIGHT:-}" = 1 ]; then
		echo "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
	else
		echo "-XX:+UseG1GC"
	fi
}
