// Package consumer answers the consumer offset requests (Java's
// ConsumerManageProcessor and the offset part of AdminBrokerProcessor,
// docs/protocol.md §3.3, §6.3, §4.8): QUERY_CONSUMER_OFFSET,
// UPDATE_CONSUMER_OFFSET, GET_MAX_OFFSET, GET_MIN_OFFSET,
// SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME and GET_CONSUME_STATS.
package consumer

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/consumequeue"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// PullOffsets reads the offsets last answered to pulls (pull.Processor).
type PullOffsets interface {
	PullOffset(group, topic string, queueID int32) (int64, bool)
}

// GroupOffsets is optionally implemented by the store (or passed
// explicitly) to list the topics a group has committed offsets for; GET_CONSUME_STATS
// without a topic needs it.
type GroupOffsets interface {
	GroupTopics(group string) []string
}

// Deps are the processor's collaborators.
type Deps struct {
	Config        func() *config.Config   // required
	Store         store.MessageStore      // required
	Topics        *topic.Manager          // required
	Subscriptions *subscription.Manager   // required
	Consumers     *client.ConsumerManager // required
	PullOffsets   PullOffsets             // nil: pullOffset = consumerOffset
	// GroupOffsets lists a group's topics; nil: the Store's, if it
	// implements GroupOffsets, else the group's subscribed topics.
	GroupOffsets GroupOffsets
	// PendingResets holds the server-side offset resets that no pull has
	// taken yet (pull.ResetTable); nil: none.
	PendingResets PendingResets
	Logger        *slog.Logger
}

// PendingResets reports a server-side reset of a queue that its consumers
// have not been moved to yet.
type PendingResets interface {
	Pending(group, topic string, qid int32) (int64, bool)
}

// Processor holds the handlers.
type Processor struct {
	d       Deps
	log     *slog.Logger
	commits commitOrder
}

// commitOrder applies a queue's UPDATE_CONSUMER_OFFSET requests in the
// order the server read them. They run on the admin executor's workers, so
// two commits sent back to back on one connection could otherwise land the
// other way round and leave the older offset committed: client-go's
// periodic persist of the offset it had, immediately followed by the
// offset an admin reset moved it to, is such a pair.
type commitOrder struct {
	mu   sync.Mutex
	last map[commitKey]uint64
}

type commitKey struct {
	group, topic string
	qid          int32
}

// apply runs commit unless a request read after arrival was applied to k
// already; arrival 0 (not read by a server) always applies.
func (o *commitOrder) apply(k commitKey, arrival uint64, commit func()) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if arrival != 0 {
		if arrival < o.last[k] {
			return false
		}
		if o.last == nil {
			o.last = map[commitKey]uint64{}
		}
		o.last[k] = arrival
	}
	commit()
	return true
}

// New validates d.
func New(d Deps) (*Processor, error) {
	if d.Config == nil || d.Store == nil || d.Topics == nil || d.Subscriptions == nil || d.Consumers == nil {
		return nil, errors.New("consumer: Deps.Config, Store, Topics, Subscriptions and Consumers are required")
	}
	if d.GroupOffsets == nil {
		if g, ok := d.Store.(GroupOffsets); ok {
			d.GroupOffsets = g
		}
	}
	defaults.Logger(&d.Logger)
	return &Processor{d: d, log: d.Logger}, nil
}

// Handlers maps the request codes to handlers; they tolerate a nil channel.
func (p *Processor) Handlers() map[int32]remoting.Handler {
	return map[int32]remoting.Handler{
		code.QueryConsumerOffset:     p.queryConsumerOffset,
		code.UpdateConsumerOffset:    p.updateConsumerOffset,
		code.GetMaxOffset:            p.getMaxOffset,
		code.GetMinOffset:            p.getMinOffset,
		code.SearchOffsetByTimestamp: p.searchOffsetByTimestamp,
		code.GetEarliestMsgStoreTime: p.getEarliestMsgStoreTime,
		code.GetConsumeStats:         p.getConsumeStats,
	}
}

// Register installs Handlers on the admin pool.
func (p *Processor) Register(r processor.Registrar) {
	processor.RegisterAll(r, p.Handlers(), processor.PoolAdmin)
}

func offsetResponse(req *remoting.Command, key string, v int64) *remoting.Command {
	resp := remoting.NewResponse(req, code.Success, "")
	resp.SetExt(key, strconv.FormatInt(v, 10))
	return resp
}

// queryConsumerOffset: the committed offset, else (unless
// setZeroIfNotFound=false) 0 when the queue still holds its whole history
// (min offset 0, not empty) [our choice, §6.3], else QUERY_NOT_FOUND.
func (p *Processor) queryConsumerOffset(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	group, tp, qid := f.Str("consumerGroup"), f.Str("topic"), f.Int32("queueId")
	setZero := f.OptBool("setZeroIfNotFound", true)
	if err := f.Err(); err != nil {
		return nil, processor.BadRequest(err)
	}
	if off, ok := p.d.Store.QueryOffset(group, tp, qid); ok && off >= 0 {
		return offsetResponse(req, "offset", off), nil
	}
	if !setZero {
		return nil, remoting.Errorf(code.QueryNotFound, "Not found, do not set to zero, maybe this group boot first")
	}
	if p.d.Store.MinOffset(tp, qid) == 0 && p.d.Store.MaxOffset(tp, qid) > 0 {
		return offsetResponse(req, "offset", 0), nil
	}
	return nil, remoting.Errorf(code.QueryNotFound, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
}

func (p *Processor) updateConsumerOffset(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	group, tp := f.Str("consumerGroup"), f.Str("topic")
	if err := f.Err(); err != nil {
		return nil, processor.BadRequest(err)
	}
	// Java checks the group (26) and topic (17) before the numbers.
	if _, ok := p.d.Subscriptions.FindOrCreate(group); !ok {
		return nil, remoting.Errorf(code.SubscriptionGroupNotExist, "Group %s not exist!", group)
	}
	if !p.d.Topics.Contains(tp) {
		return nil, remoting.Errorf(code.TopicNotExist, "Topic %s not exist!", tp)
	}
	qid, off := f.Int32("queueId"), f.Int64("commitOffset")
	if err := f.Err(); err != nil {
		return nil, processor.BadRequest(err)
	}
	// While a reset waits for the queue's next pull, a client's commit is
	// the offset it had before the reset: Java's ConsumerManageProcessor
	// answers SUCCESS and keeps the reset (hasOffsetReset).
	if p.d.PendingResets != nil {
		if _, pending := p.d.PendingResets.Pending(group, tp, qid); pending {
			p.log.Info("commit ignored: the offset was reset and no pull took the reset yet",
				"group", group, "topic", tp, "queueId", qid, "offset", off)
			return remoting.NewResponse(req, code.Success, ""), nil
		}
	}
	if !p.commits.apply(commitKey{group, tp, qid}, req.Arrival, func() { p.d.Store.CommitOffset(group, tp, qid, off) }) {
		p.log.Debug("commit dropped: a later one of the queue was applied first",
			"group", group, "topic", tp, "queueId", qid, "offset", off)
	}
	return remoting.NewResponse(req, code.Success, ""), nil
}

func topicQueue(req *remoting.Command) (string, int32, *protocol.Fields, error) {
	f := protocol.FieldsOf(req.ExtFields)
	tp, qid := f.Str("topic"), f.Int32("queueId")
	return tp, qid, f, f.Err()
}

func (p *Processor) getMaxOffset(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	tp, qid, _, err := topicQueue(req)
	if err != nil {
		return nil, processor.BadRequest(err)
	}
	return offsetResponse(req, "offset", max(p.d.Store.MaxOffset(tp, qid), 0)), nil
}

func (p *Processor) getMinOffset(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	tp, qid, _, err := topicQueue(req)
	if err != nil {
		return nil, processor.BadRequest(err)
	}
	return offsetResponse(req, "offset", max(p.d.Store.MinOffset(tp, qid), 0)), nil
}

func (p *Processor) searchOffsetByTimestamp(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	tp, qid, f, err := topicQueue(req)
	if err != nil {
		return nil, processor.BadRequest(err)
	}
	ts := f.Int64("timestamp")
	if err := f.Err(); err != nil {
		return nil, processor.BadRequest(err)
	}
	// Java's BoundaryType.getType: UPPER (any case), anything else LOWER.
	bt := consumequeue.BoundaryLower
	if strings.EqualFold(strings.TrimSpace(f.OptStr("boundaryType", "")), "upper") {
		bt = consumequeue.BoundaryUpper
	}
	off, err := p.d.Store.SearchOffsetByTime(tp, qid, ts, bt)
	if err != nil {
		return nil, remoting.Errorf(code.SystemError, "search offset of %s-%d by timestamp %d: %v", tp, qid, ts, err)
	}
	return offsetResponse(req, "offset", off), nil
}

func (p *Processor) getEarliestMsgStoreTime(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	tp, qid, _, err := topicQueue(req)
	if err != nil {
		return nil, processor.BadRequest(err)
	}
	return offsetResponse(req, "timestamp", p.d.Store.EarliestMessageTime(tp, qid)), nil
}

// OffsetWrapper is one queue of a ConsumeStats.
type OffsetWrapper = protocol.OffsetWrapper

// ConsumeStats is the GET_CONSUME_STATS body (§4.8).
type ConsumeStats = protocol.ConsumeStats

func (p *Processor) getConsumeStats(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	group := f.Str("consumerGroup")
	tp := f.OptStr("topic", "")
	topicList := f.OptStr("topicList", "")
	if err := f.Err(); err != nil {
		return nil, processor.BadRequest(err)
	}
	stats := p.ConsumeStats(group, tp, splitTopicList(topicList))
	return processor.ReplyMQKeyed(req, "consume stats", stats)
}

func splitTopicList(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ";") {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// ConsumeStats computes a group's progress (§4.8): for every read queue of
// the topics — topicList if given, else topic, else every topic the group
// has offsets for, minus those its live subscription does not include
// (%RETRY%<group> always stays) — broker offset, committed offset, pull
// offset and the store time of the last consumed message.
func (p *Processor) ConsumeStats(group, tp string, topicList []string) ConsumeStats {
	topics := topicList
	if len(topics) == 0 {
		if tp != "" {
			topics = []string{tp}
		} else {
			topics = p.groupTopics(group)
		}
		if p.d.Consumers.SubscriptionCount(group) > 0 {
			retry := protocol.RetryTopic(group)
			topics = slices.DeleteFunc(slices.Clone(topics), func(t string) bool {
				if t == retry {
					return false
				}
				_, ok := p.d.Consumers.FindSubscription(group, t)
				return !ok
			})
		}
	}
	brokerName := p.d.Config().BrokerName
	stats := ConsumeStats{OffsetTable: protocol.MQMap[OffsetWrapper]{}}
	for _, t := range topics {
		tc, ok := p.d.Topics.Get(t)
		if !ok {
			p.log.Warn("consume stats: topic config does not exist", "topic", t, "group", group)
			continue
		}
		for i := range tc.ReadQueueNums {
			qid := int32(i)
			w := OffsetWrapper{BrokerOffset: max(p.d.Store.MaxOffset(t, qid), 0)}
			w.ConsumerOffset = -1
			if off, ok := p.d.Store.QueryOffset(group, t, qid); ok {
				w.ConsumerOffset = off
			}
			w.ConsumerOffset = max(w.ConsumerOffset, 0)
			w.PullOffset = w.ConsumerOffset
			if p.d.PullOffsets != nil {
				if po, ok := p.d.PullOffsets.PullOffset(group, t, qid); ok {
					w.PullOffset = max(w.PullOffset, po)
				}
			}
			if w.ConsumerOffset > 0 {
				w.LastTimestamp = max(p.d.Store.MessageStoreTime(t, qid, w.ConsumerOffset-1), 0)
			}
			stats.OffsetTable[protocol.MessageQueue{BrokerName: brokerName, QueueID: i, Topic: t}] = w
		}
	}
	return stats
}

// groupTopics lists the topics a group has offsets for; without an offset
// listing, its subscribed topics and retry topic stand in.
func (p *Processor) groupTopics(group string) []string {
	if p.d.GroupOffsets != nil {
		return p.d.GroupOffsets.GroupTopics(group)
	}
	var out []string
	if g, ok := p.d.Consumers.GroupInfo(group); ok {
		for t := range g.Subscriptions {
			out = append(out, t)
		}
	}
	if retry := protocol.RetryTopic(group); !slices.Contains(out, retry) {
		out = append(out, retry)
	}
	slices.Sort(out)
	return out
}
