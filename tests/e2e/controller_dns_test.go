package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

// TestControllerAddrByDNSLookup: a controller-mode broker with
// fetchControllerAddrByDnsLookup=true and controllerAddr=localhost:port
// finds its controller through the addresses the name resolves to
// (127.0.0.1 answers; ::1, where nothing listens, is passed over),
// registers and is elected master of its new set.
func TestControllerAddrByDNSLookup(t *testing.T) {
	processOnly(t, "runs a nameserver with a controller and a broker")
	t.Parallel()
	bin := harness.BuildBinaries(t, harness.Namesrv, harness.Broker)
	ctl, ns := startControllerNamesrvAt(t, bin)
	_, ctlPort, _ := strings.Cut(ctl, ":")
	dir := t.TempDir()
	port := harness.LatePort(t)
	p := harness.StartBrokerConf(t, bin, "broker-dns", dir, port, framework.BrokerProps("DNSCluster", "broker-dns", 0, port, ns, dir, map[string]string{
		"brokerId": "-1", "brokerRole": "SLAVE", "enableControllerMode": "true",
		"controllerAddr": "localhost:" + ctlPort, "fetchControllerAddrByDnsLookup": "true",
		"haListenPort": strconv.Itoa(harness.LatePort(t)),
	}))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	ac, err := admin.New(admin.Config{NameServers: []string{ns}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	testutil.Eventually(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		info, err := ac.GetSyncStateData(ctx, ctl, []string{"broker-dns"})
		if err != nil {
			return err
		}
		if ri := info.ReplicasInfoTable["broker-dns"]; ri.MasterAddress != addr {
			return fmt.Errorf("controller's view of broker-dns: %+v, want master %s", ri, addr)
		}
		return nil
	})
	// Go's dialer would resolve "localhost" by itself: the broker must
	// have looked the name up and used the addresses.
	if logs := p.Logs(); !strings.Contains(logs, `msg="controllers looked up"`) || !strings.Contains(logs, "127.0.0.1:"+ctlPort) {
		t.Fatalf("the broker did not look the controllers up:\n%s", logs)
	}
}
