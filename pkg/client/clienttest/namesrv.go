// Package clienttest runs an in-process fake RocketMQ cluster on real
// remoting servers (127.0.0.1, ephemeral ports) for tests of package client
// and the tools built on it: a nameserver answering GET_ROUTEINFO_BY_TOPIC
// and brokers that store messages in memory and answer sends (10, 310,
// 320), pulls (11, with long polling), offsets (14, 15, 29, 30, 31),
// client registration (34, 35), group members (38, with 40 sent on
// changes), queue locks (41, 42), send-backs (36), END_TRANSACTION (37), a
// simple pop (200050, 200051, 200053) and lite topics (200070, 200071, the
// liteTopic acks; lite.go); they can also send clients
// CHECK_TRANSACTION_STATE, RESET_CONSUMER_CLIENT_OFFSET,
// NOTIFY_UNSUBSCRIBE_LITE and any request (AskClient). Failures can be
// injected per broker.
package clienttest

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Namesrv is the fake nameserver. Routes are built from the topics set with
// SetTopic (brokers also register the topics they auto-create).
type Namesrv struct {
	srv *remoting.Server

	mu      sync.Mutex
	brokers map[string]string                        // broker name → master address
	topics  map[string]map[string]protocol.QueueData // topic → broker name → queues
	calls   map[int32]int
}

// StartNamesrv listens on 127.0.0.1:0.
func StartNamesrv() (*Namesrv, error) {
	n := &Namesrv{
		brokers: make(map[string]string),
		topics:  make(map[string]map[string]protocol.QueueData),
		calls:   make(map[int32]int),
	}
	srv, err := newServer()
	if err != nil {
		return nil, err
	}
	n.srv = srv
	srv.Register(code.GetRouteInfoByTopic, n.route, nil)
	if err := srv.Start(); err != nil {
		return nil, err
	}
	return n, nil
}

func newServer() (*remoting.Server, error) {
	cfg := remoting.DefaultServerConfig()
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.Workers = 4
	return remoting.NewServer(cfg, nil)
}

// Addr is the listening address.
func (n *Namesrv) Addr() string { return n.srv.Addr() }

// Close stops the server.
func (n *Namesrv) Close() error { return n.srv.Shutdown(context.Background()) }

// AddBroker makes a broker known (its address goes into routes).
func (n *Namesrv) AddBroker(name, addr string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.brokers[name] = addr
}

// SetTopic sets topic's queues on broker (perm 6 = read+write unless given).
func (n *Namesrv) SetTopic(topic, broker string, queues, perm int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if perm == 0 {
		perm = protocol.PermRead | protocol.PermWrite
	}
	if n.topics[topic] == nil {
		n.topics[topic] = make(map[string]protocol.QueueData)
	}
	n.topics[topic][broker] = protocol.QueueData{BrokerName: broker, Perm: perm, ReadQueueNums: queues, WriteQueueNums: queues}
}

// DeleteTopic removes topic from every broker.
func (n *Namesrv) DeleteTopic(topic string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.topics, topic)
}

// Calls returns how many requests with code the nameserver received.
func (n *Namesrv) Calls(c int32) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.calls[c]
}

func (n *Namesrv) route(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	topic := req.Ext("topic")
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls[req.Code]++
	qds := n.topics[topic]
	if len(qds) == 0 {
		return nil, remoting.Errorf(code.TopicNotExist, "No topic route info in name server for the topic: %s", topic)
	}
	rd := protocol.TopicRouteData{FilterServerTable: map[string][]string{}}
	names := make([]string, 0, len(qds))
	for name := range qds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		rd.QueueDatas = append(rd.QueueDatas, qds[name])
		bd := protocol.BrokerData{BrokerName: name, Cluster: "DefaultCluster", BrokerAddrs: map[int64]string{}}
		if a := n.brokers[name]; a != "" {
			bd.BrokerAddrs[protocol.MasterID] = a
		}
		rd.BrokerDatas = append(rd.BrokerDatas, bd)
	}
	body, err := protocol.Marshal(rd)
	if err != nil {
		return nil, fmt.Errorf("encode route: %w", err)
	}
	resp := remoting.NewResponse(req, code.Success, "")
	resp.Body = body
	return resp, nil
}
