package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/rmqgo/rmq/broker/grpcserver"
	"github.com/rmqgo/rmq/broker/topic"
	pcfg "github.com/rmqgo/rmq/pkg/config"
	"github.com/rmqgo/rmq/pkg/protocol"
	st "github.com/rmqgo/rmq/pkg/statictopic"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// The nameserver side of the gRPC QueryRoute across brokers
// (broker/grpcserver/route.go, docs/compatibility.md).

var _ grpcserver.Router = grpcBackend{}

// Route is the topic's route from the nameservers: each broker name's
// master address and queue numbers. A topic the nameservers do not know
// is not found.
func (g grpcBackend) Route(ctx context.Context, name string) ([]grpcserver.RouteBroker, bool, error) {
	rd, err := g.b.topicRoute(ctx, name)
	if err != nil {
		var ce *remoting.CodeError
		if errors.As(err, &ce) && ce.Code == code.TopicNotExist {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("topic route of %s: %w", name, err)
	}
	masters := make(map[string]string, len(rd.BrokerDatas))
	for _, bd := range rd.BrokerDatas {
		if a := bd.BrokerAddrs[protocol.MasterID]; a != "" {
			masters[bd.BrokerName] = a
		}
	}
	static := len(rd.TopicQueueMappingByBroker) > 0
	led := staticLeaders(name, rd)
	var out []grpcserver.RouteBroker
	for _, qd := range rd.QueueDatas {
		addr, ok := masters[qd.BrokerName]
		if !ok {
			continue // no master online: nothing to send to
		}
		out = append(out, grpcserver.RouteBroker{Name: qd.BrokerName, Addr: addr, Topic: grpcserver.Topic{
			ReadQueues: qd.ReadQueueNums, WriteQueues: qd.WriteQueueNums, Perm: qd.Perm,
			Static: static, Logic: led[qd.BrokerName],
		}})
	}
	return out, len(out) > 0, nil
}

// staticLeaders is, for a static topic's route, the logic queue ids each
// broker leads, ascending, as the remoting clients compute them
// (pkg/statictopic.Endpoints, docs/static-topics.md §6.2); logic queues
// nobody leads are left out. Nil for a normal topic.
func staticLeaders(topic string, rd *protocol.TopicRouteData) map[string][]int32 {
	if len(rd.TopicQueueMappingByBroker) == 0 {
		return nil
	}
	out := map[string][]int32{}
	for mq, broker := range st.Endpoints(topic, rd.TopicQueueMappingByBroker) {
		if broker == st.MockBrokerNone {
			continue
		}
		out[broker] = append(out[broker], int32(mq.QueueID))
	}
	for _, ids := range out {
		slices.Sort(ids)
	}
	return out
}

// Self is this broker's remoting address (brokerIP1:listenPort, what it
// registers) and whether it is its set's master now.
func (g grpcBackend) Self() (string, bool) {
	return g.b.Addr(), g.b.cfg.Get().IsMaster()
}

// PeerEndpoint reads another broker's gRPC endpoint from its configuration
// (GET_BROKER_CONFIG): brokerIP1 and grpcServerPort when enableGrpcServer
// is on. A port of 0 (a free port picked at start, tests) cannot be told.
func (g grpcBackend) PeerEndpoint(ctx context.Context, brokerAddr string) (string, int, bool, error) {
	resp, err := g.b.client.Invoke(ctx, brokerAddr, remoting.NewRequest(code.GetBrokerConfig, nil, nil))
	if err != nil {
		return "", 0, false, fmt.Errorf("broker config of %s: %w", brokerAddr, err)
	}
	if resp.Code != code.Success {
		return "", 0, false, fmt.Errorf("broker config of %s: code %d: %s", brokerAddr, resp.Code, resp.Remark)
	}
	props, err := pcfg.ParseProperties(resp.Body)
	if err != nil {
		return "", 0, false, fmt.Errorf("broker config of %s: %w", brokerAddr, err)
	}
	if on, _ := strconv.ParseBool(props["enableGrpcServer"]); !on {
		return "", 0, false, nil
	}
	port, err := strconv.Atoi(props["grpcServerPort"])
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, false, nil
	}
	host := props["brokerIP1"]
	if host == "" {
		return "", 0, false, nil
	}
	return host, port, true, nil
}

// PeerTopicType reads the topic's message.type from another broker
// (GET_TOPIC_CONFIG).
func (g grpcBackend) PeerTopicType(ctx context.Context, brokerAddr, name string) (string, error) {
	resp, err := g.b.client.Invoke(ctx, brokerAddr, remoting.NewRequest(code.GetTopicConfig, map[string]string{"topic": name}, nil))
	if err != nil {
		return "", fmt.Errorf("topic config of %s on %s: %w", name, brokerAddr, err)
	}
	if resp.Code != code.Success {
		return "", fmt.Errorf("topic config of %s on %s: code %d: %s", name, brokerAddr, resp.Code, resp.Remark)
	}
	var tc protocol.TopicConfigAndQueueMapping
	if err := protocol.Unmarshal(resp.Body, &tc); err != nil {
		return "", fmt.Errorf("topic config of %s on %s: %w", name, brokerAddr, err)
	}
	t := protocol.TopicConfig{Attributes: tc.Attributes}
	v, _ := t.Attribute(topic.AttrMessageType)
	return v, nil
}
