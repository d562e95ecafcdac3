// Package index finds messages by business key (the KEYS property) and by
// client message id (UNIQ_KEY) within a time range: QUERY_MESSAGE and the
// queryMsgByKey / queryMsgByUniqueKey admin commands.
//
// Entries are Pebble keys with empty values, written by the dispatcher in
// the same batch as the consume-queue entries:
//
//	'i' | topic | 0x00 | kind | key | 0x00 | storeTime u64 | phyOffset u64
//
// kind is 'k' (KEYS) or 'u' (UNIQ_KEY). Keys are ordered by store time
// within one (topic, kind, key), so a time range is one bounded scan.
package index

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/store/kv"
)

// Kinds of indexed keys.
const (
	KindKey     byte = 'k'
	KindUniqKey byte = 'u'
)

// Hit is one indexed message.
type Hit struct {
	StoreTime int64
	PhyOffset int64
}

func prefix(topic string, kind byte, key string) []byte {
	b := make([]byte, 0, len(topic)+len(key)+4+16)
	b = append(b, kv.PrefixIndex)
	b = append(b, topic...)
	b = append(b, 0, kind)
	b = append(b, key...)
	return append(b, 0)
}

// Add writes one index entry into a batch. Keys containing 0x00 are skipped
// (they cannot be delimited and no client produces them).
func Add(b *pebble.Batch, topic string, kind byte, key string, storeTime, phyOffset int64) error {
	for i := 0; i < len(key); i++ {
		if key[i] == 0 {
			return nil
		}
	}
	k := prefix(topic, kind, key)
	k = binary.BigEndian.AppendUint64(k, uint64(storeTime))
	k = binary.BigEndian.AppendUint64(k, uint64(phyOffset))
	if err := b.Set(k, nil, nil); err != nil {
		return fmt.Errorf("index: add: %w", err)
	}
	return nil
}

// Query returns up to max hits for (topic, kind, key) stored within
// [begin, end] (ms), newest first, as RocketMQ returns the latest matches.
func Query(db *pebble.DB, topic string, kind byte, key string, begin, end int64, max int) ([]Hit, error) {
	if max <= 0 || end < begin {
		return nil, nil
	}
	p := prefix(topic, kind, key)
	lo := binary.BigEndian.AppendUint64(append([]byte(nil), p...), uint64(max64(begin, 0)))
	hi := binary.BigEndian.AppendUint64(append([]byte(nil), p...), uint64(end)+1)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, fmt.Errorf("index: query: %w", err)
	}
	defer it.Close()
	var hits []Hit
	for it.Last(); it.Valid() && len(hits) < max; it.Prev() {
		k := it.Key()
		if len(k) != len(p)+16 {
			continue
		}
		hits = append(hits, Hit{StoreTime: int64(binary.BigEndian.Uint64(k[len(p):])), PhyOffset: int64(binary.BigEndian.Uint64(k[len(p)+8:]))})
	}
	return hits, it.Error()
}

// Retention: entries are not deleted with the CommitLog files they point
// into; the caller drops hits whose phyOffset is below the CommitLog's min
// offset. DeleteTopic removes a deleted topic's entries.

// DeleteTopic removes every index entry of a topic.
func DeleteTopic(b *pebble.Batch, topic string) error {
	p := make([]byte, 0, len(topic)+2)
	p = append(p, kv.PrefixIndex)
	p = append(p, topic...)
	p = append(p, 0)
	return b.DeleteRange(p, kv.PrefixEnd(p), nil)
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
