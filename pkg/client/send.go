package client

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// SendCallback receives the outcome of an async send, exactly once.
type SendCallback func(*SendResult, error)

// SendSync sends msg and waits for the broker's answer. Without options it
// picks queues round-robin and retries failed attempts
// (RetryTimesWhenSendFailed) on another broker within SendTimeout. msg gets a
// UNIQ_KEY if it has none; do not modify msg while it is being sent.
func (p *Producer) SendSync(ctx context.Context, msg *message.Message, opts ...SendOption) (*SendResult, error) {
	return p.startSync(ctx, func() (*outgoing, error) { return p.prepare(msg) }, opts)
}

// SendBatch sends msgs, all of one topic, in one SEND_BATCH_MESSAGE request;
// the broker stores them as separate messages. Every message gets its own
// UNIQ_KEY.
func (p *Producer) SendBatch(ctx context.Context, msgs []*message.Message, opts ...SendOption) (*SendResult, error) {
	return p.startSync(ctx, func() (*outgoing, error) { return p.prepareBatch(msgs) }, opts)
}

// startSync prepares a send and waits for its result; the producer stays
// busy (Shutdown waits) until then.
func (p *Producer) startSync(ctx context.Context, prepare func() (*outgoing, error), opts []SendOption) (*SendResult, error) {
	if err := p.life.begin(); err != nil {
		return nil, err
	}
	defer p.life.end()
	out, err := prepare()
	if err != nil {
		return nil, err
	}
	return p.sendSync(ctx, out, buildSendOptions(opts))
}

// SendAsync sends msg and returns once the request is on its way; cb gets
// the result on another goroutine. Retries are as in SendSync. If SendAsync
// returns an error, cb is never called.
func (p *Producer) SendAsync(ctx context.Context, msg *message.Message, cb SendCallback, opts ...SendOption) error {
	if cb == nil {
		return errors.New("client: SendAsync needs a callback")
	}
	return p.startAsync(ctx, func() (*outgoing, error) { return p.prepare(msg) }, cb, opts)
}

// SendBatchAsync is SendBatch with a callback, as SendAsync.
func (p *Producer) SendBatchAsync(ctx context.Context, msgs []*message.Message, cb SendCallback, opts ...SendOption) error {
	if cb == nil {
		return errors.New("client: SendBatchAsync needs a callback")
	}
	return p.startAsync(ctx, func() (*outgoing, error) { return p.prepareBatch(msgs) }, cb, opts)
}

// startAsync prepares a send and puts it on its way; the producer stays
// busy (Shutdown waits) until sendAsync has called cb.
func (p *Producer) startAsync(ctx context.Context, prepare func() (*outgoing, error), cb SendCallback, opts []SendOption) error {
	if err := p.life.begin(); err != nil {
		return err
	}
	out, err := prepare()
	if err != nil {
		p.life.end()
		return err
	}
	p.sendAsync(ctx, out, buildSendOptions(opts), cb)
	return nil
}

// SendOneway writes msg with the one-way flag and does not wait for (or
// get) an answer: no retries, and a broker-side failure goes unnoticed.
func (p *Producer) SendOneway(ctx context.Context, msg *message.Message, opts ...SendOption) error {
	if err := p.life.begin(); err != nil {
		return err
	}
	defer p.life.end()
	out, err := p.prepare(msg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.SendTimeout)
	defer cancel()
	s := p.newCall(ctx, out, buildSendOptions(opts), 1)
	mq, addr, err := s.target()
	if err != nil {
		return err
	}
	if err := p.core.rc.InvokeOneway(ctx, addr, s.request(mq)); err != nil {
		return fmt.Errorf("client: send oneway to %s (%s): %w", addr, mq, err)
	}
	return nil
}

// sendCall is one send: its attempts share the deadline and remember the
// broker that failed last so the next attempt goes elsewhere.
type sendCall struct {
	p          *Producer
	ctx        context.Context
	out        *outgoing
	opts       sendOptions
	attempts   int  // allowed
	attempt    int  // started so far
	fatal      bool // no attempt can succeed (no route for the topic)
	lastBroker string
	notLeader  bool      // a broker answered NOT_LEADER_FOR_QUEUE (static topic remapped)
	started    time.Time // of the current attempt, for fault avoidance
}

func (p *Producer) newCall(ctx context.Context, out *outgoing, opts sendOptions, attempts int) *sendCall {
	return &sendCall{p: p, ctx: ctx, out: out, opts: opts, attempts: attempts}
}

// attemptsFor: explicit queues are never retried (Java's send to a queue or
// through a selector), other sends get RetryTimesWhenSendFailed more.
func (p *Producer) attemptsFor(opts sendOptions) int {
	if opts.explicit() {
		return 1
	}
	return 1 + p.cfg.RetryTimesWhenSendFailed
}

func (p *Producer) sendSync(ctx context.Context, out *outgoing, opts sendOptions) (*SendResult, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.SendTimeout)
	defer cancel()
	s := p.newCall(ctx, out, opts, p.attemptsFor(opts))
	for {
		mq, addr, err := s.target()
		if err == nil {
			var resp *remoting.Command
			resp, err = p.core.rc.Invoke(ctx, addr, s.request(mq))
			var res *SendResult
			res, err = s.outcome(mq, addr, resp, err)
			if err == nil {
				return res, nil
			}
		}
		if !s.retry(mq, err) {
			return nil, s.finalErr(err)
		}
	}
}

func (p *Producer) sendAsync(ctx context.Context, out *outgoing, opts sendOptions, cb SendCallback) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.SendTimeout)
	s := p.newCall(ctx, out, opts, p.attemptsFor(opts))
	var returned atomic.Bool
	finish := func(res *SendResult, err error) {
		cancel()
		if !returned.Load() {
			// Failed before SendAsync returned: the caller may hold locks
			// its callback needs, so never call it on the caller's stack.
			go func() {
				defer p.life.end()
				cb(res, err)
			}()
			return
		}
		defer p.life.end()
		cb(res, err)
	}
	if tr := p.core.route(out.topic); (tr != nil && tr.publish.ok()) || opts.queue != nil {
		s.async(finish)
		returned.Store(true)
		return
	}
	returned.Store(true)
	// The route lookup may take a round trip: keep it off the caller.
	go s.async(finish)
}

// async runs attempts until one succeeds or none is left; each response
// arrives on a remoting goroutine, which continues with the next attempt.
func (s *sendCall) async(finish SendCallback) {
	for {
		mq, addr, err := s.target()
		if err == nil {
			err = s.p.core.rc.InvokeAsync(s.ctx, addr, s.request(mq), func(resp *remoting.Command, err error) {
				res, err := s.outcome(mq, addr, resp, err)
				switch {
				case err == nil:
					finish(res, nil)
				case s.retry(mq, err):
					s.async(finish)
				default:
					finish(nil, s.finalErr(err))
				}
			})
			if err == nil {
				return
			}
			s.p.noteLatency(mq.BrokerName, time.Since(s.started), err)
			err = fmt.Errorf("client: send to %s (%s): %w", addr, mq, err)
		}
		if !s.retry(mq, err) {
			finish(nil, s.finalErr(err))
			return
		}
	}
}

// target starts an attempt: it picks the queue and its broker's master.
func (s *sendCall) target() (protocol.MessageQueue, string, error) {
	s.attempt++
	s.started = time.Now()
	how := routeFetch{defaultTopic: s.p.cfg.CreateTopicKey, defaultQueues: s.p.cfg.DefaultTopicQueueNums, ifMissing: true}
	var mq protocol.MessageQueue
	if s.opts.queue != nil {
		mq = *s.opts.queue
		if mq.Topic != s.out.topic {
			return mq, "", fmt.Errorf("%w: queue %s is not of topic %s", ErrInvalidMessage, mq, s.out.topic)
		}
	} else {
		pub, err := s.p.publishInfo(s.ctx, s.out.topic, how)
		if err != nil {
			s.fatal = true // Java gives up at once when the topic has no route
			return mq, "", err
		}
		if s.opts.selector != nil {
			mq = s.opts.selector(pub.queues, s.out.first)
			if mq.Topic != s.out.topic {
				return mq, "", fmt.Errorf("%w: selector chose %s, not a queue of topic %s", ErrInvalidMessage, mq, s.out.topic)
			}
		} else if len(s.out.liteBatch) > 1 {
			if mq, err = liteBatchQueue(pub.queues, s.out.liteBatch); err != nil {
				return mq, "", err
			}
		} else if s.out.lite != "" {
			mq = liteHomeQueue(pub.queues, s.out.lite)
		} else {
			mq = s.p.pickQueue(pub, s.lastBroker)
		}
	}
	addr, err := s.p.core.brokerAddrFor(s.ctx, mq, false, how)
	return mq, addr, err
}

// request builds one attempt's request; born time is per attempt, as Java.
func (s *sendCall) request(mq protocol.MessageQueue) *remoting.Command {
	reqCode := code.SendMessageV2
	if s.out.batch {
		reqCode = code.SendBatchMessage
	}
	// A logic queue's header names its leader broker (Java does the same).
	h := sendHeaderV2(s.p.cfg.Group, s.out, s.p.core.physicalQueue(mq), s.p.cfg.CreateTopicKey, s.p.cfg.DefaultTopicQueueNums, time.Now().UnixMilli(), s.p.core.signRoom())
	return s.p.core.newRequest(reqCode, h, s.out.body)
}

// outcome turns one attempt's response (or transport error) into a result.
func (s *sendCall) outcome(mq protocol.MessageQueue, addr string, resp *remoting.Command, err error) (*SendResult, error) {
	s.p.noteLatency(mq.BrokerName, time.Since(s.started), err)
	if err != nil {
		return nil, fmt.Errorf("client: send to %s (%s): %w", addr, mq, err)
	}
	// For a logic queue Java reports (leader broker, logic queue id).
	res, err := s.p.sendResult(resp, s.p.core.physicalQueue(mq), addr, s.out)
	if res != nil {
		res.Attempts = s.attempt
	}
	return res, err
}

// retry records a failed attempt and reports whether another is allowed:
// invalid messages and non-retriable codes end the send, as does the
// deadline; transport errors and the codes of docs/protocol.md §2 retry.
func (s *sendCall) retry(mq protocol.MessageQueue, err error) bool {
	if mq.BrokerName != "" {
		s.lastBroker = mq.BrokerName
	}
	if s.fatal || s.ctx.Err() != nil || errors.Is(err, ErrInvalidMessage) {
		return false
	}
	var re *ResponseError
	if errors.As(err, &re) && re.Code == code.NotLeaderForQueue {
		// A static topic was remapped: the message was not stored. Learn
		// the new leader now and try once more, even for an explicit queue
		// (Java gives up and waits for its 30 s route refresh).
		s.p.core.notLeader(s.ctx, mq.Topic, s.started)
		if !s.notLeader {
			s.notLeader = true
			s.attempts++
		}
		return s.attempt < s.attempts
	}
	if s.attempt >= s.attempts {
		return false
	}
	if re != nil {
		return retriableSendCode(re.Code)
	}
	return true
}

func (s *sendCall) finalErr(err error) error {
	if s.attempt <= 1 {
		return err
	}
	return fmt.Errorf("client: send to topic %s failed after %d attempts: %w", s.out.topic, s.attempt, err)
}

// retriableSendCode: the codes both clients retry on another broker
// (docs/protocol.md §2; Java also retries 204, 205 and GO_AWAY).
func retriableSendCode(c int32) bool {
	switch c {
	case code.SystemError, code.SystemBusy, code.ServiceNotAvailable, code.NoPermission, code.TopicNotExist,
		code.NoBuyerID, code.NotInCurrentUnit, code.GoAway:
		return true
	}
	return false
}

// sendStatus maps the delivered codes; ok is false for the others.
func sendStatus(c int32) (SendStatus, bool) {
	s, ok := sendStatusOfCode[c]
	return s, ok
}

// sendStatusOfCode maps the response codes of a delivered message to its
// status.
var sendStatusOfCode = map[int32]SendStatus{code.Success: SendOK, code.FlushDiskTimeout: SendFlushDiskTimeout, code.FlushSlaveTimeout: SendFlushSlaveTimeout, code.SlaveNotAvailable: SendSlaveNotAvailable}

// sendResult reads a send response (Java's processSendResponse).
func (p *Producer) sendResult(resp *remoting.Command, mq protocol.MessageQueue, addr string, out *outgoing) (*SendResult, error) {
	reqCode := code.SendMessageV2
	if out.batch {
		reqCode = code.SendBatchMessage
	}
	status, ok := sendStatus(resp.Code)
	if !ok {
		return nil, &ResponseError{Code: resp.Code, Remark: resp.Remark, Addr: addr, Request: reqCode}
	}
	f := protocol.FieldsOf(resp.ExtFields)
	res := &SendResult{
		Status:        status,
		MsgID:         out.msgID,
		OffsetMsgID:   f.OptStr("msgId", ""),
		Queue:         protocol.MessageQueue{Topic: out.topic, BrokerName: mq.BrokerName, QueueID: int(f.OptInt32("queueId", int32(mq.QueueID)))},
		QueueOffset:   f.OptInt64("queueOffset", -1),
		TransactionID: f.OptStr("transactionId", ""),
		RegionID:      f.OptStr(message.PropertyMsgRegion, "DefaultRegion"),
		TraceOn:       f.OptStr(message.PropertyTraceSwitch, "") != "false",
		RecallHandle:  f.OptStr("recallHandle", ""),
	}
	if err := f.Err(); err != nil {
		return nil, fmt.Errorf("client: send response from %s: %w", addr, err)
	}
	return res, nil
}

// publishInfo returns topic's writable queues, fetching the route when it is
// not cached (or has none).
func (p *Producer) publishInfo(ctx context.Context, topic string, how routeFetch) (*publishInfo, error) {
	if tr := p.core.route(topic); tr != nil && tr.publish.ok() {
		return tr.publish, nil
	}
	tr, err := p.core.updateRoute(ctx, topic, how)
	if err != nil {
		return nil, fmt.Errorf("%w: topic %s: %w", ErrNoRoute, topic, err)
	}
	if !tr.publish.ok() {
		return nil, fmt.Errorf("%w: topic %s has no writable queue", ErrNoRoute, topic)
	}
	return tr.publish, nil
}
