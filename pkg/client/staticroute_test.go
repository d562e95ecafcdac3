package client

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/rmqgo/rmq/internal/testutil/fakens"
	"github.com/rmqgo/rmq/pkg/client/clienttest"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

func mockQ(topic string, g int) protocol.MessageQueue {
	return protocol.MessageQueue{Topic: topic, BrokerName: "__syslo__global__", QueueID: g}
}

// staticRoute: logic queues 0..n-1, leaders[g] leads g at epoch; every
// broker of leaders (and extra) is in brokerDatas with address addr[name].
func staticRoute(n int, leaders map[int]string, epoch int64, addrs map[string]string) *protocol.TopicRouteData {
	rd := &protocol.TopicRouteData{FilterServerTable: map[string][]string{}, TopicQueueMappingByBroker: map[string]protocol.TopicQueueMappingInfo{}}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range addrs {
			if !yield(k) {
				return
			}
		}
	}) {
		rd.BrokerDatas = append(rd.BrokerDatas, protocol.BrokerData{BrokerName: name, BrokerAddrs: map[int64]string{0: addrs[name]}})
		// Physical queues, which clients must ignore for a static topic.
		rd.QueueDatas = append(rd.QueueDatas, protocol.QueueData{BrokerName: name, Perm: 6, ReadQueueNums: 8, WriteQueueNums: 8})
		info := protocol.TopicQueueMappingInfo{Bname: name, Epoch: epoch, Scope: protocol.MappingScopeGlobal, TotalQueues: n, CurrIDMap: map[int]int{}}
		for g, b := range leaders {
			if b == name {
				info.CurrIDMap[g] = g + 100 // physical ids differ from logic ones
			}
		}
		rd.TopicQueueMappingByBroker[name] = info
	}
	return rd
}

func TestNewTopicRouteStatic(t *testing.T) {
	addrs := map[string]string{"broker-a": "a:1", "broker-b": "b:1"}
	rd := staticRoute(4, map[int]string{0: "broker-a", 1: "broker-b", 3: "broker-a"}, 5, addrs)
	tr := newTopicRoute("T", rd, false)
	want := []protocol.MessageQueue{mockQ("T", 0), mockQ("T", 1), mockQ("T", 2), mockQ("T", 3)}
	if !slices.Equal(tr.subscribe, want) {
		t.Fatalf("subscribe %v", tr.subscribe)
	}
	// Queue 2 has no leader: not published to.
	if !slices.Equal(tr.publish.queues, []protocol.MessageQueue{mockQ("T", 0), mockQ("T", 1), mockQ("T", 3)}) {
		t.Fatalf("publish %v", tr.publish.queues)
	}
	if tr.endpoints[mockQ("T", 1)] != "broker-b" || tr.endpoints[mockQ("T", 2)] != "__syslo__none__" {
		t.Fatalf("endpoints %v", tr.endpoints)
	}
	// orderTopicConf wins for publishing, as in Java.
	rd.OrderTopicConf = "broker-a:2"
	tr = newTopicRoute("T", rd, false)
	if len(tr.publish.queues) != 2 || tr.publish.queues[0].BrokerName != "broker-a" || !tr.publish.order || len(tr.subscribe) != 4 {
		t.Fatalf("order conf: %v %v", tr.publish.queues, tr.subscribe)
	}
}

// staticFake is a nameserver and two brokers on real servers: a broker
// answers sends and pulls of the logic queues it leads and
// NOT_LEADER_FOR_QUEUE for the others.
type staticFake struct {
	t       *testing.T
	mu      sync.Mutex
	route   *protocol.TopicRouteData // what ns answers for T
	leaders map[int]string
	addrs   map[string]string
	sends   map[string][]map[string]string // broker → send headers
	offset  map[int]int64                  // logic queue → next logic offset
	ns      *fakens.Server
}

func startStaticFake(t *testing.T) *staticFake {
	f := &staticFake{t: t, leaders: map[int]string{0: "broker-a", 1: "broker-b"}, addrs: map[string]string{}, sends: map[string][]map[string]string{}, offset: map[int]int64{}}
	start := func(register func(*remoting.Server)) string {
		cfg := remoting.DefaultServerConfig()
		cfg.ListenAddr = "127.0.0.1:0"
		srv, err := remoting.NewServer(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		register(srv)
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
		return srv.Addr()
	}
	f.ns = fakens.Start(t)
	for _, name := range []string{"broker-a", "broker-b"} {
		f.addrs[name] = start(func(s *remoting.Server) {
			s.Register(code.SendMessageV2, func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
				f.mu.Lock()
				defer f.mu.Unlock()
				f.sends[name] = append(f.sends[name], req.ExtFields)
				g, _ := strconv.Atoi(req.Ext("e"))
				if f.leaders[g] != name {
					return nil, remoting.Errorf(code.NotLeaderForQueue, "%s-%d does not exist in request process of current broker %s", req.Ext("b"), g, name)
				}
				resp := remoting.NewResponse(req, code.Success, "")
				resp.ExtFields = map[string]string{"msgId": "X", "queueId": strconv.Itoa(g), "queueOffset": strconv.FormatInt(f.offset[g], 10)}
				f.offset[g]++
				return resp, nil
			}, nil)
			s.Register(code.PullMessage, func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
				f.mu.Lock()
				defer f.mu.Unlock()
				g, _ := strconv.Atoi(req.Ext("queueId"))
				if f.leaders[g] != name {
					return nil, remoting.Errorf(code.NotLeaderForQueue, "not leader")
				}
				// One message stored at physical offset 3 of a segment that
				// starts at logic offset 10000.
				m := &message.Message{Topic: "T", QueueID: int32(g + 100), QueueOffset: 3, Body: []byte("hi"),
					BornHost: netip.MustParseAddrPort("127.0.0.1:1"), StoreHost: netip.MustParseAddrPort("127.0.0.1:2")}
				body, err := message.EncodeStored(m)
				if err != nil {
					return nil, err
				}
				resp := remoting.NewResponse(req, code.Success, "")
				resp.ExtFields = map[string]string{"nextBeginOffset": "10004", "minOffset": "0", "maxOffset": "10004", "offsetDelta": "10000", "suggestWhichBrokerId": "0"}
				resp.Body = body
				return resp, nil
			}, nil)
		})
	}
	f.mu.Lock()
	f.route = staticRoute(2, f.leaders, 1, f.addrs)
	f.ns.SetRoute("T", *f.route)
	f.mu.Unlock()
	return f
}

// remap moves logic queue g to broker b at a higher epoch; the route
// changes only when publish is set (the nameserver learns it later).
func (f *staticFake) remap(g int, b string, publish bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leaders[g] = b
	if publish {
		f.route = staticRoute(2, f.leaders, f.route.TopicQueueMappingByBroker["broker-a"].Epoch+1000, f.addrs)
		f.ns.SetRoute("T", *f.route)
	}
}

func TestStaticSendFollowsRemap(t *testing.T) {
	f := startStaticFake(t)
	p, err := NewProducer(ProducerConfig{CommonConfig: CommonConfig{NameServers: []string{f.ns.Addr()}}})
	p = clienttest.Started(t, p, err)
	ctx := context.Background()
	send := func() *SendResult {
		t.Helper()
		res, err := p.SendSync(ctx, &message.Message{Topic: "T", Body: []byte("x")}, WithQueue(mockQ("T", 0)))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := send()
	// Java's SendResult: the leader's name and the logic queue id.
	if res.Queue != (protocol.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 0}) || res.QueueOffset != 0 || res.Attempts != 1 {
		t.Fatalf("first send %+v", res)
	}
	f.mu.Lock()
	h := f.sends["broker-a"][0]
	f.mu.Unlock()
	if h["n"] != "broker-a" || h["e"] != "0" || h["b"] != "T" {
		t.Fatalf("send header %v", h)
	}

	// Remap queue 0 to b; the nameserver knows it, the producer's cache
	// (fetched a moment ago) not: the refusal refreshes it all the same.
	f.remap(0, "broker-b", true)
	res = send()
	if res.Queue.BrokerName != "broker-b" || res.Attempts != 2 || res.QueueOffset != 1 {
		t.Fatalf("send after remap %+v", res)
	}
	routes := f.ns.Calls(code.GetRouteInfoByTopic)
	res = send()
	if now := f.ns.Calls(code.GetRouteInfoByTopic); res.Attempts != 1 || now != routes {
		t.Fatalf("the route was not kept: %+v, %d → %d fetches", res, routes, now)
	}

	// Many sends refused at once: one refresh serves those sent before it.
	f.remap(0, "broker-a", true)
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := p.SendSync(ctx, &message.Message{Topic: "T", Body: []byte("x")}, WithQueue(mockQ("T", 0)))
			if err == nil && (res.Queue.BrokerName != "broker-a" || res.Attempts > 2) {
				err = fmt.Errorf("sent %+v", res)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := f.ns.Calls(code.GetRouteInfoByTopic) - routes; got < 1 || got >= n {
		t.Fatalf("%d route fetches for %d refused sends", got, n)
	}
}

func TestStaticPullAndOffsets(t *testing.T) {
	f := startStaticFake(t)
	c, err := NewPullConsumer(PullConsumerConfig{CommonConfig: CommonConfig{NameServers: []string{f.ns.Addr()}}, Group: "g"})
	c = clienttest.Started(t, c, err)
	ctx := context.Background()
	qs, err := c.Queues(ctx, "T")
	if err != nil || !slices.Equal(qs, []protocol.MessageQueue{mockQ("T", 0), mockQ("T", 1)}) {
		t.Fatalf("queues %v %v", qs, err)
	}
	res, err := c.Pull(ctx, PullRequest{Queue: mockQ("T", 1), Offset: 10003})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != PullFound || len(res.Messages) != 1 || res.NextBeginOffset != 10004 {
		t.Fatalf("pull %+v", res)
	}
	if m := res.Messages[0]; m.QueueOffset != 10003 || m.QueueID != 1 {
		t.Fatalf("message queue %d offset %d", m.QueueID, m.QueueOffset)
	}
	// A remap the client has not seen: 501, then the route is refreshed
	// and the next pull reaches the new leader.
	f.remap(1, "broker-a", true)
	if _, err := c.Pull(ctx, PullRequest{Queue: mockQ("T", 1), Offset: 10003}); !IsCode(err, code.NotLeaderForQueue) {
		t.Fatalf("pull from the old leader: %v", err)
	}
	if res, err := c.Pull(ctx, PullRequest{Queue: mockQ("T", 1), Offset: 10003}); err != nil || len(res.Messages) != 1 {
		t.Fatalf("pull from the new leader: %+v %v", res, err)
	}
}
