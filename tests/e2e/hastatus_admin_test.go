package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

// TestHAStatusMQAdmin runs haStatus of our mqadmin and of the Java mqadmin
// 5.5.0 (skipped with a message without java/mvn) against an idle classic
// master/slave pair: the master's table (-b and -c) is the same to the
// byte; the slave's lines are the same but for the two clock readings.
func TestHAStatusMQAdmin(t *testing.T) {
	// Mostly waiting for the Java tool's JVMs: runs beside the other slow
	// tests.
	t.Parallel()
	start := time.Now()
	c := startCluster(t, framework.Options{Brokers: 1, Replicas: 2})
	set := c.Set(framework.BrokerName(0))
	master, slave := set[0], set[1]
	rc := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer rc.Close()
	testutil.WaitFor(t, 10*time.Second, "slave connected to the master's HA port", func() bool {
		return len(harness.HAStatus(t, rc, master.Addr()).HAConnectionInfo) == 1
	})

	t.Logf("cluster up and replicating after %v", time.Since(start))
	cases := [][]string{
		{"haStatus", "-b", master.Addr()},
		{"haStatus", "-c", framework.DefaultCluster},
		{"haStatus", "-b", slave.Addr()},
	}
	want := make([]string, len(cases))
	for i, args := range cases {
		want[i] = mqadmin(t, c, args...)
	}
	if !strings.Contains(want[0], "\n#MasterAddr\t"+master.Addr()+"\n") || !strings.Contains(want[0], "#SlaveNum\t1\n#InSyncSlaveNum\t1\n") ||
		want[1] != want[0] || !strings.Contains(want[2], "#MasterFlushOffset\t") {
		t.Fatalf("our haStatus:\n%s\n%s\n%s", want[0], want[1], want[2])
	}

	var runs [][]string
	for _, args := range cases {
		runs = append(runs, append(append([]string{}, args...), "-n", c.NamesrvAddr()))
	}
	javaStart := time.Now()
	got := javaOutputs(t, runs)
	t.Logf("Java mqadmin took %v", time.Since(javaStart))
	clock := regexp.MustCompile(`(?m)^(#Last(Read|Write)Time\t).*$`)
	for i, args := range cases {
		g, w := clock.ReplaceAllString(got[i], "${1}<time>"), clock.ReplaceAllString(want[i], "${1}<time>")
		if g != w {
			t.Errorf("%v: Java prints\n%s\nwe print\n%s", args, got[i], want[i])
		}
	}
}
