package statictopicbench

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/e2e/harness"
)

// The benchmark runs on a cluster it starts itself (harness.StartCluster),
// or on one already running (scripts/cluster.sh 3, make cluster N=3) when
// STATIC_BENCH_NAMESRV names its nameserver; STATIC_BENCH_BROKER_PIDS
// (pids separated by spaces or commas) then lets it measure the brokers'
// CPU time.
const (
	envNamesrv    = "STATIC_BENCH_NAMESRV"
	envBrokerPIDs = "STATIC_BENCH_BROKER_PIDS"
)

// benchCluster is where the benchmark runs.
type benchCluster struct {
	*harness.Cluster
	pids     []int  // broker processes, for CPU time (none: not measured)
	external string // "" or where the cluster came from, for the report
}

func startBenchCluster(t *testing.T) *benchCluster {
	t.Helper()
	ns := os.Getenv(envNamesrv)
	if ns == "" {
		c := harness.StartCluster(t, harness.ClusterOptions{Brokers: 3})
		bc := &benchCluster{Cluster: c}
		for _, b := range c.Brokers {
			bc.pids = append(bc.pids, b.Proc.Pid())
		}
		return bc
	}
	c := &harness.Cluster{BinDir: harness.BuildBinaries(t, harness.MQAdmin), NamesrvAddr: ns}
	ac, err := admin.New(admin.Config{NameServers: []string{ns}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	ctx := context.Background()
	ci, err := ac.GetBrokerClusterInfo(ctx)
	if err != nil {
		t.Fatalf("%s=%s: %v", envNamesrv, ns, err)
	}
	for _, name := range append(oldLeaders(), newLeaders()...) {
		addr, err := admin.MasterAddrByBrokerName(ci, name)
		if err != nil {
			t.Fatalf("%s=%s: the benchmark needs masters broker-a, broker-b and broker-c (scripts/cluster.sh 3): %v", envNamesrv, ns, err)
		}
		_, port, _ := net.SplitHostPort(addr)
		p, _ := strconv.Atoi(port)
		c.Brokers = append(c.Brokers, &harness.BrokerProc{Name: name, Addr: addr, Port: p})
	}
	// A second run on the same cluster would find its topics with data and
	// offsets of the first: refuse rather than delete anything.
	for _, topic := range []string{remapTopic, staticTopic, normalTopic} {
		if _, err := ac.GetTopicRoute(ctx, topic); err == nil {
			t.Fatalf("topic %s already exists on the cluster at %s: run the benchmark on a fresh cluster (scripts/cluster.sh with an empty DATA dir)", topic, ns)
		} else if !admin.IsCode(err, code.TopicNotExist) {
			t.Fatalf("route of %s: %v", topic, err)
		}
	}
	bc := &benchCluster{Cluster: c, external: fmt.Sprintf("the running cluster at %s", ns)}
	for _, f := range strings.FieldsFunc(os.Getenv(envBrokerPIDs), func(r rune) bool { return r == ',' || r == ' ' }) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			t.Fatalf("%s=%q: want process ids", envBrokerPIDs, os.Getenv(envBrokerPIDs))
		}
		bc.pids = append(bc.pids, pid)
	}
	slices.Sort(bc.pids)
	return bc
}
