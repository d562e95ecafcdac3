package statictopic

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/processor/consumer"
	"github.com/rmqgo/rmq/broker/processor/pull"
	"github.com/rmqgo/rmq/broker/processor/send"
	"github.com/rmqgo/rmq/broker/store/storetest"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

const tpc = "ST"

// clock is a settable test clock shared by the stores of a cluster, so
// store times of messages are known.
// node is one in-process broker: the real send, pull and offset processors
// over an in-memory store, with the static-topic rewriting in front.
type node struct {
	name     string
	cfg      *config.Config
	store    *storetest.Store
	topics   *topic.Manager
	mgr      *Manager
	svc      *Service
	handlers map[int32]remoting.Handler
}

// cluster wires nodes together through fakeRemote.
type cluster struct {
	t      testing.TB
	clk    *testutil.FakeClock
	nodes  map[string]*node
	remote *fakeRemote
}

type call struct {
	broker string
	code   int32
	ext    map[string]string
}

// fakeRemote delivers forwarded requests to the target node's (wrapped)
// handlers and records them.
type fakeRemote struct {
	c     *cluster
	mu    sync.Mutex
	calls []call
	down  map[string]bool
}

func (r *fakeRemote) Invoke(ctx context.Context, bname string, req *remoting.Command) (*remoting.Command, error) {
	r.mu.Lock()
	r.calls = append(r.calls, call{bname, req.Code, cloneExt(req.ExtFields)})
	down := r.down[bname]
	r.mu.Unlock()
	if down {
		return nil, remoting.ErrTimeout
	}
	n := r.c.nodes[bname]
	if n == nil {
		return nil, context.DeadlineExceeded
	}
	h := n.handlers[req.Code]
	if h == nil {
		return remoting.NewResponse(req, code.RequestCodeNotSupported, "no handler"), nil
	}
	resp, err := h(ctx, nil, req)
	if err != nil {
		resp = remoting.ResponseFromError(req, err)
	}
	return resp, nil
}

func (r *fakeRemote) reset() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

func newCluster(t testing.TB, names ...string) *cluster {
	c := &cluster{t: t, clk: testutil.NewFakeClock(time.UnixMilli(1_000_000)), nodes: map[string]*node{}}
	c.remote = &fakeRemote{c: c, down: map[string]bool{}}
	for _, n := range names {
		c.nodes[n] = newNode(t, n, c.clk, c.remote)
	}
	return c
}

func newNode(t testing.TB, name string, clk *testutil.FakeClock, remote Remote) *node {
	t.Helper()
	cfg := config.Default(config.Host{Hostname: name, IP: "127.0.0.1", Home: t.TempDir()})
	cfg.BrokerName = name
	cfg.Finalize()
	get := func() *config.Config { return cfg }
	n := &node{name: name, cfg: cfg, store: storetest.New(storetest.WithClock(clk.Now)), handlers: map[int32]remoting.Handler{}}
	var err error
	if n.topics, err = topic.New(topic.Options{Config: get}); err != nil {
		t.Fatal(err)
	}
	subs, err := subscription.New(subscription.Options{Config: get})
	if err != nil {
		t.Fatal(err)
	}
	consumers := client.NewConsumerManager(client.ManagerOptions{})
	pp, err := pull.New(pull.Deps{Config: get, Store: n.store, Topics: n.topics, Subscriptions: subs, Consumers: consumers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pp.Close)
	cp, err := consumer.New(consumer.Deps{Config: get, Store: n.store, Topics: n.topics, Subscriptions: subs, Consumers: consumers, PullOffsets: pp})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := send.New(send.Deps{Config: get, Topics: n.topics, Store: n.store, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	for _, hs := range []map[int32]remoting.Handler{pp.Handlers(), cp.Handlers(), sp.Handlers()} {
		for c, h := range hs {
			n.handlers[c] = h
		}
	}
	if n.mgr, err = OpenManager(ManagerOptions{BrokerName: name}); err != nil {
		t.Fatal(err)
	}
	if n.svc, err = New(Deps{Config: get, Mappings: n.mgr, Store: n.store, Topics: n.topics, Remote: remote, Now: clk.Now}); err != nil {
		t.Fatal(err)
	}
	for _, c := range WrappedCodes {
		n.handlers[c] = n.svc.Handler(c, n.handlers[c])
	}
	n.handlers[code.UpdateAndCreateStaticTopic] = n.svc.UpdateAndCreateStaticTopic
	n.store.AddArrivalListener(n.svc.OnArrival)
	n.svc.Start()
	t.Cleanup(n.svc.Close)
	return n
}

// do runs one request on a node and returns the response (errors mapped
// to responses as the server does).
func (n *node) do(t testing.TB, req *remoting.Command) *remoting.Command {
	t.Helper()
	h := n.handlers[req.Code]
	if h == nil {
		t.Fatalf("%s: no handler for %d", n.name, req.Code)
	}
	resp, err := h(context.Background(), nil, req)
	if err != nil {
		resp = remoting.ResponseFromError(req, err)
	}
	if resp == nil {
		t.Fatalf("%s: no response to %d", n.name, req.Code)
	}
	return resp
}

func it(bname string, gen, qid int, logic int64) protocol.LogicQueueMappingItem {
	return protocol.LogicQueueMappingItem{Bname: bname, Gen: gen, QueueID: qid, LogicOffset: logic, StartOffset: 0, EndOffset: -1, TimeOfStart: -1, TimeOfEnd: -1}
}

func detail(bname string, epoch int64, total int, hosted map[int][]protocol.LogicQueueMappingItem) protocol.TopicQueueMappingDetail {
	if hosted == nil {
		hosted = map[int][]protocol.LogicQueueMappingItem{}
	}
	return protocol.TopicQueueMappingDetail{Topic: tpc, Bname: bname, Epoch: epoch, TotalQueues: total, Scope: protocol.MappingScopeGlobal,
		CurrIDMap: map[int]int{}, HostedQueues: hosted}
}

// staticReq is request 513 as the Java admin sends it.
func staticReq(t testing.TB, queues int, d protocol.TopicQueueMappingDetail, force bool) *remoting.Command {
	body, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return remoting.NewRequest(code.UpdateAndCreateStaticTopic, map[string]string{
		"topic": d.Topic, "defaultTopic": "TBW102", "readQueueNums": strconv.Itoa(queues), "writeQueueNums": strconv.Itoa(queues),
		"perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "force": strconv.FormatBool(force),
	}, body)
}

func (c *cluster) apply(queues int, d protocol.TopicQueueMappingDetail) {
	c.t.Helper()
	if r := c.nodes[d.Bname].do(c.t, staticReq(c.t, queues, d, false)); r.Code != code.Success {
		c.t.Fatalf("513 on %s: %d %s", d.Bname, r.Code, r.Remark)
	}
}

func sendReq(queueID int, body string) *remoting.Command {
	return remoting.NewRequest(code.SendMessageV2, map[string]string{
		"a": "pg", "b": tpc, "c": "TBW102", "d": "4", "e": strconv.Itoa(queueID), "f": "0", "g": "1", "h": "0",
		"i": "", "j": "0", "k": "false", "m": "false", "n": "broker-x",
	}, []byte(body))
}

func pullReq(queueID int, offset int64, sysFlag int) *remoting.Command {
	return remoting.NewRequest(code.PullMessage, map[string]string{
		"consumerGroup": "cg", "topic": tpc, "queueId": strconv.Itoa(queueID), "queueOffset": strconv.FormatInt(offset, 10),
		"maxMsgNums": "32", "sysFlag": strconv.Itoa(sysFlag | pull.FlagSubscription), "commitOffset": "0",
		"suspendTimeoutMillis": "1000", "subscription": "*", "subVersion": "0", "expressionType": "TAG",
		"bname": MockBrokerName(""),
	}, nil)
}

func offReq(c int32, queueID int, kv ...string) *remoting.Command {
	ext := map[string]string{"topic": tpc, "queueId": strconv.Itoa(queueID), "consumerGroup": "cg"}
	for i := 0; i+1 < len(kv); i += 2 {
		ext[kv[i]] = kv[i+1]
	}
	return remoting.NewRequest(c, ext, nil)
}

// globalRoute is the route of a static topic in the global scope: each
// broker of curr maps it at epoch e with total logic queues, curr[broker]
// being the logic queues it leads (logic id → physical id).
func globalRoute(e int64, total int, curr map[string]map[int]int) *protocol.TopicRouteData {
	byBroker := map[string]protocol.TopicQueueMappingInfo{}
	for b, ids := range curr {
		byBroker[b] = protocol.TopicQueueMappingInfo{Bname: b, Epoch: e, TotalQueues: total, Scope: protocol.MappingScopeGlobal, CurrIDMap: ids}
	}
	return &protocol.TopicRouteData{TopicQueueMappingByBroker: byBroker}
}
