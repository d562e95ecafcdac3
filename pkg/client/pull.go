package client

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/pkg/statictopic"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// PullRequest says what to pull.
type PullRequest struct {
	Queue  protocol.MessageQueue
	Offset int64 // queue offset to start at
	// MaxNums caps the messages returned; default 32 (brokers cap it too).
	MaxNums int
	// Expression filters messages: tags "a || b" for TAG (default "*",
	// everything), or an SQL92 expression.
	Expression     string
	ExpressionType string // ExpressionTypeTag (default) or ExpressionTypeSQL92
	// LongPoll lets the broker hold the request up to LongPollingSuspend
	// when there is nothing to return yet.
	LongPoll bool
	// CommitOffset > 0 also stores this offset for the group (only when the
	// pull goes to the master).
	CommitOffset int64
	// MaxBytes, when > 0, caps the body size (5.x brokers).
	MaxBytes int
}

// Pull sends one PULL_MESSAGE to the queue's broker (master, else a replica)
// and decodes the answer. Codes other than found / not found / no match /
// offset moved are returned as *ResponseError.
func (c *PullConsumer) Pull(ctx context.Context, req PullRequest) (*PullResult, error) {
	if err := c.life.begin(); err != nil {
		return nil, err
	}
	defer c.life.end()
	// A long poll must end when the consumer shuts down, not 20 s later.
	ctx, release := boundTo(ctx, c.core.ctx)
	defer release()
	return c.pull(ctx, req)
}

func (c *PullConsumer) pull(ctx context.Context, req PullRequest) (*PullResult, error) {
	if req.MaxNums <= 0 {
		req.MaxNums = DefaultPullBatchSize
	}
	addr, err := c.core.brokerAddrFor(ctx, req.Queue, true, routeFetch{ifMissing: true})
	if err != nil {
		return nil, err
	}
	if req.CommitOffset > 0 && addr != c.core.brokerAddr(c.core.leaderName(req.Queue), false) {
		req.CommitOffset = 0 // offsets live on the master; Java clears the flag for slaves too
	}
	var suspendMS int64
	timeout := c.cfg.RequestTimeout
	if req.LongPoll {
		suspendMS = c.cfg.LongPollingSuspend.Milliseconds()
		timeout = c.cfg.LongPollingSuspend + defaultPullTimeoutHeadroom
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sent := time.Now()
	resp, err := c.core.rc.Invoke(ctx, addr, c.core.newRequest(code.PullMessage, pullHeader(c.cfg.Group, req, suspendMS), nil))
	if err != nil {
		return nil, fmt.Errorf("client: pull %s at %d from %s: %w", req.Queue, req.Offset, addr, err)
	}
	if resp.Code == code.NotLeaderForQueue {
		c.core.notLeader(ctx, req.Queue.Topic, sent) // the next pull goes to the new leader
	}
	return c.pullResult(resp, req, addr)
}

// pullStatus maps the accepted pull codes (docs/protocol.md §2).
func pullStatus(c int32) (PullStatus, bool) {
	s, ok := pullStatusOfCode[c]
	return s, ok
}

// pullStatusOfCode maps the response codes of a pull to their status.
var pullStatusOfCode = map[int32]PullStatus{code.Success: PullFound, code.PullNotFound: PullNoNewMsg, code.PullRetryImmediately: PullNoMatchedMsg, code.PullOffsetMoved: PullOffsetIllegal}

// pullResult reads a pull response and post-processes its messages like
// Java's PullAPIWrapper.processPullResult.
func (c *PullConsumer) pullResult(resp *remoting.Command, req PullRequest, addr string) (*PullResult, error) {
	status, ok := pullStatus(resp.Code)
	if !ok {
		return nil, &ResponseError{Code: resp.Code, Remark: resp.Remark, Addr: addr, Request: code.PullMessage}
	}
	f := protocol.FieldsOf(resp.ExtFields)
	res := &PullResult{
		Status:               status,
		NextBeginOffset:      f.Int64("nextBeginOffset"),
		MinOffset:            f.OptInt64("minOffset", 0),
		MaxOffset:            f.OptInt64("maxOffset", 0),
		SuggestWhichBrokerID: f.OptInt64("suggestWhichBrokerId", 0),
	}
	// A logic queue's messages carry physical offsets; the broker says how
	// far its segment is shifted (docs/static-topics.md §6.5).
	offsetDelta := f.OptInt64("offsetDelta", 0)
	logic := statictopic.IsMockBroker(req.Queue.BrokerName)
	if err := f.Err(); err != nil {
		return nil, fmt.Errorf("client: pull response from %s: %w", addr, err)
	}
	if status != PullFound {
		return res, nil
	}
	// Bodies may alias the response buffer: it is this response's own.
	msgs, err := message.DecodeAll(resp.Body, message.DecodeOptions{AliasBody: true})
	if err != nil {
		if len(msgs) == 0 {
			return nil, fmt.Errorf("client: pull %s from %s: %w", req.Queue, addr, err)
		}
		// Java keeps the records before a bad one; so do we.
		c.cfg.Logger.Warn("client: pull body partly undecodable", "queue", req.Queue.String(), "broker", addr, "err", err)
	}
	minS, maxS := strconv.FormatInt(res.MinOffset, 10), strconv.FormatInt(res.MaxOffset, 10)
	for _, m := range msgs {
		if m.SysFlag&message.FlagCompressed != 0 {
			body, err := message.Decompress(m.Body, m.SysFlag, c.cfg.MaxBodySize)
			if err != nil {
				// Keep the stored body rather than losing the message; its
				// SysFlag still says compressed.
				c.cfg.Logger.Warn("client: cannot decompress body", "queue", req.Queue.String(), "offset", m.QueueOffset, "err", err)
			} else {
				// Java's decoder clears the bit too: the body is plain now.
				m.Body = body
				m.SysFlag &^= message.FlagCompressed
			}
		}
		if logic {
			m.QueueID = int32(req.Queue.QueueID)
			m.QueueOffset += offsetDelta
		}
		m.SetProperty(message.PropertyMinOffset, minS)
		m.SetProperty(message.PropertyMaxOffset, maxS)
	}
	if req.ExpressionType == "" || req.ExpressionType == ExpressionTypeTag {
		msgs = filterByTags(msgs, parseTags(req.Expression))
	}
	res.Messages = msgs
	return res, nil
}
