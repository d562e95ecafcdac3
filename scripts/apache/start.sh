#!/usr/bin/env bash
# Starts the REFERENCE Apache RocketMQ cluster: one real Apache nameserver and
# one real Apache broker (master, brokerId 0), both from the Maven Central
# artifacts org.apache.rocketmq:rocketmq-namesrv / rocketmq-broker (version
# pinned in scripts/apache/pom.xml, 5.5.0), run straight from the Maven
# classpath (no distribution zip is needed):
#
#   scripts/apache/start.sh                  # namesrv 127.0.0.1:19876, broker 127.0.0.1:20911
#   NAMESRV_PORT=29876 BROKER_PORT=30911 scripts/apache/start.sh
#   scripts/mqadmin-java.sh clusterList -n 127.0.0.1:19876
#   scripts/apache/stop.sh                   # same NAMESRV_PORT / APACHE_RUN_DIR as start
#
# Everything listens on 127.0.0.1 (bindAddress) except the broker's HA port
# (BROKER_PORT+1), which RocketMQ always binds on the wildcard address; it is
# only a listener. The broker also opens its "fast" (VIP) port BROKER_PORT-2.
#
# The run directory ($APACHE_RUN_DIR, default $TMPDIR/rmq-apache-$NAMESRV_PORT)
# is generated anew on each start and holds:
#   conf/namesrv.conf, conf/broker.conf, conf/logback-*.xml  (ROCKETMQ_HOME=<run dir>)
#   store/          the broker's store (commit log, consume queues, config)
#   logs/           namesrv.out, broker.out (stdout/stderr), namesrv.log, broker.log
#   pids            "namesrv <pid>" and "broker <pid>" lines (or $APACHE_PID_FILE)
#   env             NAMESRV_ADDR=..., BROKER_ADDR=... (shell-sourceable)
# stop.sh kills the processes and removes the run directory (unless
# APACHE_KEEP=1).
#
# On success the last lines on stdout are
#   NAMESRV_ADDR=127.0.0.1:<port>
#   BROKER_ADDR=127.0.0.1:<port>
#   APACHE_RUN_DIR=<dir>
#
# Environment:
#   NAMESRV_PORT        nameserver port (default 19876)
#   BROKER_PORT         broker port (default 20911; BROKER_PORT-2 and +1 are used too)
#   FLUSH_DISK_TYPE     ASYNC_FLUSH (default) or SYNC_FLUSH
#   APACHE_RUN_DIR      run directory (default ${TMPDIR:-/tmp}/rmq-apache-$NAMESRV_PORT)
#   APACHE_PID_FILE     pid file (default $APACHE_RUN_DIR/pids)
#   APACHE_BROKER_HEAP  broker heap, -Xms/-Xmx (default 1g)
#   APACHE_BROKER_DIRECT  broker -XX:MaxDirectMemorySize (default 1g)
#   APACHE_NAMESRV_HEAP nameserver heap (default 256m)
#   APACHE_COMMITLOG_SIZE  mappedFileSizeCommitLog in bytes (default 268435456 = 256 MiB)
#   APACHE_BROKER_CONF_EXTRA  extra broker.conf lines (key=value, newline separated)
#   APACHE_JVM_LIGHT    if 1, the JVMs run the serial GC and the C1 compiler
#                       only instead of G1 and tiered C2 (apache_jvm_gc_jit
#                       in scripts/java-lib.sh): the tests set it, as a JVM
#                       then starts on a fraction of the CPU; benchmarks
#                       leave it unset
#   APACHE_START_TIMEOUT  seconds to wait for both servers (default 120)
#   APACHE_WATCH_PID    if set, a watchdog stops the cluster when that process
#                       exits (tests pass their own pid so a crashed test run
#                       leaves no JVM behind)
#   RMQ_APACHE_VERSION  RocketMQ version to resolve (default: the pom's)
#   MVN                 maven executable (default mvn); JAVA_HOME as usual
#   APACHE_PROXY_GRPC_PORT  if set, the broker runs inside Apache's
#                       rocketmq-proxy in local mode (org.apache.rocketmq:
#                       rocketmq-proxy, scripts/apache/proxy-pom.xml; main class
#                       ProxyStartup -pm local): one JVM serving the 5.x gRPC
#                       protocol on this port (all interfaces: the proxy has no
#                       bind address) besides the broker's remoting port.
#                       Its pid is the "proxy" line of the pid file, its logs
#                       logs/proxy.{out,log}; conf/rmq-proxy.json is generated.
#   APACHE_PROXY_REMOTING_PORT  the proxy's own remoting port
#                       (remotingListenPort; default APACHE_PROXY_GRPC_PORT-1)
#
# Exit codes: 0 started; 1 a server failed to start (its log is printed on
# stderr; anything already started is stopped); 3 java or mvn is missing
# (stderr starts with "java/mvn not available:"); 4 Maven could not resolve
# the servers; 5 a port is already in use.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pom="$here/pom.xml"
# shellcheck source=../java-lib.sh
. "$here/../java-lib.sh"

find_java

namesrv_port="${NAMESRV_PORT:-19876}"
broker_port="${BROKER_PORT:-20911}"
flush="${FLUSH_DISK_TYPE:-ASYNC_FLUSH}"
case "$flush" in
ASYNC_FLUSH | SYNC_FLUSH) ;;
*)
	echo "start.sh: FLUSH_DISK_TYPE must be ASYNC_FLUSH or SYNC_FLUSH, not $flush" >&2
	exit 2
	;;
esac
run_dir="${APACHE_RUN_DIR:-${TMPDIR:-/tmp}/rmq-apache-$namesrv_port}"
pid_file="${APACHE_PID_FILE:-$run_dir/pids}"
timeout="${APACHE_START_TIMEOUT:-120}"

# ---------------------------------------------------------------- classpath
version="${RMQ_APACHE_VERSION:-$(pom_version "$pom")}"
proxy_grpc_port="${APACHE_PROXY_GRPC_PORT:-}"
if [ -n "$proxy_grpc_port" ]; then
	proxy_remoting_port="${APACHE_PROXY_REMOTING_PORT:-$((proxy_grpc_port - 1))}"
	cache="$here/target/classpath-proxy-$version.txt"
	resolve_classpath "$here/proxy-pom.xml" "$version" "$cache" start.sh org.apache.rocketmq:rocketmq-proxy
else
	cache="$here/target/classpath-$version.txt"
	resolve_classpath "$pom" "$version" "$cache" start.sh org.apache.rocketmq:rocketmq-broker
fi
cp="$(cat "$cache")"

# ---------------------------------------------------------------- ports
port_busy() {
	# bash's /dev/tcp: a successful connect means something listens.
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
for p in "$namesrv_port" "$broker_port" "$((broker_port - 2))" "$((broker_port + 1))" ${proxy_grpc_port:+"$proxy_grpc_port" "$proxy_remoting_port"}; do
	if port_busy "$p"; then
		echo "start.sh: port 127.0.0.1:$p is already in use (NAMESRV_PORT=$namesrv_port, BROKER_PORT=$broker_port uses $((broker_port - 2)), $broker_port and $((broker_port + 1)))" >&2
		exit 5
	fi
done

if [ -s "$pid_file" ]; then
	while read -r _ pid; do
		if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -qa 'org.apache.rocketmq' "/proc/$pid/cmdline" 2>/dev/null; then
			echo "start.sh: $pid_file names a running Apache RocketMQ process ($pid); run scripts/apache/stop.sh first" >&2
			exit 5
		fi
	done <"$pid_file"
fi

# ---------------------------------------------------------------- run dir
rm -rf "$run_dir"
mkdir -p "$run_dir/conf" "$run_dir/store" "$run_dir/logs" "$(dirname "$pid_file")"
: >"$pid_file"

logback() { # logback <file> <log name>
	cat >"$1" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- Generated by scripts/apache/start.sh: everything into one file. -->
<configuration>
    <appender name="File" class="ch.qos.logback.core.FileAppender">
        <file>$run_dir/logs/$2.log</file>
        <append>true</append>
        <encoder>
            <pattern>%d{yyyy-MM-dd HH:mm:ss.SSS} %p %t %logger{0} - %m%n</pattern>
            <charset class="java.nio.charset.Charset">UTF-8</charset>
        </encoder>
    </appender>
    <root level="INFO"><!-- start.sh waits for an INFO line -->
        <appender-ref ref="File"/>
    </root>
</configuration>
EOF
}
logback "$run_dir/conf/logback-namesrv.xml" namesrv
logback "$run_dir/conf/logback-broker.xml" broker
logback "$run_dir/conf/logback-proxy.xml" proxy

cat >"$run_dir/conf/namesrv.conf" <<EOF
# Generated by scripts/apache/start.sh
listenPort=$namesrv_port
bindAddress=127.0.0.1
rocketmqHome=$run_dir
kvConfigPath=$run_dir/namesrv/kvConfig.json
configStorePath=$run_dir/namesrv/namesrv.properties
EOF

cat >"$run_dir/conf/broker.conf" <<EOF
# Generated by scripts/apache/start.sh
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=0
brokerRole=ASYNC_MASTER
flushDiskType=$flush
namesrvAddr=127.0.0.1:$namesrv_port
listenPort=$broker_port
bindAddress=127.0.0.1
brokerIP1=127.0.0.1
brokerIP2=127.0.0.1
rocketmqHome=$run_dir
storePathRootDir=$run_dir/store
storePathCommitLog=$run_dir/store/commitlog
mappedFileSizeCommitLog=${APACHE_COMMITLOG_SIZE:-268435456}
autoCreateTopicEnable=true
autoCreateSubscriptionGroup=true
defaultTopicQueueNums=4
deleteWhen=04
fileReservedTime=48
diskMaxUsedSpaceRatio=95
EOF
if [ -n "${APACHE_BROKER_CONF_EXTRA:-}" ]; then
	printf '%s\n' "$APACHE_BROKER_CONF_EXTRA" >>"$run_dir/conf/broker.conf"
fi
if [ -n "$proxy_grpc_port" ]; then
	# The keys of the proxy's ProxyConfig (rocketmq-proxy
	# proxy/src/main/java/org/apache/rocketmq/proxy/config/ProxyConfig.java);
	# in local mode its route answers name brokerIP1:grpcServerPort.
	cat >"$run_dir/conf/rmq-proxy.json" <<EOF
{
  "rocketMQClusterName": "DefaultCluster",
  "namesrvAddr": "127.0.0.1:$namesrv_port",
  "proxyMode": "local",
  "grpcServerPort": $proxy_grpc_port,
  "remotingListenPort": $proxy_remoting_port,
  "localServeAddr": "127.0.0.1"
}
EOF
fi

# Options every JVM gets: JDK 9+ module openings the servers rely on (the
# distribution's runserver.sh/runbroker.sh pass similar ones), user.home in
# the run dir so nothing lands in ~/logs or ~/store.
common_opts=(
	-server $(apache_jvm_gc_jit) -XX:-OmitStackTraceInFastThrow
	-XX:SoftRefLRUPolicyMSPerMB=0
	--add-opens=java.base/java.nio=ALL-UNNAMED
	--add-opens=java.base/sun.nio.ch=ALL-UNNAMED
	--add-opens=java.base/java.lang=ALL-UNNAMED
	--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED
	--add-exports=java.base/sun.nio.ch=ALL-UNNAMED
	-Duser.home="$run_dir"
	-Drocketmq.home.dir="$run_dir"
	-Drocketmq.log.root="$run_dir/logs"
)

export ROCKETMQ_HOME="$run_dir"

stop_started() {
	APACHE_RUN_DIR="$run_dir" APACHE_PID_FILE="$pid_file" APACHE_KEEP=1 "$here/stop.sh" >/dev/null 2>&1 || true
}

fail() { # fail <what> <stdout log> <log>
	echo "start.sh: $1" >&2
	for f in "${@:2}"; do
		if [ -s "$f" ]; then
			echo "----- $f (tail) -----" >&2
			tail -n 60 "$f" >&2
		fi
	done
	stop_started
	echo "start.sh: run directory kept for inspection: $run_dir" >&2
	exit 1
}

# wait_for <pid> <name> <exited> <late> <command...>:
# polls the command until it succeeds; fails with the server's logs when
# the server exits first ("<name> (pid <pid>) <exited>") or after $timeout s
# ("<name> (pid <pid>) <late>").
wait_for() {
	local pid=$1 name=$2 exited=$3 late=$4
	shift 4
	local deadline=$((SECONDS + timeout))
	until "$@"; do
		if ! kill -0 "$pid" 2>/dev/null; then
			fail "$name (pid $pid) $exited" "$run_dir/logs/$name.out" "$run_dir/logs/$name.log"
		fi
		if [ $SECONDS -ge $deadline ]; then
			fail "$name (pid $pid) $late" "$run_dir/logs/$name.out" "$run_dir/logs/$name.log"
		fi
		sleep 0.2
	done
}

# start_server <name> <heap> <direct memory> <main class> <port> [args]:
# starts the server <name> (conf/logback-<name>.xml, logs/<name>.out; its
# arguments [args], by default -c conf/<name>.conf) in its own session, so
# it neither dies with the calling terminal nor receives its Ctrl-C;
# records its pid (server_pid and the pid file) and waits until it listens
# on <port>.
start_server() {
	local name=$1 heap=$2 direct=$3 main=$4 port=$5
	shift 5
	local args=("$@")
	[ ${#args[@]} -gt 0 ] || args=(-c "$run_dir/conf/$name.conf")
	setsid "$java_bin" "${common_opts[@]}" \
		-Xms"$heap" -Xmx"$heap" -XX:MaxDirectMemorySize="$direct" \
		-Drmq.logback.configurationFile="$run_dir/conf/logback-$name.xml" \
		-cp "$cp" "$main" "${args[@]}" \
		</dev/null >"$run_dir/logs/$name.out" 2>&1 &
	server_pid=$!
	echo "$name $server_pid" >>"$pid_file"
	wait_for "$server_pid" "$name" "exited before listening on 127.0.0.1:$port" \
		"not listening on 127.0.0.1:$port after ${timeout}s" port_busy "$port"
}

# registered: the broker booted and registered with the nameserver.
registered() {
	grep -q 'boot success' "$run_dir/logs/broker.out" 2>/dev/null &&
		grep -q 'Registering current broker to name server completed' "$run_dir/logs/broker.log" 2>/dev/null
}

# proxy_registered: the proxy (with its broker, local mode) started and the
# broker registered with the nameserver.
proxy_registered() {
	grep -q 'rocketmq-proxy startup successfully' "$run_dir/logs/proxy.out" 2>/dev/null &&
		grep -q 'Registering current broker to name server completed' "$run_dir/logs/proxy.log" 2>/dev/null
}

t0=$SECONDS
if [ -n "${APACHE_WATCH_PID:-}" ]; then
	# Watchdog: once the watched process is gone, stop the cluster (stop.sh
	# reads the pid file, so servers started after this point are covered).
	# It exits by itself when the pid file disappears (the cluster was
	# stopped some other way).
	setsid bash -c '
		watched=$1 stop=$2 run=$3 pidf=$4
		while kill -0 "$watched" 2>/dev/null; do
			[ -f "$pidf" ] || exit 0
			sleep 1
		done
		APACHE_RUN_DIR="$run" APACHE_PID_FILE="$pidf" APACHE_STOP_SIGNAL=KILL "$stop" >/dev/null 2>&1
	' watchdog "$APACHE_WATCH_PID" "$here/stop.sh" "$run_dir" "$pid_file" \
		</dev/null >/dev/null 2>&1 &
	echo "watchdog $!" >>"$pid_file"
fi
start_server namesrv "${APACHE_NAMESRV_HEAP:-256m}" 128m org.apache.rocketmq.namesrv.NamesrvStartup "$namesrv_port"
ns_pid=$server_pid
# Ready means registered: "boot success" on stdout is printed BEFORE the
# broker's first effective registration with the nameserver (in 5.5.0 that
# comes from the periodic task, ~10 s after boot), and until then the
# nameserver knows no route, not even TBW102, so producers fail with "No
# route info of this topic". The broker logs each completed registration.
if [ -n "$proxy_grpc_port" ]; then
	# The gRPC port opens after the broker inside has started.
	start_server proxy "${APACHE_BROKER_HEAP:-1g}" "${APACHE_BROKER_DIRECT:-1g}" org.apache.rocketmq.proxy.ProxyStartup "$proxy_grpc_port" \
		-pm local -bc "$run_dir/conf/broker.conf" -pc "$run_dir/conf/rmq-proxy.json" -n "127.0.0.1:$namesrv_port"
	br_pid=$server_pid
	wait_for "$br_pid" proxy "exited during start" \
		"did not start and register its broker with the nameserver within ${timeout}s" proxy_registered
else
	start_server broker "${APACHE_BROKER_HEAP:-1g}" "${APACHE_BROKER_DIRECT:-1g}" org.apache.rocketmq.broker.BrokerStartup "$broker_port"
	br_pid=$server_pid
	wait_for "$br_pid" broker "exited during start" \
		"did not boot and register with the nameserver within ${timeout}s" registered
fi

cat >"$run_dir/env" <<EOF
NAMESRV_ADDR=127.0.0.1:$namesrv_port
BROKER_ADDR=127.0.0.1:$broker_port
APACHE_RUN_DIR=$run_dir
EOF
if [ -n "$proxy_grpc_port" ]; then
	echo "GRPC_ENDPOINT=127.0.0.1:$proxy_grpc_port" >>"$run_dir/env"
fi
echo "Apache RocketMQ $version started in $((SECONDS - t0))s: namesrv pid $ns_pid, broker pid $br_pid (flushDiskType=$flush; logs in $run_dir/logs; pids in $pid_file)"
cat "$run_dir/env"
