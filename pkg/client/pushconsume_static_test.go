package client

import (
	"context"
	"strconv"
	"testing"

	"github.com/rmqgo/rmq/pkg/client/clienttest"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// TestSendBackStaticTopic: a failed message of a logic queue is re-sent to
// %RETRY%<group> by the consumer (Java's sendMessageBackAsNormalMessage),
// never sent back to the leader with CONSUMER_SEND_MSG_BACK, whose
// CommitLog offset may belong to another broker; a message of a physical
// queue still uses the send-back.
func TestSendBackStaticTopic(t *testing.T) {
	c, err := clienttest.StartCluster("broker-a")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	c.CreateTopic("T", 1)
	c.CreateTopic(protocol.RetryTopic("G"), 1)
	br := c.Brokers[0]
	pc, err := NewPushConsumer(PushConsumerConfig{
		CommonConfig:      CommonConfig{NameServers: []string{c.Namesrv.Addr()}},
		Group:             "G",
		MaxReconsumeTimes: 5,
		Handler:           func(context.Context, *ConsumeRequest) ConsumeResult { return ConsumeSuccess },
	})
	pc = clienttest.Subscribed(t, pc, err, "T", "*")
	// T is static as far as the consumer knows: logic queue 0 led by
	// broker-a, so a send-back would reach a broker.
	pc.core.storeRoute("T", newTopicRoute("T", staticRoute(1, map[int]string{0: "broker-a"}, 1, map[string]string{"broker-a": br.Addr()}), false))

	stored := &message.Message{Topic: "T", Body: []byte("x"), Properties: map[string]string{}}
	stored.SetProperty(message.PropertyUniqClientMessageIDKeyIdx, "ID1")
	if err := br.Store(stored); err != nil {
		t.Fatal(err)
	}
	msgs, err := br.Messages("T", 0)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("stored %v %v", msgs, err)
	}
	ctx := context.Background()
	retrySends := func() []clienttest.Send {
		var out []clienttest.Send
		for _, s := range br.Sends() {
			if s.Ext["b"] == protocol.RetryTopic("G") {
				out = append(out, s)
			}
		}
		return out
	}
	for i, tc := range []struct {
		name             string
		reconsumed       int32
		delayLevel       int
		wantJ, wantDelay string
	}{
		{"delay 3 + reconsume times", 0, 0, "1", "3"},
		{"second failure", 1, 0, "2", "4"},
		{"handler's delay level", 0, 2, "1", "2"},
		// The broker moves a retry past maxReconsumeTimes to the DLQ.
		{"straight to the DLQ", 0, -1, "6", "3"},
	} {
		m := *msgs[0]
		m.Properties = map[string]string{}
		for k, v := range msgs[0].Properties {
			m.Properties[k] = v
		}
		m.ReconsumeTimes = tc.reconsumed
		m.QueueID = 0 // the logic queue id, as a pull of a logic queue gives it
		if !pc.sendBack(ctx, mockQ("T", 0), &m, tc.delayLevel) {
			t.Fatalf("%s: send back failed", tc.name)
		}
		sends := retrySends()
		if len(sends) != i+1 {
			t.Fatalf("%s: %d sends to the retry topic, want %d", tc.name, len(sends), i+1)
		}
		s := sends[i]
		props := message.DecodeProperties([]byte(s.Ext["i"]))
		if s.Ext["j"] != tc.wantJ || s.Ext["l"] != "5" || props[message.PropertyDelayTimeLevel] != tc.wantDelay ||
			props[message.PropertyRetryTopic] != "T" || props[message.PropertyOriginMessageID] != "ID1" || string(s.Body) != "x" {
			t.Errorf("%s: retry send header %v, properties %v, body %q", tc.name, s.Ext, props, s.Body)
		}
	}
	if n := len(br.SendBacks()); n != 0 {
		t.Fatalf("%d CONSUMER_SEND_MSG_BACK for logic-queue messages: %v", n, br.SendBacks())
	}

	// A physical queue's message: the broker takes it back.
	phys := protocol.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 0}
	c.Namesrv.SetTopic("T", "broker-a", 1, 0)
	pc.core.storeRoute("T", newTopicRoute("T", &protocol.TopicRouteData{
		QueueDatas:  []protocol.QueueData{{BrokerName: "broker-a", Perm: 6, ReadQueueNums: 1, WriteQueueNums: 1}},
		BrokerDatas: []protocol.BrokerData{{BrokerName: "broker-a", BrokerAddrs: map[int64]string{0: br.Addr()}}},
	}, false))
	if !pc.sendBack(ctx, phys, msgs[0], 0) {
		t.Fatal("send back of a physical queue's message failed")
	}
	backs := br.SendBacks()
	if len(backs) != 1 || backs[0]["offset"] != strconv.FormatInt(msgs[0].CommitLogOffset, 10) || len(retrySends()) != 4 {
		t.Fatalf("send backs %v, %d retry sends", backs, len(retrySends()))
	}
}
