package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

// TestBrokerRegistersOnceNameserverStarts: a broker started before its
// nameserver fails its first registration; it registers again after a
// short backoff (broker/registry), so the nameserver routes it within
// seconds of starting, not at the first periodic round (10 s after the
// broker's start, then every registerNameServerPeriod).
func TestBrokerRegistersOnceNameserverStarts(t *testing.T) {
	processOnly(t, "starts a broker process before its nameserver")
	t.Parallel()
	bin := harness.BuildBinaries(t, harness.Namesrv, harness.Broker)
	nsPort, port := harness.LatePort(t), harness.LatePort(t)
	ns := fmt.Sprintf("127.0.0.1:%d", nsPort)
	dir := t.TempDir()
	b := harness.StartBrokerConf(t, bin, "broker-late", dir, port, framework.BrokerProps("LateNs", "broker-late", 0, port, ns, dir, map[string]string{
		"registerNameServerPeriod": "60000",
	}))

	nsDir := t.TempDir()
	n := harness.StartProcessWith(t, harness.ProcOptions{Name: "namesrv-late"}, filepath.Join(bin, harness.Namesrv),
		"--listen-port", strconv.Itoa(nsPort), "--data-dir", nsDir)
	n.WaitTCP(t, ns, 15*time.Second)
	started := time.Now()
	ac, err := admin.New(admin.Config{NameServers: []string{ns}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	// Retries come 1, 3, 7 s after the broker's start; its first
	// periodic round would come only after 10 s.
	testutil.Eventually(t, 6*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ci, err := ac.GetBrokerClusterInfo(ctx)
		if err != nil {
			return err
		}
		if ci.BrokerAddrTable["broker-late"].BrokerAddrs[0] == "" {
			return fmt.Errorf("the nameserver does not route broker-late yet: %+v", ci.BrokerAddrTable)
		}
		return nil
	})
	t.Logf("routed %v after the nameserver started", time.Since(started).Round(100*time.Millisecond))
	if !strings.Contains(b.Logs(), "registering again with the nameservers that failed") {
		t.Fatalf("the broker did not log its retry:\n%s", b.Logs())
	}
}
