package client

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// QueryOffset returns the group's committed offset of mq
// (QUERY_CONSUMER_OFFSET, on the master). ErrOffsetNotFound means the broker
// has none.
func (c *PullConsumer) QueryOffset(ctx context.Context, mq protocol.MessageQueue) (int64, error) {
	ext := queueHeader(mq)
	ext["consumerGroup"] = c.cfg.Group
	off, err := c.offsetRequest(ctx, mq, false, code.QueryConsumerOffset, ext)
	if IsCode(err, code.QueryNotFound) {
		return -1, fmt.Errorf("%w: group %s, %s", ErrOffsetNotFound, c.cfg.Group, mq)
	}
	return off, err
}

// UpdateOffset stores offset (the next one to consume) as the group's
// committed offset of mq (UPDATE_CONSUMER_OFFSET, on the master, waiting for
// the answer).
func (c *PullConsumer) UpdateOffset(ctx context.Context, mq protocol.MessageQueue, offset int64) error {
	if err := c.life.begin(); err != nil {
		return err
	}
	defer c.life.end()
	return c.updateOffset(ctx, mq, offset)
}

func (c *PullConsumer) updateOffset(ctx context.Context, mq protocol.MessageQueue, offset int64) error {
	addr, err := c.core.brokerAddrFor(ctx, mq, false, routeFetch{ifMissing: true})
	if err != nil {
		return err
	}
	ext := queueHeader(mq)
	ext["consumerGroup"] = c.cfg.Group
	ext["commitOffset"] = strconv.FormatInt(offset, 10)
	sent := time.Now()
	if _, err := c.core.invokeOK(ctx, addr, code.UpdateConsumerOffset, ext, nil); err != nil {
		if IsCode(err, code.NotLeaderForQueue) {
			c.core.notLeader(ctx, mq.Topic, sent)
		}
		return fmt.Errorf("client: update offset of %s: %w", mq, err)
	}
	return nil
}

// GetMaxOffset returns mq's max offset: the next offset to be written
// (GET_MAX_OFFSET).
func (c *PullConsumer) GetMaxOffset(ctx context.Context, mq protocol.MessageQueue) (int64, error) {
	return c.offsetRequest(ctx, mq, true, code.GetMaxOffset, queueHeader(mq))
}

// GetMinOffset returns mq's min offset, the oldest one still stored
// (GET_MIN_OFFSET).
func (c *PullConsumer) GetMinOffset(ctx context.Context, mq protocol.MessageQueue) (int64, error) {
	return c.offsetRequest(ctx, mq, true, code.GetMinOffset, queueHeader(mq))
}

// SearchOffset returns the offset of the first message of mq stored at or
// after t (SEARCH_OFFSET_BY_TIMESTAMP, lower boundary).
func (c *PullConsumer) SearchOffset(ctx context.Context, mq protocol.MessageQueue, t time.Time) (int64, error) {
	ext := queueHeader(mq)
	ext["timestamp"] = strconv.FormatInt(t.UnixMilli(), 10)
	return c.offsetRequest(ctx, mq, true, code.SearchOffsetByTimestamp, ext)
}

// offsetRequest sends a request whose answer is an "offset" ext field.
func (c *PullConsumer) offsetRequest(ctx context.Context, mq protocol.MessageQueue, anyReplica bool, reqCode int32, ext map[string]string) (int64, error) {
	if err := c.life.begin(); err != nil {
		return -1, err
	}
	defer c.life.end()
	addr, err := c.core.brokerAddrFor(ctx, mq, anyReplica, routeFetch{ifMissing: true})
	if err != nil {
		return -1, err
	}
	sent := time.Now()
	resp, err := c.core.invokeOK(ctx, addr, reqCode, ext, nil)
	if err != nil {
		if IsCode(err, code.NotLeaderForQueue) {
			c.core.notLeader(ctx, mq.Topic, sent)
		}
		return -1, fmt.Errorf("client: offset of %s: %w", mq, err)
	}
	f := protocol.FieldsOf(resp.ExtFields)
	off := f.Int64("offset")
	if err := f.Err(); err != nil {
		return -1, fmt.Errorf("client: offset of %s from %s: %w", mq, addr, err)
	}
	return off, nil
}
