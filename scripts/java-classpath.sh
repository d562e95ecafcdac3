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
# shellcheck source=java-lib.sh
. "$here/java-lib.sh"

find_java
version="${RMQ_JAVA_VERSION:-$(pom_version "$pom")}"
cache="$javadir/target/classpath-$version.txt"
resolve_classpath "$pom" "$version" "$cache" java-classpath.sh org.apache.rocketmq:rocketmq-tools
cat "$cache"
echo
