package admin

import (
	"context"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// GetAllDelayOffset reads a broker's delay offsets (45): per delay level,
// where its delivery of SCHEDULE_TOPIC_XXXX queue level−1 continues (what
// a slave copies; Java's BrokerOuterAPI.getAllDelayOffset).
func (c *Client) GetAllDelayOffset(ctx context.Context, brokerAddr string) (protocol.DelayOffsets, error) {
	resp, err := c.invokeOK(ctx, brokerAddr, code.GetAllDelayOffset, nil, nil)
	if err != nil {
		return protocol.DelayOffsets{}, err
	}
	return protocol.DecodeDelayOffsets(resp.Body)
}

// GetTimerCheckPoint reads a broker's timer checkpoint (60; Java's
// BrokerOuterAPI.getTimerCheckPoint). A broker with timerWheelEnable off
// answers SYSTEM_ERROR.
func (c *Client) GetTimerCheckPoint(ctx context.Context, brokerAddr string) (protocol.TimerCheckpoint, error) {
	resp, err := c.invokeOK(ctx, brokerAddr, code.GetTimerCheckPoint, nil, nil)
	if err != nil {
		return protocol.TimerCheckpoint{}, err
	}
	return protocol.DecodeTimerCheckpoint(resp.Body)
}

// GetTimerMetrics reads a broker's timer metrics (61): the timer messages
// waiting per topic (Java's BrokerOuterAPI.getTimerMetrics).
func (c *Client) GetTimerMetrics(ctx context.Context, brokerAddr string) (protocol.TimerMetrics, error) {
	resp, err := c.invokeOK(ctx, brokerAddr, code.GetTimerMetrics, nil, nil)
	if err != nil {
		return protocol.TimerMetrics{}, err
	}
	return protocol.DecodeTimerMetrics(resp.Body)
}
