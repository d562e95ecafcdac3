package pop

import (
	"context"
	"errors"
	"github.com/rmqgo/rmq/broker/pop/popcodec"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// timeoutSlack is Java's isTimeoutTooMuch margin: a pop that arrives more
// than this past bornTime+pollTime is answered POLLING_TIMEOUT unread.
const timeoutSlack = 500

// popRun is the state of one POP_MESSAGE while it visits queues.
type popRun struct {
	h       popHeader
	filter  store.MessageFilter
	popTime int64
	now     int64
	rq      int32
	body    []byte
	count   int
	// retryCount and retryBytes are the part of count and body read from
	// the group's retry topic (rocketmq_messages_out_total is_retry).
	retryCount int
	retryBytes int64
	rest       int64
	info       offsetInfo
	reads      []readMark
	maxBytes   int
	// contended: a queue was skipped because another pop held it; a
	// suspended pop looks again at once instead of waiting for an arrival.
	contended bool
}

// readMark remembers where a queue was read up to, to catch messages that
// arrive between the read and the suspension.
type readMark struct {
	topic string
	qid   int32
	next  int64
}

func (p *Processor) handlePop(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	return p.processPop(ctx, ch, req)
}

// resumePop re-runs a suspended pop; it may suspend it again until its
// deadline (Java re-executes woken pops the same way).
func (p *Processor) resumePop(ctx context.Context, ch *remoting.Channel, req *remoting.Command) {
	resp, err := p.replicated(ctx, func(ctx context.Context) (*remoting.Command, error) { return p.processPop(ctx, ch, req) })
	if resp == nil && err == nil {
		return
	}
	p.writeResponse(ch, req, resp, err)
}

func (p *Processor) processPop(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	nowT := p.d.Now()
	now := nowT.UnixMilli()
	h, err := parsePopHeader(req.ExtFields)
	if err != nil {
		return nil, err
	}
	if h.bornTimeAbsent {
		// Java fills bornTime in on the request, so a re-run keeps it.
		h.bornTime = now
		req.SetExt("bornTime", strconv.FormatInt(now, 10))
	}
	cfg := p.d.Config()
	if now-h.bornTime-h.pollTime > timeoutSlack {
		return p.popResponse(req, code.PollingTimeout, "the broker["+cfg.BrokerIP1+"] pop message is timeout too much", &popRun{h: h}), nil
	}
	if cfg.BrokerPermission&protocol.PermRead == 0 {
		return nil, errorf(code.NoPermission, "the broker[%s] pop message is forbidden", cfg.BrokerIP1)
	}
	if err := NotMaster(cfg); err != nil {
		return nil, err
	}
	if _, err := p.checkTopicAndGroup(h.topic, h.group, h.queueID, ch); err != nil {
		return nil, err
	}
	filter, err := p.popFilter(h, cfg.EnableRetryTopicV2)
	if err != nil {
		return nil, err
	}

	r := &popRun{h: h, filter: filter, popTime: now, now: now, maxBytes: cfg.MaxTransferBytesOnMessageInMemory}
	if r.maxBytes <= 0 {
		r.maxBytes = 256 << 10
	}
	randomQ := rand.IntN(100)
	if h.order {
		r.rq = popcodec.OrderReviveQueue
	} else {
		r.rq = int32(p.rqNext.Add(1) % uint32(p.reviveQueues()))
	}
	needRetry := randomQ < cfg.PopFromRetryProbability
	retryTopic := popcodec.RetryTopic(h.topic, h.group, cfg.EnableRetryTopicV2)
	if cfg.EnableRetryTopicV2 && cfg.RetrieveMessageFromPopRetryTopicV1 && randomQ%2 == 0 {
		retryTopic = popcodec.RetryTopicV1(h.topic, h.group)
	}
	if needRetry && !h.order {
		p.popTopic(ctx, r, retryTopic, randomQ)
	}
	if h.queueID < 0 {
		p.popTopic(ctx, r, h.topic, randomQ)
	} else {
		p.popQueue(ctx, r, h.topic, h.queueID)
	}
	if !needRetry && r.count < int(h.maxMsgNums) && !h.order {
		p.popTopic(ctx, r, retryTopic, randomQ)
	}

	if r.count > 0 {
		if r.rest > 0 {
			p.pops.wakeQueue(h.topic, h.group, h.queueID)
		}
		resp := p.popResponse(req, code.Success, store.Found.String(), r)
		resp.Body = r.body
		if f := p.d.MessagesOut; f != nil {
			// Java counts the messages of the retry topic under the
			// consumed topic with is_retry=true.
			if n := r.count - r.retryCount; n > 0 {
				f(h.topic, h.group, false, n, int64(len(r.body))-r.retryBytes)
			}
			if r.retryCount > 0 {
				f(h.topic, h.group, true, r.retryCount, r.retryBytes)
			}
		}
		return resp, nil
	}
	deadline := PollDeadline(nowT, h.bornTime, h.pollTime)
	if h.pollTime > 0 && nowT.Before(deadline) && ch != nil {
		err := p.pops.park(ch, req, pollKey{h.topic, h.group, h.queueID}, deadline)
		if err == nil {
			if r.rest > 0 || r.contended || p.grewSince(r.reads) {
				p.pops.wakeQueue(h.topic, h.group, h.queueID)
			}
			return nil, nil
		}
		return p.popResponse(req, code.PollingFull, store.NoMessageInQueue.String(), r), nil
	}
	return p.popResponse(req, code.PollingTimeout, store.NoMessageInQueue.String(), r), nil
}

// grewSince reports a queue that received messages after it was read.
func (p *Processor) grewSince(reads []readMark) bool {
	for _, m := range reads {
		if p.st.MaxOffset(m.topic, m.qid) > m.next {
			return true
		}
	}
	return false
}

// popResponse builds PopMessageResponseHeader.
func (p *Processor) popResponse(req *remoting.Command, c int32, remark string, r *popRun) *remoting.Command {
	resp := remoting.NewResponse(req, c, remark)
	resp.SetExt("popTime", strconv.FormatInt(r.popTime, 10))
	resp.SetExt("invisibleTime", strconv.FormatInt(r.h.invisibleTime, 10))
	resp.SetExt("reviveQid", strconv.Itoa(int(r.rq)))
	resp.SetExt("restNum", strconv.FormatInt(max(r.rest, 0), 10))
	resp.SetExt("startOffsetInfo", r.info.start.String())
	resp.SetExt("msgOffsetInfo", r.info.msg.String())
	if r.h.order {
		resp.SetExt("orderCountInfo", r.info.count.String())
	}
	return resp
}

// popFilter builds the message filter of the pop's expression and records
// the subscriptions of the topic and its retry topic for the group (Java's
// compensateSubscribeData).
func (p *Processor) popFilter(h popHeader, retryV2 bool) (store.MessageFilter, error) {
	retry, _ := client.BuildSubscription(popcodec.RetryTopic(h.topic, h.group, retryV2), client.SubAll, client.ExpressionTag)
	p.d.Consumers.CompensateSubscription(h.group, retry)
	sub, err := client.BuildSubscription(h.topic, h.exp, h.expType)
	if err != nil {
		return nil, errorf(code.SubscriptionParseFailed, "parse the consumer's subscription failed: %v", err)
	}
	sub.SubVersion = p.d.Now().UnixMilli()
	p.d.Consumers.CompensateSubscription(h.group, sub)
	if sub.IsTagType() {
		if sub.SubString == client.SubAll {
			return nil, nil
		}
		return tagFilter(sub.CodeSet), nil
	}
	if p.d.Filters == nil {
		return nil, errorf(code.SubscriptionParseFailed, "the broker does not support consumer to filter message by %s", sub.ExpressionType)
	}
	f, err := p.d.Filters.NewFilter(h.group, sub)
	if err != nil {
		return nil, processor.KeepCode(err, code.SubscriptionParseFailed, "parse the consumer's subscription failed: %v", err)
	}
	return f, nil
}

// tagFilter matches consume-queue tag codes (Java compares intValue()).
type tagFilter []int32

func (f tagFilter) MatchTagsCode(tagsCode int64) bool {
	c := int32(tagsCode)
	for _, x := range f {
		if x == c {
			return true
		}
	}
	return false
}

func (tagFilter) MatchProperties([]byte) bool { return true }

// TagsOnly marks the filter store.TagsOnlyFilter.
func (tagFilter) TagsOnly() {}

// popTopic pops every readable queue of a topic, starting at a random one.
func (p *Processor) popTopic(ctx context.Context, r *popRun, topic string, randomQ int) {
	tc, ok := p.d.Topics.Get(topic)
	if !ok || tc.ReadQueueNums <= 0 {
		return
	}
	for i := 0; i < tc.ReadQueueNums; i++ {
		p.popQueue(ctx, r, topic, int32((randomQ+i)%tc.ReadQueueNums))
	}
}

// popOffset is where the group pops a queue next: a pending reset, else its
// committed offset, else the init offset (committed at once, as Java does).
func (p *Processor) popOffset(topic, group string, qid int32, initMode int32) int64 {
	// A server-side reset (useServerSideResetOffset) moves the group here
	// on its next pop, as Java's resetPopOffset: committed again, since
	// the group's own commits may have moved it since.
	if p.d.Resets != nil {
		if off, ok := p.d.Resets.Take(group, topic, qid); ok {
			p.st.CommitOffset(group, topic, qid, off)
			return off
		}
	}
	if off, ok := p.st.QueryOffset(group, topic, qid); ok && off >= 0 {
		return off
	}
	off := InitOffset(p.st, topic, qid, initMode, p.d.Config().InitPopOffsetByCheckMsgInMem, p.hotBytes)
	p.st.CommitOffset(group, topic, qid, off)
	return off
}

// popQueue pops up to the remaining count from one queue (Java's
// popMsgFromQueue).
func (p *Processor) popQueue(ctx context.Context, r *popRun, topic string, qid int32) {
	h := r.h
	mu := p.queueLock(topic, h.group, qid)
	if !mu.TryLock() {
		// Another pop of the group reads this queue now (or an ack of it
		// is being recorded).
		r.contended = true
		if !h.order {
			if off, ok := p.st.QueryOffset(h.group, topic, qid); ok {
				r.rest += max(p.st.MaxOffset(topic, qid)-off, 0)
			}
		}
		return
	}
	defer mu.Unlock()
	offset := p.popOffset(topic, h.group, qid, h.initMode)
	if h.order {
		info, err := loadOrder(p.st.DB(), h.group, topic, qid)
		if err != nil {
			p.log.Warn("read pop order info", "topic", topic, "group", h.group, "queue", qid, "err", err)
			return
		}
		if info.blocks(h.attemptID, h.invisibleTime, r.now) {
			return // its backlog is not counted: it would only wake pollers in vain
		}
	}
	want := int(h.maxMsgNums) - r.count
	if want <= 0 {
		r.rest += max(p.st.MaxOffset(topic, qid)-offset, 0)
		return
	}
	res, err := p.st.GetMessage(ctx, topic, qid, offset, want, r.maxBytes, r.filter)
	if err != nil {
		p.log.Warn("pop read failed", "topic", topic, "queue", qid, "offset", offset, "err", err)
		return
	}
	switch res.Status {
	case store.OffsetTooSmall, store.OffsetOverflowBadly, store.OffsetFoundNull:
		// The committed offset is outside the queue: move it and read again.
		res.Release()
		p.st.CommitOffset(h.group, topic, qid, res.NextBeginOffset)
		offset = res.NextBeginOffset
		if res, err = p.st.GetMessage(ctx, topic, qid, offset, want, r.maxBytes, r.filter); err != nil {
			p.log.Warn("pop read failed", "topic", topic, "queue", qid, "offset", offset, "err", err)
			return
		}
	}
	defer res.Release()
	r.reads = append(r.reads, readMark{topic, qid, res.NextBeginOffset})
	switch {
	case len(res.Records) > 0:
		if !p.takeMessages(ctx, r, topic, qid, offset, res) {
			r.rest += int64(len(res.Records))
		}
	case res.Status == store.NoMatchedMessage || res.Status == store.OffsetFoundNull ||
		res.Status == store.MessageWasRemoving || res.Status == store.NoMatchedLogicQueue:
		if res.NextBeginOffset > offset {
			p.st.CommitOffset(h.group, topic, qid, res.NextBeginOffset)
		}
	}
	r.rest += max(res.MaxOffset-res.NextBeginOffset, 0)
}

// takeMessages records the pop (a checkpoint, or the order info) and adds
// the messages to the response. It returns false when the pop could not
// be recorded: the messages are then not handed out.
func (p *Processor) takeMessages(ctx context.Context, r *popRun, topic string, qid int32, start int64, res *store.GetResult) bool {
	h := r.h
	offsets := res.QueueOffsets
	if h.order {
		jq := p.orderJournalQueue(topic, h.group, qid)
		unlock := p.j.lock(jq)
		prev, err := loadOrder(p.st.DB(), h.group, topic, qid)
		if err == nil {
			err = p.j.append(ctx, jq, &op{Kind: opOrderPop, Seq: p.j.nextSeq(), Order: &orderOp{
				Group: h.group, Topic: topic, QueueID: qid, AttemptID: h.attemptID, PopTime: r.popTime,
				Invisible: h.invisibleTime, Offsets: offsets, Start: start, At: r.now,
			}})
		}
		unlock()
		if err != nil {
			p.log.Warn("record orderly pop", "topic", topic, "group", h.group, "queue", qid, "err", err)
			return false
		}
		p.st.CommitOffset(h.group, topic, qid, start)
		newOrderInfo(prev, h.attemptID, r.popTime, h.invisibleTime, offsets, r.now).countInfo(&r.info, topic, qid)
		p.wakeWhenFree(topic, h.group, qid, r.popTime+h.invisibleTime)
	} else {
		ck := &checkpoint{
			ckID:      ckID{Group: h.group, Topic: topic, QueueID: qid, Start: start, PopTime: r.popTime},
			ReviveQid: r.rq, InvisibleTime: h.invisibleTime, Due: r.popTime + h.invisibleTime,
			Offsets: append([]int64(nil), offsets...),
		}
		if err := ck.validate(); err != nil {
			p.log.Warn("pop read returned bad offsets", "topic", topic, "queue", qid, "err", err)
			return false
		}
		unlock := p.j.lock(r.rq)
		old, err := p.j.view(r.rq).load(ck.ckID)
		if err == nil && old != nil {
			err = errors.New("a checkpoint of the same queue, start offset and pop time exists")
		}
		if err == nil {
			err = p.j.append(ctx, r.rq, &op{Kind: opCheckpoint, Seq: p.j.nextSeq(), CK: ck, Next: res.NextBeginOffset})
		}
		unlock()
		if err != nil {
			p.log.Warn("record pop checkpoint", "topic", topic, "group", h.group, "queue", qid, "err", err)
			return false
		}
		p.st.CommitOffset(h.group, topic, qid, res.NextBeginOffset)
	}
	fromRetry := topic != h.topic
	retry := fromRetry && !p.d.Config().PopResponseReturnActualRetryTopic
	bodyBefore := len(r.body)
	for i, rec := range res.Records {
		if retry {
			b, err := retryRecord(rec, h.topic, popcodec.ExtraInfo{
				CkQueueOffset: start, PopTime: r.popTime, InvisibleTime: h.invisibleTime, ReviveQid: r.rq,
				Retry: popcodec.RetryFlag(topic), BrokerName: p.d.Config().BrokerName, QueueID: qid,
				QueueOffset: offsets[i], HasQueueOffset: true,
			})
			if err == nil {
				r.body = append(r.body, b...)
				continue
			}
			p.log.Warn("re-encode pop retry message", "topic", topic, "queue", qid, "offset", offsets[i], "err", err)
		}
		r.body = append(r.body, rec...)
	}
	r.count += len(res.Records)
	if fromRetry {
		r.retryCount += len(res.Records)
		r.retryBytes += int64(len(r.body) - bodyBefore)
	}
	r.info.addQueue(topic, qid, start, offsets)
	return true
}

// retryRecord re-encodes a message popped from a retry topic as Java does:
// the consumer's topic instead of the retry topic, and its receipt handle
// in POP_CK (the client could not derive it from the offset infos, which
// name the retry topic's queue).
func retryRecord(rec []byte, topic string, ei popcodec.ExtraInfo) ([]byte, error) {
	m, _, err := message.DecodeStored(rec, message.DecodeOptions{AliasBody: true})
	if err != nil {
		return nil, err
	}
	if m.Properties == nil {
		m.Properties = map[string]string{}
	}
	if _, ok := m.Properties[message.PropertyPopCK]; !ok {
		m.Properties[message.PropertyPopCK] = ei.String()
	}
	m.Topic = topic
	return message.EncodeStored(m)
}

// PollDeadline is when a long-polling pop or notification born at
// bornTime (the client's clock, ms) asking to wait pollTime ms is answered
// at the latest: pollTime after its birth, or after now if sooner, so that
// a client clock ahead of ours does not stretch the poll.
func PollDeadline(now time.Time, bornTime, pollTime int64) time.Time {
	deadline := time.UnixMilli(bornTime + pollTime)
	if d := now.Add(time.Duration(pollTime) * time.Millisecond); deadline.After(d) {
		deadline = d
	}
	return deadline
}
