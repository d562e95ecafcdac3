#!/usr/bin/env bash
# Stops the Apache RocketMQ cluster started by scripts/apache/start.sh: the
# broker (or the proxy with its broker, local mode) first (SIGTERM, so it unregisters and flushes), then the nameserver,
# each killed with SIGKILL if still alive after APACHE_STOP_TIMEOUT seconds;
# then removes the run directory (unless APACHE_KEEP=1).
#
#   scripts/apache/stop.sh                    # the cluster of NAMESRV_PORT (default 19876)
#   NAMESRV_PORT=29876 scripts/apache/stop.sh
#   APACHE_RUN_DIR=/tmp/x scripts/apache/stop.sh
#
# Only processes listed in the pid file whose command line is still an
# Apache RocketMQ JVM (or start.sh's watchdog) are signalled, so a recycled
# pid is never hit.
#
# Environment: NAMESRV_PORT, APACHE_RUN_DIR, APACHE_PID_FILE as for start.sh;
#   APACHE_STOP_TIMEOUT  seconds to wait after SIGTERM (default 30)
#   APACHE_STOP_SIGNAL   TERM (default: graceful; the 5.5.0 broker's shutdown
#                        hook takes ~15 s) or KILL (immediate; fine for a
#                        throwaway store, tests use it)
#   APACHE_KEEP=1        keep the run directory (logs, store)
#
# Exit code 0 when nothing of the cluster is left running (also when it was
# not running at all).
set -euo pipefail

namesrv_port="${NAMESRV_PORT:-19876}"
run_dir="${APACHE_RUN_DIR:-${TMPDIR:-/tmp}/rmq-apache-$namesrv_port}"
pid_file="${APACHE_PID_FILE:-$run_dir/pids}"
stop_timeout="${APACHE_STOP_TIMEOUT:-30}"
stop_signal="${APACHE_STOP_SIGNAL:-TERM}"
case "$stop_signal" in
TERM | KILL) ;;
*)
	echo "stop.sh: APACHE_STOP_SIGNAL must be TERM or KILL, not $stop_signal" >&2
	exit 2
	;;
esac

ours() { # ours <pid> <pattern>: the pid is alive and its command line matches
	kill -0 "$1" 2>/dev/null && grep -qa -- "$2" "/proc/$1/cmdline" 2>/dev/null
}

stop_one() { # stop_one <name> <pid> <pattern>
	local name=$1 pid=$2 pattern=$3
	if ! ours "$pid" "$pattern"; then
		return 0
	fi
	kill -"$stop_signal" "$pid" 2>/dev/null || true
	local deadline=$((SECONDS + stop_timeout))
	while ours "$pid" "$pattern"; do
		if [ $SECONDS -ge $deadline ]; then
			echo "stop.sh: $name (pid $pid) still running ${stop_timeout}s after SIGTERM; sending SIGKILL" >&2
			kill -KILL "$pid" 2>/dev/null || true
			sleep 0.5
			break
		fi
		sleep 0.2
	done
	echo "stopped $name (pid $pid)"
}

if [ ! -f "$pid_file" ]; then
	echo "stop.sh: no pid file $pid_file: nothing to stop"
	exit 0
fi

declare -A pids=()
while read -r name pid; do
	[ -n "${name:-}" ] && [ -n "${pid:-}" ] && pids[$name]=$pid
done <"$pid_file"

# The watchdog first, so it does not race with us; unless it is our caller.
if [ -n "${pids[watchdog]:-}" ] && [ "${pids[watchdog]}" != "$PPID" ] && ours "${pids[watchdog]}" watchdog; then
	kill -TERM "${pids[watchdog]}" 2>/dev/null || true
fi
if [ -n "${pids[broker]:-}" ]; then
	stop_one broker "${pids[broker]}" org.apache.rocketmq.broker.BrokerStartup
fi
if [ -n "${pids[proxy]:-}" ]; then
	stop_one proxy "${pids[proxy]}" org.apache.rocketmq.proxy.ProxyStartup
fi
if [ -n "${pids[namesrv]:-}" ]; then
	stop_one namesrv "${pids[namesrv]}" org.apache.rocketmq.namesrv.NamesrvStartup
fi

left=0
for name in broker proxy namesrv; do
	if [ -n "${pids[$name]:-}" ] && ours "${pids[$name]}" org.apache.rocketmq; then
		echo "stop.sh: $name (pid ${pids[$name]}) is still running" >&2
		left=1
	fi
done
if [ $left -ne 0 ]; then
	exit 1
fi
rm -f "$pid_file"
if [ "${APACHE_KEEP:-}" != 1 ]; then
	rm -rf "$run_dir"
fi
