package schedule

import (
	"encoding/binary"

	"github.com/rmqgo/rmq/broker/store/kv"
)

// Pebble layout under kv.PrefixTimer ('t'); a second byte separates the
// pending timers from this package's bookkeeping:
//
//	t k · deliverMs u64 · commitLogOffset u64 → record size u32   pending timer
//	t c · topic · 0x00 · queueId u32          → next queue offset  indexer checkpoint
//	t m                                        → CommitLog offset   marker-scan start
//	t x · realTopic "+" uniqKey                → slot end ms u64    pending cancellation (cancel.go)
//	t n · realTopic                            → count u64 · ms u64 timing count (timing.go)
//	t N                                        → 1                  timing counts kept
//	t o · queueId u32                          → queue offset       delay offset (progress.go)
//	t u                                        → CommitLog offset   unmarked-delivery scan mark (service.go)
//	t s                                        → 1                  was a slave since that scan (service.go)
//
// Big-endian integers make the pending keys sort by delivery time, then by
// CommitLog offset: the due timers are one key range.
const (
	subPending    byte = 'k'
	subCheckpoint byte = 'c'
	subMarkScan   byte = 'm'
	subCancel     byte = 'x'
	subTiming     byte = 'n'
	subTimingInit byte = 'N'
	subDelayOff   byte = 'o'
	subUnmarked   byte = 'u'
	subWasSlave   byte = 's'

	keyLen = 2 + 8 + 8
)

// pendingPrefix is the first key of the pending timers.
func pendingPrefix() []byte { return []byte{kv.PrefixTimer, subPending} }

// timerKey encodes a pending timer's key.
func timerKey(ms, phy int64) []byte {
	k := make([]byte, keyLen)
	k[0], k[1] = kv.PrefixTimer, subPending
	binary.BigEndian.PutUint64(k[2:], uint64(ms))
	binary.BigEndian.PutUint64(k[10:], uint64(phy))
	return k
}

// parseTimerKey decodes a pending timer's key.
func parseTimerKey(k []byte) (ms, phy int64, ok bool) {
	if len(k) != keyLen || k[0] != kv.PrefixTimer || k[1] != subPending {
		return 0, 0, false
	}
	return int64(binary.BigEndian.Uint64(k[2:])), int64(binary.BigEndian.Uint64(k[10:])), true
}

// successor is the smallest key greater than k among keys of k's length
// and longer: k · 0x00.
func successor(k []byte) []byte {
	out := make([]byte, len(k)+1)
	copy(out, k)
	return out
}

func checkpointKey(topic string, qid int32) []byte {
	k := make([]byte, 0, 2+len(topic)+1+4)
	k = append(k, kv.PrefixTimer, subCheckpoint)
	k = append(k, topic...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint32(k, uint32(qid))
}

func markScanKey() []byte { return []byte{kv.PrefixTimer, subMarkScan} }

// unmarkedScanKey holds the CommitLog offset below which
// removeUnmarkedDeliveries has looked for unmarked delivered copies.
func unmarkedScanKey() []byte { return []byte{kv.PrefixTimer, subUnmarked} }

// wasSlaveKey is set while this broker is a slave and cleared by the
// unmarked-delivery scan: a start as master scans only when it is set.
func wasSlaveKey() []byte { return []byte{kv.PrefixTimer, subWasSlave} }

// cancelPrefix is the first key of the pending cancellations.
func cancelPrefix() []byte { return []byte{kv.PrefixTimer, subCancel} }

// cancelKey is the key of a pending cancellation of the message named by
// deleteKey (DeleteKey's format).
func cancelKey(deleteKey string) []byte {
	k := make([]byte, 0, 2+len(deleteKey))
	k = append(k, kv.PrefixTimer, subCancel)
	return append(k, deleteKey...)
}

func u64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func u32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

func readU64(b []byte) (int64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b)), true
}
