package grpcserver

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

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
	// ConsumeType and MessageModel are what a consumer registers as
	// (remoting's enum names; set by Heartbeat, see registration).
	ConsumeType, MessageModel string
}

// RefusedError is a backend's refusal of a consumer's registration, with
// the status the proxy answers it (Apache 5.5.0 ClientProcessor: a lite
// group used by a consumer that is not a lite one, and the reverse, are
// ILLEGAL_CONSUMER_GROUP; a lite consumer subscribing another topic than
// its group's bind topic is ILLEGAL_TOPIC).
type RefusedError struct {
	Code    v2pb.Code
	Message string
}

func (e *RefusedError) Error() string { return e.Message }

// registration is how the proxy registers a consumer of type t with the
// broker's consumer manager (Apache 5.5.0 ClientActivity.buildConsumeType
// and buildMessageModel): a push consumer consumes passively, a simple one
// actively, a lite push consumer in the LITE_SELECTIVE model. The proxy
// refuses the pull and lite simple consumers we also serve; they register
// as the simple consumer they resemble.
func registration(t v2pb.ClientType) (consumeType, messageModel string) {
	consumeType, messageModel = "CONSUME_ACTIVELY", "CLUSTERING"
	if t == v2pb.ClientType_PUSH_CONSUMER || t == v2pb.ClientType_LITE_PUSH_CONSUMER {
		consumeType = "CONSUME_PASSIVELY"
	}
	if isLiteType(t) {
		messageModel = "LITE_SELECTIVE"
	}
	return consumeType, messageModel
}

// SubscriptionEntry is one subscribed topic with its filter (TAG or SQL92).
type SubscriptionEntry struct {
	Topic, ExpType, Exp string
}

// clientTable remembers each client's settings, which its heartbeats do
// not repeat: that it sent some (the proxy's GrpcClientSettingsManager
// keeps them by client id), a consumer's subscriptions and type. A client
// that goes away without NotifyClientTermination is forgotten once it has
// sent neither settings nor a heartbeat for clientIdle, as the proxy's
// settings cleaner forgets a consumer no longer in its group and a
// producer that unregistered (both after the broker's channel expiry of
// 120 s): client ids are per process, and a table kept forever would
// grow with every client restart. The zero value is ready.
type clientTable struct {
	mu    sync.Mutex
	seen  map[string]time.Time          // by client id: last settings or heartbeat
	subs  map[string]*v2pb.Subscription // by client id
	types map[string]v2pb.ClientType    // by client id, from settings or heartbeats
	swept time.Time
	now   func() time.Time // nil: time.Now
}

// clientIdle is how long a silent client's settings are kept (the
// broker's channelExpiredTimeout, after which the proxy drops them).
const clientIdle = 120 * time.Second

func (t *clientTable) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}

// touchLocked records that id was heard from now and, at most every
// clientIdle/4, forgets the clients silent for clientIdle.
func (t *clientTable) touchLocked(id string) {
	now := t.clock()
	if t.seen == nil {
		t.seen = map[string]time.Time{}
	}
	t.seen[id] = now
	if now.Sub(t.swept) < clientIdle/4 {
		return
	}
	t.swept = now
	for k, at := range t.seen {
		if now.Sub(at) > clientIdle {
			t.dropLocked(k)
		}
	}
}

// settled records that id sent its settings (with s, a consumer's
// subscription, nil for other clients).
func (t *clientTable) settled(id string, s *v2pb.Subscription) {
	if id == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.touchLocked(id)
	if s == nil {
		return
	}
	if t.subs == nil {
		t.subs = map[string]*v2pb.Subscription{}
	}
	t.subs[id] = s
}

// heard records a heartbeat of id; it reports whether id's settings are
// known (false: the client never sent any, or said goodbye since).
func (t *clientTable) heard(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.seen[id]; !ok || id == "" {
		return false
	}
	t.touchLocked(id)
	return true
}

// setType records a consumer's type (other clients' are not kept, as
// their settings are not).
func (t *clientTable) setType(id string, ct v2pb.ClientType) {
	if id == "" || !isConsumer(ct) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.seen[id]; !ok {
		return // forgotten meanwhile
	}
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

// size is how many clients the table holds (tests).
func (t *clientTable) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return max(len(t.seen), len(t.subs), len(t.types))
}

func (t *clientTable) drop(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dropLocked(id)
}

func (t *clientTable) dropLocked(id string) {
	delete(t.seen, id)
	delete(t.subs, id)
	delete(t.types, id)
}

// mdValue is the first value of a metadata key (lower case), "" when
// absent. It copies that key's values only: metadata.FromIncomingContext
// copies the whole metadata, several times per rpc.
func mdValue(ctx context.Context, key string) string {
	if v := metadata.ValueFromIncomingContext(ctx, key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// rememberSettings keeps a consumer's subscriptions for its heartbeats.
func (m *messaging) rememberSettings(ctx context.Context, s *v2pb.Settings) {
	id := mdValue(ctx, mdClientID)
	m.clients.settled(id, s.GetSubscription())
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
// ClientActivity.heartbeat (its type's registration, with the
// subscriptions of its settings), so the admin tools list it. It answers
// nil for other clients (the caller goes on).
func (m *messaging) consumerHeartbeat(ctx context.Context, req *v2pb.HeartbeatRequest) *v2pb.Status {
	c := m.consumer()
	if c == nil || !isConsumer(req.GetClientType()) {
		return nil
	}
	group := req.GetGroup().GetName()
	if st := checkGroupName(group); st != nil {
		return st
	}
	info := m.clientInfo(ctx, group)
	if info.ID == "" {
		return newStatus(v2pb.Code_CLIENT_ID_REQUIRED, "the request has no "+mdClientID)
	}
	m.clients.setType(info.ID, req.GetClientType())
	info.ConsumeType, info.MessageModel = registration(req.GetClientType())
	if err := c.ConsumerHeartbeat(ctx, info); err != nil {
		var refused *RefusedError
		if errors.As(err, &refused) {
			return newStatus(refused.Code, refused.Message)
		}
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

// checkGroupName is the proxy's GrpcValidator.validateConsumerGroup: a
// legal name, not a system consumer group (CID_RMQ_SYS_…):
// ILLEGAL_CONSUMER_GROUP.
func checkGroupName(group string) *v2pb.Status {
	if err := protocol.ValidateGroup(group); err != nil {
		return newStatus(v2pb.Code_ILLEGAL_CONSUMER_GROUP, "illegal consumer group "+strconv.Quote(group)+": "+err.Error())
	}
	if strings.HasPrefix(group, protocol.CIDSysPrefix) {
		return newStatus(v2pb.Code_ILLEGAL_CONSUMER_GROUP, "cannot use system consumer group "+group)
	}
	return nil
}
