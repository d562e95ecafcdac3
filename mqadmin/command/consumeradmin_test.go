package command

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/admin/admintest"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

func runCA(t *testing.T, fc *admintest.Cluster, args ...string) result {
	t.Helper()
	return runFake(t, fc, append(args, "-n", sampleNS)...)
}

func TestConsumerStatusWritesFiles(t *testing.T) {
	golden, err := os.ReadFile(caGoldenPath("consumerStatus_i"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	fc := consumerSample()
	r := runCA(t, fc, "consumerStatus", "-g", "g1", "-s")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// fakeEnv's clock: 1700000000000 + 3.5 h.
	file := "1700012600000/" + caClient
	want := "#Index     #ClientId                                #Version             #ConsumerRunningInfoFile\n" +
		"1          127.0.0.1@c1                             V5_5_0               " + file + "\n" +
		"\n\nSame subscription in the same group of consumer\n\nRebalance OK\n" +
		"127.0.0.1@c1 MessageQueue [topic=TopicTest, brokerName=broker-a, queueId=0] can't consume for a while, maybe blocked, 12598000ms\n"
	if r.stdout != want {
		t.Fatalf("got\n%s\nwant\n%s", r.stdout, want)
	}
	// The file holds what -i prints.
	b, err := os.ReadFile(filepath.FromSlash(file))
	if err != nil || string(b) != string(golden) {
		t.Fatalf("file: %v\n%s", err, b)
	}
	// A client that cannot be asked: reported, the others still listed.
	fc.Lock(func() {
		var cc admin.ConsumerConnection
		if err := json.Unmarshal([]byte(caConnection), &cc); err != nil {
			t.Fatal(err)
		}
		cc.ConnectionSet = append(cc.ConnectionSet, admin.Connection{ClientAddr: "127.0.0.1:1", ClientID: "127.0.0.1@gone", Language: "GO", Version: 317})
		body, _ := json.Marshal(cc)
		setConnections(fc, "g1", string(body))
	})
	r = runCA(t, fc, "consumerStatus", "-g", "g1")
	if r.code != ExitError || !strings.Contains(r.stderr, "client 127.0.0.1@gone") || !strings.Contains(r.stdout, "1          127.0.0.1@c1") {
		t.Fatalf("partial: %+v", r)
	}
}

// setConnections makes the fake answer 203 for group with body (call it
// under fc.Lock).
func setConnections(fc *admintest.Cluster, group, body string) {
	prev := fc.Override
	fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
		if req.Code == code.GetConsumerConnectionList && req.Ext("consumerGroup") == group {
			resp := remoting.NewResponse(req, code.Success, "")
			resp.Body = []byte(body)
			return resp, true
		}
		return prev(addr, req)
	}
}

func TestConsumerProgressJSONAndErrors(t *testing.T) {
	fc := consumerSample()
	r := runCA(t, fc, "consumerProgress", "-g", "g1", "--output", "json")
	var got struct {
		Queues []struct {
			Topic          string `json:"topic"`
			ConsumerOffset int64  `json:"consumerOffset"`
			Diff           int64  `json:"diff"`
		} `json:"queues"`
		ConsumeTps float64 `json:"consumeTps"`
		DiffTotal  int64   `json:"diffTotal"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 || len(got.Queues) != 5 || got.DiffTotal != 33 || got.ConsumeTps != 1.125 {
		t.Fatalf("json: %v %+v\n%s", err, got, r.stdout)
	}
	r = runCA(t, fc, "consumerProgress", "--output", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"group": "g1"`) || !strings.Contains(r.stdout, `"version": "V5_5_0"`) {
		t.Fatalf("all json: %+v", r)
	}
	// A group without stats nor connection: Java's message, exit 1.
	r = runCA(t, fc, "consumerProgress", "-g", "nobody", "-t", "TopicTest")
	if r.code != ExitError || !strings.Contains(r.stderr, "CODE: 206  DESC: Not found the consumer group consume stats") {
		t.Fatalf("offline: %+v", r)
	}
	r = runCA(t, fc, "consumerConnection", "-g", "nobody")
	if r.code != ExitError || !strings.Contains(r.stderr, "TOPIC_NOT_EXIST") {
		t.Fatalf("no route: %+v", r)
	}
	r = runCA(t, fc, "consumerConnection")
	if r.code != ExitUsage {
		t.Fatalf("missing -g: %+v", r)
	}
	r = runCA(t, fc, "producerConnection", "-g", "nope", "-t", "TopicTest")
	if r.code != ExitError || !strings.Contains(r.stderr, "the producer group[nope] not exist") {
		t.Fatalf("unknown producer group: %+v", r)
	}
}

func TestResetOffsetByTimeOptions(t *testing.T) {
	fc := consumerSample()
	for _, bad := range [][]string{
		{"resetOffsetByTime", "-g", "g1", "-t", "TopicTest", "-s", "yesterday"},
		{"resetOffsetByTime", "-g", "g1", "-t", "TopicTest", "-s", "2023-11-14#22:13:20"},
		{"resetOffsetByTime", "-g", "g1", "-t", "TopicTest", "-s", "now", "-q", "x"},
		{"resetOffsetByTime", "-g", "g1", "-t", "TopicTest"},
	} {
		if r := runCA(t, fc, bad...); r.code != ExitUsage {
			t.Errorf("%v: %+v", bad, r)
		}
	}
	env := fakeEnv(fc, nil, nil)
	a := &app{env: &env}
	env.fill()
	ts, err := a.parseResetTimestamp("2023-11-14#22:13:20:123")
	if err != nil || ts != 1700000000123 {
		t.Fatalf("date: %d %v", ts, err)
	}
	if ts, _ := a.parseResetTimestamp("now"); ts != env.Now().UnixMilli() {
		t.Fatalf("now: %d", ts)
	}
	r := runCA(t, fc, "resetOffsetByTime", "-g", "g1", "-t", "TopicTest", "-s", "-1", "--output", "json")
	var got struct {
		Offsets []struct {
			BrokerName string `json:"brokerName"`
			QueueID    int    `json:"queueId"`
			Offset     int64  `json:"offset"`
		} `json:"offsets"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got.Offsets) != 8 || got.Offsets[0].Offset < 100 {
		t.Fatalf("json: %v %+v", err, r)
	}
	// -b with -q: one queue, to -o.
	r = runCA(t, fc, "resetOffsetByTime", "-g", "g1", "-t", "TopicTest", "-s", "now", "-b", admintest.SampleBrokerA0, "-q", "2", "-o", "5")
	if r.code != 0 || !strings.HasSuffix(r.stdout, "reset consumer offset to 5\n") {
		t.Fatalf("-o: %+v", r)
	}
}

func TestJavaHashMapPutAllOrder(t *testing.T) {
	mq := func(b string, q int) protocol.MessageQueue {
		return protocol.MessageQueue{BrokerName: b, QueueID: q, Topic: "TopicTest"}
	}
	var a, b []protocol.MessageQueue
	for q := range 4 {
		a, b = append(a, mq("broker-a", q)), append(b, mq("broker-b", q))
	}
	// The order the Java tool printed for these (ca_resetOffsetByTime).
	want := []protocol.MessageQueue{mq("broker-a", 3), mq("broker-a", 2), mq("broker-b", 3), mq("broker-b", 0),
		mq("broker-a", 1), mq("broker-b", 2), mq("broker-a", 0), mq("broker-b", 1)}
	if got := javaHashMapPutAllOrder([][]protocol.MessageQueue{a, b}); !slices.Equal(got, want) {
		t.Fatalf("got %v", got)
	}
	if got := javaHashMapPutAllOrder(nil); len(got) != 0 {
		t.Fatalf("empty: %v", got)
	}
}

func TestSubGroupCommands(t *testing.T) {
	fc := consumerSample()
	r := runCA(t, fc, "updateSubGroup", "-g", "x")
	if r.code != ExitUsage {
		t.Fatalf("no -b/-c: %+v", r)
	}
	for _, bad := range [][]string{{"-q", "many"}, {"-i", "one"}, {"-p", "{"}, {"--attributes", "k=v"}} {
		args := append([]string{"updateSubGroup", "-b", admintest.SampleBrokerA0, "-g", "x"}, bad...)
		if r := runCA(t, fc, args...); r.code != ExitUsage {
			t.Errorf("%v: %+v", bad, r)
		}
	}
	r = runCA(t, fc, "updateSubGroup", "-c", "DefaultCluster", "-g", "j", "-r", "4", "--output", "json")
	var got struct {
		Config    admin.SubscriptionGroupConfig `json:"config"`
		CreatedOn []string                      `json:"createdOn"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 || len(got.CreatedOn) != 2 || got.Config.RetryMaxTimes != 4 ||
		got.Config.ConsumeBroadcastEnable {
		t.Fatalf("json: %v %+v", err, r)
	}
	r = runCA(t, fc, "updateSubGroup", "-c", "Nope", "-g", "j")
	if r.code != ExitError || !strings.Contains(r.stderr, "Make sure the specified clusterName exists") {
		t.Fatalf("unknown cluster: %+v", r)
	}
	r = runCA(t, fc, "deleteSubGroup", "-g", "j")
	if r.code != ExitUsage {
		t.Fatalf("delete without -b/-c: %+v", r)
	}
	r = runCA(t, fc, "deleteSubGroup", "-c", "DefaultCluster", "-g", "j", "--output", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"cluster": "DefaultCluster"`) {
		t.Fatalf("delete json: %+v", r)
	}
}
