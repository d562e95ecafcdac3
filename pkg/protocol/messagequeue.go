package protocol

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// MessageQueue identifies one queue of a topic on one broker. Its JSON is
// {"brokerName":"broker-a","queueId":0,"topic":"TopicTest"} (docs/protocol.md §4.1).
//
// Java writes Map<MessageQueue,V> (offset tables of TopicStatsTable,
// ConsumeStats, ResetOffsetBody, ...) with the queue *object* as key:
//
//	{{"brokerName":"b","queueId":0,"topic":"T"}:{...}}
//
// which is not valid JSON. MQMap carries such maps: decode bodies that
// contain one with UnmarshalMQKeyed and encode them with MarshalMQKeyed.
type MessageQueue struct {
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
	Topic      string `json:"topic"`
}

// mqJSON has MessageQueue's fields without its methods, so that the
// (Un)MarshalJSON methods below can use the default struct coding.
type mqJSON MessageQueue

// MarshalJSON writes the queue as an object (its MarshalText form exists
// only for map keys).
func (mq MessageQueue) MarshalJSON() ([]byte, error) {
	return appendMQ(nil, mq), nil
}

// UnmarshalJSON reads the queue from an object. encoding/json also calls it
// for map keys, with the key as a JSON string holding the object's text.
func (mq *MessageQueue) UnmarshalJSON(b []byte) error {
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		return mq.UnmarshalText([]byte(s))
	}
	var v mqJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*mq = MessageQueue(v)
	return nil
}

// MarshalText renders the compact JSON object; encoding/json uses it for map
// keys, which MarshalMQKeyed then turns back into bare object keys.
func (mq MessageQueue) MarshalText() ([]byte, error) {
	return appendMQ(nil, mq), nil
}

// UnmarshalText parses the JSON object text of a queue (a map key after
// QuoteObjectKeys).
func (mq *MessageQueue) UnmarshalText(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return fmt.Errorf("protocol: message queue key %q is not a JSON object", b)
	}
	var v mqJSON
	if err := Unmarshal(b, &v); err != nil {
		return fmt.Errorf("protocol: message queue key %s: %w", b, err)
	}
	*mq = MessageQueue(v)
	return nil
}

// String is Java's MessageQueue.toString.
func (mq MessageQueue) String() string {
	return "MessageQueue [topic=" + mq.Topic + ", brokerName=" + mq.BrokerName + ", queueId=" + strconv.Itoa(mq.QueueID) + "]"
}

// Compare orders queues as Java's MessageQueue.compareTo: by topic, then
// broker name, then queue id.
func (mq MessageQueue) Compare(o MessageQueue) int {
	if c := cmp.Compare(mq.Topic, o.Topic); c != 0 {
		return c
	}
	if c := cmp.Compare(mq.BrokerName, o.BrokerName); c != 0 {
		return c
	}
	return cmp.Compare(mq.QueueID, o.QueueID)
}

// SortMessageQueues sorts in Compare order.
func SortMessageQueues(mqs []MessageQueue) {
	slices.SortFunc(mqs, MessageQueue.Compare)
}

// appendMQ writes the compact, fastjson-ordered object.
func appendMQ(b []byte, mq MessageQueue) []byte {
	b = append(b, `{"brokerName":`...)
	b = appendJSONString(b, mq.BrokerName)
	b = append(b, `,"queueId":`...)
	b = strconv.AppendInt(b, int64(mq.QueueID), 10)
	b = append(b, `,"topic":`...)
	b = appendJSONString(b, mq.Topic)
	return append(b, '}')
}

func appendJSONString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimRight(buf.Bytes(), "\n")...)
}

// MQMap is a Map<MessageQueue,V>. As a field of a body it marshals with
// encoding/json into string keys holding the queue's JSON text (standard
// JSON, entries in Compare order); MarshalMQKeyed rewrites those keys into
// Java's bare object keys, and UnmarshalMQKeyed accepts both forms.
type MQMap[V any] map[MessageQueue]V

// SortedKeys returns the queues in Compare order.
func (m MQMap[V]) SortedKeys() []MessageQueue {
	keys := make([]MessageQueue, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	SortMessageQueues(keys)
	return keys
}

// MarshalJSON writes the entries in Compare order with string keys.
func (m MQMap[V]) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("null"), nil
	}
	b := []byte{'{'}
	for i, k := range m.SortedKeys() {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, string(appendMQ(nil, k)))
		b = append(b, ':')
		v, err := Marshal(m[k])
		if err != nil {
			return nil, fmt.Errorf("protocol: encode value of %s: %w", k, err)
		}
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

// MarshalMQMap encodes a queue-keyed map exactly as Java does:
// {{"brokerName":"b","queueId":0,"topic":"T"}:v,...}, compact, entries in
// Compare order.
func MarshalMQMap[V any](m map[MessageQueue]V) ([]byte, error) {
	return MarshalMQKeyed(MQMap[V](m))
}

// UnmarshalMQMap decodes a queue-keyed map written by Java (object keys) or
// by encoding/json (string keys).
func UnmarshalMQMap[V any](data []byte) (map[MessageQueue]V, error) {
	var m MQMap[V]
	if err := UnmarshalMQKeyed(data, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// MarshalMQKeyed is Marshal followed by UnquoteObjectKeys: MQMap fields
// anywhere inside v come out with Java's bare object keys.
func MarshalMQKeyed(v any) ([]byte, error) {
	b, err := Marshal(v)
	if err != nil {
		return nil, err
	}
	return UnquoteObjectKeys(b), nil
}

// UnmarshalMQKeyed is Unmarshal for bodies whose maps may have object keys
// (Java's Map<MessageQueue,V>) and bare numeric keys.
func UnmarshalMQKeyed(data []byte, v any) error {
	return unmarshalFixing(data, v, func(data []byte) ([]byte, bool) {
		fixed, changed := QuoteObjectKeys(data)
		fixed, changed2 := QuoteBareKeys(fixed)
		return fixed, changed || changed2
	})
}

// scanString returns the index just past the string literal starting at
// data[i] == '"' (len(data) if unterminated).
func scanString(data []byte, i int) int {
	j := i + 1
	for j < len(data) {
		switch data[j] {
		case '\\':
			j += 2
			continue
		case '"':
			return j + 1
		}
		j++
	}
	return len(data)
}

// scanValue returns the index just past the object or array starting at
// data[i] ('{' or '['), honouring nesting and string literals.
func scanValue(data []byte, i int) int {
	depth := 0
	for j := i; j < len(data); j++ {
		switch data[j] {
		case '"':
			j = scanString(data, j) - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return len(data)
}

// QuoteObjectKeys rewrites object-valued keys ({{...}:v}, outside string
// literals) into string keys holding the key object's text, so that
// encoding/json can decode them (MessageQueue implements
// encoding.TextUnmarshaler). It reports whether anything changed.
func QuoteObjectKeys(data []byte) ([]byte, bool) {
	changed := false
	out := rewriteKeys(data, len(data)+32, func(out []byte, i int) ([]byte, int, bool) {
		if data[i] != '{' {
			return out, 0, false
		}
		j := scanValue(data, i)
		changed = true
		return appendJSONString(out, string(data[i:j])), j, true
	})
	return out, changed
}

// UnquoteObjectKeys is the inverse of QuoteObjectKeys for encoding: a string
// in key position whose content is a JSON object becomes that bare object.
// RocketMQ bodies never have ordinary string keys that start with '{'.
func UnquoteObjectKeys(data []byte) []byte {
	return rewriteKeys(data, len(data), func(out []byte, i int) ([]byte, int, bool) {
		if data[i] != '"' {
			return out, 0, false
		}
		j := scanString(data, i)
		lit := data[i:j]
		if len(lit) <= 2 || lit[1] != '{' {
			return out, 0, false
		}
		var s string
		if err := json.Unmarshal(lit, &s); err != nil || !json.Valid([]byte(s)) || s[len(s)-1] != '}' {
			return out, 0, false
		}
		return append(out, s...), j, true
	})
}

// rewriteKeys copies data (into a buffer of capacity size), tracking
// whether the scan stands where an object key may start (right after '{',
// or after ',' inside an object), outside string literals. There rewrite
// may replace the token starting at data[i]: it returns the output and the
// index just past the token, or false to have it copied as it is.
func rewriteKeys(data []byte, size int, rewrite func(out []byte, i int) ([]byte, int, bool)) []byte {
	out := make([]byte, 0, size)
	var stack []bool // true = object
	expectKey := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if expectKey {
			if o, j, ok := rewrite(out, i); ok {
				out = o
				i = j - 1
				expectKey = false
				continue
			}
		}
		switch {
		case c == '"':
			j := scanString(data, i)
			out = append(out, data[i:j]...)
			i = j - 1
			expectKey = false
		case c == '{':
			stack = append(stack, true)
			expectKey = true
			out = append(out, c)
		case c == '[':
			stack = append(stack, false)
			expectKey = false
			out = append(out, c)
		case c == '}' || c == ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			expectKey = false
			out = append(out, c)
		case c == ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1]
			out = append(out, c)
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			out = append(out, c)
		default:
			expectKey = false
			out = append(out, c)
		}
	}
	return out
}

// TopicOffset is one queue's entry of a TopicStatsTable.
type TopicOffset struct {
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
	MaxOffset           int64 `json:"maxOffset"`
	MinOffset           int64 `json:"minOffset"`
}

// TopicStatsTable is the GET_TOPIC_STATS_INFO (202) body (docs/protocol.md §4.9):
// {"offsetTable":{{MQ}:{"lastUpdateTimestamp":…,"maxOffset":…,"minOffset":…}},"topicPutTps":0.0}.
// Encode with MarshalMQKeyed, decode with UnmarshalMQKeyed.
type TopicStatsTable struct {
	OffsetTable MQMap[TopicOffset] `json:"offsetTable"`
	TopicPutTps float64            `json:"topicPutTps"`
}
