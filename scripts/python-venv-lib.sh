# shellcheck shell=bash
# venv_ready DIR NAME: makes DIR/.venv hold the packages of
# DIR/requirements.txt, installing them once (again when requirements.txt
# changes; concurrent first runs install once, under a lock named NAME).
# Exits 3 when python3 or its venv module is missing (stderr starts with
# "python not available:") and 4 when pip fails. Sets $venv.
venv_ready() {
	local dir=$1 name=$2 python=${PYTHON:-python3}
	venv="$dir/.venv"
	local stamp="$venv/.rmqgo-pip-install"
	if ! command -v "$python" >/dev/null 2>&1; then
		echo "python not available: $python not found in PATH (install python3 and python3-venv)" >&2
		exit 3
	fi
	installed_ok() {
		[ -f "$stamp" ] && [ "$stamp" -nt "$dir/requirements.txt" ] && [ -x "$venv/bin/python" ]
	}
	installed_ok && return 0
	exec 9>"${TMPDIR:-/tmp}/rmqgo-pip-$name.lock"
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
		local log
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
}
