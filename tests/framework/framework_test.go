package framework_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
	"github.com/rmqgo/rmq/tests/framework/inproc"
	"github.com/rmqgo/rmq/tests/framework/process"
)

// clusterFlag limits the framework's own tests to one implementation
// (-cluster=inproc: `make test` runs them so under -race); by default they
// run on both.
var clusterFlag = flag.String("cluster", harness.EnvDefault(harness.EnvTestCluster, ""),
	"run only on this implementation: process or inproc (default both, or $RMQ_TEST_CLUSTER)")

func TestMain(m *testing.M) {
	flag.Parse()
	harness.DefaultRun()
	if *clusterFlag != "" {
		if _, err := framework.ParseKind(*clusterFlag); err != nil {
			fmt.Fprintln(os.Stderr, "framework: -cluster:", err)
			os.Exit(2)
		}
	}
	harness.Main(m)
}

// starters are the implementations the framework's own tests run on.
func starters(t *testing.T) map[framework.Kind]func(testing.TB, framework.Options) framework.Cluster {
	m := map[framework.Kind]func(testing.TB, framework.Options) framework.Cluster{
		framework.InProcess: func(t testing.TB, o framework.Options) framework.Cluster { return inproc.Start(t, o) },
		framework.Process:   func(t testing.TB, o framework.Options) framework.Cluster { return process.Start(t, o) },
	}
	if testing.Short() {
		// -short: no go build of the binaries.
		delete(m, framework.Process)
	}
	for k := range m {
		if *clusterFlag != "" && k != framework.Kind(*clusterFlag) {
			delete(m, k)
		}
	}
	if len(m) == 0 {
		t.Skip("-short leaves no implementation to run on: -cluster=process builds binaries")
	}
	return m
}

// TestReplicaSets: two nameservers, two broker names with a master and a
// slave each (brokerRole SLAVE, brokerId 1), a per-broker override; all
// four register with both nameservers; a slave restarts at the same
// address with its configuration.
func TestReplicaSets(t *testing.T) {
	for kind, start := range starters(t) {
		t.Run(string(kind), func(t *testing.T) {
			c := start(t, framework.Options{Namesrvs: 2, Brokers: 2, Replicas: 2,
				PerBroker: func(name string, id int) map[string]string {
					if name == "broker-b" && id == 1 {
						return map[string]string{"brokerPermission": "4"}
					}
					return nil
				}})
			if c.Kind() != kind || len(c.NamesrvAddrs()) != 2 || c.NamesrvAddr() != strings.Join(c.NamesrvAddrs(), ";") {
				t.Fatalf("kind %s, nameservers %v / %q", c.Kind(), c.NamesrvAddrs(), c.NamesrvAddr())
			}
			if n := len(c.Brokers()); n != 4 {
				t.Fatalf("%d brokers, want 4", n)
			}
			if m := c.Masters(); len(m) != 2 || m[0].Name() != "broker-a" || m[1].Name() != "broker-b" || m[0].ID() != 0 {
				t.Fatalf("masters %v", m)
			}
			set := c.Set("broker-b")
			if len(set) != 2 || set[1].ID() != 1 {
				t.Fatalf("broker-b set %v", set)
			}
			slave := set[1]
			if conf := slave.Conf(); conf["brokerRole"] != framework.SlaveRole || conf["brokerId"] != "1" || conf["brokerPermission"] != "4" {
				t.Fatalf("slave conf %v", conf)
			}
			if conf := set[0].Conf(); conf["brokerRole"] != "" || conf["brokerPermission"] != "" {
				t.Fatalf("master conf %v", conf)
			}
			for _, ns := range c.NamesrvAddrs() {
				testutil.Eventually(t, 15*time.Second, func() error { return listed(t, c, ns) })
			}
			if ib, ok := slave.(*inproc.Broker); ok {
				// The slave learned its master from the nameservers'
				// REGISTER_BROKER answers: what replication will dial.
				testutil.WaitFor(t, 15*time.Second, "the slave's master address", func() bool {
					return ib.Server().MasterAddr() == set[0].Addr()
				})
			}
			addr := slave.Addr()
			slave.Restart(t)
			if !slave.Running() || slave.Addr() != addr {
				t.Fatalf("after restart: running %v, addr %s (was %s)", slave.Running(), slave.Addr(), addr)
			}
			testutil.Eventually(t, 15*time.Second, func() error { return listed(t, c, c.NamesrvAddrs()[0]) })
			if !strings.Contains(slave.Logs(), "broker started") {
				t.Fatalf("slave log lacks its start:\n%s", slave.Logs())
			}
		})
	}
}

// listed checks that nameserver ns lists every broker of c at its
// address under its brokerId.
func listed(t *testing.T, c framework.Cluster, ns string) error {
	ac, err := admin.New(admin.Config{NameServers: []string{ns}}, nil)
	if err != nil {
		return err
	}
	defer ac.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ci, err := ac.GetBrokerClusterInfo(ctx)
	if err != nil {
		return err
	}
	for _, b := range c.Brokers() {
		if got := ci.BrokerAddrTable[b.Name()].BrokerAddrs[int64(b.ID())]; got != b.Addr() {
			return fmt.Errorf("nameserver %s has %s/%d at %q, want %s", ns, b.Name(), b.ID(), got, b.Addr())
		}
	}
	return nil
}

// TestCapabilities: a test needing a crash is skipped in-process, saying
// why, and runs on processes.
func TestCapabilities(t *testing.T) {
	for kind, start := range starters(t) {
		t.Run(string(kind), func(t *testing.T) {
			var reached bool
			ok := t.Run("needs crash", func(t *testing.T) {
				c := start(t, framework.Options{Brokers: 1, Needs: []framework.Capability{framework.Crash}})
				reached = true
				b := c.Brokers()[0]
				b.Kill(t)
				if b.Running() {
					t.Fatal("running after Kill")
				}
				b.Start(t)
			})
			if !ok {
				t.Fatal("subtest failed")
			}
			if want := kind == framework.Process; reached != want {
				t.Fatalf("%s: test reached %v, want %v", kind, reached, want)
			}
		})
	}
}
