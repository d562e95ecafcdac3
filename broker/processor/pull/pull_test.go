package pull

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/longpoll"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/storetest"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

type fixture struct {
	cfg       atomic.Pointer[config.Config]
	store     *storetest.Store
	topics    *topic.Manager
	subs      *subscription.Manager
	consumers *client.ConsumerManager
	p         *Processor
}

type fixtureOpt struct {
	mutate  func(*config.Config)
	filters FilterFactory
	resets  *ResetTable
	hold    longpoll.Config
	deps    func(*Deps) // last changes to the processor's Deps
}

func newFixture(t *testing.T, o fixtureOpt) *fixture {
	t.Helper()
	c := config.Default(config.Host{Hostname: "broker-a", IP: "127.0.0.1", Home: t.TempDir()})
	if o.mutate != nil {
		o.mutate(c)
	}
	c.Finalize()
	f := &fixture{store: storetest.New(), consumers: client.NewConsumerManager(client.ManagerOptions{})}
	f.cfg.Store(c)
	var err error
	if f.topics, err = topic.New(topic.Options{Config: f.cfg.Load}); err != nil {
		t.Fatal(err)
	}
	if f.subs, err = subscription.New(subscription.Options{Config: f.cfg.Load}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []protocol.TopicConfig{mkTopic("T", 4, 6), mkTopic("WO", 4, 2)} {
		if _, _, err := f.topics.CreateIfAbsent(tc); err != nil {
			t.Fatal(err)
		}
	}
	d := Deps{Config: f.cfg.Load, Store: f.store, Topics: f.topics, Subscriptions: f.subs, Consumers: f.consumers,
		Filters: o.filters, Hold: o.hold, Resets: o.resets}
	if o.deps != nil {
		o.deps(&d)
	}
	f.p, err = New(d)
	if err != nil {
		t.Fatal(err)
	}
	f.p.Start()
	t.Cleanup(f.p.Close)
	return f
}

func mkTopic(name string, queues, perm int) protocol.TopicConfig {
	tc := protocol.NewTopicConfig(name)
	tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = queues, queues, perm
	return tc
}

// pullReq builds a pull with the subscription in the request (sysFlag bit 2)
// unless sub is "-", its header changed by kv (remotingtest.SetFields).
func pullReq(topic string, qid int, offset int64, sub string, kv ...string) *remoting.Command {
	ext := map[string]string{
		"consumerGroup": "g", "topic": topic, "queueId": strconv.Itoa(qid), "queueOffset": strconv.FormatInt(offset, 10),
		"maxMsgNums": "32", "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subVersion": "0",
	}
	if sub != "-" {
		ext["sysFlag"] = strconv.Itoa(FlagSubscription)
		ext["subscription"], ext["expressionType"] = sub, "TAG"
	}
	r := remoting.NewRequest(code.PullMessage, remotingtest.SetFields(ext, kv...), nil)
	r.Opaque = 9
	return r
}

func (f *fixture) pull(t *testing.T, req *remoting.Command) *remoting.Command {
	t.Helper()
	resp, err := f.p.handle(context.Background(), nil, req)
	if err != nil {
		return remoting.ResponseFromError(req, err)
	}
	if resp == nil {
		t.Fatal("pull without channel was suspended")
	}
	return resp
}

func (f *fixture) put(topic string, qid int32, tags ...string) {
	for _, tg := range tags {
		f.store.Put(topic, qid, tg, []byte("body-"+tg))
	}
}

func extInt(t *testing.T, r *remoting.Command, key string) int64 {
	t.Helper()
	v, ok := r.ExtFields[key]
	if !ok {
		t.Fatalf("response lacks %s: %v", key, r.ExtFields)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q", key, v)
	}
	return n
}

func queueOffsets(t *testing.T, body []byte) []int64 {
	t.Helper()
	msgs, err := message.DecodeAll(body, message.DecodeOptions{VerifyCRC: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, m := range msgs {
		out = append(out, m.QueueOffset)
	}
	return out
}

// Every row of docs/protocol.md §6.2's result table, plus the Java status
// mapping for statuses only a real CommitLog produces.
func TestResultMapping(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(f *fixture)
		offset   int64
		sub      string
		wantCode int32
		wantNext int64
		wantMin  int64
		wantMax  int64
		wantMsgs []int64
	}{
		{"found", func(f *fixture) { f.put("T", 0, "a", "b", "c") }, 0, "*", code.Success, 3, 0, 3, []int64{0, 1, 2}},
		{"found from the middle", func(f *fixture) { f.put("T", 0, "a", "b", "c") }, 1, "*", code.Success, 3, 0, 3, []int64{1, 2}},
		{"found after filtered entries", func(f *fixture) { f.put("T", 0, "x", "y", "x", "z") }, 0, "y || z", code.Success, 4, 0, 4, []int64{1, 3}},
		{"all filtered", func(f *fixture) { f.put("T", 0, "x", "x") }, 0, "y", code.PullRetryImmediately, 2, 0, 2, nil},
		{"untagged message, tag subscription", func(f *fixture) { f.put("T", 0, "") }, 0, "y", code.PullRetryImmediately, 1, 0, 1, nil},
		{"being removed", func(f *fixture) { f.put("T", 0, "a"); f.store.MarkRemoving("T", 0, 0) }, 0, "*", code.PullRetryImmediately, 1, 0, 1, nil},
		{"empty queue, offset 5", func(f *fixture) { f.store.CreateQueue("T", 0) }, 5, "*", code.PullOffsetMoved, 0, 0, 0, nil},
		{"empty queue, offset 0", func(f *fixture) { f.store.CreateQueue("T", 0) }, 0, "*", code.PullNotFound, 0, 0, 0, nil},
		{"missing queue, offset 5", func(*fixture) {}, 5, "*", code.PullOffsetMoved, 0, 0, 0, nil},
		{"missing queue, offset 0", func(*fixture) {}, 0, "*", code.PullNotFound, 0, 0, 0, nil},
		{"offset below min", func(f *fixture) { f.put("T", 0, "a", "b", "c", "d"); f.store.RemoveBefore("T", 0, 2) }, 1, "*", code.PullOffsetMoved, 2, 2, 4, nil},
		{"offset at max", func(f *fixture) { f.put("T", 0, "a", "b") }, 2, "*", code.PullNotFound, 2, 0, 2, nil},
		{"offset beyond max", func(f *fixture) { f.put("T", 0, "a", "b") }, 9, "*", code.PullOffsetMoved, 2, 0, 2, nil},
		{"offset found null", func(f *fixture) { f.hook(store.OffsetFoundNull, 7, 0, 10) }, 3, "*", code.PullNotFound, 7, 0, 10, nil},
		{"offset reset", func(f *fixture) { f.hook(store.OffsetReset, 4, 1, 10) }, 8, "*", code.PullOffsetMoved, 4, 1, 10, nil},
		{"overflow badly from store", func(f *fixture) { f.hook(store.OffsetOverflowBadly, 99, 0, 10) }, 12, "*", code.PullOffsetMoved, 10, 0, 10, nil},
		{"too small from store", func(f *fixture) { f.hook(store.OffsetTooSmall, 99, 5, 10) }, 1, "*", code.PullOffsetMoved, 5, 5, 10, nil},
		{"overflow one from store", func(f *fixture) { f.hook(store.OffsetOverflowOne, 0, 0, 10) }, 10, "*", code.PullNotFound, 10, 0, 10, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fixtureOpt{})
			tt.setup(f)
			resp := f.pull(t, pullReq("T", 0, tt.offset, tt.sub))
			if resp.Code != tt.wantCode {
				t.Fatalf("code %d (%s), want %d", resp.Code, resp.Remark, tt.wantCode)
			}
			if resp.Opaque != 9 || resp.Flag&remoting.FlagResponse == 0 {
				t.Fatalf("opaque %d flag %d", resp.Opaque, resp.Flag)
			}
			if got := extInt(t, resp, "nextBeginOffset"); got != tt.wantNext {
				t.Errorf("nextBeginOffset %d, want %d", got, tt.wantNext)
			}
			if got := extInt(t, resp, "minOffset"); got != tt.wantMin {
				t.Errorf("minOffset %d, want %d", got, tt.wantMin)
			}
			if got := extInt(t, resp, "maxOffset"); got != tt.wantMax {
				t.Errorf("maxOffset %d, want %d", got, tt.wantMax)
			}
			if got := extInt(t, resp, "suggestWhichBrokerId"); got != 0 {
				t.Errorf("suggestWhichBrokerId %d", got)
			}
			if tt.wantMsgs == nil {
				if len(resp.Body) != 0 {
					t.Fatalf("body of %d bytes on code %d", len(resp.Body), resp.Code)
				}
				return
			}
			got := queueOffsets(t, resp.Body)
			if len(got) != len(tt.wantMsgs) {
				t.Fatalf("messages at %v, want %v", got, tt.wantMsgs)
			}
			for i := range got {
				if got[i] != tt.wantMsgs[i] {
					t.Fatalf("messages at %v, want %v", got, tt.wantMsgs)
				}
			}
		})
	}
}

func (f *fixture) hook(st store.GetStatus, next, minOff, maxOff int64) {
	f.store.SetGetHook(func(string, int32, int64) (*store.GetResult, error, bool) {
		return &store.GetResult{Status: st, NextBeginOffset: next, MinOffset: minOff, MaxOffset: maxOff}, nil, true
	})
}

func TestStoreError(t *testing.T) {
	f := newFixture(t, fixtureOpt{})
	f.store.SetGetHook(func(string, int32, int64) (*store.GetResult, error, bool) {
		return nil, errors.New("disk on fire"), true
	})
	if resp := f.pull(t, pullReq("T", 0, 0, "*")); resp.Code != code.SystemError || !strings.Contains(resp.Remark, "disk on fire") {
		t.Fatalf("%d %s", resp.Code, resp.Remark)
	}
}

func TestChecks(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(*config.Config)
		setup    func(f *fixture)
		req      *remoting.Command
		wantCode int32
		remark   string
	}{
		{"broker not readable", func(c *config.Config) { c.BrokerPermission = 2 }, nil, pullReq("T", 0, 0, "*"), code.NoPermission, "forbidden"},
		{"unknown group, no auto-create", func(c *config.Config) { c.AutoCreateSubscriptionGroup = false }, nil, pullReq("T", 0, 0, "*"), code.SubscriptionGroupNotExist, "does not exist"},
		{"invalid group name", nil, nil, pullReq("T", 0, 0, "*", "consumerGroup", "bad group"), code.SubscriptionGroupNotExist, ""},
		{"consume disabled", nil, func(f *fixture) {
			sg := subscription.NewGroupConfig("g")
			sg.ConsumeEnable = false
			_ = f.subs.Update(sg)
		}, pullReq("T", 0, 0, "*"), code.NoPermission, "no permission"},
		{"topic missing", nil, nil, pullReq("NOPE", 0, 0, "*"), code.TopicNotExist, "not exist"},
		{"topic not readable", nil, nil, pullReq("WO", 0, 0, "*"), code.NoPermission, "forbidden"},
		{"queue id too big", nil, nil, pullReq("T", 4, 0, "*"), code.InvalidParameter, "queueId[4] is illegal"},
		{"queue id negative", nil, nil, pullReq("T", -1, 0, "*"), code.InvalidParameter, "illegal"},
		{"missing queueOffset", nil, nil, pullReq("T", 0, 0, "*", "queueOffset", remotingtest.Absent), code.InvalidParameter, "<queueOffset>"},
		{"missing consumerGroup", nil, nil, pullReq("T", 0, 0, "*", "consumerGroup", remotingtest.Absent), code.InvalidParameter, "<consumerGroup>"},
		{"malformed sysFlag", nil, nil, pullReq("T", 0, 0, "*", "sysFlag", "x"), code.InvalidParameter, "<sysFlag>"},
		{"bad tag expression", nil, nil, pullReq("T", 0, 0, "||"), code.SubscriptionParseFailed, "parse"},
		{"sql92 without filter factory", nil, nil, pullReq("T", 0, 0, "a > 1", "expressionType", "SQL92"), code.SubscriptionParseFailed, "SQL92"},
		{"not registered", nil, nil, pullReq("T", 0, 0, "-"), code.SubscriptionNotExist, "group info not exist"},
		{"topic not subscribed", nil, func(f *fixture) { f.register("g", client.Clustering, "OTHER", "*", 1) }, pullReq("T", 0, 0, "-"), code.SubscriptionNotExist, "subscription not exist"},
		{"broadcast disabled", nil, func(f *fixture) {
			sg := subscription.NewGroupConfig("g")
			sg.ConsumeBroadcastEnable = false
			_ = f.subs.Update(sg)
			f.register("g", client.Broadcasting, "T", "*", 1)
		}, pullReq("T", 0, 0, "-"), code.NoPermission, "broadcast"},
		{"subscription not latest", nil, func(f *fixture) { f.register("g", client.Clustering, "T", "*", 5) }, pullReq("T", 0, 0, "-", "subVersion", "6"), code.SubscriptionNotLatest, "not latest"},
		{"registered sql92 without factory", nil, func(f *fixture) {
			f.consumers.Register("g", client.ChannelInfo{ClientID: "c"}, client.ConsumePassively, client.Clustering, "",
				[]client.SubscriptionData{{Topic: "T", SubString: "a > 1", ExpressionType: "SQL92", SubVersion: 1}}, true)
		}, pullReq("T", 0, 0, "-"), code.SubscriptionParseFailed, "SQL92"},
		{"registered ok", nil, func(f *fixture) { f.register("g", client.Clustering, "T", "*", 5) }, pullReq("T", 0, 0, "-", "subVersion", "5"), code.PullNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fixtureOpt{mutate: tt.mutate})
			if tt.setup != nil {
				tt.setup(f)
			}
			resp := f.pull(t, tt.req)
			if resp.Code != tt.wantCode || !strings.Contains(resp.Remark, tt.remark) {
				t.Fatalf("code %d remark %q, want %d containing %q", resp.Code, resp.Remark, tt.wantCode, tt.remark)
			}
		})
	}
}

func TestLitePull(t *testing.T) {
	f := newFixture(t, fixtureOpt{})
	f.put("T", 0, "a")
	req := pullReq("T", 0, 0, "*")
	req.Code = code.LitePullMessage
	if resp := f.pull(t, req); resp.Code != code.Success {
		t.Fatalf("lite pull: %d %s", resp.Code, resp.Remark)
	}
	c := f.cfg.Load().Clone()
	c.LitePullMessageEnable = false
	f.cfg.Store(c)
	if resp := f.pull(t, req); resp.Code != code.NoPermission {
		t.Fatalf("lite pull disabled: %d", resp.Code)
	}
}

func (f *fixture) register(group, model, topicName, sub string, version int64) {
	sd, _ := client.BuildSubscription(topicName, sub, "TAG")
	sd.SubVersion = version
	f.consumers.Register(group, client.ChannelInfo{ClientID: "c1"}, client.ConsumePassively, model, "CONSUME_FROM_LAST_OFFSET",
		[]client.SubscriptionData{sd}, true)
}

func TestRegisteredSubscriptionFilters(t *testing.T) {
	f := newFixture(t, fixtureOpt{})
	f.register("g", client.Clustering, "T", "b", 1)
	f.put("T", 0, "a", "b")
	resp := f.pull(t, pullReq("T", 0, 0, "-"))
	if resp.Code != code.Success {
		t.Fatalf("%d %s", resp.Code, resp.Remark)
	}
	if got := queueOffsets(t, resp.Body); len(got) != 1 || got[0] != 1 {
		t.Fatalf("got %v", got)
	}
}

// sqlFilter is a stand-in for the SQL92 filter: property a must equal 1.
type sqlFactory struct{ calls atomic.Int32 }

type propFilter struct{}

func (propFilter) MatchTagsCode(int64) bool { return true }
func (propFilter) MatchProperties(p []byte) bool {
	v, _ := message.PropertyValue(p, "a")
	return v == "1"
}

func (s *sqlFactory) NewFilter(group string, sub client.SubscriptionData) (store.MessageFilter, error) {
	s.calls.Add(1)
	if sub.SubString == "bad" {
		return nil, errors.New("syntax error")
	}
	return propFilter{}, nil
}

func TestFilterFactory(t *testing.T) {
	sf := &sqlFactory{}
	f := newFixture(t, fixtureOpt{filters: sf})
	for _, v := range []string{"0", "1", "2"} {
		m := &message.Message{Topic: "T", Body: []byte("x")}
		m.SetProperty("a", v)
		if _, err := f.store.PutMessage(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	resp := f.pull(t, pullReq("T", 0, 0, "a = 1", "expressionType", "SQL92"))
	if resp.Code != code.Success || sf.calls.Load() != 1 {
		t.Fatalf("%d %s calls=%d", resp.Code, resp.Remark, sf.calls.Load())
	}
	if got := queueOffsets(t, resp.Body); len(got) != 1 || got[0] != 1 {
		t.Fatalf("got %v", got)
	}
	if resp := f.pull(t, pullReq("T", 0, 0, "bad", "expressionType", "SQL92")); resp.Code != code.SubscriptionParseFailed {
		t.Fatalf("bad sql: %d", resp.Code)
	}
}

func TestBatchLimits(t *testing.T) {
	f := newFixture(t, fixtureOpt{})
	for range 40 {
		f.put("T", 1, "a")
	}
	resp := f.pull(t, pullReq("T", 1, 0, "*", "maxMsgNums", "100"))
	if got := queueOffsets(t, resp.Body); len(got) != MaxMsgNums || extInt(t, resp, "nextBeginOffset") != MaxMsgNums {
		t.Fatalf("got %d messages, next %s", len(got), resp.Ext("nextBeginOffset"))
	}
	resp = f.pull(t, pullReq("T", 1, 0, "*", "maxMsgNums", "3"))
	if got := queueOffsets(t, resp.Body); len(got) != 3 {
		t.Fatalf("maxMsgNums 3: got %d", len(got))
	}
	rec, _ := f.store.ReadRecord(0)
	resp = f.pull(t, pullReq("T", 1, 0, "*", "maxMsgBytes", strconv.Itoa(2*len(rec)+1)))
	if got := queueOffsets(t, resp.Body); len(got) != 2 || extInt(t, resp, "nextBeginOffset") != 2 {
		t.Fatalf("maxMsgBytes: got %d, next %s", len(got), resp.Ext("nextBeginOffset"))
	}
	resp = f.pull(t, pullReq("T", 1, 0, "*", "maxMsgBytes", "1"))
	if got := queueOffsets(t, resp.Body); len(got) != 1 {
		t.Fatalf("the first message always fits: got %d", len(got))
	}
}

func TestCommitAndPullOffset(t *testing.T) {
	f := newFixture(t, fixtureOpt{})
	f.put("T", 2, "a", "b", "c")
	flags := strconv.Itoa(FlagSubscription | FlagCommitOffset)
	f.pull(t, pullReq("T", 2, 1, "*", "sysFlag", flags, "commitOffset", "1"))
	if off, ok := f.store.QueryOffset("g", "T", 2); !ok || off != 1 {
		t.Fatalf("committed %d %v", off, ok)
	}
	if po, ok := f.p.PullOffset("g", "T", 2); !ok || po != 3 {
		t.Fatalf("pull offset %d %v", po, ok)
	}
	// Without the flag nothing is committed; -1 is never stored.
	f.pull(t, pullReq("T", 2, 1, "*", "commitOffset", "2"))
	f.pull(t, pullReq("T", 2, 1, "*", "sysFlag", flags, "commitOffset", "-1"))
	if off, _ := f.store.QueryOffset("g", "T", 2); off != 1 {
		t.Fatalf("committed %d", off)
	}
	// A piggybacked commit never moves the offset back (an explicit
	// commit or a reset does that).
	f.pull(t, pullReq("T", 2, 1, "*", "sysFlag", flags, "commitOffset", "0"))
	if off, _ := f.store.QueryOffset("g", "T", 2); off != 1 {
		t.Fatalf("a pull's commit of 0 moved the offset back to %d", off)
	}
	// A resumed (previously suspended) pull does not commit.
	if _, err := f.p.process(context.Background(), nil, pullReq("T", 2, 1, "*", "sysFlag", flags, "commitOffset", "2"), false); err != nil {
		t.Fatal(err)
	}
	if off, _ := f.store.QueryOffset("g", "T", 2); off != 1 {
		t.Fatalf("resumed pull committed %d", off)
	}
	// The compensated subscription is known to the consumer manager.
	if _, ok := f.consumers.FindSubscription("g", "T"); !ok {
		t.Fatal("subscription from the request not compensated")
	}
	f.p.ForgetGroup("g")
	if _, ok := f.p.PullOffset("g", "T", 2); ok {
		t.Fatal("ForgetGroup kept offsets")
	}
}

// --- long polling over the network ---

type netEnv struct {
	*fixture
	c    *remoting.Client
	addr string
}

func newNetEnv(t *testing.T, o fixtureOpt) *netEnv {
	t.Helper()
	f := newFixture(t, o)
	srv := remotingtest.Serve(t, func(s *remoting.Server) { f.p.Register(processor.OnServer(s)) })
	return &netEnv{fixture: f, c: remotingtest.NewClient(t), addr: srv.Addr()}
}

type result struct {
	resp *remoting.Command
	err  error
	took time.Duration
}

func (e *netEnv) pullAsync(req *remoting.Command) <-chan result {
	out := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		resp, err := e.c.Invoke(ctx, e.addr, req)
		out <- result{resp, err, time.Since(start)}
	}()
	return out
}

func suspendReq(topic string, qid int, offset int64, sub string, suspendMS int) *remoting.Command {
	return pullReq(topic, qid, offset, sub, "sysFlag", strconv.Itoa(FlagSubscription|FlagSuspend),
		"suspendTimeoutMillis", strconv.Itoa(suspendMS))
}

func wait(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
	}
	return result{}
}

func waitParked(t *testing.T, e *netEnv, n int) {
	t.Helper()
	testutil.Eventually(t, 3*time.Second, func() error {
		if got := e.p.Hold().Len(); got != n {
			return fmt.Errorf("parked %d, want %d", got, n)
		}
		return nil
	})
}

func TestLongPollWakeUp(t *testing.T) {
	e := newNetEnv(t, fixtureOpt{})
	e.put("T", 0, "a", "a")
	res := e.pullAsync(suspendReq("T", 0, 2, "*", 15000))
	waitParked(t, e, 1)
	e.put("T", 0, "b")
	r := wait(t, res)
	if r.resp.Code != code.Success || r.took > 5*time.Second {
		t.Fatalf("code %d after %v", r.resp.Code, r.took)
	}
	if got := queueOffsets(t, r.resp.Body); len(got) != 1 || got[0] != 2 || extInt(t, r.resp, "nextBeginOffset") != 3 {
		t.Fatalf("got %v next %s", got, r.resp.Ext("nextBeginOffset"))
	}
}

func TestLongPollTimeout(t *testing.T) {
	e := newNetEnv(t, fixtureOpt{})
	e.put("T", 0, "a", "a")
	res := e.pullAsync(suspendReq("T", 0, 2, "*", 300))
	r := wait(t, res)
	if r.resp.Code != code.PullNotFound || extInt(t, r.resp, "nextBeginOffset") != 2 || extInt(t, r.resp, "maxOffset") != 2 {
		t.Fatalf("code %d ext %v", r.resp.Code, r.resp.ExtFields)
	}
	if r.took < 280*time.Millisecond || r.took > 5*time.Second {
		t.Fatalf("answered after %v", r.took)
	}
}

// An arrival the subscription filters out does not wake the pull; at the
// deadline the re-run sees the filtered entry (PULL_RETRY_IMMEDIATELY past it).
func TestLongPollFilteredArrival(t *testing.T) {
	e := newNetEnv(t, fixtureOpt{})
	res := e.pullAsync(suspendReq("T", 0, 0, "a", 400))
	waitParked(t, e, 1)
	e.put("T", 0, "b")
	time.Sleep(50 * time.Millisecond)
	if e.p.Hold().Len() != 1 {
		t.Fatal("non-matching arrival woke the pull")
	}
	r := wait(t, res)
	if r.resp.Code != code.PullRetryImmediately || extInt(t, r.resp, "nextBeginOffset") != 1 || r.took < 380*time.Millisecond {
		t.Fatalf("code %d next %s after %v", r.resp.Code, r.resp.Ext("nextBeginOffset"), r.took)
	}
}

func TestShortPolling(t *testing.T) {
	e := newNetEnv(t, fixtureOpt{mutate: func(c *config.Config) {
		c.LongPollingEnable = false
		c.ShortPollingTimeMills = 200 * time.Millisecond
	}})
	r := wait(t, e.pullAsync(suspendReq("T", 0, 0, "*", 20000)))
	if r.resp.Code != code.PullNotFound || r.took > 3*time.Second || r.took < 180*time.Millisecond {
		t.Fatalf("code %d after %v", r.resp.Code, r.took)
	}
}

func TestHoldFull(t *testing.T) {
	e := newNetEnv(t, fixtureOpt{hold: longpoll.Config{MaxParked: 1}})
	first := e.pullAsync(suspendReq("T", 0, 0, "*", 500))
	waitParked(t, e, 1)
	r := wait(t, e.pullAsync(suspendReq("T", 1, 0, "*", 500)))
	if r.resp.Code != code.SystemBusy {
		t.Fatalf("second pull: %d %s", r.resp.Code, r.resp.Remark)
	}
	if r := wait(t, first); r.resp.Code != code.PullNotFound {
		t.Fatalf("first pull: %d", r.resp.Code)
	}
}

// The suspended pull's connection closes: nothing is written, and the
// request is not answered to anyone else.
func TestLongPollClosedChannel(t *testing.T) {
	e := newNetEnv(t, fixtureOpt{})
	res := e.pullAsync(suspendReq("T", 0, 0, "*", 10000))
	waitParked(t, e, 1)
	e.c.CloseConn(e.addr)
	if r := <-res; r.err == nil {
		t.Fatalf("pull answered after close: %d", r.resp.Code)
	}
	// The server notices the close asynchronously; the periodic check then drops the request.
	testutil.WaitFor(t, 3*time.Second, "the request of the closed channel to be dropped", func() bool {
		e.p.Hold().Check()
		return e.p.Hold().Len() == 0
	})
	e.put("T", 0, "a") // must not panic or write anywhere
}

// getRecorder records GetStats calls.
type getRecorder struct{ calls []string }

func (r *getRecorder) GroupGet(group, topic string, msgs, size int) {
	r.calls = append(r.calls, fmt.Sprintf("%s %s %d %d", group, topic, msgs, size))
}

// TestGetStats: a pull that finds messages counts them and their bytes for
// its topic and group (GROUP_GET_NUMS / GROUP_GET_SIZE); one that finds
// nothing counts nothing.
func TestGetStats(t *testing.T) {
	rec := &getRecorder{}
	f := newFixture(t, fixtureOpt{deps: func(d *Deps) { d.Stats = rec }})
	f.put("T", 0, "a", "b")
	resp := f.pull(t, pullReq("T", 0, 0, "*"))
	if resp.Code != code.Success {
		t.Fatalf("pull: %d %s", resp.Code, resp.Remark)
	}
	size := len(resp.Body)
	if resp = f.pull(t, pullReq("T", 0, 2, "*")); resp.Code != code.PullNotFound {
		t.Fatalf("pull at the end: %d", resp.Code)
	}
	if len(rec.calls) != 1 || rec.calls[0] != fmt.Sprintf("g T 2 %d", size) {
		t.Fatalf("stats calls %q", rec.calls)
	}
}
