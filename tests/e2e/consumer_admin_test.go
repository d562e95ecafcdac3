package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

const (
	caTopic    = "CATopic"
	caGroup    = "CA_GROUP"
	caProducer = "CA_PRODUCER"
)

// caConsumer is a client-go push consumer whose handler can be paused
// (it then blocks, so the committed offsets stop where they are while the
// client stays online).
type caConsumer struct {
	paused atomic.Bool
	resume chan struct{}

	mu    sync.Mutex
	seen  map[string]int // UNIQ_KEY → deliveries
	total int
}

func (c *caConsumer) handle(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	if c.paused.Load() {
		<-c.resume
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		if m.Topic != caTopic {
			continue
		}
		c.seen[m.MsgId]++
		c.total++
	}
	return consumer.ConsumeSuccess, nil
}

func (c *caConsumer) counts() (unique, total int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen), c.total
}

// progressRow is one queue line of consumerProgress: topic, broker, qid,
// broker offset, consumer offset, diff and last time (inflight left out:
// it moves with every pull).
type progressRow struct {
	topic, broker      string
	qid                int
	brokerOff, consOff int64
	diff               int64
	lastTime           string
}

var progressLine = regexp.MustCompile(`^(\S+)\s+(\S+)\s+(\d+)\s+(-?\d+)\s+(-?\d+)\s+(-?\d+)\s+(-?\d+)\s+(N/A|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$`)

func parseProgress(t *testing.T, out string) (rows []progressRow, diffTotal int64) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if m := progressLine.FindStringSubmatch(l); m != nil {
			qid, _ := strconv.Atoi(m[3])
			r := progressRow{topic: m[1], broker: m[2], qid: qid, lastTime: m[8]}
			r.brokerOff, _ = strconv.ParseInt(m[4], 10, 64)
			r.consOff, _ = strconv.ParseInt(m[5], 10, 64)
			r.diff, _ = strconv.ParseInt(m[6], 10, 64)
			rows = append(rows, r)
		}
		if v, ok := strings.CutPrefix(l, "Consume Diff Total: "); ok {
			diffTotal, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return rows, diffTotal
}

func sums(rows []progressRow, topic string) (broker, cons int64) {
	for _, r := range rows {
		if r.topic == topic {
			broker += r.brokerOff
			cons += r.consOff
		}
	}
	return broker, cons
}

// section returns the lines of out from the line equal to start up to the
// next line starting with "#" and ending with "#" (a formatString section).
func section(out, start string) string {
	lines := strings.Split(out, "\n")
	var b strings.Builder
	in := false
	for _, l := range lines {
		if l == start {
			in = true
			continue
		}
		if in && strings.HasPrefix(l, "#") && strings.HasSuffix(l, "#") {
			break
		}
		if in {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestConsumerAdmin drives the consumer administration commands against a
// real cluster with a client-go producer and push consumer, and checks
// that our mqadmin and Apache's Java mqadmin show the same figures.
func TestConsumerAdmin(t *testing.T) {
	skipShort(t, "real processes, client-go and the Java tool")
	t.Parallel()              // mostly waits: the reset's 10 s in client-go, rebalances
	rlog.SetLogLevel("error") // client-go logs through a process-wide logger
	c := startCluster(t, framework.Options{Brokers: 1, BrokerConf: map[string]string{"traceTopicEnable": "true"}})
	b := c.Brokers()[0]
	ours := func(args ...string) string { return mqadmin(t, c, args...) }
	java := javaMQAdmin(t, c)
	ours("updateTopic", "-b", b.Addr(), "-t", caTopic, "-r", "4", "-w", "4")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})
	trace := &primitive.TraceConfig{Resolver: ns, Access: primitive.Local}
	p, err := rocketmq.NewProducer(producer.WithNsResolver(ns), producer.WithGroupName(caProducer),
		producer.WithInstanceName("ca-producer"), producer.WithRetry(1), producer.WithSendMsgTimeout(5*time.Second), producer.WithTrace(trace))
	started(t, p, err)
	defer p.Shutdown()
	start := time.Now().Add(-time.Second).UnixMilli()
	var sent []*primitive.SendResult
	send := func(n int) {
		t.Helper()
		for i := range n {
			r, err := p.SendSync(ctx, primitive.NewMessage(caTopic, fmt.Appendf(nil, "m%d", len(sent)+i)).WithKeys([]string{"k" + strconv.Itoa(i)}))
			if err != nil || r.Status != primitive.SendOK {
				t.Fatalf("send: %v %v", r, err)
			}
			sent = append(sent, r)
		}
	}
	send(20)

	cc := &caConsumer{resume: make(chan struct{}), seen: map[string]int{}}
	pc, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(ns), consumer.WithGroupName(caGroup),
		consumer.WithInstance("ca-consumer"), consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithTrace(trace))
	goSubscribed(t, pc, err, caTopic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, cc.handle)
	resumed := false
	defer func() {
		if !resumed {
			cc.paused.Store(false)
			close(cc.resume)
		}
		pc.Shutdown()
	}()

	// Phase 1: the consumer takes all 20 and commits them.
	testutil.Eventually(t, 60*time.Second, func() error {
		out, _ := c.MQAdmin(t, "consumerProgress", "-g", caGroup)
		rows, diff := parseProgress(t, out)
		if bo, co := sums(rows, caTopic); bo != 20 || co != 20 || diff != 0 {
			return fmt.Errorf("broker %d consumer %d diff %d:\n%s", bo, co, diff, out)
		}
		return nil
	})

	// Phase 2: the consumer stops consuming (it stays online) and 12 more
	// arrive: the lag is produced − consumed on both tools.
	cc.paused.Store(true)
	send(12)
	var progress string
	testutil.Eventually(t, 60*time.Second, func() error {
		progress, _ = c.MQAdmin(t, "consumerProgress", "-g", caGroup)
		rows, diff := parseProgress(t, progress)
		unique, _ := cc.counts()
		if bo, co := sums(rows, caTopic); bo != 32 || co != int64(unique) || diff != int64(32-unique) {
			return fmt.Errorf("consumed %d; broker %d consumer %d diff %d:\n%s", unique, bo, co, diff, progress)
		}
		return nil
	})
	oursRows, oursDiff := parseProgress(t, progress)
	if unique, _ := cc.counts(); unique != 20 || oursDiff != 12 {
		t.Fatalf("consumed %d, diff %d:\n%s", unique, oursDiff, progress)
	}
	for _, r := range oursRows {
		if r.topic == caTopic && (r.brokerOff != 8 || r.diff != r.brokerOff-r.consOff || r.lastTime == "N/A") {
			t.Fatalf("queue row %+v:\n%s", r, progress)
		}
	}
	// The Java tool reads the same stats.
	jProgress, err := harness.RunJavaMQAdmin(t, "consumerProgress", "-g", caGroup, "-n", c.NamesrvAddr())
	if err != nil {
		t.Fatal(err)
	}
	jRows, jDiff := parseProgress(t, jProgress)
	if !slices.Equal(jRows, oursRows) || jDiff != oursDiff {
		t.Fatalf("consumerProgress differs\nours:\n%s\njava:\n%s", progress, jProgress)
	}
	out := ours("consumerProgress")
	if !regexp.MustCompile(`(?m)^` + caGroup + `\s+1\s+V\S+\s+PUSH\s+CLUSTERING\s+\d+\s+12$`).MatchString(out) {
		t.Fatalf("consumerProgress (all groups):\n%s", out)
	}

	// Connections: ours and Java's print the same.
	oursConn := ours("consumerConnection", "-g", caGroup)
	if !strings.Contains(oursConn, "@ca-consumer") || !strings.Contains(oursConn, " GO ") ||
		!strings.Contains(oursConn, caTopic) || !strings.Contains(oursConn, "ConsumeType: CONSUME_PASSIVELY") {
		t.Fatalf("consumerConnection:\n%s", oursConn)
	}
	if j := java("consumerConnection", "-g", caGroup); j != oursConn {
		t.Fatalf("consumerConnection differs\nours:\n%s\njava:\n%s", oursConn, j)
	}
	oursProd := ours("producerConnection", "-g", caProducer, "-t", caTopic)
	if !strings.Contains(oursProd, "@ca-producer") || !strings.HasPrefix(oursProd, "0001  ") {
		t.Fatalf("producerConnection:\n%s", oursProd)
	}
	if j := java("producerConnection", "-g", caProducer, "-t", caTopic); j != oursProd {
		t.Fatalf("producerConnection differs\nours:\n%s\njava:\n%s", oursProd, j)
	}
	clientID := strings.Fields(strings.Split(oursConn, "\n")[1])[0]

	// -s adds the client holding each queue (from GET_CONSUMER_RUNNING_INFO).
	ip, _, _ := strings.Cut(clientID, "@")
	// client-go answers running info from its process-queue table, which
	// is empty for a moment while it rebalances: ask again before failing.
	testutil.Eventually(t, 15*time.Second, func() error {
		out = ours("consumerProgress", "-g", caGroup, "-t", caTopic, "-s", "true")
		if n := len(regexp.MustCompile(`(?m)^`+caTopic+`\s+broker-a\s+\d\s+8\s+\d+\s+`+regexp.QuoteMeta(ip)+`\s`).FindAllString(out, -1)); n != 4 {
			return fmt.Errorf("consumerProgress -s (client %s):\n%s", ip, out)
		}
		return nil
	})

	// Running info: asked of the client through the broker (307).
	oursStatus := ours("consumerStatus", "-g", caGroup, "-i", clientID)
	if !strings.Contains(oursStatus, "PROP_CONSUME_TYPE                       : CONSUME_PASSIVELY") ||
		!strings.Contains(oursStatus, "#Consumer Offset#") || !strings.Contains(oursStatus, "ProcessQueueInfo [commitOffset=") {
		t.Fatalf("consumerStatus -i:\n%s", oursStatus)
	}
	// The sections are the client's live state: between two asks it may
	// change (a loaded CI run saw client-go add its retry queue's offset
	// after ours asked and before Java did), so both ask again until they
	// agree.
	testutil.Eventually(t, 30*time.Second, func() error {
		jStatus := java("consumerStatus", "-g", caGroup, "-i", clientID)
		for _, s := range []string{"#Consumer Properties#", "#Consumer Subscription#", "#Consumer Offset#"} {
			if section(oursStatus, s) != section(jStatus, s) {
				err := fmt.Errorf("consumerStatus section %s differs\nours:\n%s\njava:\n%s", s, oursStatus, jStatus)
				oursStatus = ours("consumerStatus", "-g", caGroup, "-i", clientID)
				return err
			}
		}
		return nil
	})
	// Without -i every client's info goes to <now>/<clientId>, under the
	// working directory: the binary's own, whatever the cluster.
	dir := t.TempDir()
	cmd := exec.Command(filepath.Join(harness.BuildBinaries(t, harness.MQAdmin), harness.MQAdmin), "consumerStatus", "-g", caGroup, "-n", c.NamesrvAddr())
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("consumerStatus: %v\n%s", err, stderr.String())
	}
	m := regexp.MustCompile(`(?m)^1\s+(\S+)\s+V\S+\s+(\d+/\S+)$`).FindStringSubmatch(stdout.String())
	if m == nil || m[1] != clientID || !strings.Contains(stdout.String(), "Same subscription in the same group of consumer") {
		t.Fatalf("consumerStatus:\n%s", stdout.String())
	}
	if fi, err := os.Stat(filepath.Join(dir, m[2])); err != nil || fi.Size() == 0 {
		t.Fatalf("running info file %s not written", m[2])
	}

	// The broker-side lookups, through our admin client.
	ac, err := admin.New(admin.Config{NameServers: []string{c.NamesrvAddr()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	if groups, err := ac.QueryTopicConsumeByWho(ctx, b.Addr(), caTopic); err != nil || !slices.Contains(groups, caGroup) {
		t.Fatalf("QUERY_TOPIC_CONSUME_BY_WHO: %v %v", groups, err)
	}
	if tl, err := ac.QueryTopicsByConsumer(ctx, b.Addr(), caGroup); err != nil || !slices.Contains(tl.TopicList, caTopic) || tl.BrokerAddr != b.Addr() {
		t.Fatalf("QUERY_TOPICS_BY_CONSUMER: %+v %v", tl, err)
	}
	if st, err := ac.FetchConsumeStatsInBroker(ctx, b.Addr(), false); err != nil || st.TotalDiff < 12 {
		t.Fatalf("GET_BROKER_CONSUME_STATS: %+v %v", st, err)
	}
	status, err := ac.GetConsumeStatus(ctx, caTopic, caGroup, "")
	if err != nil || len(status[clientID]) != 4 {
		t.Fatalf("INVOKE_BROKER_TO_GET_CONSUMER_STATUS: %v %v", status, err)
	}
	if _, err := ac.GetConsumerRunningInfo(ctx, caGroup, "nobody@x", false); !admin.IsCode(err, code.SystemError) ||
		!strings.Contains(err.Error(), "The Consumer <"+caGroup+"> <nobody@x> not online") {
		t.Fatalf("running info of an unknown client: %v", err)
	}

	// The consumer goes on: everything is consumed, the lag is 0.
	cc.paused.Store(false)
	close(cc.resume)
	resumed = true
	testutil.Eventually(t, 60*time.Second, func() error {
		out, _ := c.MQAdmin(t, "consumerProgress", "-g", caGroup, "-t", caTopic)
		rows, diff := parseProgress(t, out)
		if bo, co := sums(rows, caTopic); bo != 32 || co != 32 || diff != 0 {
			return fmt.Errorf("broker %d consumer %d diff %d:\n%s", bo, co, diff, out)
		}
		return nil
	})

	// CONSUME_MESSAGE_DIRECTLY: the broker attaches the stored message.
	resp, err := ac.Invoke(ctx, b.Addr(), code.ConsumeMessageDirectly, map[string]string{
		"consumerGroup": caGroup, "clientId": clientID, "msgId": sent[0].OffsetMsgID, "topic": caTopic}, nil)
	if err != nil || !strings.Contains(string(resp.Body), "spentTimeMills") {
		t.Fatalf("CONSUME_MESSAGE_DIRECTLY: %v %v", resp, err)
	}

	// resetOffsetByTime rewinds the live consumer to before the first
	// message: it consumes all 32 again.
	_, totalBefore := cc.counts()
	out = ours("resetOffsetByTime", "-g", caGroup, "-t", caTopic, "-s", strconv.FormatInt(start, 10))
	if strings.Count(out, "broker-a") != 4 || !regexp.MustCompile(`(?m)^broker-a\s+3\s+0\s*$`).MatchString(out) {
		t.Fatalf("resetOffsetByTime:\n%s", out)
	}
	testutil.Eventually(t, 90*time.Second, func() error {
		if _, total := cc.counts(); total < totalBefore+32 {
			return fmt.Errorf("%d deliveries after the reset, want %d", total-totalBefore, 32)
		}
		return nil
	})
	cc.mu.Lock()
	for _, r := range sent {
		if cc.seen[r.MsgID] < 2 {
			cc.mu.Unlock()
			t.Fatalf("message %s delivered %d times after the reset", r.MsgID, cc.seen[r.MsgID])
		}
	}
	cc.mu.Unlock()
	// The Java tool's reset (to now: the max offsets) through our broker.
	if j := java("resetOffsetByTime", "-g", caGroup, "-t", caTopic, "-s", "now"); !regexp.MustCompile(`(?m)^broker-a\s+0\s+8\s*$`).MatchString(j) {
		t.Fatalf("java resetOffsetByTime:\n%s", j)
	}

	// Subscription groups: ours and Java's create the same thing and print
	// the same; either deletes.
	args := []string{"updateSubGroup", "-b", b.Addr(), "-g", "CA_NEW", "-r", "5", "-q", "2", "-m", "true",
		"-p", `{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":1000}}`}
	oursSub := ours(args...)
	if !strings.HasPrefix(oursSub, "create subscription group to "+b.Addr()+" success.\n") ||
		!strings.Contains(oursSub, "retryMaxTimes=5") || !strings.Contains(oursSub, "ExponentialRetryPolicy{initial=1000, max=7200000, multiplier=2}") {
		t.Fatalf("updateSubGroup:\n%s", oursSub)
	}
	if j := java(args...); j != oursSub {
		t.Fatalf("updateSubGroup differs\nours:\n%s\njava:\n%s", oursSub, j)
	}
	sg, err := ac.GetSubscriptionGroup(ctx, b.Addr(), "CA_NEW")
	if err != nil || sg.RetryMaxTimes != 5 || sg.RetryQueueNums != 2 || !sg.ConsumeFromMinEnable || sg.GroupRetryPolicy.Type != "EXPONENTIAL" {
		t.Fatalf("group after updateSubGroup: %+v %v", sg, err)
	}
	jSub := java("updateSubGroup", "-c", "DefaultCluster", "-g", "CA_JAVA", "-s", "false")
	if !strings.Contains(jSub, "create subscription group to "+b.Addr()+" success.") {
		t.Fatalf("java updateSubGroup -c:\n%s", jSub)
	}
	if sg, err := ac.GetSubscriptionGroup(ctx, b.Addr(), "CA_JAVA"); err != nil || sg.ConsumeEnable {
		t.Fatalf("group CA_JAVA: %+v %v", sg, err)
	}
	if o := ours("updateSubGroup", "-c", "DefaultCluster", "-g", "CA_JAVA", "-s", "false"); o != jSub {
		t.Fatalf("updateSubGroup -c differs\nours:\n%s\njava:\n%s", o, jSub)
	}
	if j := java("deleteSubGroup", "-b", b.Addr(), "-g", "CA_NEW"); !strings.Contains(j, "delete subscription group [CA_NEW] from broker ["+b.Addr()+"] success.") {
		t.Fatalf("java deleteSubGroup:\n%s", j)
	}
	out = ours("deleteSubGroup", "-c", "DefaultCluster", "-g", "CA_JAVA", "-r", "true")
	if out != "delete subscription group [CA_JAVA] from broker ["+b.Addr()+"] in cluster [DefaultCluster] success.\n" {
		t.Fatalf("deleteSubGroup:\n%s", out)
	}
	for _, g := range []string{"CA_NEW", "CA_JAVA"} {
		if _, err := ac.GetSubscriptionGroup(ctx, b.Addr(), g); !admin.IsCode(err, code.SubscriptionGroupNotExist) {
			t.Fatalf("group %s still there: %v", g, err)
		}
	}

	// topicStatus and brokerStatus show the real figures.
	ts := ours("topicStatus", "-t", caTopic)
	if n := len(regexp.MustCompile(`(?m)^broker-a\s+\d\s+0\s+8\s+\d{4}-`).FindAllString(ts, -1)); n != 4 {
		t.Fatalf("topicStatus:\n%s", ts)
	}
	if j := java("topicStatus", "-t", caTopic); j != ts {
		t.Fatalf("topicStatus differs\nours:\n%s\njava:\n%s", ts, j)
	}
	bs := ours("brokerStatus", "-b", b.Addr())
	put := regexp.MustCompile(`(?m)^msgPutTotalTodayNow\s+: (\d+)$`).FindStringSubmatch(bs)
	maxOff := regexp.MustCompile(`(?m)^commitLogMaxOffset\s+: (\d+)$`).FindStringSubmatch(bs)
	if put == nil || maxOff == nil || put[1] == "0" || maxOff[1] == "0" {
		t.Fatalf("brokerStatus:\n%s", bs)
	}
	if j := java("brokerStatus", "-b", b.Addr()); !regexp.MustCompile(`(?m)^msgPutTotalTodayNow\s+: [1-9]\d*$`).MatchString(j) {
		t.Fatalf("java brokerStatus:\n%s", j)
	}

	// queryMsgTraceById: the client-go trace records of a message. The
	// time range is explicit: our broker's key index does not answer
	// endTimestamp=Long.MAX_VALUE (the tool's default) yet.
	id := sent[0].MsgID
	window := []string{"-b", strconv.FormatInt(start-60_000, 10), "-e", strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)}
	var trace1 string
	testutil.Eventually(t, 60*time.Second, func() error {
		trace1, err = c.MQAdmin(t, append([]string{"queryMsgTraceById", "-i", id}, window...)...)
		if err != nil || !strings.Contains(trace1, "Pub ") || !strings.Contains(trace1, "Sub ") {
			return fmt.Errorf("trace of %s: %v\n%s", id, err, trace1)
		}
		return nil
	})
	if !strings.Contains(trace1, caProducer) || !strings.Contains(trace1, caGroup) {
		t.Fatalf("queryMsgTraceById:\n%s", trace1)
	}
	if j := java(append([]string{"queryMsgTraceById", "-i", id}, window...)...); j != trace1 {
		// The trace may have grown between the two runs (re-consumption
		// records): compare again with ours after the Java tool.
		if again := ours(append([]string{"queryMsgTraceById", "-i", id}, window...)...); j != again {
			t.Fatalf("queryMsgTraceById differs\nours:\n%s\njava:\n%s", again, j)
		}
	}
}
