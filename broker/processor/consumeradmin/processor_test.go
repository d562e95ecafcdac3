package consumeradmin

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/config/configtest"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/processor/consumer"
	"github.com/rmqgo/rmq/broker/store/kv"
	"github.com/rmqgo/rmq/broker/store/offset"
	"github.com/rmqgo/rmq/broker/store/storetest"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

// fakeIndex derives the offset index from the committed offsets of a
// storetest store, for the groups and topics the test names.
type fakeIndex struct {
	st             *storetest.Store
	groups, topics []string
}

func (x fakeIndex) has(g, t string) bool {
	for q := range int32(16) {
		if _, ok := x.st.QueryOffset(g, t, q); ok {
			return true
		}
	}
	return false
}

func (x fakeIndex) TopicGroups(t string) []string {
	return having(x.groups, func(g string) bool { return x.has(g, t) })
}

func (x fakeIndex) GroupTopics(g string) []string {
	return having(x.topics, func(t string) bool { return x.has(g, t) })
}

// having is the elements of list that ok accepts, in order.
func having(list []string, ok func(string) bool) []string {
	var out []string
	for _, s := range list {
		if ok(s) {
			out = append(out, s)
		}
	}
	return out
}

type env struct {
	cfg     atomic.Pointer[config.Config]
	st      *storetest.Store
	topics  *topic.Manager
	subs    *subscription.Manager
	clients *client.Processor
	p       *Processor
	addr    string
	now     atomic.Int64
}

func newEnv(t *testing.T, mutate ...func(*config.Config)) *env {
	t.Helper()
	return newEnvWith(t, nil, mutate...)
}

// newEnvWith is newEnv with a reset table.
func newEnvWith(t *testing.T, resets ResetAssigner, mutate ...func(*config.Config)) *env {
	t.Helper()
	c := configtest.New(t, mutate...)
	e := &env{}
	e.cfg.Store(c)
	e.now.Store(1_700_000_000_000)
	e.st = storetest.New(storetest.WithClock(func() time.Time { return time.UnixMilli(e.now.Load()) }))
	var err error
	if e.topics, err = topic.New(topic.Options{Config: e.cfg.Load}); err != nil {
		t.Fatal(err)
	}
	if e.subs, err = subscription.New(subscription.Options{Config: e.cfg.Load}); err != nil {
		t.Fatal(err)
	}
	if e.clients, err = client.NewProcessor(client.Deps{Config: e.cfg.Load, Subscriptions: e.subs, Topics: e.topics}); err != nil {
		t.Fatal(err)
	}
	idx := fakeIndex{st: e.st, groups: []string{"g1", "g2", "g3"}, topics: []string{"T", "T2", "%RETRY%g1"}}
	e.p, err = New(Deps{
		Config: e.cfg.Load, Store: e.st, Offsets: idx, Topics: e.topics, Subscriptions: e.subs,
		Consumers: e.clients.Consumers(), BrokerAddr: func() string { return "127.0.0.1:10911" },
		CallTimeout: 300 * time.Millisecond, StatusTimeout: 300 * time.Millisecond, Resets: resets,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := remotingtest.Serve(t, func(s *remoting.Server) {
		e.clients.Register(processor.OnServer(s))
		e.p.Register(processor.OnServer(s))
		s.OnClose(e.clients.OnChannelClose)
	})
	e.clients.Start()
	t.Cleanup(e.clients.Close)
	e.addr = srv.Addr()
	return e
}

func (e *env) createTopic(t *testing.T, name string, queues int) {
	t.Helper()
	tc := protocol.NewTopicConfig(name)
	tc.ReadQueueNums, tc.WriteQueueNums = queues, queues
	if _, _, err := e.topics.CreateIfAbsent(tc); err != nil {
		t.Fatal(err)
	}
}

// peer is a consumer client connection.
type peer struct {
	c    *remoting.Client
	addr string
	id   string
}

func (e *env) peer(t *testing.T, id string) *peer {
	t.Helper()
	p := &peer{c: remoting.NewClient(remoting.ClientConfig{IdleTimeout: -1}, nil), addr: e.addr, id: id}
	t.Cleanup(func() { _ = p.c.Close() })
	return p
}

func (p *peer) invoke(t *testing.T, c int32, ext map[string]string, body []byte) *remoting.Command {
	t.Helper()
	resp, err := p.c.Invoke(context.Background(), p.addr, remoting.NewRequest(c, ext, body))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func (p *peer) heartbeat(t *testing.T, group string, topics ...string) {
	t.Helper()
	p.heartbeatAs(t, remoting.LangGo, group, topics...)
}

// heartbeatAs registers the peer as a consumer of group written in lang.
func (p *peer) heartbeatAs(t *testing.T, lang remoting.LanguageCode, group string, topics ...string) {
	t.Helper()
	var subs []any
	for _, tp := range topics {
		subs = append(subs, map[string]any{"topic": tp, "subString": "*", "subVersion": 1, "expressionType": "TAG"})
	}
	hb := map[string]any{"clientID": p.id,
		"producerDataSet": []any{map[string]any{"groupName": "PG"}},
		"consumerDataSet": []any{map[string]any{"groupName": group, "consumeType": client.ConsumePassively,
			"messageModel": client.Clustering, "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "subscriptionDataSet": subs}}}
	b, _ := json.Marshal(hb)
	req := remoting.NewRequest(code.HeartBeat, nil, b)
	req.Language = lang
	r, err := p.c.Invoke(context.Background(), p.addr, req)
	if err != nil {
		t.Fatal(err)
	}
	if r.Code != code.Success {
		t.Fatalf("heartbeat: %d %s", r.Code, r.Remark)
	}
}

func TestQueryTopicConsumeByWhoAndTopicsByConsumer(t *testing.T) {
	e := newEnv(t)
	e.createTopic(t, "T", 2)
	e.st.CommitOffset("g2", "T", 1, 5)  // offsets only
	e.st.CommitOffset("g1", "T2", 0, 3) // another topic
	a := e.peer(t, "10.0.0.1@a")
	a.heartbeat(t, "g1", "T") // online subscriber

	r := a.invoke(t, code.QueryTopicConsumeByWho, map[string]string{"topic": "T"}, nil)
	if r.Code != code.Success || string(r.Body) != `{"groupList":["g1","g2"]}` {
		t.Fatalf("300: %d %s", r.Code, r.Body)
	}
	r = a.invoke(t, code.QueryTopicConsumeByWho, map[string]string{"topic": "nobody"}, nil)
	if r.Code != code.Success || string(r.Body) != `{"groupList":[]}` {
		t.Fatalf("300 empty: %d %s", r.Code, r.Body)
	}
	r = a.invoke(t, code.QueryTopicConsumeByWho, nil, nil)
	if r.Code != code.InvalidParameter || !strings.Contains(r.Remark, "topic") {
		t.Fatalf("300 missing topic: %d %s", r.Code, r.Remark)
	}
	r = a.invoke(t, code.QueryTopicsByConsumer, map[string]string{"group": "g1"}, nil)
	if r.Code != code.Success || string(r.Body) != `{"brokerAddr":"127.0.0.1:10911","topicList":["T2"]}` {
		t.Fatalf("343: %d %s", r.Code, r.Body)
	}
}

func TestIndexOfOffsetStore(t *testing.T) {
	db, err := kv.Open(kv.Config{Dir: t.TempDir()}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := offset.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Commit(offset.Key{Group: "b", Topic: "T", QueueID: 0}, 1)
	s.Commit(offset.Key{Group: "a", Topic: "T", QueueID: 3}, 1)
	s.Commit(offset.Key{Group: "a", Topic: "U", QueueID: 0}, 1)
	x := IndexOf(s)
	if got := x.TopicGroups("T"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("groups %v", got)
	}
	if got := x.GroupTopics("a"); !slices.Equal(got, []string{"T", "U"}) {
		t.Fatalf("topics %v", got)
	}
}

func TestBrokerConsumeStats(t *testing.T) {
	e := newEnv(t)
	e.createTopic(t, "T", 2)
	for range 5 {
		e.st.Put("T", 0, "", []byte("x"))
	}
	e.st.Put("T", 1, "", []byte("y"))
	e.st.CommitOffset("g1", "T", 0, 2)
	e.st.CommitOffset("g1", "T2", 0, 2) // topic without config: skipped
	if err := e.subs.Update(subscription.NewGroupConfig("g1")); err != nil {
		t.Fatal(err)
	}
	a := e.peer(t, "a")
	r := a.invoke(t, code.GetBrokerConsumeStats, map[string]string{"isOrder": "false"}, nil)
	if r.Code != code.Success {
		t.Fatalf("317: %d %s", r.Code, r.Remark)
	}
	var body struct {
		BrokerAddr        string                               `json:"brokerAddr"`
		ConsumeStatsList  []map[string][]consumer.ConsumeStats `json:"consumeStatsList"`
		TotalDiff         int64                                `json:"totalDiff"`
		TotalInflightDiff int64                                `json:"totalInflightDiff"`
	}
	if err := protocol.UnmarshalMQKeyed(r.Body, &body); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
	var g1 []consumer.ConsumeStats
	for _, m := range body.ConsumeStatsList {
		if v, ok := m["g1"]; ok {
			g1 = v
		}
	}
	if len(g1) != 1 || len(g1[0].OffsetTable) != 2 {
		t.Fatalf("g1 stats %s", r.Body)
	}
	w := g1[0].OffsetTable[protocol.MessageQueue{BrokerName: "broker-a", QueueID: 0, Topic: "T"}]
	if w.BrokerOffset != 5 || w.ConsumerOffset != 2 || w.LastTimestamp != 1_700_000_000_000 {
		t.Fatalf("queue 0 %+v", w)
	}
	// diff: (5-2) + (1-0); inflight as Java: pullOffset 0 - consumerOffset.
	if body.TotalDiff != 4 || body.TotalInflightDiff != -2 || body.BrokerAddr != "127.0.0.1:10911" {
		t.Fatalf("totals %+v", body)
	}
	r = a.invoke(t, code.GetBrokerConsumeStats, map[string]string{"isOrder": "true"}, nil)
	if r.Code != code.Success || strings.Contains(string(r.Body), `"topic":"T"`) {
		t.Fatalf("317 order only: %s", r.Body)
	}
}

// answerer registers a client-side handler for code c.
func (p *peer) answer(c int32, h func(req *remoting.Command) *remoting.Command) {
	p.c.RegisterHandler(c, func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		return h(req), nil
	})
}

func TestConsumerRunningInfoForwarded(t *testing.T) {
	e := newEnv(t)
	a := e.peer(t, "10.0.0.1@a")
	var got atomic.Pointer[remoting.Command]
	a.answer(code.GetConsumerRunningInfo, func(req *remoting.Command) *remoting.Command {
		got.Store(req)
		resp := remoting.NewResponse(req, code.Success, "fine")
		resp.Body = []byte(`{"properties":{"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY"}}`)
		resp.SetExt("x", "y")
		return resp
	})
	admin := e.peer(t, "admin")
	ext := map[string]string{"consumerGroup": "g1", "clientId": "10.0.0.1@a", "jstackEnable": "false"}

	r := admin.invoke(t, code.GetConsumerRunningInfo, ext, nil)
	if r.Code != code.SystemError || r.Remark != "The Consumer <g1> <10.0.0.1@a> not online" {
		t.Fatalf("offline: %d %q", r.Code, r.Remark)
	}
	a.heartbeat(t, "g1", "T")
	r = admin.invoke(t, code.GetConsumerRunningInfo, ext, nil)
	if r.Code != code.Success || r.Remark != "fine" || r.Ext("x") != "y" || !strings.Contains(string(r.Body), "PROP_CONSUME_TYPE") {
		t.Fatalf("forwarded: %d %q %v %s", r.Code, r.Remark, r.ExtFields, r.Body)
	}
	if req := got.Load(); req == nil || req.Ext("jstackEnable") != "false" || req.Ext("clientId") != "10.0.0.1@a" {
		t.Fatalf("client saw %+v", req)
	}
	r = admin.invoke(t, code.GetConsumerRunningInfo, map[string]string{"consumerGroup": "g1"}, nil)
	if r.Code != code.InvalidParameter {
		t.Fatalf("missing clientId: %d", r.Code)
	}

	// A client that answers an error code: passed through.
	b := e.peer(t, "b")
	b.answer(code.GetConsumerRunningInfo, func(req *remoting.Command) *remoting.Command {
		return remoting.NewResponse(req, code.SystemError, "Can't find specified client instance of: b")
	})
	b.heartbeat(t, "g1", "T")
	r = admin.invoke(t, code.GetConsumerRunningInfo, map[string]string{"consumerGroup": "g1", "clientId": "b"}, nil)
	if r.Code != code.SystemError || r.Remark != "Can't find specified client instance of: b" {
		t.Fatalf("client error: %d %q", r.Code, r.Remark)
	}

	// A client that does not answer in time: CONSUME_MSG_TIMEOUT.
	c := e.peer(t, "c")
	c.c.RegisterHandler(code.GetConsumerRunningInfo, func(ctx context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		time.Sleep(time.Second)
		return remoting.NewResponse(req, code.Success, ""), nil
	})
	c.heartbeat(t, "g1", "T")
	r = admin.invoke(t, code.GetConsumerRunningInfo, map[string]string{"consumerGroup": "g1", "clientId": "c"}, nil)
	if r.Code != code.ConsumeMsgTimeout || !strings.HasPrefix(r.Remark, "consumer <g1> <c> Timeout:") {
		t.Fatalf("timeout: %d %q", r.Code, r.Remark)
	}
}

func TestConsumeMessageDirectlyAttachesMessage(t *testing.T) {
	e := newEnv(t)
	e.createTopic(t, "T", 1)
	m := &message.Message{Topic: "T", QueueID: 0, Body: []byte("hello")}
	res, err := e.st.PutMessage(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	a := e.peer(t, "a")
	var got atomic.Pointer[remoting.Command]
	a.answer(code.ConsumeMessageDirectly, func(req *remoting.Command) *remoting.Command {
		got.Store(req)
		resp := remoting.NewResponse(req, code.Success, "")
		resp.Body = []byte(`{"autoCommit":true,"consumeResult":0,"order":false,"remark":"","spentTimeMills":1}`)
		return resp
	})
	a.heartbeat(t, "g1", "T")
	admin := e.peer(t, "admin")
	r := admin.invoke(t, code.ConsumeMessageDirectly, map[string]string{"consumerGroup": "g1", "clientId": "a", "msgId": res.MsgIDs[0], "topic": "T"}, nil)
	if r.Code != code.Success || !strings.Contains(string(r.Body), "spentTimeMills") {
		t.Fatalf("309: %d %s %s", r.Code, r.Remark, r.Body)
	}
	req := got.Load()
	if req.Ext("brokerName") != "broker-a" || req.Ext("topicSysFlag") != "0" || req.Ext("groupSysFlag") != "0" || req.Ext("msgId") != res.MsgIDs[0] {
		t.Fatalf("client ext %v", req.ExtFields)
	}
	v, _, err := message.DecodeStored(req.Body, message.DecodeOptions{})
	if err != nil || string(v.Body) != "hello" || v.Topic != "T" {
		t.Fatalf("attached message %+v %v", v, err)
	}
	r = admin.invoke(t, code.ConsumeMessageDirectly, map[string]string{"consumerGroup": "g1", "clientId": "a", "msgId": "nothex"}, nil)
	if r.Code != code.SystemError || !strings.Contains(r.Remark, "bad msgId") {
		t.Fatalf("bad id: %d %s", r.Code, r.Remark)
	}
}

func TestConsumerStatusCollectsClients(t *testing.T) {
	e := newEnv(t)
	status := func(id string, off int) func(*remoting.Command) *remoting.Command {
		return func(req *remoting.Command) *remoting.Command {
			resp := remoting.NewResponse(req, code.Success, "")
			// client-go's key order (topic, brokerName, queueId).
			resp.Body = fmt.Appendf(nil, `{"messageQueueTable":{{"topic":"%s","brokerName":"broker-a","queueId":0}:%d}}`, req.Ext("topic"), off)
			return resp
		}
	}
	a, b := e.peer(t, "a"), e.peer(t, "b")
	a.answer(code.GetConsumerStatusFromClient, status("a", 7))
	b.answer(code.GetConsumerStatusFromClient, status("b", 9))
	a.heartbeat(t, "g1", "T")
	b.heartbeat(t, "g1", "T")
	admin := e.peer(t, "admin")
	r := admin.invoke(t, code.InvokeBrokerToGetConsumerStatus, map[string]string{"topic": "T", "group": "g1"}, nil)
	want := `{"consumerTable":{"a":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:7},"b":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:9}},"messageQueueTable":{}}`
	if r.Code != code.Success || string(r.Body) != want {
		t.Fatalf("223: %d %s", r.Code, r.Body)
	}
	r = admin.invoke(t, code.InvokeBrokerToGetConsumerStatus, map[string]string{"topic": "T", "group": "g1", "clientAddr": "b"}, nil)
	if r.Code != code.Success || strings.Contains(string(r.Body), `"a":`) || !strings.Contains(string(r.Body), `"b":`) {
		t.Fatalf("223 one client: %s", r.Body)
	}
	r = admin.invoke(t, code.InvokeBrokerToGetConsumerStatus, map[string]string{"topic": "T", "group": "nope"}, nil)
	if r.Code != code.SystemError || r.Remark != "No Any Consumer online in the consumer group: [nope]" {
		t.Fatalf("223 offline: %d %s", r.Code, r.Remark)
	}
}

// resetSink records RESET_CONSUMER_CLIENT_OFFSET requests.
type resetSink struct {
	mu   sync.Mutex
	reqs []*remoting.Command
	ch   chan struct{}
}

func (p *peer) sinkResets() *resetSink {
	s := &resetSink{ch: make(chan struct{}, 16)}
	p.c.RegisterHandler(code.ResetConsumerClientOffset, func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		s.mu.Unlock()
		s.ch <- struct{}{}
		return nil, nil
	})
	return s
}

func (s *resetSink) next(t *testing.T) *remoting.Command {
	t.Helper()
	select {
	case <-s.ch:
	case <-time.After(3 * time.Second):
		t.Fatal("no RESET_CONSUMER_CLIENT_OFFSET")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reqs[len(s.reqs)-1]
}

func resetExt(topic, group string, ts int64, force bool) map[string]string {
	return map[string]string{"topic": topic, "group": group, "timestamp": fmt.Sprint(ts), "isForce": fmt.Sprint(force), "offset": "-1"}
}

func decodeReset(t *testing.T, b []byte) map[protocol.MessageQueue]int64 {
	t.Helper()
	var body ResetOffsetBody
	if err := protocol.UnmarshalMQKeyed(b, &body); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return body.OffsetTable
}

func mq(q int) protocol.MessageQueue {
	return protocol.MessageQueue{BrokerName: "broker-a", QueueID: q, Topic: "T"}
}

func TestResetOffsetServerSide(t *testing.T) {
	e := newEnv(t)
	e.createTopic(t, "T", 2)
	for i := range 4 { // queue 0: stored at t0, t0+1000, t0+2000, t0+3000
		e.now.Store(1_700_000_000_000 + int64(i)*1000)
		e.st.Put("T", 0, "", []byte("x"))
	}
	e.st.CommitOffset("g1", "T", 0, 4)
	a := e.peer(t, "10.0.0.1@a")
	sink := a.sinkResets()
	a.heartbeat(t, "g1", "T")
	admin := e.peer(t, "admin")

	r := admin.invoke(t, code.InvokeBrokerToResetOffset, resetExt("T", "g1", 1_700_000_001_000, true), nil)
	if r.Code != code.Success {
		t.Fatalf("222: %d %s", r.Code, r.Remark)
	}
	if string(r.Body) != `{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:1,{"brokerName":"broker-a","queueId":1,"topic":"T"}:0}}` {
		t.Fatalf("222 body %s", r.Body)
	}
	if off, _ := e.st.QueryOffset("g1", "T", 0); off != 1 {
		t.Fatalf("committed %d", off)
	}
	n := sink.next(t)
	if !n.IsOneway() || n.Ext("topic") != "T" || n.Ext("group") != "g1" || n.Ext("timestamp") != "1700000001000" || n.Ext("queueId") != "-1" {
		t.Fatalf("220 ext %v", n.ExtFields)
	}
	if got := decodeReset(t, n.Body); got[mq(0)] != 1 || got[mq(1)] != 0 || len(got) != 2 {
		t.Fatalf("220 body %s", n.Body)
	}

	// Negative timestamp: the max offsets; no consumer needed.
	r = admin.invoke(t, code.InvokeBrokerToResetOffset, resetExt("T", "g2", -1, false), nil)
	if r.Code != code.SubscriptionGroupNotExist {
		t.Fatalf("unknown group: %d %s", r.Code, r.Remark)
	}
	if err := e.subs.Update(subscription.NewGroupConfig("g2")); err != nil {
		t.Fatal(err)
	}
	r = admin.invoke(t, code.InvokeBrokerToResetOffset, resetExt("T", "g2", -1, false), nil)
	if got := decodeReset(t, r.Body); r.Code != code.Success || got[mq(0)] != 4 {
		t.Fatalf("latest: %d %s", r.Code, r.Body)
	}

	// One queue, to an explicit offset (the Java tool's -b -q path).
	ext := resetExt("T", "g1", 0, false)
	ext["queueId"], ext["offset"] = "0", "3"
	r = admin.invoke(t, code.InvokeBrokerToResetOffset, ext, nil)
	if got := decodeReset(t, r.Body); r.Code != code.Success || len(got) != 1 || got[mq(0)] != 3 {
		t.Fatalf("one queue: %d %s", r.Code, r.Body)
	}
	ext["offset"] = "9"
	r = admin.invoke(t, code.InvokeBrokerToResetOffset, ext, nil)
	if r.Code != code.SystemError || r.Remark != "Target offset 9 not in consume queue range [0-4]" {
		t.Fatalf("out of range: %d %s", r.Code, r.Remark)
	}

	r = admin.invoke(t, code.InvokeBrokerToResetOffset, resetExt("nope", "g1", 0, true), nil)
	if r.Code != code.TopicNotExist {
		t.Fatalf("unknown topic: %d", r.Code)
	}
	r = admin.invoke(t, code.InvokeBrokerToResetOffset, map[string]string{"topic": "T", "group": "g1"}, nil)
	if r.Code != code.InvalidParameter || !strings.Contains(r.Remark, "timestamp") {
		t.Fatalf("missing timestamp: %d %s", r.Code, r.Remark)
	}
}

func TestResetOffsetClientSide(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.UseServerSideResetOffset = false })
	e.createTopic(t, "T", 1)
	for range 4 {
		e.st.Put("T", 0, "", []byte("x"))
	}
	admin := e.peer(t, "admin")
	r := admin.invoke(t, code.InvokeBrokerToResetOffset, resetExt("T", "g1", 0, true), nil)
	if r.Code != code.SystemError || r.Remark != "THe consumer group <g1> not exist" {
		t.Fatalf("no offsets: %d %s", r.Code, r.Remark)
	}
	e.st.CommitOffset("g1", "T", 0, 2)
	r = admin.invoke(t, code.InvokeBrokerToResetOffset, resetExt("T", "g1", 0, true), nil)
	if r.Code != code.ConsumerNotOnline || !strings.HasPrefix(r.Remark, "Consumer not online, so can not reset offset, Group: g1 Topic: T") {
		t.Fatalf("offline: %d %s", r.Code, r.Remark)
	}
	a := e.peer(t, "a")
	sink := a.sinkResets()
	a.heartbeat(t, "g1", "T")
	// Not forced: an offset only moves back (-1 = the max offset, 4, is
	// ahead of the committed 2).
	r = admin.invoke(t, code.InvokeBrokerToResetOffset, resetExt("T", "g1", -1, false), nil)
	if got := decodeReset(t, r.Body); r.Code != code.Success || got[mq(0)] != 2 {
		t.Fatalf("not forced: %d %s", r.Code, r.Body)
	}
	if got := decodeReset(t, sink.next(t).Body); got[mq(0)] != 2 {
		t.Fatal("client told another offset")
	}
	r = admin.invoke(t, code.InvokeBrokerToResetOffset, resetExt("T", "g1", -1, true), nil)
	if got := decodeReset(t, r.Body); r.Code != code.Success || got[mq(0)] != 4 {
		t.Fatalf("forced: %d %s", r.Code, r.Body)
	}
	// Client side: the broker does not commit, the clients do.
	if off, _ := e.st.QueryOffset("g1", "T", 0); off != 2 {
		t.Fatalf("committed %d", off)
	}
}

// resetLog records what the reset table is told.
type resetLog struct {
	mu  sync.Mutex
	got map[string]int64 // "group/topic/queue" → offset
}

func (l *resetLog) Assign(group, topic string, qid int32, off int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got[fmt.Sprintf("%s/%s/%d", group, topic, qid)] = off
}

func (l *resetLog) take() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.got
	l.got = map[string]int64{}
	return out
}

// TestResetOffsetServerSideTable: Java 5's server-side reset goes through
// the reset table (the next pull answers PULL_OFFSET_MOVED) when a Java
// client or no client is online, and Java clients get no push; non-Java
// clients get RESET_CONSUMER_CLIENT_OFFSET, and when they are all that is
// online the table is left alone.
func TestResetOffsetServerSideTable(t *testing.T) {
	for _, c := range []struct {
		name      string
		clients   []remoting.LanguageCode
		wantTable bool
	}{
		{"no client online", nil, true},
		{"java client", []remoting.LanguageCode{remoting.LangJava}, true},
		{"go client", []remoting.LanguageCode{remoting.LangGo}, false},
		{"java and go", []remoting.LanguageCode{remoting.LangJava, remoting.LangGo}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := &resetLog{got: map[string]int64{}}
			e := newEnvWith(t, log)
			e.createTopic(t, "T", 2)
			for range 3 {
				e.st.Put("T", 0, "", []byte("x"))
			}
			if err := e.subs.Update(subscription.NewGroupConfig("g1")); err != nil {
				t.Fatal(err)
			}
			sinks := map[remoting.LanguageCode]*resetSink{}
			for i, lang := range c.clients {
				p := e.peer(t, fmt.Sprintf("10.0.0.%d@c", i+1))
				sinks[lang] = p.sinkResets()
				p.heartbeatAs(t, lang, "g1", "T")
			}
			admin := e.peer(t, "admin")
			if r := admin.invoke(t, code.InvokeBrokerToResetOffset, resetExt("T", "g1", -1, true), nil); r.Code != code.Success {
				t.Fatalf("222: %d %s", r.Code, r.Remark)
			}
			got := log.take()
			if c.wantTable {
				if len(got) != 2 || got["g1/T/0"] != 3 || got["g1/T/1"] != 0 {
					t.Fatalf("reset table got %v", got)
				}
			} else if len(got) != 0 {
				t.Fatalf("reset table got %v, want nothing (every client was told)", got)
			}
			if off, _ := e.st.QueryOffset("g1", "T", 0); off != 3 {
				t.Fatalf("committed %d", off)
			}
			if s, ok := sinks[remoting.LangGo]; ok {
				if got := decodeReset(t, s.next(t).Body); got[mq(0)] != 3 {
					t.Fatalf("220 to the go client: %v", got)
				}
			}
			if s, ok := sinks[remoting.LangJava]; ok {
				select {
				case <-s.ch:
					t.Fatal("a Java client was pushed RESET_CONSUMER_CLIENT_OFFSET (Java 5 brokers do not)")
				case <-time.After(200 * time.Millisecond):
				}
			}
		})
	}
}
