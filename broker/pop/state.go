package pop

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/cockroachdb/pebble/v2"
)

// Journal operations. Every change of pop state is one op, appended to the
// journal (a queue of the revive topic in the CommitLog) and then applied
// to Pebble in one batch together with the journal position: see the
// package doc for why this survives kill -9.
const (
	opCheckpoint  = "ck"   // a pop created a checkpoint
	opAck         = "ack"  // offsets of a checkpoint were acked
	opAcks        = "acks" // acks of several checkpoints (or several acks of one), in order
	opChange      = "chg"  // change invisible time: ack the old offset, new checkpoint
	opRevive      = "rv"   // offsets were re-stored in the retry topic or DLQ
	opOrderPop    = "opop" // an orderly pop
	opOrderAck    = "oack" // an orderly ack
	opOrderChange = "ochg" // an orderly change of invisible time
)

// op is one journal record (JSON in the record body).
type op struct {
	Kind string `json:"k"`
	// Seq orders pop-offset shadows written through different journal
	// queues (a later pop of a queue wins, even replayed first).
	Seq     int64       `json:"s,omitempty"`
	CK      *checkpoint `json:"ck,omitempty"` // ck, chg (the new one)
	ID      *ckID       `json:"id,omitempty"` // ack, chg, rv
	Offsets []int64     `json:"o,omitempty"`  // ack: acked; chg: [offset]; rv: settled
	Next    int64       `json:"n,omitempty"`  // ck: the queue's pop offset after this pop
	Due     int64       `json:"due,omitempty"`
	Order   *orderOp    `json:"ord,omitempty"`
	Acks    []ackEntry  `json:"a,omitempty"` // acks
}

// ackEntry is one ack of an acks op: offsets of one checkpoint.
type ackEntry struct {
	ID      ckID    `json:"id"`
	Offsets []int64 `json:"o"`
}

// orderOp carries the orderly operations.
type orderOp struct {
	Group     string  `json:"c"`
	Topic     string  `json:"t"`
	QueueID   int32   `json:"q"`
	AttemptID string  `json:"a,omitempty"`
	PopTime   int64   `json:"pt"`
	Invisible int64   `json:"it,omitempty"`
	Offsets   []int64 `json:"o,omitempty"` // opop: popped offsets
	Start     int64   `json:"so,omitempty"`
	Offset    int64   `json:"off,omitempty"` // oack, ochg
	At        int64   `json:"at,omitempty"`  // opop: now; ochg: next visible time
}

// journalTag is the TAGS of a journal record (Java writes "ck", "ack",
// "bAck" into the revive topic; ours say what the op is).
func journalTag(kind string) string { return "pop_" + kind }

// reader is the read side of Pebble (the DB, or an indexed batch while
// replaying).
type reader interface {
	Get(key []byte) ([]byte, io.Closer, error)
}

func getValue(r reader, key []byte) ([]byte, bool, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := append([]byte(nil), v...)
	_ = closer.Close()
	return out, true, nil
}

func loadCK(r reader, id ckID) (*checkpoint, error) {
	v, ok, err := getValue(r, ckKey(id))
	if err != nil || !ok {
		return nil, err
	}
	return decodeCK(id, v)
}

func loadOrder(r reader, group, topic string, qid int32) (*orderInfo, error) {
	v, ok, err := getValue(r, orderKey(group, topic, qid))
	if err != nil || !ok {
		return nil, err
	}
	return decodeOrder(v)
}

// shadow is the pop offset this package last committed for a queue, with
// the sequence of the op that set it.
type shadow struct {
	seq, offset int64
}

func loadShadow(r reader, group, topic string, qid int32) (shadow, bool, error) {
	v, ok, err := getValue(r, shadowKey(group, topic, qid))
	if err != nil || !ok {
		return shadow{}, false, err
	}
	if len(v) != 16 {
		return shadow{}, false, errBadCK
	}
	s, _ := readU64(v[:8])
	o, _ := readU64(v[8:])
	return shadow{s, o}, true, nil
}

func setShadow(r reader, b *pebble.Batch, group, topic string, qid int32, seq, offset int64) error {
	cur, ok, err := loadShadow(r, group, topic, qid)
	if err != nil {
		return err
	}
	if ok && cur.seq > seq {
		return nil
	}
	return b.Set(shadowKey(group, topic, qid), append(u64(seq), u64(offset)...), nil)
}

// ckCache holds checkpoints of one journal queue as Pebble has them: an
// ack, change or revive under the queue's lock finds its checkpoint here
// instead of reading Pebble. Only ops applied live fill it (a checkpoint
// whose ReviveQid is another queue's is never kept), at most limit
// entries; a miss reads Pebble. The journal queue's lock guards it.
type ckCache struct {
	m     map[ckID]*checkpoint
	limit int
}

// ckCacheLimit bounds each journal queue's cache: an ack usually comes
// within seconds of its pop, so the recent checkpoints are the ones asked
// for (a checkpoint is a few hundred bytes).
const ckCacheLimit = 2048

func (c *ckCache) set(id ckID, ck *checkpoint) {
	if c.m == nil {
		c.m = make(map[ckID]*checkpoint)
	}
	if _, ok := c.m[id]; !ok && len(c.m) >= c.limit {
		for k := range c.m { // an arbitrary victim: map order is random
			delete(c.m, k)
			break
		}
	}
	c.m[id] = ck
}

// ckView reads checkpoints for one op (or one batch of ops) and stages
// what it writes: reads see the staged writes first, then the cache (when
// there is one: live ops), then Pebble. publish moves the staged
// checkpoints into the cache once the Pebble batch has committed.
// Checkpoints handed out are copies; cached ones are never changed in
// place.
type ckView struct {
	r      reader
	q      int32    // the journal queue the cache belongs to
	cache  *ckCache // nil while replaying
	staged map[ckID]*checkpoint
}

func (v *ckView) load(id ckID) (*checkpoint, error) {
	if c, ok := v.staged[id]; ok {
		if c == nil {
			return nil, nil
		}
		cp := *c
		return &cp, nil
	}
	if v.cache != nil {
		if c, ok := v.cache.m[id]; ok {
			cp := *c
			return &cp, nil
		}
	}
	c, err := loadCK(v.r, id)
	if err != nil || c == nil {
		return nil, err
	}
	if v.cache != nil && c.ReviveQid == v.q {
		cp := *c
		v.cache.set(id, &cp)
	}
	return c, nil
}

func (v *ckView) stage(id ckID, c *checkpoint) {
	if v.staged == nil {
		v.staged = make(map[ckID]*checkpoint, 2)
	}
	if c != nil {
		cp := *c
		c = &cp
	}
	v.staged[id] = c
}

// publish puts the staged checkpoints into the cache (deleted ones out).
func (v *ckView) publish() {
	if v.cache == nil {
		return
	}
	for id, c := range v.staged {
		switch {
		case c == nil || c.ReviveQid != v.q:
			delete(v.cache.m, id)
		default:
			v.cache.set(id, c)
		}
	}
	v.staged = nil
}

// drop forgets what was staged and clears the cache: after a failed
// Pebble commit the cache may no longer match Pebble.
func (v *ckView) drop() {
	v.staged = nil
	if v.cache != nil {
		clear(v.cache.m)
	}
}

func (v *ckView) put(b *pebble.Batch, c *checkpoint) error {
	if err := b.Set(ckKey(c.ckID), encodeCK(c), nil); err != nil {
		return err
	}
	if err := b.Set(dueKey(c.Due, c.ckID), nil, nil); err != nil {
		return err
	}
	v.stage(c.ckID, c)
	return nil
}

func (v *ckView) del(b *pebble.Batch, c *checkpoint) error {
	if err := b.Delete(ckKey(c.ckID), nil); err != nil {
		return err
	}
	if err := b.Delete(dueKey(c.Due, c.ckID), nil); err != nil {
		return err
	}
	v.stage(c.ckID, nil)
	return nil
}

// apply writes the effect of o into b, reading checkpoints through v and
// the rest of the current state from v.r. It is deterministic: replaying
// the journal reproduces the live state.
func apply(v *ckView, b *pebble.Batch, o *op) error {
	r := v.r
	switch o.Kind {
	case opCheckpoint:
		if o.CK == nil {
			return errors.New("ck op without checkpoint")
		}
		if err := o.CK.validate(); err != nil {
			return err
		}
		if err := v.put(b, o.CK); err != nil {
			return err
		}
		return setShadow(r, b, o.CK.Group, o.CK.Topic, o.CK.QueueID, o.Seq, o.Next)
	case opAck:
		if o.ID == nil {
			return errors.New("ack op without checkpoint id")
		}
		return ackOffsets(v, b, *o.ID, o.Offsets)
	case opAcks:
		for _, a := range o.Acks {
			if err := ackOffsets(v, b, a.ID, a.Offsets); err != nil {
				return err
			}
		}
		return nil
	case opChange:
		if o.ID == nil || o.CK == nil {
			return errors.New("chg op without checkpoint")
		}
		if err := o.CK.validate(); err != nil {
			return err
		}
		if err := ackOffsets(v, b, *o.ID, o.Offsets); err != nil {
			return err
		}
		return v.put(b, o.CK)
	case opRevive:
		if o.ID == nil {
			return errors.New("rv op without checkpoint id")
		}
		return reviveOffsets(v, b, *o.ID, o.Offsets, o.Due)
	case opOrderPop, opOrderAck, opOrderChange:
		if o.Order == nil {
			return fmt.Errorf("%s op without order data", o.Kind)
		}
		return applyOrder(r, b, o)
	}
	return fmt.Errorf("unknown journal op %q", o.Kind)
}

func ackOffsets(v *ckView, b *pebble.Batch, id ckID, offsets []int64) error {
	c, err := v.load(id)
	if err != nil || c == nil {
		return err // acked after revive or twice: nothing left to do
	}
	for _, off := range offsets {
		if i := c.index(off); i >= 0 && c.Revived&(1<<i) == 0 {
			c.Acked |= 1 << i
		}
	}
	if c.settled() {
		return v.del(b, c)
	}
	if err := b.Set(ckKey(id), encodeCK(c), nil); err != nil {
		return err
	}
	v.stage(id, c)
	return nil
}

func reviveOffsets(v *ckView, b *pebble.Batch, id ckID, offsets []int64, due int64) error {
	c, err := v.load(id)
	if err != nil || c == nil {
		return err
	}
	for _, off := range offsets {
		if i := c.index(off); i >= 0 && c.Acked&(1<<i) == 0 {
			c.Revived |= 1 << i
		}
	}
	if c.settled() {
		return v.del(b, c)
	}
	// Some offsets could not be revived yet: look again at due.
	if err := b.Delete(dueKey(c.Due, id), nil); err != nil {
		return err
	}
	c.Due = due
	c.Tries++
	return v.put(b, c)
}

func applyOrder(r reader, b *pebble.Batch, o *op) error {
	d := o.Order
	cur, err := loadOrder(r, d.Group, d.Topic, d.QueueID)
	if err != nil {
		return err
	}
	key := orderKey(d.Group, d.Topic, d.QueueID)
	switch o.Kind {
	case opOrderPop:
		n := newOrderInfo(cur, d.AttemptID, d.PopTime, d.Invisible, d.Offsets, d.At)
		if err := b.Set(key, encodeOrder(n), nil); err != nil {
			return err
		}
		return setShadow(r, b, d.Group, d.Topic, d.QueueID, o.Seq, d.Start)
	case opOrderAck:
		n, next := cur.commitAndNext(d.Offset, d.PopTime)
		if next < 0 {
			return nil
		}
		if err := b.Set(key, encodeOrder(n), nil); err != nil {
			return err
		}
		return setShadow(r, b, d.Group, d.Topic, d.QueueID, o.Seq, next)
	default: // opOrderChange
		n, ok := cur.withNextVisible(d.Offset, d.PopTime, d.At)
		if !ok {
			return nil
		}
		return b.Set(key, encodeOrder(n), nil)
	}
}

// encodeOp is json.Marshal(o), written by hand for the ack ops (the most
// frequent record: reflection was a third of an ack record's cost).
func encodeOp(o *op) ([]byte, error) {
	switch {
	case o.Kind == opAck && o.ID != nil && o.Seq == 0 && o.CK == nil && o.Next == 0 && o.Due == 0 && o.Order == nil && o.Acks == nil:
		b := make([]byte, 0, 128)
		b = append(b, `{"k":"ack","id":`...)
		b = appendCkID(b, *o.ID)
		if len(o.Offsets) > 0 {
			b = append(b, `,"o":`...)
			b = appendInts(b, o.Offsets)
		}
		return append(b, '}'), nil
	case o.Kind == opAcks && o.ID == nil && o.Seq == 0 && o.CK == nil && o.Offsets == nil && o.Next == 0 && o.Due == 0 && o.Order == nil:
		b := make([]byte, 0, 32+96*len(o.Acks))
		b = append(b, `{"k":"acks"`...)
		if len(o.Acks) > 0 {
			b = append(b, `,"a":[`...)
			for i, a := range o.Acks {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"id":`...)
				b = appendCkID(b, a.ID)
				b = append(b, `,"o":`...)
				b = appendInts(b, a.Offsets)
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		return append(b, '}'), nil
	}
	return json.Marshal(o)
}

func appendCkID(b []byte, id ckID) []byte {
	b = append(b, `{"c":`...)
	b = appendJSONString(b, id.Group)
	b = append(b, `,"t":`...)
	b = appendJSONString(b, id.Topic)
	b = append(b, `,"q":`...)
	b = strconv.AppendInt(b, int64(id.QueueID), 10)
	b = append(b, `,"so":`...)
	b = strconv.AppendInt(b, id.Start, 10)
	b = append(b, `,"pt":`...)
	b = strconv.AppendInt(b, id.PopTime, 10)
	return append(b, '}')
}

// appendInts appends a JSON array (null for nil, as encoding/json).
func appendInts(b []byte, v []int64) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, x, 10)
	}
	return append(b, ']')
}

// appendJSONString appends s as encoding/json writes it: names of plain
// characters as they are, anything else through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
