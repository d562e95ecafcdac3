#!/usr/bin/env bash
# Runs scripts/python5/client.py, the RocketMQ 5.x Python client
# (rocketmq-python-client, gRPC; every package pinned in
# scripts/python5/requirements.txt), against a broker's gRPC endpoint
# (issue 17), with the command line of scripts/node5-client.sh:
#
#   scripts/python5-client.sh produce --endpoint 127.0.0.1:8081 --topic T --count 3 --prefix p
#   scripts/python5-client.sh consume --endpoint 127.0.0.1:8081 --topic T --group G --count 3
#   scripts/python5-client.sh lite --endpoint 127.0.0.1:8081 --topic P --group G --lites a,b --count 4
#
# The last line on stdout is the JSON result. The packages are installed
# once into scripts/python5/.venv (again when requirements.txt changes);
# concurrent first runs install once.
#
# Exit codes: 0 ok, 1 failed, 2 usage, 3 python3 or its venv module missing
# (stderr starts with "python not available:"), 4 pip install failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="$here/python5"
venv="$dir/.venv"
stamp="$venv/.rmqgo-pip-install"

python=${PYTHON:-python3}
if ! command -v "$python" >/dev/null 2>&1; then
	echo "python not available: $python not found in PATH (install python3 and python3-venv)" >&2
	exit 3
fi

installed_ok() {
	[ -f "$stamp" ] && [ "$stamp" -nt "$dir/requirements.txt" ] && [ -x "$venv/bin/python" ]
}

if ! installed_ok; then
	exec 9>"${TMPDIR:-/tmp}/rmqgo-pip-python5.lock"
	if command -v flock >/dev/null 2>&1; then
		flock 9
	fi
	if ! installed_ok; then
		rm -rf "$venv"
		if ! "$python" -m venv "$venv" >/dev/null 2>&1; then
			rm -rf "$venv"
			echo "python not available: $python -m venv failed (install python3-venv)" >&2
			exit 3
		fi
		log="$(mktemp "${TMPDIR:-/tmp}/rmqgo-pip.XXXXXX")"
		if ! "$venv/bin/pip" install --disable-pip-version-check -q -r "$dir/requirements.txt" >"$log" 2>&1; then
			cat "$log" >&2
			echo "pip install -r $dir/requirements.txt failed (log: $log)" >&2
			exit 4
		fi
		rm -f "$log"
		touch "$stamp"
	fi
	exec 9>&-
fi

exec "$venv/bin/python" "$dir/client.py" "$@"
