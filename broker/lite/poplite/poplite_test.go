package poplite_test

import (
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/lite/litetest"
	"github.com/rmqgo/rmq/broker/lite/poplite"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

const (
	parent = "P"
	group  = "lg"
	lite   = "user-1"
)

func setup(t *testing.T, mutate func(*config.Config)) *litetest.Rig {
	t.Helper()
	r := litetest.New(t, mutate)
	r.CreateLiteAndPlain(parent, "+message.type=LITE", 2, group)
	return r
}

func with(ext map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range ext {
		out[k] = v
	}
	return remotingtest.SetFields(out, kv...)
}

// TestPopValidation: POP_LITE_MESSAGE headers that are refused (docs/lite-topics.md §6.2) and
// their codes, in the order of the pre-checks.
func TestPopValidation(t *testing.T) {
	r := setup(t, nil)
	good := litetest.PopExt("c1", group, parent, 4, time.Second, 0)
	tests := []struct {
		name   string
		ext    map[string]string
		code   int32
		remark string
	}{
		{"no clientId", with(good, "clientId", remotingtest.Absent), code.InvalidParameter, "clientId"},
		{"no consumerGroup", with(good, "consumerGroup", remotingtest.Absent), code.InvalidParameter, "consumerGroup"},
		{"maxMsgNum not a number", with(good, "maxMsgNum", "x"), code.InvalidParameter, "maxMsgNum"},
		{"expired", with(good, "bornTime", "1000", "pollTime", "1000"), code.PollingTimeout, "expired"},
		{"maxMsgNum 0", with(good, "maxMsgNum", "0"), code.InvalidParameter, "maxMsgNum"},
		{"maxMsgNum 33", with(good, "maxMsgNum", "33"), code.InvalidParameter, "maxMsgNum"},
		{"invisibleTime 0", with(good, "invisibleTime", "0"), code.InvalidParameter, "invisibleTime"},
		{"unknown topic", with(good, "topic", "NoSuch"), code.TopicNotExist, ""},
		{"not a LITE topic", with(good, "topic", "Plain"), code.InvalidParameter, "not a LITE topic"},
		{"unknown group", with(good, "consumerGroup", "nope"), code.SubscriptionGroupNotExist, ""},
		{"group not bound", with(good, "consumerGroup", "plain_cg"), code.InvalidParameter, "not bound"},
		{"nothing to pop", good, code.PollingTimeout, ""},
	}
	// r.Want fails the test itself (r.T): no subtests.
	for _, tt := range tests {
		r.Want(tt.name, r.Invoke(code.PopLiteMessage, tt.ext, nil), tt.code, tt.remark)
	}
	// Broker-level refusals.
	r2 := setup(t, func(c *config.Config) { c.BrokerPermission = 2 })
	r2.Want("broker not readable", r2.Invoke(code.PopLiteMessage, good, nil), code.NoPermission, "forbidden")
}

// TestAckValidation: lite acks (ACK_MESSAGE / ACK_LITE_MESSAGE /
// CHANGE_MESSAGE_INVISIBLETIME with liteTopic) that are refused (docs/lite-topics.md §6.7–6.8).
func TestAckValidation(t *testing.T) {
	r := setup(t, nil)
	r.Want("send", r.Send(parent, 0, "x", message.PropertyLiteTopic, lite), code.Success, "")
	p := litetest.Popped{PopTime: 1, Invisible: 1}
	tests := []struct {
		name   string
		reqc   int32
		lite   string
		offset int64
		extra  map[string]string
		want   int32
		remark string
	}{
		{"illegal lite name", code.AckMessage, "a$b", 0, nil, code.InvalidParameter, "liteTopic"},
		{"unknown topic", code.AckMessage, lite, 0, map[string]string{"topic": "NoSuch"}, code.TopicNotExist, ""},
		{"queueId out of range", code.AckMessage, lite, 0, map[string]string{"queueId": "5"}, code.MessageIllegal, "queueId"},
		{"group not bound", code.AckMessage, lite, 0, map[string]string{"consumerGroup": "plain_cg"}, code.InvalidParameter, "bind topic"},
		{"offset beyond the lmq", code.AckMessage, lite, 9, nil, code.NoMessage, "ack offset illegal"},
		{"queueId 1", code.AckMessage, lite, 0, map[string]string{"queueId": "1"}, code.InvalidParameter, "reviveQid"},
		{"reviveQid not 999", code.AckMessage, lite, 0, map[string]string{"extraInfo": "0 1 1 3 0 broker-a 0 0"}, code.InvalidParameter, "reviveQid"},
		{"extraInfo too short", code.AckMessage, lite, 0, map[string]string{"extraInfo": "0 1"}, code.InvalidParameter, "extraInfo"},
		{"extraInfo not numbers", code.AckMessage, lite, 0, map[string]string{"extraInfo": "0 a b c"}, code.InvalidParameter, "extraInfo"},
		{"offset not a number", code.AckMessage, lite, 0, map[string]string{"offset": "x"}, code.InvalidParameter, "offset"},
		{"ACK_LITE_MESSAGE without liteTopic", poplite.CodeAckLiteMessage, "", 0, nil, code.InvalidParameter, "liteTopic"},
		{"change: negative invisibleTime", code.ChangeMessageInvisible, lite, 0, map[string]string{"invisibleTime": "-1"}, code.InvalidParameter, "invisibleTime"},
		{"change: no invisibleTime", code.ChangeMessageInvisible, lite, 0, nil, code.InvalidParameter, "invisibleTime"},
		{"change: offset beyond the lmq", code.ChangeMessageInvisible, lite, 9, map[string]string{"invisibleTime": "10"}, code.NoMessage, "offset illegal"},
		{"not popped", code.AckMessage, lite, 0, nil, code.Success, ""}, // no order state: commits (as an ack after a restart)
	}
	// r.Want fails the test itself (r.T): no subtests.
	for _, tt := range tests {
		r.Want(tt.name, r.Ack(tt.reqc, group, parent, tt.lite, tt.offset, p, tt.extra), tt.want, tt.remark)
	}
}

// popFound pops c1's lite messages of parent until a pop finds some.
func popFound(t *testing.T, r *litetest.Rig) litetest.Popped {
	t.Helper()
	var p litetest.Popped
	testutil.Eventually(t, 3*time.Second, func() error {
		resp := r.Pop("c1", group, parent, 32, 30*time.Second, 0)
		if resp.Code != code.Success {
			return &remoting.CodeError{Code: resp.Code, Remark: resp.Remark}
		}
		p = litetest.DecodePop(t, resp)
		return nil
	})
	return p
}

// TestPopAckHappyPath: a subscribed client's pop returns the message with
// receipt fields, the lite topic is blocked until the ack, an invisibility
// change answers the new receipt values, and the ack commits.
func TestPopAckHappyPath(t *testing.T) {
	r := setup(t, nil)
	r.Want("subscribe", r.Subscribe("PARTIAL_ADD", "c1", group, parent, []string{lite}, nil), code.Success, "")
	r.Want("send 1", r.Send(parent, 1, "one", message.PropertyLiteTopic, lite), code.Success, "")
	p := popFound(t, r)
	if len(p.Msgs) != 1 || string(p.Msgs[0].Body) != "one" || litetest.LMQOffset(p.Msgs[0]) != 0 || len(p.Counts) != 1 || p.Counts[0] != "0" ||
		p.Invisible != 30000 || p.PopTime == 0 {
		t.Fatalf("popped %+v", p)
	}
	r.Want("send 2", r.Send(parent, 0, "two", message.PropertyLiteTopic, lite), code.Success, "")
	r.Want("blocked until the ack", r.Pop("c1", group, parent, 32, 30*time.Second, 0), code.PollingTimeout, "")
	resp := r.Ack(code.ChangeMessageInvisible, group, parent, lite, 0, p, map[string]string{"invisibleTime": "60000"})
	r.Want("change invisible", resp, code.Success, "")
	if resp.ExtFields["popTime"] == "" || resp.ExtFields["reviveQid"] != "999" || resp.ExtFields["invisibleTime"] == "" {
		t.Fatalf("change invisible answer %v", resp.ExtFields)
	}
	r.Want("ack", r.Ack(code.AckMessage, group, parent, lite, 0, p, nil), code.Success, "")
	r.Want("ack again", r.Ack(code.AckMessage, group, parent, lite, 0, p, nil), code.Success, "")
	p = popFound(t, r)
	if len(p.Msgs) != 1 || string(p.Msgs[0].Body) != "two" || litetest.LMQOffset(p.Msgs[0]) != 1 {
		t.Fatalf("after the ack popped %+v", p.Msgs)
	}
}
