package lite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// rig is an in-process broker (real store, real remoting) and a client
// speaking raw lite requests to it.
type rig struct {
	t      *testing.T
	b      *broker.Broker
	client *remoting.Client
}

// startNamesrv answers broker registrations.
func startNamesrv(t testing.TB) string {
	t.Helper()
	cfg := remoting.DefaultServerConfig()
	cfg.ListenAddr = "127.0.0.1:0"
	srv, err := remoting.NewServer(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ok := func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		return remoting.NewResponse(req, code.Success, ""), nil
	}
	srv.Register(code.RegisterBroker, ok, nil)
	srv.Register(code.UnregisterBroker, ok, nil)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return srv.Addr()
}

func newRig(t *testing.T, mutate func(*config.Config)) *rig {
	t.Helper()
	c := config.Default(config.Host{Hostname: "broker-a", IP: "127.0.0.1", Home: t.TempDir()})
	c.ListenPort = 0
	c.BindAddress = "127.0.0.1"
	c.StorePathRootDir = t.TempDir()
	c.NamesrvAddr = startNamesrv(t)
	c.SendMessageThreadPoolNums, c.PullMessageThreadPoolNums, c.AdminBrokerThreadPoolNums = 2, 2, 2
	c.EnableLmq, c.EnableMultiDispatch = true, true
	c.MinLiteTTL = 500 * time.Millisecond
	c.LiteTTLCheckInterval = 300 * time.Millisecond
	c.LiteEventCheckInterval = 200 * time.Millisecond
	if mutate != nil {
		mutate(c)
	}
	b := startBrokerOf(t, c)
	r := &rig{t: t, b: b, client: remoting.NewClient(remoting.DefaultClientConfig(), nil)}
	t.Cleanup(func() { _ = r.client.Close() })
	return r
}

// startBrokerOf starts an in-process broker, stopped at cleanup.
func startBrokerOf(t testing.TB, c *config.Config) *broker.Broker {
	t.Helper()
	b, err := broker.New(c, nil, broker.WithRegisterTiming(time.Hour, time.Hour, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Shutdown(context.Background()) })
	return b
}

func (r *rig) invoke(c int32, ext map[string]string, body []byte) *remoting.Command {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := r.client.Invoke(ctx, r.b.Addr(), remoting.NewRequest(c, ext, body))
	if err != nil {
		r.t.Fatalf("invoke %d: %v", c, err)
	}
	return resp
}

func (r *rig) want(what string, resp *remoting.Command, c int32, remark string) {
	r.t.Helper()
	if resp.Code != c || !strings.Contains(resp.Remark, remark) {
		r.t.Fatalf("%s: code %d remark %q; want %d with %q", what, resp.Code, resp.Remark, c, remark)
	}
}

func (r *rig) createTopic(name, attrs string, queues int) {
	r.t.Helper()
	ext := map[string]string{"topic": name, "readQueueNums": strconv.Itoa(queues), "writeQueueNums": strconv.Itoa(queues), "perm": "6",
		"topicFilterType": "SINGLE_TAG", "defaultTopic": "TBW102"}
	if attrs != "" {
		ext["attributes"] = attrs
	}
	r.want("create topic "+name, r.invoke(code.UpdateAndCreateTopic, ext, nil), code.Success, "")
}

func (r *rig) createGroup(name string, attrs map[string]string) {
	r.t.Helper()
	body, _ := json.Marshal(map[string]any{"groupName": name, "consumeEnable": true, "attributes": attrs})
	r.want("create group "+name, r.invoke(code.UpdateAndCreateSubscriptionGroup, nil, body), code.Success, "")
}

func (r *rig) send(topic string, qid int, body string, kv ...string) *remoting.Command {
	r.t.Helper()
	props := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		props[kv[i]] = kv[i+1]
	}
	p, err := message.EncodeProperties(props)
	if err != nil {
		r.t.Fatal(err)
	}
	return r.invoke(code.SendMessage, map[string]string{
		"producerGroup": "pg", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": strconv.Itoa(qid), "sysFlag": "0", "bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "flag": "0",
		"properties": string(p), "reconsumeTimes": "0", "unitMode": "false", "batch": "false",
	}, []byte(body))
}

func (r *rig) subscribe(action, clientID, group, topic string, lites []string, opt map[string]any) *remoting.Command {
	r.t.Helper()
	dto := map[string]any{"action": action, "clientId": clientID, "group": group, "topic": topic, "liteTopicSet": lites, "version": 1}
	if opt != nil {
		dto["offsetOption"] = opt
	}
	body, _ := json.Marshal(map[string]any{"subscriptionSet": []any{dto}})
	return r.invoke(code.LiteSubscriptionCtl, nil, body)
}

func popExt(clientID, group, topic string, max int, invisible, poll time.Duration) map[string]string {
	return map[string]string{
		"clientId": clientID, "consumerGroup": group, "topic": topic, "maxMsgNum": strconv.Itoa(max),
		"invisibleTime": strconv.FormatInt(invisible.Milliseconds(), 10), "pollTime": strconv.FormatInt(poll.Milliseconds(), 10),
		"bornTime": strconv.FormatInt(time.Now().UnixMilli(), 10),
	}
}

func (r *rig) pop(clientID, group, topic string, max int, invisible, poll time.Duration) *remoting.Command {
	r.t.Helper()
	return r.invoke(code.PopLiteMessage, popExt(clientID, group, topic, max, invisible, poll), nil)
}

// popAsync starts a long-polling pop and returns its answer channel.
func (r *rig) popAsync(clientID, group, topic string, poll time.Duration) <-chan *remoting.Command {
	out := make(chan *remoting.Command, 1)
	ctx, cancel := context.WithTimeout(context.Background(), poll+5*time.Second)
	err := r.client.InvokeAsync(ctx, r.b.Addr(), remoting.NewRequest(code.PopLiteMessage, popExt(clientID, group, topic, 32, 30*time.Second, poll), nil),
		func(resp *remoting.Command, err error) {
			cancel()
			if err != nil {
				resp = &remoting.Command{Code: -1, Remark: err.Error()}
			}
			out <- resp
		})
	if err != nil {
		cancel()
		r.t.Fatalf("pop async: %v", err)
	}
	return out
}

// popped are the messages of a pop answer.
type popped struct {
	msgs               []*message.Message
	counts             []string
	popTime, invisible int64
}

func decodePop(t *testing.T, resp *remoting.Command) popped {
	t.Helper()
	if resp.Code != code.Success {
		t.Fatalf("pop: code %d %q", resp.Code, resp.Remark)
	}
	var p popped
	b := resp.Body
	for len(b) > 0 {
		m, n, err := message.DecodeStored(b, message.DecodeOptions{})
		if err != nil {
			t.Fatalf("decode pop body: %v", err)
		}
		p.msgs = append(p.msgs, m)
		b = b[n:]
	}
	if s := resp.ExtFields["orderCountInfo"]; s != "" {
		p.counts = strings.Split(s, ";")
	}
	p.popTime, _ = strconv.ParseInt(resp.ExtFields["popTime"], 10, 64)
	p.invisible, _ = strconv.ParseInt(resp.ExtFields["invisibleTime"], 10, 64)
	if resp.ExtFields["reviveQid"] != "999" {
		t.Fatalf("reviveQid %q", resp.ExtFields["reviveQid"])
	}
	return p
}

// lmqOffset is the LMQ offset a popped message carries.
func lmqOffset(m *message.Message) int64 {
	n, err := strconv.ParseInt(m.Properties[message.PropertyInnerMultiQueueOffset], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func (r *rig) ack(c int32, group, topic, lite string, offset int64, p popped, extra map[string]string) *remoting.Command {
	r.t.Helper()
	ext := map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": "0", "offset": strconv.FormatInt(offset, 10),
		"extraInfo": fmt.Sprintf("0 %d %d 999 0 broker-a 0 %d", p.popTime, p.invisible, offset), "liteTopic": lite,
	}
	for k, v := range extra {
		ext[k] = v
	}
	return r.invoke(c, ext, nil)
}

func (r *rig) admin(c int32, ext map[string]string, into any) *remoting.Command {
	r.t.Helper()
	resp := r.invoke(c, ext, nil)
	if resp.Code == code.Success && into != nil {
		if err := protocol.Unmarshal(resp.Body, into); err != nil {
			r.t.Fatalf("admin %d body %s: %v", c, resp.Body, err)
		}
	}
	return resp
}

func eventually(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not met after %v: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
