package consumequeue

import (
	"hash/maphash"
	"math"
	"unsafe"
)

// table is one shard's queue table: QueueID → QueueState without a Go map
// and without pointers, so that a million lite topics cost the garbage
// collector nothing to scan and about 70 bytes each instead of ≈ 170 (a
// map slot of 64 bytes at the map's load factor plus the topic string).
//
//   - recs holds the queues, densely, in no particular order; deleting one
//     moves the last into its place.
//   - names is an arena of the topic names: a rec points at its name by
//     offset and length. Bytes once written to it are never changed (a
//     name that goes leaves garbage, which compact drops by copying the
//     live names to a new arena), so the strings handed out by name view
//     the arena without copying and stay valid for as long as they are
//     held.
//   - slots is an open-addressing index (linear probing, length a power of
//     two, at most 3/4 full): the low 32 bits of a slot are rec index + 1
//     (0: an empty slot), the high 32 bits the queue's hash, which picks
//     the home slot and spares comparing names of other queues and
//     hashing them again to grow. Deletion shifts the following entries
//     back, so there are no tombstones.
//
// A table is not safe for concurrent use: the shard's lock guards it.
type table struct {
	seed    maphash.Seed
	recs    []rec
	names   []byte
	garbage int // bytes of names that no rec points at any more
	slots   []uint64
}

// rec is one queue: its state and where its name is (48 bytes).
type rec struct {
	min, max, lastPhy, lastStore int64
	sweep                        uint32
	off, n                       uint32 // topic name: names[off : off+n]
	qid                          int32
}

func (r *rec) state() QueueState {
	return QueueState{Min: r.min, Max: r.max, LastPhyOffset: r.lastPhy, LastStoreTime: r.lastStore, sweep: r.sweep}
}

func (r *rec) setState(st QueueState) {
	r.min, r.max, r.lastPhy, r.lastStore, r.sweep = st.Min, st.Max, st.LastPhyOffset, st.LastStoreTime, st.sweep
}

func newTable(seed maphash.Seed) table { return table{seed: seed} }

// Len is the number of queues.
func (t *table) Len() int { return len(t.recs) }

// name is rec i's topic, a view of the arena (see table).
func (t *table) name(i int) string {
	r := &t.recs[i]
	if r.n == 0 {
		return ""
	}
	return unsafe.String(&t.names[r.off], int(r.n))
}

func (t *table) id(i int) QueueID { return QueueID{Topic: t.name(i), QueueID: t.recs[i].qid} }

// hash is a queue's 32-bit hash.
func (t *table) hash(topic string, qid int32) uint32 {
	h := maphash.String(t.seed, topic) ^ (uint64(uint32(qid)) * 0x9e3779b97f4a7c15)
	return uint32(h ^ h>>32)
}

// slotRec is the rec index of a used slot.
func slotRec(v uint64) int { return int(uint32(v)) - 1 }

// find returns the slot holding id, or the empty slot where it would go,
// and whether it is there, and id's hash.
func (t *table) find(id QueueID) (slot int, ok bool, h uint32) {
	h = t.hash(id.Topic, id.QueueID)
	if len(t.slots) == 0 {
		return -1, false, h
	}
	mask := len(t.slots) - 1
	for s := int(h) & mask; ; s = (s + 1) & mask {
		v := t.slots[s]
		if v == 0 {
			return s, false, h
		}
		if uint32(v>>32) != h {
			continue
		}
		i := slotRec(v)
		r := &t.recs[i]
		if r.qid == id.QueueID && int(r.n) == len(id.Topic) && t.name(i) == id.Topic {
			return s, true, h
		}
	}
}

// Get returns a queue's state.
func (t *table) Get(id QueueID) (QueueState, bool) {
	s, ok, _ := t.find(id)
	if !ok {
		return QueueState{}, false
	}
	return t.recs[slotRec(t.slots[s])].state(), true
}

// Set stores a queue's state, adding the queue when it is new.
func (t *table) Set(id QueueID, st QueueState) {
	s, ok, h := t.find(id)
	if ok {
		t.recs[slotRec(t.slots[s])].setState(st)
		return
	}
	if 4*(len(t.recs)+1) > 3*len(t.slots) {
		t.grow()
		s, _, _ = t.find(id)
	}
	if len(id.Topic) > math.MaxUint32 || len(t.names)+len(id.Topic) > math.MaxUint32 {
		t.compact()
		if len(t.names)+len(id.Topic) > math.MaxUint32 {
			panic("consumequeue: queue names of one shard exceed 4 GiB")
		}
	}
	r := rec{off: uint32(len(t.names)), n: uint32(len(id.Topic)), qid: id.QueueID}
	r.setState(st)
	t.names = append(t.names, id.Topic...)
	t.recs = append(t.recs, r)
	t.slots[s] = uint64(h)<<32 | uint64(len(t.recs))
}

// Delete removes a queue; it reports whether it was there.
func (t *table) Delete(id QueueID) bool {
	s, ok, _ := t.find(id)
	if !ok {
		return false
	}
	t.deleteAt(s)
	return true
}

// DeleteRec removes rec i (whose slot is looked up). Deleting while walking
// recs from the last to the first is safe: the rec moved into i was
// visited already.
func (t *table) DeleteRec(i int) {
	s, ok, _ := t.find(t.id(i))
	if !ok {
		panic("consumequeue: table rec without a slot")
	}
	t.deleteAt(s)
}

func (t *table) deleteAt(s int) {
	i := slotRec(t.slots[s])
	t.garbage += int(t.recs[i].n)
	// Backward-shift deletion: move later entries of the probe run into
	// the hole when their home slot is not between the hole and them.
	mask := len(t.slots) - 1
	hole := s
	for j := (s + 1) & mask; ; j = (j + 1) & mask {
		v := t.slots[j]
		if v == 0 {
			break
		}
		home := int(v>>32) & mask
		// v may move to hole unless home lies cyclically in (hole, j].
		if (j-home)&mask >= (j-hole)&mask {
			t.slots[hole] = v
			hole = j
		}
	}
	t.slots[hole] = 0
	// Move the last rec into i and repoint its slot.
	last := len(t.recs) - 1
	if i != last {
		ls, ok, _ := t.find(t.id(last))
		if !ok {
			panic("consumequeue: table rec without a slot")
		}
		t.recs[i] = t.recs[last]
		t.slots[ls] = t.slots[ls]&^0xffffffff | uint64(i+1)
	}
	t.recs[last] = rec{}
	t.recs = t.recs[:last]
	if len(t.recs) == 0 {
		*t = table{seed: t.seed}
		return
	}
	if t.garbage > 4096 && t.garbage > len(t.names)/2 {
		t.compact()
	}
	if len(t.slots) > 16 && 8*len(t.recs) < len(t.slots) {
		t.rehash(len(t.slots) / 2)
	}
}

func (t *table) grow() {
	n := max(16, 2*len(t.slots))
	t.rehash(n)
}

// rehash rebuilds the index with n slots (a power of two).
func (t *table) rehash(n int) {
	old := t.slots
	t.slots = make([]uint64, n)
	mask := n - 1
	for _, v := range old {
		if v == 0 {
			continue
		}
		s := int(v>>32) & mask
		for t.slots[s] != 0 {
			s = (s + 1) & mask
		}
		t.slots[s] = v
	}
	// Give back the slack of a table that shrank a lot.
	if cap(t.recs) > 2*len(t.recs)+64 {
		t.recs = append(make([]rec, 0, len(t.recs)+len(t.recs)/4), t.recs...)
	}
}

// compact copies the live names to a new arena (strings handed out keep
// the old one alive, unchanged).
func (t *table) compact() {
	live := len(t.names) - t.garbage
	names := make([]byte, 0, live+live/8)
	for i := range t.recs {
		r := &t.recs[i]
		off := len(names)
		names = append(names, t.names[r.off:r.off+r.n]...)
		r.off = uint32(off)
	}
	t.names, t.garbage = names, 0
}
