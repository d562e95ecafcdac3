package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// Consumer administration (docs/protocol.md §3.4, §3.6): consume progress,
// connections, running info, offset resets, subscription groups. The
// methods follow Java's DefaultMQAdminExtImpl: which server each request
// goes to and which answers are errors.

// OffsetWrapper is one queue of a ConsumeStats.
type OffsetWrapper = protocol.OffsetWrapper

// ConsumeStats is a group's progress per queue (GET_CONSUME_STATS body).
type ConsumeStats = protocol.ConsumeStats

// Connection is one client connection of a group.
type Connection struct {
	ClientAddr string `json:"clientAddr"`
	ClientID   string `json:"clientId"`
	Language   string `json:"language"`
	Version    int    `json:"version"`
}

// SubscriptionData is a consumer's subscription of one topic.
type SubscriptionData struct {
	ClassFilterMode bool            `json:"classFilterMode"`
	CodeSet         json.RawMessage `json:"codeSet,omitempty"`
	ExpressionType  string          `json:"expressionType,omitempty"`
	SubString       string          `json:"subString"`
	SubVersion      int64           `json:"subVersion"`
	TagsSet         []string        `json:"tagsSet,omitempty"`
	Topic           string          `json:"topic"`
}

// UnmarshalJSON takes subVersion as a string too (flexInt64): the C++
// client's running info sends it so.
func (d *SubscriptionData) UnmarshalJSON(b []byte) error {
	type plain SubscriptionData
	var raw struct {
		plain
		SubVersion flexInt64 `json:"subVersion"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*d = SubscriptionData(raw.plain)
	d.SubVersion = int64(raw.SubVersion)
	return nil
}

// ConsumerConnection is the GET_CONSUMER_CONNECTION_LIST body (§4.6).
type ConsumerConnection struct {
	ConnectionSet     []Connection                `json:"connectionSet"`
	ConsumeFromWhere  string                      `json:"consumeFromWhere,omitempty"`
	ConsumeType       string                      `json:"consumeType,omitempty"`
	MessageModel      string                      `json:"messageModel,omitempty"`
	SubscriptionTable map[string]SubscriptionData `json:"subscriptionTable"`
}

// MinVersion is Java's computeMinVersion (MaxInt32 without connections).
func (cc *ConsumerConnection) MinVersion() int {
	v := int(^uint32(0) >> 1)
	for _, c := range cc.ConnectionSet {
		v = min(v, c.Version)
	}
	return v
}

// ProducerConnection is the GET_PRODUCER_CONNECTION_LIST body.
type ProducerConnection struct {
	ConnectionSet []Connection `json:"connectionSet"`
}

// Java's messages for a group without connections or stats.
const (
	noConsumerConnection = "Not found the consumer group connection"
	noProducerConnection = "Not found the producer group connection"
	statsEmptyNotOnline  = "Not found the consumer group consume stats, because return offset table is empty, maybe the consumer not online"
	statsEmptyBroadcast  = "Not found the consumer group consume stats, because return offset table is empty, the consumer is under the broadcast mode"
)

// ClientError is a failure Java's admin client raises itself
// (MQClientException with a response code), not a broker's answer.
type ClientError struct {
	Code   int32
	Remark string
}

func (e *ClientError) Error() string {
	return fmt.Sprintf("CODE: %d  DESC: %s", e.Code, e.Remark)
}

// IsClientCode reports whether err is (or wraps) a *ClientError or a
// *ResponseError with code c.
func IsClientCode(err error, c int32) bool {
	var ce *ClientError
	if errors.As(err, &ce) {
		return ce.Code == c
	}
	return IsCode(err, c)
}

// isLmq is MixAll.isLmq.
func isLmq(topic string) bool { return strings.HasPrefix(topic, protocol.LMQPrefix) }

// PopRetryTopic is KeyBuilder.buildPopRetryTopic (v1 form).
func PopRetryTopic(topic, group string) string {
	return protocol.RetryGroupTopicPrefix + group + "_" + topic
}

// GroupOfRetryTopic is KeyBuilder.parseGroup: the group of a %RETRY% topic
// (of "%RETRY%<group>+<topic>", pop retry v2, the part before '+').
func GroupOfRetryTopic(retryTopic string) string {
	rest := strings.TrimPrefix(retryTopic, protocol.RetryGroupTopicPrefix)
	if strings.HasPrefix(retryTopic, protocol.RetryGroupTopicPrefix) && strings.Count(rest, "+") == 1 {
		return rest[:strings.IndexByte(rest, '+')]
	}
	return rest
}

// routeAddrs returns one address (master preferred) per broker of a route.
func routeAddrs(route *protocol.TopicRouteData) []string {
	var out []string
	for _, bd := range route.BrokerDatas {
		if a := SelectBrokerAddr(bd); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// GetConsumeStats reads a group's progress from one broker (208); topic
// "" means every topic the group has offsets of.
func (c *Client) GetConsumeStats(ctx context.Context, brokerAddr, group, topic string) (*ConsumeStats, error) {
	ext := map[string]string{"consumerGroup": group}
	if topic != "" {
		ext["topic"] = topic
	}
	var st ConsumeStats
	if err := c.invokeDecode(ctx, brokerAddr, code.GetConsumeStats, ext, &st); err != nil {
		return nil, err
	}
	if st.OffsetTable == nil {
		st.OffsetTable = protocol.MQMap[OffsetWrapper]{}
	}
	return &st, nil
}

// ExamineConsumeStats collects a group's progress from the cluster (Java's
// examineConsumeStats(clusterName, group, topic)): the route of the first
// of %RETRY%<group>, topic, %RETRY%<group>_<topic> (and, for an LMQ topic,
// cluster) that the nameserver knows; 208 to every broker of it; then,
// without a cluster, 105 (and 351 per broker) for every topic found, so
// that static topics show their logic queues. An empty result is an error
// (CONSUMER_NOT_ONLINE, or BROADCAST_CONSUMPTION for a broadcasting group).
func (c *Client) ExamineConsumeStats(ctx context.Context, cluster, group, topic string) (*ConsumeStats, error) {
	routeTopics := []string{protocol.RetryTopic(group)}
	if topic != "" {
		routeTopics = append(routeTopics, topic, PopRetryTopic(topic, group))
	}
	if topic != "" && (isLmq(topic) || topic == protocol.SysTopicPrefix+"wheel_timer") && cluster != "" {
		routeTopics = append(routeTopics, cluster)
	}
	var route *protocol.TopicRouteData
	for i, rt := range routeTopics {
		r, err := c.GetTopicRoute(ctx, rt)
		if err == nil {
			route = r
			break
		}
		if i == len(routeTopics)-1 {
			return nil, err
		}
	}
	result := &ConsumeStats{OffsetTable: protocol.MQMap[OffsetWrapper]{}}
	for _, addr := range routeAddrs(route) {
		st, err := c.GetConsumeStats(ctx, addr, group, topic)
		if err != nil {
			return nil, err
		}
		for k, v := range st.OffsetTable {
			result.OffsetTable[k] = v
		}
		result.ConsumeTps += st.ConsumeTps
	}
	out := result
	if cluster == "" {
		out = &ConsumeStats{ConsumeTps: result.ConsumeTps, OffsetTable: protocol.MQMap[OffsetWrapper]{}}
		var topics []string
		for mq := range result.OffsetTable {
			if !slices.Contains(topics, mq.Topic) {
				topics = append(topics, mq.Topic)
			}
		}
		slices.Sort(topics)
		for _, t := range topics {
			r, err := c.GetTopicRoute(ctx, t)
			if err != nil {
				return nil, err
			}
			if len(r.TopicQueueMappingByBroker) == 0 {
				for mq, w := range result.OffsetTable {
					if mq.Topic == t {
						out.OffsetTable[mq] = w
					}
				}
			}
			configs, err := c.topicConfigsOfRoute(ctx, t, r)
			if err != nil {
				return nil, err
			}
			convertStaticConsumeStats(t, configs, result, out)
		}
	}
	if len(out.OffsetTable) == 0 {
		cc, err := c.ExamineConsumerConnection(ctx, group, "")
		if err != nil {
			return nil, &ClientError{Code: code.ConsumerNotOnline, Remark: statsEmptyNotOnline}
		}
		if cc.MessageModel == "BROADCASTING" {
			return nil, &ClientError{Code: code.BroadcastConsumption, Remark: statsEmptyBroadcast}
		}
	}
	return out, nil
}

// convertStaticConsumeStats adds one entry per logic queue of a static
// topic, under the mock broker name (Java's convertPhysicalConsumeStats):
// the broker offset of the newest item with a logic offset, the consumer
// offset (physical, as Java) of the newest item with one.
func convertStaticConsumeStats(topic string, configs map[string]*protocol.TopicConfigAndQueueMapping, phys, out *ConsumeStats) {
	for g, lq := range leaderLists(configs) {
		brokerOff, consumerOff, lastTS := int64(-1), int64(-1), int64(-1)
		for i := len(lq.items) - 1; i >= 0; i-- {
			it := &lq.items[i]
			w, ok := phys.OffsetTable[protocol.MessageQueue{Topic: topic, BrokerName: it.Bname, QueueID: it.QueueID}]
			if !ok {
				continue
			}
			if consumerOff == -1 && w.ConsumerOffset >= 0 {
				consumerOff, lastTS = w.ConsumerOffset, w.LastTimestamp
			}
			if brokerOff == -1 && it.LogicOffset >= 0 {
				brokerOff = staticOffsetStrictly(it, w.BrokerOffset)
			}
			if consumerOff >= 0 && brokerOff >= 0 {
				break
			}
		}
		if brokerOff >= 0 && consumerOff >= 0 {
			out.OffsetTable[protocol.MessageQueue{Topic: topic, BrokerName: MockBrokerName(lq.scope), QueueID: g}] = OffsetWrapper{
				BrokerOffset: brokerOff, ConsumerOffset: consumerOff, LastTimestamp: lastTS,
			}
		}
	}
}

// GetConsumerConnection reads a group's connections from one broker (203).
func (c *Client) GetConsumerConnection(ctx context.Context, brokerAddr, group string) (*ConsumerConnection, error) {
	var cc ConsumerConnection
	if err := c.invokeDecode(ctx, brokerAddr, code.GetConsumerConnectionList, map[string]string{"consumerGroup": group}, &cc); err != nil {
		return nil, err
	}
	if cc.SubscriptionTable == nil {
		cc.SubscriptionTable = map[string]SubscriptionData{}
	}
	return &cc, nil
}

// ExamineConsumerConnection is Java's examineConsumerConnectionInfo: 203 to
// brokerAddr, or (brokerAddr "") to a broker of %RETRY%<group>'s route
// (Java picks one at random; this picks the first). No connection is a
// *ClientError with CONSUMER_NOT_ONLINE.
func (c *Client) ExamineConsumerConnection(ctx context.Context, group, brokerAddr string) (*ConsumerConnection, error) {
	if brokerAddr == "" {
		route, err := c.GetTopicRoute(ctx, protocol.RetryTopic(group))
		if err != nil {
			return nil, err
		}
		addrs := routeAddrs(route)
		if len(addrs) == 0 {
			return nil, &ClientError{Code: code.ConsumerNotOnline, Remark: noConsumerConnection}
		}
		brokerAddr = addrs[0]
	}
	cc, err := c.GetConsumerConnection(ctx, brokerAddr, group)
	if err != nil {
		return nil, err
	}
	if len(cc.ConnectionSet) == 0 {
		return nil, &ClientError{Code: code.ConsumerNotOnline, Remark: noConsumerConnection}
	}
	return cc, nil
}

// ExamineProducerConnection is Java's examineProducerConnectionInfo: 105
// for topic, then 204 to one of its brokers (the first; Java picks one at
// random).
func (c *Client) ExamineProducerConnection(ctx context.Context, group, topic string) (*ProducerConnection, error) {
	route, err := c.GetTopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	addrs := routeAddrs(route)
	if len(addrs) == 0 {
		return nil, &ClientError{Code: -1, Remark: noProducerConnection}
	}
	var pc ProducerConnection
	if err := c.invokeDecode(ctx, addrs[0], code.GetProducerConnectionList, map[string]string{"producerGroup": group}, &pc); err != nil {
		return nil, err
	}
	if len(pc.ConnectionSet) == 0 {
		return nil, &ClientError{Code: -1, Remark: noProducerConnection}
	}
	return &pc, nil
}

// ProcessQueueInfo is one queue of a push consumer's running info.
type ProcessQueueInfo struct {
	CommitOffset            int64 `json:"commitOffset"`
	CachedMsgMinOffset      int64 `json:"cachedMsgMinOffset"`
	CachedMsgMaxOffset      int64 `json:"cachedMsgMaxOffset"`
	CachedMsgCount          int   `json:"cachedMsgCount"`
	CachedMsgSizeInMiB      int   `json:"cachedMsgSizeInMiB"`
	TransactionMsgMinOffset int64 `json:"transactionMsgMinOffset"`
	TransactionMsgMaxOffset int64 `json:"transactionMsgMaxOffset"`
	TransactionMsgCount     int   `json:"transactionMsgCount"`
	Locked                  bool  `json:"locked"`
	TryUnlockTimes          int64 `json:"tryUnlockTimes"`
	LastLockTimestamp       int64 `json:"lastLockTimestamp"`
	// Droped is Java's spelling; client-go sends "dropped", which Java
	// ignores too.
	Droped               bool  `json:"droped"`
	LastPullTimestamp    int64 `json:"lastPullTimestamp"`
	LastConsumeTimestamp int64 `json:"lastConsumeTimestamp"`
}

// UnmarshalJSON takes the numbers as strings too (flexInt64): the C++
// client sends them so.
func (p *ProcessQueueInfo) UnmarshalJSON(b []byte) error {
	type plain ProcessQueueInfo
	var raw struct {
		plain
		CommitOffset            flexInt64 `json:"commitOffset"`
		CachedMsgMinOffset      flexInt64 `json:"cachedMsgMinOffset"`
		CachedMsgMaxOffset      flexInt64 `json:"cachedMsgMaxOffset"`
		CachedMsgCount          flexInt64 `json:"cachedMsgCount"`
		CachedMsgSizeInMiB      flexInt64 `json:"cachedMsgSizeInMiB"`
		TransactionMsgMinOffset flexInt64 `json:"transactionMsgMinOffset"`
		TransactionMsgMaxOffset flexInt64 `json:"transactionMsgMaxOffset"`
		TransactionMsgCount     flexInt64 `json:"transactionMsgCount"`
		TryUnlockTimes          flexInt64 `json:"tryUnlockTimes"`
		LastLockTimestamp       flexInt64 `json:"lastLockTimestamp"`
		LastPullTimestamp       flexInt64 `json:"lastPullTimestamp"`
		LastConsumeTimestamp    flexInt64 `json:"lastConsumeTimestamp"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*p = ProcessQueueInfo(raw.plain)
	p.CommitOffset, p.CachedMsgMinOffset, p.CachedMsgMaxOffset = int64(raw.CommitOffset), int64(raw.CachedMsgMinOffset), int64(raw.CachedMsgMaxOffset)
	p.CachedMsgCount, p.CachedMsgSizeInMiB = int(raw.CachedMsgCount), int(raw.CachedMsgSizeInMiB)
	p.TransactionMsgMinOffset, p.TransactionMsgMaxOffset = int64(raw.TransactionMsgMinOffset), int64(raw.TransactionMsgMaxOffset)
	p.TransactionMsgCount, p.TryUnlockTimes = int(raw.TransactionMsgCount), int64(raw.TryUnlockTimes)
	p.LastLockTimestamp, p.LastPullTimestamp, p.LastConsumeTimestamp = int64(raw.LastLockTimestamp), int64(raw.LastPullTimestamp), int64(raw.LastConsumeTimestamp)
	return nil
}

// PopProcessQueueInfo is one queue of a pop consumer's running info.
type PopProcessQueueInfo struct {
	WaitAckCount     int   `json:"waitAckCount"`
	Droped           bool  `json:"droped"`
	LastPopTimestamp int64 `json:"lastPopTimestamp"`
}

// ConsumeStatus is a consumer's rates for one topic.
type ConsumeStatus struct {
	PullRT            float64 `json:"pullRT"`
	PullTPS           float64 `json:"pullTPS"`
	ConsumeRT         float64 `json:"consumeRT"`
	ConsumeOKTPS      float64 `json:"consumeOKTPS"`
	ConsumeFailedTPS  float64 `json:"consumeFailedTPS"`
	ConsumeFailedMsgs int64   `json:"consumeFailedMsgs"`
}

// UnmarshalJSON takes the numbers as strings too (flexInt64, flexFloat).
func (s *ConsumeStatus) UnmarshalJSON(b []byte) error {
	type plain ConsumeStatus
	var raw struct {
		plain
		PullRT            flexFloat `json:"pullRT"`
		PullTPS           flexFloat `json:"pullTPS"`
		ConsumeRT         flexFloat `json:"consumeRT"`
		ConsumeOKTPS      flexFloat `json:"consumeOKTPS"`
		ConsumeFailedTPS  flexFloat `json:"consumeFailedTPS"`
		ConsumeFailedMsgs flexInt64 `json:"consumeFailedMsgs"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*s = ConsumeStatus(raw.plain)
	s.PullRT, s.PullTPS, s.ConsumeRT = float64(raw.PullRT), float64(raw.PullTPS), float64(raw.ConsumeRT)
	s.ConsumeOKTPS, s.ConsumeFailedTPS, s.ConsumeFailedMsgs = float64(raw.ConsumeOKTPS), float64(raw.ConsumeFailedTPS), int64(raw.ConsumeFailedMsgs)
	return nil
}

// ConsumerRunningInfo is a client's answer to GET_CONSUMER_RUNNING_INFO
// (§4.10). Properties values are rendered as strings whatever their JSON
// type.
type ConsumerRunningInfo struct {
	Properties map[string]string `json:"properties"`
	// PropertyKeys are the keys of Properties in the order the client sent
	// them (Java's Properties keeps colliding keys in that order).
	PropertyKeys     []string                            `json:"-"`
	SubscriptionSet  []SubscriptionData                  `json:"subscriptionSet"`
	MqTable          protocol.MQMap[ProcessQueueInfo]    `json:"mqTable"`
	MqPopTable       protocol.MQMap[PopProcessQueueInfo] `json:"mqPopTable"`
	StatusTable      map[string]ConsumeStatus            `json:"statusTable"`
	UserConsumerInfo map[string]string                   `json:"userConsumerInfo"`
	// Jstack is nil when the client sent none.
	Jstack *string `json:"jstack"`
}

// UnmarshalJSON accepts non-string property values (Java's Properties may
// carry enums as objects) and records the properties' key order.
func (r *ConsumerRunningInfo) UnmarshalJSON(b []byte) error {
	type plain ConsumerRunningInfo
	var raw struct {
		plain
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*r = ConsumerRunningInfo(raw.plain)
	r.Properties, r.PropertyKeys = map[string]string{}, nil
	if len(raw.Properties) == 0 || string(raw.Properties) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw.Properties))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("consumer running info: properties is not an object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fmt.Errorf("consumer running info: properties: %w", err)
		}
		k, _ := t.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("consumer running info: property %s: %w", k, err)
		}
		if _, dup := r.Properties[k]; !dup {
			r.PropertyKeys = append(r.PropertyKeys, k)
		}
		switch v := v.(type) {
		case string:
			r.Properties[k] = v
		case nil:
			r.Properties[k] = "null"
		default:
			r.Properties[k] = fmt.Sprint(v)
		}
	}
	return nil
}

// GetConsumerRunningInfo asks a consumer client for its running info
// through the first broker of %RETRY%<group> with an address (307, which
// the broker forwards), as Java's getConsumerRunningInfo.
func (c *Client) GetConsumerRunningInfo(ctx context.Context, group, clientID string, jstack bool) (*ConsumerRunningInfo, error) {
	route, err := c.GetTopicRoute(ctx, protocol.RetryTopic(group))
	if err != nil {
		return nil, err
	}
	addrs := routeAddrs(route)
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%s: topic %s has no broker", code.RequestName(code.GetConsumerRunningInfo), protocol.RetryTopic(group))
	}
	ext := map[string]string{"consumerGroup": group, "clientId": clientID, "jstackEnable": strconv.FormatBool(jstack)}
	return decodeFrom[ConsumerRunningInfo](ctx, c, addrs[0], code.GetConsumerRunningInfo, ext)
}

// resetRoute is the route an offset reset of topic goes by: the cluster's
// for an LMQ or the timer topic when cluster is given, else the topic's.
func (c *Client) resetRoute(ctx context.Context, cluster, topic string) (*protocol.TopicRouteData, error) {
	routeTopic := topic
	if (isLmq(topic) || topic == protocol.SysTopicPrefix+"wheel_timer") && cluster != "" {
		routeTopic = cluster
	}
	return c.GetTopicRoute(ctx, routeTopic)
}

// ResetOffsetByTimestamp asks every broker of the topic's route (of
// cluster, for an LMQ topic) to reset the group's offsets to timestamp
// (222, isForce, offset -1), as Java's resetOffsetByTimestamp, and returns
// each broker's new offsets in route order. A broker answering
// CONSUMER_NOT_ONLINE (one without server-side reset and no client online)
// stops it with that *ResponseError: callers fall back to
// ResetOffsetByTimestampOld.
func (c *Client) ResetOffsetByTimestamp(ctx context.Context, cluster, topic, group string, timestamp int64, force bool) ([]protocol.MQMap[int64], error) {
	route, err := c.resetRoute(ctx, cluster, topic)
	if err != nil {
		return nil, err
	}
	var out []protocol.MQMap[int64]
	for _, addr := range routeAddrs(route) {
		ext := map[string]string{
			"topic": topic, "group": group, "timestamp": strconv.FormatInt(timestamp, 10),
			"isForce": strconv.FormatBool(force), "queueId": "-1", "offset": "-1",
		}
		t, err := c.invokeResetOffset(ctx, addr, ext)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func (c *Client) invokeResetOffset(ctx context.Context, addr string, ext map[string]string) (protocol.MQMap[int64], error) {
	resp, err := c.invokeOK(ctx, addr, code.InvokeBrokerToResetOffset, ext, nil)
	if err != nil {
		return nil, err
	}
	if len(resp.Body) == 0 {
		return protocol.MQMap[int64]{}, nil
	}
	var body struct {
		OffsetTable protocol.MQMap[int64] `json:"offsetTable"`
	}
	if err := decodeBody(resp, addr, code.InvokeBrokerToResetOffset, &body); err != nil {
		return nil, err
	}
	return body.OffsetTable, nil
}

// ResetOffsetByQueueID is Java's resetOffsetByQueueId: commit offset for
// one queue (UPDATE_CONSUMER_OFFSET, 15), then 222 for that queue and
// offset so that a server-side reset reaches the clients.
func (c *Client) ResetOffsetByQueueID(ctx context.Context, brokerAddr, group, topic string, queueID int, offset int64) (protocol.MQMap[int64], error) {
	if err := c.UpdateConsumerOffset(ctx, brokerAddr, group, topic, queueID, offset); err != nil {
		return nil, err
	}
	ext := map[string]string{
		"topic": topic, "group": group, "timestamp": "0", "isForce": "false",
		"queueId": strconv.Itoa(queueID), "offset": strconv.FormatInt(offset, 10),
	}
	return c.invokeResetOffset(ctx, brokerAddr, ext)
}

// UpdateConsumerOffset commits a group's offset of one queue on a broker
// (UPDATE_CONSUMER_OFFSET, 15).
func (c *Client) UpdateConsumerOffset(ctx context.Context, brokerAddr, group, topic string, queueID int, offset int64) error {
	ext := map[string]string{"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(queueID), "commitOffset": strconv.FormatInt(offset, 10)}
	_, err := c.invokeOK(ctx, brokerAddr, code.UpdateConsumerOffset, ext, nil)
	return err
}

// SearchOffsetByTimestamp is SEARCH_OFFSET_BY_TIMESTAMP (29) for one queue.
func (c *Client) SearchOffsetByTimestamp(ctx context.Context, brokerAddr, topic string, queueID int, timestamp int64) (int64, error) {
	ext := map[string]string{"topic": topic, "queueId": strconv.Itoa(queueID), "timestamp": strconv.FormatInt(timestamp, 10)}
	return c.offsetReply(ctx, brokerAddr, code.SearchOffsetByTimestamp, ext)
}

// GetMaxOffsetOf is GET_MAX_OFFSET (30) for one queue.
func (c *Client) GetMaxOffsetOf(ctx context.Context, brokerAddr, topic string, queueID int) (int64, error) {
	return c.offsetReply(ctx, brokerAddr, code.GetMaxOffset, map[string]string{"topic": topic, "queueId": strconv.Itoa(queueID)})
}

func (c *Client) offsetReply(ctx context.Context, addr string, reqCode int32, ext map[string]string) (int64, error) {
	resp, err := c.invokeOK(ctx, addr, reqCode, ext, nil)
	if err != nil {
		return 0, err
	}
	off, err := strconv.ParseInt(resp.Ext("offset"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s to %s: bad offset %q", code.RequestName(reqCode), addr, resp.Ext("offset"))
	}
	return off, nil
}

// RollbackStats is one queue of an offset reset done by the admin client
// itself (Java's RollbackStats).
type RollbackStats struct {
	BrokerName      string `json:"brokerName"`
	QueueID         int    `json:"queueId"`
	BrokerOffset    int64  `json:"brokerOffset"`
	ConsumerOffset  int64  `json:"consumerOffset"`
	TimestampOffset int64  `json:"timestampOffset"`
	RollbackOffset  int64  `json:"rollbackOffset"`
}

// ResetOffsetByTimestampOld is Java's resetOffsetByTimestampOld, the reset
// for groups without an online consumer on brokers that only reset through
// their clients: per broker of the route, the group's stats of the topic
// (208; without any, the topic's queues from 202), each queue's offset at
// timestamp (29; 30 for timestamp -1) committed (15) when force or when it
// moves back.
func (c *Client) ResetOffsetByTimestampOld(ctx context.Context, cluster, group, topic string, timestamp int64, force bool) ([]RollbackStats, error) {
	route, err := c.resetRoute(ctx, cluster, topic)
	if err != nil {
		return nil, err
	}
	queues := map[string]protocol.QueueData{}
	for _, q := range route.QueueDatas {
		queues[q.BrokerName] = q
	}
	var out []RollbackStats
	for _, bd := range route.BrokerDatas {
		addr := SelectBrokerAddr(bd)
		if addr == "" {
			continue
		}
		st, err := c.GetConsumeStats(ctx, addr, group, "")
		if err != nil {
			return out, err
		}
		type queue struct {
			mq protocol.MessageQueue
			w  OffsetWrapper
		}
		var qs []queue
		for _, mq := range st.OffsetTable.SortedKeys() {
			if mq.Topic == topic {
				qs = append(qs, queue{mq, st.OffsetTable[mq]})
			}
		}
		if len(qs) == 0 {
			ts, err := c.GetTopicStats(ctx, addr, topic)
			if err != nil {
				return out, err
			}
			for i := range queues[bd.BrokerName].ReadQueueNums {
				mq := protocol.MessageQueue{Topic: topic, BrokerName: bd.BrokerName, QueueID: i}
				o := ts.OffsetTable[mq]
				qs = append(qs, queue{mq, OffsetWrapper{BrokerOffset: o.MaxOffset, ConsumerOffset: o.MinOffset}})
			}
		}
		for _, q := range qs {
			var reset int64
			if timestamp == -1 {
				reset, err = c.GetMaxOffsetOf(ctx, addr, topic, q.mq.QueueID)
			} else {
				reset, err = c.SearchOffsetByTimestamp(ctx, addr, topic, q.mq.QueueID, timestamp)
			}
			if err != nil {
				return out, err
			}
			rs := RollbackStats{BrokerName: q.mq.BrokerName, QueueID: q.mq.QueueID, BrokerOffset: q.w.BrokerOffset,
				ConsumerOffset: q.w.ConsumerOffset, TimestampOffset: reset, RollbackOffset: q.w.ConsumerOffset}
			if force || reset <= q.w.ConsumerOffset {
				rs.RollbackOffset = reset
				if err := c.UpdateConsumerOffset(ctx, addr, group, topic, q.mq.QueueID, reset); err != nil {
					return out, err
				}
			}
			out = append(out, rs)
		}
	}
	return out, nil
}

// ConsumerStatusTable is the INVOKE_BROKER_TO_GET_CONSUMER_STATUS body:
// client id → its offsets.
type ConsumerStatusTable map[string]protocol.MQMap[int64]

// GetConsumeStatus asks every broker of the topic's route for the offsets
// the group's clients hold (223; clientAddr "" for all clients), merged by
// client id (Java's getConsumeStatus).
func (c *Client) GetConsumeStatus(ctx context.Context, topic, group, clientAddr string) (ConsumerStatusTable, error) {
	route, err := c.GetTopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := ConsumerStatusTable{}
	for _, addr := range routeAddrs(route) {
		ext := map[string]string{"topic": topic, "group": group}
		if clientAddr != "" {
			ext["clientAddr"] = clientAddr
		}
		resp, err := c.invokeOK(ctx, addr, code.InvokeBrokerToGetConsumerStatus, ext, nil)
		if err != nil {
			return nil, err
		}
		var body struct {
			ConsumerTable map[string]protocol.MQMap[int64] `json:"consumerTable"`
		}
		if err := decodeBody(resp, addr, code.InvokeBrokerToGetConsumerStatus, &body); err != nil {
			return nil, err
		}
		for id, t := range body.ConsumerTable {
			if out[id] == nil {
				out[id] = protocol.MQMap[int64]{}
			}
			for k, v := range t {
				out[id][k] = v
			}
		}
	}
	return out, nil
}

// QueryTopicsByConsumer lists the topics a group has offsets of on one
// broker (343).
func (c *Client) QueryTopicsByConsumer(ctx context.Context, brokerAddr, group string) (*protocol.TopicList, error) {
	return decodeFrom[protocol.TopicList](ctx, c, brokerAddr, code.QueryTopicsByConsumer, map[string]string{"group": group})
}

// BrokerConsumeStats is the GET_BROKER_CONSUME_STATS body.
type BrokerConsumeStats struct {
	BrokerAddr        string                      `json:"brokerAddr"`
	ConsumeStatsList  []map[string][]ConsumeStats `json:"consumeStatsList"`
	TotalDiff         int64                       `json:"totalDiff"`
	TotalInflightDiff int64                       `json:"totalInflightDiff"`
}

// FetchConsumeStatsInBroker reads every group's stats from one broker
// (317).
func (c *Client) FetchConsumeStatsInBroker(ctx context.Context, brokerAddr string, isOrder bool) (*BrokerConsumeStats, error) {
	return decodeFrom[BrokerConsumeStats](ctx, c, brokerAddr, code.GetBrokerConsumeStats, map[string]string{"isOrder": strconv.FormatBool(isOrder)})
}

// ProducerInfo is one producer connection a broker lists (Apache's
// ProducerInfo).
type ProducerInfo struct {
	ClientID            string `json:"clientId"`
	LastUpdateTimestamp int64  `json:"lastUpdateTimestamp"`
	Language            string `json:"language"`
	RemoteIP            string `json:"remoteIP"`
	Version             int    `json:"version"`
}

// ProducerTableInfo is every producer group of a broker with its
// connections.
type ProducerTableInfo struct {
	Data map[string][]ProducerInfo `json:"data"`
}

// GetAllProducerInfo reads every producer group's connections from one
// broker (GET_ALL_PRODUCER_INFO, 328).
func (c *Client) GetAllProducerInfo(ctx context.Context, brokerAddr string) (*ProducerTableInfo, error) {
	return decodeFrom[ProducerTableInfo](ctx, c, brokerAddr, code.GetAllProducerInfo, nil)
}
