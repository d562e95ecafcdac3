package client

import (
	"context"
	"fmt"
	"maps"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/pkg/statictopic"
	"github.com/rmqgo/rmq/remoting/code"
)

// consumeTask is one handler call of a concurrent consumer.
type consumeTask struct {
	q    *pushQueue
	msgs []*message.Message
}

// pullLoop pulls q with long polling from offset until q is dropped,
// pausing while too many messages wait for consumption or (orderly
// clustering) while the queue's lock is not held.
func (c *PushConsumer) pullLoop(q *pushQueue, offset int64) {
	defer q.wg.Done()
	ctx := q.ctx
	for ctx.Err() == nil {
		if n, _ := q.pq.count(); n >= c.cfg.PullThresholdForQueue {
			// Flow control: wait until the handlers make room.
			select {
			case <-q.pq.room:
			case <-ctx.Done():
				return
			}
			continue
		}
		if c.lockingOrderly() && !q.pq.lockValid(time.Now()) {
			if !c.waitLock(q) {
				return
			}
			continue
		}
		sd, ok := c.subscription(q.mq.Topic)
		if !ok {
			// Unsubscribed: the next rebalance drops the queue.
			if !sleepCtx(ctx, c.cfg.PullErrorBackoff) {
				return
			}
			continue
		}
		req := PullRequest{
			Queue: q.mq, Offset: offset, MaxNums: c.cfg.PullBatchSize,
			Expression: sd.SubString, ExpressionType: sd.ExpressionType, LongPoll: true,
		}
		if c.cfg.Model == Clustering {
			// The pull carries the committed offset too (Java does), so
			// the broker learns it even between commits.
			if co := c.store.read(q.mq); co > 0 {
				req.CommitOffset = co
			}
		}
		start := time.Now()
		q.pq.lastPull.Store(start.UnixMilli())
		res, err := c.pc.pull(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.log.Warn("client: pull failed", "queue", q.mq.String(), "offset", offset, "err", err)
			if !sleepCtx(ctx, c.cfg.PullErrorBackoff) {
				return
			}
			continue
		}
		c.stats.pulled(q.mq.Topic, time.Since(start), len(res.Messages))
		switch res.Status {
		case PullFound:
			if len(res.Messages) > 0 {
				c.resetRetryTopic(res.Messages)
				q.pq.put(res.Messages)
				if !c.dispatch(q, res.Messages) {
					return
				}
			}
		case PullNoNewMsg, PullNoMatchedMsg:
			// Nothing to consume up to nextBeginOffset: move the committed
			// offset along when nothing is pending (Java's
			// correctTagsOffset).
			if n, _ := q.pq.count(); n == 0 {
				c.commitOffset(q, res.NextBeginOffset, true)
			}
		case PullOffsetIllegal:
			c.log.Warn("client: pull offset illegal, moving on", "queue", q.mq.String(), "from", offset, "to", res.NextBeginOffset)
			q.pq.clear()
			c.commitOffset(q, res.NextBeginOffset, false)
			c.store.persist(ctx, []protocol.MessageQueue{q.mq})
		}
		offset = res.NextBeginOffset
	}
}

// waitLock waits until q's lock is valid again, trying to re-lock it
// after a second; false means q was dropped.
func (c *PushConsumer) waitLock(q *pushQueue) bool {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-q.pq.lockedSignal:
		return true
	case <-q.ctx.Done():
		return false
	case <-t.C:
		c.relockQueue(q.ctx, q)
		return q.ctx.Err() == nil
	}
}

// resetRetryTopic gives messages redelivered through the group's retry
// topic their original topic back (Java's resetRetryAndNamespace).
func (c *PushConsumer) resetRetryTopic(msgs []*message.Message) {
	rt := protocol.RetryTopic(c.cfg.Group)
	for _, m := range msgs {
		if m.Topic == rt {
			if orig := m.Property(message.PropertyRetryTopic); orig != "" {
				m.Topic = orig
			}
		}
	}
}

// dispatch hands pulled messages to the consume workers in batches
// (concurrent); orderly loops pick them from the process queue instead.
// It reports false if q was dropped meanwhile.
func (c *PushConsumer) dispatch(q *pushQueue, msgs []*message.Message) bool {
	if c.cfg.Orderly {
		return true
	}
	for i := 0; i < len(msgs); i += c.cfg.ConsumeBatchSize {
		t := consumeTask{q: q, msgs: msgs[i:min(i+c.cfg.ConsumeBatchSize, len(msgs))]}
		select {
		case c.tasks <- t:
		case <-q.ctx.Done():
			return false
		}
	}
	return true
}

// commitOffset records offset as consumed unless q was dropped.
func (c *PushConsumer) commitOffset(q *pushQueue, offset int64, increaseOnly bool) {
	if offset < 0 {
		return
	}
	c.qmu.RLock()
	defer c.qmu.RUnlock()
	if !q.pq.dropped.Load() {
		c.store.update(q.mq, offset, increaseOnly)
	}
}

// consumeWorker runs handler calls for a concurrent consumer.
func (c *PushConsumer) consumeWorker() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case t := <-c.tasks:
			c.consumeConcurrently(t)
		}
	}
}

// consumeConcurrently runs one handler call and settles its messages
// (Java's ConsumeMessageConcurrentlyService.processConsumeResult).
func (c *PushConsumer) consumeConcurrently(t consumeTask) {
	q := t.q
	if q.pq.dropped.Load() {
		return
	}
	req := &ConsumeRequest{Queue: q.mq, Messages: t.msgs}
	q.pq.lastConsume.Store(time.Now().UnixMilli())
	res := c.callHandler(q.ctx, req)
	if q.pq.dropped.Load() {
		// The queue went elsewhere: whoever holds it now consumes these
		// again (Java discards the result too).
		return
	}
	done := t.msgs
	var failed []*message.Message
	if res != ConsumeSuccess {
		if c.cfg.Model == Broadcasting {
			for _, m := range t.msgs {
				c.log.Warn("client: broadcasting consumer failed a message, dropping it", "queue", q.mq.String(), "msgId", m.ClientMsgID())
			}
		} else {
			done = nil
			for _, m := range t.msgs {
				if c.sendBack(q.ctx, q.mq, m, req.DelayLevel) {
					done = append(done, m)
				} else {
					m.ReconsumeTimes++
					failed = append(failed, m)
				}
			}
		}
	}
	c.commitOffset(q, q.pq.remove(done), true)
	if len(failed) > 0 {
		// Neither the broker nor the retry topic took them: consume them
		// here again a little later (Java: submitConsumeRequestLater).
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			if sleepCtx(q.ctx, sendBackRetryDelay) {
				c.dispatch(q, failed)
			}
		}()
	}
}

// callHandler runs the handler, turning a panic into ConsumeRetryLater,
// and records the statistics.
func (c *PushConsumer) callHandler(ctx context.Context, req *ConsumeRequest) (res ConsumeResult) {
	now := time.Now()
	stamp := strconv.FormatInt(now.UnixMilli(), 10)
	for _, m := range req.Messages {
		m.SetProperty(message.PropertyConsumeStartTimestamp, stamp)
	}
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("client: consume handler panicked", "queue", req.Queue.String(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			res = ConsumeRetryLater
		}
		c.stats.consumed(req.Queue.Topic, time.Since(now), len(req.Messages), res == ConsumeSuccess)
	}()
	res = c.cfg.Handler(ctx, req)
	if res != ConsumeSuccess && res != ConsumeRetryLater {
		res = ConsumeRetryLater
	}
	return res
}

// sendBack returns a failed message to the broker for a later retry
// (CONSUMER_SEND_MSG_BACK to the master of the queue it came from), else
// sends it to the retry topic itself; false when both fail.
//
// A message of a logic queue (static topic) goes to the retry topic at
// once, as Java's DefaultMQPushConsumerImpl.sendMessageBack does for a
// mock broker name (docs/static-topics.md §6.6): its CommitLog offset may be
// that of the broker holding an older segment, not of the leader the
// send-back would go to, which would retry whatever message sits at that
// offset on the leader — or fail. The handler's DelayLevel keeps its
// meaning (Java uses 3 + reconsume times here whatever it asked for).
func (c *PushConsumer) sendBack(ctx context.Context, mq protocol.MessageQueue, m *message.Message, delayLevel int) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second) // Java's send-back timeout
	defer cancel()
	if statictopic.IsMockBroker(mq.BrokerName) {
		reconsume, level := int(m.ReconsumeTimes)+1, 3+int(m.ReconsumeTimes)
		switch {
		case delayLevel > 0:
			level = delayLevel
		case delayLevel < 0:
			// Straight to the DLQ: past MAX_RECONSUME_TIMES the broker
			// stores a retry-topic send in %DLQ%<group>.
			reconsume = c.cfg.MaxReconsumeTimes + 1
		}
		if err := c.sendToRetryTopic(ctx, m, reconsume, level); err != nil {
			c.log.Warn("client: send to the retry topic failed", "queue", mq.String(), "msgId", m.ClientMsgID(), "err", err)
			return false
		}
		return true
	}
	addr, err := c.core.brokerAddrFor(ctx, mq, false, routeFetch{ifMissing: true})
	if err == nil {
		ext := map[string]string{
			"offset":            strconv.FormatInt(m.CommitLogOffset, 10),
			"group":             c.cfg.Group,
			"delayLevel":        strconv.Itoa(delayLevel),
			"originMsgId":       m.ClientMsgID(),
			"originTopic":       m.Topic,
			"unitMode":          "false",
			"maxReconsumeTimes": strconv.Itoa(c.cfg.MaxReconsumeTimes),
			"bname":             mq.BrokerName,
		}
		if _, err = c.core.invokeOK(ctx, addr, code.ConsumerSendMsgBack, ext, nil); err == nil {
			return true
		}
	}
	if ctx.Err() != nil {
		return false
	}
	c.log.Warn("client: send back failed, sending to the retry topic", "msgId", m.ClientMsgID(), "err", err)
	if err := c.sendToRetryTopic(ctx, m, int(m.ReconsumeTimes)+1, 3+int(m.ReconsumeTimes)); err != nil {
		c.log.Warn("client: send to the retry topic failed", "msgId", m.ClientMsgID(), "err", err)
		return false
	}
	return true
}

// sendToRetryTopic re-sends m as a new message of %RETRY%<group> with the
// given reconsume count and delay level, as Java's
// sendMessageBackAsNormalMessage; the broker sends it to the DLQ once the
// count reaches MAX_RECONSUME_TIMES.
func (c *PushConsumer) sendToRetryTopic(ctx context.Context, m *message.Message, reconsume, delayLevel int) error {
	nm := &message.Message{Topic: protocol.RetryTopic(c.cfg.Group), Body: m.Body, Flag: m.Flag, Properties: maps.Clone(m.Properties)}
	origin := m.Property(message.PropertyOriginMessageID)
	if origin == "" {
		origin = m.ClientMsgID()
	}
	nm.SetProperty(message.PropertyOriginMessageID, origin)
	nm.SetProperty(message.PropertyRetryTopic, m.Topic)
	nm.SetProperty(message.PropertyReconsumeTime, strconv.Itoa(reconsume))
	nm.SetProperty(message.PropertyMaxReconsumeTimes, strconv.Itoa(c.cfg.MaxReconsumeTimes))
	delete(nm.Properties, message.PropertyTransactionPrepared)
	nm.SetDelayTimeLevel(delayLevel)
	_, err := c.inner.SendSync(ctx, nm)
	return err
}

// orderlyLoop consumes q one batch at a time in queue order (Java's
// ConsumeMessageOrderlyService): on failure the batch is delivered again
// after a pause, and once a message has been delivered MaxReconsumeTimes
// times it goes to the DLQ.
func (c *PushConsumer) orderlyLoop(q *pushQueue) {
	defer q.wg.Done()
	ctx := q.ctx
	for ctx.Err() == nil {
		if c.lockingOrderly() && !q.pq.lockValid(time.Now()) {
			if !c.waitLock(q) {
				return
			}
			continue
		}
		msgs := q.pq.take(c.cfg.ConsumeBatchSize)
		if msgs == nil {
			select {
			case <-q.pq.arrived:
			case <-ctx.Done():
				return
			}
			continue
		}
		req := &ConsumeRequest{Queue: q.mq, Messages: msgs}
		q.pq.lastConsume.Store(time.Now().UnixMilli())
		res := c.callHandler(ctx, req)
		if q.pq.dropped.Load() {
			return // not committed: the next holder consumes them again
		}
		if res == ConsumeSuccess || !c.suspend(ctx, msgs) {
			c.commitOffset(q, q.pq.commit(), false)
			continue
		}
		q.pq.rollback()
		pause := req.SuspendFor
		if pause <= 0 {
			pause = c.cfg.SuspendTime
		}
		if !sleepCtx(ctx, pause) {
			return
		}
	}
}

// suspend decides what a failed orderly batch does (Java's
// checkReconsumeTimes): messages past MaxReconsumeTimes go to the DLQ;
// the batch is delivered again if any message is still to be retried. It
// counts the failed delivery in each message's ReconsumeTimes.
func (c *PushConsumer) suspend(ctx context.Context, msgs []*message.Message) bool {
	again := false
	for _, m := range msgs {
		if int(m.ReconsumeTimes) >= c.cfg.MaxReconsumeTimes {
			if err := c.sendToRetryTopic(ctx, m, int(m.ReconsumeTimes), 3+int(m.ReconsumeTimes)); err == nil {
				continue
			} else {
				c.log.Warn("client: orderly: sending to the DLQ failed, retrying in place", "msgId", m.ClientMsgID(), "err", err)
			}
		}
		again = true
		m.ReconsumeTimes++
	}
	return again
}
