package client

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// liteReviveQid is the revive queue id of every lite receipt (the POP
// order revive queue).
const liteReviveQid = 999

// liteMsg is a popped lite message with what its ack needs.
type liteMsg struct {
	m      *message.Message
	lite   string
	broker string // the broker it was popped from
	addr   string // that broker's address then
	pop    uint64 // which pop answer brought it
	// visibleAt is when the broker makes it visible to the group again
	// (from the local receive time: never later than the broker's);
	// deadline is a little earlier: the handler's end.
	visibleAt time.Time
	deadline  time.Time
}

// invokeJSON is invokeOK with a JSON header whatever SerializeType says:
// the ROCKETMQ codec's request code has 16 bits, too few for the pop and
// lite codes (2000xx).
func (c *core) invokeJSON(ctx context.Context, addr string, reqCode int32, ext map[string]string, body []byte) (*remoting.Command, error) {
	resp, err := c.invokeCommand(ctx, addr, remoting.NewRequest(reqCode, ext, body))
	return successOnly(resp, err, addr, reqCode)
}

// newAttemptID names one pop attempt: a pop re-sent after its answer was
// lost carries the same id, so the broker gives it the same messages
// instead of treating their lite topics as blocked.
func newAttemptID() string {
	return fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())
}

// popLoop long-polls one broker with POP_LITE_MESSAGE while ctx lasts and
// hands what it gets to the lanes; it pops only as much as the cache has
// room for.
func (c *LitePushConsumer) popLoop(ctx context.Context, broker string, done chan struct{}) {
	defer close(done)
	attempt := newAttemptID()
	for ctx.Err() == nil {
		n := c.cache.reserve(ctx, c.cfg.MaxMessagesPerPop)
		if n == 0 {
			return
		}
		msgs, answered, err := c.popOnce(ctx, broker, n, attempt)
		if answered {
			attempt = newAttemptID()
		}
		c.cache.release(n - len(msgs))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.log.Warn("client: pop lite failed", "broker", broker, "err", err)
			if !sleepCtx(ctx, c.cfg.PopErrorPause) {
				return
			}
			continue
		}
		c.deliver(ctx, msgs)
	}
}

// popOnce sends one POP_LITE_MESSAGE for up to n messages; answered is
// false when no answer came back (the next pop retries the attempt).
func (c *LitePushConsumer) popOnce(ctx context.Context, broker string, n int, attempt string) (msgs []*liteMsg, answered bool, err error) {
	addr := c.core.brokerAddr(broker, false)
	if addr == "" {
		return nil, true, fmt.Errorf("%w: broker %s has no master address", ErrNoRoute, broker)
	}
	poll := c.cfg.LongPollingTimeout
	ext := map[string]string{
		"clientId":      c.core.clientID,
		"consumerGroup": c.cfg.Group,
		"topic":         c.cfg.BindTopic,
		"maxMsgNum":     strconv.Itoa(n),
		"invisibleTime": strconv.FormatInt(c.cfg.InvisibleTime.Milliseconds(), 10),
		"pollTime":      strconv.FormatInt(poll.Milliseconds(), 10),
		"bornTime":      strconv.FormatInt(time.Now().UnixMilli(), 10),
		"attemptId":     attempt,
	}
	rctx, cancel := context.WithTimeout(ctx, poll+popTimeoutHeadroom)
	defer cancel()
	resp, err := c.core.rc.Invoke(rctx, addr, remoting.NewRequest(code.PopLiteMessage, ext, nil))
	if err != nil {
		return nil, false, fmt.Errorf("client: pop lite from %s: %w", addr, err)
	}
	msgs, err = c.popResult(resp, broker, addr, time.Now())
	return msgs, true, err
}

// popResult reads a POP_LITE_MESSAGE answer (docs/lite-topics.md §6.6): each
// message's queue offset becomes its LMQ offset (queue 0), its receipt
// handle is built from the response header, and its reconsume times come
// from orderCountInfo. A message without exactly one LMQ and offset cannot
// be acked and is skipped (it is delivered again after its invisible
// time). received is when the answer arrived.
func (c *LitePushConsumer) popResult(resp *remoting.Command, broker, addr string, received time.Time) ([]*liteMsg, error) {
	switch resp.Code {
	case code.Success:
	case code.PollingTimeout, code.PullNotFound:
		return nil, nil
	default:
		// POLLING_FULL too: the broker's suspend queue is full, and popping
		// again at once would only add to it (the loop pauses on errors).
		return nil, &ResponseError{Code: resp.Code, Remark: resp.Remark, Addr: addr, Request: code.PopLiteMessage}
	}
	f := protocol.FieldsOf(resp.ExtFields)
	popTime := f.Int64("popTime")
	invisible := f.Int64("invisibleTime")
	reviveQid := int(f.OptInt32("reviveQid", liteReviveQid))
	counts := f.OptStr("orderCountInfo", "")
	if err := f.Err(); err != nil {
		return nil, fmt.Errorf("client: pop lite response from %s: %w", addr, err)
	}
	msgs, err := message.DecodeAll(resp.Body, message.DecodeOptions{AliasBody: true})
	if err != nil {
		if len(msgs) == 0 {
			return nil, fmt.Errorf("client: pop lite from %s: %w", addr, err)
		}
		c.log.Warn("client: pop lite answer partly undecodable", "broker", addr, "decoded", len(msgs), "err", err)
	}
	var rc []string
	if counts != "" {
		rc = strings.Split(counts, ";")
	}
	if len(rc) != len(msgs) {
		rc = nil // as Java: counts only when they match the messages one to one
	}
	visibleAt := received.Add(time.Duration(invisible) * time.Millisecond)
	pop := c.pops.Add(1)
	margin := min(time.Duration(invisible)*time.Millisecond/liteDeadlineMarginDivisor, time.Second)
	out := make([]*liteMsg, 0, len(msgs))
	for i, m := range msgs {
		lmq, offs := m.Property(message.PropertyInnerMultiDispatch), m.Property(message.PropertyInnerMultiQueueOffset)
		off, perr := strconv.ParseInt(offs, 10, 64)
		if lmq == "" || strings.Contains(lmq, ",") || strings.Contains(offs, ",") || perr != nil || off < 0 {
			c.log.Warn("client: popped lite message without one LMQ offset; it comes back later", "broker", addr,
				"msgId", m.ClientMsgID(), "lmq", lmq, "offset", offs)
			continue
		}
		lite := m.LiteTopic()
		if lite == "" {
			lite = strings.TrimPrefix(lmq, protocol.LMQPrefix+"$"+c.cfg.BindTopic+"$")
		}
		if m.SysFlag&message.FlagCompressed != 0 {
			if body, err := message.Decompress(m.Body, m.SysFlag, c.cfg.MaxBodySize); err == nil {
				m.Body, m.SysFlag = body, m.SysFlag&^message.FlagCompressed
			}
		}
		m.QueueID, m.QueueOffset = 0, off
		ck := popCheckpoint{PopTime: popTime, InvisibleTime: invisible, ReviveQid: reviveQid, Retry: popNormalTopic,
			BrokerName: broker, QueueOffset: off}
		m.SetProperty(message.PropertyPopCK, ck.String())
		if m.Property(message.PropertyFirstPopTime) == "" {
			m.SetProperty(message.PropertyFirstPopTime, strconv.FormatInt(popTime, 10))
		}
		if rc != nil {
			if n, err := strconv.Atoi(rc[i]); err == nil && n >= 0 {
				m.ReconsumeTimes = int32(n)
			}
		}
		out = append(out, &liteMsg{m: m, lite: lite, broker: broker, addr: addr, pop: pop, visibleAt: visibleAt, deadline: visibleAt.Add(-margin)})
	}
	return out, nil
}

// deliver queues popped messages on their lite topics' lanes; messages of
// lite topics no longer subscribed are made visible again for the group's
// other consumers.
func (c *LitePushConsumer) deliver(ctx context.Context, msgs []*liteMsg) {
	var gone []*liteMsg
	byLite := map[string][]*liteMsg{}
	var order []string
	for _, lm := range msgs {
		if !c.subscribed(lm.lite) {
			gone = append(gone, lm)
			continue
		}
		if _, ok := byLite[lm.lite]; !ok {
			order = append(order, lm.lite)
		}
		byLite[lm.lite] = append(byLite[lm.lite], lm)
	}
	for _, lite := range order {
		if !c.lanes.push(lite, byLite[lite]) {
			gone = append(gone, byLite[lite]...) // shutting down
		}
	}
	if len(gone) > 0 {
		c.cache.release(len(gone))
		c.releaseAll(ctx, gone)
	}
}
