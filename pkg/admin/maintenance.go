package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/rmqgo/rmq/remoting/code"
)

// CleanExpiredConsumeQueue asks a broker to destroy the consume queues
// whose messages all left with deleted CommitLog files
// (CLEAN_EXPIRED_CONSUMEQUEUE, 306).
func (c *Client) CleanExpiredConsumeQueue(ctx context.Context, brokerAddr string) error {
	_, err := c.invokeOK(ctx, brokerAddr, code.CleanExpiredConsumeQueue, nil, nil)
	return err
}

// CleanUnusedTopic asks a broker to destroy the consume queues of topics
// no longer in its topic table (CLEAN_UNUSED_TOPIC, 316).
func (c *Client) CleanUnusedTopic(ctx context.Context, brokerAddr string) error {
	_, err := c.invokeOK(ctx, brokerAddr, code.CleanUnusedTopic, nil, nil)
	return err
}

// DeleteExpiredCommitLog asks a broker to delete its expired CommitLog
// files now rather than at deleteWhen (DELETE_EXPIRED_COMMITLOG, 329).
func (c *Client) DeleteExpiredCommitLog(ctx context.Context, brokerAddr string) error {
	_, err := c.invokeOK(ctx, brokerAddr, code.DeleteExpiredCommitLog, nil, nil)
	return err
}

// ResetMasterFlushOffset sets a slave's record of its master's flushed
// offset (RESET_MASTER_FLUSH_OFFSET, 908; a master ignores it).
func (c *Client) ResetMasterFlushOffset(ctx context.Context, brokerAddr string, offset int64) error {
	_, err := c.invokeOK(ctx, brokerAddr, code.ResetMasterFlushOffset, map[string]string{"masterFlushOffset": strconv.FormatInt(offset, 10)}, nil)
	return err
}

// ExportPopRecords is POP_ROLLBACK (200056), mqadmin exportPopRecord.
func (c *Client) ExportPopRecords(ctx context.Context, brokerAddr string) error {
	_, err := c.invokeOK(ctx, brokerAddr, code.PopRollback, nil, nil)
	return err
}

// SetCommitLogReadAheadMode sets the read-ahead of a broker's CommitLog
// files ("0" normal, "1" random; SET_COMMITLOG_READ_MODE, 2004) and
// returns the broker's remark ("" when none).
func (c *Client) SetCommitLogReadAheadMode(ctx context.Context, brokerAddr, mode string) (string, error) {
	resp, err := c.invokeOK(ctx, brokerAddr, code.SetCommitLogReadMode, map[string]string{"READ_AHEAD_MODE": mode}, nil)
	if err != nil {
		return "", err
	}
	return resp.Remark, nil
}

// UpdateColdDataFlowCtrGroupConfig sets a group's cold read threshold
// (UPDATE_COLD_DATA_FLOW_CTR_CONFIG, 2001; a properties body).
func (c *Client) UpdateColdDataFlowCtrGroupConfig(ctx context.Context, brokerAddr, group, threshold string) error {
	_, err := c.invokeOK(ctx, brokerAddr, code.UpdateColdDataFlowCtrConfig, nil, []byte(FormatProperties(map[string]string{group: threshold})))
	return err
}

// RemoveColdDataFlowCtrGroupConfig drops a group's cold read threshold
// (REMOVE_COLD_DATA_FLOW_CTR_CONFIG, 2002).
func (c *Client) RemoveColdDataFlowCtrGroupConfig(ctx context.Context, brokerAddr, group string) error {
	if group == "" {
		return nil // the Java client sends nothing
	}
	_, err := c.invokeOK(ctx, brokerAddr, code.RemoveColdDataFlowCtrConfig, nil, []byte(group))
	return err
}

// GetColdDataFlowCtrInfo reads a broker's cold-data flow control tables
// (GET_COLD_DATA_FLOW_CTR_INFO, 2003): the JSON text, "" when the body is
// empty.
func (c *Client) GetColdDataFlowCtrInfo(ctx context.Context, brokerAddr string) (string, error) {
	resp, err := c.invokeOK(ctx, brokerAddr, code.GetColdDataFlowCtrInfo, nil, nil)
	if err != nil {
		return "", err
	}
	return string(resp.Body), nil
}

// ConsumeQueueData is one entry of QUERY_CONSUME_QUEUE (Apache's
// ConsumeQueueData).
type ConsumeQueueData struct {
	BitMap         *string `json:"bitMap"`
	Eval           bool    `json:"eval"`
	ExtendDataJSON *string `json:"extendDataJson"`
	Msg            *string `json:"msg"`
	PhysicOffset   int64   `json:"physicOffset"`
	PhysicSize     int32   `json:"physicSize"`
	TagsCode       int64   `json:"tagsCode"`
}

// String is Java's ConsumeQueueData.toString.
func (d ConsumeQueueData) String() string {
	q := func(p *string) string {
		if p == nil {
			return "'null'"
		}
		return "'" + *p + "'"
	}
	return fmt.Sprintf("ConsumeQueueData{physicOffset=%d, physicSize=%d, tagsCode=%d, extendDataJson=%s, bitMap=%s, eval=%t, msg=%s}",
		d.PhysicOffset, d.PhysicSize, d.TagsCode, q(d.ExtendDataJSON), q(d.BitMap), d.Eval, q(d.Msg))
}

// QueryConsumeQueueResult is the QUERY_CONSUME_QUEUE (321) body.
type QueryConsumeQueueResult struct {
	FilterData       *string            `json:"filterData"`
	MaxQueueIndex    int64              `json:"maxQueueIndex"`
	MinQueueIndex    int64              `json:"minQueueIndex"`
	QueueData        []ConsumeQueueData `json:"queueData"`
	SubscriptionData *SubscriptionData  `json:"subscriptionData"`
}

// QueryConsumeQueue reads count entries of a consume queue from index, with
// the subscription of group when it is not "" (QUERY_CONSUME_QUEUE, 321).
// A broker that answers without a body (index outside the queue) gives an
// error, as the Java client fails to decode it.
func (c *Client) QueryConsumeQueue(ctx context.Context, brokerAddr, topic string, queueID int, index int64, count int, group string) (*QueryConsumeQueueResult, error) {
	ext := map[string]string{"topic": topic, "queueId": strconv.Itoa(queueID), "index": strconv.FormatInt(index, 10), "count": strconv.Itoa(count)}
	if group != "" {
		ext["consumerGroup"] = group
	}
	resp, err := c.invokeOK(ctx, brokerAddr, code.QueryConsumeQueue, ext, nil)
	if err != nil {
		return nil, err
	}
	if len(resp.Body) == 0 {
		return nil, fmt.Errorf("QUERY_CONSUME_QUEUE to %s: no body (%s)", brokerAddr, resp.Remark)
	}
	var r QueryConsumeQueueResult
	if err := json.Unmarshal(resp.Body, &r); err != nil {
		return nil, fmt.Errorf("QUERY_CONSUME_QUEUE to %s: decode: %w", brokerAddr, err)
	}
	return &r, nil
}
