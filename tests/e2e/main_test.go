// Package e2e holds end-to-end tests: a nameserver and brokers on loopback
// ports (tests/framework), driven by our mqadmin, the Java mqadmin and real
// clients.
//
// -cluster picks the framework implementation of a run: process (the
// default: the real binaries) or inproc (the servers inside the test
// binary; fast, and what `make test` runs under -race, for the tests that
// use only our SDK, our mqadmin and raw remoting: client-go has data races
// of its own). Tests that need what only processes do (kill -9) say so in
// their Options.Needs and are skipped in-process.
package e2e

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
	"github.com/rmqgo/rmq/tests/framework/inproc"
	"github.com/rmqgo/rmq/tests/framework/process"
)

// clusterFlag is -cluster, read once by TestMain into clusterKind. Its
// default is $RMQ_TEST_CLUSTER when set (see harness.EnvTestCluster).
var clusterFlag = flag.String("cluster", harness.EnvDefault(harness.EnvTestCluster, string(framework.Process)),
	"cluster implementation: process (real binaries) or inproc (in the test process)")

// processOnly skips the test under -cluster=inproc: what it does (why)
// needs server processes.
func processOnly(t *testing.T, why string) {
	t.Helper()
	if framework.Kind(*clusterFlag) == framework.InProcess {
		t.Skip(why + ": runs with -cluster=process only")
	}
}

func TestMain(m *testing.M) {
	flag.Parse()
	harness.DefaultRun()
	if _, err := framework.ParseKind(*clusterFlag); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: -cluster:", err)
		os.Exit(2)
	}
	harness.Main(m)
}

// startCluster starts a cluster of the implementation -cluster names.
func startCluster(t testing.TB, opts framework.Options) framework.Cluster {
	t.Helper()
	if framework.Kind(*clusterFlag) == framework.InProcess {
		return inproc.Start(t, opts)
	}
	return process.Start(t, opts)
}
