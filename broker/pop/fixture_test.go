package pop

import (
	"context"
	"fmt"
	"github.com/rmqgo/rmq/broker/pop/popcodec"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/storetest"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// rig is a store in a temp dir with topics, groups, consumers and a pop
// processor on top; crash() copies it as a kill -9 would leave it.
type rig struct {
	t      testing.TB
	dir    string
	cfg    *config.Config
	clk    *testutil.FakeClock
	st     *store.Store
	topics *topic.Manager
	groups *subscription.Manager
	cons   *client.ConsumerManager
	p      *Processor
	resets fakeResets
	closed bool
	// replicas is Deps.Replicas (set before open).
	replicas func(ctx context.Context, end int64) error
}

// fakeResets is a table of pending server-side resets, group/topic/queueId.
type fakeResets map[string]int64

func (f fakeResets) Take(group, topic string, qid int32) (int64, bool) {
	k := group + "/" + topic + "/" + strconv.Itoa(int(qid))
	off, ok := f[k]
	delete(f, k)
	return off, ok
}

const (
	testTopic = "PopTopic"
	testGroup = "pop_cg"
)

func newRig(t testing.TB) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir(), clk: testutil.NewFakeClock(time.UnixMilli(1_700_000_000_000)), resets: fakeResets{}}
	r.cfg = config.Default(config.Host{Hostname: "broker-a", IP: "127.0.0.1", Home: t.TempDir()})
	r.cfg.BrokerName = "broker-a"
	r.cfg.PopFromRetryProbability = 20
	r.open()
	t.Cleanup(r.close)
	return r
}

func (r *rig) conf() *config.Config { return r.cfg }

func (r *rig) open() {
	r.t.Helper()
	r.st = storetest.OpenDisk(r.t, r.dir, nil)
	var err error
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if r.topics, err = topic.New(topic.Options{Config: r.conf, Logger: log}); err != nil {
		r.t.Fatal(err)
	}
	if r.groups, err = subscription.New(subscription.Options{Config: r.conf, Logger: log}); err != nil {
		r.t.Fatal(err)
	}
	r.cons = client.NewConsumerManager(client.ManagerOptions{})
	tc := protocol.NewTopicConfig(testTopic)
	tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = 2, 2, 6
	if _, err := r.topics.Update(tc); err != nil {
		r.t.Fatal(err)
	}
	r.p, err = New(Deps{
		Config: r.conf, Store: r.st, Topics: r.topics, Groups: r.groups, Consumers: r.cons,
		StoreHost: func() netip.AddrPort { return netip.MustParseAddrPort("127.0.0.1:10911") },
		Now:       r.clk.Now, Logger: log, HotBytes: 1 << 30,
		ReviveInterval: time.Hour, // tests call Revive themselves
		Resets:         r.resets,
		Replicas:       r.replicas,
	})
	if err != nil {
		r.t.Fatal(err)
	}
	r.closed = false
}

// close shuts down cleanly.
func (r *rig) close() {
	if r.closed {
		return
	}
	r.closed = true
	r.p.Close()
	if err := r.st.Close(); err != nil {
		r.t.Errorf("close store: %v", err)
	}
}

// crash leaves the running rig as is and continues on a copy of its
// directory as a kill -9 would leave it: the CommitLog files as written,
// Pebble without its memtables (a checkpoint of a WAL-less DB holds only
// flushed tables).
func (r *rig) crash() {
	r.t.Helper()
	dst := r.t.TempDir()
	if err := r.st.DB().Checkpoint(filepath.Join(dst, "kv")); err != nil {
		r.t.Fatal(err)
	}
	if err := copyTree(r.dir, dst, "kv"); err != nil {
		r.t.Fatal(err)
	}
	old := r.st
	r.p.Close() // stops goroutines; its shadow drop does not reach the copy
	_ = old.Close()
	r.dir = dst
	r.open()
}

// restart is a clean stop and start on the same directory.
func (r *rig) restart() {
	r.t.Helper()
	r.close()
	r.open()
}

func copyTree(src, dst, skip string) error {
	return filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if rel == skip || (len(rel) > len(skip) && rel[:len(skip)+1] == skip+string(filepath.Separator)) {
			if info.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// send stores n messages in a queue and waits until they are dispatched.
func (r *rig) send(topic string, qid int32, n int, tag string) {
	r.t.Helper()
	host := netip.MustParseAddrPort("127.0.0.1:5000")
	before := r.st.MaxOffset(topic, qid)
	for i := 0; i < n; i++ {
		m := &message.Message{
			Topic: topic, QueueID: qid, Body: []byte(fmt.Sprintf("%s-%d-%d", topic, qid, before+int64(i))),
			Properties:    map[string]string{message.PropertyTags: tag, message.PropertyUniqClientMessageIDKeyIdx: fmt.Sprintf("U%d-%d", qid, before+int64(i))},
			BornTimestamp: r.clk.Now().UnixMilli(), BornHost: host, StoreHost: host,
		}
		if _, err := r.st.PutMessage(context.Background(), m); err != nil {
			r.t.Fatal(err)
		}
	}
	r.waitDispatched(topic, qid, before+int64(n))
}

func (r *rig) waitDispatched(topic string, qid int32, max int64) {
	r.t.Helper()
	testutil.Eventually(r.t, 5*time.Second, func() error {
		if got := r.st.MaxOffset(topic, qid); got < max {
			return fmt.Errorf("%s-%d: max offset %d, want %d", topic, qid, got, max)
		}
		return nil
	})
}

// popped is one message of a pop response with its receipt.
type popped struct {
	msg     *message.Message
	receipt popcodec.ExtraInfo
	count   int // orderly consume count
}

type popResult struct {
	resp *remoting.Command
	msgs []popped
}

func popReq(group, topic string, qid int32, max int, invisible int64, extra map[string]string) *remoting.Command {
	ext := map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(qid)), "maxMsgNums": strconv.Itoa(max),
		"invisibleTime": strconv.FormatInt(invisible, 10), "pollTime": "0", "bornTime": "0", "initMode": "0",
	}
	for k, v := range extra {
		ext[k] = v
	}
	return remoting.NewRequest(code.PopMessage, ext, nil)
}

// call runs a handler directly (no channel: nothing is suspended).
func call(t testing.TB, h remoting.Handler, req *remoting.Command) (*remoting.Command, error) {
	t.Helper()
	resp, err := h(context.Background(), nil, req)
	if err == nil && resp == nil {
		t.Fatalf("request %d was suspended without a channel", req.Code)
	}
	return resp, err
}

// codeOf is the response code a handler result is answered with.
func codeOf(resp *remoting.Command, err error) int32 {
	if err != nil {
		return remoting.ResponseFromError(remoting.NewRequest(0, nil, nil), err).Code
	}
	return resp.Code
}

// pop pops and decodes the messages with receipts built as the Java client
// builds them (MQClientAPIImpl.processPopResponse).
func (r *rig) pop(qid int32, max int, invisible int64, extra map[string]string) popResult {
	r.t.Helper()
	return r.popFrom(testGroup, testTopic, qid, max, invisible, extra)
}

func (r *rig) popFrom(group, topic string, qid int32, max int, invisible int64, extra map[string]string) popResult {
	r.t.Helper()
	resp, err := call(r.t, r.p.Handlers()[code.PopMessage].H, popReq(group, topic, qid, max, invisible, extra))
	if err != nil {
		r.t.Fatalf("pop: %v", err)
	}
	res := popResult{resp: resp}
	if resp.Code != code.Success {
		return res
	}
	msgs, err := message.DecodeAll(resp.Body, message.DecodeOptions{})
	if err != nil {
		r.t.Fatalf("decode pop body: %v", err)
	}
	starts, err := popcodec.ParseStartOffsetInfo(resp.Ext("startOffsetInfo"))
	if err != nil {
		r.t.Fatal(err)
	}
	counts, err := popcodec.ParseOrderCountInfo(resp.Ext("orderCountInfo"))
	if err != nil {
		r.t.Fatal(err)
	}
	popTime, _ := strconv.ParseInt(resp.Ext("popTime"), 10, 64)
	inv, _ := strconv.ParseInt(resp.Ext("invisibleTime"), 10, 64)
	rq, _ := strconv.Atoi(resp.Ext("reviveQid"))
	for _, m := range msgs {
		var ei popcodec.ExtraInfo
		if ck := m.Properties[message.PropertyPopCK]; ck != "" {
			if ei, err = popcodec.ParseExtraInfo(ck); err != nil {
				r.t.Fatalf("POP_CK %q: %v", ck, err)
			}
		} else {
			flag := popcodec.RetryFlag(m.Topic)
			start, ok := starts[flag+"@"+strconv.Itoa(int(m.QueueID))]
			if !ok {
				r.t.Fatalf("no startOffsetInfo for %s-%d in %q", m.Topic, m.QueueID, resp.Ext("startOffsetInfo"))
			}
			ei = popcodec.ExtraInfo{CkQueueOffset: start, PopTime: popTime, InvisibleTime: inv, ReviveQid: int32(rq), Retry: flag,
				BrokerName: "broker-a", QueueID: m.QueueID, QueueOffset: m.QueueOffset, HasQueueOffset: true}
		}
		c := counts[fmt.Sprintf("%s@qo%d%%%d", ei.Retry, m.QueueID, m.QueueOffset)]
		res.msgs = append(res.msgs, popped{msg: m, receipt: ei, count: c})
	}
	return res
}

func ackReq(group string, pm popped) *remoting.Command {
	topic, _ := popcodec.RealTopic(testTopic, group, pm.receipt.Retry)
	return remoting.NewRequest(code.AckMessage, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(pm.receipt.QueueID)),
		"extraInfo": pm.receipt.String(), "offset": strconv.FormatInt(pm.receipt.QueueOffset, 10),
	}, nil)
}

func (r *rig) ack(pm popped) (*remoting.Command, error) {
	r.t.Helper()
	return call(r.t, r.p.Handlers()[code.AckMessage].H, ackReq(testGroup, pm))
}

func (r *rig) mustAck(pm popped) {
	r.t.Helper()
	resp, err := r.ack(pm)
	if c := codeOf(resp, err); c != code.Success {
		r.t.Fatalf("ack %s-%d@%d: code %d %v", pm.msg.Topic, pm.receipt.QueueID, pm.receipt.QueueOffset, c, err)
	}
}

func changeReq(group string, pm popped, invisible int64) *remoting.Command {
	topic, _ := popcodec.RealTopic(testTopic, group, pm.receipt.Retry)
	return remoting.NewRequest(code.ChangeMessageInvisible, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(pm.receipt.QueueID)),
		"extraInfo": pm.receipt.String(), "offset": strconv.FormatInt(pm.receipt.QueueOffset, 10),
		"invisibleTime": strconv.FormatInt(invisible, 10),
	}, nil)
}

// bodies lists the bodies of popped messages.
func bodies(ms []popped) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m.msg.Body)
	}
	return out
}
