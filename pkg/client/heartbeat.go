package client

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// heartbeatData is the HEART_BEAT body (docs/protocol.md §4.5), fields in
// fastjson's alphabetical order.
type heartbeatData struct {
	ClientID             string         `json:"clientID"`
	ConsumerDataSet      []consumerData `json:"consumerDataSet"`
	HeartbeatFingerprint int            `json:"heartbeatFingerprint"`
	ProducerDataSet      []producerData `json:"producerDataSet"`
	WithoutSub           bool           `json:"withoutSub"`
}

type producerData struct {
	GroupName string `json:"groupName"`
}

type consumerData struct {
	ConsumeFromWhere    string             `json:"consumeFromWhere"`
	ConsumeType         string             `json:"consumeType"`
	GroupName           string             `json:"groupName"`
	MessageModel        string             `json:"messageModel"`
	SubscriptionDataSet []subscriptionData `json:"subscriptionDataSet"`
	UnitMode            bool               `json:"unitMode"`
}

type subscriptionData struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	CodeSet         []int32  `json:"codeSet"`
	ExpressionType  string   `json:"expressionType"`
	SubString       string   `json:"subString"`
	SubVersion      int64    `json:"subVersion"`
	TagsSet         []string `json:"tagsSet"`
	Topic           string   `json:"topic"`
}

// Values of ConsumerData fields.
const (
	consumeActively        = "CONSUME_ACTIVELY"
	messageModelClustering = "CLUSTERING"
	consumeFromLastOffset  = "CONSUME_FROM_LAST_OFFSET"
	ExpressionTypeTag      = "TAG"
	ExpressionTypeSQL92    = "SQL92"
	subAll                 = "*"
)

// clusteringHeartbeat announces group as a clustering consumer (of
// consumeType, starting at consumeFrom) of subs, and no producer group;
// nil subs announce nothing (nil heartbeat).
func clusteringHeartbeat(clientID, group, consumeType, consumeFrom string, subs []subscriptionData) *heartbeatData {
	if subs == nil {
		return nil
	}
	return &heartbeatData{
		ClientID: clientID,
		ConsumerDataSet: []consumerData{{
			ConsumeFromWhere:    consumeFrom,
			ConsumeType:         consumeType,
			GroupName:           group,
			MessageModel:        messageModelClustering,
			SubscriptionDataSet: subs,
		}},
		ProducerDataSet: []producerData{},
	}
}

// hasMembers reports whether the body announces anything.
func (h *heartbeatData) hasMembers() bool {
	return h != nil && (len(h.ProducerDataSet) > 0 || len(h.ConsumerDataSet) > 0)
}

// sendHeartbeats sends the current heartbeat to the brokers: producers-only
// clients to masters only, clients with consumers to every replica (Java).
func (c *core) sendHeartbeats(ctx context.Context) {
	hb := c.heartbeat()
	if !hb.hasMembers() {
		return
	}
	body, err := protocol.Marshal(hb)
	if err != nil {
		c.log.Error("client: encode heartbeat", "err", err)
		return
	}
	for _, addr := range c.brokerAddrs(len(hb.ConsumerDataSet) == 0) {
		if ctx.Err() != nil {
			return
		}
		if _, err := c.invokeOK(ctx, addr, code.HeartBeat, nil, body); err != nil {
			c.log.Warn("client: heartbeat failed", "broker", addr, "err", err)
			continue
		}
		c.log.Debug("client: heartbeat sent", "broker", addr)
	}
}

// unregister tells every known broker that this client's groups are gone
// (UNREGISTER_CLIENT), so they drop its channel at once instead of after
// the 120 s heartbeat expiry. Best effort within ctx.
func (c *core) unregister(ctx context.Context, producerGroup, consumerGroup string) {
	ext := map[string]string{"clientID": c.clientID}
	if producerGroup != "" {
		ext["producerGroup"] = producerGroup
	}
	if consumerGroup != "" {
		ext["consumerGroup"] = consumerGroup
	}
	for _, addr := range c.brokerAddrs(consumerGroup == "") {
		if ctx.Err() != nil {
			return
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := c.invokeOK(rctx, addr, code.UnregisterClient, ext, nil)
		cancel()
		if err != nil {
			c.log.Debug("client: unregister failed", "broker", addr, "err", err)
		}
	}
}

// newSubscription builds the subscription of a topic as Java's
// FilterAPI.buildSubscriptionData: for TAG, tags split on "||" and their
// hash codes; "*" or "" means everything.
// subscriptions is the topic → subscription table of a pull or simple
// consumer, safe for concurrent use.
type subscriptions struct {
	mu sync.Mutex
	m  map[string]subscriptionData
}

// add subscribes topic with a filter expression of type typ, replacing an
// earlier subscription of it.
func (s *subscriptions) add(topic, expr, typ string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]subscriptionData)
	}
	s.m[topic] = newSubscription(topic, expr, typ)
}

func (s *subscriptions) remove(topic string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, topic)
}

func (s *subscriptions) get(topic string) subscriptionData {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[topic]
}

func (s *subscriptions) empty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m) == 0
}

// topics are the subscribed topics, sorted.
func (s *subscriptions) topics() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.m))
}

// sorted are the subscriptions by topic; nil when there are none.
func (s *subscriptions) sorted() []subscriptionData {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) == 0 {
		return nil
	}
	out := make([]subscriptionData, 0, len(s.m))
	for _, t := range slices.Sorted(maps.Keys(s.m)) {
		out = append(out, s.m[t])
	}
	return out
}

func newSubscription(topic, expr, typ string) subscriptionData {
	if typ == "" {
		typ = ExpressionTypeTag
	}
	sd := subscriptionData{
		Topic:          topic,
		SubString:      expr,
		ExpressionType: typ,
		SubVersion:     time.Now().UnixMilli(),
		CodeSet:        []int32{},
		TagsSet:        []string{},
	}
	if typ != ExpressionTypeTag {
		return sd
	}
	tags := parseTags(expr)
	if tags == nil {
		sd.SubString = subAll
		return sd
	}
	for _, t := range tags {
		sd.TagsSet = append(sd.TagsSet, t)
		sd.CodeSet = append(sd.CodeSet, tagHash(t))
	}
	return sd
}
