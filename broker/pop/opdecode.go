package pop

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// decodeOp reads a journal record's body. The records slaves and recovery
// read most, acks, are taken apart by hand when they are exactly what
// encodeOp writes for them (encoding/json's reflection was a quarter of a
// slave's CPU applying its master's journal under pop load); anything else,
// or anything the fast path is unsure of, goes through encoding/json.
// FuzzDecodeOp holds the two to the same answer.
func decodeOp(body []byte) (*op, error) {
	if o, ok := decodeAckOp(body); ok {
		return o, nil
	}
	var o op
	if err := json.Unmarshal(body, &o); err != nil {
		return nil, err
	}
	return &o, nil
}

// decodeAckOp parses the ack and acks records of encodeOp's hand-written
// forms; ok is false for any other input.
func decodeAckOp(b []byte) (*op, bool) {
	c := cursor{b: b, ok: true}
	switch {
	case bytes.HasPrefix(b, []byte(`{"k":"ack","id":`)):
		c.i = len(`{"k":"ack","id":`)
		id := c.ckID()
		o := &op{Kind: opAck, ID: &id}
		if c.peek(`,"o":`) {
			o.Offsets = c.ints()
		}
		c.lit(`}`)
		return o, c.done()
	case bytes.HasPrefix(b, []byte(`{"k":"acks"`)):
		c.i = len(`{"k":"acks"`)
		o := &op{Kind: opAcks}
		if c.peek(`,"a":[`) {
			o.Acks = []ackEntry{}
			for first := true; c.ok && !c.peek(`]`); first = false {
				if !first {
					c.lit(`,`)
				}
				c.lit(`{"id":`)
				id := c.ckID()
				c.lit(`,"o":`)
				offs := c.ints()
				c.lit(`}`)
				o.Acks = append(o.Acks, ackEntry{ID: id, Offsets: offs})
			}
		}
		c.lit(`}`)
		return o, c.done()
	}
	return nil, false
}

// cursor walks JSON of a known shape; any surprise clears ok.
type cursor struct {
	b  []byte
	i  int
	ok bool
}

func (c *cursor) done() bool { return c.ok && c.i == len(c.b) }

// lit consumes s.
func (c *cursor) lit(s string) {
	if c.ok && bytes.HasPrefix(c.b[c.i:], []byte(s)) {
		c.i += len(s)
		return
	}
	c.ok = false
}

// peek consumes s if it comes next.
func (c *cursor) peek(s string) bool {
	if c.ok && bytes.HasPrefix(c.b[c.i:], []byte(s)) {
		c.i += len(s)
		return true
	}
	return false
}

// str reads a string of plain characters (no escapes).
func (c *cursor) str() string {
	c.lit(`"`)
	if !c.ok {
		return ""
	}
	start := c.i
	for c.i < len(c.b) {
		switch ch := c.b[c.i]; {
		case ch == '"':
			s := string(c.b[start:c.i])
			c.i++
			return s
		case ch < 0x20 || ch >= 0x7f || ch == '\\':
			c.ok = false
			return ""
		}
		c.i++
	}
	c.ok = false
	return ""
}

// num reads an integer in JSON's form (no leading zeros, no fraction or
// exponent) that fits bits.
func (c *cursor) num(bits int) int64 {
	if !c.ok {
		return 0
	}
	start := c.i
	if c.i < len(c.b) && c.b[c.i] == '-' {
		c.i++
	}
	digits := c.i
	for c.i < len(c.b) && c.b[c.i] >= '0' && c.b[c.i] <= '9' {
		c.i++
	}
	if c.i == digits || (c.b[digits] == '0' && c.i-digits > 1) {
		c.ok = false
		return 0
	}
	if c.i < len(c.b) && (c.b[c.i] == '.' || c.b[c.i] == 'e' || c.b[c.i] == 'E') {
		c.ok = false
		return 0
	}
	v, err := strconv.ParseInt(string(c.b[start:c.i]), 10, bits)
	if err != nil {
		c.ok = false
		return 0
	}
	return v
}

// ints reads null or an array of integers.
func (c *cursor) ints() []int64 {
	if c.peek(`null`) {
		return nil
	}
	c.lit(`[`)
	out := []int64{}
	for first := true; c.ok && !c.peek(`]`); first = false {
		if !first {
			c.lit(`,`)
		}
		out = append(out, c.num(64))
	}
	return out
}

func (c *cursor) ckID() ckID {
	var id ckID
	c.lit(`{"c":`)
	id.Group = c.str()
	c.lit(`,"t":`)
	id.Topic = c.str()
	c.lit(`,"q":`)
	id.QueueID = int32(c.num(32))
	c.lit(`,"so":`)
	id.Start = c.num(64)
	c.lit(`,"pt":`)
	id.PopTime = c.num(64)
	c.lit(`}`)
	return id
}
