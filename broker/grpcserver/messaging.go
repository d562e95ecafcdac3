package grpcserver

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"google.golang.org/grpc/peer"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

// Topic is what QueryRoute needs of one of this broker's topics.
type Topic struct {
	ReadQueues, WriteQueues int
	// Perm is the topic's permission bits (RocketMQ PermName: 4 read, 2 write).
	Perm int
	// MessageType is the message.type attribute ("" when it declares none).
	MessageType string
	// Static is true for a static topic (docs/static-topics.md): its
	// clients see logic queues, and Logic are the ids of those this broker
	// leads, ascending (the currIdMap it registers, §5.1). ReadQueues and
	// WriteQueues stay the physical queue numbers.
	Static bool
	Logic  []int32
}

// Backend is the part of the broker the rpcs use.
type Backend interface {
	// Topic looks a topic up in this broker's topic table.
	Topic(name string) (Topic, bool)
	// BrokerName is this broker's brokerName.
	BrokerName() string
	// MaxMessageSize is maxMessageSize: the body limit the clients get in
	// their settings.
	MaxMessageSize() int
	Sender
	Producing
}

// messaging serves the rpcs written so far; the rest answer Unimplemented.
type messaging struct {
	v2pb.UnimplementedMessagingServiceServer
	backend Backend
	// endpoint is this broker's own gRPC address, given to clients in
	// routes (brokerIP1 and the listening port).
	endpoint *v2pb.Endpoints
	next     atomic.Uint64 // SendMessage's round robin
	// producers are the producers' Telemetry streams and transactions
	// (transaction.go).
	producers *Producers
	// peers caches the other brokers' gRPC endpoints (route.go).
	peers peers
	// clients are the consumers' settings (clients.go).
	clients clientTable
	// liteOrder orders each lite consumer's subscription changes
	// (liteorder.go).
	liteOrder liteOrder
}

func newMessaging(b Backend, host string, port int) *messaging {
	return &messaging{backend: b, producers: NewProducers(), endpoint: endpoints(host, port)}
}

// endpoints is a gRPC address as the clients get it in routes.
func endpoints(host string, port int) *v2pb.Endpoints {
	scheme := v2pb.AddressScheme_DOMAIN_NAME
	if ip := net.ParseIP(host); ip != nil {
		scheme = v2pb.AddressScheme_IPv6
		if ip.To4() != nil {
			scheme = v2pb.AddressScheme_IPv4
		}
	}
	return &v2pb.Endpoints{Scheme: scheme, Addresses: []*v2pb.Address{{Host: host, Port: int32(port)}}}
}

func ok() *v2pb.Status { return &v2pb.Status{Code: v2pb.Code_OK, Message: "OK"} }

// QueryRoute answers the topic's queues. As the proxy (Apache
// proxy/.../grpc/v2/route/RouteActivity.java) a readable and writable
// topic gives min(read, write) READ_WRITE queues and the surplus READ or
// WRITE ones; the queue ids are the broker's queue ids. With a Router
// backend the route covers every broker of the topic's nameserver route
// that serves gRPC, each naming its own endpoint (route.go); without one,
// or when the nameserver cannot tell, this broker's queues alone.
func (m *messaging) QueryRoute(ctx context.Context, req *v2pb.QueryRouteRequest) (*v2pb.QueryRouteResponse, error) {
	name := req.GetTopic().GetName()
	if err := checkTopicName(name); err != nil {
		return &v2pb.QueryRouteResponse{Status: &v2pb.Status{Code: v2pb.Code_ILLEGAL_TOPIC, Message: err.Error()}}, nil
	}
	t, found := m.backend.Topic(name)
	brokers, topicType, clustered := m.clusterRoute(ctx, name, t, found)
	if !clustered {
		if !found {
			return &v2pb.QueryRouteResponse{Status: &v2pb.Status{Code: v2pb.Code_TOPIC_NOT_FOUND, Message: "topic not found: " + name}}, nil
		}
		if m.slave() {
			return &v2pb.QueryRouteResponse{Status: &v2pb.Status{Code: v2pb.Code_TOPIC_NOT_FOUND,
				Message: "the nameservers name no master for topic " + name + " and this broker is a slave"}}, nil
		}
		brokers, topicType = []brokerQueues{{name: m.backend.BrokerName(), ep: m.endpoint, t: t}}, t.MessageType
	}
	if len(brokers) == 0 {
		return &v2pb.QueryRouteResponse{Status: &v2pb.Status{Code: v2pb.Code_TOPIC_NOT_FOUND,
			Message: "topic " + name + " is on no broker that serves gRPC"}}, nil
	}
	accept := acceptTypes(topicType)
	resource := &v2pb.Resource{ResourceNamespace: req.GetTopic().GetResourceNamespace(), Name: name}
	var queues []*v2pb.MessageQueue
	for _, bq := range brokers {
		queues = appendQueues(queues, bq, resource, accept)
	}
	return &v2pb.QueryRouteResponse{Status: ok(), MessageQueues: queues}, nil
}

// appendQueues adds one broker's queues of a topic.
func appendQueues(queues []*v2pb.MessageQueue, bq brokerQueues, resource *v2pb.Resource, accept []v2pb.MessageType) []*v2pb.MessageQueue {
	broker := &v2pb.Broker{Name: bq.name, Id: 0, Endpoints: bq.ep}
	add := func(from, to int, perm v2pb.Permission) {
		for id := from; id < to; id++ {
			queues = append(queues, &v2pb.MessageQueue{Topic: resource, Id: int32(id), Permission: perm, Broker: broker, AcceptMessageTypes: accept})
		}
	}
	t := bq.t
	readable, writable := t.Perm&permRead != 0, t.Perm&permWrite != 0
	if t.Static {
		return appendLogicQueues(queues, t, broker, resource, accept)
	}
	switch {
	case readable && writable:
		rw := min(t.ReadQueues, t.WriteQueues)
		add(0, rw, v2pb.Permission_READ_WRITE)
		add(rw, t.ReadQueues, v2pb.Permission_READ)
		add(rw, t.WriteQueues, v2pb.Permission_WRITE)
	case readable:
		add(0, t.ReadQueues, v2pb.Permission_READ)
	case writable:
		add(0, t.WriteQueues, v2pb.Permission_WRITE)
	default:
		add(0, max(t.ReadQueues, t.WriteQueues), v2pb.Permission_NONE)
	}
	return queues
}

// appendLogicQueues adds one broker's queues of a static topic
// (docs/static-topics.md §6.8) [our choice: Apache's proxy builds gRPC
// routes from the physical queueDatas alone and ignores
// topicQueueMappingByBroker (proxy/.../service/route/
// MessageQueueSelector.java, ClusterTopicRouteService.java)]. Writers see
// what a remoting client sees (§6.2, §6.3): every logic queue it leads, id
// g, with the broker's permission — a send there goes through the
// broker's logic → physical rewriting (§7.1). Readers pop physical queues
// (a receive pops every queue of the broker it reaches), and a broker that
// leads nothing may still hold older segments of moved logic queues until
// the clean service drops them (§10): such a broker gets one READ queue
// with id -1 (the broker-acting id of QueryAssignment) while it has read
// queues, so that simple consumers keep receiving from it.
func appendLogicQueues(queues []*v2pb.MessageQueue, t Topic, broker *v2pb.Broker, resource *v2pb.Resource, accept []v2pb.MessageType) []*v2pb.MessageQueue {
	readable, writable := t.Perm&permRead != 0, t.Perm&permWrite != 0
	perm := v2pb.Permission_NONE
	switch {
	case readable && writable:
		perm = v2pb.Permission_READ_WRITE
	case readable:
		perm = v2pb.Permission_READ
	case writable:
		perm = v2pb.Permission_WRITE
	}
	for _, g := range t.Logic {
		queues = append(queues, &v2pb.MessageQueue{Topic: resource, Id: g, Permission: perm, Broker: broker, AcceptMessageTypes: accept})
	}
	if len(t.Logic) == 0 && readable && t.ReadQueues > 0 {
		queues = append(queues, &v2pb.MessageQueue{Topic: resource, Id: -1, Permission: v2pb.Permission_READ, Broker: broker, AcceptMessageTypes: accept})
	}
	return queues
}

// RocketMQ PermName bits.
const (
	permRead  = 1 << 2
	permWrite = 1 << 1
)

// acceptTypes maps a topic's message.type attribute to the types its
// queues accept, as the proxy (Apache proxy/.../grpc/v2/route/
// RouteActivity.java parseTopicMessageType): a topic that declares none is
// NORMAL (Java's TopicConfig.getTopicMessageType), MIXED accepts the four
// classic types, UNSPECIFIED none in particular. SendMessage checks the
// same rule (send.go topicAccepts).
func acceptTypes(topicType string) []v2pb.MessageType {
	switch topicType {
	case "", "NORMAL":
		return []v2pb.MessageType{v2pb.MessageType_NORMAL}
	case "FIFO":
		return []v2pb.MessageType{v2pb.MessageType_FIFO}
	case "DELAY":
		return []v2pb.MessageType{v2pb.MessageType_DELAY}
	case "TRANSACTION":
		return []v2pb.MessageType{v2pb.MessageType_TRANSACTION}
	case "LITE":
		return []v2pb.MessageType{v2pb.MessageType_LITE}
	case "PRIORITY":
		return []v2pb.MessageType{v2pb.MessageType_PRIORITY}
	case "MIXED":
		return []v2pb.MessageType{v2pb.MessageType_NORMAL, v2pb.MessageType_FIFO, v2pb.MessageType_DELAY, v2pb.MessageType_TRANSACTION}
	}
	return []v2pb.MessageType{v2pb.MessageType_MESSAGE_TYPE_UNSPECIFIED}
}

// Heartbeat keeps the client alive. Consumers are registered with their
// group (clients.go), producers with the topics they publish
// (producers.go). As the proxy's (Apache proxy/.../grpc/v2/client/
// ClientActivity.java heartbeat), a client whose settings the server does
// not have — it never sent them on its Telemetry stream, or said goodbye
// since — is refused UNRECOGNIZED_CLIENT_TYPE: a late heartbeat does not
// register again a client that left.
func (m *messaging) Heartbeat(ctx context.Context, req *v2pb.HeartbeatRequest) (*v2pb.HeartbeatResponse, error) {
	if !m.clients.heard(clientID(ctx)) {
		return &v2pb.HeartbeatResponse{Status: newStatus(v2pb.Code_UNRECOGNIZED_CLIENT_TYPE, "cannot find client settings for this client")}, nil
	}
	if st := m.consumerHeartbeat(ctx, req); st != nil {
		return &v2pb.HeartbeatResponse{Status: st}, nil
	}
	if st := m.producerHeartbeat(ctx, req); st != nil {
		return &v2pb.HeartbeatResponse{Status: st}, nil
	}
	return &v2pb.HeartbeatResponse{Status: ok()}, nil
}

// Telemetry is the client's command stream. A client sends its Settings
// first and waits for the server's (Apache proxy/.../grpc/v2/client/
// ClientActivity.java): we answer each Settings with the client's own,
// completed with what the broker decides — for a producer the body limit
// (maxMessageSize) and message-type validation. A producer's stream is
// registered for the topics it publishes: the broker's transaction check
// sends its RecoverOrphanedTransactionCommand there (transaction.go). A
// lite push consumer also gets its lite limits, and its stream takes the
// broker's lite unsubscribe notifications (lite.go). A client's
// ThreadStackTrace and VerifyMessageResult answer the admin requests
// relayed to it (verify.go). Other commands are ignored.
//
// A stream lasts as long as its client; when the server shuts down it ends
// with its connection (Server.Shutdown), and the client opens a new one on
// reconnecting.
func (m *messaging) Telemetry(stream v2pb.MessagingService_TelemetryServer) error {
	remote := ""
	if p, ok := peer.FromContext(stream.Context()); ok && p.Addr != nil {
		remote = p.Addr.String()
	}
	sess := m.producers.newSession(stream, clientID(stream.Context()), remote)
	defer m.producers.remove(sess)
	defer m.producerStreamEnded(stream.Context(), sess)
	defer sess.endReplies()
	return m.telemetry(stream, sess)
}

// telemetry reads one Telemetry stream until it ends.
func (m *messaging) telemetry(stream v2pb.MessagingService_TelemetryServer, sess *Session) error {
	for {
		cmd, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if sess.reply(cmd) {
			continue
		}
		s := cmd.GetSettings()
		if s == nil {
			continue
		}
		if err := checkSettings(s); err != nil {
			return err
		}
		if pub := s.GetPublishing(); pub != nil {
			topics := make([]string, 0, len(pub.GetTopics()))
			for _, t := range pub.GetTopics() {
				topics = append(topics, t.GetName())
			}
			m.producers.publish(sess, topics)
			m.producerPublishes(stream.Context(), topics)
		}
		m.rememberSettings(stream.Context(), s)
		if err := sess.send(&v2pb.TelemetryCommand{Status: ok(), Command: &v2pb.TelemetryCommand_Settings{Settings: m.settings(s)}}); err != nil {
			return err
		}
	}
}

// clientID is the x-mq-client-id header every 5.x client sends.
func clientID(ctx context.Context) string { return mdValue(ctx, mdClientID) }

func (m *messaging) settings(client *v2pb.Settings) *v2pb.Settings {
	out := &v2pb.Settings{
		ClientType:     client.ClientType,
		AccessPoint:    client.GetAccessPoint(),
		BackoffPolicy:  client.GetBackoffPolicy(),
		RequestTimeout: client.GetRequestTimeout(),
		UserAgent:      client.GetUserAgent(),
		Metric:         &v2pb.Metric{On: false},
	}
	switch ps := client.GetPubSub().(type) {
	case *v2pb.Settings_Publishing:
		out.BackoffPolicy = producerBackoff()
		out.PubSub = &v2pb.Settings_Publishing{Publishing: &v2pb.Publishing{
			Topics:              ps.Publishing.GetTopics(),
			MaxBodySize:         int32(m.backend.MaxMessageSize()),
			ValidateMessageType: true,
		}}
	case *v2pb.Settings_Subscription:
		m.subscriptionSettings(out, ps.Subscription)
		if l := m.lite(); l != nil && isLiteType(client.GetClientType()) {
			lim := l.LiteLimits(ps.Subscription.GetGroup().GetName())
			sub := out.GetSubscription()
			sub.LiteSubscriptionQuota, sub.MaxLiteTopicSize = &lim.Quota, &lim.MaxLiteTopicSize
		}
	}
	return out
}

// producerBackoff is the send retry policy a producer gets, the proxy's
// defaults (Apache proxy ProxyConfig: grpcClientProducerMaxAttempts 3,
// backoff 10 ms doubling up to 1 s). Clients expect an exponential policy
// here: the Node.js client fails its start without one.
func producerBackoff() *v2pb.RetryPolicy {
	return &v2pb.RetryPolicy{MaxAttempts: 3, Strategy: &v2pb.RetryPolicy_ExponentialBackoff{ExponentialBackoff: &v2pb.ExponentialBackoff{
		Initial:    durationpb.New(10 * time.Millisecond),
		Max:        durationpb.New(time.Second),
		Multiplier: 2,
	}}}
}

// hostPort splits an address for the route endpoint.
func hostPort(addr string) (string, int, error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	return h, port, err
}
