package grpcserver

import (
	"context"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

// ProducerRegistry puts 5.x producers in the broker's producer table, so
// the admin tools list them (GET_PRODUCER_CONNECTION_LIST, mqadmin
// producerConnection) as they list remoting producers. As the proxy
// (Apache proxy/.../grpc/v2/client/ClientActivity.java registerProducer),
// a producer is registered once per topic of its settings, the topic
// being the producer group (5.x producers have none). A Backend that does
// not implement it keeps gRPC producers out of the table.
type ProducerRegistry interface {
	// ProducerHeartbeat registers the client (or refreshes its
	// registration) in each group.
	ProducerHeartbeat(ctx context.Context, c ClientInfo, groups []string) error
	// ProducerGone unregisters the client from each group and forgets it.
	ProducerGone(c ClientInfo, groups []string)
}

func (m *messaging) producerRegistry() ProducerRegistry {
	r, _ := m.backend.(ProducerRegistry)
	return r
}

// producerPublishes registers a producer for the topics of the settings it
// sent on its Telemetry stream, as the proxy does when it answers them.
// A failure is left to the producer's next heartbeat.
func (m *messaging) producerPublishes(ctx context.Context, topics []string) {
	r := m.producerRegistry()
	info := m.clientInfo(ctx, "")
	if r == nil || info.ID == "" || len(topics) == 0 {
		return
	}
	_ = r.ProducerHeartbeat(ctx, info, topics)
}

// producerHeartbeat refreshes a producer's registration for the topics of
// its latest settings (the proxy's ClientActivity.heartbeat for a
// PRODUCER). It answers nil for other clients and for producers whose
// settings are not known yet (the caller goes on).
func (m *messaging) producerHeartbeat(ctx context.Context, req *v2pb.HeartbeatRequest) *v2pb.Status {
	r := m.producerRegistry()
	if r == nil || req.GetClientType() != v2pb.ClientType_PRODUCER {
		return nil
	}
	info := m.clientInfo(ctx, "")
	topics := m.producers.topicsOf(info.ID)
	if info.ID == "" || len(topics) == 0 {
		return nil
	}
	if err := r.ProducerHeartbeat(ctx, info, topics); err != nil {
		return newStatus(v2pb.Code_INTERNAL_SERVER_ERROR, err.Error())
	}
	return ok()
}

// producerGone unregisters a producer that said goodbye
// (NotifyClientTermination), from the topics of its sessions; call it
// before the sessions are forgotten.
func (m *messaging) producerGone(ctx context.Context) {
	r := m.producerRegistry()
	info := m.clientInfo(ctx, "")
	if r == nil || info.ID == "" {
		return
	}
	if topics := m.producers.topicsOf(info.ID); len(topics) > 0 {
		r.ProducerGone(info, topics)
	}
}

// producerStreamEnded unregisters a producer whose Telemetry stream ended
// without a goodbye (a crash, a lost connection), unless the client has
// opened a newer stream since. Call it before the session is removed.
func (m *messaging) producerStreamEnded(ctx context.Context, s *Session) {
	r := m.producerRegistry()
	if r == nil || s.clientID == "" {
		return
	}
	m.producers.mu.Lock()
	latest := m.producers.clients[s.clientID] == s
	topics := append([]string(nil), s.topics...)
	m.producers.mu.Unlock()
	if latest && len(topics) > 0 {
		r.ProducerGone(m.clientInfo(ctx, ""), topics)
	}
}

// topicsOf is what the client's latest Telemetry stream publishes.
func (p *Producers) topicsOf(clientID string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.clients[clientID]; s != nil {
		return append([]string(nil), s.topics...)
	}
	return nil
}

// Client is the latest Telemetry stream of a client id, nil when it has
// none open.
func (p *Producers) Client(clientID string) *Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.clients[clientID]
}
