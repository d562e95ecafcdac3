package pop

import (
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// Journal operations. Every change of pop state is one op, appended to the
// journal (a queue of the revive topic in the CommitLog) and then applied
// to Pebble in one batch together with the journal position: see the
// package doc for why this survives kill -9.
const (
	opCheckpoint  = "ck"   // a pop created a checkpoint
	opAck         = "ack"  // offsets of a checkpoint were acked
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

func putCK(b *pebble.Batch, c *checkpoint) error {
	if err := b.Set(ckKey(c.ckID), encodeCK(c), nil); err != nil {
		return err
	}
	return b.Set(dueKey(c.Due, c.ckID), nil, nil)
}

func deleteCK(b *pebble.Batch, c *checkpoint) error {
	if err := b.Delete(ckKey(c.ckID), nil); err != nil {
		return err
	}
	return b.Delete(dueKey(c.Due, c.ckID), nil)
}

// apply writes the effect of o into b, reading the current state from r
// (which must see b's earlier writes when several ops share a batch). It
// is deterministic: replaying the journal reproduces the live state.
func apply(r reader, b *pebble.Batch, o *op) error {
	switch o.Kind {
	case opCheckpoint:
		if o.CK == nil {
			return errors.New("ck op without checkpoint")
		}
		if err := o.CK.validate(); err != nil {
			return err
		}
		if err := putCK(b, o.CK); err != nil {
			return err
		}
		return setShadow(r, b, o.CK.Group, o.CK.Topic, o.CK.QueueID, o.Seq, o.Next)
	case opAck:
		if o.ID == nil {
			return errors.New("ack op without checkpoint id")
		}
		return ackOffsets(r, b, *o.ID, o.Offsets)
	case opChange:
		if o.ID == nil || o.CK == nil {
			return errors.New("chg op without checkpoint")
		}
		if err := o.CK.validate(); err != nil {
			return err
		}
		if err := ackOffsets(r, b, *o.ID, o.Offsets); err != nil {
			return err
		}
		return putCK(b, o.CK)
	case opRevive:
		if o.ID == nil {
			return errors.New("rv op without checkpoint id")
		}
		return reviveOffsets(r, b, *o.ID, o.Offsets, o.Due)
	case opOrderPop, opOrderAck, opOrderChange:
		if o.Order == nil {
			return fmt.Errorf("%s op without order data", o.Kind)
		}
		return applyOrder(r, b, o)
	}
	return fmt.Errorf("unknown journal op %q", o.Kind)
}

func ackOffsets(r reader, b *pebble.Batch, id ckID, offsets []int64) error {
	c, err := loadCK(r, id)
	if err != nil || c == nil {
		return err // acked after revive or twice: nothing left to do
	}
	for _, off := range offsets {
		if i := c.index(off); i >= 0 && c.Revived&(1<<i) == 0 {
			c.Acked |= 1 << i
		}
	}
	if c.settled() {
		return deleteCK(b, c)
	}
	return b.Set(ckKey(id), encodeCK(c), nil)
}

func reviveOffsets(r reader, b *pebble.Batch, id ckID, offsets []int64, due int64) error {
	c, err := loadCK(r, id)
	if err != nil || c == nil {
		return err
	}
	for _, off := range offsets {
		if i := c.index(off); i >= 0 && c.Acked&(1<<i) == 0 {
			c.Revived |= 1 << i
		}
	}
	if c.settled() {
		return deleteCK(b, c)
	}
	// Some offsets could not be revived yet: look again at due.
	if err := b.Delete(dueKey(c.Due, id), nil); err != nil {
		return err
	}
	c.Due = due
	c.Tries++
	return putCK(b, c)
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
