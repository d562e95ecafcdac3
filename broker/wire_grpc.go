package broker

import (
	"github.com/rmqgo/rmq/broker/grpcserver"
	"github.com/rmqgo/rmq/broker/msgtype"
)

// grpcBackend is the broker as the gRPC rpcs see it (broker/grpcserver).
type grpcBackend struct{ b *Broker }

// Topic reads the topic table. The permission is the topic's and the
// broker's together, as the nameserver's queue data the proxy reads.
func (g grpcBackend) Topic(name string) (grpcserver.Topic, bool) {
	tc, ok := g.b.topics.Get(name)
	if !ok {
		return grpcserver.Topic{}, false
	}
	return grpcserver.Topic{
		ReadQueues:  tc.ReadQueueNums,
		WriteQueues: tc.WriteQueueNums,
		Perm:        tc.Perm & g.b.cfg.Get().BrokerPermission,
		MessageType: msgtype.TopicType(&tc),
	}, true
}

func (g grpcBackend) BrokerName() string { return g.b.cfg.Get().BrokerName }

func (g grpcBackend) MaxMessageSize() int { return g.b.cfg.Get().MaxMessageSize }
