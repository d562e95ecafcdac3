// Package litetest runs an in-process broker with lite topics enabled (real
// store, real remoting) and speaks raw lite requests to it, for the tests of
// broker/lite and its packages.
package litetest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/internal/testutil/fakens"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

// Rig is an in-process broker (real store, real remoting) and a client
// speaking raw lite requests to it.
type Rig struct {
	T      testing.TB
	B      *broker.Broker
	Client *remoting.Client
}

// New starts a broker on 127.0.0.1 (free port, temp dirs, LMQ on, short lite
// intervals); mutate edits its config first, opts are passed to broker.New.
func New(t testing.TB, mutate func(*config.Config), opts ...broker.Option) *Rig {
	t.Helper()
	c := config.Default(config.Host{Hostname: "broker-a", IP: "127.0.0.1", Home: t.TempDir()})
	c.ListenPort = 0
	c.BindAddress = "127.0.0.1"
	c.StorePathRootDir = t.TempDir()
	c.NamesrvAddr = fakens.Start(t).Addr()
	c.SendMessageThreadPoolNums, c.PullMessageThreadPoolNums, c.AdminBrokerThreadPoolNums = 2, 2, 2
	c.EnableLmq, c.EnableMultiDispatch = true, true
	c.MinLiteTTL = 500 * time.Millisecond
	c.LiteTTLCheckInterval = 300 * time.Millisecond
	c.LiteEventCheckInterval = 200 * time.Millisecond
	if mutate != nil {
		mutate(c)
	}
	b := StartBroker(t, c, opts...)
	r := &Rig{T: t, B: b, Client: remoting.NewClient(remoting.DefaultClientConfig(), nil)}
	t.Cleanup(func() { _ = r.Client.Close() })
	return r
}

// StartBroker starts an in-process broker, stopped at cleanup.
func StartBroker(t testing.TB, c *config.Config, opts ...broker.Option) *broker.Broker {
	t.Helper()
	opts = append([]broker.Option{broker.WithRegisterTiming(time.Hour, time.Hour, 20*time.Millisecond)}, opts...)
	b, err := broker.New(c, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	testutil.StartWithShutdown(t, b, 30*time.Second, t.Logf)
	return b
}

// Invoke sends a request and waits for the answer.
func (r *Rig) Invoke(c int32, ext map[string]string, body []byte) *remoting.Command {
	r.T.Helper()
	return remotingtest.Invoke(r.T, r.Client, r.B.Addr(), c, ext, body)
}

// Want fails the test unless resp has code c and its remark contains remark.
func (r *Rig) Want(what string, resp *remoting.Command, c int32, remark string) {
	r.T.Helper()
	remotingtest.Want(r.T, what, resp, c, remark)
}

// CreateTopic creates a topic with attributes ("+k=v,...").
func (r *Rig) CreateTopic(name, attrs string, queues int) {
	r.T.Helper()
	ext := map[string]string{"topic": name, "readQueueNums": strconv.Itoa(queues), "writeQueueNums": strconv.Itoa(queues), "perm": "6",
		"topicFilterType": "SINGLE_TAG", "defaultTopic": "TBW102"}
	if attrs != "" {
		ext["attributes"] = attrs
	}
	r.Want("create topic "+name, r.Invoke(code.UpdateAndCreateTopic, ext, nil), code.Success, "")
}

// CreateGroup creates a consume-enabled group with attributes.
func (r *Rig) CreateGroup(name string, attrs map[string]string) {
	r.T.Helper()
	body, _ := json.Marshal(map[string]any{"groupName": name, "consumeEnable": true, "attributes": attrs})
	r.Want("create group "+name, r.Invoke(code.UpdateAndCreateSubscriptionGroup, nil, body), code.Success, "")
}

// CreateLiteAndPlain creates what most lite tests start from: the LITE
// parent topic with attrs and queues, the lite group bound to it, and a
// plain topic "Plain" with a plain group "plain_cg" beside them.
func (r *Rig) CreateLiteAndPlain(parent, attrs string, queues int, group string) {
	r.T.Helper()
	r.CreateTopic(parent, attrs, queues)
	r.CreateTopic("Plain", "", 1)
	r.CreateGroup(group, map[string]string{"+lite.bind.topic": parent})
	r.CreateGroup("plain_cg", nil)
}

// Send sends one message with properties kv (key, value, ...).
func (r *Rig) Send(topic string, qid int, body string, kv ...string) *remoting.Command {
	r.T.Helper()
	return r.Invoke(code.SendMessage, remotingtest.SendExt(r.T, "pg", topic, qid, kv...), []byte(body))
}

// Subscribe sends one LITE_SUBSCRIPTION_CTL entry.
func (r *Rig) Subscribe(action, clientID, group, topic string, lites []string, opt map[string]any) *remoting.Command {
	r.T.Helper()
	dto := map[string]any{"action": action, "clientId": clientID, "group": group, "topic": topic, "liteTopicSet": lites, "version": 1}
	if opt != nil {
		dto["offsetOption"] = opt
	}
	body, _ := json.Marshal(map[string]any{"subscriptionSet": []any{dto}})
	return r.Invoke(code.LiteSubscriptionCtl, nil, body)
}

// PopExt is a POP_LITE_MESSAGE header.
func PopExt(clientID, group, topic string, max int, invisible, poll time.Duration) map[string]string {
	return map[string]string{
		"clientId": clientID, "consumerGroup": group, "topic": topic, "maxMsgNum": strconv.Itoa(max),
		"invisibleTime": strconv.FormatInt(invisible.Milliseconds(), 10), "pollTime": strconv.FormatInt(poll.Milliseconds(), 10),
		"bornTime": strconv.FormatInt(time.Now().UnixMilli(), 10),
	}
}

// Pop sends POP_LITE_MESSAGE.
func (r *Rig) Pop(clientID, group, topic string, max int, invisible, poll time.Duration) *remoting.Command {
	r.T.Helper()
	return r.Invoke(code.PopLiteMessage, PopExt(clientID, group, topic, max, invisible, poll), nil)
}

// PopAsync starts a long-polling pop and returns its answer channel.
func (r *Rig) PopAsync(clientID, group, topic string, poll time.Duration) <-chan *remoting.Command {
	r.T.Helper()
	req := remoting.NewRequest(code.PopLiteMessage, PopExt(clientID, group, topic, 32, 30*time.Second, poll), nil)
	return remotingtest.InvokeAsync(r.T, r.Client, r.B.Addr(), req, poll+5*time.Second)
}

// Popped are the messages of a pop answer.
type Popped struct {
	Msgs               []*message.Message
	Counts             []string
	PopTime, Invisible int64
}

// DecodePop decodes a successful pop answer.
func DecodePop(t testing.TB, resp *remoting.Command) Popped {
	t.Helper()
	if resp.Code != code.Success {
		t.Fatalf("pop: code %d %q", resp.Code, resp.Remark)
	}
	var p Popped
	b := resp.Body
	for len(b) > 0 {
		m, n, err := message.DecodeStored(b, message.DecodeOptions{})
		if err != nil {
			t.Fatalf("decode pop body: %v", err)
		}
		p.Msgs = append(p.Msgs, m)
		b = b[n:]
	}
	if s := resp.ExtFields["orderCountInfo"]; s != "" {
		p.Counts = strings.Split(s, ";")
	}
	p.PopTime, _ = strconv.ParseInt(resp.ExtFields["popTime"], 10, 64)
	p.Invisible, _ = strconv.ParseInt(resp.ExtFields["invisibleTime"], 10, 64)
	if resp.ExtFields["reviveQid"] != "999" {
		t.Fatalf("reviveQid %q", resp.ExtFields["reviveQid"])
	}
	return p
}

// LMQOffset is the LMQ offset a popped message carries.
func LMQOffset(m *message.Message) int64 {
	n, err := strconv.ParseInt(m.Properties[message.PropertyInnerMultiQueueOffset], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// Ack sends an ack-shaped request (ACK_MESSAGE, ACK_LITE_MESSAGE,
// CHANGE_MESSAGE_INVISIBLETIME) for offset of lite with p's receipt.
func (r *Rig) Ack(c int32, group, topic, lite string, offset int64, p Popped, extra map[string]string) *remoting.Command {
	r.T.Helper()
	ext := map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": "0", "offset": strconv.FormatInt(offset, 10),
		"extraInfo": fmt.Sprintf("0 %d %d 999 0 broker-a 0 %d", p.PopTime, p.Invisible, offset), "liteTopic": lite,
	}
	for k, v := range extra {
		ext[k] = v
	}
	return r.Invoke(c, ext, nil)
}

// Admin sends an admin request and decodes a successful body into into.
func (r *Rig) Admin(c int32, ext map[string]string, into any) *remoting.Command {
	r.T.Helper()
	resp := r.Invoke(c, ext, nil)
	if resp.Code == code.Success && into != nil {
		if err := protocol.Unmarshal(resp.Body, into); err != nil {
			r.T.Fatalf("admin %d body %s: %v", c, resp.Body, err)
		}
	}
	return resp
}
