package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// TrackType says how a consumer group stands with one message (Java's
// org.apache.rocketmq.tools.admin.api.TrackType).
type TrackType string

// Track types.
const (
	TrackConsumed            TrackType = "CONSUMED"
	TrackConsumedButFiltered TrackType = "CONSUMED_BUT_FILTERED"
	TrackPull                TrackType = "PULL"
	TrackNotConsumeYet       TrackType = "NOT_CONSUME_YET"
	TrackNotOnline           TrackType = "NOT_ONLINE"
	TrackConsumeBroadcasting TrackType = "CONSUME_BROADCASTING"
	TrackUnknown             TrackType = "UNKNOWN"
)

// MessageTrack is one consumer group's state for a message.
type MessageTrack struct {
	ConsumerGroup string    `json:"consumerGroup"`
	TrackType     TrackType `json:"trackType"`
	// ExceptionDesc explains a failure to find out ("" when none; Java
	// prints null).
	ExceptionDesc string `json:"exceptionDesc,omitempty"`
}

// String is Java's MessageTrack.toString.
func (t MessageTrack) String() string {
	desc := t.ExceptionDesc
	if desc == "" {
		desc = "null"
	}
	return fmt.Sprintf("MessageTrack [consumerGroup=%s, trackType=%s, exceptionDesc=%s]", t.ConsumerGroup, t.TrackType, desc)
}

// Java's descriptions of the client-side failures mqadmin prints in
// exceptionDesc (UtilAll.exceptionSimpleDesc: the exception and its first
// stack frame, as rocketmq-tools 5.5.0 throws them).
const (
	javaFAQSuffix          = "\nFor more information, please visit the url, https://rocketmq.apache.org/docs/bestPractice/06FAQ"
	javaClientException    = "org.apache.rocketmq.client.exception.MQClientException: "
	javaNoConnectionDesc   = javaClientException + "CODE: 206  DESC: Not found the consumer group connection" + javaFAQSuffix + ", org.apache.rocketmq.tools.admin.DefaultMQAdminExtImpl.examineConsumerConnectionInfo(DefaultMQAdminExtImpl.java:619)"
	javaRouteFrame         = ", org.apache.rocketmq.client.impl.MQClientAPIImpl.getTopicRouteInfoFromNameServer(MQClientAPIImpl.java:2115)"
	javaStatsNotOnlineDesc = "Not found the consumer group consume stats, because return offset table is empty, maybe the consumer not online"
)

// trackRouteError is a failed route lookup seen as Java's MQClientException.
type trackRouteError struct{ err error }

func (e *trackRouteError) Error() string { return e.err.Error() }
func (e *trackRouteError) Unwrap() error { return e.err }

// javaDesc renders err as exceptionSimpleDesc would.
func javaDesc(err error) string {
	var re *ResponseError
	if errors.As(err, &re) && re.Request == code.GetRouteInfoByTopic {
		return fmt.Sprintf("%sCODE: %d  DESC: %s%s%s", javaClientException, re.Code, re.Remark, javaFAQSuffix, javaRouteFrame)
	}
	return err.Error()
}

// trackConnection is the part of ConsumerConnection (203) the track needs.
type trackConnection struct {
	ConnectionSet     []map[string]any               `json:"connectionSet"`
	ConsumeType       string                         `json:"consumeType"`
	MessageModel      string                         `json:"messageModel"`
	SubscriptionTable map[string]trackSubscriptionTD `json:"subscriptionTable"`
}

type trackSubscriptionTD struct {
	TagsSet []string `json:"tagsSet"`
}

type trackOffset struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
}

type trackConsumeStats struct {
	OffsetTable protocol.MQMap[trackOffset] `json:"offsetTable"`
}

// retryRouteAddr returns an address (master preferred) of the first broker
// of %RETRY%<group>'s route (Java picks one at random).
func (c *Client) retryRouteAddrs(ctx context.Context, group string) ([]string, error) {
	route, err := c.GetTopicRoute(ctx, protocol.RetryTopic(group))
	if err != nil {
		return nil, &trackRouteError{err}
	}
	return routeAddrs(route), nil
}

// consumerConnection is Java's examineConsumerConnectionInfo(group): 105
// for %RETRY%<group>, then 203 to one of its brokers. A route failure is a
// *trackRouteError, a non-zero answer a *ResponseError; a group without
// connections is errNoConnection.
func (c *Client) trackConsumerConnection(ctx context.Context, group string) (*trackConnection, error) {
	addrs, err := c.retryRouteAddrs(ctx, group)
	if err != nil {
		return nil, err
	}
	var cc trackConnection
	if len(addrs) > 0 {
		if err := c.invokeDecode(ctx, addrs[0], code.GetConsumerConnectionList, map[string]string{"consumerGroup": group}, &cc); err != nil {
			return nil, err
		}
	}
	if len(cc.ConnectionSet) == 0 {
		return nil, errNoConnection
	}
	return &cc, nil
}

var errNoConnection = errors.New("Not found the consumer group connection") //nolint:staticcheck // Java's message

// trackConsumed is Java's consumed(msg, group): whether the group's
// committed offset of the message's queue on the broker that stored it is
// past the message.
func (c *Client) trackConsumed(ctx context.Context, m *StoredMessage, group string) (bool, error) {
	addrs, err := c.retryRouteAddrs(ctx, group)
	if err != nil {
		return false, err
	}
	table := protocol.MQMap[trackOffset]{}
	for _, addr := range addrs {
		var st trackConsumeStats
		if err := c.invokeDecode(ctx, addr, code.GetConsumeStats, map[string]string{"consumerGroup": group}, &st); err != nil {
			return false, err
		}
		for k, v := range st.OffsetTable {
			table[k] = v
		}
	}
	if len(table) == 0 {
		cc, err := c.trackConsumerConnection(ctx, group)
		if err != nil {
			return false, &ResponseError{Code: code.ConsumerNotOnline, Remark: javaStatsNotOnlineDesc}
		}
		if cc.MessageModel == "BROADCASTING" {
			return false, &ResponseError{Code: code.BroadcastConsumption, Remark: "Not found the consumer group consume stats, because return offset table is empty, the consumer is under the broadcast mode"}
		}
		return false, nil
	}
	ci, err := c.GetBrokerClusterInfo(ctx)
	if err != nil {
		return false, err
	}
	store := m.StoreHost.String()
	for _, mq := range table.SortedKeys() {
		if mq.Topic != m.Topic || mq.QueueID != int(m.QueueID) {
			continue
		}
		bd, ok := ci.BrokerAddrTable[mq.BrokerName]
		if !ok {
			continue
		}
		if bd.BrokerAddrs[protocol.MasterID] == store && table[mq].ConsumerOffset > m.QueueOffset {
			return true, nil
		}
	}
	return false, nil
}

// MessageTrackDetail tells, for every consumer group of the message's topic
// (QUERY_TOPIC_CONSUME_BY_WHO on the topic's first broker), whether it has
// consumed the message, as Java's messageTrackDetail: the group's
// connection (203 on a broker of %RETRY%<group>) gives its consume type;
// pull groups are PULL; push groups are CONSUMED (or
// CONSUMED_BUT_FILTERED when their subscription excludes the message's
// tag) when their committed offset (208) is past the message, else
// NOT_CONSUME_YET. Failures of one group are reported in its track. The
// tracks come in the broker's group order; only the group list lookup is
// an error.
func (c *Client) MessageTrackDetail(ctx context.Context, m *StoredMessage) ([]MessageTrack, error) {
	groups, err := c.QueryTopicConsumeByWhoRoute(ctx, m.Topic)
	if err != nil {
		return nil, err
	}
	if groups == nil {
		return nil, fmt.Errorf("topic %s: no broker to ask for its consumer groups", m.Topic)
	}
	out := make([]MessageTrack, 0, len(groups))
	for _, g := range groups {
		out = append(out, c.trackGroup(ctx, m, g))
	}
	return out, nil
}

func (c *Client) trackGroup(ctx context.Context, m *StoredMessage, group string) MessageTrack {
	mt := MessageTrack{ConsumerGroup: group, TrackType: TrackUnknown}
	var re *ResponseError
	cc, err := c.trackConsumerConnection(ctx, group)
	switch {
	case errors.Is(err, errNoConnection):
		mt.ExceptionDesc = javaNoConnectionDesc
		return mt
	case errors.As(err, &re) && re.Request == code.GetConsumerConnectionList:
		if re.Code == code.ConsumerNotOnline {
			mt.TrackType = TrackNotOnline
		}
		mt.ExceptionDesc = fmt.Sprintf("CODE:%d DESC:%s", re.Code, re.Remark)
		return mt
	case err != nil:
		mt.ExceptionDesc = javaDesc(err)
		return mt
	}
	switch cc.ConsumeType {
	case "CONSUME_ACTIVELY":
		mt.TrackType = TrackPull
	case "CONSUME_PASSIVELY":
		consumed, err := c.trackConsumed(ctx, m, group)
		var rte *trackRouteError
		switch {
		case errors.As(err, &re) || errors.As(err, &rte):
			if errors.As(err, &re) {
				if re.Code == code.ConsumerNotOnline {
					mt.TrackType = TrackNotOnline
					mt.ExceptionDesc = fmt.Sprintf("CODE:%d DESC:%s", re.Code, re.Remark)
				}
				if re.Code == code.BroadcastConsumption {
					mt.TrackType = TrackConsumeBroadcasting
				}
			}
			return mt
		case err != nil:
			mt.ExceptionDesc = javaDesc(err)
			return mt
		}
		if !consumed {
			mt.TrackType = TrackNotConsumeYet
			return mt
		}
		mt.TrackType = TrackConsumed
		if sub, ok := cc.SubscriptionTable[m.Topic]; ok {
			tags := m.Tags()
			if !(len(sub.TagsSet) == 0 || slices.Contains(sub.TagsSet, "*") || slices.Contains(sub.TagsSet, tags)) {
				mt.TrackType = TrackConsumedButFiltered
			}
		}
	}
	return mt
}
