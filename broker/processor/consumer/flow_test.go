package consumer

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/processor/pull"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

// TestConsumerFlow wires the client, pull and offset processors on one
// server and walks a client-go style push consumer through its calls:
// heartbeat, rebalance list, offset query, long-polled pull (no
// subscription in the request), commit, consume stats.
func TestConsumerFlow(t *testing.T) {
	f := newFixture(t)
	cp, err := client.NewProcessor(client.Deps{Config: f.cfg.Load, Subscriptions: f.subs, Topics: f.topics, Consumers: f.consumers})
	if err != nil {
		t.Fatal(err)
	}
	pp, err := pull.New(pull.Deps{Config: f.cfg.Load, Store: f.store, Topics: f.topics, Subscriptions: f.subs, Consumers: f.consumers})
	if err != nil {
		t.Fatal(err)
	}
	f.p.d.PullOffsets = pp

	srv := remotingtest.Serve(t, func(s *remoting.Server) {
		reg := processor.OnServer(s)
		cp.Register(reg)
		pp.Register(reg)
		f.p.Register(reg)
		s.OnClose(cp.OnChannelClose)
	})
	cp.Start()
	pp.Start()
	t.Cleanup(func() {
		cp.Close()
		pp.Close()
	})
	c := remotingtest.NewClient(t)
	call := func(code int32, ext map[string]string, body []byte) *remoting.Command {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := c.Invoke(ctx, srv.Addr(), remoting.NewRequest(code, ext, body))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	hb := `{"clientID":"10.0.0.9@4711","producerDataSet":[],"consumerDataSet":[{"groupName":"g","consumeType":"CONSUME_PASSIVELY",` +
		`"messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[` +
		`{"classFilterMode":false,"topic":"T","subString":"a","tagsSet":["a"],"codeSet":["97"],"subVersion":1700000000000000000,"expressionType":"TAG"},` +
		`{"classFilterMode":false,"topic":"%RETRY%g","subString":"*","tagsSet":[],"codeSet":[],"subVersion":1700000000000000000,"expressionType":"TAG"}]}]}`
	if r := call(code.HeartBeat, nil, []byte(hb)); r.Code != code.Success {
		t.Fatalf("heartbeat %d %s", r.Code, r.Remark)
	}
	if r := call(code.GetConsumerListByGroup, map[string]string{"consumerGroup": "g"}, nil); r.Code != code.Success || string(r.Body) != `{"consumerIdList":["10.0.0.9@4711"]}` {
		t.Fatalf("consumer list %d %s", r.Code, r.Body)
	}
	q := map[string]string{"consumerGroup": "g", "topic": "T", "queueId": "0"}
	if r := call(code.QueryConsumerOffset, q, nil); r.Code != code.QueryNotFound {
		t.Fatalf("new group offset: %d", r.Code)
	}
	if r := call(code.GetMaxOffset, map[string]string{"topic": "T", "queueId": "0"}, nil); r.Ext("offset") != "0" {
		t.Fatalf("max offset %v", r.ExtFields)
	}

	// client-go's pull: no subscription in the request, subVersion 0, suspend 20 s, commit flag off (offset 0).
	pullExt := map[string]string{"consumerGroup": "g", "topic": "T", "queueId": "0", "queueOffset": "0", "maxMsgNums": "32",
		"sysFlag": strconv.Itoa(pull.FlagSuspend), "commitOffset": "0", "suspendTimeoutMillis": "20000", "subVersion": "0"}
	got := make(chan *remoting.Command, 1)
	go func() { got <- call(code.PullMessage, pullExt, nil) }()
	testutil.WaitFor(t, 3*time.Second, "the pull to be suspended", func() bool { return pp.Hold().Len() > 0 })
	f.store.Put("T", 0, "b", []byte("filtered out"))
	f.store.Put("T", 0, "a", []byte("hello"))
	var r *remoting.Command
	select {
	case r = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("suspended pull not woken")
	}
	if r.Code != code.Success && r.Code != code.PullRetryImmediately {
		t.Fatalf("pull %d %s", r.Code, r.Remark)
	}
	if r.Code == code.PullRetryImmediately { // woken by the filtered message: pull on
		pullExt["queueOffset"] = r.Ext("nextBeginOffset")
		r = call(code.PullMessage, pullExt, nil)
	}
	msgs, err := message.DecodeAll(r.Body, message.DecodeOptions{})
	if err != nil || len(msgs) != 1 || string(msgs[0].Body) != "hello" || r.Ext("nextBeginOffset") != "2" {
		t.Fatalf("pulled %v %v next %s", msgs, err, r.Ext("nextBeginOffset"))
	}

	if r := call(code.UpdateConsumerOffset, map[string]string{"consumerGroup": "g", "topic": "T", "queueId": "0", "commitOffset": "2"}, nil); r.Code != code.Success {
		t.Fatalf("commit %d", r.Code)
	}
	if r := call(code.QueryConsumerOffset, q, nil); r.Code != code.Success || r.Ext("offset") != "2" {
		t.Fatalf("query after commit %d %v", r.Code, r.ExtFields)
	}
	r = call(code.GetConsumeStats, map[string]string{"consumerGroup": "g", "topic": "T"}, nil)
	var cs ConsumeStats
	if err := protocol.UnmarshalMQKeyed(r.Body, &cs); err != nil {
		t.Fatal(err)
	}
	w := cs.OffsetTable[protocol.MessageQueue{BrokerName: "broker-a", QueueID: 0, Topic: "T"}]
	if w.BrokerOffset != 2 || w.ConsumerOffset != 2 || w.PullOffset != 2 || w.LastTimestamp == 0 {
		t.Fatalf("stats %+v", w)
	}
	if _, ok := f.topics.Get("%RETRY%g"); !ok {
		t.Fatal("retry topic missing")
	}
}
