package send

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

func replyReq(short bool, properties string) *remoting.Command {
	if short {
		return request(code.SendReplyMessageV2, v2Ext("C1_REPLY_TOPIC", 0, properties), []byte("reply body"))
	}
	return request(code.SendReplyMessage, v1Ext("C1_REPLY_TOPIC", 0, properties), []byte("reply body"))
}

var replyProps = props("MSG_TYPE", "reply", "CORRELATION_ID", "corr-1", "REPLY_TO_CLIENT", "client-1", "TTL", "3000")

func TestReplyPushedAndStored(t *testing.T) {
	for _, short := range []bool{false, true} {
		f := newFixture(t)
		resp := f.call(t, replyReq(short, replyProps))
		wantCode(t, resp, code.Success)
		if len(f.pusher.reqs) != 1 || f.pusher.clients[0] != "client-1" {
			t.Fatalf("pushes %v", f.pusher.clients)
		}
		push := f.pusher.reqs[0]
		if push.Code != code.PushReplyMessageToClient || string(push.Body) != "reply body" {
			t.Errorf("push %+v", push)
		}
		for _, k := range []string{"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
			"bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "bornHost", "storeHost", "storeTimestamp"} {
			if _, ok := push.ExtFields[k]; !ok {
				t.Errorf("push lacks %s", k)
			}
		}
		if push.Ext("topic") != "C1_REPLY_TOPIC" || push.Ext("storeHost") != "10.0.0.1:10911" {
			t.Errorf("push ext %v", push.ExtFields)
		}
		pp := message.DecodeProperties([]byte(push.Ext("properties")))
		if pp["CORRELATION_ID"] != "corr-1" || pp["PUSH_REPLY_TIME"] == "" || pp["MSG_REGION"] != "DefaultRegion" || pp["TRACE_ON"] != "true" {
			t.Errorf("push properties %v", pp)
		}
		m := f.store.last(t)
		if m.Topic != "C1_REPLY_TOPIC" || m.Property("CORRELATION_ID") != "corr-1" || m.Property("PUSH_REPLY_TIME") != "" || m.Property("MSG_REGION") != "DefaultRegion" {
			t.Errorf("stored %s %v", m.Topic, m.Properties)
		}
		if resp.Ext("msgId") != message.OffsetMsgID(testStoreHost, m.CommitLogOffset) || resp.Ext("queueOffset") != "0" ||
			resp.Ext("queueId") != "0" || resp.Ext("MSG_REGION") == "" {
			t.Errorf("response %v", resp.ExtFields)
		}
	}
}

func TestReplyPushFailures(t *testing.T) {
	tests := []struct {
		name   string
		props  string
		setup  func(*fixture)
		remark string
	}{
		{"no REPLY_TO_CLIENT", props("CORRELATION_ID", "c"), nil, "REPLY_TO_CLIENT"},
		{"no channel", replyProps, func(f *fixture) { f.pusher.err = ErrNoReplyChannel }, "not found"},
		{"push error", replyProps, func(f *fixture) { f.pusher.err = errors.New("timeout") }, "timeout"},
		{"client refuses", replyProps, func(f *fixture) { f.pusher.resp = &remoting.Command{Code: code.SystemError, Remark: "nope"} }, "nope"},
		{"no pusher wired", replyProps, func(f *fixture) { f.p.d.Replies = nil }, "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.setup != nil {
				tt.setup(f)
			}
			resp := f.call(t, replyReq(false, tt.props))
			wantCode(t, resp, code.SystemError)
			if !strings.Contains(resp.Remark, tt.remark) {
				t.Errorf("remark %q does not mention %q", resp.Remark, tt.remark)
			}
			// Java stores the reply even when the push failed.
			if n := len(f.store.stored(t)); n != 1 {
				t.Errorf("stored %d replies", n)
			}
			if resp.Ext("msgId") == "" {
				t.Errorf("stored reply's msgId missing: %v", resp.ExtFields)
			}
		})
	}
}

func TestReplyNotStored(t *testing.T) {
	f := newFixture(t, func(c *config.Config) { c.StoreReplyMessageEnable = false })
	resp := f.call(t, replyReq(true, replyProps))
	wantCode(t, resp, code.Success)
	if resp.Ext("msgId") != "0" || resp.Ext("queueOffset") != "0" {
		t.Errorf("response %v", resp.ExtFields)
	}
	if n := len(f.store.stored(t)); n != 0 {
		t.Errorf("stored %d", n)
	}
}

func TestReplyChecks(t *testing.T) {
	f := newFixture(t)
	wantCode(t, f.call(t, with(replyReq(false, replyProps), "topic", "bad topic")), code.InvalidParameter)
	wantCode(t, f.call(t, with(replyReq(true, replyProps), "e", "5")), code.InvalidParameter)
	wantCode(t, f.call(t, with(replyReq(true, replyProps), "a", remotingtest.Absent)), code.InvalidParameter)
	if len(f.pusher.reqs) != 0 {
		t.Error("pushed a rejected reply")
	}
}

func TestChannelPusher(t *testing.T) {
	p := ChannelPusher{Find: func(string) *remoting.Channel { return nil }}
	if _, err := p.PushReply(context.Background(), "c", remoting.NewRequest(code.PushReplyMessageToClient, nil, nil)); !errors.Is(err, ErrNoReplyChannel) {
		t.Fatalf("err %v", err)
	}
	if _, err := (ChannelPusher{}).PushReply(context.Background(), "c", nil); !errors.Is(err, ErrNoReplyChannel) {
		t.Fatalf("err %v", err)
	}
}
