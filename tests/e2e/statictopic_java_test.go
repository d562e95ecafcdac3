package e2e

import (
	"context"
	"encoding/json"
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
	"github.com/rmqgo/rmq/pkg/client/clienttest"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/pkg/statictopic"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
	"github.com/rmqgo/rmq/tests/interop"
)

// Static topics with the Java client 5.5.0 (scripts/java/.../StaticCheck.java):
// the Java producer sends across a remap while a Java push consumer reads
// along, then a Java lite-pull consumer reads every logic queue from the
// beginning. Once the Java mqadmin makes and remaps the topic, once our
// mqadmin does. Both skip with a message when java or mvn is missing.

const (
	sjQueues = 8
	// sjPollMs is the clients' route refresh (pollNameServerInterval): a
	// client learns a remap only from its route.
	sjPollMs = "1000"
)

// sjEnv is one static topic on a three-broker cluster.
type sjEnv struct {
	t     *testing.T
	c     framework.Cluster
	ac    *admin.Client
	topic string
	run   string
	dir   string
}

func newSJEnv(t *testing.T, topic string) *sjEnv {
	t.Helper()
	dir := t.TempDir()
	c := startCluster(t, framework.Options{Brokers: 3})
	ac, err := admin.New(admin.Config{NameServers: []string{c.NamesrvAddr()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ac.Close() })
	return &sjEnv{t: t, c: c, ac: ac, topic: topic, run: strconv.FormatInt(time.Now().UnixNano()%1e9, 36), dir: dir}
}

// java runs the Java mqadmin (its plan files go to the test's directory)
// and fails on the stack trace it prints instead of exiting non-zero.
func (e *sjEnv) java(args ...string) string {
	e.t.Helper()
	out, err := harness.RunJavaMQAdminEnv(e.t, []string{"RMQ_JAVA_OPTS=-Djava.io.tmpdir=" + e.dir}, append(args, "-n", e.c.NamesrvAddr())...)
	if err != nil {
		e.t.Fatalf("java mqadmin %v: %v\n%s", args, err, out)
	}
	if strings.Contains(out, "Exception") || strings.Contains(out, "command failed") {
		e.t.Fatalf("java mqadmin %v:\n%s", args, out)
	}
	return out
}

// ours runs our mqadmin.
func (e *sjEnv) ours(args ...string) string {
	e.t.Helper()
	return mqadmin(e.t, e.c, args...)
}

var sjPlanFiles = regexp.MustCompile(`mapping data is written to file .*\.before\n.* mapping data is written to file .*\.after`)

// createOnAB creates the static topic with our mqadmin, its logic queues
// on broker-a and broker-b, and waits until the route says so.
func (e *sjEnv) createOnAB() {
	e.ours("updateStaticTopic", "-t", e.topic, "-qn", strconv.Itoa(sjQueues), "-b", "broker-a,broker-b")
	e.leaders(func(b string) bool { return b == "broker-a" || b == "broker-b" })
}

// leaders waits until our nameserver's route maps all logic queues to
// brokers accepted by ok, and returns them.
func (e *sjEnv) leaders(ok func(broker string) bool) map[int]string {
	e.t.Helper()
	var out map[int]string
	testutil.Eventually(e.t, 15*time.Second, func() error {
		route, err := e.ac.GetTopicRoute(context.Background(), e.topic)
		if err != nil {
			return err
		}
		ep := statictopic.Endpoints(e.topic, route.TopicQueueMappingByBroker)
		if len(ep) != sjQueues {
			return fmt.Errorf("route has %d logic queues, want %d", len(ep), sjQueues)
		}
		out = map[int]string{}
		for mq, b := range ep {
			if mq.BrokerName != statictopic.MockBrokerName("") || !ok(b) {
				return fmt.Errorf("logic queue %v led by %s", mq, b)
			}
			out[mq.QueueID] = b
		}
		return nil
	})
	return out
}

// field reads a number the Java check adds to its JSON line.
func sjField(t *testing.T, res interop.Result, k string) int {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(res.Line), &m); err != nil {
		t.Fatal(err)
	}
	v, ok := m[k].(float64)
	if !ok {
		t.Fatalf("no %s in %s", k, res.Line)
	}
	return int(v)
}

func (e *sjEnv) path(name string) string { return filepath.Join(e.dir, name) }

// produce runs the Java producer synchronously.
func (e *sjEnv) produce(start, count int, out string) interop.Result {
	e.t.Helper()
	res := interop.RunJavaCheck(e.t, "static-produce", "-n", e.c.NamesrvAddr(), "-t", e.topic, "-run", e.run,
		"-start", strconv.Itoa(start), "-count", strconv.Itoa(count), "-interval", "0", "-poll", sjPollMs, "-out", e.path(out))
	res.RequireOK(e.t)
	return res
}

// produceAcross starts a Java producer that sends from seq start until the
// stop file exists (after at least min messages); it returns once the
// producer has sent its first messages.
func (e *sjEnv) produceAcross(start, min int, out, stop string) *interop.Background {
	e.t.Helper()
	ready := e.path(out + ".ready")
	b := interop.StartJavaCheck(e.t, "static-produce", "-n", e.c.NamesrvAddr(), "-t", e.topic, "-run", e.run,
		"-start", strconv.Itoa(start), "-count", strconv.Itoa(min), "-stop-file", e.path(stop), "-ready-file", ready,
		"-interval", "10", "-poll", sjPollMs, "-timeout", "40", "-out", e.path(out))
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(ready); err == nil {
			return b
		}
		select {
		case <-b.Done():
			res := b.Wait(e.t)
			e.t.Fatalf("the producer ended before sending: %s", strings.Join(res.Errors, "; "))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			e.t.Fatal("the producer sent nothing within 30 s")
		}
	}
}

// consumeArgs are the Java consumer's arguments; the caller adds -count N
// or -count-file F.
func (e *sjEnv) consumeArgs(kind, group string, start int, out string, more ...string) []string {
	return append([]string{"static-consume", "-n", e.c.NamesrvAddr(), "-t", e.topic, "-run", e.run, "-consumer", kind,
		"-g", group, "-queues", strconv.Itoa(sjQueues), "-start", strconv.Itoa(start),
		"-poll", sjPollMs, "-timeout", "40", "-linger", "1000", "-out", e.path(out)}, more...)
}

func (e *sjEnv) consume(kind, group string, start, count int, out string) interop.Result {
	e.t.Helper()
	res := interop.RunJavaCheck(e.t, e.consumeArgs(kind, group, start, out, "-count", strconv.Itoa(count))...)
	res.RequireOK(e.t)
	return res
}

// sent is one message as the producer saw it.
type sjSent struct {
	queue  int
	broker string
	offset int64
}

// readSent reads producer out files: "seq queue broker offset attempts".
func (e *sjEnv) readSent(files ...string) map[int]sjSent {
	e.t.Helper()
	out := map[int]sjSent{}
	for _, f := range files {
		for _, l := range e.lines(f) {
			var seq, q, attempts int
			var s sjSent
			if _, err := fmt.Sscan(l, &seq, &q, &s.broker, &s.offset, &attempts); err != nil {
				e.t.Fatalf("%s: %q: %v", f, l, err)
			}
			s.queue = q
			out[seq] = s
		}
	}
	return out
}

// readConsumed reads a consumer out file: "seq queue offset".
func (e *sjEnv) readConsumed(file string) map[int][2]int64 {
	e.t.Helper()
	out := map[int][2]int64{}
	for _, l := range e.lines(file) {
		var seq int
		var q, off int64
		if _, err := fmt.Sscan(l, &seq, &q, &off); err != nil {
			e.t.Fatalf("%s: %q: %v", file, l, err)
		}
		out[seq] = [2]int64{q, off}
	}
	return out
}

func (e *sjEnv) lines(file string) []string {
	e.t.Helper()
	b, err := os.ReadFile(e.path(file))
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// checkAcrossRemap compares what the producers were told with what a
// consumer read from the beginning: same logic queue, same logic offset
// (unless the send landed while the new leader's offset was undecided),
// and every logic queue read across both segments (offsets below and
// from the 10000 block). It returns the largest logic offset per queue.
func (e *sjEnv) checkAcrossRemap(sent map[int]sjSent, got map[int][2]int64, newLeader func(string) bool) map[int]int64 {
	e.t.Helper()
	if len(got) != len(sent) {
		e.t.Errorf("consumed %d messages, sent %d", len(got), len(sent))
	}
	maxOff := map[int]int64{}
	oldSeg, newSeg, onNew := map[int]int{}, map[int]int{}, map[int]int{}
	for seq, s := range sent {
		g, ok := got[seq]
		if !ok {
			e.t.Errorf("seq %d (queue %d offset %d on %s) not consumed", seq, s.queue, s.offset, s.broker)
			continue
		}
		q, off := int(g[0]), g[1]
		if q != s.queue || (s.offset >= 0 && off != s.offset) {
			e.t.Errorf("seq %d sent to logic queue %d offset %d (%s), consumed at queue %d offset %d", seq, s.queue, s.offset, s.broker, q, off)
		}
		if off < statictopic.BlockSeqSize {
			oldSeg[q]++
		} else {
			newSeg[q]++
		}
		if newLeader(s.broker) {
			onNew[q]++
		}
		maxOff[q] = max(maxOff[q], off)
	}
	for q := range sjQueues {
		if oldSeg[q] == 0 || newSeg[q] == 0 || onNew[q] == 0 {
			e.t.Errorf("logic queue %d: %d messages in the first segment, %d from the 10000 block, %d sent to the new leader",
				q, oldSeg[q], newSeg[q], onNew[q])
		}
	}
	return maxOff
}

// acrossRemap runs a Java producer from seq start through remap (which
// must make broker-c lead every logic queue): remap starts once the
// producer has sent to the old leaders, and the producer stops once it has
// refreshed its route and sent to broker-c for a while. It returns the
// next seq.
func (e *sjEnv) acrossRemap(start int, out string, remap func()) int {
	e.t.Helper()
	prod := e.produceAcross(start, 100, out, "stop")
	remap()
	e.leaders(func(b string) bool { return b == "broker-c" })
	time.Sleep(1500 * time.Millisecond) // > pollNameServerInterval
	if err := os.WriteFile(e.path("stop"), nil, 0o644); err != nil {
		e.t.Fatal(err)
	}
	res := prod.Wait(e.t)
	res.RequireOK(e.t)
	next := sjField(e.t, res, "next_seq")
	e.t.Logf("producer across the remap: %d messages, %d NOT_LEADER_FOR_QUEUE answers, %d sends with an undecided offset",
		next-start, sjField(e.t, res, "not_leader"), sjField(e.t, res, "undecided"))
	return next
}

// TestStaticTopicJavaClientJavaAdmin: the Java mqadmin creates a static
// topic of 8 logic queues on broker-a and broker-b; our route and Java
// topicRoute show the 8 logic queues. A Java producer sends, and keeps
// sending while the Java mqadmin remaps everything to broker-c, and a Java
// push consumer (new group, from the first offset) reads along: every
// message exactly once, at the logic offset its send reported, offsets
// increasing per logic queue, each queue read across both segments. Java
// topicStatus then shows the 8 logic queues with those offsets.
func TestStaticTopicJavaClientJavaAdmin(t *testing.T) {
	skipShort(t, "three brokers, the Java mqadmin and Java clients")
	t.Parallel()
	e := newSJEnv(t, "StaticJavaClient")

	out := e.java("updateStaticTopic", "-t", e.topic, "-qn", strconv.Itoa(sjQueues), "-b", "broker-a,broker-b")
	if !sjPlanFiles.MatchString(out) {
		t.Fatalf("java updateStaticTopic:\n%s", out)
	}
	e.leaders(func(b string) bool { return b == "broker-a" || b == "broker-b" })
	route := e.java("topicRoute", "-t", e.topic)
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile(`"currIdMap":\{([^}]*)\}`).FindAllStringSubmatch(route, -1) {
		for _, kv := range regexp.MustCompile(`"?(\d+)"?\s*:\s*\d+`).FindAllStringSubmatch(m[1], -1) {
			ids[kv[1]] = true
		}
	}
	if len(ids) != sjQueues || !strings.Contains(route, `"totalQueues":8`) {
		t.Fatalf("java topicRoute shows logic queues %v:\n%s", ids, route)
	}

	// The consumer learns how many messages to expect once the producer
	// has stopped.
	live := interop.StartJavaCheck(t, e.consumeArgs("push", "sj_live_"+e.run, 0, "live.txt", "-count-file", e.path("count"))...)
	total := e.acrossRemap(0, "p.txt", func() {
		if out := e.java("remappingStaticTopic", "-t", e.topic, "-b", "broker-c"); !sjPlanFiles.MatchString(out) {
			t.Fatalf("java remappingStaticTopic:\n%s", out)
		}
	})
	if err := os.WriteFile(e.path("count"), []byte(strconv.Itoa(total)), 0o644); err != nil {
		t.Fatal(err)
	}
	res := live.Wait(t)
	res.RequireOK(t)
	maxOff := e.checkAcrossRemap(e.readSent("p.txt"), e.readConsumed("live.txt"), func(b string) bool { return b == "broker-c" })

	// The Java tool converts physical stats into logic ones: min 0, max
	// one past the last message of each logic queue.
	rows := sjStatusRows(t, e.java("topicStatus", "-t", e.topic))
	for q := range sjQueues {
		if r, ok := rows[q]; !ok || r[0] != 0 || r[1] != maxOff[q]+1 {
			t.Errorf("java topicStatus logic queue %d: %v, want [0 %d]", q, r, maxOff[q]+1)
		}
	}
}

// TestStaticTopicJavaClientOurAdmin: our mqadmin creates a static topic
// of 8 logic queues on broker-a and broker-b; a Java push consumer group
// reads the first messages and commits; our mqadmin remaps everything to
// broker-c while a Java producer keeps sending; the same group, restarted,
// resumes from the offsets it committed in the old segments (read by
// broker-c from broker-a and broker-b) and gets exactly the newer
// messages; a Java lite-pull consumer reads everything from the beginning.
func TestStaticTopicJavaClientOurAdmin(t *testing.T) {
	skipShort(t, "three brokers and Java clients")
	t.Parallel()
	e := newSJEnv(t, "StaticJavaClientOurs")
	e.createOnAB()

	const first = 80
	group := "sj_resume_" + e.run
	e.produce(0, first, "p0.txt")
	e.consume("push", group, 0, first, "c0.txt")

	total := e.acrossRemap(first, "p1.txt", func() {
		if out := e.ours("remappingStaticTopic", "-t", e.topic, "-b", "broker-c"); !sjPlanFiles.MatchString(out) {
			t.Fatalf("remappingStaticTopic:\n%s", out)
		}
	})

	// The restarted group gets exactly what it has not committed.
	e.consume("push", group, first, total-first, "c1.txt")

	e.consume("lite", "sj_lite_"+e.run, 0, total, "lite.txt")
	sent := e.readSent("p0.txt", "p1.txt")
	got := e.readConsumed("lite.txt")
	e.checkAcrossRemap(sent, got, func(b string) bool { return b == "broker-c" })
	pushed := e.readConsumed("c0.txt")
	for seq, g := range e.readConsumed("c1.txt") {
		pushed[seq] = g
	}
	for seq, g := range got {
		if pushed[seq] != g {
			t.Errorf("seq %d: push group at %v, lite consumer at %v", seq, pushed[seq], g)
		}
	}
}

// sjStatusRows parses the logic rows of Java topicStatus:
// queue → [min, max].
func sjStatusRows(t *testing.T, out string) map[int][2]int64 {
	t.Helper()
	rows := map[int][2]int64{}
	for _, m := range regexp.MustCompile(`(?m)^__syslo__global__\s+(\d+)\s+(-?\d+)\s+(-?\d+)`).FindAllStringSubmatch(out, -1) {
		q, _ := strconv.Atoi(m[1])
		lo, _ := strconv.ParseInt(m[2], 10, 64)
		hi, _ := strconv.ParseInt(m[3], 10, 64)
		rows[q] = [2]int64{lo, hi}
	}
	return rows
}

// goStaticConsumer is a pkg/client push consumer of a static topic that
// records first deliveries (logic queue and offset per body) and
// redeliveries, and fails chosen messages once.
type goStaticConsumer struct {
	mu      sync.Mutex
	first   map[string][2]int64 // body → logic queue, logic offset
	dups    []string
	failed  map[string]bool
	retried map[string]int // body → redeliveries
	// viaRetry counts redeliveries from %RETRY%<group>; the others were
	// consumed again in place because the re-send failed (as Java does).
	viaRetry int
	strayErr []string
}

func startGoStaticConsumer(t *testing.T, namesrv, topic, group string, fail func(queue int, offset int64, body string) bool) *goStaticConsumer {
	t.Helper()
	g := &goStaticConsumer{first: map[string][2]int64{}, failed: map[string]bool{}, retried: map[string]int{}}
	pc, err := client.NewPushConsumer(client.PushConsumerConfig{
		CommonConfig: client.CommonConfig{NameServers: []string{namesrv}, InstanceName: group, RouteRefreshInterval: time.Second, HeartbeatInterval: time.Second},
		Group:        group, ConsumeFrom: client.ConsumeFromFirstOffset, ConsumeBatchSize: 1,
		RebalanceInterval: time.Second, OffsetCommitInterval: time.Second, LongPollingSuspend: 2 * time.Second, PullErrorBackoff: 100 * time.Millisecond,
		Handler: func(_ context.Context, req *client.ConsumeRequest) client.ConsumeResult {
			m := req.Messages[0]
			body := string(m.Body)
			g.mu.Lock()
			defer g.mu.Unlock()
			if m.ReconsumeTimes > 0 {
				if m.Topic != topic {
					g.strayErr = append(g.strayErr, fmt.Sprintf("%s redelivered as topic %s from %v", body, m.Topic, req.Queue))
				}
				if req.Queue.Topic == protocol.RetryTopic(group) {
					g.viaRetry++
				}
				g.retried[body]++
				return client.ConsumeSuccess
			}
			if !statictopic.IsMockBroker(req.Queue.BrokerName) || int(m.QueueID) != req.Queue.QueueID {
				g.strayErr = append(g.strayErr, fmt.Sprintf("%s delivered from %v, message queue id %d", body, req.Queue, m.QueueID))
			}
			if _, dup := g.first[body]; dup {
				g.dups = append(g.dups, body)
			}
			g.first[body] = [2]int64{int64(req.Queue.QueueID), m.QueueOffset}
			if fail(req.Queue.QueueID, m.QueueOffset, body) && !g.failed[body] {
				g.failed[body] = true
				req.DelayLevel = 1 // 1 s, not the default 10 s
				return client.ConsumeRetryLater
			}
			return client.ConsumeSuccess
		},
	})
	pc = clienttest.Subscribed(t, pc, err, topic, "*")
	return g
}

// wait waits until every body of sent was delivered and every failed one
// redelivered.
func (g *goStaticConsumer) wait(t *testing.T, sent int, what string) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() error {
		g.mu.Lock()
		defer g.mu.Unlock()
		back := 0
		for b := range g.failed {
			if g.retried[b] > 0 {
				back++
			}
		}
		if len(g.first) < sent || back < len(g.failed) {
			return fmt.Errorf("%s: %d of %d messages delivered, %d of %d failed ones redelivered", what, len(g.first), sent, back, len(g.failed))
		}
		return nil
	})
}

// TestStaticTopicGoClientJavaAdmin: a static topic of 8 logic queues on
// broker-a and broker-b; while a pkg/client producer keeps sending and a
// pkg/client push consumer reads along, the Java mqadmin remaps
// everything to broker-c. The consumer gets every message once at
// the logic offset its send reported, each queue across both segments. A
// second group, started after the remap, reads from the first offset
// (the old segments through broker-c) and fails some old-segment messages
// once: each comes back from %RETRY%<group> with its own body — the SDK
// re-publishes it instead of sending broker-c a send-back carrying another
// broker's CommitLog offset — and nothing else comes back. Skips when java
// or mvn is missing.
func TestStaticTopicGoClientJavaAdmin(t *testing.T) {
	skipShort(t, "starts three brokers and runs the Java mqadmin (make test runs it)")
	t.Parallel()
	e := newSJEnv(t, "StaticGoClient")
	// Created with our mqadmin (the Java one is tested creating topics
	// above; each Java run costs seconds), remapped with the Java one.
	e.createOnAB()

	p, err := client.NewProducer(client.ProducerConfig{CommonConfig: client.CommonConfig{NameServers: []string{e.c.NamesrvAddr()}, RouteRefreshInterval: time.Second},
		Group: "sj_go_pg"})
	started(t, p, err)
	defer p.Shutdown(context.Background())
	live := startGoStaticConsumer(t, e.c.NamesrvAddr(), e.topic, "sj_go_live_"+e.run, func(int, int64, string) bool { return false })

	type sendRec struct {
		queue  int
		broker string
		offset int64
	}
	var (
		mu    sync.Mutex
		sent  = map[string]sendRec{}
		onC   int
		fails []error
	)
	stopSending := inBackground(func(i int) {
		// Bodies of one size: every message's CommitLog record has the
		// same length, so a CommitLog offset of broker-a or -b is also
		// a record's offset on broker-c, where a wrong send-back would
		// find some other message.
		body := fmt.Sprintf("go-%06d", i)
		res, err := p.SendSync(context.Background(), &message.Message{Topic: e.topic, Body: []byte(body)})
		mu.Lock()
		if err != nil {
			fails = append(fails, err)
		} else {
			sent[body] = sendRec{res.Queue.QueueID, res.Queue.BrokerName, res.QueueOffset}
			if res.Queue.BrokerName == "broker-c" {
				onC++
			}
		}
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	})
	progress := func(f func() bool, what string) {
		t.Helper()
		testutil.Eventually(t, 30*time.Second, func() error {
			mu.Lock()
			defer mu.Unlock()
			if !f() {
				return fmt.Errorf("%s: %d sent, %d to broker-c", what, len(sent), onC)
			}
			return nil
		})
	}
	progress(func() bool { return len(sent) >= 100 }, "before the remap")
	if out := e.java("remappingStaticTopic", "-t", e.topic, "-b", "broker-c"); !sjPlanFiles.MatchString(out) {
		t.Fatalf("java remappingStaticTopic:\n%s", out)
	}
	e.leaders(func(b string) bool { return b == "broker-c" })
	progress(func() bool { return onC >= 100 }, "after the remap")
	stopSending()
	if len(fails) > 0 {
		t.Errorf("%d sends failed, first: %v", len(fails), fails[0])
	}

	check := func(g *goStaticConsumer, what string) {
		t.Helper()
		g.wait(t, len(sent), what)
		g.mu.Lock()
		defer g.mu.Unlock()
		if len(g.dups) > 0 || len(g.strayErr) > 0 {
			t.Errorf("%s: delivered twice %v; %v", what, g.dups, g.strayErr)
		}
		segs := map[int]map[bool]int{}
		for body, s := range sent {
			got, ok := g.first[body]
			if !ok {
				t.Errorf("%s: %s (logic queue %d offset %d on %s) not delivered", what, body, s.queue, s.offset, s.broker)
				continue
			}
			if int(got[0]) != s.queue || (s.offset >= 0 && got[1] != s.offset) {
				t.Errorf("%s: %s sent to logic queue %d offset %d, delivered at %v", what, body, s.queue, s.offset, got)
			}
			if segs[s.queue] == nil {
				segs[s.queue] = map[bool]int{}
			}
			segs[s.queue][got[1] >= statictopic.BlockSeqSize]++
		}
		for q := range sjQueues {
			if segs[q][false] == 0 || segs[q][true] == 0 {
				t.Errorf("%s: logic queue %d: %d messages in the first segment, %d in the second", what, q, segs[q][false], segs[q][true])
			}
		}
		for body, n := range g.retried {
			if !g.failed[body] || n != 1 {
				t.Errorf("%s: %s redelivered %d times, failed: %v", what, body, n, g.failed[body])
			}
		}
	}
	check(live, "consumer along the remap")

	// Every 4th old-segment message fails once. The group's retry topic
	// exists beforehand: the first heartbeat would create it, but the
	// failures come at once and the SDK's producer, without its route yet,
	// would use TBW102's four queues and be refused (the message is then
	// consumed again in place, as Java does).
	lateGroup := "sj_go_late_" + e.run
	for _, b := range e.c.Brokers() {
		tc := protocol.TopicConfig{TopicName: protocol.RetryTopic(lateGroup), ReadQueueNums: 1, WriteQueueNums: 1, Perm: protocol.PermRead | protocol.PermWrite}
		if err := e.ac.CreateTopic(context.Background(), b.Addr(), tc, ""); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		route, err := e.ac.GetTopicRoute(context.Background(), protocol.RetryTopic(lateGroup))
		if err != nil || len(route.QueueDatas) != len(e.c.Brokers()) {
			return fmt.Errorf("route of the retry topic: %v %v", route, err)
		}
		return nil
	})
	late := startGoStaticConsumer(t, e.c.NamesrvAddr(), e.topic, lateGroup, func(_ int, off int64, _ string) bool {
		return off < statictopic.BlockSeqSize && off%4 == 0
	})
	check(late, "consumer after the remap")
	late.mu.Lock()
	defer late.mu.Unlock()
	if len(late.failed) == 0 || late.viaRetry == 0 {
		t.Errorf("the late group failed %d messages, %d came back from the retry topic", len(late.failed), late.viaRetry)
	}
	t.Logf("%d messages across the Java remap (%d to broker-c); the late group failed %d old-segment messages once: %d back from the retry topic, %d consumed again in place",
		len(sent), onC, len(late.failed), late.viaRetry, len(late.failed)-late.viaRetry)
}
