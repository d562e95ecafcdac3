package client

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/config/configtest"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

type env struct {
	cfg      atomic.Pointer[config.Config]
	subs     *subscription.Manager
	topics   *topic.Manager
	p        *Processor
	clock    *testutil.FakeClock
	srv      *remoting.Server
	addr     string
	triggers atomic.Int32
}

func newEnv(t *testing.T, mutate ...func(*config.Config)) *env {
	t.Helper()
	c := configtest.New(t, mutate...)
	e := &env{clock: testutil.NewFakeClock(time.UnixMilli(1_700_000_000_000))}
	e.cfg.Store(c)
	var err error
	e.topics, err = topic.New(topic.Options{Config: e.cfg.Load})
	if err != nil {
		t.Fatal(err)
	}
	e.subs, err = subscription.New(subscription.Options{Config: e.cfg.Load})
	if err != nil {
		t.Fatal(err)
	}
	e.p, err = NewProcessor(Deps{
		Config: e.cfg.Load, Subscriptions: e.subs, Topics: e.topics, Now: e.clock.Now,
		TriggerRegistration: func() { e.triggers.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// servedEnv is newEnv with its server started.
func servedEnv(t *testing.T, mutate ...func(*config.Config)) *env {
	t.Helper()
	e := newEnv(t, mutate...)
	e.serve(t)
	return e
}

// serve starts a real server with the processor's handlers and hooks.
func (e *env) serve(t *testing.T) {
	t.Helper()
	srv := remotingtest.Serve(t, func(s *remoting.Server) {
		e.p.Register(processor.OnServer(s))
		s.OnClose(e.p.OnChannelClose)
	})
	e.p.Start()
	t.Cleanup(e.p.Close)
	e.srv, e.addr = srv, srv.Addr()
}

// peer is one client connection that records NOTIFY_CONSUMER_IDS_CHANGED.
type peer struct {
	c        *remoting.Client
	addr     string
	id       string
	notified chan string
}

func (e *env) peer(t *testing.T, id string) *peer {
	t.Helper()
	p := &peer{c: remoting.NewClient(remoting.ClientConfig{IdleTimeout: -1}, nil), addr: e.addr, id: id, notified: make(chan string, 16)}
	p.c.RegisterHandler(code.NotifyConsumerIdsChanged, func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		if !req.IsOneway() {
			p.notified <- "NOT-ONEWAY"
		}
		p.notified <- req.Ext("consumerGroup")
		return nil, nil
	})
	t.Cleanup(func() { _ = p.c.Close() })
	return p
}

func (p *peer) invoke(t *testing.T, req *remoting.Command) *remoting.Command {
	t.Helper()
	resp, err := p.c.Invoke(context.Background(), p.addr, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func heartbeatBody(clientID, group string, topics ...string) []byte {
	hb := map[string]any{"clientID": clientID, "producerDataSet": []any{map[string]any{"groupName": "PG"}}}
	if group != "" {
		var subs []any
		for _, tp := range topics {
			subs = append(subs, map[string]any{"topic": tp, "subString": "*", "subVersion": 1, "expressionType": "TAG"})
		}
		hb["consumerDataSet"] = []any{map[string]any{"groupName": group, "consumeType": ConsumePassively,
			"messageModel": Clustering, "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "subscriptionDataSet": subs}}
	}
	b, _ := json.Marshal(hb)
	return b
}

func (p *peer) heartbeat(t *testing.T, group string, topics ...string) *remoting.Command {
	t.Helper()
	resp := p.invoke(t, remoting.NewRequest(code.HeartBeat, nil, heartbeatBody(p.id, group, topics...)))
	if resp.Code != code.Success {
		t.Fatalf("heartbeat: %d %s", resp.Code, resp.Remark)
	}
	return resp
}

func (p *peer) expectNotify(t *testing.T, group string) {
	t.Helper()
	select {
	case g := <-p.notified:
		if g != group {
			t.Fatalf("%s notified for %q, want %q", p.id, g, group)
		}
	case <-time.After(3 * time.Second):
		t.Fatalf("%s not notified for %s", p.id, group)
	}
}

func (p *peer) expectNoNotify(t *testing.T) {
	t.Helper()
	select {
	case g := <-p.notified:
		t.Fatalf("%s unexpectedly notified (%s)", p.id, g)
	case <-time.After(150 * time.Millisecond):
	}
}

func (e *env) consumerList(t *testing.T, p *peer, group string) (int32, []string) {
	t.Helper()
	resp := p.invoke(t, remoting.NewRequest(code.GetConsumerListByGroup, map[string]string{"consumerGroup": group}, nil))
	var body struct {
		ConsumerIDList []string `json:"consumerIdList"`
	}
	if resp.Code == code.Success {
		if err := json.Unmarshal(resp.Body, &body); err != nil {
			t.Fatal(err)
		}
	}
	return resp.Code, body.ConsumerIDList
}

func TestHeartbeatRegistersAndNotifies(t *testing.T) {
	e := servedEnv(t)
	a, b := e.peer(t, "10.0.0.1@a"), e.peer(t, "10.0.0.2@b")

	resp := a.heartbeat(t, "g1", "T")
	if resp.Ext(ExtSupportHeartbeatV2) != "true" || resp.Ext(ExtSubChange) != "true" {
		t.Fatalf("heartbeat ext %v", resp.ExtFields)
	}
	// %RETRY%g1 created with the group's retryQueueNums, perm 6, and registration triggered.
	tc, ok := e.topics.Get("%RETRY%g1")
	if !ok || tc.ReadQueueNums != 1 || tc.WriteQueueNums != 1 || tc.Perm != 6 {
		t.Fatalf("retry topic %+v %v", tc, ok)
	}
	if e.triggers.Load() != 1 {
		t.Fatalf("registration triggered %d times", e.triggers.Load())
	}
	if !e.subs.Contains("g1") {
		t.Fatal("subscription group not auto-created")
	}
	// The newcomer is told too (as by Java): a client whose first
	// heartbeat reaches a restarted broker rebalances at once.
	a.expectNotify(t, "g1")
	a.expectNoNotify(t)

	b.heartbeat(t, "g1", "T")
	a.expectNotify(t, "g1")
	b.expectNotify(t, "g1")

	if c, ids := e.consumerList(t, a, "g1"); c != code.Success || !slices.Equal(ids, []string{"10.0.0.1@a", "10.0.0.2@b"}) {
		t.Fatalf("consumer list %d %v", c, ids)
	}

	// An unchanged heartbeat notifies nobody.
	a.heartbeat(t, "g1", "T")
	b.expectNoNotify(t)
	a.expectNoNotify(t)

	// A subscription change (topic added) notifies the group.
	a.heartbeat(t, "g1", "T", "T2")
	b.expectNotify(t, "g1")
	a.expectNotify(t, "g1")
	if s, ok := e.p.Consumers().RegisteredSubscription("g1", "T2"); !ok || s.Topic != "T2" {
		t.Fatal("subscription not replaced")
	}
	if e.triggers.Load() != 1 {
		t.Fatal("retry topic re-created")
	}

	// Connection close: forgotten at once, the rest is told.
	_ = b.c.Close()
	a.expectNotify(t, "g1")
	if c, ids := e.consumerList(t, a, "g1"); c != code.Success || !slices.Equal(ids, []string{"10.0.0.1@a"}) {
		t.Fatalf("after close: %d %v", c, ids)
	}
	if !e.p.Producers().GroupOnline("PG") {
		t.Fatal("producer group lost")
	}
}

func TestNotifyDisabled(t *testing.T) {
	// noNotify joins peers a and b to g1: neither may be told.
	noNotify := func(t *testing.T, e *env) {
		t.Helper()
		a, b := e.peer(t, "a"), e.peer(t, "b")
		a.heartbeat(t, "g1", "T")
		b.heartbeat(t, "g1", "T")
		a.expectNoNotify(t)
		b.expectNoNotify(t)
	}
	t.Run("group flag", func(t *testing.T) {
		e := newEnv(t)
		sg := subscription.NewGroupConfig("g1")
		sg.NotifyConsumerIdsChangedEnable = false
		if err := e.subs.Update(sg); err != nil {
			t.Fatal(err)
		}
		e.serve(t)
		noNotify(t, e)
	})
	t.Run("broker flag", func(t *testing.T) {
		e := servedEnv(t, func(c *config.Config) { c.NotifyConsumerIdsChangedEnable = false })
		noNotify(t, e)
	})
	t.Run("broadcasting", func(t *testing.T) {
		e := servedEnv(t)
		a, b := e.peer(t, "a"), e.peer(t, "b")
		body := strings.Replace(string(heartbeatBody("a", "g1", "T")), Clustering, Broadcasting, 1)
		a.invoke(t, remoting.NewRequest(code.HeartBeat, nil, []byte(body)))
		body = strings.Replace(string(heartbeatBody("b", "g1", "T")), Clustering, Broadcasting, 1)
		b.invoke(t, remoting.NewRequest(code.HeartBeat, nil, []byte(body)))
		a.expectNoNotify(t)
	})
}

func TestHeartbeatBadInput(t *testing.T) {
	e := servedEnv(t)
	a := e.peer(t, "a")
	tests := []struct {
		name   string
		body   string
		remark string
	}{
		{"empty", "", "empty heartbeat"},
		{"malformed", `{"clientID":"a","consumerDataSet":[{`, "decode heartbeat"},
		{"wrong type", `{"clientID":["a"]}`, "decode heartbeat"},
		{"no client id", `{"producerDataSet":[{"groupName":"PG"}]}`, "clientID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := a.invoke(t, remoting.NewRequest(code.HeartBeat, nil, []byte(tt.body)))
			if resp.Code != code.InvalidParameter || !strings.Contains(resp.Remark, tt.remark) {
				t.Fatalf("%d %q", resp.Code, resp.Remark)
			}
		})
	}
}

func TestHeartbeatUnknownGroupWithoutAutoCreate(t *testing.T) {
	e := servedEnv(t, func(c *config.Config) { c.AutoCreateSubscriptionGroup = false })
	a := e.peer(t, "a")
	a.heartbeat(t, "g-unknown", "T")
	if _, ok := e.p.Consumers().GroupInfo("g-unknown"); ok {
		t.Fatal("consumer of an unknown group registered")
	}
	if e.topics.Contains("%RETRY%g-unknown") {
		t.Fatal("retry topic created for unknown group")
	}
	if !e.p.Producers().GroupOnline("PG") {
		t.Fatal("producer not registered")
	}
}

// TestHeartbeatWithoutProducerRegistration: enableRegisterProducer=false
// adds no producer while rejectTransactionMessage=true (Java's
// ProducerManager.registerProducer); either key alone changes nothing.
func TestHeartbeatWithoutProducerRegistration(t *testing.T) {
	for _, tc := range []struct {
		register, reject bool
		want             bool
	}{
		{register: false, reject: true, want: false},
		{register: false, reject: false, want: true},
		{register: true, reject: true, want: true},
	} {
		e := servedEnv(t, func(c *config.Config) {
			c.EnableRegisterProducer, c.RejectTransactionMessage = tc.register, tc.reject
		})
		a := e.peer(t, "a")
		a.heartbeat(t, "g1", "T")
		if got := e.p.Producers().GroupOnline("PG"); got != tc.want {
			t.Errorf("enableRegisterProducer=%v rejectTransactionMessage=%v: producer registered %v, want %v", tc.register, tc.reject, got, tc.want)
		}
	}
}

func TestHeartbeatV2(t *testing.T) {
	e := servedEnv(t)
	a := e.peer(t, "a")
	send := func(fp int64, withoutSub bool, topics ...string) *remoting.Command {
		var hb map[string]any
		_ = json.Unmarshal(heartbeatBody("a", "g1", topics...), &hb)
		hb["heartbeatFingerprint"], hb["withoutSub"] = fp, withoutSub
		b, _ := json.Marshal(hb)
		return a.invoke(t, remoting.NewRequest(code.HeartBeat, nil, b))
	}
	// Broker knows nothing yet and the client omits subscriptions: ask for them.
	if r := send(11, true); r.Ext(ExtSubChange) != "true" {
		t.Fatalf("withoutSub on unknown group: %v", r.ExtFields)
	}
	if r := send(11, false, "T"); r.Ext(ExtSubChange) != "false" {
		t.Fatalf("full v2: %v", r.ExtFields)
	}
	if r := send(11, true); r.Ext(ExtSubChange) != "false" {
		t.Fatalf("same fingerprint: %v", r.ExtFields)
	}
	if _, ok := e.p.Consumers().RegisteredSubscription("g1", "T"); !ok {
		t.Fatal("withoutSub dropped the subscriptions")
	}
	if r := send(12, true); r.Ext(ExtSubChange) != "true" {
		t.Fatalf("new fingerprint: %v", r.ExtFields)
	}
}

func TestUnregisterClient(t *testing.T) {
	e := servedEnv(t)
	a, b := e.peer(t, "a"), e.peer(t, "b")
	a.heartbeat(t, "g1", "T")
	b.heartbeat(t, "g1", "T")
	a.expectNotify(t, "g1")

	resp := b.invoke(t, remoting.NewRequest(code.UnregisterClient, map[string]string{"clientID": "b", "consumerGroup": "g1", "producerGroup": "PG"}, nil))
	if resp.Code != code.Success {
		t.Fatalf("unregister: %d %s", resp.Code, resp.Remark)
	}
	a.expectNotify(t, "g1")
	if ids := e.p.Consumers().ClientIDs("g1"); !slices.Equal(ids, []string{"a"}) {
		t.Fatalf("ids %v", ids)
	}
	if got := e.p.Producers().Channels("PG"); len(got) != 1 || got[0].ClientID != "a" {
		t.Fatalf("producers %+v", got)
	}
	resp = b.invoke(t, remoting.NewRequest(code.UnregisterClient, nil, nil))
	if resp.Code != code.InvalidParameter {
		t.Fatalf("missing clientID: %d", resp.Code)
	}
}

func TestChannelExpiry(t *testing.T) {
	e := servedEnv(t)
	a, b := e.peer(t, "a"), e.peer(t, "b")
	a.heartbeat(t, "g1", "T")
	e.clock.Advance(100 * time.Second)
	b.heartbeat(t, "g1", "T")
	a.expectNotify(t, "g1")

	e.clock.Advance(21 * time.Second) // a silent for 121 s, b for 21 s
	e.p.ScanNotActiveChannels()
	if ids := e.p.Consumers().ClientIDs("g1"); !slices.Equal(ids, []string{"b"}) {
		t.Fatalf("after expiry: %v", ids)
	}
	b.expectNotify(t, "g1")
	if chans := e.p.Producers().Channels("PG"); len(chans) != 1 || chans[0].ClientID != "b" {
		t.Fatalf("producers after expiry: %+v", chans)
	}
	// Java closes an expired channel: a's next request must redial.
	testutil.Eventually(t, 3*time.Second, func() error {
		if n := len(e.srv.Channels()); n != 1 {
			return fmt.Errorf("expired channel not closed: %d open", n)
		}
		return nil
	})

	e.clock.Advance(121 * time.Second)
	e.p.ScanNotActiveChannels()
	if _, ok := e.p.Consumers().GroupInfo("g1"); ok {
		t.Fatal("group kept after all channels expired")
	}
	if e.p.Producers().GroupOnline("PG") {
		t.Fatal("producer group kept")
	}
}

func TestConnectionLists(t *testing.T) {
	e := servedEnv(t)
	a := e.peer(t, "10.0.0.1@a")
	a.heartbeat(t, "g1", "T")

	resp := a.invoke(t, remoting.NewRequest(code.GetConsumerConnectionList, map[string]string{"consumerGroup": "g1"}, nil))
	if resp.Code != code.Success {
		t.Fatalf("203: %d %s", resp.Code, resp.Remark)
	}
	var cc struct {
		ConnectionSet []struct {
			ClientAddr string `json:"clientAddr"`
			ClientID   string `json:"clientId"`
			Language   string `json:"language"`
			Version    int    `json:"version"`
		} `json:"connectionSet"`
		ConsumeFromWhere  string                     `json:"consumeFromWhere"`
		ConsumeType       string                     `json:"consumeType"`
		MessageModel      string                     `json:"messageModel"`
		SubscriptionTable map[string]json.RawMessage `json:"subscriptionTable"`
	}
	if err := json.Unmarshal(resp.Body, &cc); err != nil {
		t.Fatal(err)
	}
	if len(cc.ConnectionSet) != 1 || cc.ConnectionSet[0].ClientID != "10.0.0.1@a" || cc.ConnectionSet[0].Language != "GO" ||
		cc.ConnectionSet[0].Version != int(remoting.CurrentVersion) || !strings.HasPrefix(cc.ConnectionSet[0].ClientAddr, "127.0.0.1:") {
		t.Fatalf("connections %+v", cc.ConnectionSet)
	}
	if cc.ConsumeType != ConsumePassively || cc.MessageModel != Clustering || cc.ConsumeFromWhere != "CONSUME_FROM_LAST_OFFSET" {
		t.Fatalf("group info %+v", cc)
	}
	if !strings.HasPrefix(string(cc.SubscriptionTable["T"]), `{"classFilterMode":false,"codeSet":[]`) {
		t.Fatalf("subscription table %s", resp.Body)
	}

	resp = a.invoke(t, remoting.NewRequest(code.GetConsumerConnectionList, map[string]string{"consumerGroup": "nope"}, nil))
	if resp.Code != code.ConsumerNotOnline {
		t.Fatalf("203 unknown: %d", resp.Code)
	}
	resp = a.invoke(t, remoting.NewRequest(code.GetProducerConnectionList, map[string]string{"producerGroup": "PG"}, nil))
	if resp.Code != code.Success || !strings.Contains(string(resp.Body), `"clientId":"10.0.0.1@a"`) {
		t.Fatalf("204: %d %s", resp.Code, resp.Body)
	}
	resp = a.invoke(t, remoting.NewRequest(code.GetProducerConnectionList, map[string]string{"producerGroup": "nope"}, nil))
	if resp.Code != code.SystemError || !strings.Contains(resp.Remark, "not exist") {
		t.Fatalf("204 unknown: %d %s", resp.Code, resp.Remark)
	}
	if c, _ := e.consumerList(t, a, "nope"); c != code.SystemError {
		t.Fatalf("38 unknown group: %d", c)
	}
	resp = a.invoke(t, remoting.NewRequest(code.GetConsumerListByGroup, nil, nil))
	if resp.Code != code.InvalidParameter || !strings.Contains(resp.Remark, "consumerGroup") {
		t.Fatalf("38 missing field: %d %s", resp.Code, resp.Remark)
	}
	resp = a.invoke(t, remoting.NewRequest(code.GetConsumerListByGroup, map[string]string{"consumerGroup": "nope"}, nil))
	if resp.Remark != "no consumer for this group, nope" {
		t.Fatalf("38 remark %q", resp.Remark)
	}
}

func TestProducerLookups(t *testing.T) {
	e := servedEnv(t)
	var last *peer
	for i := range 3 {
		last = e.peer(t, fmt.Sprintf("p%d", i))
		last.heartbeat(t, "")
	}
	pm := e.p.Producers()
	if len(pm.Channels("PG")) != 3 || pm.FindChannel("p1") == nil || pm.FindChannel("zz") != nil {
		t.Fatalf("channels %+v", pm.Channels("PG"))
	}
	seen := map[*remoting.Channel]bool{}
	for range 6 {
		ch := pm.AvailableChannel("PG")
		if ch == nil || !ch.IsActive() {
			t.Fatal("no available channel")
		}
		seen[ch] = true
	}
	if len(seen) != 3 {
		t.Fatalf("round robin visited %d channels", len(seen))
	}
	if pm.AvailableChannel("none") != nil {
		t.Fatal("channel for unknown group")
	}

	// GET_ALL_PRODUCER_INFO (328) lists every connection of every group.
	resp := last.invoke(t, remoting.NewRequest(code.GetAllProducerInfo, nil, nil))
	var table ProducerTableInfo
	if resp.Code != code.Success {
		t.Fatalf("328: %d %s", resp.Code, resp.Remark)
	}
	if err := json.Unmarshal(resp.Body, &table); err != nil {
		t.Fatalf("328 body %s: %v", resp.Body, err)
	}
	pg := table.Data["PG"]
	if len(table.Data) != 1 || len(pg) != 3 {
		t.Fatalf("328 body %s", resp.Body)
	}
	for i, info := range pg {
		if info.ClientID != fmt.Sprintf("p%d", i) || !strings.HasPrefix(info.RemoteIP, "/127.0.0.1:") || info.Language == "" || info.LastUpdateTimestamp <= 0 {
			t.Fatalf("328 entry %d: %+v", i, info)
		}
	}
}

func TestConsumerManagerLookups(t *testing.T) {
	cm := NewConsumerManager(ManagerOptions{})
	sub := SubscriptionData{Topic: "T", SubString: "*", SubVersion: 1}
	added, changed, _ := cm.Register("g", ChannelInfo{ClientID: "c1"}, ConsumePassively, Clustering, "", []SubscriptionData{sub}, true)
	if !added || !changed {
		t.Fatalf("first register %v %v", added, changed)
	}
	// A newer version of the same topic replaces silently (Java).
	sub.SubString, sub.SubVersion = "a", 2
	if _, changed, _ = cm.Register("g", ChannelInfo{ClientID: "c1"}, ConsumePassively, Clustering, "", []SubscriptionData{sub}, true); changed {
		t.Fatal("version bump counted as change")
	}
	if s, _ := cm.RegisteredSubscription("g", "T"); s.SubString != "a" {
		t.Fatalf("not replaced: %+v", s)
	}
	// An older version does not replace.
	sub.SubString, sub.SubVersion = "old", 1
	cm.Register("g", ChannelInfo{ClientID: "c1"}, ConsumePassively, Clustering, "", []SubscriptionData{sub}, true)
	if s, _ := cm.RegisteredSubscription("g", "T"); s.SubString != "a" {
		t.Fatalf("older version replaced: %+v", s)
	}
	if m, ok := cm.MessageModel("g"); !ok || m != Clustering {
		t.Fatal("message model")
	}
	if gs := cm.GroupsByTopic("T"); !slices.Equal(gs, []string{"g"}) {
		t.Fatalf("groups by topic %v", gs)
	}
	cm.CompensateSubscription("g", SubscriptionData{Topic: "P", SubString: "*"})
	if _, ok := cm.FindSubscription("g", "P"); !ok {
		t.Fatal("compensated subscription not found")
	}
	if _, ok := cm.RegisteredSubscription("g", "P"); ok {
		t.Fatal("compensated subscription counted as registered")
	}
	if _, _, _ = cm.Register("g", ChannelInfo{ClientID: "c1"}, ConsumePassively, Clustering, "", nil, true); len(cm.GroupsByTopic("T")) != 0 {
		t.Fatal("topic index kept a dropped subscription")
	}
}

// TestHeartbeatAfterClose: a heartbeat whose connection closed before it
// was handled leaves no producer or consumer behind.
func TestHeartbeatAfterClose(t *testing.T) {
	e := newEnv(t)
	for _, closeFirst := range []bool{false, true} {
		ch := remoting.NewLocalChannel("127.0.0.1:10911", "127.0.0.1:5000", func(*remoting.Command) {})
		if closeFirst {
			_ = ch.Close()
		}
		req := remoting.NewRequest(code.HeartBeat, nil, heartbeatBody("late", "LG", "T"))
		resp, err := e.p.heartbeat(context.Background(), ch, req)
		if err != nil || resp.Code != code.Success {
			t.Fatalf("heartbeat: %v %+v", err, resp)
		}
		producers := len(e.p.Producers().Channels("PG"))
		_, consumer := e.p.d.Consumers.ChannelGroup("LG", ch)
		if closeFirst && (producers != 0 || consumer) {
			t.Fatalf("closed channel registered: %d producers, consumer %v", producers, consumer)
		}
		if !closeFirst && (producers != 1 || !consumer) {
			t.Fatalf("open channel not registered: %d producers, consumer %v", producers, consumer)
		}
		e.p.OnChannelClose(ch)
	}
}
