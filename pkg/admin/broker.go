package admin

import (
	"context"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// GetBrokerRuntimeInfo reads a broker's runtime statistics (28), the
// KVTable behind clusterList and brokerStatus.
func (c *Client) GetBrokerRuntimeInfo(ctx context.Context, brokerAddr string) (map[string]string, error) {
	var kv protocol.KVTable
	if err := c.invokeDecode(ctx, brokerAddr, code.GetBrokerRuntimeInfo, nil, &kv); err != nil {
		return nil, err
	}
	if kv.Table == nil {
		kv.Table = map[string]string{}
	}
	return kv.Table, nil
}

// GetBrokerConfig reads a broker's configuration (26), in the order of the
// broker's properties text.
func (c *Client) GetBrokerConfig(ctx context.Context, brokerAddr string) (Properties, error) {
	resp, err := c.invokeOK(ctx, brokerAddr, code.GetBrokerConfig, nil, nil)
	if err != nil {
		return nil, err
	}
	return ParseProperties(string(resp.Body)), nil
}

// UpdateBrokerConfig changes a broker's configuration (25). As the Java
// client, it refuses a brokerPermission outside [0, 8) before sending, and
// sends nothing for an empty map.
func (c *Client) UpdateBrokerConfig(ctx context.Context, brokerAddr string, props map[string]string) error {
	if err := validateBrokerConfig(props); err != nil {
		return err
	}
	if len(props) == 0 {
		return nil
	}
	_, err := c.invokeOK(ctx, brokerAddr, code.UpdateBrokerConfig, nil, []byte(FormatProperties(props)))
	return err
}

// BrokerStatsItem is one window of a broker statistic: the value added in
// it, per second, and per call (Apache's BrokerStatsItem).
type BrokerStatsItem struct {
	Avgpt float64 `json:"avgpt"`
	Sum   int64   `json:"sum"`
	Tps   float64 `json:"tps"`
}

// BrokerStatsData is a statistic's last minute, hour and day (Apache's
// BrokerStatsData).
type BrokerStatsData struct {
	StatsDay    BrokerStatsItem `json:"statsDay"`
	StatsHour   BrokerStatsItem `json:"statsHour"`
	StatsMinute BrokerStatsItem `json:"statsMinute"`
}

// Sum24Hours is StatsAllSubCommand.compute24HourSum: the day's sum, else
// the hour's, else the minute's.
func (d *BrokerStatsData) Sum24Hours() int64 {
	switch {
	case d.StatsDay.Sum != 0:
		return d.StatsDay.Sum
	case d.StatsHour.Sum != 0:
		return d.StatsHour.Sum
	}
	return d.StatsMinute.Sum
}

// Broker statistic names (Apache's Stats / BrokerStatsManager).
const (
	StatsTopicPutNums = "TOPIC_PUT_NUMS" // key: topic
	StatsGroupGetNums = "GROUP_GET_NUMS" // key: topic@group
)

// ViewBrokerStatsData reads one statistic of a broker
// (VIEW_BROKER_STATS_DATA, 315); one the broker never recorded is a
// *ResponseError with SYSTEM_ERROR.
func (c *Client) ViewBrokerStatsData(ctx context.Context, brokerAddr, statsName, statsKey string) (*BrokerStatsData, error) {
	return decodeFrom[BrokerStatsData](ctx, c, brokerAddr, code.ViewBrokerStatsData, map[string]string{"statsName": statsName, "statsKey": statsKey})
}
