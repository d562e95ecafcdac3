// Package consumeradmin answers the consumer-administration requests of
// mqadmin and admin SDKs that the other processors do not (Java's
// AdminBrokerProcessor and Broker2Client, docs/protocol.md §3.4, §3.5):
//
//   - QUERY_TOPIC_CONSUME_BY_WHO (300), QUERY_TOPICS_BY_CONSUMER (343) and
//     GET_BROKER_CONSUME_STATS (317), from the consumer table and the
//     committed offsets;
//   - INVOKE_BROKER_TO_RESET_OFFSET (222), which moves a group's offsets to
//     a point in time and tells its online clients with
//     RESET_CONSUMER_CLIENT_OFFSET (220);
//   - the requests the broker forwards to one consumer client and answers
//     with the client's response: GET_CONSUMER_RUNNING_INFO (307),
//     CONSUME_MESSAGE_DIRECTLY (309, with the stored message attached) and
//     INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223, which asks every client of
//     the group with GET_CONSUMER_STATUS_FROM_CLIENT, 221).
//
// GET_CONSUMER_CONNECTION_LIST, GET_PRODUCER_CONNECTION_LIST (package
// client), GET_CONSUME_STATS (package consumer) and GET_TOPIC_STATS_INFO
// (package admin) live next to the tables they read.
package consumeradmin

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/processor/consumer"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/offset"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// DefaultCallTimeout bounds a request the broker sends to a client and waits
// for (Java's Broker2Client.callClient: 10 s).
const DefaultCallTimeout = 10 * time.Second

// DefaultStatusTimeout bounds GET_CONSUMER_STATUS_FROM_CLIENT (Java: 5 s).
const DefaultStatusTimeout = 5 * time.Second

// OffsetIndex answers which groups have committed offsets of a topic and
// which topics a group has committed offsets of (Java's
// ConsumerOffsetManager.whichGroupByTopic / whichTopicByConsumer).
type OffsetIndex interface {
	TopicGroups(topic string) []string
	GroupTopics(group string) []string
}

// offsetStoreIndex adapts the store's offset table.
type offsetStoreIndex struct{ s *offset.Store }

// IndexOf adapts the store's offset table (store.Store.Offsets()).
func IndexOf(s *offset.Store) OffsetIndex { return offsetStoreIndex{s} }

func (x offsetStoreIndex) TopicGroups(topic string) []string {
	seen := map[string]bool{}
	x.s.Range(func(k offset.Key, _ int64) bool {
		if k.Topic == topic {
			seen[k.Group] = true
		}
		return true
	})
	return slices.Sorted(maps.Keys(seen))
}

func (x offsetStoreIndex) GroupTopics(group string) []string {
	out := x.s.GroupTopics(group)
	slices.Sort(out)
	return out
}

// Deps are the processor's collaborators.
type Deps struct {
	Config        func() *config.Config   // required
	Store         store.MessageStore      // required
	Offsets       OffsetIndex             // required
	Topics        *topic.Manager          // required
	Subscriptions *subscription.Manager   // required
	Consumers     *client.ConsumerManager // required
	// BrokerAddr is this broker's "ip:port" (TopicList and ConsumeStatsList
	// bodies); nil leaves it empty.
	BrokerAddr func() string
	// CallTimeout bounds GET_CONSUMER_RUNNING_INFO and
	// CONSUME_MESSAGE_DIRECTLY at the client (default 10 s);
	// StatusTimeout bounds GET_CONSUMER_STATUS_FROM_CLIENT (default 5 s).
	CallTimeout   time.Duration
	StatusTimeout time.Duration
	// Resets receives server-side offset resets for the queues' next pulls
	// (pull.ResetTable); nil: resets are committed and pushed only.
	Resets ResetAssigner
	Logger *slog.Logger
}

// ResetAssigner records a server-side reset that the next pull of the
// queue answers with PULL_OFFSET_MOVED (pull.ResetTable).
type ResetAssigner interface {
	Assign(group, topic string, queueID int32, offset int64)
}

// Processor holds the handlers.
type Processor struct {
	d   Deps
	log *slog.Logger
}

// New validates d.
func New(d Deps) (*Processor, error) {
	if d.Config == nil || d.Store == nil || d.Offsets == nil || d.Topics == nil || d.Subscriptions == nil || d.Consumers == nil {
		return nil, errors.New("consumeradmin: Deps.Config, Store, Offsets, Topics, Subscriptions and Consumers are required")
	}
	defaults.Positive(&d.CallTimeout, DefaultCallTimeout)
	defaults.Positive(&d.StatusTimeout, DefaultStatusTimeout)
	defaults.Logger(&d.Logger)
	return &Processor{d: d, log: d.Logger}, nil
}

// Handlers maps the request codes to handlers; they tolerate a nil channel.
func (p *Processor) Handlers() map[int32]remoting.Handler {
	h := map[int32]remoting.Handler{
		code.QueryTopicConsumeByWho:          p.queryTopicConsumeByWho,
		code.QueryTopicsByConsumer:           p.queryTopicsByConsumer,
		code.GetBrokerConsumeStats:           p.brokerConsumeStats,
		code.InvokeBrokerToResetOffset:       p.resetOffset,
		code.InvokeBrokerToGetConsumerStatus: p.consumerStatus,
		code.GetConsumerRunningInfo:          p.consumerRunningInfo,
		code.ConsumeMessageDirectly:          p.consumeMessageDirectly,
	}
	maps.Copy(h, p.offsetAdminHandlers())
	return h
}

// Register installs Handlers on the admin pool.
func (p *Processor) Register(r processor.Registrar) {
	processor.RegisterAll(r, p.Handlers(), processor.PoolAdmin)
}

func (p *Processor) brokerAddr() string {
	if p.d.BrokerAddr == nil {
		return ""
	}
	return p.d.BrokerAddr()
}

// bodyResponse answers SUCCESS with v encoded in the fastjson dialect
// (queue-keyed maps with object keys).
func bodyResponse(req *remoting.Command, v any) (*remoting.Command, error) {
	return processor.ReplyMQKeyed(req, "response body", v)
}

// groupList is Java's GroupList body.
type groupList struct {
	GroupList []string `json:"groupList"`
}

// queryTopicConsumeByWho is QUERY_TOPIC_CONSUME_BY_WHO (300): the groups
// subscribing the topic now plus those with committed offsets of it, sorted
// (Java answers a HashSet).
func (p *Processor) queryTopicConsumeByWho(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	tp, err := processor.StrField(req, "topic")
	if err != nil {
		return nil, err
	}
	groups := p.d.Consumers.GroupsByTopic(tp)
	for _, g := range p.d.Offsets.TopicGroups(tp) {
		if !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	slices.Sort(groups)
	if groups == nil {
		groups = []string{}
	}
	return bodyResponse(req, groupList{GroupList: groups})
}

// queryTopicsByConsumer is QUERY_TOPICS_BY_CONSUMER (343): the topics the
// group has committed offsets of, with this broker's address.
func (p *Processor) queryTopicsByConsumer(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	group, err := processor.StrField(req, "group")
	if err != nil {
		return nil, err
	}
	topics := p.d.Offsets.GroupTopics(group)
	if topics == nil {
		topics = []string{}
	}
	return bodyResponse(req, protocol.TopicList{BrokerAddr: p.brokerAddr(), TopicList: topics})
}

// ConsumeStatsList is the GET_BROKER_CONSUME_STATS body (Java's
// ConsumeStatsList): per subscription group, the consume stats of every
// topic it has offsets of.
type ConsumeStatsList struct {
	BrokerAddr        string                               `json:"brokerAddr"`
	ConsumeStatsList  []map[string][]consumer.ConsumeStats `json:"consumeStatsList"`
	TotalDiff         int64                                `json:"totalDiff"`
	TotalInflightDiff int64                                `json:"totalInflightDiff"`
}

// brokerConsumeStats is GET_BROKER_CONSUME_STATS (317), as Java's
// fetchAllConsumeStatsInBroker: for every subscription group (sorted) and
// every topic it has offsets of that still exists (only order topics with
// isOrder=true, only subscribed topics when the group has live
// subscriptions), one ConsumeStats over the topic's write queues. As in
// Java, pullOffset is not filled in, so totalInflightDiff counts
// -consumerOffset per queue.
func (p *Processor) brokerConsumeStats(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	isOrder := f.OptBool("isOrder", false)
	if err := f.Err(); err != nil {
		return nil, processor.BadRequest(err)
	}
	brokerName := p.d.Config().BrokerName
	groups, _ := p.d.Subscriptions.Snapshot()
	out := ConsumeStatsList{BrokerAddr: p.brokerAddr(), ConsumeStatsList: []map[string][]consumer.ConsumeStats{}}
	for _, group := range slices.Sorted(maps.Keys(groups)) {
		list := []consumer.ConsumeStats{}
		for _, tp := range p.d.Offsets.GroupTopics(group) {
			tc, ok := p.d.Topics.Get(tp)
			if !ok {
				p.log.Warn("broker consume stats: topic config does not exist", "topic", tp)
				continue
			}
			if isOrder && !tc.Order {
				continue
			}
			if _, ok := p.d.Consumers.FindSubscription(group, tp); !ok && p.d.Consumers.SubscriptionCount(group) > 0 {
				continue
			}
			cs := consumer.ConsumeStats{OffsetTable: protocol.MQMap[consumer.OffsetWrapper]{}}
			for i := range tc.WriteQueueNums {
				qid := int32(i)
				w := consumer.OffsetWrapper{BrokerOffset: max(p.d.Store.MaxOffset(tp, qid), 0)}
				if off, ok := p.d.Store.QueryOffset(group, tp, qid); ok {
					w.ConsumerOffset = max(off, 0)
				}
				if w.ConsumerOffset > 0 {
					if ts := p.d.Store.MessageStoreTime(tp, qid, w.ConsumerOffset-1); ts > 0 {
						w.LastTimestamp = ts
					}
				}
				cs.OffsetTable[protocol.MessageQueue{BrokerName: brokerName, QueueID: i, Topic: tp}] = w
				out.TotalDiff += w.BrokerOffset - w.ConsumerOffset
				out.TotalInflightDiff += w.PullOffset - w.ConsumerOffset
			}
			list = append(list, cs)
		}
		out.ConsumeStatsList = append(out.ConsumeStatsList, map[string][]consumer.ConsumeStats{group: list})
	}
	return bodyResponse(req, out)
}
