package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqgo/rmq/broker/ha"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

// TestHAClassicSyncMaster (checklist row 19): a SYNC_MASTER with
// inSyncReplicas=2 and one SLAVE. Sends succeed once replicated, the two
// CommitLogs are byte-identical and the slave indexes the messages; with
// the slave stopped sends answer FLUSH_SLAVE_TIMEOUT after slaveTimeout,
// and with inSyncReplicas=1 (the 5.x default) SEND_OK again. A stranger
// writing a huge offset to the HA port (row 17) is disconnected.
func TestHAClassicSyncMaster(t *testing.T) {
	// Mostly waiting for slave timeouts and restarts: runs beside the other
	// slow tests.
	t.Parallel()
	rlog.SetLogLevel("error")
	haPort := harness.LatePort(t)
	c := startCluster(t, framework.Options{Brokers: 1, Replicas: 2, PerBroker: func(_ string, id int) map[string]string {
		if id > 0 {
			return map[string]string{"haSendHeartbeatInterval": "500"}
		}
		return map[string]string{"brokerRole": "SYNC_MASTER", "inSyncReplicas": "2", "totalReplicas": "2",
			"slaveTimeout": "1000", "haListenPort": strconv.Itoa(haPort)}
	}})
	set := c.Set(framework.BrokerName(0))
	master, slave := set[0], set[1]
	const topic = "HAClassicTopic"
	if _, err := c.MQAdmin(t, "updateTopic", "-b", master.Addr(), "-t", topic, "-r", "2", "-w", "2"); err != nil {
		t.Fatal(err)
	}
	rc := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer rc.Close()
	haStatus := func(addr string) protocol.HARuntimeInfo { return harness.HAStatus(t, rc, addr) }
	testutil.WaitFor(t, 10*time.Second, "slave connected to the master's HA port", func() bool {
		return len(haStatus(master.Addr()).HAConnectionInfo) == 1
	})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})),
		producer.WithGroupName("ha_classic_producer"), producer.WithInstanceName("ha-classic-producer"), producer.WithRetry(0), producer.WithSendMsgTimeout(5*time.Second))
	started(t, p, err)
	defer p.Shutdown()
	send := func(i int) (*primitive.SendResult, time.Duration) {
		t.Helper()
		start := time.Now()
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, fmt.Appendf(nil, "replicated-%d", i)))
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		return res, time.Since(start)
	}
	const n = 20
	for i := range n {
		if res, _ := send(i); res.Status != primitive.SendOK {
			t.Fatalf("send %d with the slave up: %v", i, res)
		}
	}

	// A SEND_OK of a SYNC_MASTER means the slave acknowledged: the logs are
	// already equal.
	st := haStatus(master.Addr())
	if st.HAConnectionInfo[0].SlaveAckOffset != st.MasterCommitLogMaxOffset || st.InSyncSlaveNums != 1 || !st.Master {
		t.Fatalf("master HA status %+v", st)
	}
	first := filepath.Join("commitlog", fmt.Sprintf("%020d", 0))
	mb, err := os.ReadFile(filepath.Join(master.StoreDir(), first))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := os.ReadFile(filepath.Join(slave.StoreDir(), first))
	if err != nil {
		t.Fatal(err)
	}
	end := st.MasterCommitLogMaxOffset
	if end == 0 || int64(len(sb)) < end || !bytes.Equal(mb[:end], sb[:end]) {
		t.Fatalf("CommitLogs differ below %d (slave file %d bytes)", end, len(sb))
	}
	ss := haStatus(slave.Addr())
	if ss.Master || ss.HAClientRuntimeInfo == nil || ss.HAClientRuntimeInfo.MasterAddr != "127.0.0.1:"+strconv.Itoa(haPort) || ss.HAClientRuntimeInfo.MaxOffset != end {
		t.Fatalf("slave HA status %+v", ss)
	}
	// The slave's dispatcher indexed the replicated messages.
	testutil.Eventually(t, 10*time.Second, func() error {
		total, err := harness.QueuedMessages(rc, slave.Addr(), topic, 2)
		if err == nil && total != n {
			err = fmt.Errorf("slave consume queues hold %d messages, want %d", total, n)
		}
		return err
	})

	// Without the slave a send waits slaveTimeout, is stored, and answers
	// FLUSH_SLAVE_TIMEOUT.
	if err := slave.Stop(); err != nil {
		t.Fatal(err)
	}
	// A stranger writing a huge offset to the HA port (#3015) is closed and
	// acknowledges nothing.
	stranger, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(haPort))
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	if _, err := stranger.Write(ha.AppendReport(nil, 1<<62)); err != nil {
		t.Fatal(err)
	}
	_ = stranger.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, stranger); err != nil {
		t.Fatalf("the master kept the stranger's connection: %v", err)
	}
	res, took := send(n)
	if res.Status != primitive.SendFlushSlaveTimeout || took < 900*time.Millisecond {
		t.Fatalf("send without the slave: %v after %v", res, took)
	}
	// 5.x semantics: inSyncReplicas=1 does not wait for any slave.
	if _, err := c.MQAdmin(t, "updateBrokerConfig", "-b", master.Addr(), "-k", "inSyncReplicas", "-v", "1"); err != nil {
		t.Fatal(err)
	}
	for i := n + 1; i < n+4; i++ {
		if res, took := send(i); res.Status != primitive.SendOK || took > 800*time.Millisecond {
			t.Fatalf("send %d with inSyncReplicas=1: %v after %v", i, res, took)
		}
	}
}
