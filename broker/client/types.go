// Package client keeps track of the clients connected to the broker (Java's
// ProducerManager, ConsumerManager and ClientManageProcessor): which
// channels belong to which producer and consumer groups, each consumer
// group's subscriptions, heartbeats and their expiry, and the
// NOTIFY_CONSUMER_IDS_CHANGED push that makes consumers rebalance.
package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Enum names of HeartbeatData (docs/protocol.md §4.5).
const (
	ConsumeActively  = "CONSUME_ACTIVELY"  // pull consumer
	ConsumePassively = "CONSUME_PASSIVELY" // push consumer
	ConsumePop       = "CONSUME_POP"

	Broadcasting = "BROADCASTING"
	Clustering   = "CLUSTERING"
	// LiteSelective is 5.5's model of lite push consumers (ordinal 2):
	// they consume the lite topics they subscribed, not a share of the
	// queues.
	LiteSelective = "LITE_SELECTIVE"

	ExpressionTag   = "TAG"
	ExpressionSQL92 = "SQL92"

	// SubAll is the subscription expression matching every tag.
	SubAll = "*"
)

// Enum ordinals, for peers that send them as numbers (fastjson accepts both).
var (
	consumeTypeNames  = []string{ConsumeActively, ConsumePassively, ConsumePop}
	messageModelNames = []string{Broadcasting, Clustering, LiteSelective}
	consumeFromNames  = []string{"CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
		"CONSUME_FROM_MIN_OFFSET", "CONSUME_FROM_MAX_OFFSET", "CONSUME_FROM_FIRST_OFFSET", "CONSUME_FROM_TIMESTAMP"}
)

// SubscriptionData is one topic subscription of a consumer group. Fields
// are in fastjson's alphabetical order; codeSet is emitted as numbers
// (Java's form) and accepted as numbers or strings (client-go's form).
type SubscriptionData struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	CodeSet         []int32  `json:"codeSet"`
	ExpressionType  string   `json:"expressionType"`
	SubString       string   `json:"subString"`
	SubVersion      int64    `json:"subVersion"`
	TagsSet         []string `json:"tagsSet"`
	Topic           string   `json:"topic"`
}

// IsTagType reports whether the expression is a tag expression (the
// default when the type is absent).
func (s SubscriptionData) IsTagType() bool {
	return s.ExpressionType == "" || s.ExpressionType == ExpressionTag
}

// clone deep-copies the sets.
func (s SubscriptionData) clone() SubscriptionData {
	s.CodeSet = slices.Clone(s.CodeSet)
	s.TagsSet = slices.Clone(s.TagsSet)
	return s
}

// MarshalJSON writes empty sets as [] (Java initialises them), never null.
func (s SubscriptionData) MarshalJSON() ([]byte, error) {
	type plain SubscriptionData
	p := plain(s)
	if p.CodeSet == nil {
		p.CodeSet = []int32{}
	}
	if p.TagsSet == nil {
		p.TagsSet = []string{}
	}
	return protocol.Marshal(p)
}

// UnmarshalJSON is lenient: numbers may be strings, codeSet entries may be
// numbers or strings, subVersion may be milliseconds (Java) or nanoseconds
// (client-go) — it is only ever compared with values from the same client.
func (s *SubscriptionData) UnmarshalJSON(b []byte) error {
	var raw struct {
		ClassFilterMode flexBool    `json:"classFilterMode"`
		CodeSet         []flexInt64 `json:"codeSet"`
		ExpressionType  string      `json:"expressionType"`
		SubString       string      `json:"subString"`
		SubVersion      flexInt64   `json:"subVersion"`
		TagsSet         []string    `json:"tagsSet"`
		Topic           string      `json:"topic"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*s = SubscriptionData{
		ClassFilterMode: bool(raw.ClassFilterMode),
		ExpressionType:  raw.ExpressionType,
		SubString:       raw.SubString,
		SubVersion:      int64(raw.SubVersion),
		TagsSet:         raw.TagsSet,
		Topic:           raw.Topic,
	}
	for _, c := range raw.CodeSet {
		s.CodeSet = append(s.CodeSet, int32(c))
	}
	return nil
}

// normalize fills codeSet from tagsSet when a client sent tags only, so
// tag filtering works whatever the client populated.
func (s *SubscriptionData) normalize() {
	if s.ExpressionType == "" {
		s.ExpressionType = ExpressionTag
	}
	if s.IsTagType() && len(s.CodeSet) == 0 && len(s.TagsSet) > 0 && s.SubString != SubAll {
		for _, t := range s.TagsSet {
			s.CodeSet = append(s.CodeSet, message.TagHashCode(t))
		}
	}
}

// ErrBadExpression: a subscription expression cannot be parsed.
var ErrBadExpression = errors.New("bad subscription expression")

// BuildSubscription is Java's FilterAPI.build: a TAG expression ("*", "",
// "a || b") becomes tags and their hash codes; other types keep the
// expression text for a filter factory to compile.
func BuildSubscription(topic, subString, expressionType string) (SubscriptionData, error) {
	if expressionType != "" && expressionType != ExpressionTag {
		if subString == "" {
			return SubscriptionData{}, fmt.Errorf("%w: expression can't be empty for type %s", ErrBadExpression, expressionType)
		}
		return SubscriptionData{Topic: topic, SubString: subString, ExpressionType: expressionType}, nil
	}
	sd := SubscriptionData{Topic: topic, SubString: subString, ExpressionType: ExpressionTag}
	if subString == "" || subString == SubAll {
		sd.SubString = SubAll
		return sd, nil
	}
	parts := strings.Split(subString, "||")
	// Java's String.split drops trailing empty strings; nothing left is an error.
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) == 0 {
		return SubscriptionData{}, fmt.Errorf("%w: %q has no tag", ErrBadExpression, subString)
	}
	for _, p := range parts {
		t := strings.TrimSpace(p)
		if t == "" || slices.Contains(sd.TagsSet, t) {
			continue
		}
		sd.TagsSet = append(sd.TagsSet, t)
		if c := message.TagHashCode(t); !slices.Contains(sd.CodeSet, c) {
			sd.CodeSet = append(sd.CodeSet, c)
		}
	}
	return sd, nil
}

// ConsumerData is one consumer group of a heartbeat.
type ConsumerData struct {
	ConsumeFromWhere    string             `json:"consumeFromWhere"`
	ConsumeType         string             `json:"consumeType"`
	GroupName           string             `json:"groupName"`
	MessageModel        string             `json:"messageModel"`
	SubscriptionDataSet []SubscriptionData `json:"subscriptionDataSet"`
	UnitMode            bool               `json:"unitMode"`
}

// UnmarshalJSON accepts enums as names or ordinals and booleans as strings.
func (c *ConsumerData) UnmarshalJSON(b []byte) error {
	var raw struct {
		ConsumeFromWhere    json.RawMessage    `json:"consumeFromWhere"`
		ConsumeType         json.RawMessage    `json:"consumeType"`
		GroupName           string             `json:"groupName"`
		MessageModel        json.RawMessage    `json:"messageModel"`
		SubscriptionDataSet []SubscriptionData `json:"subscriptionDataSet"`
		UnitMode            flexBool           `json:"unitMode"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	var err error
	*c = ConsumerData{GroupName: raw.GroupName, SubscriptionDataSet: raw.SubscriptionDataSet, UnitMode: bool(raw.UnitMode)}
	if c.ConsumeFromWhere, err = decodeEnum(raw.ConsumeFromWhere, consumeFromNames); err != nil {
		return fmt.Errorf("consumeFromWhere: %w", err)
	}
	if c.ConsumeType, err = decodeEnum(raw.ConsumeType, consumeTypeNames); err != nil {
		return fmt.Errorf("consumeType: %w", err)
	}
	if c.MessageModel, err = decodeEnum(raw.MessageModel, messageModelNames); err != nil {
		return fmt.Errorf("messageModel: %w", err)
	}
	return nil
}

// ProducerData is one producer group of a heartbeat.
type ProducerData struct {
	GroupName string `json:"groupName"`
}

// HeartbeatData is the HEART_BEAT body (docs/protocol.md §4.5).
type HeartbeatData struct {
	ClientID             string         `json:"clientID"`
	ConsumerDataSet      []ConsumerData `json:"consumerDataSet"`
	HeartbeatFingerprint int64          `json:"heartbeatFingerprint"`
	ProducerDataSet      []ProducerData `json:"producerDataSet"`
	WithoutSub           bool           `json:"withoutSub"`
}

// DecodeHeartbeat parses a HEART_BEAT body from Java or client-go.
func DecodeHeartbeat(b []byte) (*HeartbeatData, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, errors.New("empty heartbeat body")
	}
	var raw struct {
		ClientID             string         `json:"clientID"`
		ConsumerDataSet      []ConsumerData `json:"consumerDataSet"`
		HeartbeatFingerprint flexInt64      `json:"heartbeatFingerprint"`
		ProducerDataSet      []ProducerData `json:"producerDataSet"`
		WithoutSub           flexBool       `json:"withoutSub"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	hb := &HeartbeatData{
		ClientID:             raw.ClientID,
		ConsumerDataSet:      raw.ConsumerDataSet,
		HeartbeatFingerprint: int64(raw.HeartbeatFingerprint),
		ProducerDataSet:      raw.ProducerDataSet,
		WithoutSub:           bool(raw.WithoutSub),
	}
	for i := range hb.ConsumerDataSet {
		for j := range hb.ConsumerDataSet[i].SubscriptionDataSet {
			hb.ConsumerDataSet[i].SubscriptionDataSet[j].normalize()
		}
	}
	return hb, nil
}

// flexInt64 accepts a JSON number (integer or float form) or a string
// holding one; null is 0.
type flexInt64 int64

func (f *flexInt64) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*f = 0
		return nil
	}
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		s = strings.TrimSpace(s)
		if s == "" {
			*f = 0
			return nil
		}
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		*f = flexInt64(n)
		return nil
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("not a number: %s", b)
	}
	*f = flexInt64(int64(x))
	return nil
}

// flexBool accepts true/false or "true"/"false"; null is false.
type flexBool bool

func (f *flexBool) UnmarshalJSON(b []byte) error {
	switch strings.ToLower(strings.Trim(string(bytes.TrimSpace(b)), `"`)) {
	case "true":
		*f = true
	case "false", "null", "":
		*f = false
	default:
		return fmt.Errorf("not a boolean: %s", b)
	}
	return nil
}

// decodeEnum reads an enum as its name or its ordinal in names; absent or
// null gives "". Unknown names are kept as sent (client-go may send UNKNOWN).
func decodeEnum(raw json.RawMessage, names []string) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	n, err := strconv.Atoi(string(raw))
	if err != nil || n < 0 || n >= len(names) {
		return "", fmt.Errorf("bad enum value %s", raw)
	}
	return names[n], nil
}
