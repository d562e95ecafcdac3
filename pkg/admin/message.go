package admin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// Message queries: QUERY_MESSAGE (12) by key, tag or UNIQ_KEY on every
// broker of a topic's route, and VIEW_MESSAGE_BY_ID (33) by offset message
// id, as Java's MQAdminImpl does them for mqadmin's queryMsgBy* commands.

// Index types of QUERY_MESSAGE's indexType field (Java MessageConst).
const (
	IndexKeyType    = "K" // business keys (KEYS)
	IndexTagType    = "T" // tags (TAGS), on brokers that index them
	IndexUniqueType = "U" // client message id (UNIQ_KEY)
)

// UniqueKeyQueryFlag is the QUERY_MESSAGE ext field that says the key is a
// UNIQ_KEY (Java MixAll.UNIQUE_MSG_QUERY_FLAG).
const UniqueKeyQueryFlag = "_UNIQUE_KEY_QUERY"

// DefaultUniqKeyMaxNum is the maxNum Java sends for UNIQ_KEY queries.
const DefaultUniqKeyMaxNum = 32

// ErrNoMessage is returned when a query finished without a matching message
// (Java's MQClientException NO_MESSAGE "query message by key finished, but
// no message.").
var ErrNoMessage = errors.New("query message by key finished, but no message.") //nolint:staticcheck // Java's message, verbatim

// StoredMessage is a message read back from a broker (query, view). Java
// prints its properties from a HashMap whose iteration order depends on the
// order the keys were stored in, so that order is kept.
type StoredMessage struct {
	*message.Message
	// PropertyKeys are the property keys in stored order (later duplicates
	// dropped).
	PropertyKeys []string
}

// newStoredMessage decodes one record, inflating a compressed body as
// Java's client decoder does (the compressed bit is then cleared).
func newStoredMessage(rec []byte) (*StoredMessage, int, error) {
	v, err := message.ParseView(rec, message.ParseOptions{})
	if err != nil {
		return nil, 0, err
	}
	m, err := v.Message(false)
	if err != nil {
		return nil, 0, err
	}
	if m.SysFlag&message.FlagCompressed != 0 {
		if body, err := message.Decompress(m.Body, m.SysFlag, 64<<20); err == nil {
			m.Body = body
			m.SysFlag &^= message.FlagCompressed
		}
	}
	return &StoredMessage{Message: m, PropertyKeys: PropertyKeyOrder(v.Properties())}, len(v.Bytes()), nil
}

// decodeStoredMessages decodes a body of concatenated records; like Java it
// stops at the first record it cannot decode.
func decodeStoredMessages(body []byte) ([]*StoredMessage, error) {
	var out []*StoredMessage
	for off := 0; off < len(body); {
		m, n, err := newStoredMessage(body[off:])
		if err != nil {
			return out, fmt.Errorf("record at byte %d: %w", off, err)
		}
		out = append(out, m)
		off += n
	}
	return out, nil
}

// PropertyKeyOrder lists the keys of a properties string (docs/protocol.md §5.4)
// in order of first appearance, with Java's decoding rules (items without a
// key or a value are dropped).
func PropertyKeyOrder(props []byte) []string {
	var keys []string
	seen := map[string]bool{}
	for _, item := range bytes.Split(props, []byte{message.PropertySeparator}) {
		sep := bytes.IndexByte(item, message.NameValueSeparator)
		if sep <= 0 || sep >= len(item)-1 {
			continue
		}
		k := string(item[:sep])
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// ViewMessage reads the message an offset message id points at: it decodes
// the store host and commit-log offset from the id and sends
// VIEW_MESSAGE_BY_ID (topic, offset) to that host. An id that does not
// decode is an error wrapping message.ErrBadMsgID.
func (c *Client) ViewMessage(ctx context.Context, topic, offsetMsgID string) (*StoredMessage, error) {
	host, offset, err := message.ParseOffsetMsgID(offsetMsgID)
	if err != nil {
		return nil, err
	}
	addr := host.String()
	ext := map[string]string{"topic": topic, "offset": strconv.FormatInt(offset, 10)}
	resp, err := c.invokeOK(ctx, addr, code.ViewMessageByID, ext, nil)
	if err != nil {
		return nil, err
	}
	msgs, err := decodeStoredMessages(resp.Body)
	if len(msgs) == 0 {
		if err == nil {
			err = errors.New("empty body")
		}
		return nil, fmt.Errorf("%s to %s: decode body: %w", code.RequestName(code.ViewMessageByID), addr, err)
	}
	return msgs[0], nil
}

// QueryMessageRequest is what QueryMessage looks for.
type QueryMessageRequest struct {
	Topic string
	Key   string
	// MaxNum caps the messages each broker returns (UNIQ_KEY queries: the
	// broker decides).
	MaxNum int
	// Begin and End bound the store timestamps (ms). Java's tools send 0
	// and math.MaxInt64 for "no bound".
	Begin, End int64
	// Unique says Key is a UNIQ_KEY (sets _UNIQUE_KEY_QUERY=true).
	Unique bool
	// IndexType is IndexKeyType (default), IndexTagType or IndexUniqueType.
	IndexType string
	// LastKey, when set, is sent as lastKey (paging on brokers that have
	// it).
	LastKey string
	// Cluster restricts the brokers to one cluster; for LMQ topics and
	// rmq_sys_wheel_timer it is the topic whose route is used instead.
	Cluster string
}

// QueryMessageResult is what the brokers found.
type QueryMessageResult struct {
	IndexLastUpdateTimestamp int64
	Messages                 []*StoredMessage
}

// QueryMessage sends QUERY_MESSAGE to one address (master preferred) of
// every broker of the topic's route, in parallel, and keeps the messages
// that really match, as Java's MQAdminImpl.queryMessage: UNIQ_KEY queries
// keep messages whose client id is the key; key queries those whose KEYS
// (space-separated) contain the key and whose topic is the topic; tag
// queries those whose TAGS equal the key. Brokers that fail or answer
// another code are skipped. Nothing found is ErrNoMessage. Messages come in
// route order, each broker's in its answer's order.
func (c *Client) QueryMessage(ctx context.Context, req QueryMessageRequest) (*QueryMessageResult, error) {
	if req.IndexType == "" {
		req.IndexType = IndexKeyType
		if req.Unique {
			req.IndexType = IndexUniqueType
		}
	}
	isLmq := strings.HasPrefix(req.Topic, protocol.LMQPrefix)
	routeTopic := req.Topic
	if req.Topic != "" && (isLmq || req.Topic == protocol.SysTopicPrefix+"wheel_timer") && req.Cluster != "" {
		routeTopic = req.Cluster
	}
	route, err := c.GetTopicRoute(ctx, routeTopic)
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, bd := range route.BrokerDatas {
		if !isLmq && req.Cluster != "" && req.Cluster != bd.Cluster {
			continue
		}
		if a := SelectBrokerAddr(bd); a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("the topic[%s] not matched route info", req.Topic)
	}
	headerTopic := req.Topic
	if isLmq {
		headerTopic = req.Cluster
	}
	ext := map[string]string{
		"topic":            headerTopic,
		"key":              req.Key,
		"maxNum":           strconv.Itoa(req.MaxNum),
		"beginTimestamp":   strconv.FormatInt(req.Begin, 10),
		"endTimestamp":     strconv.FormatInt(req.End, 10),
		"indexType":        req.IndexType,
		UniqueKeyQueryFlag: strconv.FormatBool(req.Unique),
	}
	if req.LastKey != "" {
		ext["lastKey"] = req.LastKey
	}

	type answer struct {
		msgs    []*StoredMessage
		indexTS int64
	}
	answers := make([]answer, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.invoke(ctx, addr, code.QueryMessage, maps.Clone(ext), nil)
			if err != nil {
				c.log.Warn("admin: query message failed", "addr", addr, "err", err)
				return
			}
			if resp.Code != code.Success {
				c.log.Debug("admin: query message", "addr", addr, "code", resp.Code, "remark", resp.Remark)
				return
			}
			msgs, err := decodeStoredMessages(resp.Body)
			if err != nil {
				c.log.Warn("admin: query message body partly undecodable", "addr", addr, "err", err)
			}
			ts, _ := strconv.ParseInt(resp.Ext("indexLastUpdateTimestamp"), 10, 64)
			answers[i] = answer{msgs: msgs, indexTS: ts}
		}()
	}
	wg.Wait()

	res := &QueryMessageResult{}
	for _, a := range answers {
		res.IndexLastUpdateTimestamp = max(res.IndexLastUpdateTimestamp, a.indexTS)
		for _, m := range a.msgs {
			if queryMatches(req, isLmq, m) {
				res.Messages = append(res.Messages, m)
			} else {
				c.log.Debug("admin: query message: key not matched, maybe hash duplicate", "msgId", m.ClientMsgID())
			}
		}
	}
	if len(res.Messages) == 0 {
		return nil, fmt.Errorf("topic %s key %s: %w", req.Topic, req.Key, ErrNoMessage)
	}
	return res, nil
}

func queryMatches(req QueryMessageRequest, isLmq bool, m *StoredMessage) bool {
	switch {
	case req.Unique:
		return m.ClientMsgID() == req.Key
	case req.IndexType == IndexKeyType:
		keys, ok := m.Properties[message.PropertyKeys]
		if !ok {
			return false
		}
		for _, k := range strings.Split(keys, message.KeySeparator) {
			if k == req.Key && (isLmq || m.Topic == req.Topic) {
				return true
			}
		}
		return false
	case req.IndexType == IndexTagType:
		tags, ok := m.Properties[message.PropertyTags]
		return ok && tags == req.Key && (isLmq || m.Topic == req.Topic)
	}
	return false
}

// UniqKeyLookback is how far back QueryMessageByID searches by UNIQ_KEY
// (Java: now − 3 days, to Long.MAX_VALUE).
const UniqKeyLookback = 3 * 24 * time.Hour

// QueryMessageByID finds a message by id as Java's queryMessage(cluster,
// topic, msgId): an id that decodes as an offset message id is viewed on
// the broker it names; when it does not decode or the view fails, it is
// taken as a UNIQ_KEY and queried on the topic's brokers (stored since now
// − 3 days) and the first match is returned. viewErr is the view's
// failure, if any (the fallback's error is returned when it fails too).
func (c *Client) QueryMessageByID(ctx context.Context, cluster, topic, msgID string, now time.Time) (msg *StoredMessage, viewErr error, err error) {
	m, viewErr := c.ViewMessage(ctx, topic, msgID)
	if viewErr == nil {
		return m, nil, nil
	}
	c.log.Debug("admin: the msgId maybe created by new client", "msgId", msgID, "err", viewErr)
	res, err := c.QueryMessage(ctx, QueryMessageRequest{
		Topic: topic, Key: msgID, MaxNum: DefaultUniqKeyMaxNum, Unique: true,
		Begin: now.Add(-UniqKeyLookback).UnixMilli(), End: math.MaxInt64, Cluster: cluster,
	})
	if err != nil {
		return nil, viewErr, err
	}
	return res.Messages[0], viewErr, nil
}

// ConsumeMessageDirectlyResult is a client's answer to
// CONSUME_MESSAGE_DIRECTLY.
type ConsumeMessageDirectlyResult struct {
	Order          bool   `json:"order"`
	AutoCommit     bool   `json:"autoCommit"`
	ConsumeResult  string `json:"consumeResult"`
	Remark         string `json:"remark"`
	SpentTimeMills int64  `json:"spentTimeMills"`
}

// String is Java's ConsumeMessageDirectlyResult.toString.
func (r *ConsumeMessageDirectlyResult) String() string {
	return fmt.Sprintf("ConsumeMessageDirectlyResult [order=%t, autoCommit=%t, consumeResult=%s, remark=%s, spentTimeMills=%d]",
		r.Order, r.AutoCommit, nullStr(r.ConsumeResult), nullStr(r.Remark), r.SpentTimeMills)
}

func nullStr(s string) string {
	if s == "" {
		return "null"
	}
	return s
}

// ConsumeMessageDirectly asks a consumer client to consume one message now
// (CONSUME_MESSAGE_DIRECTLY, 309, sent to the broker that stores it, which
// forwards it with the message). msgID is the offset message id.
func (c *Client) ConsumeMessageDirectly(ctx context.Context, brokerAddr, group, clientID, topic, msgID string) (*ConsumeMessageDirectlyResult, error) {
	ext := map[string]string{"consumerGroup": group, "clientId": clientID, "msgId": msgID, "topic": topic}
	return decodeFrom[ConsumeMessageDirectlyResult](ctx, c, brokerAddr, code.ConsumeMessageDirectly, ext)
}
