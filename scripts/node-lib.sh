# shellcheck shell=bash
# Sourced (not run) by the scripts that run a Node.js client program:
# node-client-check.sh (ali-ons, remoting) and node5-client.sh
# (rocketmq-client-nodejs, gRPC). Missing tools exit 3 with a message
# starting "node/npm not available:" (the tests skip on it); npm failures
# exit 4.

node="${NODE:-node}"
npm="${NPM:-npm}"

# find_node: exits 3 when there is no node.
find_node() {
	if ! command -v "$node" >/dev/null 2>&1; then
		echo "node/npm not available: node not found in PATH (install Node.js 18+, e.g. apt-get install nodejs npm)" >&2
		exit 3
	fi
}

# npm_install <dir> <package>: installs <dir>'s dependencies once with
# `npm ci` (from its committed package-lock.json, install scripts
# disabled), again only when package.json or package-lock.json changes;
# <package> is one installed module that proves the install complete.
# Concurrent first runs (parallel tests) install once.
npm_install() {
	local dir=$1 pkg=$2
	local stamp="$dir/node_modules/.rmqgo-npm-ci"
	installed_ok() {
		[ -f "$stamp" ] && [ "$stamp" -nt "$dir/package-lock.json" ] && [ "$stamp" -nt "$dir/package.json" ] &&
			[ -f "$dir/node_modules/$pkg/package.json" ]
	}
	installed_ok && return 0
	if ! command -v "$npm" >/dev/null 2>&1; then
		echo "node/npm not available: npm not found in PATH (install npm, e.g. apt-get install npm)" >&2
		exit 3
	fi
	exec 9>"${TMPDIR:-/tmp}/rmqgo-npm-ci-$(basename "$dir").lock"
	if command -v flock >/dev/null 2>&1; then
		flock 9
	fi
	if ! installed_ok; then
		local log
		log="$(mktemp "${TMPDIR:-/tmp}/rmqgo-npm-ci.XXXXXX")"
		if ! "$npm" ci --prefix "$dir" --no-audit --no-fund --ignore-scripts >"$log" 2>&1; then
			cat "$log" >&2
			echo "npm ci --prefix $dir failed (log: $log)" >&2
			exit 4
		fi
		rm -f "$log"
		touch "$stamp"
	fi
	exec 9>&-
}
