package client

import (
	"context"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting/code"
)

// Ack retries: an ack that fails is tried again a few times before the
// lite topic is given up until redelivery (handling the next message
// first would break its order).
const (
	liteAckAttempts = 3
	liteAckPause    = 100 * time.Millisecond
)

// liteCache counts messages popped and not yet handled, dropped or let
// go; pop loops reserve room before they pop.
type liteCache struct {
	mu    sync.Mutex
	n     int
	max   int
	freed chan struct{} // signalled when room appears
}

func newLiteCache(max int) *liteCache {
	return &liteCache{max: max, freed: make(chan struct{}, 1)}
}

// reserve waits for room and reserves up to want messages; 0 when ctx
// ended.
func (l *liteCache) reserve(ctx context.Context, want int) int {
	for {
		l.mu.Lock()
		if room := l.max - l.n; room > 0 {
			n := min(want, room)
			l.n += n
			left := l.max - l.n
			l.mu.Unlock()
			if left > 0 {
				l.signal() // room for another waiting pop loop too
			}
			return n
		}
		l.mu.Unlock()
		select {
		case <-l.freed:
		case <-ctx.Done():
			return 0
		}
	}
}

func (l *liteCache) release(n int) {
	if n <= 0 {
		return
	}
	l.mu.Lock()
	l.n -= n
	l.mu.Unlock()
	l.signal()
}

func (l *liteCache) signal() {
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

// liteLane holds one lite topic's messages waiting for their handler call;
// at most one worker runs a lane (running), which is what keeps a lite
// topic FIFO. A lane stays in the table while it runs.
type liteLane struct {
	lite    string
	pending []*liteMsg
	running bool
}

// liteLanes is the lane table and the queue of lanes ready for a worker.
type liteLanes struct {
	mu     sync.Mutex
	lanes  map[string]*liteLane
	ready  chan *liteLane
	stop   chan struct{} // closed by close: workers end after their message
	closed bool
}

func newLiteLanes(capacity int) *liteLanes {
	return &liteLanes{lanes: map[string]*liteLane{}, ready: make(chan *liteLane, capacity), stop: make(chan struct{})}
}

// push appends msgs (queue order) to lite's lane and schedules the lane if
// no worker runs it; false after close.
func (l *liteLanes) push(lite string, msgs []*liteMsg) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return false
	}
	lane := l.lanes[lite]
	if lane == nil {
		lane = &liteLane{lite: lite}
		l.lanes[lite] = lane
	}
	lane.pending = append(lane.pending, msgs...)
	schedule := !lane.running
	lane.running = true
	l.mu.Unlock()
	if schedule {
		select {
		case l.ready <- lane:
		case <-l.stop:
			l.park(lane)
		}
	}
	return true
}

// next takes the head of a running lane; when it is empty (or the lanes
// are closing) the lane stops running and next reports false.
func (l *liteLanes) next(lane *liteLane) (*liteMsg, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || len(lane.pending) == 0 {
		l.parkLocked(lane)
		return nil, false
	}
	lm := lane.pending[0]
	lane.pending[0] = nil
	lane.pending = lane.pending[1:]
	return lm, true
}

func (l *liteLanes) park(lane *liteLane) {
	l.mu.Lock()
	l.parkLocked(lane)
	l.mu.Unlock()
}

// parkLocked stops a lane; an empty one leaves the table.
func (l *liteLanes) parkLocked(lane *liteLane) {
	lane.running = false
	if len(lane.pending) == 0 && l.lanes[lane.lite] == lane {
		delete(l.lanes, lane.lite)
	}
}

// dropPop removes the pending messages of a lane that came with the same
// pop answer as lm: after lm failed they wait for its redelivery, which
// brings them again, in order. (Messages of a later answer can only be
// there because lm became visible again: they start with lm's
// redelivery and stay.)
func (l *liteLanes) dropPop(lane *liteLane, lm *liteMsg) []*liteMsg {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*liteMsg
	kept := lane.pending[:0]
	for _, p := range lane.pending {
		if p.pop == lm.pop {
			out = append(out, p)
		} else {
			kept = append(kept, p)
		}
	}
	clear(lane.pending[len(kept):])
	lane.pending = kept
	return out
}

// drop removes every pending message of lite (its subscription ended).
func (l *liteLanes) drop(lite string) []*liteMsg {
	l.mu.Lock()
	defer l.mu.Unlock()
	lane := l.lanes[lite]
	if lane == nil {
		return nil
	}
	out := lane.pending
	lane.pending = nil
	if !lane.running {
		delete(l.lanes, lite)
	}
	return out
}

// close stops the workers after their current message; push refuses
// from now on.
func (l *liteLanes) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.stop)
	}
}

// takeAll empties every lane (after close).
func (l *liteLanes) takeAll() []*liteMsg {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*liteMsg
	for lite, lane := range l.lanes {
		out = append(out, lane.pending...)
		lane.pending = nil
		if !lane.running {
			delete(l.lanes, lite)
		}
	}
	return out
}

// worker runs ready lanes until the lanes close.
func (c *LitePushConsumer) worker() {
	defer c.workers.Done()
	for {
		select {
		case <-c.lanes.stop:
			return
		case lane := <-c.lanes.ready:
			c.runLane(lane)
		}
	}
}

// runLane handles a lane's messages one after another. When one is not
// consumed (failed, or expired before its turn), the lane's other
// messages of the same pop are taken out: the broker delivers them again
// after the failed one, in order.
func (c *LitePushConsumer) runLane(lane *liteLane) {
	for {
		lm, ok := c.lanes.next(lane)
		if !ok {
			return
		}
		progressed, backoff := c.consume(lm)
		c.cache.release(1)
		if progressed {
			continue
		}
		if c.consumeCtx.Err() != nil {
			// Shutdown gave up waiting: the lane's other messages stay
			// where its release of everything pending finds them (taken
			// out here, they were postponed with a cancelled context,
			// that is not at all, and came back only after their
			// invisible time).
			return
		}
		rest := c.lanes.dropPop(lane, lm)
		c.cache.release(len(rest))
		ctx, cancel := context.WithTimeout(c.consumeCtx, c.cfg.RequestTimeout)
		switch {
		case !c.subscribed(lane.lite):
			// lm too: it failed while its lite topic was unsubscribed.
			c.releaseAll(ctx, append([]*liteMsg{lm}, rest...))
		case backoff > 0:
			c.postpone(ctx, append([]*liteMsg{lm}, rest...), backoff)
		}
		cancel()
	}
}

// consume runs the handler on one message and acks it. progressed is true
// when the message is done with (acked, or sent to the DLQ and acked);
// otherwise backoff > 0 asks for its redelivery after that long.
func (c *LitePushConsumer) consume(lm *liteMsg) (progressed bool, backoff time.Duration) {
	if !time.Now().Before(lm.deadline) {
		// It may be out again already: never two deliveries at once.
		c.log.Debug("client: lite message expired before its turn", "liteTopic", lm.lite, "offset", lm.m.QueueOffset)
		return false, 0
	}
	if !c.subscribed(lm.lite) {
		ctx, cancel := context.WithTimeout(c.consumeCtx, c.cfg.RequestTimeout)
		c.releaseAll(ctx, []*liteMsg{lm})
		cancel()
		return false, 0
	}
	res := c.callHandler(lm)
	if res == ConsumeSuccess {
		if !time.Now().Before(lm.visibleAt) {
			// Too late: the message may be out again. Acking is still
			// right (a stale ack changes nothing), but the lite topic
			// does not go on here.
			c.log.Warn("client: lite handler returned after the message became visible again", "liteTopic", lm.lite, "offset", lm.m.QueueOffset)
			c.ackOnce(lm)
			return false, 0
		}
		return c.ack(lm), 0
	}
	if !time.Now().Before(lm.visibleAt) {
		return false, 0 // visible again already: nothing to postpone
	}
	if int(lm.m.ReconsumeTimes) >= c.cfg.MaxReconsumeTimes && c.toDLQ(lm) {
		return true, 0
	}
	return false, c.cfg.RetryBackoff(int(lm.m.ReconsumeTimes))
}

// callHandler runs the handler until the message's deadline, turning a
// panic into ConsumeRetryLater.
func (c *LitePushConsumer) callHandler(lm *liteMsg) (res ConsumeResult) {
	ctx, cancel := context.WithDeadline(c.consumeCtx, lm.deadline)
	defer cancel()
	lm.m.SetProperty(message.PropertyConsumeStartTimestamp, strconv.FormatInt(time.Now().UnixMilli(), 10))
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("client: lite handler panicked", "liteTopic", lm.lite, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			res = ConsumeRetryLater
		}
	}()
	if res = c.cfg.Handler(ctx, lm.m); res != ConsumeSuccess {
		res = ConsumeRetryLater
	}
	return res
}

// handleExt is the ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME header of a
// lite message (the ack carries liteTopic, docs/lite-topics.md §6.7).
func (c *LitePushConsumer) handleExt(lm *liteMsg) map[string]string {
	return map[string]string{
		"consumerGroup": c.cfg.Group,
		"topic":         c.cfg.BindTopic,
		"queueId":       "0",
		"offset":        strconv.FormatInt(lm.m.QueueOffset, 10),
		"extraInfo":     ReceiptHandle(lm.m),
		"liteTopic":     lm.lite,
		"bname":         lm.broker,
	}
}

// ack acks lm, retrying a little; false when it could not.
func (c *LitePushConsumer) ack(lm *liteMsg) bool {
	for i := range liteAckAttempts {
		if i > 0 && !sleepCtx(c.consumeCtx, liteAckPause) {
			return false
		}
		if c.ackOnce(lm) {
			return true
		}
		if !time.Now().Before(lm.visibleAt) {
			return false
		}
	}
	return false
}

func (c *LitePushConsumer) ackOnce(lm *liteMsg) bool {
	_, err := c.core.invokeJSON(c.consumeCtx, lm.addr, code.AckMessage, c.handleExt(lm), nil)
	if err != nil {
		c.log.Warn("client: lite ack failed", "liteTopic", lm.lite, "offset", lm.m.QueueOffset, "broker", lm.addr, "err", err)
		return false
	}
	return true
}

// postpone makes msgs visible again after d (CHANGE_MESSAGE_INVISIBLETIME
// with liteTopic); the broker keeps their lite topic blocked until then.
func (c *LitePushConsumer) postpone(ctx context.Context, msgs []*liteMsg, d time.Duration) {
	for _, lm := range msgs {
		if ctx.Err() != nil || !time.Now().Before(lm.visibleAt) {
			continue
		}
		ext := c.handleExt(lm)
		ext["invisibleTime"] = strconv.FormatInt(d.Milliseconds(), 10)
		if _, err := c.core.invokeJSON(ctx, lm.addr, code.ChangeMessageInvisible, ext, nil); err != nil {
			c.log.Debug("client: lite change invisible time failed", "liteTopic", lm.lite, "offset", lm.m.QueueOffset, "err", err)
		}
	}
}

// dropLite lets go of the pending messages of a lite topic no longer
// subscribed: their room in the cache is freed and they are made visible
// again for the group's other consumers.
func (c *LitePushConsumer) dropLite(ctx context.Context, lite string) {
	dropped := c.lanes.drop(lite)
	c.cache.release(len(dropped))
	c.releaseAll(ctx, dropped)
}

// releaseAll makes msgs visible again at once (messages this consumer
// will not handle: unsubscribed lite topics, shutdown).
func (c *LitePushConsumer) releaseAll(ctx context.Context, msgs []*liteMsg) {
	c.postpone(ctx, msgs, 0)
}

// toDLQ sends a message that failed MaxReconsumeTimes redeliveries to the
// group's DLQ (docs/lite-topics.md §6.10): CONSUMER_SEND_MSG_BACK with delay
// level -1, which makes the broker store a copy in %DLQ%<group> without
// the LMQ dispatch properties (it keeps __LITE_TOPIC); then the message is
// acked on its lite topic. false when either step failed (it is delivered
// again and tried again).
func (c *LitePushConsumer) toDLQ(lm *liteMsg) bool {
	ctx, cancel := context.WithTimeout(c.consumeCtx, 5*time.Second) // Java's send-back timeout
	defer cancel()
	ext := map[string]string{
		"offset":            strconv.FormatInt(lm.m.CommitLogOffset, 10),
		"group":             c.cfg.Group,
		"delayLevel":        "-1",
		"originMsgId":       lm.m.ClientMsgID(),
		"originTopic":       c.cfg.BindTopic,
		"unitMode":          "false",
		"maxReconsumeTimes": strconv.Itoa(c.cfg.MaxReconsumeTimes),
		"bname":             lm.broker,
	}
	if _, err := c.core.invokeOK(ctx, lm.addr, code.ConsumerSendMsgBack, ext, nil); err != nil {
		c.log.Warn("client: sending a lite message to the DLQ failed; it is delivered again", "liteTopic", lm.lite, "msgId", lm.m.ClientMsgID(), "err", err)
		return false
	}
	c.log.Info("client: lite message sent to the DLQ", "liteTopic", lm.lite, "msgId", lm.m.ClientMsgID(), "reconsumeTimes", lm.m.ReconsumeTimes)
	return c.ack(lm)
}
