package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/statictopic"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

// brokerSideHint is appended to failures that mean the brokers do not
// serve static topics.
const brokerSideHint = "(static topics need the broker side: UPDATE_AND_CREATE_STATIC_TOPIC and the logic-queue rewriting of broker/statictopic)"

// waitLeaders waits until the nameserver's route of topic maps each of its
// n logic queues to a broker accepted by ok.
func waitLeaders(t *testing.T, ac *admin.Client, topic string, n int, ok func(g int, broker string) bool) map[int]string {
	t.Helper()
	var leaders map[int]string
	testutil.Eventually(t, 15*time.Second, func() error {
		route, err := ac.GetTopicRoute(context.Background(), topic)
		if err != nil {
			return err
		}
		ep := statictopic.Endpoints(topic, route.TopicQueueMappingByBroker)
		if len(ep) != n {
			return fmt.Errorf("route has %d logic queues, want %d %s", len(ep), n, brokerSideHint)
		}
		leaders = map[int]string{}
		for mq, b := range ep {
			if !ok(mq.QueueID, b) {
				return fmt.Errorf("logic queue %d led by %s", mq.QueueID, b)
			}
			leaders[mq.QueueID] = b
		}
		return nil
	})
	return leaders
}

type sentMsg struct {
	queue    int
	offset   int64 // logic offset from the send result; -1 while the new leader was undecided
	attempts int
}

// TestStaticTopicRemapUnderLoad: a static topic of 8 logic queues over
// broker-a and broker-b (created with our mqadmin), a producer (pkg/client)
// sending all along while every logic queue is remapped to broker-c and
// back. Before each remap a consumer group (pkg/client pull consumer)
// reads and commits; after it, the group's committed logic offsets read
// back unchanged through the SDK (the first ones are stored on the old
// segment's broker, the second ones on broker-c). Then a consumer reads
// every logic queue from the beginning: every message exactly once, at the
// logic offset its send reported, offsets increasing per logic queue, each
// queue across its three segments. Subtests: the offset requests on every
// segment boundary (SegmentBoundaries) and bad input through the mqadmin
// process that changes nothing (BadInput).
func TestStaticTopicRemapUnderLoad(t *testing.T) {
	skipShort(t, "starts a nameserver and three brokers")
	// Beside the others: run alone (Go runs the sequential tests first,
	// one at a time) its 24 s were the e2e package's longest serial part.
	t.Parallel()
	c := startCluster(t, framework.Options{Brokers: 3})
	const topic = "StaticRemap"
	// mqadmin writes its plan files (<topic>-<ms>.before/.after) to the
	// temporary folder, and no other test uses this topic.
	t.Cleanup(func() {
		files, _ := filepath.Glob(filepath.Join(os.TempDir(), topic+"-*"))
		for _, f := range files {
			_ = os.Remove(f)
		}
	})
	ac, err := admin.New(admin.Config{NameServers: []string{c.NamesrvAddr()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()

	out, err := c.MQAdmin(t, "updateStaticTopic", "-t", topic, "-qn", "8", "-b", "broker-a,broker-b")
	removePlanFiles(t, out)
	if err != nil {
		t.Fatalf("updateStaticTopic: %v %s", err, brokerSideHint)
	}
	if !regexp.MustCompile(`(?m)^The old mapping data is written to file .*\.before\nThe new mapping data is written to file .*\.after$`).MatchString(out) {
		t.Fatalf("updateStaticTopic output:\n%s", out)
	}
	waitLeaders(t, ac, topic, 8, func(_ int, b string) bool { return b == "broker-a" || b == "broker-b" })

	p := startProducer(t, client.ProducerConfig{CommonConfig: client.CommonConfig{NameServers: []string{c.NamesrvAddr()}}, Group: "static_pg"})

	var (
		mu     sync.Mutex
		sent   = map[string]sentMsg{}
		failed []error
	)
	stopSending := inBackground(func(i int) {
		body := "m-" + strconv.Itoa(i)
		res, err := p.SendSync(context.Background(), &message.Message{Topic: topic, Body: []byte(body)})
		mu.Lock()
		if err != nil {
			failed = append(failed, err)
		} else {
			sent[body] = sentMsg{queue: res.Queue.QueueID, offset: res.QueueOffset, attempts: res.Attempts}
		}
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
	})
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(sent)
	}
	waitSent := func(n int) {
		testutil.Eventually(t, 20*time.Second, func() error {
			if got := count(); got < n {
				return fmt.Errorf("%d messages sent, want %d", got, n)
			}
			return nil
		})
	}
	waitSent(300)
	group := newCommitGroup(t, c.NamesrvAddr(), topic, 8)
	committed := group.consumeAndCommit(t, 0)

	out, err = c.MQAdmin(t, "remappingStaticTopic", "-t", topic, "-b", "broker-c")
	removePlanFiles(t, out)
	if err != nil {
		t.Fatalf("remap to broker-c: %v\n%s", err, out)
	}
	if !strings.Contains(out, "step 5/5") || !strings.Contains(out, "Topic "+topic+" now has 8 logic queues") {
		t.Fatalf("remap output:\n%s", out)
	}
	firstPlan := regexp.MustCompile(`(?m)^The old mapping data is written to file (\S+\.after)$`).FindStringSubmatch(out)
	if firstPlan == nil {
		t.Fatalf("remap output names no .after file:\n%s", out)
	}
	waitLeaders(t, ac, topic, 8, func(_ int, b string) bool { return b == "broker-c" })
	group.expectCommitted(t, committed, "after the remap to broker-c")
	waitSent(count() + 300)
	committed = group.consumeAndCommit(t, statictopic.BlockSeqSize)

	out, err = c.MQAdmin(t, "remappingStaticTopic", "-t", topic, "-b", "broker-a,broker-b")
	removePlanFiles(t, out)
	if err != nil {
		t.Fatalf("remap back: %v\n%s", err, out)
	}
	waitLeaders(t, ac, topic, 8, func(_ int, b string) bool { return b == "broker-a" || b == "broker-b" })
	group.expectCommitted(t, committed, "after the remap back to broker-a and broker-b")
	waitSent(count() + 300)
	stopSending()
	mu.Lock()
	if len(failed) > 0 {
		t.Errorf("%d sends failed, first: %v", len(failed), failed[0])
	}
	total := len(sent)
	mu.Unlock()

	// Every logic queue went a(or b) → c → a(or b): three segments.
	hist, err := c.MQAdmin(t, "staticTopicHistory", "-t", topic)
	if err != nil || strings.Contains(hist, "WARNING") {
		t.Fatalf("staticTopicHistory: %v\n%s", err, hist)
	}
	if n := len(regexp.MustCompile(`(?m)^  2\s+broker-[ab]\s+\d+\s+\d+0000\s+0\s+-1`).FindAllString(hist, -1)); n != 8 {
		t.Fatalf("history has %d third segments, want 8:\n%s", n, hist)
	}

	// Consume every logic queue from the beginning.
	pc, err := client.NewPullConsumer(client.PullConsumerConfig{CommonConfig: client.CommonConfig{NameServers: []string{c.NamesrvAddr()}}, Group: "static_cg"})
	started(t, pc, err)
	defer pc.Shutdown(context.Background())
	ctx := context.Background()
	got, stored := readLogicQueues(t, ctx, pc, topic, 8)
	// The producer has stopped: sent is not written any more.
	for body, s := range sent {
		g, ok := got[body]
		if !ok {
			t.Errorf("%s (queue %d, offset %d) was not consumed", body, s.queue, s.offset)
			continue
		}
		if g.queue != s.queue || (s.offset >= 0 && g.offset != s.offset) {
			t.Errorf("%s sent to queue %d offset %d, consumed at queue %d offset %d", body, s.queue, s.offset, g.queue, g.offset)
		}
	}
	if len(got) != total {
		t.Errorf("consumed %d messages, sent %d", len(got), total)
	}
	// Each logic queue was read across its three segments (logic offsets
	// 0.., then from a 10000 block, then from a higher one).
	blocks := map[int]map[int64]bool{}
	for _, g := range got {
		if blocks[g.queue] == nil {
			blocks[g.queue] = map[int64]bool{}
		}
		blocks[g.queue][g.offset/statictopic.BlockSeqSize] = true
	}
	for q := range 8 {
		if len(blocks[q]) < 3 {
			t.Errorf("logic queue %d: messages in %d offset blocks, want 3 segments", q, len(blocks[q]))
		}
	}
	retried, undecided := 0, 0
	for _, s := range sent {
		if s.attempts > 1 {
			retried++
		}
		if s.offset < 0 {
			undecided++
		}
	}
	t.Logf("%d messages through two remaps of 8 logic queues; %d sends retried (NOT_LEADER_FOR_QUEUE), %d sent while the new leader's offset was undecided", total, retried, undecided)

	leaders := waitLeaders(t, ac, topic, 8, func(_ int, b string) bool { return b == "broker-a" || b == "broker-b" })
	t.Run("SegmentBoundaries", func(t *testing.T) { checkSegmentBoundaries(t, c, ac, topic, leaders, stored) })
	t.Run("BadInput", func(t *testing.T) { checkStaticBadInput(t, c, ac, topic, leaders, firstPlan[1]) })
}

// TestStaticTopicJavaMQAdmin: the Java mqadmin (5.5.0) creates and remaps
// a static topic on our brokers (its 513 bodies have bare integer map
// keys), our mqadmin reads and remaps what it made, and the Java tool
// remaps what ours made.
func TestStaticTopicJavaMQAdmin(t *testing.T) {
	skipShort(t, "starts real processes and the Java mqadmin")
	t.Parallel()
	tmp := t.TempDir() // the Java tool's plan files
	c := startCluster(t, framework.Options{Brokers: 3})
	ac, err := admin.New(admin.Config{NameServers: []string{c.NamesrvAddr()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	const topic = "StaticJava"
	java := func(args ...string) string {
		t.Helper()
		out, err := harness.RunJavaMQAdminEnv(t, []string{"RMQ_JAVA_OPTS=-Djava.io.tmpdir=" + tmp}, append(args, "-n", c.NamesrvAddr())...)
		if err != nil {
			t.Fatalf("java mqadmin %v: %v", args, err)
		}
		// The Java tool prints failures and exits 0.
		if strings.Contains(out, "Exception") || strings.Contains(out, "command failed") {
			t.Fatalf("java mqadmin %v:\n%s", args, out)
		}
		return out
	}
	out := java("updateStaticTopic", "-t", topic, "-qn", "4", "-c", "DefaultCluster")
	if !regexp.MustCompile(`The old mapping data is written to file .*\.before\nThe new mapping data is written to file .*\.after`).MatchString(out) {
		t.Fatalf("java updateStaticTopic:\n%s %s", out, brokerSideHint)
	}
	waitLeaders(t, ac, topic, 4, func(int, string) bool { return true })

	hist, err := c.MQAdmin(t, "staticTopicHistory", "-t", topic)
	if err != nil || strings.Contains(hist, "WARNING") || strings.Count(hist, "Logic queue ") != 4 {
		t.Fatalf("our history of the Java-made topic: %v\n%s", err, hist)
	}
	mqadmin(t, c, "remappingStaticTopic", "-t", topic, "-b", "broker-c") // our remap of the Java-made topic
	waitLeaders(t, ac, topic, 4, func(_ int, b string) bool { return b == "broker-c" })
	java("remappingStaticTopic", "-t", topic, "-b", "broker-a")
	waitLeaders(t, ac, topic, 4, func(_ int, b string) bool { return b == "broker-a" })
	hist, err = c.MQAdmin(t, "staticTopicHistory", "-t", topic)
	if err != nil || strings.Contains(hist, "WARNING") {
		t.Fatalf("history after the Java remap: %v\n%s", err, hist)
	}
	// Java's create spread the queues over a, b and c; ours moved those of
	// a and b to c; Java's moved all to a: the leader item of each is on
	// broker-a with a decided logic offset at a block boundary.
	if n := len(regexp.MustCompile(`(?m)^  [12]\s+broker-a\s+\d+\s+[1-9]\d*0000\s+0\s+-1`).FindAllString(hist, -1)); n != 4 {
		t.Fatalf("history has %d decided leader items on broker-a, want 4:\n%s", n, hist)
	}
	// The Java tool reads the route our brokers serve.
	route := java("topicRoute", "-t", topic)
	if !strings.Contains(route, "topicQueueMappingByBroker") {
		t.Fatalf("java topicRoute:\n%s", route)
	}
}
