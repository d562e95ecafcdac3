#!/usr/bin/env bash
# Compiles the Java check programs (scripts/java/src, against the RocketMQ
# jars of scripts/java/pom.xml) with Maven when a source or the pom changed
# since the last compile, and prints the classes directory.
#
# Exit codes: 0 classes directory printed; 3 mvn missing (stderr starts with
# "java/mvn not available:"); 4 Maven could not compile (log on stderr).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
javadir="$here/java"
# shellcheck source=java-lib.sh
. "$here/java-lib.sh"
classes="$javadir/target/classes"
stamp="$javadir/target/.client-check-compiled"

compiled_ok() {
	[ -f "$stamp" ] && [ -f "$classes/rmqgo/ClientCheck.class" ] || return 1
	[ "$stamp" -nt "$javadir/pom.xml" ] || return 1
	[ -z "$(find "$javadir/src" -newer "$stamp" -type f -print -quit)" ]
}

if ! compiled_ok; then
	need_mvn
	lock_target "$javadir/target" compile
	if ! compiled_ok; then
		log="$javadir/target/mvn-compile.log"
		touch "$stamp.new"
		if ! "$mvn" -q -B -f "$javadir/pom.xml" compile >"$log" 2>&1; then
			cat "$log" >&2
			rm -f "$stamp.new"
			echo "java-compile.sh: maven could not compile scripts/java (log: $log)" >&2
			exit 4
		fi
		mv -f "$stamp.new" "$stamp"
	fi
	exec 9>&-
fi
echo "$classes"
