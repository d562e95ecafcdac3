package pop

import (
	"context"
	"github.com/rmqgo/rmq/broker/pop/popcodec"
	"math/rand/v2"
	"strconv"

	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// checkQueueRequest is the common check of PEEK_MESSAGE, NOTIFICATION and
// POLLING_INFO: readable broker and topic, queue id, group allowed to
// consume.
func (p *Processor) checkQueueRequest(h queueHeader, ch *remoting.Channel) (protocol.TopicConfig, error) {
	cfg := p.d.Config()
	if cfg.BrokerPermission&protocol.PermRead == 0 {
		return protocol.TopicConfig{}, errorf(code.NoPermission, "the broker[%s] peeking message is forbidden", cfg.BrokerIP1)
	}
	return p.checkTopicAndGroup(h.topic, h.group, h.queueID, ch)
}

// checkTopicAndGroup is what PEEK_MESSAGE, NOTIFICATION, POLLING_INFO and
// POP_MESSAGE check alike once the broker may be read: the topic exists
// and is readable, the queue id is within it, and the group may consume.
func (p *Processor) checkTopicAndGroup(topic, group string, queueID int32, ch *remoting.Channel) (protocol.TopicConfig, error) {
	tc, ok := p.d.Topics.Get(topic)
	if !ok {
		return tc, errorf(code.TopicNotExist, "topic[%s] not exist, apply first please!", topic)
	}
	if tc.Perm&protocol.PermRead == 0 {
		return tc, errorf(code.NoPermission, "the topic[%s] peeking message is forbidden", topic)
	}
	if int(queueID) >= tc.ReadQueueNums {
		return tc, processor.BadRequestf("queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			queueID, topic, tc.ReadQueueNums, processor.RemoteAddr(ch))
	}
	sg, ok := p.d.Groups.FindOrCreate(group)
	if !ok {
		return tc, errorf(code.SubscriptionGroupNotExist, "subscription group [%s] does not exist", group)
	}
	if !sg.ConsumeEnable {
		return tc, errorf(code.NoPermission, "subscription group no permission, %s", group)
	}
	return tc, nil
}

// peekOffset is where a peek of the group reads: the committed offset,
// else the queue's start (Java's PeekMessageProcessor.getPopOffset).
func (p *Processor) peekOffset(topic, group string, qid int32) int64 {
	if off, ok := p.st.QueryOffset(group, topic, qid); ok && off >= 0 {
		return off
	}
	return max(p.st.MinOffset(topic, qid), 0)
}

// handlePeek answers PEEK_MESSAGE: messages from the group's pop offsets,
// without a checkpoint (nothing becomes invisible, nothing is committed).
func (p *Processor) handlePeek(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	h, err := parseQueueHeader(req.ExtFields, code.PeekMessage)
	if err != nil {
		return nil, err
	}
	tc, err := p.checkQueueRequest(h, ch)
	if err != nil {
		return nil, err
	}
	cfg := p.d.Config()
	randomQ := rand.IntN(100)
	var body []byte
	var count int
	var rest int64
	peek := func(topic string, qid int32) {
		off := p.peekOffset(topic, h.group, qid)
		rest += max(p.st.MaxOffset(topic, qid)-off, 0)
		if count >= int(h.maxMsgNums) {
			return
		}
		res, err := p.st.GetMessage(ctx, topic, qid, off, int(h.maxMsgNums)-count, cfg.MaxTransferBytesOnMessageInMemory, nil)
		if err != nil {
			p.log.Warn("peek read failed", "topic", topic, "queue", qid, "err", err)
			return
		}
		defer res.Release()
		for _, rec := range res.Records {
			body = append(body, rec...)
		}
		count += len(res.Records)
	}
	peekTopic := func(topic string) {
		rtc, ok := p.d.Topics.Get(topic)
		if !ok {
			return
		}
		for i := 0; i < rtc.ReadQueueNums; i++ {
			peek(topic, int32((randomQ+i)%rtc.ReadQueueNums))
		}
	}
	retry := popcodec.RetryTopic(h.topic, h.group, cfg.EnableRetryTopicV2)
	needRetry := randomQ%5 == 0
	if needRetry {
		peekTopic(retry)
	}
	if h.queueID < 0 {
		for i := 0; i < tc.ReadQueueNums; i++ {
			peek(h.topic, int32((randomQ+i)%tc.ReadQueueNums))
		}
	} else {
		peek(h.topic, h.queueID)
	}
	if !needRetry && count < int(h.maxMsgNums) {
		peekTopic(retry)
	}
	c, remark := code.Success, store.Found.String()
	if count == 0 {
		c, remark = code.PullNotFound, store.NoMessageInQueue.String()
	}
	resp := remoting.NewResponse(req, c, remark)
	resp.SetExt("popTime", "0")
	resp.SetExt("invisibleTime", "0")
	resp.SetExt("reviveQid", "0")
	resp.SetExt("restNum", strconv.FormatInt(rest, 10))
	resp.Body = body
	return resp, nil
}

// handlePollingInfo answers POLLING_INFO: how many pops of the group wait
// on the queue.
func (p *Processor) handlePollingInfo(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	h, err := parseQueueHeader(req.ExtFields, code.PollingInfo)
	if err != nil {
		return nil, err
	}
	if _, err := p.checkQueueRequest(h, ch); err != nil {
		return nil, err
	}
	resp := remoting.NewResponse(req, code.Success, "")
	resp.SetExt("pollingNum", strconv.Itoa(p.pops.count(pollKey{h.topic, h.group, h.queueID})))
	return resp, nil
}

func (p *Processor) handleNotification(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	return p.processNotification(ch, req)
}

func (p *Processor) resumeNotification(_ context.Context, ch *remoting.Channel, req *remoting.Command) {
	resp, err := p.processNotification(ch, req)
	if resp == nil && err == nil {
		return
	}
	p.writeResponse(ch, req, resp, err)
}

// processNotification answers NOTIFICATION: whether the group would find
// a message to pop (hasMsg), waiting up to pollTime for one.
func (p *Processor) processNotification(ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	nowT := p.d.Now()
	now := nowT.UnixMilli()
	h, err := parseQueueHeader(req.ExtFields, code.Notification)
	if err != nil {
		return nil, err
	}
	if h.bornTime == 0 {
		h.bornTime = now
		req.SetExt("bornTime", strconv.FormatInt(now, 10))
	}
	tc, err := p.checkQueueRequest(h, ch)
	if err != nil {
		return nil, err
	}
	cfg := p.d.Config()
	randomQ := rand.IntN(100)
	has := func(topic string, qid int32) bool {
		if h.order {
			info, err := loadOrder(p.st.DB(), h.group, topic, qid)
			if err == nil && info.blocks(h.attemptID, 0, now) {
				return false
			}
		}
		return p.st.MaxOffset(topic, qid) > p.peekOffset(topic, h.group, qid)
	}
	hasTopic := func(topic string) bool {
		rtc, ok := p.d.Topics.Get(topic)
		if !ok {
			return false
		}
		for i := 0; i < rtc.ReadQueueNums; i++ {
			if has(topic, int32((randomQ+i)%rtc.ReadQueueNums)) {
				return true
			}
		}
		return false
	}
	retry := func() bool {
		if hasTopic(popcodec.RetryTopic(h.topic, h.group, cfg.EnableRetryTopicV2)) {
			return true
		}
		return cfg.EnableRetryTopicV2 && cfg.RetrieveMessageFromPopRetryTopicV1 && hasTopic(popcodec.RetryTopicV1(h.topic, h.group))
	}
	needRetry := randomQ%5 == 0
	hasMsg := needRetry && retry()
	if !hasMsg {
		if h.queueID < 0 {
			for i := 0; i < tc.ReadQueueNums && !hasMsg; i++ {
				hasMsg = has(h.topic, int32((randomQ+i)%tc.ReadQueueNums))
			}
		} else {
			hasMsg = has(h.topic, h.queueID)
		}
		if !needRetry && !hasMsg {
			hasMsg = retry()
		}
	}
	full := false
	if !hasMsg {
		deadline := PollDeadline(nowT, h.bornTime, h.pollTime)
		if h.pollTime > 0 && nowT.Before(deadline) && ch != nil {
			if err := p.notices.park(ch, req, pollKey{h.topic, h.group, h.queueID}, deadline); err == nil {
				return nil, nil
			}
			full = true
		}
	}
	resp := remoting.NewResponse(req, code.Success, "")
	resp.SetExt("hasMsg", strconv.FormatBool(hasMsg))
	resp.SetExt("pollingFull", strconv.FormatBool(full))
	return resp, nil
}
