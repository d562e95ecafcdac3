// Package liteadmin answers the lite admin codes (docs/lite-topics.md §7):
// GET_BROKER_LITE_INFO (200074), GET_PARENT_TOPIC_INFO (200075),
// GET_LITE_TOPIC_INFO (200076), GET_LITE_CLIENT_INFO (200077),
// GET_LITE_GROUP_INFO (200078), TRIGGER_LITE_DISPATCH (200079), and our
// LIST_LITE_TOPICS (CodeListLiteTopics): a paged listing of a parent's lite
// topics with max offset, last store time and each group's lag.
//
// Everything is read from memory (queue states, offsets, registry) except
// the store times of unconsumed messages, which GET_LITE_GROUP_INFO reads
// only for lite topics that lag.
package liteadmin

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"strings"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/lite/dispatcher"
	"github.com/rmqgo/rmq/broker/lite/lifecycle"
	"github.com/rmqgo/rmq/broker/lite/meta"
	"github.com/rmqgo/rmq/broker/lite/naming"
	"github.com/rmqgo/rmq/broker/lite/offsets"
	"github.com/rmqgo/rmq/broker/lite/orderinfo"
	"github.com/rmqgo/rmq/broker/lite/registry"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/store/consumequeue"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Request codes (remoting/code; LIST_LITE_TOPICS is ours): header
// parentTopic (required), group (optional: only that group's lag), cursor
// (optional: names after it), limit (optional, default DefaultListLimit, at
// most MaxListLimit); body protocol.ListLiteTopicsResponseBody.
const (
	CodeGetBrokerLiteInfo   = code.GetBrokerLiteInfo
	CodeGetParentTopicInfo  = code.GetParentTopicInfo
	CodeGetLiteTopicInfo    = code.GetLiteTopicInfo
	CodeGetLiteClientInfo   = code.GetLiteClientInfo
	CodeGetLiteGroupInfo    = code.GetLiteGroupInfo
	CodeTriggerLiteDispatch = code.TriggerLiteDispatch
	CodeListLiteTopics      = code.ListLiteTopics
)

// Limits.
const (
	// MaxReturnCount caps GET_LITE_CLIENT_INFO's maxCount (upstream's 10000).
	MaxReturnCount   = 10000
	DefaultListLimit = 100
	MaxListLimit     = 1000
	// DefaultTopK is GET_LITE_GROUP_INFO's topK when none is given.
	DefaultTopK = 20
	// maxTimeLookups bounds the store-time reads of one GET_LITE_GROUP_INFO.
	maxTimeLookups = 100000
)

// Store is what the admin reads from the message store.
type Store interface {
	State(lmq string) (consumequeue.QueueState, bool)
	MessageStoreTime(topic string, queueID int32, offset int64) int64
	LmqCount() int
	QueueCount() int
	OffsetTableSize() int
}

// Deps are the processor's collaborators; all but IsHome and Logger are
// required.
type Deps struct {
	Config     func() *config.Config
	Store      Store
	Meta       *meta.Source
	Lifecycle  *lifecycle.Manager
	Registry   *registry.Registry
	Dispatcher *dispatcher.Dispatcher
	Orders     *orderinfo.Manager
	Offsets    *offsets.Offsets
	// IsHome reports whether this broker is the lite topic's home (§4.6);
	// nil: always.
	IsHome func(parent, lite string) bool
	Logger *slog.Logger
}

// Processor answers the admin codes.
type Processor struct {
	d   Deps
	log *slog.Logger
}

// New validates d.
func New(d Deps) (*Processor, error) {
	if d.Config == nil || d.Store == nil || d.Meta == nil || d.Lifecycle == nil || d.Registry == nil ||
		d.Dispatcher == nil || d.Orders == nil || d.Offsets == nil {
		return nil, errors.New("liteadmin: Config, Store, Meta, Lifecycle, Registry, Dispatcher, Orders and Offsets are required")
	}
	defaults.Logger(&d.Logger)
	return &Processor{d: d, log: d.Logger}, nil
}

// Handlers maps the codes to handlers.
func (p *Processor) Handlers() map[int32]remoting.Handler {
	return map[int32]remoting.Handler{
		CodeGetBrokerLiteInfo:   p.brokerInfo,
		CodeGetParentTopicInfo:  p.parentInfo,
		CodeGetLiteTopicInfo:    p.liteTopicInfo,
		CodeGetLiteClientInfo:   p.clientInfo,
		CodeGetLiteGroupInfo:    p.groupInfo,
		CodeTriggerLiteDispatch: p.trigger,
		CodeListLiteTopics:      p.list,
	}
}

// Register installs the handlers on the admin executor.
func (p *Processor) Register(r processor.Registrar) {
	processor.RegisterAll(r, p.Handlers(), processor.PoolAdmin)
}

func ok(req *remoting.Command, body any) (*remoting.Command, error) {
	resp := remoting.NewResponse(req, code.Success, "")
	if body != nil {
		b, err := protocol.Marshal(body)
		if err != nil {
			return nil, remoting.Errorf(code.SystemError, "encode response: %v", err)
		}
		resp.Body = b
	}
	return resp, nil
}

// parent checks a parent topic: it exists and is LITE.
func (p *Processor) parent(name string) (protocol.TopicConfig, error) {
	tc, found := p.d.Meta.Topic(name)
	if !found {
		return tc, remoting.Errorf(code.TopicNotExist, "Topic [%s] not exist.", name)
	}
	if !meta.IsParent(tc) {
		return tc, remoting.Errorf(code.InvalidParameter, "Topic [%s] type not match.", name)
	}
	return tc, nil
}

func (p *Processor) brokerInfo(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	cfg := p.d.Config()
	p.d.Meta.Refresh()
	topicMeta := map[string]int{}
	for k, v := range p.d.Meta.TTLMap() {
		topicMeta[k] = int(v)
	}
	return ok(req, protocol.GetBrokerLiteInfoResponseBody{
		StoreType:             cfg.StoreType,
		MaxLmqNum:             cfg.MaxLmqConsumeQueueNum,
		CurrentLmqNum:         p.d.Store.LmqCount(),
		LiteSubscriptionCount: int(p.d.Registry.Active()),
		OrderInfoCount:        p.d.Orders.Count(),
		CqTableSize:           p.d.Store.QueueCount(),
		OffsetTableSize:       p.d.Store.OffsetTableSize(),
		EventMapSize:          p.d.Dispatcher.EventMapSize(),
		TopicMeta:             topicMeta,
		GroupMeta:             p.d.Meta.GroupMap(),
	})
}

func (p *Processor) parentInfo(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	topic := f.Str("topic")
	if err := f.Err(); err != nil {
		return nil, remoting.Errorf(code.InvalidParameter, "%v", err)
	}
	tc, err := p.parent(topic)
	if err != nil {
		return nil, err
	}
	p.d.Meta.Refresh()
	groups := p.d.Meta.SubscriberGroups(topic)
	sort.Strings(groups)
	return ok(req, protocol.GetParentTopicInfoResponseBody{
		Topic:          topic,
		TTL:            int(meta.TTLMinutes(tc)),
		Groups:         groups,
		LmqNum:         p.d.Store.LmqCount(),
		LiteTopicCount: p.d.Lifecycle.Index().Count(topic),
	})
}

func (p *Processor) liteTopicInfo(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	parent, lite := f.Str("parentTopic"), f.Str("liteTopic")
	if err := f.Err(); err != nil {
		return nil, remoting.Errorf(code.InvalidParameter, "%v", err)
	}
	if _, err := p.parent(parent); err != nil {
		return nil, err
	}
	// A name no send could have used has no lite topic (and must not be
	// hashed for its home).
	if err := naming.ValidateLite(lite, p.d.Config().MaxLiteTopicSize); err != nil {
		return nil, remoting.Errorf(code.InvalidParameter, "illegal lite topic %q: %v", lite, err)
	}
	lmq, _ := naming.LMQName(parent, lite)
	to := protocol.TopicOffset{}
	if st, found := p.d.Store.State(lmq); found && st.Max > 0 {
		to.MinOffset, to.MaxOffset = max(st.Min, 0), st.Max
		to.LastUpdateTimestamp = st.LastStoreTime
	}
	body := protocol.GetLiteTopicInfoResponseBody{
		ParentTopic:      parent,
		LiteTopic:        lite,
		TopicOffset:      &to,
		ShardingToBroker: p.d.IsHome == nil || p.d.IsHome(parent, lite),
	}
	for _, cs := range p.d.Registry.Subscribers(lmq, "", "") {
		for _, k := range cs {
			body.Subscriber = append(body.Subscriber, protocol.LiteClientGroup{ClientID: k.ClientID, Group: k.Group})
		}
	}
	sort.Slice(body.Subscriber, func(i, j int) bool {
		a, b := body.Subscriber[i], body.Subscriber[j]
		return a.Group < b.Group || a.Group == b.Group && a.ClientID < b.ClientID
	})
	return ok(req, body)
}

func (p *Processor) clientInfo(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	parent, group, clientID := f.Str("parentTopic"), f.Str("group"), f.OptStr("clientId", "")
	maxCount := f.OptInt32("maxCount", 1000)
	if err := f.Err(); err != nil {
		return nil, remoting.Errorf(code.InvalidParameter, "%v", err)
	}
	if maxCount <= 0 || maxCount > MaxReturnCount {
		return nil, remoting.Errorf(code.InvalidParameter, "[maxCount] field invalid: %d, want 1..%d", maxCount, MaxReturnCount)
	}
	if _, err := p.parent(parent); err != nil {
		return nil, err
	}
	g, found := p.d.Meta.Group(group)
	if !found {
		return nil, remoting.Errorf(code.SubscriptionGroupNotExist, "Group [%s] not exist.", group)
	}
	if g.BindTopic != parent {
		return nil, remoting.Errorf(code.InvalidParameter, "Subscription [%s]-[%s] not match.", group, parent)
	}
	key := registry.ClientKey{ClientID: clientID, Group: group}
	body := protocol.GetLiteClientInfoResponseBody{ParentTopic: parent, Group: group, ClientID: clientID, LiteTopicCount: -1}
	// Filtered by group: a client id used in two groups is two clients
	// (#11059).
	if c, found := p.d.Registry.Get(key, int(maxCount)); found {
		body.LiteTopicCount = c.Count
		body.LiteTopicSet = make([]string, 0, len(c.LMQs))
		for _, lmq := range c.LMQs {
			body.LiteTopicSet = append(body.LiteTopicSet, naming.LiteOf(lmq))
		}
		sort.Strings(body.LiteTopicSet)
	}
	body.LastAccessTime, body.LastConsumeTime = p.d.Dispatcher.Activity(key)
	return ok(req, body)
}

func (p *Processor) groupInfo(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	group, lite := f.Str("group"), f.OptStr("liteTopic", "")
	topK := int(f.OptInt32("topK", DefaultTopK))
	if err := f.Err(); err != nil {
		return nil, remoting.Errorf(code.InvalidParameter, "%v", err)
	}
	if topK <= 0 {
		topK = DefaultTopK
	}
	g, found := p.d.Meta.Group(group)
	if !found {
		return nil, remoting.Errorf(code.SubscriptionGroupNotExist, "Group [%s] not exist.", group)
	}
	if !g.IsLite() {
		return nil, remoting.Errorf(code.InvalidParameter, "Group [%s] is not a LITE group.", group)
	}
	body := protocol.GetLiteGroupInfoResponseBody{Group: group, ParentTopic: g.BindTopic, LiteTopic: lite, EarliestUnconsumedTimestamp: -1}
	if lite != "" {
		lmq, _ := naming.LMQName(g.BindTopic, lite)
		st, exists := p.d.Store.State(lmq)
		if !exists || st.Max <= 0 {
			body.TotalLagCount = -1
			return ok(req, body)
		}
		if cur := p.d.Offsets.Committed(group, lmq); cur >= 0 {
			body.TotalLagCount = st.Max - cur
			body.EarliestUnconsumedTimestamp = p.d.Store.MessageStoreTime(lmq, 0, cur)
			w := &protocol.LiteOffsetWrapper{BrokerOffset: st.Max, ConsumerOffset: cur}
			if cur > 0 {
				w.LastTimestamp = p.d.Store.MessageStoreTime(lmq, 0, cur-1)
			}
			body.LiteTopicOffsetWrapper = w
		}
		return ok(req, body)
	}
	byCount, byTime, total, earliest := p.lagTopK(group, g.BindTopic, topK)
	body.LagCountTopK, body.LagTimestampTopK, body.TotalLagCount, body.EarliestUnconsumedTimestamp = byCount, byTime, total, earliest
	return ok(req, body)
}

// lag is a group's backlog on one lmq: messages from its committed offset
// (or the queue's min when it never consumed) to the max.
func (p *Processor) lag(group, lmq string) (lag, from int64, st consumequeue.QueueState) {
	st, found := p.d.Store.State(lmq)
	if !found || st.Max <= 0 {
		return 0, 0, st
	}
	from = p.d.Offsets.Committed(group, lmq)
	if from < st.Min {
		from = st.Min
	}
	return max(st.Max-from, 0), from, st
}

// lagTopK computes the lag top-K of a group over its parent's lite topics
// on demand (upstream keeps them from pop-time metrics; ours needs no
// collection switch). Store times are read only for lagging lite topics.
func (p *Processor) lagTopK(group, parent string, k int) (byCount, byTime []protocol.LiteLagInfo, total, earliest int64) {
	earliest = -1
	var all []protocol.LiteLagInfo
	lookups := 0
	for _, lmq := range p.d.Lifecycle.Index().LMQs(parent) {
		lag, from, _ := p.lag(group, lmq)
		if lag <= 0 {
			continue
		}
		total += lag
		info := protocol.LiteLagInfo{LiteTopic: naming.LiteOf(lmq), LagCount: lag, EarliestUnconsumedTimestamp: -1}
		if lookups < maxTimeLookups {
			lookups++
			if t := p.d.Store.MessageStoreTime(lmq, 0, from); t > 0 {
				info.EarliestUnconsumedTimestamp = t
				if earliest < 0 || t < earliest {
					earliest = t
				}
			}
		}
		all = append(all, info)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].LagCount != all[j].LagCount {
			return all[i].LagCount > all[j].LagCount
		}
		return all[i].LiteTopic < all[j].LiteTopic
	})
	byCount = append([]protocol.LiteLagInfo(nil), all[:min(k, len(all))]...)
	timed := make([]protocol.LiteLagInfo, 0, len(all))
	for _, x := range all {
		if x.EarliestUnconsumedTimestamp > 0 {
			timed = append(timed, x)
		}
	}
	sort.Slice(timed, func(i, j int) bool {
		if timed[i].EarliestUnconsumedTimestamp != timed[j].EarliestUnconsumedTimestamp {
			return timed[i].EarliestUnconsumedTimestamp < timed[j].EarliestUnconsumedTimestamp
		}
		return timed[i].LiteTopic < timed[j].LiteTopic
	})
	byTime = timed[:min(k, len(timed))]
	return byCount, byTime, total, earliest
}

func (p *Processor) trigger(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	group, clientID := f.Str("group"), strings.TrimSpace(f.OptStr("clientId", ""))
	if err := f.Err(); err != nil {
		return nil, remoting.Errorf(code.InvalidParameter, "%v", err)
	}
	g, found := p.d.Meta.Group(group)
	if !found {
		return nil, remoting.Errorf(code.SubscriptionGroupNotExist, "Group [%s] not exist.", group)
	}
	if !g.IsLite() {
		return nil, remoting.Errorf(code.InvalidParameter, "Group [%s] is not a LITE group.", group)
	}
	if clientID != "" {
		p.d.Dispatcher.FullDispatch(registry.ClientKey{ClientID: clientID, Group: group})
	} else {
		for _, k := range p.d.Registry.Clients(group) {
			p.d.Dispatcher.FullDispatch(k)
		}
	}
	return ok(req, nil)
}

func (p *Processor) list(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	parent := f.Str("parentTopic")
	group := f.OptStr("group", "")
	cursor := f.OptStr("cursor", "")
	limit := int(f.OptInt32("limit", DefaultListLimit))
	if err := f.Err(); err != nil {
		return nil, remoting.Errorf(code.InvalidParameter, "%v", err)
	}
	if limit <= 0 || limit > MaxListLimit {
		return nil, remoting.Errorf(code.InvalidParameter, "limit %d out of range 1..%d", limit, MaxListLimit)
	}
	if _, err := p.parent(parent); err != nil {
		return nil, err
	}
	var groups []string
	if group != "" {
		groups = []string{group}
	} else {
		p.d.Meta.Refresh()
		groups = p.d.Meta.SubscriberGroups(parent)
		sort.Strings(groups)
	}
	idx := p.d.Lifecycle.Index()
	names, more := idx.Page(parent, cursor, limit)
	body := protocol.ListLiteTopicsResponseBody{ParentTopic: parent, HasMore: more, Total: idx.Count(parent), LiteTopics: []protocol.LiteTopicEntry{}}
	for _, lite := range names {
		lmq, _ := naming.LMQName(parent, lite)
		st, _ := p.d.Store.State(lmq)
		e := protocol.LiteTopicEntry{LiteTopic: lite, MinOffset: st.Min, MaxOffset: st.Max, LastUpdateTimestamp: st.LastStoreTime}
		for _, g := range groups {
			lag, _, _ := p.lag(g, lmq)
			e.Groups = append(e.Groups, protocol.LiteTopicGroupLag{Group: g, ConsumerOffset: p.d.Offsets.Committed(g, lmq), Lag: lag})
		}
		body.LiteTopics = append(body.LiteTopics, e)
	}
	if more && len(names) > 0 {
		body.NextCursor = names[len(names)-1]
	}
	return ok(req, body)
}
