#!/usr/bin/env bash
# Prints the Java classpath of the RocketMQ tooling declared in
# scripts/java/pom.xml (rocketmq-tools + rocketmq-client from Maven Central).
#
# The classpath is resolved once with Maven and cached in
# scripts/java/target/classpath-<version>.txt; later calls just print the
# cache (it is refreshed when pom.xml is newer than the cache).
#
# Usage: scripts/java-classpath.sh            # print the classpath
#        RMQ_JAVA_VERSION=5.5.0 scripts/java-classpath.sh
#
# Environment:
#   RMQ_JAVA_VERSION  RocketMQ Java version to resolve (default: the pom's)
#   MVN               maven executable (default: mvn)
#
# Exit codes:
#   0  classpath printed on stdout
#   3  java or mvn is not installed (message on stderr starts with
#      "java/mvn not available:") — callers (tests) skip on this code
#   4  maven ran but could not resolve the dependencies (log on stderr)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
javadir="$here/java"
pom="$javadir/pom.xml"
mvn="${MVN:-mvn}"

if ! command -v java >/dev/null 2>&1 && [ ! -x "${JAVA_HOME:-/nonexistent}/bin/java" ]; then
	echo "java/mvn not available: java not found in PATH or JAVA_HOME (install a JDK 17+, e.g. apt-get install openjdk-17-jdk-headless)" >&2
	exit 3
fi

version="${RMQ_JAVA_VERSION:-}"
if [ -z "$version" ]; then
	version="$(sed -n 's:.*<rocketmq.version>\(.*\)</rocketmq.version>.*:\1:p' "$pom" | head -n1)"
fi
cache="$javadir/target/classpath-$version.txt"

# cache_ok: the cache exists, is newer than the pom and its first jar is still
# in the local Maven repository (a fresh machine keeps no ~/.m2).
cache_ok() {
	[ -s "$cache" ] && [ "$cache" -nt "$pom" ] || return 1
	local first
	first="$(cut -d: -f1 "$cache")"
	[ -f "$first" ]
}

if cache_ok; then
	cat "$cache"
	echo
	exit 0
fi

if ! command -v "$mvn" >/dev/null 2>&1; then
	echo "java/mvn not available: mvn not found in PATH (install Maven 3.8+, e.g. apt-get install maven)" >&2
	exit 3
fi

mkdir -p "$javadir/target"
# Serialise concurrent first runs (parallel tests) on a lock file.
exec 9>"$javadir/target/.classpath.lock"
if command -v flock >/dev/null 2>&1; then
	flock 9
fi
if cache_ok; then
	cat "$cache"
	echo
	exit 0
fi

tmp="$cache.tmp.$$"
log="$javadir/target/mvn-classpath.log"
if ! "$mvn" -q -B -f "$pom" -Drocketmq.version="$version" \
	dependency:build-classpath -Dmdep.outputFile="$tmp" >"$log" 2>&1; then
	cat "$log" >&2
	rm -f "$tmp"
	echo "java-classpath.sh: maven could not resolve org.apache.rocketmq:rocketmq-tools:$version (log: $log)" >&2
	exit 4
fi
mv -f "$tmp" "$cache"
cat "$cache"
echo
