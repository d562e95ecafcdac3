package e2e

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

func mustContain(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Fatalf("output lacks %q:\n%s", w, out)
		}
	}
}

// TestMQAdminCommands runs our mqadmin's core commands against a nameserver
// and two brokers.
func TestMQAdminCommands(t *testing.T) {
	c := startCluster(t, framework.Options{Brokers: 2})
	a, b := c.Brokers()[0], c.Brokers()[1]

	testutil.Eventually(t, 10*time.Second, func() error {
		out, err := c.MQAdmin(t, "clusterList")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "broker-a") || !strings.Contains(out, "broker-b") {
			return fmt.Errorf("clusterList:\n%s", out)
		}
		return nil
	})

	out, err := c.MQAdmin(t, "updateTopic", "-c", "DefaultCluster", "-t", "E2ETopic", "-r", "4", "-w", "4")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, out, "create topic to "+a.Addr()+" success", "create topic to "+b.Addr()+" success")

	// The broker re-registers before answering, so the route is there at once.
	out, err = c.MQAdmin(t, "topicRoute", "-t", "E2ETopic")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, out, `"brokerName":"broker-a"`, `"brokerName":"broker-b"`, `"writeQueueNums":4`, a.Addr(), b.Addr())

	out, err = c.MQAdmin(t, "topicList")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, out, "E2ETopic")

	out, err = c.MQAdmin(t, "topicStatus", "-t", "E2ETopic")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "broker-"); n != 8 {
		t.Fatalf("topicStatus shows %d queues, want 8:\n%s", n, out)
	}

	out, err = c.MQAdmin(t, "brokerStatus", "-b", a.Addr())
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, out, "brokerVersionDesc", "commitLogDiskRatio")

	out, err = c.MQAdmin(t, "getBrokerConfig", "-b", a.Addr())
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, out, "brokerName", "broker-a")

	// Broker permission: read-only broker-a, then restore.
	mqadmin(t, c, "updateBrokerConfig", "-b", a.Addr(), "-k", "brokerPermission", "-v", "4")
	testutil.Eventually(t, 10*time.Second, func() error {
		out, err := c.MQAdmin(t, "topicRoute", "-t", "E2ETopic")
		if err != nil {
			return err
		}
		if !strings.Contains(out, `"perm":4`) {
			return fmt.Errorf("perm 4 not in route:\n%s", out)
		}
		return nil
	})
	if _, err := c.MQAdmin(t, "updateBrokerConfig", "-b", a.Addr(), "-k", "brokerPermission", "-v", "9"); err == nil {
		t.Fatal("brokerPermission 9 accepted")
	}
	mqadmin(t, c, "updateBrokerConfig", "-b", a.Addr(), "-k", "brokerPermission", "-v", "6")

	// wipeWritePerm / addWritePerm on the nameserver.
	out, err = c.MQAdmin(t, "wipeWritePerm", "-b", "broker-b")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, out, "wipe write perm of broker[broker-b] in name server[")
	out, _ = c.MQAdmin(t, "topicRoute", "-t", "E2ETopic")
	if !strings.Contains(out, `"perm":4`) {
		t.Fatalf("route after wipe:\n%s", out)
	}
	mqadmin(t, c, "addWritePerm", "-b", "broker-b")

	// KV config and nameserver config.
	mqadmin(t, c, "updateKvConfig", "-s", "E2E_NS", "-k", "k1", "-v", "v1")
	mqadmin(t, c, "deleteKvConfig", "-s", "E2E_NS", "-k", "k1")
	mqadmin(t, c, "updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true")
	out, err = c.MQAdmin(t, "getNamesrvConfig")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, out, "orderMessageEnable", "true")
	if _, err := c.MQAdmin(t, "updateNamesrvConfig", "-k", "kvConfigPath", "-v", "/etc/x"); err == nil {
		t.Fatal("blacklisted namesrv key accepted")
	}

	// Bad input through the tool: illegal and reserved names fail clearly.
	for _, bad := range []string{"bad topic!", "TBW102", strings.Repeat("x", 128)} {
		if _, err := c.MQAdmin(t, "updateTopic", "-b", a.Addr(), "-t", bad); err == nil {
			t.Fatalf("updateTopic %q succeeded", bad)
		}
	}

	mqadmin(t, c, "deleteTopic", "-c", "DefaultCluster", "-t", "E2ETopic")
	if _, err := c.MQAdmin(t, "topicRoute", "-t", "E2ETopic"); err == nil {
		t.Fatal("route of a deleted topic still found")
	}
}

// TestJavaMQAdmin runs Apache's own mqadmin (from Maven Central) against our
// cluster: clusterList, updateTopic, topicRoute, topicList and topicStatus
// print the same facts ours does.
func TestJavaMQAdmin(t *testing.T) {
	skipShort(t, "the Java tool takes a few seconds per command")
	t.Parallel()
	c := startCluster(t, framework.Options{Brokers: 2})
	java := javaMQAdmin(t, c)
	testutil.Eventually(t, 10*time.Second, func() error {
		out, _ := c.MQAdmin(t, "clusterList")
		if strings.Count(out, "broker-") != 2 {
			return fmt.Errorf("cluster not up:\n%s", out)
		}
		return nil
	})
	out := java("clusterList")
	mustContain(t, out, "DefaultCluster", "broker-a", "broker-b", c.Brokers()[0].Addr(), c.Brokers()[1].Addr(), "V5_5_0")

	out = java("updateTopic", "-c", "DefaultCluster", "-t", "JavaTopic", "-r", "3", "-w", "3")
	mustContain(t, out, "create topic to "+c.Brokers()[0].Addr()+" success", "create topic to "+c.Brokers()[1].Addr()+" success")

	javaRoute := java("topicRoute", "-t", "JavaTopic")
	ourRoute, err := c.MQAdmin(t, "topicRoute", "-t", "JavaTopic")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, javaRoute, "broker-a", "broker-b", `"writeQueueNums":3`)
	if normalizeJSON(javaRoute) != normalizeJSON(ourRoute) {
		t.Fatalf("topicRoute differs\njava:\n%s\nours:\n%s", javaRoute, ourRoute)
	}

	out = java("topicList")
	mustContain(t, out, "JavaTopic")

	javaStatus := java("topicStatus", "-t", "JavaTopic")
	if n := strings.Count(javaStatus, "broker-"); n != 6 {
		t.Fatalf("java topicStatus shows %d queues:\n%s", n, javaStatus)
	}

	// The same with ROCKETMQ binary headers.
	out, err = harness.RunJavaMQAdminEnv(t, []string{"RMQ_JAVA_OPTS=-Drocketmq.serialize.type=ROCKETMQ"}, "topicRoute", "-t", "JavaTopic", "-n", c.NamesrvAddr())
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, out, "broker-a", "broker-b")
}

func normalizeJSON(s string) string {
	return strings.Join(strings.Fields(s), "")
}

// TestBrokerConnectionCloseRemovesRoute: a killed broker's routes go away as
// soon as its connection to the nameserver closes.
func TestBrokerConnectionCloseRemovesRoute(t *testing.T) {
	c := startCluster(t, framework.Options{Needs: []framework.Capability{framework.Crash}, Brokers: 2})
	mqadmin(t, c, "updateTopic", "-c", "DefaultCluster", "-t", "GoneTopic")
	c.Brokers()[1].Kill(t)
	testutil.Eventually(t, 10*time.Second, func() error {
		out, err := c.MQAdmin(t, "clusterList")
		if err != nil {
			return err
		}
		if strings.Contains(out, "broker-b") {
			return fmt.Errorf("broker-b still listed:\n%s", out)
		}
		return nil
	})
	out, err := c.MQAdmin(t, "topicRoute", "-t", "GoneTopic")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "broker-b") {
		t.Fatalf("route still names broker-b:\n%s", out)
	}
	// It comes back with its topics when restarted.
	c.Brokers()[1].Start(t)
	testutil.Eventually(t, 15*time.Second, func() error {
		out, err := c.MQAdmin(t, "topicRoute", "-t", "GoneTopic")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "broker-b") {
			return fmt.Errorf("broker-b not back:\n%s", out)
		}
		return nil
	})
}

// rawFrame builds a frame by hand so tests can break it.
func rawFrame(length uint32, mark uint32, rest []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, length)
	b = binary.BigEndian.AppendUint32(b, mark)
	return append(b, rest...)
}

// closedByPeer reports whether the server closed conn within 5 s.
func closedByPeer(conn net.Conn) bool {
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64<<10)
	for {
		_, err := conn.Read(buf)
		if err == io.EOF {
			return true
		}
		if err != nil {
			ne, ok := err.(net.Error)
			return !(ok && ne.Timeout())
		}
	}
}

func roundTrip(t *testing.T, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req.Opaque = 42
	frame, err := remoting.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(frame); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var lenBuf [4]byte
	if _, err := io.ReadFull(conn, lenBuf[:]); err != nil {
		t.Fatalf("read response: %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(lenBuf[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		t.Fatal(err)
	}
	resp, err := remoting.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Opaque != 42 || !resp.IsResponse() {
		t.Fatalf("response opaque %d flag %d", resp.Opaque, resp.Flag)
	}
	return resp
}

// TestBadInputKeepsServing sends malformed frames and bad requests to the
// real nameserver and broker: each gets a clear code or a clean close, and
// the servers keep answering other connections.
func TestBadInputKeepsServing(t *testing.T) {
	c := startCluster(t, framework.Options{Brokers: 1})
	for _, addr := range []string{c.NamesrvAddr(), c.Brokers()[0].Addr()} {
		for name, frame := range map[string][]byte{
			"oversize length":          rawFrame(64<<20, 0, nil),
			"header longer than frame": rawFrame(4+2, 100, []byte("{}")),
			"truncated binary header":  rawFrame(4+5, 1<<24|5, []byte{0, 1, 2, 3, 4}),
			"non-JSON header":          rawFrame(4+5, 5, []byte("hello")),
			"unknown serialize type":   rawFrame(4+2, 7<<24|2, []byte("{}")),
			"negative length":          rawFrame(0xFFFFFFF0, 0, nil),
		} {
			t.Run(addr+"/"+name, func(t *testing.T) {
				conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				conn.Write(frame)
				if !closedByPeer(conn) {
					t.Fatal("server kept a connection that sent a malformed frame")
				}
			})
		}
		// Unknown request code → REQUEST_CODE_NOT_SUPPORTED.
		resp := roundTrip(t, addr, remoting.NewRequest(9999, nil, nil))
		if resp.Code != 3 || !strings.Contains(resp.Remark, "9999") {
			t.Fatalf("%s unknown code: %d %q", addr, resp.Code, resp.Remark)
		}
		// ROCKETMQ header requests are answered in ROCKETMQ.
		req := remoting.NewRequest(106, nil, nil)
		req.SerializeType = remoting.SerializeRocketMQ
		if resp := roundTrip(t, c.NamesrvAddr(), req); resp.Code != 0 || resp.SerializeType != remoting.SerializeRocketMQ {
			t.Fatalf("binary cluster info: code %d type %v", resp.Code, resp.SerializeType)
		}
	}
	// Illegal topic names → INVALID_PARAMETER from the broker.
	for _, topic := range []string{"bad topic", "a/b", strings.Repeat("t", 128), "TBW102", "SCHEDULE_TOPIC_XXXX", "rmq_sys_x"} {
		resp := roundTrip(t, c.Brokers()[0].Addr(), remoting.NewRequest(17, map[string]string{
			"topic": topic, "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6", "topicFilterType": "SINGLE_TAG",
		}, nil))
		if resp.Code != 29 || resp.Remark == "" {
			t.Fatalf("topic %q: code %d remark %q", topic, resp.Code, resp.Remark)
		}
	}
	// Missing required field → a clear code, not a crash.
	if resp := roundTrip(t, c.NamesrvAddr(), remoting.NewRequest(105, nil, nil)); resp.Code == 0 || resp.Remark == "" {
		t.Fatalf("route without topic: %d %q", resp.Code, resp.Remark)
	}
	// Both servers still serve.
	if resp := roundTrip(t, c.NamesrvAddr(), remoting.NewRequest(106, nil, nil)); resp.Code != 0 {
		t.Fatalf("namesrv after bad input: %d", resp.Code)
	}
	if resp := roundTrip(t, c.Brokers()[0].Addr(), remoting.NewRequest(28, nil, nil)); resp.Code != 0 {
		t.Fatalf("broker after bad input: %d", resp.Code)
	}
}
