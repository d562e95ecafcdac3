package consumequeue

import (
	"encoding/binary"

	"github.com/rmqgo/rmq/broker/store/kv"
)

// Key layout (all integers big-endian, so byte order = numeric order for
// non-negative values):
//
//	run:   'q' | topic | 0x00 | queueId u32 | last offset u64 → k × entryValue
//	meta:  'o' | topic | 0x00 | queueId u32 | 'x'             → next offset u64 | last phy offset u64 | last store time u64
//	meta:  'o' | topic | 0x00 | queueId u32 | 'n'             → min offset u64
//	checkpoint: 'k' | "cq.dispatched"                         → phy offset u64
//
// A run holds the entries of k ≥ 1 consecutive queue offsets, last-k+1 …
// last, in offset order; a dispatch round writes a queue's entries of the
// round as runs of up to maxRun (one Pebble key instead of one per
// message: Pebble's cost is per key, in memtable inserts, flushes and
// compactions). Keyed by the last offset, a seek to the first key ≥ an
// offset lands on the run holding it, runs below a queue's min lie wholly
// below it (retention's range delete takes whole runs) and an LMQ's max is
// its last key + 1, as with one entry per key, which is what stores
// written before runs hold (runs of one). A queue's runs never overlap.
//
// Topic names never contain 0x00 (the name rules allow [%|a-zA-Z0-9_-]), so
// the separator keeps every queue's keys contiguous and a topic's queues
// contiguous: deleting a queue or a topic is one range delete.

const (
	metaMax = 'x'
	metaMin = 'n'
)

var checkpointKey = []byte{kv.PrefixCheckpoint, 'c', 'q', '.', 'd', 'i', 's', 'p', 'a', 't', 'c', 'h', 'e', 'd'}

func queuePrefix(prefix byte, topic string, qid int32) []byte {
	return appendQueuePrefix(make([]byte, 0, len(topic)+16), prefix, topic, qid)
}

func appendQueuePrefix(dst []byte, prefix byte, topic string, qid int32) []byte {
	dst = append(dst, prefix)
	dst = append(dst, topic...)
	dst = append(dst, 0)
	return binary.BigEndian.AppendUint32(dst, uint32(qid))
}

func entryKey(topic string, qid int32, offset int64) []byte {
	return binary.BigEndian.AppendUint64(queuePrefix(kv.PrefixConsumeQueue, topic, qid), uint64(offset))
}

func metaKey(topic string, qid int32, kind byte) []byte {
	return append(queuePrefix(kv.PrefixQueueMeta, topic, qid), kind)
}

func topicPrefix(prefix byte, topic string) []byte {
	k := make([]byte, 0, len(topic)+2)
	k = append(k, prefix)
	k = append(k, topic...)
	return append(k, 0)
}

// parseQueueKey splits a key made by queuePrefix(prefix, ...) followed by
// tail more bytes, returned as rest; ok is false for malformed keys.
func parseQueueKey(k []byte, prefix byte, tail int) (topic string, qid int32, rest []byte, ok bool) {
	if len(k) < 1+1+4+tail || k[0] != prefix {
		return "", 0, nil, false
	}
	sep := len(k) - tail - 4 - 1
	if k[sep] != 0 {
		return "", 0, nil, false
	}
	return string(k[1:sep]), int32(binary.BigEndian.Uint32(k[sep+1:])), k[sep+5:], true
}

// parseEntryKey splits an entry key; ok is false for malformed keys.
func parseEntryKey(k []byte) (topic string, qid int32, offset int64, ok bool) {
	topic, qid, rest, ok := parseQueueKey(k, kv.PrefixConsumeQueue, 8)
	if !ok {
		return "", 0, 0, false
	}
	return topic, qid, int64(binary.BigEndian.Uint64(rest)), true
}

// parseMetaKey splits a meta key; ok is false for malformed keys.
func parseMetaKey(k []byte) (topic string, qid int32, kind byte, ok bool) {
	topic, qid, rest, ok := parseQueueKey(k, kv.PrefixQueueMeta, 1)
	if !ok {
		return "", 0, 0, false
	}
	return topic, qid, rest[0], true
}

// Entry is one consume-queue entry: where a message sits in the CommitLog.
type Entry struct {
	Offset          int64 // queue offset of this entry
	CommitLogOffset int64
	Size            int32
	TagsCode        int64
	StoreTimestamp  int64
}

const entryValueLen = 8 + 4 + 8 + 8

// maxRun bounds a run: 128 entries are 3.5 KiB, under Pebble's 4 KiB data
// block, so a read of one entry reads no more than before.
const maxRun = 128

// runFirst is the first offset of the run keyed last with value v; ok is
// false for a malformed value.
func runFirst(last int64, v []byte) (int64, bool) {
	if len(v) == 0 || len(v)%entryValueLen != 0 {
		return 0, false
	}
	return last - int64(len(v)/entryValueLen) + 1, true
}

// runEntry decodes the entry at offset off of the run starting at first
// (first ≤ off ≤ last).
func runEntry(first, off int64, v []byte) Entry {
	i := int(off-first) * entryValueLen
	e, _ := decodeEntry(off, v[i:i+entryValueLen])
	return e
}

// putEntry writes e's value into v (entryValueLen bytes).
func putEntry(v []byte, e Entry) {
	binary.BigEndian.PutUint64(v[0:], uint64(e.CommitLogOffset))
	binary.BigEndian.PutUint32(v[8:], uint32(e.Size))
	binary.BigEndian.PutUint64(v[12:], uint64(e.TagsCode))
	binary.BigEndian.PutUint64(v[20:], uint64(e.StoreTimestamp))
}

func decodeEntry(offset int64, v []byte) (Entry, bool) {
	if len(v) != entryValueLen {
		return Entry{}, false
	}
	return Entry{
		Offset:          offset,
		CommitLogOffset: int64(binary.BigEndian.Uint64(v[0:])),
		Size:            int32(binary.BigEndian.Uint32(v[8:])),
		TagsCode:        int64(binary.BigEndian.Uint64(v[12:])),
		StoreTimestamp:  int64(binary.BigEndian.Uint64(v[20:])),
	}, true
}
