package grpcserver

import (
	"context"
	"sync"
	"time"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

// A topic's route across brokers (docs/compatibility.md, "Routes across
// brokers").
// Apache's proxy answers its own address for every broker; here every
// broker is its own gRPC endpoint, so QueryRoute takes the topic's route
// from the nameserver and names, for each broker of it, that broker's gRPC
// endpoint, which the broker learns from the other broker itself:
// GET_BROKER_CONFIG answers its brokerIP1, enableGrpcServer and
// grpcServerPort (no change to the registration or the nameserver, so
// Apache nameservers serve as well). Brokers that serve no gRPC are left
// out of the route.

// RouteBroker is one broker's part of a topic's nameserver route: its
// master's remoting address and the topic's queues there; for a static
// topic (a route with topicQueueMappingByBroker) Static is set on every
// broker and Logic are the logic queues the broker leads
// (docs/static-topics.md §6.2).
type RouteBroker struct {
	Name string
	Addr string
	Topic
}

// Router is the nameserver side of QueryRoute.
type Router interface {
	// Route is the topic's route from the nameserver; found is false when
	// the nameserver knows the topic on no broker.
	Route(ctx context.Context, topic string) (brokers []RouteBroker, found bool, err error)
	// PeerEndpoint asks the broker at a remoting address for its gRPC
	// endpoint; ok is false when it serves none.
	PeerEndpoint(ctx context.Context, brokerAddr string) (host string, port int, ok bool, err error)
	// PeerTopicType asks the broker at a remoting address for the topic's
	// message.type ("" when it declares none).
	PeerTopicType(ctx context.Context, brokerAddr, topic string) (string, error)
	// Self is this broker's remoting address as the nameservers route it,
	// and whether it is its set's master now.
	Self() (addr string, master bool)
}

// peerTTL is how long a broker's gRPC endpoint is remembered; a failed
// look-up is retried after peerRetry; each look-up (and the nameserver's
// route) takes at most peerTimeout.
const (
	peerTTL     = 30 * time.Second
	peerRetry   = 3 * time.Second
	peerTimeout = time.Second
)

type peerEntry struct {
	ep  *v2pb.Endpoints // nil: serves no gRPC, or the look-up failed
	err error
	at  time.Time
}

// peers caches other brokers' gRPC endpoints by remoting address, and the
// message.type of topics this broker does not have.
type peers struct {
	mu    sync.Mutex
	m     map[string]peerEntry
	types map[string]typeEntry
}

type typeEntry struct {
	typ string
	at  time.Time
}

// topicType is the topic's message.type from the broker at addr, cached
// for peerTTL.
func (p *peers) topicType(ctx context.Context, r Router, addr, topic string) (string, error) {
	now := time.Now()
	p.mu.Lock()
	e, ok := p.types[topic]
	p.mu.Unlock()
	if ok && now.Sub(e.at) < peerTTL {
		return e.typ, nil
	}
	lctx, cancel := context.WithTimeout(ctx, peerTimeout)
	typ, err := r.PeerTopicType(lctx, addr, topic)
	cancel()
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	if p.types == nil || len(p.types) >= maxCachedTypes {
		p.types = map[string]typeEntry{}
	}
	p.types[topic] = typeEntry{typ: typ, at: now}
	p.mu.Unlock()
	return typ, nil
}

// maxCachedTypes bounds the topic type cache (it starts over past it).
const maxCachedTypes = 10_000

func (p *peers) endpoint(ctx context.Context, r Router, addr string) (*v2pb.Endpoints, error) {
	now := time.Now()
	p.mu.Lock()
	e, ok := p.m[addr]
	p.mu.Unlock()
	if ok && (e.err == nil && now.Sub(e.at) < peerTTL || e.err != nil && now.Sub(e.at) < peerRetry) {
		return e.ep, e.err
	}
	lctx, cancel := context.WithTimeout(ctx, peerTimeout)
	host, port, serves, err := r.PeerEndpoint(lctx, addr)
	cancel()
	e = peerEntry{err: err, at: now}
	if err == nil && serves {
		e.ep = endpoints(host, port)
	}
	p.mu.Lock()
	if p.m == nil {
		p.m = map[string]peerEntry{}
	}
	p.m[addr] = e
	p.mu.Unlock()
	return e.ep, e.err
}

// clusterRoute is the topic's route over every broker of its nameserver
// route that serves gRPC, this broker's part from its own topic table (the
// nameserver may not have it yet). ok is false when the nameserver cannot
// be asked or knows no route: QueryRoute then answers this broker alone.
func (m *messaging) clusterRoute(ctx context.Context, name string, local Topic, hasLocal bool) (queues []brokerQueues, topicType string, ok bool) {
	r, isRouter := m.backend.(Router)
	if !isRouter {
		return nil, "", false
	}
	// Bounded (the 5.x clients give a request 3 s by default): a nameserver
	// that does not answer costs this much before the client gets this
	// broker's queues alone.
	rctx, cancel := context.WithTimeout(ctx, peerTimeout)
	brokers, found, err := r.Route(rctx, name)
	cancel()
	if err != nil || !found {
		return nil, "", false
	}
	self := m.backend.BrokerName()
	selfAddr, selfMaster := r.Self()
	topicType = local.MessageType
	typeKnown := hasLocal
	// This broker answers for its set only as its master: a slave (a
	// replica of a set, an old master after a failover) gives its clients
	// the master's endpoint, as the route names it; it would refuse their
	// sends. The route may not list this broker's set yet (a topic just
	// created here): then a master answers for it from its own table.
	selfRouted, answerSelf := false, false
	for _, b := range brokers {
		if b.Name != self {
			continue
		}
		selfRouted = true
		answerSelf = b.Addr == selfAddr
		if answerSelf && b.Static && local.Static {
			// Which logic queue each broker leads is the nameserver's
			// answer (the highest epoch wins, docs/static-topics.md §6.2):
			// in the middle of a remapping this broker's own table may
			// still claim a queue its successor has taken over.
			local.Logic = b.Logic
		}
	}
	if !selfRouted {
		answerSelf = selfMaster
	}
	if hasLocal && answerSelf {
		queues = append(queues, brokerQueues{name: self, ep: m.endpoint, t: local})
	}
	for _, b := range brokers {
		if b.Name == self && answerSelf {
			continue
		}
		ep, err := m.peers.endpoint(ctx, r, b.Addr)
		if err != nil || ep == nil {
			continue
		}
		if !typeKnown {
			if tt, err := m.peers.topicType(ctx, r, b.Addr, name); err == nil {
				topicType, typeKnown = tt, true
			}
		}
		queues = append(queues, brokerQueues{name: b.Name, ep: ep, t: b.Topic})
	}
	return queues, topicType, true
}

// slave reports whether this broker is a slave of its set: it then never
// answers a route with itself (its clients' sends would be refused).
func (m *messaging) slave() bool {
	r, ok := m.backend.(Router)
	if !ok {
		return false
	}
	_, master := r.Self()
	return !master
}

// brokerQueues is one broker's queues in a QueryRoute answer.
type brokerQueues struct {
	name string
	ep   *v2pb.Endpoints
	t    Topic
}
