package client

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// Retry flags of a pop checkpoint: which topic a popped message came from
// (docs/protocol.md §3.3).
const (
	popNormalTopic  = "0"
	popRetryTopicV1 = "1" // %RETRY%<group>_<topic>
	popRetryTopicV2 = "2" // %RETRY%<group>+<topic>
)

// popRetryFlag is Java's ExtraInfoUtil.getRetry for a message's topic.
func popRetryFlag(topic string) string {
	switch {
	case !strings.HasPrefix(topic, protocol.RetryGroupTopicPrefix):
		return popNormalTopic
	case strings.Contains(topic, "+"):
		return popRetryTopicV2
	}
	return popRetryTopicV1
}

// popRealTopic is the topic an ACK or CHANGE_INVISIBLE_TIME names: the pop
// retry topic the message came from, else topic itself.
func popRealTopic(retry, topic, group string) string {
	switch retry {
	case popRetryTopicV1:
		return protocol.RetryGroupTopicPrefix + group + "_" + topic
	case popRetryTopicV2:
		return protocol.RetryGroupTopicPrefix + group + "+" + topic
	}
	return topic
}

// popCheckpoint is a pop receipt handle: the POP_CK property ("extraInfo"),
// space-separated `ckQueueOffset popTime invisibleTime reviveQid retryFlag
// brokerName queueId queueOffset`.
type popCheckpoint struct {
	CkQueueOffset int64
	PopTime       int64 // ms
	InvisibleTime int64 // ms
	ReviveQid     int
	Retry         string
	BrokerName    string
	QueueID       int
	QueueOffset   int64 // -1 when the handle has only seven fields
}

var errBadHandle = errors.New("client: bad receipt handle")

// parsePopCheckpoint decodes a receipt handle.
func parsePopCheckpoint(s string) (popCheckpoint, error) {
	f := strings.Split(s, " ")
	if len(f) != 7 && len(f) != 8 {
		return popCheckpoint{}, fmt.Errorf("%w: %d fields in %q, want 7 or 8", errBadHandle, len(f), s)
	}
	var ck popCheckpoint
	var errs []error
	// Every number of a handle is an offset, a time or an id: never
	// negative.
	i64 := func(v, name string) int64 {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("%s %q", name, v))
		}
		return n
	}
	i32 := func(v, name string) int {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("%s %q", name, v))
		}
		return int(n)
	}
	ck.CkQueueOffset = i64(f[0], "ckQueueOffset")
	ck.PopTime = i64(f[1], "popTime")
	ck.InvisibleTime = i64(f[2], "invisibleTime")
	ck.ReviveQid = i32(f[3], "reviveQid")
	ck.Retry = f[4]
	ck.BrokerName = f[5]
	ck.QueueID = i32(f[6], "queueId")
	ck.QueueOffset = -1
	if len(f) == 8 {
		ck.QueueOffset = i64(f[7], "queueOffset")
	}
	switch ck.Retry {
	case popNormalTopic, popRetryTopicV1, popRetryTopicV2:
	default:
		errs = append(errs, fmt.Errorf("retry flag %q", ck.Retry))
	}
	if ck.BrokerName == "" {
		errs = append(errs, errors.New("empty broker name"))
	}
	if len(errs) > 0 {
		return popCheckpoint{}, fmt.Errorf("%w %q: %w", errBadHandle, s, errors.Join(errs...))
	}
	return ck, nil
}

// String encodes the handle as Java's ExtraInfoUtil.buildExtraInfo.
func (ck popCheckpoint) String() string {
	b := make([]byte, 0, 64)
	b = strconv.AppendInt(b, ck.CkQueueOffset, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, ck.PopTime, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, ck.InvisibleTime, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(ck.ReviveQid), 10)
	b = append(b, ' ')
	b = append(b, ck.Retry...)
	b = append(b, ' ')
	b = append(b, ck.BrokerName...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(ck.QueueID), 10)
	if ck.QueueOffset >= 0 {
		b = append(b, ' ')
		b = strconv.AppendInt(b, ck.QueueOffset, 10)
	}
	return string(b)
}

// parsePopStartOffsets decodes the startOffsetInfo header
// ("retry queueId startOffset;…") into retry@queueId → offset.
func parsePopStartOffsets(s string) (map[string]int64, error) {
	return parsePopInfo(s, "startOffsetInfo", func(v string) (int64, bool) {
		off, err := strconv.ParseInt(v, 10, 64)
		return off, err == nil
	})
}

// parsePopMsgOffsets decodes the msgOffsetInfo header
// ("retry queueId o1,o2,…;…") into retry@queueId → offsets.
func parsePopMsgOffsets(s string) (map[string][]int64, error) {
	return parsePopInfo(s, "msgOffsetInfo", func(v string) ([]int64, bool) {
		offs := []int64{}
		for _, o := range strings.Split(v, ",") {
			off, err := strconv.ParseInt(o, 10, 64)
			if err != nil {
				return nil, false
			}
			offs = append(offs, off)
		}
		return offs, true
	})
}

// parsePopInfo decodes a pop answer's extra-info header named name:
// ";"-joined "retry queueId value" items, into retry@queueId → the value
// as parse reads it. A malformed item or a repeated key is an error.
func parsePopInfo[V any](s, name string, parse func(string) (V, bool)) (map[string]V, error) {
	out := make(map[string]V)
	if s == "" {
		return out, nil
	}
	for _, item := range strings.Split(s, ";") {
		f := strings.Split(item, " ")
		if len(f) != 3 {
			return nil, fmt.Errorf("client: bad %s item %q", name, item)
		}
		v, ok := parse(f[2])
		if !ok {
			return nil, fmt.Errorf("client: bad %s item %q", name, item)
		}
		key := f[0] + "@" + f[1]
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("client: duplicate %s key %s", name, key)
		}
		out[key] = v
	}
	return out, nil
}
