#!/usr/bin/env bash
# Runs the Node.js real-client check (scripts/node/client-check.js, ali-ons
# pinned in scripts/node/package.json / package-lock.json) against any
# RocketMQ cluster:
#
#   scripts/node-client-check.sh roundtrip -n 127.0.0.1:9876 -t CheckTopic -count 1000
#   scripts/node-client-check.sh produce -n 127.0.0.1:9876 -t T -send-mode async
#   scripts/node-client-check.sh consume -n 127.0.0.1:9876 -t T -run <run id> -count 1000
#   scripts/node-client-check.sh help
#
# The last line on stdout is the check's JSON result (docs/interop.md).
# The dependencies are installed once with `npm ci --prefix scripts/node`
# (from the committed package-lock.json, install scripts disabled) and
# reinstalled only when package-lock.json changes.
#
# Environment: NODE (node executable, default node), NPM (default npm).
#
# Exit codes: 0 check passed, 1 check failed, 2 usage error, 3 node or npm
# missing (stderr starts with "node/npm not available:"), 4 npm ci failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
nodedir="$here/node"
node="${NODE:-node}"
npm="${NPM:-npm}"

if ! command -v "$node" >/dev/null 2>&1; then
	echo "node/npm not available: node not found in PATH (install Node.js 18+, e.g. apt-get install nodejs npm)" >&2
	exit 3
fi

stamp="$nodedir/node_modules/.rmqgo-npm-ci"
installed_ok() {
	[ -f "$stamp" ] && [ "$stamp" -nt "$nodedir/package-lock.json" ] && [ "$stamp" -nt "$nodedir/package.json" ] &&
		[ -f "$nodedir/node_modules/ali-ons/package.json" ]
}

if ! installed_ok; then
	if ! command -v "$npm" >/dev/null 2>&1; then
		echo "node/npm not available: npm not found in PATH (install npm, e.g. apt-get install npm)" >&2
		exit 3
	fi
	lockdir="${TMPDIR:-/tmp}"
	exec 9>"$lockdir/rmqgo-node-client-check.lock"
	if command -v flock >/dev/null 2>&1; then
		flock 9
	fi
	if ! installed_ok; then
		log="$(mktemp "${TMPDIR:-/tmp}/rmqgo-npm-ci.XXXXXX")"
		if ! "$npm" ci --prefix "$nodedir" --no-audit --no-fund --ignore-scripts >"$log" 2>&1; then
			cat "$log" >&2
			echo "node-client-check.sh: npm ci --prefix scripts/node failed (log: $log)" >&2
			exit 4
		fi
		rm -f "$log"
		touch "$stamp"
	fi
	exec 9>&-
fi

exec "$node" "$nodedir/client-check.js" "$@"
