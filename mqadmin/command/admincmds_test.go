package command

import (
	"github.com/rmqgo/rmq/internal/testutil"

	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/admin/admintest"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// TestAdminCmdsEffects checks what the commands of topicadmin.go and
// groupadmin.go change on the servers (the goldens check their stdout),
// and their refusals.
func TestAdminCmdsEffects(t *testing.T) {
	fc, cs := consumerSampleWith()
	ns := admintest.SampleNamesrv1 + ";" + admintest.SampleNamesrv2
	a, b := admintest.SampleBrokerA0, admintest.SampleBrokerB0
	mq := func(broker, topic string, q int) protocol.MessageQueue {
		return protocol.MessageQueue{BrokerName: broker, Topic: topic, QueueID: q}
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"groupName":"NotAList"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
		check  func() string // "" when the servers are as expected
	}{
		{"updateTopicPerm -c", []string{"updateTopicPerm", "-c", "DefaultCluster", "-t", "TopicTest", "-p", "2"}, 0, "", func() string {
			for _, br := range fc.Brokers {
				if tc, ok := br.Topics["TopicTest"]; ok && br.ID == 0 && br.Cluster == "DefaultCluster" && (tc.Perm != 2 || tc.ReadQueueNums != 4) {
					return "TopicTest on " + br.Addr + ": " + topicConfigString(tc, nil)
				}
			}
			return ""
		}},
		{"updateTopicPerm bad perm", []string{"updateTopicPerm", "-b", a, "-t", "TopicTest", "-p", "rw"}, ExitUsage, "not an integer", nil},
		{"updateTopicPerm unknown topic", []string{"updateTopicPerm", "-b", a, "-t", "NoSuchTopic", "-p", "6"}, ExitError, "", nil},
		{"updateOrderConf put", []string{"updateOrderConf", "-t", "T1", "-m", "put", "-v", "broker-a:8"}, 0, "", func() string {
			if v := fc.KV["ORDER_TOPIC_CONFIG"]["T1"]; v != "broker-a:8" {
				return "order conf of T1: " + v
			}
			return ""
		}},
		{"updateOrderConf put without -v", []string{"updateOrderConf", "-t", "T1", "-m", "put"}, ExitError, "please set orderConf with option -v", nil},
		{"updateOrderConf bad method", []string{"updateOrderConf", "-t", "T1", "-m", "list"}, ExitUsage, "want put, get or delete", nil},
		{"updateOrderConf get missing", []string{"updateOrderConf", "-t", "T2", "-m", "get"}, ExitError, "", nil},
		{"updateSubGroupList -c", []string{"updateSubGroupList", "-c", "DefaultCluster", "-f", "testdata/subgrouplist.json"}, 0, "", func() string {
			for _, addr := range []string{a, b} {
				var g struct {
					RetryMaxTimes          int  `json:"retryMaxTimes"`
					ConsumeBroadcastEnable bool `json:"consumeBroadcastEnable"`
					ConsumeEnable          bool `json:"consumeEnable"`
				}
				if err := json.Unmarshal([]byte(cs.SubGroups[addr]["gl1"]), &g); err != nil || g.RetryMaxTimes != 3 || g.ConsumeBroadcastEnable || !g.ConsumeEnable {
					return "gl1 on " + addr + ": " + cs.SubGroups[addr]["gl1"]
				}
				if _, ok := cs.SubGroups[addr]["gl2"]; !ok {
					return "gl2 missing on " + addr
				}
			}
			return ""
		}},
		{"updateSubGroupList not a list", []string{"updateSubGroupList", "-b", a, "-f", bad}, ExitError, "not a JSON array", func() string {
			if _, ok := cs.SubGroups[a]["NotAList"]; ok {
				return "a group of a bad file was created"
			}
			return ""
		}},
		{"updateSubGroupList -b and -c", []string{"updateSubGroupList", "-b", a, "-c", "DefaultCluster", "-f", bad}, ExitUsage, "", nil},
		{"getConsumerConfig with a broker down", []string{"getConsumerConfig", "-g", "nobody"}, ExitError, "connection refused", nil}, // as Java
		{"setConsumeMode -c", []string{"setConsumeMode", "-c", "DefaultCluster", "-t", "TopicTest", "-g", "g1", "-m", "POP", "-q", "3"}, 0, "", func() string {
			want := `{"consumerGroup":"g1","mode":"POP","popShareQueueNum":3,"topic":"TopicTest"}`
			for _, addr := range []string{a, b} {
				if m := cs.RequestModes[addr]; len(m) != 1 || m[0] != want {
					return "modes on " + addr + ": " + strings.Join(m, " ")
				}
			}
			return ""
		}},
		{"setConsumeMode bad mode", []string{"setConsumeMode", "-b", a, "-t", "TopicTest", "-g", "g1", "-m", "pop"}, ExitUsage, "want PULL or POP", nil},
		{"setConsumeMode unknown topic", []string{"setConsumeMode", "-b", a, "-t", "Nope", "-g", "g1", "-m", "PULL"}, ExitError, "not exist", nil},
		{"cloneGroupOffset", []string{"cloneGroupOffset", "-s", "g1", "-d", "gc", "-t", "TopicTest"}, 0, "", func() string {
			for _, q := range []protocol.MessageQueue{mq("broker-a", "TopicTest", 0), mq("broker-a", "TopicTest", 3), mq("broker-a", "%RETRY%g1", 0)} {
				if got, want := cs.Offsets[a]["gc"][q].ConsumerOffset, cs.Offsets[a]["g1"][q].ConsumerOffset; got != want {
					return "gc offset of " + q.String() + " differs from g1's"
				}
			}
			return ""
		}},
		{"skipAccumulatedMessage", []string{"skipAccumulatedMessage", "-g", "g2", "-t", "TopicTest"}, 0, "", nil},
		{"brokerConsumeStats bad level", []string{"brokerConsumeStats", "-b", a, "-l", "x"}, ExitUsage, "not an integer", nil},
		{"allocateMQ unknown topic", []string{"allocateMQ", "-t", "Nope", "-i", "a,b"}, ExitError, "", nil},
	}
	for _, tt := range tests {
		r := runFake(t, fc, append(tt.args, "-n", ns)...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) {
			t.Errorf("%s: exit %d, want %d; stderr %q, want it to contain %q", tt.name, r.code, tt.code, r.stderr, tt.stderr)
			continue
		}
		if tt.check != nil {
			if msg := tt.check(); msg != "" {
				t.Errorf("%s: %s", tt.name, msg)
			}
		}
	}
}

// TestAllocateAveragely: AllocateMessageQueueAveragely's split, the first
// (n mod consumers) consumers taking one more queue.
func TestAllocateAveragely(t *testing.T) {
	mqs := make([]protocol.MessageQueue, 8)
	for i := range mqs {
		mqs[i] = protocol.MessageQueue{Topic: "T", BrokerName: "b", QueueID: i}
	}
	ids := func(l []protocol.MessageQueue) []int {
		out := []int{}
		for _, m := range l {
			out = append(out, m.QueueID)
		}
		return out
	}
	tests := []struct {
		cids []string
		cid  string
		want []int
	}{
		{[]string{"a", "b", "c"}, "a", []int{0, 1, 2}},
		{[]string{"a", "b", "c"}, "b", []int{3, 4, 5}},
		{[]string{"a", "b", "c"}, "c", []int{6, 7}},
		{[]string{"a", "b"}, "b", []int{4, 5, 6, 7}},
		{[]string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, "h", []int{7}},
		{[]string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, "i", []int{}},
		{[]string{"a"}, "z", []int{}},
	}
	for _, tt := range tests {
		got := ids(allocateAveragely(mqs, tt.cids, tt.cid))
		if len(got) != len(tt.want) {
			t.Errorf("%v %s: %v, want %v", tt.cids, tt.cid, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%v %s: %v, want %v", tt.cids, tt.cid, got, tt.want)
				break
			}
		}
	}
}

// TestJavaTimestamp: milliseconds, or yyyy-MM-dd#HH:mm:ss:SSS in the
// given location (UtilAll.YYYY_MM_DD_HH_MM_SS_SSS).
func TestJavaTimestamp(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1700000000400", 1700000000400, true},
		{"2023-11-14#22:13:20:400", 1700000000400, true},
		{"2023-11-14#22:13:20:007", 1700000000007, true},
		{"2023-11-14#22:13:20", 0, false},
		{"2023-11-14#22:13:20:4", 0, false},
		{"2023-11-14 22:13:20:400", 0, false},
		{"now", 0, false},
	} {
		got, err := javaTimestamp("b", tt.in, time.UTC)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("%q: %d, %v; want %d (ok %v)", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// TestExportMetadataNothingToDo: -b without -t or -g writes nothing and
// says nothing (as Java); neither -b nor -c is a usage error.
func TestExportMetadataNothingToDo(t *testing.T) {
	fc := adminSample()
	dir := t.TempDir()
	r := runFake(t, fc, "exportMetadata", "-b", admintest.SampleBrokerA0, "-f", dir, "-n", admintest.SampleNamesrv1)
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("code %d stdout %q stderr %s", r.code, r.stdout, r.stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("wrote %v", entries)
	}
	if r := runFake(t, fc, "exportMetadata", "-f", dir, "-n", admintest.SampleNamesrv1); r.code != ExitUsage {
		t.Fatalf("no -b or -c: code %d", r.code)
	}
}

// TestClusterRT: a round sends -a messages to each broker's own topic and
// prints a line per broker (broker-b has no such topic: every send fails);
// the command runs until its context ends, as Java's until interrupted.
func TestClusterRT(t *testing.T) {
	f := servedMsgFixture(t, false)
	var out testutil.SyncBuffer
	var errb bytes.Buffer
	env := msgEnv(f, modeClient, &bytes.Buffer{}, &errb, t.TempDir())
	env.Stdout = &out
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- Main(ctx, []string{"clusterRT", "-a", "3", "-s", "8", "-i", "1", "-n", f.ns}, env) }()
	deadline := time.Now().Add(15 * time.Second)
	for strings.Count(out.String(), "\n") < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "#Cluster Name") {
		t.Fatalf("output %q", out.String())
	}
	rows := map[string][]string{}
	for _, l := range lines[1:3] {
		fs := strings.Fields(l)
		if len(fs) != 5 || fs[0] != "DefaultCluster" {
			t.Fatalf("row %q", l)
		}
		rows[fs[1]] = fs[2:]
	}
	if a := rows["broker-a"]; len(a) != 3 || a[1] != "3" || a[2] != "0" {
		t.Errorf("broker-a row %v, want 3 sent, 0 failed", a)
	}
	if b := rows["broker-b"]; len(b) != 3 || b[1] != "0" || b[2] != "3" {
		t.Errorf("broker-b row %v, want 0 sent, 3 failed", b)
	}
}
