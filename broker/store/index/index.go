// Package index finds messages by business key (the KEYS property) and by
// client message id (UNIQ_KEY) within a time range: QUERY_MESSAGE and the
// queryMsgByKey / queryMsgByUniqueKey admin commands.
//
// Entries are Pebble keys with empty values, written by the dispatcher in
// the same batch as the consume-queue entries:
//
//	'i' | hour u32 | topic | 0x00 | kind | key | 0x00 | storeTime u64 | phyOffset u64
//
// hour is storeTime/3600000. Leading with the hour makes retention one range
// delete of every hour older than the CommitLog's oldest message; a query
// seeks once per hour of its range (72 seeks for the 3 days mqadmin asks).
// kind is 'k' (KEYS) or 'u' (UNIQ_KEY).
//
// A UNIQ_KEY as clients make it, 32 upper-case hex digits, is kept in 21
// bytes fewer (an index key per message is Pebble's largest cost under
// load after the consume-queue entries):
//
//	'i' | hour u32 | topic | 0x00 | 'U' | 16 bytes | ms of the hour u32 | phyOffset u64
//
// A UNIQ_KEY query looks under both kinds: stores written before hold 'u'.
package index

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/store/kv"
)

// Kinds of indexed keys.
const (
	KindKey     byte = 'k'
	KindUniqKey byte = 'u'
	// kindUniqBin is a UNIQ_KEY of 32 upper-case hex digits in binary.
	kindUniqBin byte = 'U'
)

// uniqBinLen is the length of a kindUniqBin key.
const uniqBinLen = 16

// binUniq decodes a UNIQ_KEY of 32 upper-case hex digits into dst's first
// 16 bytes; ok is false for any other key (kept as it is, kind 'u').
// Upper case only, so that the binary form stands for exactly one string.
func binUniq[K string | []byte](dst *[uniqBinLen]byte, key K) bool {
	if len(key) != 2*uniqBinLen {
		return false
	}
	for i := 0; i < len(key); i += 2 {
		hi, ok1 := upperHex(key[i])
		lo, ok2 := upperHex(key[i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i/2] = hi<<4 | lo
	}
	return true
}

func upperHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// binHour reports whether a store time can be kept as an hour and the ms
// into it.
func binHour(ms int64) bool { return ms >= 0 && ms/hourMs <= math.MaxUint32 }

const hourMs = 3600 * 1000

// Hit is one indexed message.
type Hit struct {
	StoreTime int64
	PhyOffset int64
}

func prefix(hour uint32, topic string, kind byte, key string) []byte {
	b := make([]byte, 0, 5+len(topic)+len(key)+3+16)
	b = append(b, kv.PrefixIndex)
	b = binary.BigEndian.AppendUint32(b, hour)
	b = append(b, topic...)
	b = append(b, 0, kind)
	b = append(b, key...)
	return append(b, 0)
}

func hourOf(ms int64) uint32 {
	if ms < 0 {
		return 0
	}
	return uint32(ms / hourMs)
}

// Writer takes a write: a *pebble.Batch, or the dispatcher's round
// (consumequeue.Batch), which writes it with the round's entries.
type Writer interface {
	Set(key, value []byte, opts *pebble.WriteOptions) error
}

// Add writes one index entry into a batch. Keys containing 0x00 are skipped
// (they cannot be delimited and no client produces them).
func Add(b Writer, topic string, kind byte, key string, storeTime, phyOffset int64) error {
	_, err := AddTo(b, nil, topic, kind, key, storeTime, phyOffset)
	return err
}

// AddTo is Add with the entry's key built in scratch (grown as needed and
// returned for the next call), for a Writer that copies what it is given
// (the dispatcher's round): a dispatched message then costs no allocation.
func AddTo[K string | []byte](b Writer, scratch []byte, topic string, kind byte, key K, storeTime, phyOffset int64) ([]byte, error) {
	var bin [uniqBinLen]byte
	if kind == KindUniqKey && binHour(storeTime) && binUniq(&bin, key) {
		h := hourOf(storeTime)
		k := append(scratch[:0], kv.PrefixIndex)
		k = binary.BigEndian.AppendUint32(k, h)
		k = append(k, topic...)
		k = append(k, 0, kindUniqBin)
		k = append(k, bin[:]...)
		k = binary.BigEndian.AppendUint32(k, uint32(storeTime-int64(h)*hourMs))
		k = binary.BigEndian.AppendUint64(k, uint64(phyOffset))
		if err := b.Set(k, nil, nil); err != nil {
			return k, fmt.Errorf("index: add: %w", err)
		}
		return k, nil
	}
	for i := 0; i < len(key); i++ {
		if key[i] == 0 {
			return scratch, nil
		}
	}
	k := append(scratch[:0], kv.PrefixIndex)
	k = binary.BigEndian.AppendUint32(k, hourOf(storeTime))
	k = append(k, topic...)
	k = append(k, 0, kind)
	k = append(k, key...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, uint64(storeTime))
	k = binary.BigEndian.AppendUint64(k, uint64(phyOffset))
	if err := b.Set(k, nil, nil); err != nil {
		return k, fmt.Errorf("index: add: %w", err)
	}
	return k, nil
}

// Query returns up to max hits for (topic, kind, key) stored within
// [begin, end] (ms), newest first, as RocketMQ returns the latest matches.
// It visits only hours that hold entries, newest first: clients send
// begin=0 and end=Long.MAX_VALUE, and walking that range hour by hour would
// never finish.
func Query(db *pebble.DB, topic string, kind byte, key string, begin, end int64, max int) ([]Hit, error) {
	if max <= 0 || end < begin {
		return nil, nil
	}
	begin = max64(begin, 0)
	hours, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{kv.PrefixIndex}, UpperBound: []byte{kv.PrefixIndex + 1}})
	if err != nil {
		return nil, fmt.Errorf("index: query: %w", err)
	}
	defer hours.Close()
	var hits []Hit
	first := int64(hourOf(begin))
	// Not hourOf: Long.MAX_VALUE's hour does not fit 32 bits, and a
	// truncated one could fall before the hours that hold entries.
	h := min(end/hourMs, math.MaxUint32)
	// A UNIQ_KEY as clients make it is also looked up in binary.
	var bin [uniqBinLen]byte
	isBin := kind == KindUniqKey && binUniq(&bin, key)
	for h >= first && len(hits) < max {
		// The newest hour ≤ h that has any entry.
		var found bool
		if h >= math.MaxUint32 {
			found = hours.Last()
		} else {
			found = hours.SeekLT(binary.BigEndian.AppendUint32([]byte{kv.PrefixIndex}, uint32(h+1)))
		}
		if !found {
			break
		}
		k := hours.Key()
		if len(k) < 5 {
			break
		}
		h = int64(binary.BigEndian.Uint32(k[1:5]))
		if h < first {
			break
		}
		n := len(hits)
		if hits, err = queryHour(db, uint32(h), topic, kind, key, begin, end, max, hits); err != nil {
			return nil, err
		}
		if isBin {
			if hits, err = queryHourBin(db, uint32(h), topic, &bin, begin, end, len(hits)+max-n, hits); err != nil {
				return nil, err
			}
			// Both kinds' hits of the hour, newest first, up to max.
			hour := hits[n:]
			sort.SliceStable(hour, func(i, j int) bool {
				if hour[i].StoreTime != hour[j].StoreTime {
					return hour[i].StoreTime > hour[j].StoreTime
				}
				return hour[i].PhyOffset > hour[j].PhyOffset
			})
			hits = hits[:min(len(hits), max)]
		}
		h--
	}
	if err := hours.Error(); err != nil {
		return nil, fmt.Errorf("index: query: %w", err)
	}
	return hits, nil
}

func queryHour(db *pebble.DB, hour uint32, topic string, kind byte, key string, begin, end int64, max int, hits []Hit) ([]Hit, error) {
	p := prefix(hour, topic, kind, key)
	lo := binary.BigEndian.AppendUint64(append([]byte(nil), p...), uint64(begin))
	hiTS := uint64(end) + 1
	if end == 1<<63-1 {
		hiTS = uint64(end)
	}
	hi := binary.BigEndian.AppendUint64(append([]byte(nil), p...), hiTS)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, fmt.Errorf("index: query: %w", err)
	}
	defer it.Close()
	for it.Last(); it.Valid() && len(hits) < max; it.Prev() {
		k := it.Key()
		if len(k) != len(p)+16 {
			continue
		}
		hits = append(hits, Hit{StoreTime: int64(binary.BigEndian.Uint64(k[len(p):])), PhyOffset: int64(binary.BigEndian.Uint64(k[len(p)+8:]))})
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("index: query: %w", err)
	}
	return hits, nil
}

// queryHourBin is queryHour for a UNIQ_KEY kept in binary (kindUniqBin),
// taking hits while there are fewer than max.
func queryHourBin(db *pebble.DB, hour uint32, topic string, bin *[uniqBinLen]byte, begin, end int64, max int, hits []Hit) ([]Hit, error) {
	start := int64(hour) * hourMs
	// [lo, hi) in ms of the hour, clamped to the hour.
	lo := min(max64(begin-start, 0), hourMs)
	hi := int64(hourMs)
	if end-start < hourMs {
		hi = max64(end-start+1, 0)
	}
	if lo >= hi {
		return hits, nil
	}
	p := make([]byte, 0, 6+len(topic)+uniqBinLen+4)
	p = append(p, kv.PrefixIndex)
	p = binary.BigEndian.AppendUint32(p, hour)
	p = append(p, topic...)
	p = append(p, 0, kindUniqBin)
	p = append(p, bin[:]...)
	it, err := db.NewIter(&pebble.IterOptions{
		LowerBound: binary.BigEndian.AppendUint32(slices.Clip(p), uint32(lo)),
		UpperBound: binary.BigEndian.AppendUint32(slices.Clip(p), uint32(hi)),
	})
	if err != nil {
		return nil, fmt.Errorf("index: query: %w", err)
	}
	defer it.Close()
	for it.Last(); it.Valid() && len(hits) < max; it.Prev() {
		k := it.Key()
		if len(k) != len(p)+12 {
			continue
		}
		hits = append(hits, Hit{StoreTime: start + int64(binary.BigEndian.Uint32(k[len(p):])), PhyOffset: int64(binary.BigEndian.Uint64(k[len(p)+4:]))})
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("index: query: %w", err)
	}
	return hits, nil
}

// DeleteBefore removes every entry of the hours that end before ts (the
// store time of the CommitLog's oldest remaining message). Hits inside the
// boundary hour may still point below the CommitLog's min offset; callers
// skip those.
func DeleteBefore(b *pebble.Batch, ts int64) error {
	h := hourOf(ts)
	if h == 0 {
		return nil
	}
	lo := []byte{kv.PrefixIndex}
	hi := binary.BigEndian.AppendUint32([]byte{kv.PrefixIndex}, h)
	return b.DeleteRange(lo, hi, nil)
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
