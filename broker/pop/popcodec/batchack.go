package popcodec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// BatchAck is one entry of BatchAckMessageRequestBody (docs/protocol.md §4.10):
// the acks of one pop of one queue, as a bit set over offsets from
// StartOffset (bit i acks StartOffset+i).
type BatchAck struct {
	ConsumerGroup string
	Topic         string // the consumer's topic; Retry selects the stored one
	Retry         string
	StartOffset   int64
	QueueID       int32
	ReviveQueueID int32
	PopTime       int64
	InvisibleTime int64
	Bits          []byte // java.util.BitSet.toByteArray: little-endian
	// LiteTopic is set by lite consumers; batch acks of lite messages are
	// refused (docs/lite-topics.md §6.7).
	LiteTopic string
}

// BatchAckBody is BatchAckMessageRequestBody.
type BatchAckBody struct {
	BrokerName string
	Acks       []BatchAck
}

// Decoder limits: a batch is one client's acks of one broker, bounded by
// what a client can have in flight.
const (
	maxBatchAcks    = 4096
	maxBitSetBytes  = 1024 // 8192 offsets from one start
	maxBatchAckBody = 4 << 20
)

// ErrBatchAckBody reports an undecodable BATCH_ACK_MESSAGE body.
var ErrBatchAckBody = errors.New("illegal batch ack body")

// DecodeBatchAckBody decodes the body as fastjson writes it: short keys
// (c, t, r, so, q, rq, pt, it, b) or their long alternates, numbers or
// numeric strings, the bit set as base64 (fastjson's byte[]) or an array of
// bytes.
func DecodeBatchAckBody(b []byte) (BatchAckBody, error) {
	var out BatchAckBody
	if len(b) > maxBatchAckBody {
		return out, fmt.Errorf("%w: %d bytes", ErrBatchAckBody, len(b))
	}
	var raw struct {
		BrokerName string            `json:"brokerName"`
		Acks       []json.RawMessage `json:"acks"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return out, fmt.Errorf("%w: %v", ErrBatchAckBody, err)
	}
	if len(raw.Acks) > maxBatchAcks {
		return out, fmt.Errorf("%w: %d acks (max %d)", ErrBatchAckBody, len(raw.Acks), maxBatchAcks)
	}
	out.BrokerName = raw.BrokerName
	for i, a := range raw.Acks {
		ack, err := decodeBatchAck(a)
		if err != nil {
			return BatchAckBody{}, fmt.Errorf("%w: ack %d: %v", ErrBatchAckBody, i, err)
		}
		out.Acks = append(out.Acks, ack)
	}
	return out, nil
}

func decodeBatchAck(b json.RawMessage) (BatchAck, error) {
	var a BatchAck
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return a, err
	}
	field := func(short, long string) json.RawMessage {
		if v, ok := m[short]; ok {
			return v
		}
		return m[long]
	}
	var err error
	str := func(short, long string) string {
		v := field(short, long)
		if v == nil || err != nil || string(v) == "null" {
			return ""
		}
		var s string
		if uerr := json.Unmarshal(v, &s); uerr == nil {
			return s
		}
		// fastjson writes "r" as a string, but numbers are accepted too.
		var n json.Number
		if uerr := json.Unmarshal(v, &n); uerr == nil {
			return n.String()
		}
		err = fmt.Errorf("%s: not a string", short)
		return ""
	}
	num := func(short, long string, bits int) int64 {
		v := field(short, long)
		if v == nil || err != nil || string(v) == "null" {
			return 0
		}
		s := string(v)
		if len(s) >= 2 && s[0] == '"' {
			if uerr := json.Unmarshal(v, &s); uerr != nil {
				err = fmt.Errorf("%s: %v", short, uerr)
				return 0
			}
		}
		n, perr := strconv.ParseInt(s, 10, bits)
		if perr != nil {
			err = fmt.Errorf("%s: %q is not a %d-bit integer", short, s, bits)
		}
		return n
	}
	a.ConsumerGroup = str("c", "consumerGroup")
	a.Topic = str("t", "topic")
	a.Retry = str("r", "retry")
	a.StartOffset = num("so", "startOffset", 64)
	a.QueueID = int32(num("q", "queueId", 32))
	a.ReviveQueueID = int32(num("rq", "reviveQueueId", 32))
	a.PopTime = num("pt", "popTime", 64)
	a.InvisibleTime = num("it", "invisibleTime", 64)
	a.LiteTopic = str("lt", "liteTopic")
	if err != nil {
		return a, err
	}
	if a.Bits, err = decodeBitSet(field("b", "bitSet")); err != nil {
		return a, err
	}
	if a.Retry == "" {
		a.Retry = RetryNone
	}
	return a, nil
}

// decodeBitSet reads fastjson's byte[]: a base64 string, or an array of
// numbers in -128..255.
func decodeBitSet(v json.RawMessage) ([]byte, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return nil, nil
	}
	if v[0] == '"' {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, fmt.Errorf("b: %v", err)
		}
		if base64.StdEncoding.DecodedLen(len(s)) > maxBitSetBytes+3 {
			return nil, fmt.Errorf("b: bit set of %d base64 bytes is too long", len(s))
		}
		bs, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("b: %v", err)
		}
		return bs, nil
	}
	var nums []int
	if err := json.Unmarshal(v, &nums); err != nil {
		return nil, fmt.Errorf("b: neither base64 nor a byte array")
	}
	if len(nums) > maxBitSetBytes {
		return nil, fmt.Errorf("b: bit set of %d bytes is too long", len(nums))
	}
	out := make([]byte, len(nums))
	for i, n := range nums {
		if n < -128 || n > 255 {
			return nil, fmt.Errorf("b: byte %d out of range", n)
		}
		out[i] = byte(n)
	}
	return out, nil
}

// Offsets lists the acked offsets, ascending.
func (a BatchAck) Offsets() []int64 {
	var out []int64
	for i, b := range a.Bits {
		for j := 0; j < 8; j++ {
			if b&(1<<j) != 0 {
				out = append(out, a.StartOffset+int64(i*8+j))
			}
		}
	}
	return out
}

// EncodeBitSet is java.util.BitSet.toByteArray of the offsets relative to
// start (for tests and tools); offsets below start are ignored.
func EncodeBitSet(start int64, offsets []int64) []byte {
	var out []byte
	for _, o := range offsets {
		if o < start {
			continue
		}
		i := o - start
		for int64(len(out)) <= i/8 {
			out = append(out, 0)
		}
		out[i/8] |= 1 << (i % 8)
	}
	return out
}
