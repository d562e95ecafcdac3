package grpcserver

import (
	"context"
	"sync"

	"google.golang.org/grpc/metadata"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Request metadata the 5.x clients send with every call (Apache
// proxy/.../grpc/interceptor/InterceptorConstants.java).
const (
	mdClientID      = "x-mq-client-id"
	mdLanguage      = "x-mq-language"
	mdClientVersion = "x-mq-client-version"
)

// ClientInfo is a 5.x consumer as its requests and settings describe it.
type ClientInfo struct {
	ID       string // x-mq-client-id
	Language string // x-mq-language: JAVA, GOLANG, …
	Version  string // x-mq-client-version: 5.2.0
	Remote   string // the peer's address
	Group    string
	// Subscriptions are the ones of the client's settings (Telemetry).
	Subscriptions []SubscriptionEntry
}

// SubscriptionEntry is one subscribed topic with its filter (TAG or SQL92).
type SubscriptionEntry struct {
	Topic, ExpType, Exp string
}

// clientTable remembers each client's subscription settings, which its
// heartbeats do not repeat. The zero value is ready.
type clientTable struct {
	mu    sync.Mutex
	subs  map[string]*v2pb.Subscription // by client id
	types map[string]v2pb.ClientType    // by client id, from settings or heartbeats
}

func (t *clientTable) set(id string, s *v2pb.Subscription) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.subs == nil {
		t.subs = map[string]*v2pb.Subscription{}
	}
	t.subs[id] = s
}

// setType records a consumer's type (other clients' are not kept, as
// their settings are not).
func (t *clientTable) setType(id string, ct v2pb.ClientType) {
	if id == "" || !isConsumer(ct) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.types == nil {
		t.types = map[string]v2pb.ClientType{}
	}
	t.types[id] = ct
}

// isLite reports a lite consumer, as its settings or heartbeats said.
func (t *clientTable) isLite(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return isLiteType(t.types[id])
}

// isLiteType: lite push consumers and lite simple consumers (5.5.1) both
// receive the lite topics they subscribed (POP_LITE_MESSAGE by client id),
// as behind the proxy; they differ only on the client side (a listener or
// explicit receives).
func isLiteType(t v2pb.ClientType) bool {
	return t == v2pb.ClientType_LITE_PUSH_CONSUMER || t == v2pb.ClientType_LITE_SIMPLE_CONSUMER
}

func (t *clientTable) get(id string) *v2pb.Subscription {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.subs[id]
}

func (t *clientTable) drop(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.subs, id)
	delete(t.types, id)
}

// mdValue is the first value of a metadata key, "" when absent.
func mdValue(ctx context.Context, key string) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// rememberSettings keeps a consumer's subscriptions for its heartbeats.
func (m *messaging) rememberSettings(ctx context.Context, s *v2pb.Settings) {
	id := mdValue(ctx, mdClientID)
	if id != "" && s.GetSubscription() != nil {
		m.clients.set(id, s.GetSubscription())
	}
	m.clients.setType(id, s.GetClientType())
}

// clientInfo describes the calling client for group.
func (m *messaging) clientInfo(ctx context.Context, group string) ClientInfo {
	info := ClientInfo{
		ID: mdValue(ctx, mdClientID), Language: mdValue(ctx, mdLanguage), Version: mdValue(ctx, mdClientVersion),
		Remote: peerAddr(ctx), Group: group,
	}
	for _, e := range m.clients.get(info.ID).GetSubscriptions() {
		typ := "TAG"
		if e.GetExpression().GetType() == v2pb.FilterType_SQL {
			typ = "SQL92"
		}
		info.Subscriptions = append(info.Subscriptions, SubscriptionEntry{Topic: e.GetTopic().GetName(), ExpType: typ, Exp: e.GetExpression().GetExpression()})
	}
	return info
}

func isConsumer(t v2pb.ClientType) bool {
	return t == v2pb.ClientType_PUSH_CONSUMER || t == v2pb.ClientType_SIMPLE_CONSUMER || t == v2pb.ClientType_PULL_CONSUMER ||
		isLiteType(t)
}

// consumerHeartbeat registers a consumer with its group as the proxy's
// ClientActivity.heartbeat (a CONSUME_POP, CLUSTERING consumer with the
// subscriptions of its settings), so the admin tools list it. It answers
// nil for other clients (the caller goes on).
func (m *messaging) consumerHeartbeat(ctx context.Context, req *v2pb.HeartbeatRequest) *v2pb.Status {
	c := m.consumer()
	if c == nil || !isConsumer(req.GetClientType()) {
		return nil
	}
	group := req.GetGroup().GetName()
	if group == "" || protocol.ValidateGroup(group) != nil {
		return newStatus(v2pb.Code_ILLEGAL_CONSUMER_GROUP, "illegal consumer group: "+group)
	}
	info := m.clientInfo(ctx, group)
	if info.ID == "" {
		return newStatus(v2pb.Code_CLIENT_ID_REQUIRED, "the request has no "+mdClientID)
	}
	m.clients.setType(info.ID, req.GetClientType())
	if err := c.ConsumerHeartbeat(ctx, info); err != nil {
		return newStatus(v2pb.Code_INTERNAL_SERVER_ERROR, err.Error())
	}
	return ok()
}

// consumerGone unregisters a consumer that said goodbye.
func (m *messaging) consumerGone(ctx context.Context, req *v2pb.NotifyClientTerminationRequest) {
	id := mdValue(ctx, mdClientID)
	if id == "" {
		return
	}
	sub, lite := m.clients.get(id), m.clients.isLite(id)
	m.clients.drop(id)
	c := m.consumer()
	group := req.GetGroup().GetName()
	if group == "" {
		group = sub.GetGroup().GetName()
	}
	if c == nil || group == "" {
		return
	}
	if lite {
		m.liteGone(ctx, id, group, sub)
	}
	c.ConsumerGone(m.clientInfo(ctx, group))
}

// liteGone drops the lite subscriptions of a lite push consumer that said
// goodbye (COMPLETE_REMOVE for its bind topic, the topic of its settings),
// as the proxy's offlineClientLiteSubscription: the broker hands its
// pending lite topics to the group's other clients at once instead of
// after liteSubscriptionCheckTimeoutMills.
func (m *messaging) liteGone(ctx context.Context, id, group string, sub *v2pb.Subscription) {
	l := m.lite()
	if l == nil || len(sub.GetSubscriptions()) == 0 {
		return
	}
	topic := sub.GetSubscriptions()[0].GetTopic().GetName()
	if topic == "" {
		return
	}
	s := LiteSync{Action: "COMPLETE_REMOVE", ClientID: id, Group: group, Topic: topic, LiteTopics: []string{}, Peer: peerAddr(ctx)}
	_, _ = m.liteOrder.apply(arrivalOf(ctx), s, func(s LiteSync) (Result, error) { return l.SyncLite(ctx, s) })
}
