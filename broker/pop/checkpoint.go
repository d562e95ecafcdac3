package pop

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// maxCkMessages bounds the messages of one checkpoint: a pop returns at
// most 32, and the bit maps are 32 bits wide (as Java's).
const maxCkMessages = 32

// checkpoint is the state of one non-orderly pop of one queue (Java's
// PopCheckPoint plus its ack bit map): which offsets were handed out, until
// when they are invisible, and which were acknowledged or already revived.
// It lives in Pebble until every offset is acked or revived.
type checkpoint struct {
	ckID
	ReviveQid     int32   `json:"rq"`
	InvisibleTime int64   `json:"it"`
	Due           int64   `json:"due"` // ms: when un-acked offsets are revived
	Offsets       []int64 `json:"d"`   // queue offsets of the popped messages, ascending
	Acked         uint32  `json:"bm,omitempty"`
	Revived       uint32  `json:"rv,omitempty"`
	Tries         int32   `json:"rp,omitempty"` // failed revive rounds (backoff)
}

const ckVersion = 1

// index returns i with Offsets[i] == off, or -1.
func (c *checkpoint) index(off int64) int {
	i, ok := slices.BinarySearch(c.Offsets, off)
	if !ok {
		return -1
	}
	return i
}

func (c *checkpoint) all() uint32 {
	if len(c.Offsets) >= 32 {
		return ^uint32(0)
	}
	return uint32(1)<<len(c.Offsets) - 1
}

// settled reports that every offset was acked or revived.
func (c *checkpoint) settled() bool { return (c.Acked|c.Revived)&c.all() == c.all() }

// pending lists the offsets neither acked nor revived.
func (c *checkpoint) pending() []int64 {
	var out []int64
	for i, off := range c.Offsets {
		if (c.Acked|c.Revived)&(1<<i) == 0 {
			out = append(out, off)
		}
	}
	return out
}

// inFlight counts the pending offsets.
func (c *checkpoint) inFlight() int {
	return len(c.Offsets) - bits.OnesCount32((c.Acked|c.Revived)&c.all())
}

func (c *checkpoint) validate() error {
	if n := len(c.Offsets); n == 0 || n > maxCkMessages {
		return fmt.Errorf("checkpoint with %d offsets", n)
	}
	if !slices.IsSorted(c.Offsets) {
		return errors.New("checkpoint offsets not ascending")
	}
	for i := 1; i < len(c.Offsets); i++ {
		if c.Offsets[i] == c.Offsets[i-1] {
			return errors.New("checkpoint offsets repeat")
		}
	}
	return nil
}

// encodeCK writes the Pebble value (the key carries the ckID).
func encodeCK(c *checkpoint) []byte {
	b := make([]byte, 0, 1+4+8+8+1+8*len(c.Offsets)+4+4+4)
	b = append(b, ckVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(c.ReviveQid))
	b = binary.BigEndian.AppendUint64(b, uint64(c.InvisibleTime))
	b = binary.BigEndian.AppendUint64(b, uint64(c.Due))
	b = append(b, byte(len(c.Offsets)))
	for _, o := range c.Offsets {
		b = binary.BigEndian.AppendUint64(b, uint64(o))
	}
	b = binary.BigEndian.AppendUint32(b, c.Acked)
	b = binary.BigEndian.AppendUint32(b, c.Revived)
	return binary.BigEndian.AppendUint32(b, uint32(c.Tries))
}

var errBadCK = errors.New("pop: corrupt checkpoint value")

// decodeCK reads a Pebble value for the checkpoint id.
func decodeCK(id ckID, b []byte) (*checkpoint, error) {
	if len(b) < 1+4+8+8+1 || b[0] != ckVersion {
		return nil, errBadCK
	}
	c := &checkpoint{ckID: id}
	c.ReviveQid = int32(binary.BigEndian.Uint32(b[1:]))
	c.InvisibleTime = int64(binary.BigEndian.Uint64(b[5:]))
	c.Due = int64(binary.BigEndian.Uint64(b[13:]))
	n := int(b[21])
	b = b[22:]
	if n == 0 || n > maxCkMessages || len(b) != 8*n+12 {
		return nil, errBadCK
	}
	c.Offsets = make([]int64, n)
	for i := range c.Offsets {
		c.Offsets[i] = int64(binary.BigEndian.Uint64(b[8*i:]))
	}
	b = b[8*n:]
	c.Acked = binary.BigEndian.Uint32(b)
	c.Revived = binary.BigEndian.Uint32(b[4:])
	c.Tries = int32(binary.BigEndian.Uint32(b[8:]))
	return c, nil
}
