package client

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// registerHandlers answers the requests brokers send to consumers
// (docs/protocol.md §3.5).
func (c *PushConsumer) registerHandlers() {
	rc := c.core.rc
	rc.RegisterHandler(code.NotifyConsumerIdsChanged, c.onIDsChanged)
	rc.RegisterHandler(code.ResetConsumerClientOffset, c.onResetOffset)
	rc.RegisterHandler(code.GetConsumerStatusFromClient, c.onConsumerStatus)
	rc.RegisterHandler(code.GetConsumerRunningInfo, c.onRunningInfo)
	rc.RegisterHandler(code.ConsumeMessageDirectly, c.onConsumeDirectly)
}

// onIDsChanged (NOTIFY_CONSUMER_IDS_CHANGED, one-way) rebalances at once.
func (c *PushConsumer) onIDsChanged(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if g := req.Ext("consumerGroup"); g == "" || g == c.cfg.Group {
		c.log.Debug("client: consumer ids changed, rebalancing")
		c.rebalanceNow()
	}
	return nil, nil
}

// resetOffsetBody is ResetOffsetBody: {"offsetTable":{MQ:offset}}.
type resetOffsetBody struct {
	OffsetTable protocol.MQMap[int64] `json:"offsetTable"`
}

// onResetOffset (RESET_CONSUMER_CLIENT_OFFSET, one-way) moves the held
// queues of the topic to the offsets the broker computed.
func (c *PushConsumer) onResetOffset(ctx context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	topic, group := req.Ext("topic"), req.Ext("group")
	if group != c.cfg.Group || topic == "" || len(req.Body) == 0 {
		return nil, nil
	}
	var body resetOffsetBody
	if err := protocol.UnmarshalMQKeyed(req.Body, &body); err != nil {
		c.log.Warn("client: bad reset offset body", "err", err)
		return nil, nil
	}
	// Bound by the consumer's life, not the connection's.
	ctx, release := boundTo(ctx, c.ctx)
	defer release()
	if err := c.resetOffsets(ctx, topic, body.OffsetTable); err != nil {
		c.log.Warn("client: reset offsets failed", "topic", topic, "err", err)
	}
	return nil, nil
}

// onConsumerStatus (GET_CONSUMER_STATUS_FROM_CLIENT) returns the offsets
// in memory of a topic: {"messageQueueTable":{MQ:offset}}.
func (c *PushConsumer) onConsumerStatus(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if g := req.Ext("group"); g != "" && g != c.cfg.Group {
		return nil, notThisGroup(g)
	}
	return keyedResponse(req, "consumer status", struct {
		MessageQueueTable protocol.MQMap[int64] `json:"messageQueueTable"`
	}{MessageQueueTable: c.store.table(req.Ext("topic"))})
}

// notThisGroup is the error of a request for a group this consumer is not
// in (Java's remark, word for word).
func notThisGroup(g string) error {
	return remoting.Errorf(code.SystemError, "The Consumer Group <%s> not exist in this consumer", g)
}

// keyedResponse answers req with v encoded as Java's fastjson would,
// message queues as map keys; what names v in the error.
func keyedResponse(req *remoting.Command, what string, v any) (*remoting.Command, error) {
	body, err := protocol.MarshalMQKeyed(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", what, err)
	}
	resp := remoting.NewResponse(req, code.Success, "")
	resp.Body = body
	return resp, nil
}

// processQueueInfo is Java's ProcessQueueInfo, fields in fastjson order.
type processQueueInfo struct {
	CachedMsgCount          int   `json:"cachedMsgCount"`
	CachedMsgMaxOffset      int64 `json:"cachedMsgMaxOffset"`
	CachedMsgMinOffset      int64 `json:"cachedMsgMinOffset"`
	CachedMsgSizeInMiB      int   `json:"cachedMsgSizeInMiB"`
	CommitOffset            int64 `json:"commitOffset"`
	Droped                  bool  `json:"droped"` // sic, Java's name
	LastConsumeTimestamp    int64 `json:"lastConsumeTimestamp"`
	LastLockTimestamp       int64 `json:"lastLockTimestamp"`
	LastPullTimestamp       int64 `json:"lastPullTimestamp"`
	Locked                  bool  `json:"locked"`
	TransactionMsgCount     int   `json:"transactionMsgCount"`
	TransactionMsgMaxOffset int64 `json:"transactionMsgMaxOffset"`
	TransactionMsgMinOffset int64 `json:"transactionMsgMinOffset"`
	TryUnlockTimes          int64 `json:"tryUnlockTimes"`
}

// consumerRunningInfo is Java's ConsumerRunningInfo, fields in fastjson
// order.
type consumerRunningInfo struct {
	Jstack           string                           `json:"jstack,omitempty"`
	MqPopTable       map[string]any                   `json:"mqPopTable"`
	MqTable          protocol.MQMap[processQueueInfo] `json:"mqTable"`
	Properties       map[string]string                `json:"properties"`
	StatusTable      map[string]consumeStatus         `json:"statusTable"`
	SubscriptionSet  []subscriptionData               `json:"subscriptionSet"`
	UserConsumerInfo map[string]string                `json:"userConsumerInfo"`
}

// runningInfo builds what GET_CONSUMER_RUNNING_INFO answers: the
// configuration as properties (Java's names), subscriptions, held queues
// and consume statistics.
func (c *PushConsumer) runningInfo(jstack bool) consumerRunningInfo {
	cfg := c.cfg
	props := map[string]string{
		"consumerGroup":                 cfg.Group,
		"messageModel":                  cfg.Model.String(),
		"consumeFromWhere":              cfg.ConsumeFrom.String(),
		"consumeTimestamp":              cfg.ConsumeTimestamp.Format("20060102150405"),
		"consumeThreadMin":              strconv.Itoa(cfg.ConsumeGoroutines),
		"consumeThreadMax":              strconv.Itoa(cfg.ConsumeGoroutines),
		"consumeMessageBatchMaxSize":    strconv.Itoa(cfg.ConsumeBatchSize),
		"pullBatchSize":                 strconv.Itoa(cfg.PullBatchSize),
		"pullThresholdForQueue":         strconv.Itoa(cfg.PullThresholdForQueue),
		"maxReconsumeTimes":             strconv.Itoa(cfg.MaxReconsumeTimes),
		"suspendCurrentQueueTimeMillis": strconv.FormatInt(cfg.SuspendTime.Milliseconds(), 10),
		"namesrvAddr":                   strings.Join(cfg.NameServers, ";"),
		"instanceName":                  instanceOf(c.core.clientID),
		"unitMode":                      "false",
		"PROP_CONSUMEORDERLY":           strconv.FormatBool(cfg.Orderly),
		"PROP_THREADPOOL_CORE_SIZE":     strconv.Itoa(cfg.ConsumeGoroutines),
		"PROP_CONSUMER_START_TIMESTAMP": strconv.FormatInt(c.started.UnixMilli(), 10),
		"PROP_NAMESERVER_ADDR":          strings.Join(cfg.NameServers, ";") + ";",
		"PROP_CONSUME_TYPE":             consumePassively,
		"PROP_CLIENT_VERSION":           remoting.VersionDesc(remoting.CurrentVersion),
	}
	subs := c.topicSubscriptions()
	info := consumerRunningInfo{
		MqPopTable:       map[string]any{},
		MqTable:          protocol.MQMap[processQueueInfo]{},
		Properties:       props,
		StatusTable:      map[string]consumeStatus{},
		SubscriptionSet:  []subscriptionData{},
		UserConsumerInfo: map[string]string{},
	}
	for _, t := range slices.Sorted(maps.Keys(subs)) {
		info.SubscriptionSet = append(info.SubscriptionSet, subs[t])
		info.StatusTable[t] = c.stats.status(t)
	}
	c.qmu.RLock()
	for mq, q := range c.queues {
		info.MqTable[mq] = q.pq.info(c.store.read(mq))
	}
	c.qmu.RUnlock()
	if jstack {
		buf := make([]byte, 1<<20)
		info.Jstack = string(buf[:runtime.Stack(buf, true)])
	}
	return info
}

// onRunningInfo answers GET_CONSUMER_RUNNING_INFO.
func (c *PushConsumer) onRunningInfo(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if g := req.Ext("consumerGroup"); g != c.cfg.Group {
		return nil, notThisGroup(g)
	}
	jstack, _ := strconv.ParseBool(req.Ext("jstackEnable"))
	return keyedResponse(req, "running info", c.runningInfo(jstack))
}

// consumeDirectlyResult is Java's ConsumeMessageDirectlyResult.
type consumeDirectlyResult struct {
	AutoCommit     bool   `json:"autoCommit"`
	ConsumeResult  string `json:"consumeResult"`
	Order          bool   `json:"order"`
	Remark         string `json:"remark,omitempty"`
	SpentTimeMills int64  `json:"spentTimeMills"`
}

// onConsumeDirectly (CONSUME_MESSAGE_DIRECTLY) runs the handler on the
// message in the body and reports the outcome; nothing is committed or
// retried.
func (c *PushConsumer) onConsumeDirectly(ctx context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if g := req.Ext("consumerGroup"); g != c.cfg.Group {
		return nil, notThisGroup(g)
	}
	m, _, err := message.DecodeStored(req.Body, message.DecodeOptions{})
	if err != nil {
		return nil, remoting.Errorf(code.SystemError, "decode message: %v", err)
	}
	if m.SysFlag&message.FlagCompressed != 0 {
		if body, err := message.Decompress(m.Body, m.SysFlag, c.cfg.MaxBodySize); err == nil {
			m.Body, m.SysFlag = body, m.SysFlag&^message.FlagCompressed
		}
	}
	msgs := []*message.Message{m}
	c.resetRetryTopic(msgs)
	start := time.Now()
	out := consumeDirectlyResult{AutoCommit: true, Order: c.cfg.Orderly}
	func() {
		defer func() {
			if r := recover(); r != nil {
				out.ConsumeResult, out.Remark = "CR_THROW_EXCEPTION", fmt.Sprint(r)
			}
		}()
		mq := protocol.MessageQueue{Topic: m.Topic, BrokerName: req.Ext("brokerName"), QueueID: int(m.QueueID)}
		switch c.cfg.Handler(ctx, &ConsumeRequest{Queue: mq, Messages: msgs}) {
		case ConsumeSuccess:
			out.ConsumeResult = "CR_SUCCESS"
		default:
			out.ConsumeResult = "CR_LATER"
		}
	}()
	out.SpentTimeMills = time.Since(start).Milliseconds()
	resp := remoting.NewResponse(req, code.Success, "")
	resp.Body = protocol.MustMarshal(out)
	return resp, nil
}

// instanceOf is the instance name part of a client id (ip@instance).
func instanceOf(clientID string) string {
	_, inst, _ := strings.Cut(clientID, "@")
	return inst
}
