package pop

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/store/kv"
)

// Pebble layout under kv.PrefixPop ('p'); a second byte names the table:
//
//	p k · group 0 topic 0 · queueId u32 · startOffset u64 · popTime u64 → checkpoint
//	p d · due ms u64 · <the checkpoint key without "p k">            → (empty) revive index
//	p s · group 0 topic 0 · queueId u32                                → seq u64 · offset u64 (pop offset shadow)
//	p o · group 0 topic 0 · queueId u32                                → order info (JSON)
//	p j · journal topic 0 · queueId u32                                → next journal offset to apply
//
// Big-endian integers make the revive index sort by due time: the due
// checkpoints are one key range.
const (
	tabCheckpoint byte = 'k'
	tabDue        byte = 'd'
	tabShadow     byte = 's'
	tabOrder      byte = 'o'
	tabJournal    byte = 'j'
)

// maxNameLen bounds group and topic names in keys (a pop retry topic is
// %RETRY% + group + separator + topic).
const maxNameLen = 512

var errBadName = errors.New("bad group or topic name")

// checkName rejects names that would make keys ambiguous or huge.
func checkName(kind, s string) error {
	if s == "" || len(s) > maxNameLen || strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("%w: %s %q", errBadName, kind, s)
	}
	return nil
}

// ckID identifies a checkpoint: one pop of one queue.
type ckID struct {
	Group   string `json:"c"`
	Topic   string `json:"t"` // the topic the messages are stored in (retry topic included)
	QueueID int32  `json:"q"`
	Start   int64  `json:"so"` // ckQueueOffset of the receipt
	PopTime int64  `json:"pt"`
}

// queueKeyTail is group 0 topic 0 queueId.
func appendQueue(b []byte, group, topic string, qid int32) []byte {
	b = append(b, group...)
	b = append(b, 0)
	b = append(b, topic...)
	b = append(b, 0)
	return binary.BigEndian.AppendUint32(b, uint32(qid))
}

func appendIDTail(b []byte, id ckID) []byte {
	b = appendQueue(b, id.Group, id.Topic, id.QueueID)
	b = binary.BigEndian.AppendUint64(b, uint64(id.Start))
	return binary.BigEndian.AppendUint64(b, uint64(id.PopTime))
}

func ckKey(id ckID) []byte {
	return appendIDTail([]byte{kv.PrefixPop, tabCheckpoint}, id)
}

func dueKey(due int64, id ckID) []byte {
	b := binary.BigEndian.AppendUint64([]byte{kv.PrefixPop, tabDue}, uint64(due))
	return appendIDTail(b, id)
}

// parseIDTail decodes group 0 topic 0 qid start popTime.
func parseIDTail(b []byte) (ckID, bool) {
	var id ckID
	g := indexByte(b, 0)
	if g < 0 {
		return id, false
	}
	id.Group, b = string(b[:g]), b[g+1:]
	t := indexByte(b, 0)
	if t < 0 {
		return id, false
	}
	id.Topic, b = string(b[:t]), b[t+1:]
	if len(b) != 4+8+8 {
		return id, false
	}
	id.QueueID = int32(binary.BigEndian.Uint32(b))
	id.Start = int64(binary.BigEndian.Uint64(b[4:]))
	id.PopTime = int64(binary.BigEndian.Uint64(b[12:]))
	return id, true
}

// parseDueKey decodes a revive index key.
func parseDueKey(k []byte) (due int64, id ckID, ok bool) {
	if len(k) < 2+8 || k[0] != kv.PrefixPop || k[1] != tabDue {
		return 0, id, false
	}
	due = int64(binary.BigEndian.Uint64(k[2:]))
	id, ok = parseIDTail(k[10:])
	return due, id, ok
}

func dueLowerBound() []byte { return []byte{kv.PrefixPop, tabDue} }

// dueUpperBound is the first key past every checkpoint due at or before ms.
func dueUpperBound(ms int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{kv.PrefixPop, tabDue}, uint64(ms+1))
}

func shadowKey(group, topic string, qid int32) []byte {
	return appendQueue([]byte{kv.PrefixPop, tabShadow}, group, topic, qid)
}

func orderKey(group, topic string, qid int32) []byte {
	return appendQueue([]byte{kv.PrefixPop, tabOrder}, group, topic, qid)
}

func journalPosKey(topic string, qid int32) []byte {
	b := append([]byte{kv.PrefixPop, tabJournal}, topic...)
	b = append(b, 0)
	return binary.BigEndian.AppendUint32(b, uint32(qid))
}

// parseQueueTail decodes group 0 topic 0 qid (shadow and order keys).
func parseQueueTail(b []byte) (group, topic string, qid int32, ok bool) {
	g := indexByte(b, 0)
	if g < 0 {
		return "", "", 0, false
	}
	group, b = string(b[:g]), b[g+1:]
	t := indexByte(b, 0)
	if t < 0 || len(b)-t-1 != 4 {
		return "", "", 0, false
	}
	return group, string(b[:t]), int32(binary.BigEndian.Uint32(b[t+1:])), true
}

// parseJournalPosKey decodes a journal position key.
func parseJournalPosKey(k []byte) (topic string, qid int32, ok bool) {
	if len(k) < 2+1+4 || k[0] != kv.PrefixPop || k[1] != tabJournal {
		return "", 0, false
	}
	b := k[2:]
	t := indexByte(b, 0)
	if t < 0 || len(b)-t-1 != 4 {
		return "", 0, false
	}
	return string(b[:t]), int32(binary.BigEndian.Uint32(b[t+1:])), true
}

func tablePrefix(tab byte) []byte { return []byte{kv.PrefixPop, tab} }

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

func u64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func readU64(b []byte) (int64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b)), true
}

// prefixIter bounds an iterator to one table.
func prefixIter(tab byte) *pebble.IterOptions {
	lo := tablePrefix(tab)
	return &pebble.IterOptions{LowerBound: lo, UpperBound: endOf(lo)}
}

// endOf is the first key past every key starting with p.
func endOf(p []byte) []byte { return kv.PrefixEnd(p) }
