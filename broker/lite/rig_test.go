package lite_test

import (
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/lite/litetest"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
)

// rig is litetest.Rig with the short names these tests use.
type rig struct {
	t      *testing.T
	b      *broker.Broker
	client *remoting.Client
	x      *litetest.Rig
}

func newRig(t *testing.T, mutate func(*config.Config), opts ...broker.Option) *rig {
	t.Helper()
	x := litetest.New(t, mutate, opts...)
	return &rig{t: t, b: x.B, client: x.Client, x: x}
}

func startBrokerOf(t testing.TB, c *config.Config, opts ...broker.Option) *broker.Broker {
	return litetest.StartBroker(t, c, opts...)
}

func (r *rig) invoke(c int32, ext map[string]string, body []byte) *remoting.Command {
	r.t.Helper()
	return r.x.Invoke(c, ext, body)
}

func (r *rig) want(what string, resp *remoting.Command, c int32, remark string) {
	r.t.Helper()
	r.x.Want(what, resp, c, remark)
}

func (r *rig) createTopic(name, attrs string, queues int) {
	r.t.Helper()
	r.x.CreateTopic(name, attrs, queues)
}

func (r *rig) createGroup(name string, attrs map[string]string) {
	r.t.Helper()
	r.x.CreateGroup(name, attrs)
}

func (r *rig) send(topic string, qid int, body string, kv ...string) *remoting.Command {
	r.t.Helper()
	return r.x.Send(topic, qid, body, kv...)
}

func (r *rig) subscribe(action, clientID, group, topic string, lites []string, opt map[string]any) *remoting.Command {
	r.t.Helper()
	return r.x.Subscribe(action, clientID, group, topic, lites, opt)
}

func popExt(clientID, group, topic string, max int, invisible, poll time.Duration) map[string]string {
	return litetest.PopExt(clientID, group, topic, max, invisible, poll)
}

func (r *rig) pop(clientID, group, topic string, max int, invisible, poll time.Duration) *remoting.Command {
	r.t.Helper()
	return r.x.Pop(clientID, group, topic, max, invisible, poll)
}

func (r *rig) popAsync(clientID, group, topic string, poll time.Duration) <-chan *remoting.Command {
	return r.x.PopAsync(clientID, group, topic, poll)
}

// popped are the messages of a pop answer.
type popped struct {
	msgs               []*message.Message
	counts             []string
	popTime, invisible int64
}

func decodePop(t *testing.T, resp *remoting.Command) popped {
	t.Helper()
	p := litetest.DecodePop(t, resp)
	return popped{msgs: p.Msgs, counts: p.Counts, popTime: p.PopTime, invisible: p.Invisible}
}

func lmqOffset(m *message.Message) int64 { return litetest.LMQOffset(m) }

func (r *rig) ack(c int32, group, topic, lite string, offset int64, p popped, extra map[string]string) *remoting.Command {
	r.t.Helper()
	return r.x.Ack(c, group, topic, lite, offset, litetest.Popped{Msgs: p.msgs, Counts: p.counts, PopTime: p.popTime, Invisible: p.invisible}, extra)
}

func (r *rig) admin(c int32, ext map[string]string, into any) *remoting.Command {
	r.t.Helper()
	return r.x.Admin(c, ext, into)
}
