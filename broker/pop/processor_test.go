package pop

import (
	"encoding/base64"
	"github.com/rmqgo/rmq/broker/pop/popcodec"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/filter"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

func TestPopAckNoRedelivery(t *testing.T) {
	r := newRig(t)
	r.send(testTopic, 0, 5, "A")
	res := r.pop(0, 32, 10_000, nil)
	if res.resp.Code != code.Success || len(res.msgs) != 5 {
		t.Fatalf("pop: code %d, %d messages", res.resp.Code, len(res.msgs))
	}
	if got := res.resp.Ext("msgOffsetInfo"); got != "0 0 0,1,2,3,4" {
		t.Errorf("msgOffsetInfo = %q", got)
	}
	if got := res.resp.Ext("startOffsetInfo"); got != "0 0 0" {
		t.Errorf("startOffsetInfo = %q", got)
	}
	for _, m := range res.msgs {
		r.mustAck(m)
	}
	// Acking twice is harmless while other messages of the pop are in
	// flight; here the checkpoint is gone, so it says so.
	resp, err := r.ack(res.msgs[0])
	if c := codeOf(resp, err); c != code.NoMessage {
		t.Errorf("second ack after full ack: code %d, want NO_MESSAGE", c)
	}
	r.clk.Advance(time.Minute)
	if n := r.p.Revive(); n != 0 {
		t.Errorf("revive looked at %d checkpoints, want 0", n)
	}
	if again := r.pop(-1, 32, 10_000, nil); len(again.msgs) != 0 {
		t.Fatalf("acked messages popped again: %v", bodies(again.msgs))
	}
	if st := r.p.Stats(); st.Revived != 0 {
		t.Errorf("revived %d", st.Revived)
	}
}

// A server-side reset moves a pop group on its next pop, as Java's
// resetPopOffset: the group pops from the reset offset (messages it had
// acked come again) and the reset is taken once.
func TestPopTakesPendingReset(t *testing.T) {
	r := newRig(t)
	r.send(testTopic, 0, 5, "A")
	for _, m := range r.pop(0, 32, 10_000, nil).msgs {
		r.mustAck(m)
	}
	r.resets[testGroup+"/"+testTopic+"/0"] = 1
	res := r.pop(0, 32, 10_000, nil)
	if got := res.resp.Ext("msgOffsetInfo"); len(res.msgs) != 4 || got != "0 0 1,2,3,4" {
		t.Fatalf("pop after the reset: %d messages, msgOffsetInfo %q", len(res.msgs), got)
	}
	if len(r.resets) != 0 {
		t.Fatalf("the reset was not taken: %v", r.resets)
	}
	for _, m := range res.msgs {
		r.mustAck(m)
	}
	if again := r.pop(0, 32, 10_000, nil); len(again.msgs) != 0 {
		t.Fatalf("popped again after the reset was taken: %v", bodies(again.msgs))
	}
}

func TestReviveUnacked(t *testing.T) {
	r := newRig(t)
	r.send(testTopic, 1, 4, "A")
	res := r.pop(1, 32, 5_000, nil)
	if len(res.msgs) != 4 {
		t.Fatalf("popped %d", len(res.msgs))
	}
	r.mustAck(res.msgs[0])
	r.mustAck(res.msgs[2])
	r.clk.Advance(4 * time.Second)
	r.p.Revive()
	if st := r.p.Stats(); st.Revived != 0 {
		t.Fatalf("revived before the invisible time: %d", st.Revived)
	}
	r.clk.Advance(2 * time.Second)
	r.p.Revive()
	if st := r.p.Stats(); st.Revived != 2 {
		t.Fatalf("revived %d, want 2", st.Revived)
	}
	retry := popcodec.RetryTopicV1(testTopic, testGroup)
	r.waitDispatched(retry, 0, 2)
	// A late ack of a revived message is refused: it will be delivered again.
	resp, err := r.ack(res.msgs[1])
	if c := codeOf(resp, err); c != code.NoMessage {
		t.Errorf("ack after revive: code %d, want NO_MESSAGE", c)
	}
	again := r.pop(-1, 32, 5_000, nil)
	got := bodies(again.msgs)
	slices.Sort(got)
	want := []string{string(res.msgs[1].msg.Body), string(res.msgs[3].msg.Body)}
	if !slices.Equal(got, want) {
		t.Fatalf("redelivered %v, want %v", got, want)
	}
	for _, m := range again.msgs {
		if m.msg.Topic != testTopic {
			t.Errorf("retry message shows topic %q, want %q", m.msg.Topic, testTopic)
		}
		if m.msg.ReconsumeTimes != 1 {
			t.Errorf("reconsumeTimes %d, want 1", m.msg.ReconsumeTimes)
		}
		if m.receipt.Retry != popcodec.RetryV1 || m.msg.Properties[message.PropertyPopCK] == "" {
			t.Errorf("retry message receipt %+v", m.receipt)
		}
		if m.msg.Properties[message.PropertyFirstPopTime] != strconv.FormatInt(res.msgs[0].receipt.PopTime, 10) {
			t.Errorf("1ST_POP_TIME %q", m.msg.Properties[message.PropertyFirstPopTime])
		}
		r.mustAck(m)
	}
	r.clk.Advance(time.Minute)
	r.p.Revive()
	if st := r.p.Stats(); st.Revived != 2 {
		t.Errorf("acked retry messages revived: %d", st.Revived)
	}
}

func TestReviveToDLQ(t *testing.T) {
	r := newRig(t)
	sg, _ := r.groups.FindOrCreate(testGroup)
	sg.RetryMaxTimes = 1
	if err := r.groups.Update(sg); err != nil {
		t.Fatal(err)
	}
	r.send(testTopic, 0, 1, "A")
	for round := 0; round < 2; round++ {
		res := r.pop(-1, 32, 1_000, nil)
		if len(res.msgs) != 1 {
			t.Fatalf("round %d: popped %d", round, len(res.msgs))
		}
		if got := res.msgs[0].msg.ReconsumeTimes; got != int32(round) {
			t.Fatalf("round %d: reconsumeTimes %d", round, got)
		}
		r.clk.Advance(2 * time.Second)
		r.p.Revive()
		if round == 0 {
			r.waitDispatched(popcodec.RetryTopicV1(testTopic, testGroup), 0, 1)
		}
	}
	if st := r.p.Stats(); st.DeadLettered != 1 || st.Revived != 1 {
		t.Fatalf("stats %+v, want 1 revived, 1 dead-lettered", st)
	}
	r.waitDispatched("%DLQ%"+testGroup, 0, 1)
	if res := r.pop(-1, 32, 1_000, nil); len(res.msgs) != 0 {
		t.Fatalf("dead-lettered message popped again")
	}
}

func TestChangeInvisibleTime(t *testing.T) {
	r := newRig(t)
	r.send(testTopic, 0, 2, "A")
	res := r.pop(0, 32, 2_000, nil)
	resp, err := call(t, r.p.handleChangeInvisible, changeReq(testGroup, res.msgs[0], 60_000))
	if codeOf(resp, err) != code.Success {
		t.Fatalf("change: %v", err)
	}
	pt, _ := strconv.ParseInt(resp.Ext("popTime"), 10, 64)
	if resp.Ext("invisibleTime") != "60000" || resp.Ext("reviveQid") != strconv.Itoa(int(res.msgs[0].receipt.ReviveQid)) {
		t.Fatalf("change response %v", resp.ExtFields)
	}
	r.mustAck(res.msgs[1])
	r.clk.Advance(5 * time.Second)
	r.p.Revive()
	if st := r.p.Stats(); st.Revived != 0 {
		t.Fatalf("changed message revived early")
	}
	// The old receipt is dead; the new one (as the client builds it) acks.
	if resp, err := r.ack(res.msgs[0]); codeOf(resp, err) != code.NoMessage {
		t.Errorf("ack with the old receipt: code %d", codeOf(resp, err))
	}
	nm := res.msgs[0]
	nm.receipt.CkQueueOffset, nm.receipt.PopTime, nm.receipt.InvisibleTime = nm.receipt.QueueOffset, pt, 60_000
	r.mustAck(nm)
	// Change on an acked message is refused.
	if resp, err := call(t, r.p.handleChangeInvisible, changeReq(testGroup, nm, 1000)); codeOf(resp, err) != code.NoMessage {
		t.Errorf("change after ack: code %d", codeOf(resp, err))
	}
	r.clk.Advance(2 * time.Minute)
	r.p.Revive()
	if st := r.p.Stats(); st.Revived != 0 {
		t.Errorf("revived %d", st.Revived)
	}
}

func TestChangeInvisibleZeroRevivesAtOnce(t *testing.T) {
	r := newRig(t)
	r.send(testTopic, 0, 1, "A")
	res := r.pop(0, 32, 60_000, nil)
	if resp, err := call(t, r.p.handleChangeInvisible, changeReq(testGroup, res.msgs[0], 0)); codeOf(resp, err) != code.Success {
		t.Fatalf("nack: %v", err)
	}
	r.clk.Advance(time.Millisecond) // the frozen clock made the new pop time now+1
	r.p.Revive()
	if st := r.p.Stats(); st.Revived != 1 {
		t.Fatalf("revived %d, want 1", st.Revived)
	}
}

func TestBadInputs(t *testing.T) {
	r := newRig(t)
	if _, ok := r.groups.FindOrCreate(testGroup); !ok { // auto-created while allowed
		t.Fatal("group not created")
	}
	r.cfg.AutoCreateSubscriptionGroup = false
	r.send(testTopic, 0, 3, "A")
	res := r.pop(0, 1, 60_000, nil)
	if len(res.msgs) != 1 {
		t.Fatalf("popped %d", len(res.msgs))
	}
	good := res.msgs[0]
	forged := good
	forged.receipt.PopTime++
	notInCK := good
	notInCK.receipt.QueueOffset = 2
	badRQ := good
	badRQ.receipt.ReviveQid = 7
	if good.receipt.ReviveQid == 7 {
		badRQ.receipt.ReviveQid = 6
	}
	withExtra := func(req *remoting.Command, k, v string) *remoting.Command {
		req.ExtFields[k] = v
		return req
	}
	tests := []struct {
		name string
		h    remoting.Handler
		req  *remoting.Command
		want int32
	}{
		{"pop invisibleTime 0", r.p.handlePop, popReq(testGroup, testTopic, 0, 1, 0, nil), code.InvalidParameter},
		{"pop invisibleTime negative", r.p.handlePop, popReq(testGroup, testTopic, 0, 1, -5, nil), code.InvalidParameter},
		{"pop 33 messages", r.p.handlePop, popReq(testGroup, testTopic, 0, 33, 1000, nil), code.InvalidParameter},
		{"pop 0 messages", r.p.handlePop, popReq(testGroup, testTopic, 0, 0, 1000, nil), code.InvalidParameter},
		{"pop unknown topic", r.p.handlePop, popReq(testGroup, "NoSuchTopic", 0, 1, 1000, nil), code.TopicNotExist},
		{"pop unknown group", r.p.handlePop, popReq("no_such_group", testTopic, 0, 1, 1000, nil), code.SubscriptionGroupNotExist},
		{"pop queue out of range", r.p.handlePop, popReq(testGroup, testTopic, 9, 1, 1000, nil), code.InvalidParameter},
		{"pop without queueId", r.p.handlePop, func() *remoting.Command {
			q := popReq(testGroup, testTopic, 0, 1, 1000, nil)
			delete(q.ExtFields, "queueId")
			return q
		}(), code.InvalidParameter},
		{"pop bad SQL", r.p.handlePop, popReq(testGroup, testTopic, 0, 1, 1000, map[string]string{"expType": "SQL92", "exp": "a >"}), code.SubscriptionParseFailed},
		{"pop long past its poll", r.p.handlePop, popReq(testGroup, testTopic, 0, 1, 1000, map[string]string{"bornTime": "1000"}), code.PollingTimeout},
		{"ack forged pop time", r.p.handleAck, ackReq(testGroup, forged), code.NoMessage},
		{"ack offset not popped", r.p.handleAck, ackReq(testGroup, notInCK), code.NoMessage},
		{"ack wrong revive queue", r.p.handleAck, ackReq(testGroup, badRQ), code.NoMessage},
		{"ack garbage extraInfo", r.p.handleAck, withExtra(ackReq(testGroup, good), "extraInfo", "hello world"), code.InvalidParameter},
		{"ack unknown topic", r.p.handleAck, withExtra(ackReq(testGroup, good), "topic", "NoSuchTopic"), code.TopicNotExist},
		{"ack queue out of range", r.p.handleAck, withExtra(ackReq(testGroup, good), "queueId", "5"), code.MessageIllegal},
		{"ack offset beyond queue", r.p.handleAck, withExtra(ackReq(testGroup, good), "offset", "99"), code.NoMessage},
		{"ack lite refused", r.p.handleAck, withExtra(ackReq(testGroup, good), "liteTopic", "l1"), code.IllegalOperation},
		{"change lite refused", r.p.handleChangeInvisible, withExtra(changeReq(testGroup, good, 1000), "liteTopic", "l1"), code.IllegalOperation},
		{"change negative", r.p.handleChangeInvisible, changeReq(testGroup, good, -1), code.InvalidParameter},
		{"change forged", r.p.handleChangeInvisible, changeReq(testGroup, forged, 1000), code.NoMessage},
		{"change at max offset", r.p.handleChangeInvisible, withExtra(changeReq(testGroup, good, 1000), "offset", "3"), code.NoMessage},
		{"batch ack without body", r.p.handleBatchAck, remoting.NewRequest(code.BatchAckMessage, nil, nil), code.NoMessage},
		{"batch ack garbage", r.p.handleBatchAck, remoting.NewRequest(code.BatchAckMessage, nil, []byte("{nope")), code.InvalidParameter},
		{"batch ack lite", r.p.handleBatchAck, remoting.NewRequest(code.BatchAckMessage, nil,
			[]byte(`{"acks":[{"c":"pop_cg","t":"PopTopic","r":"0","so":0,"q":0,"rq":0,"pt":1,"it":1,"b":"AQ==","lt":"x"}]}`)), code.IllegalOperation},
		{"peek 0", r.p.handlePeek, remoting.NewRequest(code.PeekMessage, map[string]string{"consumerGroup": testGroup, "topic": testTopic, "queueId": "0", "maxMsgNums": "0"}, nil), code.InvalidParameter},
		{"set mode on retry topic", r.p.handleSetRequestMode, remoting.NewRequest(code.SetMessageRequestMode, nil,
			[]byte(`{"topic":"%RETRY%x","consumerGroup":"pop_cg","mode":"POP"}`)), code.NoPermission},
		{"set mode unknown topic", r.p.handleSetRequestMode, remoting.NewRequest(code.SetMessageRequestMode, nil,
			[]byte(`{"topic":"Nope","consumerGroup":"pop_cg","mode":"POP"}`)), code.TopicNotExist},
		{"query assignment garbage", r.p.handleQueryAssignment, remoting.NewRequest(code.QueryAssignment, nil, []byte("[")), code.InvalidParameter},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := tc.h(t.Context(), nil, tc.req)
			if got := codeOf(resp, err); got != tc.want {
				t.Errorf("code %d (%v), want %d", got, err, tc.want)
			}
		})
	}
	// None of that disturbed the real receipt.
	r.mustAck(good)
}

func TestOrderlyPop(t *testing.T) {
	r := newRig(t)
	r.send(testTopic, 0, 4, "A")
	order := map[string]string{"order": "true"}
	first := r.pop(0, 2, 3_000, order)
	if len(first.msgs) != 2 || first.resp.Ext("reviveQid") != "999" {
		t.Fatalf("popped %d, reviveQid %s", len(first.msgs), first.resp.Ext("reviveQid"))
	}
	if got := first.resp.Ext("orderCountInfo"); got != "0 0 0" {
		t.Errorf("orderCountInfo %q", got)
	}
	// The queue is blocked while they are in flight.
	if res := r.pop(0, 2, 3_000, order); res.resp.Code == code.Success {
		t.Fatalf("blocked queue popped: %v", bodies(res.msgs))
	}
	r.mustAck(first.msgs[0])
	// Still blocked by the second one; after its invisible time it comes
	// back first, with its consume count.
	if res := r.pop(0, 2, 3_000, order); res.resp.Code == code.Success {
		t.Fatalf("half-acked queue popped: %v", bodies(res.msgs))
	}
	r.clk.Advance(4 * time.Second)
	second := r.pop(0, 2, 3_000, order)
	if len(second.msgs) != 2 || second.msgs[0].msg.QueueOffset != 1 || second.msgs[1].msg.QueueOffset != 2 {
		t.Fatalf("after timeout popped %v", bodies(second.msgs))
	}
	if second.msgs[0].count != 1 || second.msgs[1].count != 0 {
		t.Errorf("consume counts %d %d, want 1 0 (%q)", second.msgs[0].count, second.msgs[1].count, second.resp.Ext("orderCountInfo"))
	}
	// A receipt of the earlier pop is stale now.
	if resp, err := r.ack(first.msgs[1]); codeOf(resp, err) != code.NoMessage {
		t.Errorf("stale orderly ack: code %d", codeOf(resp, err))
	}
	for _, m := range second.msgs {
		r.mustAck(m)
	}
	third := r.pop(0, 2, 3_000, order)
	if len(third.msgs) != 1 || third.msgs[0].msg.QueueOffset != 3 {
		t.Fatalf("third pop %v", bodies(third.msgs))
	}
	r.mustAck(third.msgs[0])
	if off, _ := r.st.QueryOffset(testGroup, testTopic, 0); off != 4 {
		t.Errorf("committed offset %d, want 4", off)
	}
}

func TestOrderlyChangeInvisible(t *testing.T) {
	r := newRig(t)
	r.send(testTopic, 0, 1, "A")
	order := map[string]string{"order": "true"}
	res := r.pop(0, 1, 3_000, order)
	resp, err := call(t, r.p.handleChangeInvisible, changeReq(testGroup, res.msgs[0], 10_000))
	if codeOf(resp, err) != code.Success {
		t.Fatalf("change: %v", err)
	}
	r.clk.Advance(5 * time.Second)
	if again := r.pop(0, 1, 3_000, order); again.resp.Code == code.Success {
		t.Fatalf("queue unblocked before the changed invisible time")
	}
	r.clk.Advance(6 * time.Second)
	if again := r.pop(0, 1, 3_000, order); len(again.msgs) != 1 || again.msgs[0].count != 1 {
		t.Fatalf("after the changed time: %d messages", len(again.msgs))
	}
}

func TestPopFilterAndRetryMix(t *testing.T) {
	r := newRig(t)
	r.send(testTopic, 0, 3, "A")
	r.send(testTopic, 0, 3, "B")
	res := r.pop(0, 32, 1000, map[string]string{"expType": "TAG", "exp": "B"})
	if len(res.msgs) != 3 {
		t.Fatalf("tag filter popped %d", len(res.msgs))
	}
	for _, m := range res.msgs {
		if m.msg.Tags() != "B" {
			t.Errorf("tag %q", m.msg.Tags())
		}
	}
	if off, _ := r.st.QueryOffset(testGroup, testTopic, 0); off != 6 {
		t.Errorf("offset after filtered pop %d, want 6", off)
	}
}

func TestBatchAck(t *testing.T) {
	r := newRig(t)
	r.send(testTopic, 0, 6, "A")
	res := r.pop(0, 32, 5_000, nil)
	ei := res.msgs[0].receipt
	body := []byte(`{"acks":[{"c":"pop_cg","t":"PopTopic","r":"0","so":` + strconv.FormatInt(ei.CkQueueOffset, 10) +
		`,"q":0,"rq":` + strconv.Itoa(int(ei.ReviveQid)) + `,"pt":` + strconv.FormatInt(ei.PopTime, 10) +
		`,"it":5000,"b":"` + b64(popcodec.EncodeBitSet(ei.CkQueueOffset, []int64{0, 2, 4, 5})) + `"}],"brokerName":"broker-a"}`)
	resp, err := call(t, r.p.handleBatchAck, remoting.NewRequest(code.BatchAckMessage, nil, body))
	if codeOf(resp, err) != code.Success || resp.Remark != "" {
		t.Fatalf("batch ack: %d %q %v", codeOf(resp, err), resp.Remark, err)
	}
	r.clk.Advance(6 * time.Second)
	r.p.Revive()
	if st := r.p.Stats(); st.Revived != 2 {
		t.Fatalf("revived %d, want 2 (offsets 1 and 3)", st.Revived)
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func TestPopSQLFilter(t *testing.T) {
	r := newRig(t)
	f, err := filter.New(filter.Options{Config: r.conf})
	if err != nil {
		t.Fatal(err)
	}
	r.p.d.Filters = f
	host := netip.MustParseAddrPort("127.0.0.1:5000")
	for i := 0; i < 6; i++ {
		m := &message.Message{Topic: testTopic, QueueID: 0, Body: []byte(strconv.Itoa(i)), BornHost: host, StoreHost: host,
			Properties: map[string]string{"n": strconv.Itoa(i)}}
		if _, err := r.st.PutMessage(t.Context(), m); err != nil {
			t.Fatal(err)
		}
	}
	r.waitDispatched(testTopic, 0, 6)
	sql := map[string]string{"expType": "SQL92", "exp": "n >= 4"}
	r.cfg.EnablePropertyFilter = false
	if resp, err := r.p.handlePop(t.Context(), nil, popReq(testGroup, testTopic, 0, 32, 1000, sql)); codeOf(resp, err) == code.Success {
		t.Fatal("SQL92 pop served with enablePropertyFilter off")
	}
	r.cfg.EnablePropertyFilter = true
	res := r.pop(0, 32, 1000, sql)
	if got := bodies(res.msgs); !slices.Equal(got, []string{"4", "5"}) {
		t.Fatalf("SQL92 pop got %v", got)
	}
}

func TestSlaveRefusesPop(t *testing.T) {
	r := newRig(t)
	r.cfg.BrokerID = 1
	resp, err := r.p.handlePop(t.Context(), nil, popReq(testGroup, testTopic, 0, 1, 1000, nil))
	if codeOf(resp, err) != code.ServiceNotAvailable {
		t.Fatalf("pop on a slave: code %d", codeOf(resp, err))
	}
	if n := r.p.Revive(); n != 0 {
		t.Fatalf("slave revived %d", n)
	}
}
