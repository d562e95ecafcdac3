// Package subscription is the broker's subscription group table (Java's
// SubscriptionGroupManager): per consumer group settings (consume enable,
// broadcast, retry queues and times, notify on membership change, ...),
// created by admins or automatically on first use, persisted to
// <storePathRootDir>/config/subscriptionGroup.json in Java's format, and
// the admin requests that read and change it.
package subscription

import (
	"encoding/json"
	"maps"
	"slices"
)

// Defaults of a SubscriptionGroupConfig (Java's field initialisers).
const (
	DefaultRetryQueueNums               = 1
	DefaultRetryMaxTimes                = 16
	DefaultConsumeTimeoutMinute         = 15
	DefaultWhichBrokerWhenConsumeSlowly = 1
	RetryPolicyCustomized               = "CUSTOMIZED"
	RetryPolicyExponential              = "EXPONENTIAL"
)

// RetryPolicy is Java's GroupRetryPolicy. The policy bodies are kept as
// raw JSON: the broker only stores and returns them.
type RetryPolicy struct {
	CustomizedRetryPolicy  json.RawMessage `json:"customizedRetryPolicy,omitempty"`
	ExponentialRetryPolicy json.RawMessage `json:"exponentialRetryPolicy,omitempty"`
	Type                   string          `json:"type"`
}

// SimpleSubscription is one entry of subscriptionDataSet (Java's
// SimpleSubscriptionData).
type SimpleSubscription struct {
	Expression     string `json:"expression"`
	ExpressionType string `json:"expressionType"`
	Topic          string `json:"topic"`
	Version        int64  `json:"version"`
}

// GroupConfig is Java's SubscriptionGroupConfig (docs/protocol.md §4.10). Fields
// are in alphabetical key order, as fastjson writes them.
type GroupConfig struct {
	Attributes                     map[string]string    `json:"attributes"`
	BrokerID                       int64                `json:"brokerId"`
	ConsumeBroadcastEnable         bool                 `json:"consumeBroadcastEnable"`
	ConsumeEnable                  bool                 `json:"consumeEnable"`
	ConsumeFromMinEnable           bool                 `json:"consumeFromMinEnable"`
	ConsumeMessageOrderly          bool                 `json:"consumeMessageOrderly"`
	ConsumeTimeoutMinute           int                  `json:"consumeTimeoutMinute"`
	GroupName                      string               `json:"groupName"`
	GroupRetryPolicy               RetryPolicy          `json:"groupRetryPolicy"`
	GroupSysFlag                   int                  `json:"groupSysFlag"`
	NotifyConsumerIdsChangedEnable bool                 `json:"notifyConsumerIdsChangedEnable"`
	RetryMaxTimes                  int                  `json:"retryMaxTimes"`
	RetryQueueNums                 int                  `json:"retryQueueNums"`
	SubscriptionDataSet            []SimpleSubscription `json:"subscriptionDataSet,omitempty"`
	WhichBrokerWhenConsumeSlowly   int64                `json:"whichBrokerWhenConsumeSlowly"`
}

// NewGroupConfig returns a config with Java's defaults.
func NewGroupConfig(name string) GroupConfig {
	return GroupConfig{
		Attributes:                     map[string]string{},
		ConsumeBroadcastEnable:         true,
		ConsumeEnable:                  true,
		ConsumeFromMinEnable:           true,
		ConsumeTimeoutMinute:           DefaultConsumeTimeoutMinute,
		GroupName:                      name,
		GroupRetryPolicy:               RetryPolicy{Type: RetryPolicyCustomized},
		NotifyConsumerIdsChangedEnable: true,
		RetryMaxTimes:                  DefaultRetryMaxTimes,
		RetryQueueNums:                 DefaultRetryQueueNums,
		WhichBrokerWhenConsumeSlowly:   DefaultWhichBrokerWhenConsumeSlowly,
	}
}

// Clone returns a deep copy (the table hands out copies only).
func (c GroupConfig) Clone() GroupConfig {
	c.Attributes = maps.Clone(c.Attributes)
	if c.Attributes == nil {
		c.Attributes = map[string]string{}
	}
	c.SubscriptionDataSet = slices.Clone(c.SubscriptionDataSet)
	c.GroupRetryPolicy.CustomizedRetryPolicy = slices.Clone(c.GroupRetryPolicy.CustomizedRetryPolicy)
	c.GroupRetryPolicy.ExponentialRetryPolicy = slices.Clone(c.GroupRetryPolicy.ExponentialRetryPolicy)
	return c
}

// DecodeGroupConfig parses a SubscriptionGroupConfig body over Java's
// defaults, so absent fields keep their default values as in Java.
func DecodeGroupConfig(b []byte) (GroupConfig, error) {
	c := NewGroupConfig("")
	if err := json.Unmarshal(b, &c); err != nil {
		return GroupConfig{}, err
	}
	if c.Attributes == nil {
		c.Attributes = map[string]string{}
	}
	if c.GroupRetryPolicy.Type == "" {
		c.GroupRetryPolicy.Type = RetryPolicyCustomized
	}
	return c, nil
}
