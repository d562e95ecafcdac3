package lite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/lite/liteadmin"
	"github.com/rmqgo/rmq/broker/lite/naming"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/internal/testutil/fakens"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

// TestLiteSendWithoutLMQ: a broker without enableLmq or enableMultiDispatch
// refuses lite sends with NO_PERMISSION and stores nothing; plain sends to
// the parent still work.
func TestLiteSendWithoutLMQ(t *testing.T) {
	for _, tc := range []struct {
		name          string
		lmq, dispatch bool
	}{
		{"enableLmq=false", false, true},
		{"enableMultiDispatch=false", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(c *config.Config) { c.EnableLmq, c.EnableMultiDispatch = tc.lmq, tc.dispatch })
			r.createTopic(parent, "+message.type=LITE", 1)
			r.want("lite send", r.send(parent, 0, "x", message.PropertyLiteTopic, liteName), code.NoPermission, "enableLmq and enableMultiDispatch")
			st := r.b.Store()
			if st.MaxOffset(parent, 0) != 0 || st.LmqCount() != 0 {
				t.Fatalf("refused send stored something: parent max %d, %d LMQs", st.MaxOffset(parent, 0), st.LmqCount())
			}
			r.want("plain send to the parent", r.send(parent, 0, "x"), code.Success, "")
		})
	}
}

func notifyExt(clientID, grp, topic string, poll time.Duration) map[string]string {
	return map[string]string{
		"consumerGroup": grp, "topic": topic, "queueId": "0", "pollTime": strconv.FormatInt(poll.Milliseconds(), 10),
		"bornTime": strconv.FormatInt(time.Now().UnixMilli(), 10), "liteConsumer": "true", "clientId": clientID,
	}
}

// TestLiteNotification: NOTIFICATION with liteConsumer answers hasMsg from
// the client's event set, long-polls until the dispatcher places an event,
// and refuses bad requests; without the flag it is a regular notification.
func TestLiteNotification(t *testing.T) {
	r := newRig(t, nil)
	r.createTopic(parent, "+message.type=LITE", 1)
	r.createTopic("Plain", "", 1)
	r.createGroup(group, map[string]string{"+lite.bind.topic": parent})
	r.createGroup("plain_cg", nil)
	r.want("subscribe", r.subscribe("PARTIAL_ADD", "c1", group, parent, []string{liteName}, nil), code.Success, "")

	resp := r.invoke(code.Notification, notifyExt("c1", group, parent, 0), nil)
	r.want("notify, nothing yet", resp, code.Success, "")
	if resp.ExtFields["hasMsg"] != "false" || resp.ExtFields["pollingFull"] != "false" {
		t.Fatalf("empty event set: %v", resp.ExtFields)
	}

	// A parked notification is answered when the send places an event.
	out := remotingtest.InvokeAsync(t, r.client, r.b.Addr(),
		remoting.NewRequest(code.Notification, notifyExt("c1", group, parent, 8*time.Second), nil), 15*time.Second)
	svc := r.b.Lite()
	testutil.Eventually(t, 3*time.Second, func() error {
		if svc.Pop.ParkedNotifications() != 1 {
			return fmt.Errorf("notification not parked yet")
		}
		return nil
	})
	sent := time.Now()
	r.want("send", r.send(parent, 0, "hello", message.PropertyLiteTopic, liteName), code.Success, "")
	select {
	case resp = <-out:
	case <-time.After(6 * time.Second):
		t.Fatal("parked notification not answered after the send")
	}
	if waited := time.Since(sent); waited > 3*time.Second {
		t.Fatalf("answered after %v: not woken by the event", waited)
	}
	if resp.Code != code.Success || resp.ExtFields["hasMsg"] != "true" {
		t.Fatalf("woken notification: code %d %q %v", resp.Code, resp.Remark, resp.ExtFields)
	}
	// Not consumed by the notification: the pop still finds the message.
	if p := decodePop(t, r.pop("c1", group, parent, 32, 30*time.Second, 0)); len(p.msgs) != 1 {
		t.Fatalf("pop after the notification: %d messages", len(p.msgs))
	}

	// Expiry without an event answers hasMsg=false at the deadline.
	start := time.Now()
	resp = r.invoke(code.Notification, notifyExt("c1", group, parent, 300*time.Millisecond), nil)
	if resp.Code != code.Success || resp.ExtFields["hasMsg"] != "false" || time.Since(start) < 250*time.Millisecond {
		t.Fatalf("expired notification after %v: code %d %v", time.Since(start), resp.Code, resp.ExtFields)
	}

	bad := func(mutate func(map[string]string)) map[string]string {
		ext := notifyExt("c1", group, parent, 0)
		mutate(ext)
		return ext
	}
	for _, tc := range []struct {
		name   string
		ext    map[string]string
		code   int32
		remark string
	}{
		{"no clientId", bad(func(e map[string]string) { delete(e, "clientId") }), code.InvalidParameter, "clientId"},
		{"blank clientId", bad(func(e map[string]string) { e["clientId"] = " " }), code.InvalidParameter, "clientId"},
		{"no pollTime", bad(func(e map[string]string) { delete(e, "pollTime") }), code.InvalidParameter, "pollTime"},
		{"negative pollTime", bad(func(e map[string]string) { e["pollTime"] = "-1" }), code.InvalidParameter, "pollTime"},
		{"unknown topic", bad(func(e map[string]string) { e["topic"] = "NoSuch" }), code.TopicNotExist, ""},
		{"plain topic", bad(func(e map[string]string) { e["topic"] = "Plain" }), code.InvalidParameter, "not a LITE topic"},
		{"unknown group", bad(func(e map[string]string) { e["consumerGroup"] = "nope_cg" }), code.SubscriptionGroupNotExist, ""},
		{"unbound group", bad(func(e map[string]string) { e["consumerGroup"] = "plain_cg" }), code.InvalidParameter, "not bound"},
	} {
		r.want(tc.name, r.invoke(code.Notification, tc.ext, nil), tc.code, tc.remark)
	}
	// Without liteConsumer the regular pop notification answers.
	plain := notifyExt("c1", "plain_cg", "Plain", 0)
	delete(plain, "liteConsumer")
	resp = r.invoke(code.Notification, plain, nil)
	if resp.Code != code.Success || resp.ExtFields["hasMsg"] != "false" {
		t.Fatalf("regular notification: code %d %q %v", resp.Code, resp.Remark, resp.ExtFields)
	}
	plain["liteConsumer"] = "false"
	r.want("liteConsumer=false is a regular notification", r.invoke(code.Notification, plain, nil), code.Success, "")
}

// TestLiteOnSlave: a slave answers lite pops and acks as it answers regular
// pops and acks (SERVICE_NOT_AVAILABLE); the admin reads still work.
func TestLiteOnSlave(t *testing.T) {
	r := newRig(t, func(c *config.Config) {
		c.BrokerID = 1
		c.BrokerRole = config.RoleSlave
	})
	p := popped{popTime: 1, invisible: 1}
	r.want("lite pop", r.pop("c1", group, parent, 1, time.Second, 0), code.ServiceNotAvailable, "slave")
	r.want("lite ack", r.ack(code.AckMessage, group, parent, liteName, 0, p, nil), code.ServiceNotAvailable, "slave")
	r.want("lite ack 200072", r.ack(code.AckLiteMessage, group, parent, liteName, 0, p, nil), code.ServiceNotAvailable, "slave")
	r.want("lite change invisible", r.ack(code.ChangeMessageInvisible, group, parent, liteName, 0, p, map[string]string{"invisibleTime": "1000"}),
		code.ServiceNotAvailable, "slave")
	// The same code as a regular pop ack on the slave.
	r.want("regular ack", r.ack(code.AckMessage, group, parent, "", 0, p, nil), code.ServiceNotAvailable, "slave")
}

// TestLiteBindTopicValidation (#11087): lite.bind.topic must be a legal
// topic name and, when the topic exists here, a LITE topic.
func TestLiteBindTopicValidation(t *testing.T) {
	r := newRig(t, nil)
	r.createTopic(parent, "+message.type=LITE", 1)
	r.createTopic("Plain", "", 1)
	groupReq := func(name string, attrs map[string]string) *remoting.Command {
		body, _ := json.Marshal(map[string]any{"groupName": name, "consumeEnable": true, "attributes": attrs})
		return r.invoke(code.UpdateAndCreateSubscriptionGroup, nil, body)
	}
	for i, tc := range []struct {
		name   string
		attrs  map[string]string
		code   int32
		remark string
	}{
		{"blank", map[string]string{"+lite.bind.topic": ""}, code.InvalidParameter, "blank"},
		{"spaces", map[string]string{"+lite.bind.topic": "  "}, code.InvalidParameter, "blank"},
		{"illegal character", map[string]string{"+lite.bind.topic": "a$b"}, code.InvalidParameter, "illegal characters"},
		{"too long", map[string]string{"+lite.bind.topic": strings.Repeat("x", 128)}, code.InvalidParameter, "max length"},
		{"plain key", map[string]string{"lite.bind.topic": "a.b"}, code.InvalidParameter, "illegal characters"},
		{"existing non-LITE topic", map[string]string{"+lite.bind.topic": "Plain"}, code.InvalidParameter, "not a LITE topic"},
		{"LITE topic", map[string]string{"+lite.bind.topic": parent}, code.Success, ""},
		{"topic not created yet", map[string]string{"+lite.bind.topic": "Later"}, code.Success, ""},
		{"no bind topic", nil, code.Success, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.want(tc.name, groupReq("v_"+strconv.Itoa(i), tc.attrs), tc.code, tc.remark)
		})
	}
	// A refused update leaves the stored group as it was; other updates of
	// a lite group and removing the binding pass.
	r.createGroup("bound_cg", map[string]string{"+lite.bind.topic": parent})
	r.want("rebind to plain", groupReq("bound_cg", map[string]string{"+lite.bind.topic": "Plain"}), code.InvalidParameter, "not a LITE topic")
	r.want("subscribe still bound", r.subscribe("PARTIAL_ADD", "c1", "bound_cg", parent, []string{liteName}, nil), code.Success, "")
	r.want("other attribute", groupReq("bound_cg", map[string]string{"+lite.sub.client.quota": "5"}), code.Success, "")
	r.want("unbind", groupReq("bound_cg", map[string]string{"-lite.bind.topic": ""}), code.Success, "")
	r.want("subscribe unbound", r.subscribe("PARTIAL_ADD", "c1", "bound_cg", parent, []string{liteName}, nil), code.IllegalOperation, "not bound")
}

// TestLiteShardingTwoBrokers (docs/lite-topics.md §4.6): two in-process brokers behind one
// nameserver whose route of the parent has four write queues on each. A
// subscription takes effect only on the lite topic's home broker (the
// write queue its name hashes to), or where the lite topic already has
// messages; GET_LITE_TOPIC_INFO reports shardingToBroker accordingly.
func TestLiteShardingTwoBrokers(t *testing.T) {
	qd := func(b string) protocol.QueueData {
		return protocol.QueueData{BrokerName: b, Perm: 6, ReadQueueNums: 4, WriteQueueNums: 4}
	}
	bd := func(b string) protocol.BrokerData {
		return protocol.BrokerData{BrokerName: b, Cluster: "DefaultCluster", BrokerAddrs: map[int64]string{0: "127.0.0.1:1"}}
	}
	ns := fakens.Start(t)
	ns.SetRoute(parent, protocol.TopicRouteData{
		QueueDatas:  []protocol.QueueData{qd("broker-b"), qd("broker-a")}, // route order is by broker name
		BrokerDatas: []protocol.BrokerData{bd("broker-a"), bd("broker-b")},
	})
	rigs := map[string]*rig{}
	for _, name := range []string{"broker-a", "broker-b"} {
		r := newRig(t, func(c *config.Config) { c.NamesrvAddr, c.BrokerName = ns.Addr(), name })
		r.createTopic(parent, "+message.type=LITE", 4)
		r.createGroup(group, map[string]string{"+lite.bind.topic": parent})
		rigs[name] = r
	}
	queues := []string{"broker-a", "broker-a", "broker-a", "broker-a", "broker-b", "broker-b", "broker-b", "broker-b"}
	homes := map[string][]string{}
	for i := 0; len(homes["broker-a"]) < 3 || len(homes["broker-b"]) < 3; i++ {
		l := "u" + strconv.Itoa(i)
		h := queues[naming.HomeBucket(l, len(queues))]
		homes[h] = append(homes[h], l)
	}
	all := append(append([]string{}, homes["broker-a"][:2]...), homes["broker-b"][:2]...)
	clientSet := func(r *rig) []string {
		t.Helper()
		var ci protocol.GetLiteClientInfoResponseBody
		r.want("client info", r.admin(liteadmin.CodeGetLiteClientInfo, map[string]string{"parentTopic": parent, "group": group, "clientId": "c1"}, &ci), code.Success, "")
		var out []string
		for _, l := range ci.LiteTopicSet {
			if bare := naming.LiteOf(l); bare != "" {
				l = bare // lmq names: compare the bare lite names
			}
			out = append(out, l)
		}
		sort.Strings(out)
		return out
	}
	for name, r := range rigs {
		r.want("subscribe on "+name, r.subscribe("PARTIAL_ADD", "c1", group, parent, all, nil), code.Success, "")
		want := append([]string{}, homes[name][:2]...)
		sort.Strings(want)
		if got := clientSet(r); !slices.Equal(got, want) {
			t.Fatalf("%s holds %v of %v; want its home names %v", name, got, all, want)
		}
		for _, l := range all {
			var ti protocol.GetLiteTopicInfoResponseBody
			r.want("lite topic info", r.admin(liteadmin.CodeGetLiteTopicInfo, map[string]string{"parentTopic": parent, "liteTopic": l}, &ti), code.Success, "")
			if home := slices.Contains(homes[name], l); ti.ShardingToBroker != home {
				t.Fatalf("%s: shardingToBroker of %s = %v, want %v", name, l, ti.ShardingToBroker, home)
			}
		}
	}
	if ns.Calls(code.GetRouteInfoByTopic) == 0 {
		t.Fatal("the brokers never asked the nameserver for the route")
	}
	// A lite topic that already has messages on a broker is served there
	// too, whatever its home.
	r, foreign := rigs["broker-a"], homes["broker-b"][2]
	r.want("send to a non-home broker", r.send(parent, 0, "x", message.PropertyLiteTopic, foreign), code.Success, "")
	testutil.Eventually(t, 3*time.Second, func() error {
		if r.b.Store().MaxOffset(naming.LitePrefix+parent+"$"+foreign, 0) != 1 {
			return fmt.Errorf("lmq not dispatched yet")
		}
		return nil
	})
	r.want("subscribe the existing lite topic", r.subscribe("PARTIAL_ADD", "c1", group, parent, []string{foreign}, nil), code.Success, "")
	if got := clientSet(r); !slices.Contains(got, foreign) {
		t.Fatalf("broker-a holds %v: the existing lite topic %s was not subscribed", got, foreign)
	}
	if p := decodePop(t, r.pop("c1", group, parent, 32, 30*time.Second, 0)); len(p.msgs) != 1 || p.msgs[0].Properties[message.PropertyLiteTopic] != foreign {
		t.Fatalf("pop on broker-a: %+v", p.msgs)
	}
}

// TestLiteDeadLetter (docs/lite-topics.md §6.10): CONSUMER_SEND_MSG_BACK of a lite message is
// refused while its delivery count is below retryMaxTimes (no retry
// topic), and moves it to %DLQ%<group> once the count reaches it or with
// delayLevel -1: the copy keeps __LITE_TOPIC without the multi-dispatch
// properties, and the message is acked on its LMQ, so the next message of
// the lite topic is poppable at once.
func TestLiteDeadLetter(t *testing.T) {
	r := newRig(t, nil)
	r.createTopic(parent, "+message.type=LITE", 1)
	body, _ := json.Marshal(map[string]any{"groupName": group, "consumeEnable": true, "retryMaxTimes": 1, "attributes": map[string]string{"+lite.bind.topic": parent}})
	r.want("create group", r.invoke(code.UpdateAndCreateSubscriptionGroup, nil, body), code.Success, "")
	r.want("subscribe", r.subscribe("PARTIAL_ADD", "c1", group, parent, []string{liteName}, nil), code.Success, "")
	sendBack := func(m *message.Message, delay int) *remoting.Command {
		return r.invoke(code.ConsumerSendMsgBack, map[string]string{
			"offset": strconv.FormatInt(m.CommitLogOffset, 10), "group": group, "delayLevel": strconv.Itoa(delay),
			"originTopic": parent, "originMsgId": m.UniqKey(), "maxReconsumeTimes": "1",
		}, nil)
	}
	popOne := func(invisible time.Duration, wantCount string) *message.Message {
		t.Helper()
		var p popped
		testutil.Eventually(t, 3*time.Second, func() error {
			resp := r.pop("c1", group, parent, 32, invisible, 0)
			if resp.Code != code.Success {
				return fmt.Errorf("pop: %d %s", resp.Code, resp.Remark)
			}
			p = decodePop(t, resp)
			return nil
		})
		if len(p.msgs) != 1 || len(p.counts) != 1 || p.counts[0] != wantCount {
			t.Fatalf("popped %d messages, counts %v; want 1 with count %s", len(p.msgs), p.counts, wantCount)
		}
		return p.msgs[0]
	}

	r.want("send a", r.send(parent, 0, "a", message.PropertyLiteTopic, liteName), code.Success, "")
	a := popOne(300*time.Millisecond, "0")
	r.want("retry of a lite message", sendBack(a, 0), code.IllegalOperation, "no retry topic")
	time.Sleep(400 * time.Millisecond)
	a = popOne(30*time.Second, "1") // redelivered: the count reached retryMaxTimes 1
	r.want("send back at the max", sendBack(a, 0), code.Success, "")
	st := r.b.Store()
	dlq := "%DLQ%" + group
	if _, ok := r.b.Topics().Get("%RETRY%" + group); ok {
		t.Fatal("a retry topic was created for a lite group")
	}
	readDLQ := func(off int64) *message.Message {
		t.Helper()
		res, err := st.GetMessage(context.Background(), dlq, 0, off, 1, 0, nil)
		if err != nil || len(res.Records) != 1 {
			t.Fatalf("read %s@%d: %v", dlq, off, err)
		}
		defer res.Release()
		m, _, err := message.DecodeStored(res.Records[0], message.DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	testutil.Eventually(t, 3*time.Second, func() error {
		if st.MaxOffset(dlq, 0) != 1 {
			return fmt.Errorf("DLQ has %d messages", st.MaxOffset(dlq, 0))
		}
		return nil
	})
	if m := readDLQ(0); string(m.Body) != "a" || m.Properties[message.PropertyLiteTopic] != liteName ||
		m.Properties[message.PropertyInnerMultiDispatch] != "" || m.Properties[message.PropertyInnerMultiQueueOffset] != "" || m.ReconsumeTimes != 2 {
		t.Fatalf("DLQ copy %q %v reconsumeTimes %d", m.Body, m.Properties, m.ReconsumeTimes)
	}
	if st.LmqCount() != 1 {
		t.Fatalf("the DLQ copy was dispatched to an LMQ: %d LMQs", st.LmqCount())
	}
	// Acked on the LMQ: the next message pops at once, though a's pop was
	// invisible for 30 s. The ack Apache's proxy sends after its send-back
	// is a harmless repeat.
	r.want("send b", r.send(parent, 0, "b", message.PropertyLiteTopic, liteName), code.Success, "")
	b := popOne(30*time.Second, "0")
	if string(b.Body) != "b" {
		t.Fatalf("popped %q after the dead letter", b.Body)
	}
	r.want("proxy's ack after its send-back", r.ack(code.AckMessage, group, parent, liteName, 0, popped{popTime: 1, invisible: 1}, nil), code.Success, "")
	// delayLevel -1 (ForwardMessageToDeadLetterQueue) dead-letters at once.
	r.want("forward to the DLQ", sendBack(b, -1), code.Success, "")
	testutil.Eventually(t, 3*time.Second, func() error {
		if st.MaxOffset(dlq, 0) != 2 {
			return fmt.Errorf("DLQ has %d messages", st.MaxOffset(dlq, 0))
		}
		return nil
	})
	var gi protocol.GetLiteGroupInfoResponseBody
	r.admin(liteadmin.CodeGetLiteGroupInfo, map[string]string{"group": group, "liteTopic": liteName}, &gi)
	if gi.LiteTopicOffsetWrapper == nil || gi.LiteTopicOffsetWrapper.ConsumerOffset != 2 {
		t.Fatalf("group offset after both dead letters: %+v", gi.LiteTopicOffsetWrapper)
	}
}
