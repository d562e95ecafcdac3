package sendback

import (
	"context"
	"net/netip"
	"strconv"
	"testing"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/store/storetest"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

// parkHook records scheduled messages and parks them as the schedule
// service does for delay levels.
type parkHook struct{ levels []string }

func (h *parkHook) Schedule(m *message.Message) error {
	lvl := m.Properties[message.PropertyDelayTimeLevel]
	h.levels = append(h.levels, lvl)
	n, _ := strconv.Atoi(lvl)
	m.Properties[message.PropertyRealTopic] = m.Topic
	m.Properties[message.PropertyRealQueueID] = strconv.Itoa(int(m.QueueID))
	m.Topic, m.QueueID = protocol.ScheduleTopic, int32(n-1)
	return nil
}

type fixture struct {
	t       *testing.T
	cfg     *config.Config
	st      *storetest.Store
	topics  *topic.Manager
	subs    *subscription.Manager
	hook    *parkHook
	p       *Processor
	created []string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, st: storetest.New(), hook: &parkHook{}}
	f.cfg = config.Default(config.Host{Hostname: "broker-a", IP: "127.0.0.1", Home: t.TempDir()})
	get := func() *config.Config { return f.cfg }
	var err error
	if f.topics, err = topic.New(topic.Options{Config: get}); err != nil {
		t.Fatal(err)
	}
	if f.subs, err = subscription.New(subscription.Options{Config: get}); err != nil {
		t.Fatal(err)
	}
	f.p, err = New(Deps{
		Config: get, Topics: f.topics, Groups: f.subs, Store: f.st, Schedule: f.hook,
		StoreHost:    func() netip.AddrPort { return netip.MustParseAddrPort("127.0.0.1:10911") },
		TopicCreated: func(name string) { f.created = append(f.created, name) },
		RandIntN:     func(n int) int { return n - 1 },
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// original stores a consumed message and returns its CommitLog offset.
func (f *fixture) original(topic string, reconsume int32, kv ...string) int64 {
	f.t.Helper()
	props := map[string]string{message.PropertyUniqClientMessageIDKeyIdx: "U1", message.PropertyTags: "T"}
	for i := 0; i+1 < len(kv); i += 2 {
		props[kv[i]] = kv[i+1]
	}
	m := &message.Message{Topic: topic, QueueID: 0, Body: []byte("body"), Flag: 7, Properties: props, SysFlag: 0,
		BornTimestamp: 12345, BornHost: netip.MustParseAddrPort("10.0.0.1:5555"), ReconsumeTimes: reconsume}
	res, err := f.st.PutMessage(context.Background(), m)
	if err != nil {
		f.t.Fatal(err)
	}
	return res.PhysicalOffset
}

func (f *fixture) call(version int32, ext map[string]string) *remoting.Command {
	f.t.Helper()
	req := remoting.NewRequest(code.ConsumerSendMsgBack, ext, nil)
	req.Version = version
	resp, err := f.p.Handle(context.Background(), nil, req)
	if err != nil {
		return remoting.ResponseFromError(req, err)
	}
	return resp
}

func ext(offset int64, group string, delay int, kv ...string) map[string]string {
	m := map[string]string{"offset": strconv.FormatInt(offset, 10), "group": group, "delayLevel": strconv.Itoa(delay)}
	return remotingtest.SetFields(m, kv...)
}

// last reads the newest message of a queue.
func (f *fixture) last(topic string, qid int32) *message.Message {
	f.t.Helper()
	max := f.st.MaxOffset(topic, qid)
	if max == 0 {
		f.t.Fatalf("%s-%d is empty", topic, qid)
	}
	res, err := f.st.GetMessage(context.Background(), topic, qid, max-1, 1, 0, nil)
	if err != nil || len(res.Records) != 1 {
		f.t.Fatalf("read %s-%d: %v", topic, qid, err)
	}
	defer res.Release()
	m, _, err := message.DecodeStored(res.Records[0], message.DecodeOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return m
}

func TestSendBackToRetryWithEscalatingDelay(t *testing.T) {
	f := newFixture(t)
	off := f.original("TopicA", 0)
	resp := f.call(400, ext(off, "g1", 0, "originTopic", "TopicA", "originMsgId", "U1", "maxReconsumeTimes", "16"))
	if resp.Code != code.Success {
		t.Fatalf("code %d %s", resp.Code, resp.Remark)
	}
	if tc, ok := f.topics.Get("%RETRY%g1"); !ok || tc.WriteQueueNums != 1 || tc.Perm != 6 {
		t.Fatalf("retry topic %+v %v", tc, ok)
	}
	if len(f.created) != 1 || f.created[0] != "%RETRY%g1" {
		t.Fatalf("created %v", f.created)
	}
	m := f.last(protocol.ScheduleTopic, 2) // level 3
	p := m.Properties
	if p[message.PropertyRealTopic] != "%RETRY%g1" || p[message.PropertyRealQueueID] != "0" || p[message.PropertyDelayTimeLevel] != "3" ||
		p[message.PropertyRetryTopic] != "TopicA" || p[message.PropertyUniqClientMessageIDKeyIdx] != "U1" || p[message.PropertyTags] != "T" {
		t.Fatalf("props %v", p)
	}
	if m.ReconsumeTimes != 1 || string(m.Body) != "body" || m.Flag != 7 || m.BornTimestamp != 12345 || m.BornHost.String() != "10.0.0.1:5555" {
		t.Fatalf("message %+v", m)
	}
	wantOrigin := message.OffsetMsgID(netip.MustParseAddrPort("127.0.0.1:10911"), off)
	if p[message.PropertyOriginMessageID] != wantOrigin {
		t.Fatalf("ORIGIN_MESSAGE_ID %q, want %q", p[message.PropertyOriginMessageID], wantOrigin)
	}

	// The retry copy fails again: its record lives in %RETRY%g1 with
	// RETRY_TOPIC; the client reports the restored topic. Level 3+1.
	off2 := f.original("%RETRY%g1", 1, message.PropertyRetryTopic, "TopicA", message.PropertyOriginMessageID, "ORIG")
	if resp := f.call(400, ext(off2, "g1", 0, "originTopic", "TopicA")); resp.Code != code.Success {
		t.Fatalf("second send back: %d %s", resp.Code, resp.Remark)
	}
	m = f.last(protocol.ScheduleTopic, 3)
	if m.Property(message.PropertyOriginMessageID) != "ORIG" || m.ReconsumeTimes != 2 || m.Property(message.PropertyRetryTopic) != "TopicA" {
		t.Fatalf("second copy %+v", m)
	}
	// An explicit delay level wins.
	if resp := f.call(400, ext(off, "g1", 5)); resp.Code != code.Success {
		t.Fatal(resp.Remark)
	}
	f.last(protocol.ScheduleTopic, 4)
}

func TestSendBackToDLQ(t *testing.T) {
	f := newFixture(t)
	// reconsumeTimes ≥ the request's maxReconsumeTimes.
	off := f.original("TopicA", 3)
	if resp := f.call(400, ext(off, "g2", 0, "maxReconsumeTimes", "3")); resp.Code != code.Success {
		t.Fatalf("%d %s", resp.Code, resp.Remark)
	}
	tc, ok := f.topics.Get("%DLQ%g2")
	if !ok || tc.WriteQueueNums != 1 || tc.ReadQueueNums != 1 || tc.Perm != 6 {
		t.Fatalf("DLQ topic %+v", tc)
	}
	m := f.last("%DLQ%g2", 0)
	if m.ReconsumeTimes != 4 || m.Property(message.PropertyDelayTimeLevel) != "0" || m.Property(message.PropertyRetryTopic) != "TopicA" {
		t.Fatalf("DLQ message %+v", m)
	}
	if len(f.hook.levels) != 0 {
		t.Fatal("DLQ message went through the schedule hook")
	}
	// Old clients (before V3_4_9): the group's retryMaxTimes (16) applies.
	off = f.original("TopicA", 3)
	if resp := f.call(100, ext(off, "g2", 0, "maxReconsumeTimes", "3")); resp.Code != code.Success {
		t.Fatal(resp.Remark)
	}
	if f.st.MaxOffset("%DLQ%g2", 0) != 1 || len(f.hook.levels) != 1 || f.hook.levels[0] != "6" {
		t.Fatalf("old client: dlq %d levels %v", f.st.MaxOffset("%DLQ%g2", 0), f.hook.levels)
	}
	// The group's retryMaxTimes without a header.
	g, _ := f.subs.FindOrCreate("g3")
	g.RetryMaxTimes = 2
	if err := f.subs.Update(g); err != nil {
		t.Fatal(err)
	}
	off = f.original("TopicA", 2)
	if resp := f.call(400, ext(off, "g3", 0)); resp.Code != code.Success {
		t.Fatal(resp.Remark)
	}
	f.last("%DLQ%g3", 0)
	// A negative delay level: straight to the DLQ.
	off = f.original("TopicA", 0)
	if resp := f.call(400, ext(off, "g4", -1)); resp.Code != code.Success {
		t.Fatal(resp.Remark)
	}
	if m := f.last("%DLQ%g4", 0); m.ReconsumeTimes != 1 {
		t.Fatalf("delay -1: %+v", m)
	}
}

func TestSendBackErrors(t *testing.T) {
	f := newFixture(t)
	off := f.original("TopicA", 0)

	f.cfg.AutoCreateSubscriptionGroup = false
	if resp := f.call(400, ext(off, "unknown_group", 0)); resp.Code != code.SubscriptionGroupNotExist {
		t.Fatalf("unknown group: %d %s", resp.Code, resp.Remark)
	}
	f.cfg.AutoCreateSubscriptionGroup = true

	for _, e := range []map[string]string{
		{"group": "g", "delayLevel": "0"},
		{"offset": "x", "group": "g", "delayLevel": "0"},
		{"offset": "1", "delayLevel": "0"},
		{"offset": "1", "group": "g"},
	} {
		if resp := f.call(400, e); resp.Code != code.InvalidParameter {
			t.Errorf("%v: code %d", e, resp.Code)
		}
	}
	if resp := f.call(400, ext(987654, "g", 0)); resp.Code != code.SystemError {
		t.Errorf("missing offset: %d", resp.Code)
	}
	if resp := f.call(400, ext(off, "g", 0, "originTopic", "OtherTopic")); resp.Code != code.SystemError {
		t.Errorf("topic fence: %d", resp.Code)
	}

	// retryQueueNums 0: success, nothing stored.
	g, _ := f.subs.FindOrCreate("noretry")
	g.RetryQueueNums = 0
	if err := f.subs.Update(g); err != nil {
		t.Fatal(err)
	}
	if resp := f.call(400, ext(off, "noretry", 0)); resp.Code != code.Success {
		t.Fatalf("retryQueueNums 0: %d", resp.Code)
	}
	if _, ok := f.topics.Get("%RETRY%noretry"); ok {
		t.Fatal("retry topic created for retryQueueNums 0")
	}

	f.cfg.BrokerPermission = protocol.PermRead
	if resp := f.call(400, ext(off, "g", 0)); resp.Code != code.NoPermission {
		t.Errorf("read-only broker: %d", resp.Code)
	}
	f.cfg.BrokerPermission = protocol.PermRead | protocol.PermWrite

	tc := protocol.NewTopicConfig("%RETRY%ro")
	tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = 1, 1, protocol.PermRead
	if _, err := f.topics.Update(tc); err != nil {
		t.Fatal(err)
	}
	if resp := f.call(400, ext(off, "ro", 0)); resp.Code != code.NoPermission {
		t.Errorf("read-only retry topic: %d", resp.Code)
	}

	f.cfg.BrokerRole = config.RoleSlave
	f.cfg.BrokerID = 1
	if resp := f.call(400, ext(off, "g", 0)); resp.Code != code.SystemError {
		t.Errorf("slave: %d", resp.Code)
	}
}

// fakeLite is the lite side: delivery counts by lmq offset, acks recorded.
type fakeLite struct {
	counts map[int64]int32
	acked  []string
}

func (l *fakeLite) DeliveryCount(group, lmq string, off int64) int32 {
	if c, ok := l.counts[off]; ok {
		return c
	}
	return -1
}

func (l *fakeLite) DeadLettered(group, lmq string, off int64) {
	l.acked = append(l.acked, group+" "+lmq+" "+strconv.FormatInt(off, 10))
}

// TestSendBackLite (docs/lite-topics.md §6.10): a lite message goes to the DLQ
// with delayLevel -1 or once its delivery count (from the order state, the
// stored reconsumeTimes stays 0) reaches the max; the copy keeps
// __LITE_TOPIC without the multi-dispatch properties, the message is acked
// on its lmq, and no retry topic is created. A lite retry is refused.
func TestSendBackLite(t *testing.T) {
	const lmq = "%LMQ%$Parent$user-1"
	tests := []struct {
		name    string
		lmqOff  int64
		count   int32
		delay   int
		extra   []string
		code    int32
		wantDLQ bool
	}{
		{"forwarded to the DLQ (delayLevel -1)", 0, 0, -1, nil, code.Success, true},
		{"delivered retryMaxTimes times", 1, 16, 0, nil, code.Success, true},
		{"request's maxReconsumeTimes", 2, 3, 0, []string{"maxReconsumeTimes", "3"}, code.Success, true},
		{"a retry is refused", 3, 2, 0, nil, code.IllegalOperation, false},
		{"unknown count, a retry is refused", 9, -1, 3, nil, code.IllegalOperation, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			lite := &fakeLite{counts: map[int64]int32{tt.lmqOff: tt.count}}
			f.p.d.Lite = lite
			off := f.original("Parent", 0, message.PropertyLiteTopic, "user-1", message.PropertyInnerMultiDispatch, lmq,
				message.PropertyInnerMultiQueueOffset, strconv.FormatInt(tt.lmqOff, 10))
			args := append([]string{"originTopic", "Parent"}, tt.extra...)
			resp := f.call(400, ext(off, "lg", tt.delay, args...))
			if resp.Code != tt.code {
				t.Fatalf("code %d %q, want %d", resp.Code, resp.Remark, tt.code)
			}
			if _, ok := f.topics.Get("%RETRY%lg"); ok {
				t.Fatal("a retry topic was created for a lite message")
			}
			if !tt.wantDLQ {
				if len(lite.acked) != 0 || f.st.MaxOffset("%DLQ%lg", 0) != 0 {
					t.Fatalf("refused send-back acked %v / stored", lite.acked)
				}
				return
			}
			m := f.last("%DLQ%lg", 0)
			if m.Property(message.PropertyLiteTopic) != "user-1" || m.Property(message.PropertyInnerMultiDispatch) != "" ||
				m.Property(message.PropertyInnerMultiQueueOffset) != "" || m.Property(message.PropertyRetryTopic) != "Parent" {
				t.Fatalf("DLQ copy props %v", m.Properties)
			}
			if want := max(tt.count, 0) + 1; m.ReconsumeTimes != want {
				t.Fatalf("DLQ copy reconsumeTimes %d, want %d", m.ReconsumeTimes, want)
			}
			if want := "lg " + lmq + " " + strconv.FormatInt(tt.lmqOff, 10); len(lite.acked) != 1 || lite.acked[0] != want {
				t.Fatalf("acked %v, want %q", lite.acked, want)
			}
		})
	}
	// Not lite: __LITE_TOPIC without a lite lmq of its topic is an ordinary
	// message (e.g. a DLQ copy handed back).
	f := newFixture(t)
	lite := &fakeLite{}
	f.p.d.Lite = lite
	off := f.original("Other", 0, message.PropertyLiteTopic, "user-1", message.PropertyInnerMultiDispatch, lmq, message.PropertyInnerMultiQueueOffset, "0")
	if resp := f.call(400, ext(off, "lg", 0)); resp.Code != code.Success || len(lite.acked) != 0 {
		t.Fatalf("non-lite message: code %d %q, acked %v", resp.Code, resp.Remark, lite.acked)
	}
	f.last(protocol.ScheduleTopic, 2)
}
