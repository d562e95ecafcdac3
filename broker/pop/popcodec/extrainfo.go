package popcodec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// OrderReviveQueue is the revive queue id of orderly pops (Java's
// KeyBuilder.POP_ORDER_REVIVE_QUEUE): receipts carrying it address the
// order info, not a checkpoint.
const OrderReviveQueue = 999

// Retry flags of the receipt handle and of the offset-info headers
// (docs/protocol.md §3.3): which topic a message was popped from.
const (
	RetryNone = "0" // the topic itself
	RetryV1   = "1" // %RETRY%<group>_<topic>
	RetryV2   = "2" // %RETRY%<group>+<topic>
)

// Pop retry topic separators (Java's KeyBuilder).
const (
	retrySepV1 = "_"
	retrySepV2 = "+"
)

// RetryTopicV1 is Java's buildPopRetryTopicV1: %RETRY%<group>_<topic>.
func RetryTopicV1(topic, group string) string {
	return protocol.RetryGroupTopicPrefix + group + retrySepV1 + topic
}

// RetryTopicV2 is Java's buildPopRetryTopicV2: %RETRY%<group>+<topic>.
func RetryTopicV2(topic, group string) string {
	return protocol.RetryGroupTopicPrefix + group + retrySepV2 + topic
}

// RetryTopic is the pop retry topic the revive service writes to: V2 when
// enableRetryTopicV2 is on, else V1 (Java 5's default).
func RetryTopic(topic, group string, v2 bool) string {
	if v2 {
		return RetryTopicV2(topic, group)
	}
	return RetryTopicV1(topic, group)
}

// IsRetryTopicV2 is Java's KeyBuilder.isPopRetryTopicV2.
func IsRetryTopicV2(topic string) bool {
	return strings.HasPrefix(topic, protocol.RetryGroupTopicPrefix) && strings.Contains(topic, retrySepV2)
}

// RetryFlag is the mark ExtraInfoUtil.getRetry writes for a topic.
func RetryFlag(topic string) string {
	switch {
	case IsRetryTopicV2(topic):
		return RetryV2
	case strings.HasPrefix(topic, protocol.RetryGroupTopicPrefix):
		return RetryV1
	}
	return RetryNone
}

// RealTopic is Java's ExtraInfoUtil.getRealTopic: the topic a message with
// retry flag retry was stored in, for consumer topic and group.
func RealTopic(topic, group, retry string) (string, error) {
	switch retry {
	case RetryNone:
		return topic, nil
	case RetryV1:
		return RetryTopicV1(topic, group), nil
	case RetryV2:
		return RetryTopicV2(topic, group), nil
	}
	return "", fmt.Errorf("retry flag %q is not 0, 1 or 2", retry)
}

// ParseRetryTopic splits a pop retry topic of group into the consumer's
// topic (Java's KeyBuilder.parseNormalTopic(topic, cid)); ok is false for
// any other topic.
func ParseRetryTopic(retryTopic, group string) (topic string, ok bool) {
	for _, sep := range []string{retrySepV2, retrySepV1} {
		if t, found := strings.CutPrefix(retryTopic, protocol.RetryGroupTopicPrefix+group+sep); found && t != "" {
			return t, true
		}
	}
	return "", false
}

// ExtraInfo is a pop receipt handle (message property POP_CK), written by
// the client from the pop response or by the broker for retry messages:
//
//	ckQueueOffset popTime invisibleTime reviveQid retryFlag brokerName queueId [queueOffset]
//
// The checkpoint it refers to is (group, real topic, queueId, ckQueueOffset,
// popTime); reviveQid 999 marks an orderly pop.
type ExtraInfo struct {
	CkQueueOffset  int64
	PopTime        int64
	InvisibleTime  int64
	ReviveQid      int32
	Retry          string
	BrokerName     string
	QueueID        int32
	QueueOffset    int64
	HasQueueOffset bool
}

// ErrExtraInfo reports a receipt handle that is not one this broker wrote.
var ErrExtraInfo = errors.New("illegal extraInfo")

// maxExtraInfoLen bounds a receipt handle; real ones are under 100 bytes.
const maxExtraInfoLen = 512

// ParseExtraInfo decodes a receipt handle. It requires the seven fields
// every Java and Go client writes (the eighth, the message's queue offset,
// is optional) and rejects anything else instead of guessing.
func ParseExtraInfo(s string) (ExtraInfo, error) {
	var e ExtraInfo
	if len(s) > maxExtraInfoLen {
		return e, fmt.Errorf("%w: %d bytes", ErrExtraInfo, len(s))
	}
	f := strings.Split(s, " ")
	if len(f) < 7 || len(f) > 8 {
		return e, fmt.Errorf("%w: %d fields in %q, want 7 or 8", ErrExtraInfo, len(f), s)
	}
	var err error
	num := func(i int, name string) int64 {
		if err != nil {
			return 0
		}
		v, perr := strconv.ParseInt(f[i], 10, 64)
		if perr != nil {
			err = fmt.Errorf("%w: %s %q is not a number", ErrExtraInfo, name, f[i])
		}
		return v
	}
	e.CkQueueOffset = num(0, "ckQueueOffset")
	e.PopTime = num(1, "popTime")
	e.InvisibleTime = num(2, "invisibleTime")
	rq := num(3, "reviveQid")
	qid := num(6, "queueId")
	if len(f) == 8 {
		e.QueueOffset, e.HasQueueOffset = num(7, "queueOffset"), true
	}
	if err != nil {
		return e, err
	}
	if rq < 0 || rq > OrderReviveQueue || qid < 0 || qid > 1<<31-1 {
		return e, fmt.Errorf("%w: reviveQid %d or queueId %d out of range", ErrExtraInfo, rq, qid)
	}
	e.ReviveQid, e.QueueID = int32(rq), int32(qid)
	switch f[4] {
	case RetryNone, RetryV1, RetryV2:
		e.Retry = f[4]
	default:
		return e, fmt.Errorf("%w: retry flag %q is not 0, 1 or 2", ErrExtraInfo, f[4])
	}
	if f[5] == "" {
		return e, fmt.Errorf("%w: empty broker name", ErrExtraInfo)
	}
	e.BrokerName = f[5]
	if e.CkQueueOffset < 0 || e.PopTime < 0 || (e.HasQueueOffset && e.QueueOffset < 0) {
		return e, fmt.Errorf("%w: negative offset or time in %q", ErrExtraInfo, s)
	}
	return e, nil
}

// IsOrder reports an orderly pop's receipt.
func (e ExtraInfo) IsOrder() bool { return e.ReviveQid == OrderReviveQueue }

// String encodes the receipt handle (Java's ExtraInfoUtil.buildExtraInfo).
func (e ExtraInfo) String() string {
	b := make([]byte, 0, 64)
	b = strconv.AppendInt(b, e.CkQueueOffset, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, e.PopTime, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, e.InvisibleTime, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(e.ReviveQid), 10)
	b = append(b, ' ')
	b = append(b, e.Retry...)
	b = append(b, ' ')
	b = append(b, e.BrokerName...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(e.QueueID), 10)
	if e.HasQueueOffset {
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.QueueOffset, 10)
	}
	return string(b)
}

// parseInfo splits a ';'-joined offset-info header (name is its name, for
// errors) into its "flag key value" triples, keyed "flag@key" as Java's
// parsers do, each value decoded by value. It reports malformed and
// duplicate entries.
func parseInfo[V any](s, name string, value func(string) (V, error)) (map[string]V, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]V{}
	for one := range strings.SplitSeq(s, ";") {
		p := strings.Split(one, " ")
		if len(p) != 3 {
			return nil, fmt.Errorf("%s entry %q: want 3 fields", name, one)
		}
		k := p[0] + "@" + p[1]
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s: duplicate entry %q", name, k)
		}
		v, err := value(p[2])
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", name, k, err)
		}
		out[k] = v
	}
	return out, nil
}

func parseInt64(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }

// ParseStartOffsetInfo decodes startOffsetInfo into "flag@queueId" → start.
func ParseStartOffsetInfo(s string) (map[string]int64, error) {
	return parseInfo(s, "startOffsetInfo", parseInt64)
}

// ParseMsgOffsetInfo decodes msgOffsetInfo into "flag@queueId" → offsets.
func ParseMsgOffsetInfo(s string) (map[string][]int64, error) {
	return parseInfo(s, "msgOffsetInfo", func(v string) ([]int64, error) {
		var offs []int64
		for x := range strings.SplitSeq(v, ",") {
			n, err := parseInt64(x)
			if err != nil {
				return nil, err
			}
			offs = append(offs, n)
		}
		return offs, nil
	})
}

// ParseOrderCountInfo decodes orderCountInfo into "flag@queueId" or
// "flag@qo<queueId>%<offset>" → consume count.
func ParseOrderCountInfo(s string) (map[string]int, error) {
	return parseInfo(s, "orderCountInfo", strconv.Atoi)
}
