package lite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/lite/liteadmin"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

const (
	parent   = "OrderTopic"
	group    = "lite_cg"
	liteName = "user_10086"
	lmq      = "%LMQ%$OrderTopic$user_10086"
)

// TestLiteFlow is the seed flow in process: subscribe, a long-polling pop
// woken by the send, one CommitLog record and one LMQ entry, ack, idle
// expiry of everything, re-creation from offset 0.
func TestLiteFlow(t *testing.T) {
	r := newRig(t, nil, broker.WithLiteExpirationUnit(time.Second))
	r.createTopic(parent, "+message.type=LITE,+lite.topic.expiration=2", 4)
	r.createGroup(group, map[string]string{"+lite.bind.topic": parent})
	r.want("subscribe", r.subscribe("PARTIAL_ADD", "c1", group, parent, []string{liteName}, nil), code.Success, "")

	pending := r.popAsync("c1", group, parent, 8*time.Second)
	testutil.Eventually(t, 3*time.Second, func() error {
		var ci protocol.GetLiteClientInfoResponseBody
		r.admin(liteadmin.CodeGetLiteClientInfo, map[string]string{"parentTopic": parent, "group": group, "clientId": "c1"}, &ci)
		if ci.LastAccessTime == 0 {
			return fmt.Errorf("pop not parked yet")
		}
		return nil
	})
	st := r.b.Store()
	clBefore := st.CommitLog().MaxOffset()
	sent := time.Now()
	r.want("send", r.send(parent, 1, "hello", message.PropertyLiteTopic, liteName), code.Success, "")
	var resp = <-pending
	if waited := time.Since(sent); waited > 2*time.Second {
		t.Fatalf("long poll answered after %v: not woken by the event", waited)
	}
	p := decodePop(t, resp)
	if len(p.msgs) != 1 || string(p.msgs[0].Body) != "hello" || lmqOffset(p.msgs[0]) != 0 ||
		p.msgs[0].Properties[message.PropertyInnerMultiDispatch] != lmq || p.msgs[0].Properties[message.PropertyLiteTopic] != liteName {
		t.Fatalf("popped %+v", p.msgs)
	}
	if len(p.counts) != 1 || p.counts[0] != "0" {
		t.Fatalf("orderCountInfo %v", p.counts)
	}
	// One CommitLog record, one entry in the parent queue, one in the LMQ.
	rec, err := st.ReadRecord(clBefore)
	if err != nil {
		t.Fatal(err)
	}
	m, n, err := message.DecodeStored(rec, message.DecodeOptions{})
	if err != nil || int64(n) != st.CommitLog().MaxOffset()-clBefore || m.Topic != parent {
		t.Fatalf("CommitLog record %v (%d bytes of %d): %+v", err, n, st.CommitLog().MaxOffset()-clBefore, m)
	}
	if st.MaxOffset(parent, 1) != 1 || st.MaxOffset(lmq, 0) != 1 {
		t.Fatalf("parent queue max %d, lmq max %d", st.MaxOffset(parent, 1), st.MaxOffset(lmq, 0))
	}
	pe, _, _ := st.ConsumeQueue().Entry(parent, 1, 0)
	le, _, _ := st.ConsumeQueue().Entry(lmq, 0, 0)
	if pe.CommitLogOffset != le.CommitLogOffset || pe.StoreTimestamp != le.StoreTimestamp || le.CommitLogOffset != clBefore {
		t.Fatalf("parent entry %+v, lmq entry %+v", pe, le)
	}

	// FIFO: un-acked and invisible, the lite topic is blocked.
	r.want("send 2", r.send(parent, 2, "second", message.PropertyLiteTopic, liteName), code.Success, "")
	if resp := r.pop("c1", group, parent, 32, 30*time.Second, 0); resp.Code != code.PollingTimeout {
		t.Fatalf("pop while blocked: code %d %q", resp.Code, resp.Remark)
	}
	r.want("ack", r.ack(code.AckMessage, group, parent, liteName, 0, p, nil), code.Success, "")
	var gi protocol.GetLiteGroupInfoResponseBody
	r.admin(liteadmin.CodeGetLiteGroupInfo, map[string]string{"group": group, "liteTopic": liteName}, &gi)
	if gi.LiteTopicOffsetWrapper == nil || gi.LiteTopicOffsetWrapper.ConsumerOffset != 1 || gi.TotalLagCount != 1 {
		t.Fatalf("after ack: %+v %+v", gi, gi.LiteTopicOffsetWrapper)
	}
	// The ack announced the backlog: the second message pops at once.
	p2 := decodePop(t, r.pop("c1", group, parent, 32, 30*time.Second, 2*time.Second))
	if len(p2.msgs) != 1 || string(p2.msgs[0].Body) != "second" || lmqOffset(p2.msgs[0]) != 1 {
		t.Fatalf("second pop %+v", p2.msgs)
	}
	r.want("ack 2", r.ack(liteadminAckLite, group, parent, liteName, 1, p2, nil), code.Success, "")

	// Idle past the expiration (2 units of 1 s): offsets, subscription,
	// keys and counters go.
	// The queue goes first, then (the sweep's cascade) the group offset.
	testutil.Eventually(t, 10*time.Second, func() error {
		if _, ok := st.ConsumeQueue().State(lmq, 0); ok {
			return fmt.Errorf("lmq still exists")
		}
		if _, ok := st.QueryOffset(group, lmq, 0); ok {
			return fmt.Errorf("group offset still there")
		}
		var ci protocol.GetLiteClientInfoResponseBody
		r.admin(liteadmin.CodeGetLiteClientInfo, map[string]string{"parentTopic": parent, "group": group, "clientId": "c1"}, &ci)
		if ci.LiteTopicCount != 0 {
			return fmt.Errorf("subscription still there: %+v", ci)
		}
		return nil
	})
	if es, _ := st.ConsumeQueue().Entries(lmq, 0, 0, 10); len(es) != 0 {
		t.Fatalf("entries survived: %v", es)
	}
	if st.LmqCount() != 0 || st.MaxOffset(parent, 1) != 1 {
		t.Fatalf("lmq count %d, parent max %d", st.LmqCount(), st.MaxOffset(parent, 1))
	}

	// A new message re-creates it from offset 0.
	r.want("resubscribe", r.subscribe("PARTIAL_ADD", "c1", group, parent, []string{liteName}, nil), code.Success, "")
	r.want("send 3", r.send(parent, 0, "again", message.PropertyLiteTopic, liteName), code.Success, "")
	p3 := decodePop(t, r.pop("c1", group, parent, 32, 30*time.Second, 3*time.Second))
	if len(p3.msgs) != 1 || string(p3.msgs[0].Body) != "again" || lmqOffset(p3.msgs[0]) != 0 {
		t.Fatalf("re-created pop %+v", p3.msgs)
	}
}

const liteadminAckLite = code.AckLiteMessage

// TestLiteBadInput: illegal lite names and lite properties on a non-LITE
// topic are refused without creating an LMQ; quotas; pops of a group not
// bound to the parent; malformed requests.
func TestLiteBadInput(t *testing.T) {
	r := newRig(t, func(c *config.Config) { c.MaxLiteSubscriptionCount = 5 })
	r.createTopic(parent, "+message.type=LITE", 1)
	r.createGroup(group, map[string]string{"+lite.bind.topic": parent, "+lite.sub.client.quota": "2"})
	// Bound before "Plain" exists (a group bound to an existing non-LITE
	// topic is refused at creation): pops and subscriptions check at use.
	r.createGroup("other_cg", map[string]string{"+lite.bind.topic": "Plain"})
	r.createTopic("Plain", "", 1)
	r.createGroup("plain_cg", nil)
	st := r.b.Store()
	for _, bad := range []string{"a$b", "a,b", " ", "x.y", "%LMQ%", string(make([]byte, 65))} {
		r.want("send lite "+fmt.Sprintf("%q", bad), r.send(parent, 0, "x", message.PropertyLiteTopic, bad), code.MessageIllegal, "lite topic")
	}
	r.want("lite on plain topic", r.send("Plain", 0, "x", message.PropertyLiteTopic, "ok"), code.MessageIllegal, "not a LITE topic")
	time.Sleep(100 * time.Millisecond)
	if st.LmqCount() != 0 || st.MaxOffset(parent, 0) != 0 {
		t.Fatalf("bad sends stored something: %d LMQs, parent max %d", st.LmqCount(), st.MaxOffset(parent, 0))
	}

	// Subscriptions.
	r.want("empty ctl", r.invoke(code.LiteSubscriptionCtl, nil, nil), code.IllegalOperation, "null")
	r.want("empty set", r.invoke(code.LiteSubscriptionCtl, nil, []byte(`{"subscriptionSet":[]}`)), code.IllegalOperation, "empty")
	r.want("bad json", r.invoke(code.LiteSubscriptionCtl, nil, []byte(`{`)), code.IllegalOperation, "")
	r.want("client quota", r.subscribe("PARTIAL_ADD", "c1", group, parent, []string{"a", "b", "c"}, nil), code.LiteSubscriptionQuotaExceeded, "quota")
	r.want("illegal name", r.subscribe("PARTIAL_ADD", "c1", group, parent, []string{"a$b"}, nil), code.InvalidParameter, "illegal lite topic")
	r.want("unbound group", r.subscribe("PARTIAL_ADD", "c1", "plain_cg", parent, []string{"a"}, nil), code.IllegalOperation, "not bound")
	r.want("unknown group", r.subscribe("PARTIAL_ADD", "c1", "nope_cg", parent, []string{"a"}, nil), code.IllegalOperation, "does not exist")
	r.want("non-lite parent", r.subscribe("PARTIAL_ADD", "c1", "other_cg", "Plain", []string{"a"}, nil), code.IllegalOperation, "not a LITE topic")
	for i := 0; i < 2; i++ {
		r.want("within quota", r.subscribe("PARTIAL_ADD", fmt.Sprintf("q%d", i), group, parent, []string{"a", "b"}, nil), code.Success, "")
	}
	r.want("broker quota", r.subscribe("PARTIAL_ADD", "q9", group, parent, []string{"a", "b"}, nil), code.LiteSubscriptionQuotaExceeded, "maxLiteSubscriptionCount")

	// Pops.
	r.want("pop unbound group", r.pop("c1", "plain_cg", parent, 1, time.Second, 0), code.InvalidParameter, "not bound")
	r.want("pop other parent", r.pop("c1", "other_cg", parent, 1, time.Second, 0), code.InvalidParameter, "not bound")
	r.want("pop plain topic", r.pop("c1", "other_cg", "Plain", 1, time.Second, 0), code.InvalidParameter, "not a LITE topic")
	r.want("pop unknown topic", r.pop("c1", group, "NoSuch", 1, time.Second, 0), code.TopicNotExist, "")
	r.want("pop unknown group", r.pop("c1", "nope_cg", parent, 1, time.Second, 0), code.SubscriptionGroupNotExist, "")
	r.want("pop too many", r.pop("c1", group, parent, 33, time.Second, 0), code.InvalidParameter, "maxMsgNum")
	ext := popExt("c1", group, parent, 1, time.Second, 0)
	delete(ext, "clientId")
	r.want("pop without clientId", r.invoke(code.PopLiteMessage, ext, nil), code.InvalidParameter, "clientId")
	ext = popExt("c1", group, parent, 1, time.Second, time.Second)
	ext["bornTime"] = "1000"
	r.want("pop expired", r.invoke(code.PopLiteMessage, ext, nil), code.PollingTimeout, "")
	r.want("pop nothing", r.pop("c1", group, parent, 1, time.Second, 0), code.PollingTimeout, "")

	// Acks.
	p := popped{popTime: 1, invisible: 1}
	r.want("ack bad lite", r.ack(code.AckMessage, group, parent, "a$b", 0, p, nil), code.InvalidParameter, "liteTopic")
	r.want("ack wrong group", r.ack(code.AckMessage, "plain_cg", parent, "a", 0, p, nil), code.InvalidParameter, "bind topic")
	r.want("ack beyond max", r.ack(code.AckMessage, group, parent, "a", 5, p, nil), code.NoMessage, "")
	r.want("ack bad queue", r.ack(code.AckMessage, group, parent, "a", 0, p, map[string]string{"queueId": "3"}), code.MessageIllegal, "queueId")
	r.want("ack bad extra", r.ack(code.AckMessage, group, parent, "a", 0, p, map[string]string{"extraInfo": "x"}), code.InvalidParameter, "extraInfo")
	r.want("ack lite without liteTopic", r.ack(liteadminAckLite, group, parent, "", 0, p, nil), code.InvalidParameter, "liteTopic")

	// Admin.
	r.want("parent info plain", r.admin(liteadmin.CodeGetParentTopicInfo, map[string]string{"topic": "Plain"}, nil), code.InvalidParameter, "type not match")
	r.want("parent info missing", r.admin(liteadmin.CodeGetParentTopicInfo, map[string]string{"topic": "NoSuch"}, nil), code.TopicNotExist, "")
	r.want("parent info no header", r.admin(liteadmin.CodeGetParentTopicInfo, nil, nil), code.InvalidParameter, "topic")
	r.want("client info bad count", r.admin(liteadmin.CodeGetLiteClientInfo, map[string]string{"parentTopic": parent, "group": group, "maxCount": "0"}, nil), code.InvalidParameter, "maxCount")
	r.want("group info non-lite", r.admin(liteadmin.CodeGetLiteGroupInfo, map[string]string{"group": "plain_cg"}, nil), code.InvalidParameter, "not a LITE group")
	r.want("trigger unknown", r.admin(liteadmin.CodeTriggerLiteDispatch, map[string]string{"group": "nope_cg"}, nil), code.SubscriptionGroupNotExist, "")
	r.want("list bad limit", r.admin(liteadmin.CodeListLiteTopics, map[string]string{"parentTopic": parent, "limit": "5000"}, nil), code.InvalidParameter, "limit")
}

// TestLiteConsumption: redelivery after the invisible time with a higher
// consume count, change invisible time, offset option reset, exclusive
// eviction pushed to the evicted client, full dispatch of events that did
// not fit, and the admin bodies.
func TestLiteConsumption(t *testing.T) {
	r := newRig(t, func(c *config.Config) {
		c.LiteEventFullDispatchDelayTime = 300 * time.Millisecond
	})
	r.createTopic(parent, "+message.type=LITE,+lite.topic.expiration=60", 2)
	r.createGroup(group, map[string]string{"+lite.bind.topic": parent, "+lite.sub.client.max.event.cnt": "10"})
	r.want("subscribe", r.subscribe("PARTIAL_ADD", "c1", group, parent, []string{"a"}, nil), code.Success, "")
	r.want("send", r.send(parent, 0, "m0", message.PropertyLiteTopic, "a"), code.Success, "")
	p := decodePop(t, r.pop("c1", group, parent, 32, 300*time.Millisecond, 3*time.Second))
	if len(p.msgs) != 1 || p.counts[0] != "0" {
		t.Fatalf("first pop %+v %v", p.msgs, p.counts)
	}
	// Not acked: after the invisible time the same message comes back,
	// counted once more (the release timer re-announces the lite topic).
	p = decodePop(t, r.pop("c1", group, parent, 32, 30*time.Second, 3*time.Second))
	if len(p.msgs) != 1 || string(p.msgs[0].Body) != "m0" || p.counts[0] != "1" {
		t.Fatalf("redelivery %+v %v", p.msgs, p.counts)
	}
	// Change invisible time to 0: visible again at once.
	resp := r.ack(code.ChangeMessageInvisible, group, parent, "a", 0, p, map[string]string{"invisibleTime": "0"})
	r.want("change invisible", resp, code.Success, "")
	if resp.ExtFields["popTime"] != fmt.Sprint(p.popTime) || resp.ExtFields["reviveQid"] != "999" {
		t.Fatalf("change invisible header %v", resp.ExtFields)
	}
	r.want("trigger", r.admin(liteadmin.CodeTriggerLiteDispatch, map[string]string{"group": group, "clientId": "c1"}, nil), code.Success, "")
	p = decodePop(t, r.pop("c1", group, parent, 32, 30*time.Second, 3*time.Second))
	if len(p.msgs) != 1 || p.counts[0] != "2" {
		t.Fatalf("after change invisible %+v %v", p.msgs, p.counts)
	}
	r.want("ack", r.ack(code.AckMessage, group, parent, "a", 0, p, nil), code.Success, "")
	// A stale receipt (other popTime) is ignored; the offset stays.
	r.want("stale ack", r.ack(code.AckMessage, group, parent, "a", 0, popped{popTime: 5, invisible: 1}, nil), code.Success, "")

	// Offset option MIN: consume the lite topic again from 0.
	r.want("reset", r.subscribe("PARTIAL_ADD", "c1", group, parent, []string{"a"}, map[string]any{"type": "POLICY", "value": 1}), code.Success, "")
	p = decodePop(t, r.pop("c1", group, parent, 32, 30*time.Second, 3*time.Second))
	if len(p.msgs) != 1 || lmqOffset(p.msgs[0]) != 0 {
		t.Fatalf("after reset to MIN %+v", p.msgs)
	}
	r.want("ack after reset", r.ack(code.AckMessage, group, parent, "a", 0, p, nil), code.Success, "")

	// 15 lite topics, event sets of 10: the rest comes by full dispatch.
	var lites []string
	for i := 0; i < 15; i++ {
		lites = append(lites, fmt.Sprintf("s%02d", i))
	}
	r.want("subscribe 15", r.subscribe("PARTIAL_ADD", "c1", group, parent, lites, nil), code.Success, "")
	for _, l := range lites {
		r.want("send "+l, r.send(parent, 1, l, message.PropertyLiteTopic, l), code.Success, "")
	}
	got := map[string]bool{}
	testutil.Eventually(t, 8*time.Second, func() error {
		resp := r.pop("c1", group, parent, 32, 30*time.Second, 500*time.Millisecond)
		if resp.Code == code.Success {
			p := decodePop(t, resp)
			for _, m := range p.msgs {
				got[string(m.Body)] = true
				r.want("ack "+string(m.Body), r.ack(code.AckMessage, group, parent, string(m.Body), lmqOffset(m), p, nil), code.Success, "")
			}
		}
		if len(got) < 15 {
			return fmt.Errorf("popped %d of 15", len(got))
		}
		return nil
	})

	// Admin bodies.
	var bi protocol.GetBrokerLiteInfoResponseBody
	r.admin(liteadmin.CodeGetBrokerLiteInfo, nil, &bi)
	if bi.CurrentLmqNum != 16 || bi.LiteSubscriptionCount != 16 || bi.TopicMeta[parent] != 60 || len(bi.GroupMeta[parent]) != 1 || bi.StoreType == "" {
		t.Fatalf("broker lite info %+v", bi)
	}
	var pi protocol.GetParentTopicInfoResponseBody
	r.admin(liteadmin.CodeGetParentTopicInfo, map[string]string{"topic": parent}, &pi)
	if pi.Topic != parent || pi.TTL != 60 || pi.LiteTopicCount != 16 || len(pi.Groups) != 1 || pi.Groups[0] != group {
		t.Fatalf("parent info %+v", pi)
	}
	var ti protocol.GetLiteTopicInfoResponseBody
	r.admin(liteadmin.CodeGetLiteTopicInfo, map[string]string{"parentTopic": parent, "liteTopic": "a"}, &ti)
	if ti.TopicOffset == nil || ti.TopicOffset.MaxOffset != 1 || ti.TopicOffset.LastUpdateTimestamp <= 0 || len(ti.Subscriber) != 1 ||
		ti.Subscriber[0].ClientID != "c1" || !ti.ShardingToBroker {
		t.Fatalf("lite topic info %+v", ti)
	}
	var ci protocol.GetLiteClientInfoResponseBody
	r.admin(liteadmin.CodeGetLiteClientInfo, map[string]string{"parentTopic": parent, "group": group, "clientId": "c1", "maxCount": "3"}, &ci)
	if ci.LiteTopicCount != 16 || len(ci.LiteTopicSet) != 3 || ci.LastConsumeTime == 0 {
		t.Fatalf("client info %+v", ci)
	}
	// Backlog for the lag listing: two unconsumed messages on s00.
	r.want("backlog", r.send(parent, 0, "x", message.PropertyLiteTopic, "s00"), code.Success, "")
	r.want("backlog", r.send(parent, 0, "y", message.PropertyLiteTopic, "s00"), code.Success, "")
	testutil.Eventually(t, 2*time.Second, func() error {
		var gi protocol.GetLiteGroupInfoResponseBody
		r.admin(liteadmin.CodeGetLiteGroupInfo, map[string]string{"group": group, "topK": "5"}, &gi)
		if gi.TotalLagCount != 2 || len(gi.LagCountTopK) != 1 || gi.LagCountTopK[0].LiteTopic != "s00" || gi.EarliestUnconsumedTimestamp <= 0 {
			return fmt.Errorf("group info %+v", gi)
		}
		return nil
	})
	var page protocol.ListLiteTopicsResponseBody
	var names []string
	cursor := ""
	for {
		r.admin(liteadmin.CodeListLiteTopics, map[string]string{"parentTopic": parent, "cursor": cursor, "limit": "7"}, &page)
		for _, e := range page.LiteTopics {
			names = append(names, e.LiteTopic)
			if e.LiteTopic == "s00" && (e.MaxOffset != 3 || len(e.Groups) != 1 || e.Groups[0].Lag != 2 || e.Groups[0].ConsumerOffset != 1) {
				t.Fatalf("list entry %+v", e)
			}
		}
		if !page.HasMore {
			break
		}
		cursor = page.NextCursor
	}
	if len(names) != 16 || names[0] != "a" || names[15] != "s14" || page.Total != 16 {
		t.Fatalf("listing %v (total %d)", names, page.Total)
	}
}

// TestExclusiveEvictionNotify: in an Exclusive group a new subscriber
// evicts the holder, which receives NOTIFY_UNSUBSCRIBE_LITE on its
// connection.
func TestExclusiveEvictionNotify(t *testing.T) {
	r := newRig(t, nil)
	r.createTopic(parent, "+message.type=LITE", 1)
	r.createGroup("ex_cg", map[string]string{"+lite.bind.topic": parent, "+lite.sub.model": "Exclusive"})
	notified := make(chan map[string]string, 4)
	holder := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer holder.Close()
	holder.RegisterHandler(code.NotifyUnsubscribeLite, func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		notified <- req.ExtFields
		return nil, nil
	})
	body := []byte(`{"subscriptionSet":[{"action":"PARTIAL_ADD","clientId":"A","group":"ex_cg","topic":"OrderTopic","liteTopicSet":["x"]}]}`)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := holder.Invoke(ctx, r.b.Addr(), remoting.NewRequest(code.LiteSubscriptionCtl, nil, body))
	if err != nil || resp.Code != code.Success {
		t.Fatalf("holder subscribe: %v %v", resp, err)
	}
	r.want("B takes over", r.subscribe("PARTIAL_ADD", "B", "ex_cg", parent, []string{"x"}, nil), code.Success, "")
	select {
	case ext := <-notified:
		if ext["liteTopic"] != "x" || ext["consumerGroup"] != "ex_cg" || ext["clientId"] != "A" {
			t.Fatalf("notify header %v", ext)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no NOTIFY_UNSUBSCRIBE_LITE")
	}
	var ti protocol.GetLiteTopicInfoResponseBody
	r.admin(liteadmin.CodeGetLiteTopicInfo, map[string]string{"parentTopic": parent, "liteTopic": "x"}, &ti)
	if len(ti.Subscriber) != 1 || ti.Subscriber[0].ClientID != "B" {
		t.Fatalf("subscribers %+v", ti.Subscriber)
	}
}
