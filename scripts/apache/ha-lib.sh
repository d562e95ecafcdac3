#!/usr/bin/env bash
# Functions (to be sourced) that run the REFERENCE Apache RocketMQ (version
# pinned in scripts/apache/pom.xml, 5.5.0, from the Maven classpath like
# start.sh) in controller mode: nameservers with embedded DLedger
# controllers (enableControllerInNamesrv=true) and one broker set of
# controller-mode replicas. The keys are the same as ours
# (docs/replication.md); scripts/bench/ha.sh uses it.
#
#   . scripts/apache/ha-lib.sh
#   apache_ha_init <run dir>            # classpath, java, logback files
#   apache_ha_namesrv <i> <ns port> <controller peers> <self id>   # starts; sets apache_pid
#   apache_ha_broker <i> <port> <namesrvs> <controllers> [extra conf]  # starts; sets apache_pid
#
# Each server gets <run dir>/<name>.conf and <run dir>/logs/<name>.{out,log};
# calling a start function again with the same index restarts that server
# on its old store. Heaps: APACHE_NAMESRV_HEAP (256m), APACHE_BROKER_HEAP
# (512m), APACHE_BROKER_DIRECT (512m); APACHE_JVM_LIGHT=1 as in start.sh.
# The caller stops the pids.

apache_ha_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../java-lib.sh
. "$apache_ha_here/../java-lib.sh"
# shellcheck source=../local-lib.sh
. "$apache_ha_here/../local-lib.sh"

apache_ha_init() {
	apache_ha_run=$1
	mkdir -p "$apache_ha_run/logs"
	find_java
	local pom="$apache_ha_here/pom.xml" version
	version="$(pom_version "$pom")"
	local cache="$apache_ha_here/target/classpath-$version.txt"
	resolve_classpath "$pom" "$version" "$cache" ha-lib.sh org.apache.rocketmq:rocketmq-broker
	apache_ha_cp="$(cat "$cache")"
	apache_ha_version=$version
}

# apache_ha_jvm <name> <heap> <direct> <main class>: starts one JVM in its
# own session (Ctrl-C of the caller does not reach it).
apache_ha_jvm() {
	local name=$1 heap=$2 direct=$3 main=$4 run=$apache_ha_run
	cat >"$run/logback-$name.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<configuration>
    <appender name="File" class="ch.qos.logback.core.FileAppender">
        <file>$run/logs/$name.log</file>
        <append>true</append>
        <encoder><pattern>%d{yyyy-MM-dd HH:mm:ss.SSS} %p %t %logger{0} - %m%n</pattern></encoder>
    </appender>
    <root level="INFO"><appender-ref ref="File"/></root>
</configuration>
EOF
	ROCKETMQ_HOME="$run" setsid "$java_bin" -server $(apache_jvm_gc_jit) -XX:-OmitStackTraceInFastThrow \
		--add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
		--add-opens=java.base/java.lang=ALL-UNNAMED --add-exports=java.base/jdk.internal.ref=ALL-UNNAMED \
		--add-exports=java.base/sun.nio.ch=ALL-UNNAMED \
		-Duser.home="$run/$name" -Drocketmq.home.dir="$run" -Drocketmq.log.root="$run/logs" \
		-Xms"$heap" -Xmx"$heap" -XX:MaxDirectMemorySize="$direct" \
		-Drmq.logback.configurationFile="$run/logback-$name.xml" \
		-cp "$apache_ha_cp" "$main" -c "$run/$name.conf" \
		</dev/null >>"$run/logs/$name.out" 2>&1 &
	apache_pid=$!
}

apache_ha_namesrv() { # <i> <ns port> <controller peers> <self id>
	local i=$1 port=$2 peers=$3 self=$4 run=$apache_ha_run
	mkdir -p "$run/namesrv-$i"
	{
		ctl_namesrv_conf "$port" "$run/namesrv-$i" "$peers" "$self"
		cat <<EOF
bindAddress=127.0.0.1
rocketmqHome=$run
configStorePath=$run/namesrv-$i/namesrv.properties
controllerType=DLedger
EOF
	} >"$run/namesrv-$i.conf"
	apache_ha_jvm "namesrv-$i" "${APACHE_NAMESRV_HEAP:-256m}" 128m org.apache.rocketmq.namesrv.NamesrvStartup
}

apache_ha_broker() { # <i> <port> <namesrvs> <controllers> [extra conf lines]
	local i=$1 port=$2 ns=$3 ctl=$4 extra=${5:-} run=$apache_ha_run
	mkdir -p "$run/b$i"
	{
		ctl_broker_conf DefaultCluster broker-a "$port" "$ns" "$ctl" "$run/b$i"
		cat <<EOF
bindAddress=127.0.0.1
rocketmqHome=$run
storePathCommitLog=$run/b$i/commitlog
mappedFileSizeCommitLog=268435456
autoCreateSubscriptionGroup=true
$extra
EOF
	} >"$run/b$i.conf"
	apache_ha_jvm "b$i" "${APACHE_BROKER_HEAP:-512m}" "${APACHE_BROKER_DIRECT:-512m}" org.apache.rocketmq.broker.BrokerStartup
}
