package admin

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// Lite topics (docs/lite-topics.md §7): the broker's lite admin codes, as
// DefaultMQAdminExt sends them, plus our paged listing.

// GetBrokerLiteInfo reads a broker's lite counters and metadata (200074).
func (c *Client) GetBrokerLiteInfo(ctx context.Context, brokerAddr string) (*protocol.GetBrokerLiteInfoResponseBody, error) {
	return decodeFrom[protocol.GetBrokerLiteInfoResponseBody](ctx, c, brokerAddr, code.GetBrokerLiteInfo, nil)
}

// GetParentTopicInfo reads a parent topic's lite summary on one broker
// (200075).
func (c *Client) GetParentTopicInfo(ctx context.Context, brokerAddr, parent string) (*protocol.GetParentTopicInfoResponseBody, error) {
	return decodeFrom[protocol.GetParentTopicInfoResponseBody](ctx, c, brokerAddr, code.GetParentTopicInfo, map[string]string{"topic": parent})
}

// GetLiteTopicInfo reads one lite topic's offsets and subscribers on one
// broker (200076).
func (c *Client) GetLiteTopicInfo(ctx context.Context, brokerAddr, parent, lite string) (*protocol.GetLiteTopicInfoResponseBody, error) {
	var b protocol.GetLiteTopicInfoResponseBody
	ext := map[string]string{"parentTopic": parent, "liteTopic": lite}
	if err := c.invokeDecode(ctx, brokerAddr, code.GetLiteTopicInfo, ext, &b); err != nil {
		return nil, err
	}
	if b.TopicOffset == nil {
		b.TopicOffset = &protocol.TopicOffset{}
	}
	return &b, nil
}

// GetLiteClientInfo reads one client's lite subscription on one broker
// (200077); maxCount ≤ 0 means the broker's default (1000).
func (c *Client) GetLiteClientInfo(ctx context.Context, brokerAddr, parent, group, clientID string, maxCount int) (*protocol.GetLiteClientInfoResponseBody, error) {
	ext := map[string]string{"parentTopic": parent, "group": group, "clientId": clientID}
	if maxCount > 0 {
		ext["maxCount"] = strconv.Itoa(maxCount)
	}
	return decodeFrom[protocol.GetLiteClientInfoResponseBody](ctx, c, brokerAddr, code.GetLiteClientInfo, ext)
}

// GetLiteGroupInfo reads a lite group's lag on one broker (200078): for one
// lite topic when lite is set, else the top-K lite topics by lag count and
// by age.
func (c *Client) GetLiteGroupInfo(ctx context.Context, brokerAddr, group, lite string, topK int) (*protocol.GetLiteGroupInfoResponseBody, error) {
	ext := map[string]string{"group": group, "topK": strconv.Itoa(topK)}
	if lite != "" {
		ext["liteTopic"] = lite
	}
	return decodeFrom[protocol.GetLiteGroupInfoResponseBody](ctx, c, brokerAddr, code.GetLiteGroupInfo, ext)
}

// TriggerLiteDispatch runs a full event dispatch on one broker for one
// client of a lite group, or for all of them when clientID is "" (200079).
func (c *Client) TriggerLiteDispatch(ctx context.Context, brokerAddr, group, clientID string) error {
	ext := map[string]string{"group": group}
	if clientID != "" {
		ext["clientId"] = clientID
	}
	return c.invokeDecode(ctx, brokerAddr, code.TriggerLiteDispatch, ext, nil)
}

// ListLiteTopics reads one page of a parent's lite topics on one broker
// (our LIST_LITE_TOPICS): names after cursor, at most limit (≤ 0: the
// broker's default), with each group's lag (all groups bound to the parent
// unless group is set).
func (c *Client) ListLiteTopics(ctx context.Context, brokerAddr, parent, group, cursor string, limit int) (*protocol.ListLiteTopicsResponseBody, error) {
	ext := map[string]string{"parentTopic": parent}
	if group != "" {
		ext["group"] = group
	}
	if cursor != "" {
		ext["cursor"] = cursor
	}
	if limit > 0 {
		ext["limit"] = strconv.Itoa(limit)
	}
	return decodeFrom[protocol.ListLiteTopicsResponseBody](ctx, c, brokerAddr, code.ListLiteTopics, ext)
}

// RouteBroker is one broker of a topic's route: its name and the address
// lite admin requests go to (the master, else a slave, as Java's
// selectBrokerAddr).
type RouteBroker struct {
	Name string
	Addr string
}

// RouteBrokers lists the brokers of a topic's route, sorted by name, as
// the Java lite commands walk topicRouteData.getBrokerDatas().
func (c *Client) RouteBrokers(ctx context.Context, topic string) ([]RouteBroker, error) {
	route, err := c.GetTopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	var out []RouteBroker
	for _, bd := range route.BrokerDatas {
		out = append(out, RouteBroker{Name: bd.BrokerName, Addr: SelectBrokerAddr(bd)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if len(out) == 0 {
		return nil, fmt.Errorf("topic %s: no broker in its route", topic)
	}
	return out, nil
}
