package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// CustomizedRetryPolicy is Java's CustomizedRetryPolicy: the delay (ms)
// before each retry.
type CustomizedRetryPolicy struct {
	Next []int64 `json:"next"`
}

// DefaultRetryDelays are CustomizedRetryPolicy's default delays: 1s 5s 10s
// 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h.
func DefaultRetryDelays() []int64 {
	return []int64{1000, 5000, 10000, 30000, 60000, 120000, 180000, 240000, 300000, 360000, 420000, 480000, 540000,
		600000, 1200000, 1800000, 3600000, 7200000}
}

// ExponentialRetryPolicy is Java's ExponentialRetryPolicy (ms).
type ExponentialRetryPolicy struct {
	Initial    int64 `json:"initial"`
	Max        int64 `json:"max"`
	Multiplier int64 `json:"multiplier"`
}

// GroupRetryPolicy is Java's GroupRetryPolicy.
type GroupRetryPolicy struct {
	CustomizedRetryPolicy  *CustomizedRetryPolicy  `json:"customizedRetryPolicy,omitempty"`
	ExponentialRetryPolicy *ExponentialRetryPolicy `json:"exponentialRetryPolicy,omitempty"`
	Type                   string                  `json:"type"`
}

// ParseGroupRetryPolicy reads the JSON of a retry policy as Java's
// JSON.parseObject(s, GroupRetryPolicy.class): absent fields keep Java's
// defaults (type CUSTOMIZED; a policy object's missing fields their
// defaults).
func ParseGroupRetryPolicy(s string) (GroupRetryPolicy, error) {
	var raw struct {
		CustomizedRetryPolicy  *map[string]any `json:"customizedRetryPolicy"`
		ExponentialRetryPolicy *map[string]any `json:"exponentialRetryPolicy"`
		Type                   *string         `json:"type"`
	}
	if err := protocol.Unmarshal([]byte(s), &raw); err != nil {
		return GroupRetryPolicy{}, fmt.Errorf("retry policy %q: %w", s, err)
	}
	p := GroupRetryPolicy{Type: "CUSTOMIZED"}
	if raw.Type != nil {
		switch t := strings.ToUpper(*raw.Type); t {
		case "CUSTOMIZED", "EXPONENTIAL":
			p.Type = t
		default:
			return GroupRetryPolicy{}, fmt.Errorf("retry policy %q: unknown type %q", s, *raw.Type)
		}
	}
	if raw.CustomizedRetryPolicy != nil {
		c := &CustomizedRetryPolicy{Next: DefaultRetryDelays()}
		if v, ok := (*raw.CustomizedRetryPolicy)["next"]; ok {
			arr, ok := v.([]any)
			if !ok {
				return GroupRetryPolicy{}, fmt.Errorf("retry policy %q: next is not an array", s)
			}
			c.Next = make([]int64, len(arr))
			for i, x := range arr {
				n, err := jsonInt(x)
				if err != nil {
					return GroupRetryPolicy{}, fmt.Errorf("retry policy %q: next[%d]: %w", s, i, err)
				}
				c.Next[i] = n
			}
		}
		p.CustomizedRetryPolicy = c
	}
	if raw.ExponentialRetryPolicy != nil {
		e := &ExponentialRetryPolicy{Initial: 5000, Max: 7200000, Multiplier: 2}
		for k, dst := range map[string]*int64{"initial": &e.Initial, "max": &e.Max, "multiplier": &e.Multiplier} {
			if v, ok := (*raw.ExponentialRetryPolicy)[k]; ok {
				n, err := jsonInt(v)
				if err != nil {
					return GroupRetryPolicy{}, fmt.Errorf("retry policy %q: %s: %w", s, k, err)
				}
				*dst = n
			}
		}
		p.ExponentialRetryPolicy = e
	}
	return p, nil
}

func jsonInt(v any) (int64, error) {
	switch v := v.(type) {
	case float64:
		return int64(v), nil
	case string:
		return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	}
	return 0, fmt.Errorf("not a number: %v", v)
}

// String is Guava's toStringHelper output of Java's GroupRetryPolicy.
func (p GroupRetryPolicy) String() string {
	exp, cust := "null", "null"
	if e := p.ExponentialRetryPolicy; e != nil {
		exp = fmt.Sprintf("ExponentialRetryPolicy{initial=%d, max=%d, multiplier=%d}", e.Initial, e.Max, e.Multiplier)
	}
	if c := p.CustomizedRetryPolicy; c != nil {
		parts := make([]string, len(c.Next))
		for i, n := range c.Next {
			parts[i] = strconv.FormatInt(n, 10)
		}
		cust = "CustomizedRetryPolicy{next=[" + strings.Join(parts, ", ") + "]}"
	}
	return fmt.Sprintf("GroupRetryPolicy{type=%s, exponentialRetryPolicy=%s, customizedRetryPolicy=%s}", p.Type, exp, cust)
}

// SubscriptionGroupConfig is Java's SubscriptionGroupConfig, the
// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP body (fields in fastjson's order).
type SubscriptionGroupConfig struct {
	Attributes                     map[string]string `json:"attributes"`
	BrokerID                       int64             `json:"brokerId"`
	ConsumeBroadcastEnable         bool              `json:"consumeBroadcastEnable"`
	ConsumeEnable                  bool              `json:"consumeEnable"`
	ConsumeFromMinEnable           bool              `json:"consumeFromMinEnable"`
	ConsumeMessageOrderly          bool              `json:"consumeMessageOrderly"`
	ConsumeTimeoutMinute           int               `json:"consumeTimeoutMinute"`
	GroupName                      string            `json:"groupName"`
	GroupRetryPolicy               GroupRetryPolicy  `json:"groupRetryPolicy"`
	GroupSysFlag                   int               `json:"groupSysFlag"`
	NotifyConsumerIdsChangedEnable bool              `json:"notifyConsumerIdsChangedEnable"`
	RetryMaxTimes                  int               `json:"retryMaxTimes"`
	RetryQueueNums                 int               `json:"retryQueueNums"`
	WhichBrokerWhenConsumeSlowly   int64             `json:"whichBrokerWhenConsumeSlowly"`
}

// NewSubscriptionGroupConfig returns a config with Java's field defaults.
func NewSubscriptionGroupConfig(group string) SubscriptionGroupConfig {
	return SubscriptionGroupConfig{
		Attributes:                     map[string]string{},
		ConsumeBroadcastEnable:         true,
		ConsumeEnable:                  true,
		ConsumeFromMinEnable:           true,
		ConsumeTimeoutMinute:           15,
		GroupName:                      group,
		GroupRetryPolicy:               GroupRetryPolicy{Type: "CUSTOMIZED"},
		NotifyConsumerIdsChangedEnable: true,
		RetryMaxTimes:                  16,
		RetryQueueNums:                 1,
		WhichBrokerWhenConsumeSlowly:   1,
	}
}

// CreateSubscriptionGroup creates or updates a subscription group on one
// broker (200).
func (c *Client) CreateSubscriptionGroup(ctx context.Context, brokerAddr string, cfg SubscriptionGroupConfig) error {
	if cfg.Attributes == nil {
		cfg.Attributes = map[string]string{}
	}
	body, err := protocol.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encode subscription group %s: %w", cfg.GroupName, err)
	}
	_, err = c.invokeOK(ctx, brokerAddr, code.UpdateAndCreateSubscriptionGroup, nil, body)
	return err
}

// DeleteSubscriptionGroup deletes a subscription group from one broker
// (207), and its offsets there with cleanOffset.
func (c *Client) DeleteSubscriptionGroup(ctx context.Context, brokerAddr, group string, cleanOffset bool) error {
	ext := map[string]string{"groupName": group, "cleanOffset": strconv.FormatBool(cleanOffset)}
	_, err := c.invokeOK(ctx, brokerAddr, code.DeleteSubscriptionGroup, ext, nil)
	return err
}

// GetSubscriptionGroup reads one subscription group from a broker (352);
// an unknown group is a *ResponseError with SUBSCRIPTION_GROUP_NOT_EXIST.
func (c *Client) GetSubscriptionGroup(ctx context.Context, brokerAddr, group string) (*SubscriptionGroupConfig, error) {
	cfg := NewSubscriptionGroupConfig("")
	if err := c.invokeDecode(ctx, brokerAddr, code.GetSubscriptionGroupConfig, map[string]string{"group": group}, &cfg); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// CreateSubscriptionGroupList creates or updates subscription groups on
// one broker in one request (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST,
// 225; Java's createAndUpdateSubscriptionGroupConfigList): the broker
// checks every group name before it applies any.
func (c *Client) CreateSubscriptionGroupList(ctx context.Context, brokerAddr string, list []SubscriptionGroupConfig) error {
	for i := range list {
		if list[i].Attributes == nil {
			list[i].Attributes = map[string]string{}
		}
	}
	body, err := protocol.Marshal(struct {
		GroupConfigList []SubscriptionGroupConfig `json:"groupConfigList"`
	}{list})
	if err != nil {
		return fmt.Errorf("encode subscription group list: %w", err)
	}
	_, err = c.invokeOK(ctx, brokerAddr, code.UpdateAndCreateSubscriptionGroupList, nil, body)
	return err
}

// SetMessageRequestMode sets how a group consumes a topic on one broker,
// PULL or POP with popShareQueueNum (SET_MESSAGE_REQUEST_MODE, 401, body
// SetMessageRequestModeRequestBody).
func (c *Client) SetMessageRequestMode(ctx context.Context, brokerAddr, topic, group, mode string, popShareQueueNum int) error {
	body, err := protocol.Marshal(struct {
		ConsumerGroup    string `json:"consumerGroup"`
		Mode             string `json:"mode"`
		PopShareQueueNum int    `json:"popShareQueueNum"`
		Topic            string `json:"topic"`
	}{group, mode, popShareQueueNum, topic})
	if err != nil {
		return fmt.Errorf("encode message request mode: %w", err)
	}
	_, err = c.invokeOK(ctx, brokerAddr, code.SetMessageRequestMode, nil, body)
	return err
}

// SubscriptionGroupTable is every subscription group of a broker with the
// table's data version (Java's SubscriptionGroupWrapper).
type SubscriptionGroupTable struct {
	DataVersion    protocol.DataVersion
	ForbiddenTable map[string]map[string]int
	Groups         map[string]SubscriptionGroupConfig
}

// maxGroupsPerPage is the page size GetAllSubscriptionGroups asks for
// (Java's ClientConfig.maxPageSizeInGetMetadata default).
const maxGroupsPerPage = 2000

// GetAllSubscriptionGroups reads every subscription group of one broker
// (GET_ALL_SUBSCRIPTIONGROUP_CONFIG, 201), page by page as Java's
// MQClientAPIImpl.getAllSubscriptionGroup: groupSeq and maxGroupNum ask
// for a page, the answer's totalGroupNum says whether more follow (a broker
// that does not send it answered everything), and a changed data version
// starts over. Java stops one group early (groupSeq >= totalGroupNum-1);
// we stop when every group has come.
func (c *Client) GetAllSubscriptionGroups(ctx context.Context, brokerAddr string) (*SubscriptionGroupTable, error) {
	table := map[string]SubscriptionGroupConfig{}
	forbidden := map[string]map[string]int{}
	seq := 0
	var version json.RawMessage
	for range 100 {
		ext := map[string]string{"groupSeq": strconv.Itoa(seq), "maxGroupNum": strconv.Itoa(maxGroupsPerPage)}
		if version != nil {
			ext["dataVersion"] = string(version)
		}
		resp, err := c.invokeOK(ctx, brokerAddr, code.GetAllSubscriptionGroupConfig, ext, nil)
		if err != nil {
			return nil, err
		}
		var w struct {
			DataVersion            json.RawMessage            `json:"dataVersion"`
			ForbiddenTable         map[string]map[string]int  `json:"forbiddenTable"`
			SubscriptionGroupTable map[string]json.RawMessage `json:"subscriptionGroupTable"`
		}
		if err := decodeBody(resp, brokerAddr, code.GetAllSubscriptionGroupConfig, &w); err != nil {
			return nil, err
		}
		if version == nil {
			version = w.DataVersion
		} else if !bytes.Equal(version, w.DataVersion) {
			version, seq = w.DataVersion, 0
			clear(table)
			clear(forbidden)
			continue
		}
		for k, v := range w.ForbiddenTable {
			forbidden[k] = v
		}
		for name, raw := range w.SubscriptionGroupTable {
			g := NewSubscriptionGroupConfig("")
			if err := protocol.Unmarshal(raw, &g); err != nil {
				return nil, fmt.Errorf("subscription group %s from %s: %w", name, brokerAddr, err)
			}
			table[name] = g
		}
		seq += len(w.SubscriptionGroupTable)
		total, err := strconv.Atoi(resp.Ext("totalGroupNum"))
		if err != nil || seq >= total || len(w.SubscriptionGroupTable) == 0 {
			out := &SubscriptionGroupTable{Groups: table, ForbiddenTable: forbidden}
			if len(version) > 0 {
				if err := protocol.Unmarshal(version, &out.DataVersion); err != nil {
					return nil, fmt.Errorf("subscription groups of %s: data version: %w", brokerAddr, err)
				}
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("subscription groups of %s: data version kept changing", brokerAddr)
}
