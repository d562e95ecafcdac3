package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Simple consumer defaults.
const (
	DefaultAwaitDuration = 20 * time.Second
	// MinInvisibleTime and MaxInvisibleTime bound Receive's invisible
	// duration (Java proxy: 10 s … 12 h; brokers accept less, so the lower
	// bound here is 1 s for tests and short jobs).
	MinInvisibleTime   = time.Second
	MaxInvisibleTime   = 12 * time.Hour
	popTimeoutHeadroom = 5 * time.Second
)

// SimpleConsumerConfig configures a SimpleConsumer. Zero fields take their
// defaults.
type SimpleConsumerConfig struct {
	CommonConfig

	// Group is the consumer group; default DEFAULT_CONSUMER.
	Group string
	// AwaitDuration is how long a broker may hold a Receive that finds
	// nothing (pop long polling); default 20 s. A shorter ctx deadline
	// wins.
	AwaitDuration time.Duration
	// ConsumeFrom positions a group that has never popped a queue:
	// ConsumeFromLastOffset (default) or ConsumeFromFirstOffset.
	ConsumeFrom ConsumeFrom
	// MaxBodySize bounds a decompressed body; default 64 MiB.
	MaxBodySize int
	// Orderly pops FIFO (POP_MESSAGE with order=true): a queue's messages
	// come in queue order, and while any message of a queue's last pop is
	// neither acked nor past its invisible time, the broker hands out
	// nothing more of that queue to the group (Receive finds nothing
	// there). A message popped again carries in ReconsumeTimes how often
	// it was popped before (the answer's orderCountInfo). Orderly pops
	// never read the group's retry topic: an un-acked message comes back
	// in place, not through it.
	Orderly bool
}

func (c SimpleConsumerConfig) normalize() (SimpleConsumerConfig, error) {
	var err error
	if c.CommonConfig, err = c.CommonConfig.normalizeGroup(&c.Group, DefaultConsumerGroup, "consumer"); err != nil {
		return c, err
	}
	if c.AwaitDuration < 0 || c.MaxBodySize < 0 {
		return c, fmt.Errorf("client: negative AwaitDuration or MaxBodySize")
	}
	if c.ConsumeFrom != ConsumeFromLastOffset && c.ConsumeFrom != ConsumeFromFirstOffset {
		return c, fmt.Errorf("client: simple consumer supports ConsumeFromLastOffset or ConsumeFromFirstOffset, not %v", c.ConsumeFrom)
	}
	if c.AwaitDuration == 0 {
		c.AwaitDuration = DefaultAwaitDuration
	}
	if c.MaxBodySize == 0 {
		c.MaxBodySize = DefaultMaxBodySize
	}
	return c, nil
}

// SimpleConsumer receives messages with pop (POP_MESSAGE): each received
// message stays invisible to the group for a while and must be acked
// (Ack) before that, or it is delivered again; ChangeInvisibleTime
// extends the time. Brokers keep the offsets. Safe for concurrent use.
type SimpleConsumer struct {
	groupClient
	cfg SimpleConsumerConfig

	subs subscriptions

	nextTopic  atomic.Uint32
	nextBroker atomic.Uint32
}

// NewSimpleConsumer checks cfg and builds a consumer; nothing is dialled
// until the first request.
func NewSimpleConsumer(cfg SimpleConsumerConfig) (*SimpleConsumer, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	c := &SimpleConsumer{cfg: cfg}
	c.groupClient = newGroupClient(cfg.CommonConfig, "simple consumer", cfg.Group, c.heartbeatData)
	return c, nil
}

// Shutdown refuses new calls, ends Receives in flight, waits for the
// others until ctx ends, unregisters and closes the connections. Messages
// received but not acked are delivered again once invisible no longer.
func (c *SimpleConsumer) Shutdown(ctx context.Context) error {
	return c.shutdownConsumer(ctx, "simple consumer", true)
}

// ClientID is the id brokers know this consumer by.
func (c *SimpleConsumer) ClientID() string { return c.core.clientID }

// Subscribe adds topic (with a TAG or SQL92 filter) to what Receive reads.
func (c *SimpleConsumer) Subscribe(topic, expression, expressionType string) error {
	if err := protocol.ValidateTopic(topic); err != nil {
		return fmt.Errorf("client: subscribe: %w", err)
	}
	if expressionType != "" && expressionType != ExpressionTypeTag && expressionType != ExpressionTypeSQL92 {
		return fmt.Errorf("client: subscribe %s: unknown expression type %q", topic, expressionType)
	}
	c.subs.add(topic, expression, expressionType)
	c.core.wakeHeartbeat()
	return nil
}

// Unsubscribe removes topic.
func (c *SimpleConsumer) Unsubscribe(topic string) {
	c.subs.remove(topic)
}

// heartbeatData announces the group with its subscriptions, if any, as a
// pop clustering consumer.
func (c *SimpleConsumer) heartbeatData() *heartbeatData {
	return clusteringHeartbeat(c.core.clientID, c.cfg.Group, consumePop, c.cfg.ConsumeFrom.String(), c.subs.sorted())
}

// Receive pops up to maxNum messages (1…32) of one subscribed topic
// (round-robin over the subscriptions, and over the topic's brokers),
// making them invisible to the group for invisible. It waits up to
// AwaitDuration for messages; none is not an error (an empty slice). Each
// message carries its receipt handle (ReceiptHandle) for Ack and
// ChangeInvisibleTime; ReconsumeTimes counts earlier deliveries.
func (c *SimpleConsumer) Receive(ctx context.Context, maxNum int, invisible time.Duration) ([]*message.Message, error) {
	if maxNum < 1 || maxNum > 32 {
		return nil, fmt.Errorf("client: receive: max %d out of range 1-32", maxNum)
	}
	if invisible < MinInvisibleTime || invisible > MaxInvisibleTime {
		return nil, fmt.Errorf("client: receive: invisible time %v out of range %v-%v", invisible, MinInvisibleTime, MaxInvisibleTime)
	}
	if err := c.life.begin(); err != nil {
		return nil, err
	}
	defer c.life.end()
	ctx, release := boundTo(ctx, c.core.ctx)
	defer release()

	topics := c.subs.topics()
	if len(topics) == 0 {
		return nil, errors.New("client: receive: no subscription")
	}
	topic := topics[int(c.nextTopic.Add(1)-1)%len(topics)]
	sd := c.subs.get(topic)

	brokers, err := c.popBrokers(ctx, topic)
	if err != nil {
		return nil, err
	}
	broker := brokers[int(c.nextBroker.Add(1)-1)%len(brokers)]
	return c.pop(ctx, topic, broker, sd, maxNum, invisible)
}

// popBrokers lists the brokers with readable queues of topic, sorted.
func (c *SimpleConsumer) popBrokers(ctx context.Context, topic string) ([]string, error) {
	tr := c.core.route(topic)
	if tr == nil || len(tr.subscribe) == 0 {
		var err error
		if tr, err = c.core.updateRoute(ctx, topic, routeFetch{ifMissing: true}); err != nil {
			return nil, fmt.Errorf("%w: topic %s: %w", ErrNoRoute, topic, err)
		}
	}
	var names []string
	for _, mq := range tr.subscribe {
		if !slices.Contains(names, mq.BrokerName) {
			names = append(names, mq.BrokerName)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: topic %s has no readable queue", ErrNoRoute, topic)
	}
	slices.Sort(names)
	return names, nil
}

// pop sends one POP_MESSAGE to broker (any queue of topic) and decodes
// the answer.
func (c *SimpleConsumer) pop(ctx context.Context, topic, broker string, sd subscriptionData, maxNum int, invisible time.Duration) ([]*message.Message, error) {
	mq := protocol.MessageQueue{Topic: topic, BrokerName: broker, QueueID: -1}
	addr, err := c.core.brokerAddrFor(ctx, mq, false, routeFetch{ifMissing: true})
	if err != nil {
		return nil, err
	}
	poll := c.cfg.AwaitDuration
	if dl, ok := ctx.Deadline(); ok {
		// Leave time for the answer to come back before ctx ends.
		poll = min(poll, time.Until(dl)-time.Second)
	}
	poll = max(poll, 0)
	initMode := "1" // MAX
	if c.cfg.ConsumeFrom == ConsumeFromFirstOffset {
		initMode = "0" // MIN
	}
	ext := map[string]string{
		"consumerGroup": c.cfg.Group,
		"topic":         topic,
		"queueId":       "-1",
		"maxMsgNums":    strconv.Itoa(maxNum),
		"invisibleTime": strconv.FormatInt(invisible.Milliseconds(), 10),
		"pollTime":      strconv.FormatInt(poll.Milliseconds(), 10),
		"bornTime":      strconv.FormatInt(time.Now().UnixMilli(), 10),
		"initMode":      initMode,
		"expType":       sd.ExpressionType,
		"exp":           sd.SubString,
		"order":         strconv.FormatBool(c.cfg.Orderly),
		"bname":         broker,
	}
	rctx, cancel := context.WithTimeout(ctx, poll+popTimeoutHeadroom)
	defer cancel()
	resp, err := c.core.rc.Invoke(rctx, addr, c.core.newRequest(code.PopMessage, ext, nil))
	if err != nil {
		return nil, fmt.Errorf("client: pop %s from %s: %w", topic, addr, err)
	}
	msgs, err := c.popResult(resp, topic, broker, addr)
	if err != nil {
		return nil, err
	}
	return c.filter(ctx, msgs, sd), nil
}

// popResult reads a POP_MESSAGE answer and gives every message its
// receipt handle, as Java's processPopResponse.
func (c *SimpleConsumer) popResult(resp *remoting.Command, topic, broker, addr string) ([]*message.Message, error) {
	switch resp.Code {
	case code.Success:
	case code.PollingFull, code.PollingTimeout, code.PullNotFound:
		return []*message.Message{}, nil
	default:
		return nil, &ResponseError{Code: resp.Code, Remark: resp.Remark, Addr: addr, Request: code.PopMessage}
	}
	f := protocol.FieldsOf(resp.ExtFields)
	popTime := f.Int64("popTime")
	invisible := f.Int64("invisibleTime")
	reviveQid := int(f.Int32("reviveQid"))
	startInfo := f.OptStr("startOffsetInfo", "")
	msgInfo := f.OptStr("msgOffsetInfo", "")
	countInfo := f.OptStr("orderCountInfo", "")
	if err := f.Err(); err != nil {
		return nil, fmt.Errorf("client: pop response from %s: %w", addr, err)
	}
	starts, err := parsePopStartOffsets(startInfo)
	if err != nil {
		return nil, err
	}
	offsets, err := parsePopMsgOffsets(msgInfo)
	if err != nil {
		return nil, err
	}
	var counts map[string]int
	if c.cfg.Orderly {
		if counts, err = parsePopOrderCounts(countInfo); err != nil {
			return nil, fmt.Errorf("client: pop response from %s: %w", addr, err)
		}
	}
	msgs, err := message.DecodeAll(resp.Body, message.DecodeOptions{AliasBody: true})
	if err != nil && len(msgs) == 0 {
		return nil, fmt.Errorf("client: pop %s from %s: %w", topic, addr, err)
	}
	// Positions of each message within its queue's list, as the broker
	// listed them in msgOffsetInfo.
	sorted := map[string][]int64{}
	for _, m := range msgs {
		k := popRetryFlag(m.Topic) + "@" + strconv.Itoa(int(m.QueueID))
		if ck := m.Property(message.PropertyPopCK); ck != "" {
			if p, err := parsePopCheckpoint(ck); err == nil {
				k = p.Retry + "@" + strconv.Itoa(int(m.QueueID))
			}
		}
		sorted[k] = append(sorted[k], m.QueueOffset)
	}
	firstOf := map[string]int64{} // no startOffsetInfo: the first offset per topic and queue
	for _, m := range msgs {
		if m.SysFlag&message.FlagCompressed != 0 {
			if body, err := message.Decompress(m.Body, m.SysFlag, c.cfg.MaxBodySize); err == nil {
				m.Body, m.SysFlag = body, m.SysFlag&^message.FlagCompressed
			}
		}
		if m.Property(message.PropertyPopCK) == "" {
			retry := popRetryFlag(m.Topic)
			ck := popCheckpoint{PopTime: popTime, InvisibleTime: invisible, ReviveQid: reviveQid, Retry: retry,
				BrokerName: broker, QueueID: int(m.QueueID), QueueOffset: m.QueueOffset}
			key := retry + "@" + strconv.Itoa(int(m.QueueID))
			if start, ok := starts[key]; ok {
				ck.CkQueueOffset = start
				if list, ok := offsets[key]; ok {
					if i := slices.Index(sorted[key], m.QueueOffset); i >= 0 && i < len(list) {
						ck.QueueOffset = list[i]
					}
				}
			} else {
				tq := m.Topic + "@" + strconv.Itoa(int(m.QueueID))
				if _, ok := firstOf[tq]; !ok {
					firstOf[tq] = m.QueueOffset
				}
				ck.CkQueueOffset = firstOf[tq]
			}
			m.SetProperty(message.PropertyPopCK, ck.String())
		}
		if counts != nil {
			if n := orderCount(counts, m); n > 0 {
				m.ReconsumeTimes = int32(n)
			}
		}
		if m.Property(message.PropertyFirstPopTime) == "" {
			m.SetProperty(message.PropertyFirstPopTime, strconv.FormatInt(popTime, 10))
		}
		m.Topic = topic
	}
	return msgs, nil
}

// parsePopOrderCounts decodes the orderCountInfo header of an orderly pop
// (";"-joined "retry queueId count" and "retry qo<queueId>%<offset>
// count") into retry@queueId / retry@qo<queueId>%<offset> → count, as
// Java's ExtraInfoUtil.parseOrderCountInfo.
func parsePopOrderCounts(s string) (map[string]int, error) {
	return parsePopInfo(s, "orderCountInfo", func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && n >= 0
	})
}

// orderCount is how often an orderly-popped message was popped before:
// its own entry, else its queue's (Java's processPopResponse).
func orderCount(counts map[string]int, m *message.Message) int {
	ck, err := parsePopCheckpoint(m.Property(message.PropertyPopCK))
	if err != nil {
		return 0
	}
	qid := strconv.Itoa(ck.QueueID)
	if n, ok := counts[ck.Retry+"@qo"+qid+"%"+strconv.FormatInt(ck.QueueOffset, 10)]; ok {
		return n
	}
	return counts[ck.Retry+"@"+qid]
}

// filter drops messages whose tag the subscription does not want (brokers
// filter on tag hashes only) and acks them so they do not come back.
func (c *SimpleConsumer) filter(ctx context.Context, msgs []*message.Message, sd subscriptionData) []*message.Message {
	if sd.ExpressionType != ExpressionTypeTag || len(sd.TagsSet) == 0 {
		return msgs
	}
	kept := msgs[:0]
	for _, m := range msgs {
		if slices.Contains(sd.TagsSet, m.Tags()) {
			kept = append(kept, m)
			continue
		}
		if err := c.ack(ctx, m); err != nil {
			c.cfg.Logger.Debug("client: ack of a filtered message failed", "msgId", m.ClientMsgID(), "err", err)
		}
	}
	return kept
}

// ReceiptHandle returns the pop receipt handle of a received message (its
// POP_CK property), "" if it has none.
func ReceiptHandle(m *message.Message) string { return m.Property(message.PropertyPopCK) }

// Ack tells the broker m is consumed (ACK_MESSAGE). It fails with a
// *ResponseError if the handle expired (the message became visible again
// and may be delivered, or was delivered, to another consumer).
func (c *SimpleConsumer) Ack(ctx context.Context, m *message.Message) error {
	if err := c.life.begin(); err != nil {
		return err
	}
	defer c.life.end()
	return c.ack(ctx, m)
}

func (c *SimpleConsumer) ack(ctx context.Context, m *message.Message) error {
	ck, ext, addr, err := c.handleRequest(ctx, m)
	if err != nil {
		return err
	}
	if _, err := c.core.invokeOK(ctx, addr, code.AckMessage, ext, nil); err != nil {
		return fmt.Errorf("client: ack %s (queue %d offset %d): %w", m.ClientMsgID(), ck.QueueID, ck.QueueOffset, err)
	}
	return nil
}

// ChangeInvisibleTime makes m invisible for d from now
// (CHANGE_MESSAGE_INVISIBLETIME) and gives it the new receipt handle the
// broker's answer implies; later calls must use m (or the new handle). For
// an orderly pop it moves when m's queue unblocks.
func (c *SimpleConsumer) ChangeInvisibleTime(ctx context.Context, m *message.Message, d time.Duration) error {
	if d < MinInvisibleTime || d > MaxInvisibleTime {
		return fmt.Errorf("client: invisible time %v out of range %v-%v", d, MinInvisibleTime, MaxInvisibleTime)
	}
	if err := c.life.begin(); err != nil {
		return err
	}
	defer c.life.end()
	ck, ext, addr, err := c.handleRequest(ctx, m)
	if err != nil {
		return err
	}
	ext["invisibleTime"] = strconv.FormatInt(d.Milliseconds(), 10)
	resp, err := c.core.invokeOK(ctx, addr, code.ChangeMessageInvisible, ext, nil)
	if err != nil {
		return fmt.Errorf("client: change invisible time of %s: %w", m.ClientMsgID(), err)
	}
	f := protocol.FieldsOf(resp.ExtFields)
	next := popCheckpoint{
		CkQueueOffset: ck.QueueOffset,
		PopTime:       f.Int64("popTime"),
		InvisibleTime: f.Int64("invisibleTime"),
		ReviveQid:     int(f.Int32("reviveQid")),
		Retry:         ck.Retry,
		BrokerName:    ck.BrokerName,
		QueueID:       ck.QueueID,
		QueueOffset:   ck.QueueOffset,
	}
	if err := f.Err(); err != nil {
		return fmt.Errorf("client: change invisible time response from %s: %w", addr, err)
	}
	m.SetProperty(message.PropertyPopCK, next.String())
	return nil
}

// handleRequest builds the header ACK and CHANGE_INVISIBLE_TIME share from
// m's receipt handle, and finds the broker that popped it.
func (c *SimpleConsumer) handleRequest(ctx context.Context, m *message.Message) (popCheckpoint, map[string]string, string, error) {
	h := ReceiptHandle(m)
	if h == "" {
		return popCheckpoint{}, nil, "", fmt.Errorf("%w: message %s has none", errBadHandle, m.ClientMsgID())
	}
	ck, err := parsePopCheckpoint(h)
	if err != nil {
		return ck, nil, "", err
	}
	if ck.QueueOffset < 0 {
		return ck, nil, "", fmt.Errorf("%w: %q has no queue offset", errBadHandle, h)
	}
	topic := popRealTopic(ck.Retry, m.Topic, c.cfg.Group)
	addr, err := c.core.brokerAddrFor(ctx, protocol.MessageQueue{Topic: m.Topic, BrokerName: ck.BrokerName, QueueID: ck.QueueID}, false, routeFetch{ifMissing: true})
	if err != nil {
		return ck, nil, "", err
	}
	ext := map[string]string{
		"consumerGroup": c.cfg.Group,
		"topic":         topic,
		"queueId":       strconv.Itoa(ck.QueueID),
		"extraInfo":     h,
		"offset":        strconv.FormatInt(ck.QueueOffset, 10),
		"bname":         ck.BrokerName,
	}
	return ck, ext, addr, nil
}
