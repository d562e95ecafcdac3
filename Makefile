# rmq-go: a Go implementation of Apache RocketMQ (nameserver, broker, mqadmin).
#
#   make run    build, then start a nameserver (127.0.0.1:9876) and a broker
#               (127.0.0.1:10911) with embedded defaults; data in ./data
#   make test   every test: unit, fuzz seeds, end to end with real clients
#
# All Go commands run in workspace mode (go.work) from the repository root.

GO        ?= go
BIN       ?= bin
PKGS      := github.com/rmqgo/rmq/...
GOFLAGS_BUILD := -trimpath
export CGO_ENABLED ?= 0
# Every go command builds with -trimpath (the test binaries, and the
# servers and client drivers the tests build for themselves): without it
# the build cache keys a package by its directory, so a fresh clone (as CI
# runs) compiled the whole workspace again, race variants included.
export GOFLAGS := $(strip $(filter-out -trimpath,$(GOFLAGS)) -trimpath)

.PHONY: proto all build run cluster test test-short test-repeat race vet fmt lint bench bench-vs-apache bench-recovery bench-static bench-lite bench-ha bench-grpc bench-tls bench-auth cluster-ha fuzz fuzz-long crash soak-ha grpc-streams test-auth-java test-apache-long rust5-client clean

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/namesrv github.com/rmqgo/rmq/namesrv/cmd/namesrv
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/broker github.com/rmqgo/rmq/broker/cmd/broker
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/mqadmin github.com/rmqgo/rmq/mqadmin/cmd/mqadmin
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/mqbench github.com/rmqgo/rmq/mqadmin/cmd/mqbench

run: build
	./scripts/run-local.sh

# A local cluster of N brokers (make cluster N=3) for manual testing.
cluster: build
	./scripts/cluster.sh $(or $(N),2)

# A local controller-mode cluster (make cluster-ha): 3 nameservers with
# embedded HA controllers, 2 broker sets of 3 replicas (scripts/cluster-ha.sh).
cluster-ha: build
	./scripts/cluster-ha.sh

# The whole suite, as CI runs it. Our packages run under the race detector
# (it needs cgo), four test binaries at a time: most of their time is
# waiting (timers, invisible times, intervals), and on 2 cores -p 4 took
# that phase from 151 s to 86 s with a warm build cache. The end-to-end
# tests that talk only through our SDK, our mqadmin and raw remoting run
# in the same go test command, with the servers inside the test binary
# (-cluster=inproc) under the race detector (docs/architecture.md,
# "Tests"): RMQ_TEST_CLUSTER and RMQ_TEST_RUN select them
# (tests/e2e/harness/testenv.go), so they share its compilation and idle
# time. Then all of tests/ runs on real processes (tests/framework/process)
# without the race detector (client-go, which most of them drive, has data
# races of its own); its t.Parallel tests mostly wait on client intervals:
# four at a time. The race phase names tests/e2e first, so that go test
# builds and runs it first rather than as the phase's tail (go test favours
# packages in the order they are named): 263 → 238 s in a CI run. (Naming
# e2e and interop first in the second phase too started both packages'
# JVMs at once, and Apache's controller in TestControllerTakeoverFromApache
# did not come up within its minute: left in the default order.)
UNIT_PKGS = $$($(GO) list $(PKGS) | grep -v '^github.com/rmqgo/rmq/tests')
INPROC_RACE_TESTS = ^(TestReplicaSets|TestCapabilities|TestMQAdminCommands|TestBrokerConnectionCloseRemovesRoute|TestBadInputKeepsServing|TestBadInputMessages|TestCutFramesNotExecuted|TestStoreRestartSDK|TestPopAckReviveAndKill|TestPopDeadLetter|TestMQAdminPopStatus|TestLiteTopicSeedFlow|TestLiteRestartRecoversEvents|TestLiteSDK|TestStaticTopicBroker|TestStaticTopicRemapUnderLoad|TestSDK|TestSDKFailover|TestHAClassicSyncMaster|TestSlaveCopiesMasterMetadata|TestSlaveServesReadsFromCommittedOffset|TestAuthSlaveCopy)$$
test: vet
	RMQ_TEST_CLUSTER=inproc RMQ_TEST_RUN='$(INPROC_RACE_TESTS)' CGO_ENABLED=1 $(GO) test -race -count=1 -p 4 -timeout 10m \
		github.com/rmqgo/rmq/tests/e2e $(UNIT_PKGS) github.com/rmqgo/rmq/tests/framework
	$(GO) test -count=1 -timeout 13m -parallel 4 github.com/rmqgo/rmq/tests/...

# The flake hunter: `make test` N times (make test-repeat N=5), each in a
# fresh clone of HEAD, then a table of runs and of the tests that failed
# (scripts/test-repeat.sh; TEST_CMD=... runs another command instead).
test-repeat:
	./scripts/test-repeat.sh $(or $(N),5)

test-short:
	$(GO) test -short -count=1 $(PKGS)

# Every module builds on its own (GOWORK=off: its go.mod and go.sum are
# complete) and `go mod tidy` would change nothing in any of them.
MODULES := . broker namesrv mqadmin tests
vet:
	$(GO) vet $(PKGS)
	@for m in $(MODULES); do \
		(cd $$m && GOWORK=off $(GO) build ./... && GOWORK=off $(GO) mod tidy -diff) || { echo "module $$m: does not build on its own or is not tidy"; exit 1; }; \
	done
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Regenerates pkg/grpcapi/v2pb (the apache.rocketmq.v2 gRPC code) from
# pkg/grpcapi/proto; the generated code is committed.
proto:
	./scripts/genproto.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

# Benchmarks are not part of `make test`: they are slow and the figures
# only mean something side by side in one run.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 $(PKGS)

# Send and consume TPS of our broker against Apache RocketMQ 5.5.0's, side by
# side on this machine (needs java + mvn); FLUSH_DISK_TYPE=SYNC_FLUSH too.
bench-vs-apache: build
	./scripts/bench/vs-apache.sh

# Send TPS and broker CPU/msg over plaintext and TLS (docs/operations.md "TLS").
bench-tls: build
	./scripts/bench/tls.sh

# Send TPS and broker CPU/msg of our broker plain, with ACL 2.0 (every send
# signed, authenticated and authorized) and with ACL 2.0 over TLS
# (docs/auth.md "Cost"; PPROF=1 keeps a CPU profile of every run).
bench-auth: build
	MODES="plain auth auth-tls" ./scripts/bench/tls.sh

# Recovery time after kill -9 with a 2 GiB CommitLog (SIZE_GB=n to change).
bench-recovery: build
	./scripts/bench/recovery.sh

# Static topics: remap of 64 logic queues under load (time, lost, duplicated
# offsets) and static vs normal topic send/pull TPS (tests/bench/statictopic).
# STATIC_BENCH_CLUSTER=script runs it on scripts/cluster.sh 3 instead of the
# test harness's cluster; STATIC_BENCH_NAMESRV=host:port on one already up.
bench-static: build
	./scripts/bench/statictopic.sh

# Lite topics: lite vs plain send TPS, a million lite topics (RSS, Pebble,
# creation rate), delivery latency with 100k subscriptions, one sweep
# expiring them all (tests/bench/lite).
bench-lite: build
	./scripts/bench/lite.sh

# Replication: send TPS and master CPU per message with synchronous
# replication to two slaves (classic SYNC_MASTER, inSyncReplicas=3) against
# no replication, side by side; replication lag under load. Then controller
# mode, ours against Apache 5.5.0 in the same topology: failover times
# (master kill, leader controller kill; FO_ROUNDS), send TPS and lag
# (scripts/bench/ha.sh, scripts/bench/ha-failover.sh). Not in `make test`.
bench-ha: build
	./scripts/bench/ha.sh

# The gRPC endpoint holding 10,000 idle Telemetry streams and 5,000 idle
# connections: memory per stream and connection, others served at once,
# everything released when they end (broker/grpcserver TestIdleStreams,
# TestIdleConnections; `make test` runs them with 1,000 each).
grpc-streams:
	$(GO) test -count=1 -v -run '^(TestIdleStreams|TestIdleConnections)$$' github.com/rmqgo/rmq/broker/grpcserver \
		-args -grpc.idle-streams=10000 -grpc.idle-conns=5000

# The 5.x gRPC protocol with the Java 5.x client (rocketmq-client-java):
# our broker's gRPC endpoint against Apache rocketmq-proxy 5.5.0 in local
# mode (send TPS and p99, receive+ack TPS, broker CPU per message), and on
# our broker gRPC against remoting at the same message size
# (scripts/bench/grpc.sh; needs java + mvn). Not in `make test`.
bench-grpc: build
	./scripts/bench/grpc.sh

# ACL 2.0 with the Java clients against our broker (docs/auth.md), all of
# them: Java mqadmin 5.5.0's user and ACL commands one by one and the Java
# 5.x gRPC client with credentials (25-35 s each: only here), and the ones
# `make test` runs too: our mqadmin printing what Java's prints
# (TestAuthAdminOurs), the Java client with AclClientRPCHook, ali-ons with
# its access key. Needs java + mvn and node + npm.
test-auth-java:
	RMQ_AUTH_JAVA=1 $(GO) test -count=1 -timeout 10m -parallel 3 -run '^(TestAuthJavaMQAdmin|TestAuthJavaClient|TestAuthGrpcJava|TestAuthAdminOurs|TestAuthNodeClient)$$' github.com/rmqgo/rmq/tests/e2e

# The longest tests against Apache 5.5.0's servers (tests/interop), kept
# out of make test's budget: two Apache broker JVMs under our controller
# through the controller's loss (docs/replication.md §2.7), and an Apache
# master upgraded in place to controller mode with our slave
# (docs/operations.md). Needs java + mvn.
test-apache-long:
	RMQ_APACHE_LONG=1 RMQ_REQUIRE_JAVA=1 $(GO) test -count=1 -timeout 10m -run '^(TestApacheBrokersRejoinControllersThatLostTheirState|TestClassicSetWithApacheUpgradedToControllerMode)$$' github.com/rmqgo/rmq/tests/interop

# The Rust 5.x client driver (scripts/rust5: crate rocketmq 5.0.0, every
# crate pinned by its Cargo.lock), built with cargo into
# $HOME/.cache/rmq/rust5-target (RMQ_RUST5_TARGET): about 6 minutes cold on
# 2 cores, seconds once built. `make test` never builds it cold: the Rust
# tests skip with a message until this ran once (docs/interop.md).
rust5-client:
	./scripts/rust5-client.sh build

FUZZTIME ?= 30s
FUZZ_DONE ?=
fuzz:
	./scripts/fuzz-all.sh $(FUZZTIME)

# Every fuzz target for ten million executions each (issue 19's bar for
# hostile input); hours on 2 cores, never part of `make test`. FUZZ_DONE=FILE
# resumes an interrupted run (scripts/fuzz-all.sh).
fuzz-long:
	FUZZ_DONE=$(FUZZ_DONE) ./scripts/fuzz-all.sh 10000000x

# The crash-safety harness: SIGKILL the broker at random moments under a
# SYNC_FLUSH load, then check every acknowledged message is back, intact
# (tests/crash; `make test` runs 3 rounds). CRASH_SEED=n replays a schedule.
CRASH_ROUNDS ?= 30
crash:
	GO=$(GO) ./scripts/crash.sh $(CRASH_ROUNDS)

# The HA soak (tests/e2e TestHASoak): one controller-mode set of three
# replicas under a chaos producer/checker through SOAK_ROUNDS random faults
# (master killed, stopped, frozen or partitioned; master and a slave killed
# or frozen together; a switchover by electMaster; a slave restarted, killed
# or partitioned; the controller leader killed), each healed before the next;
# nothing acknowledged may be lost and the CommitLogs must end identical.
# Up to a minute a round. SOAK_SEED=n replays a fault schedule;
# SOAK_FAULTS=freeze,kill keeps the faults whose names hold those words.
SOAK_ROUNDS ?= 20
soak-ha:
	RMQ_HA_SOAK_ROUNDS=$(SOAK_ROUNDS) RMQ_HA_SOAK_SEED=$(SOAK_SEED) RMQ_HA_SOAK_FAULTS='$(SOAK_FAULTS)' $(GO) test -count=1 -timeout 120m -v -run '^TestHASoak$$' github.com/rmqgo/rmq/tests/e2e

clean:
	rm -rf $(BIN) data .run
