package consumequeue

import (
	"testing"

	"github.com/rmqgo/rmq/broker/store/kv"
)

func TestParseKeys(t *testing.T) {
	for _, tc := range []struct {
		name   string
		key    []byte
		entry  bool // parse as an entry key, else as a meta key
		ok     bool
		topic  string
		qid    int32
		offset int64
		kind   byte
	}{
		{"entry", entryKey("T", 3, 42), true, true, "T", 3, 42, 0},
		{"entry of a long topic", entryKey("%RETRY%group_x", 1<<20, 1<<40), true, true, "%RETRY%group_x", 1 << 20, 1 << 40, 0},
		{"meta max", metaKey("T", 7, metaMax), false, true, "T", 7, 0, metaMax},
		{"meta min", metaKey("Topic", 0, metaMin), false, true, "Topic", 0, 0, metaMin},
		{"meta key as entry", metaKey("T", 7, metaMax), true, false, "", 0, 0, 0},
		{"entry key as meta", entryKey("T", 3, 42), false, false, "", 0, 0, 0},
		{"entry too short", entryKey("T", 3, 42)[:13], true, false, "", 0, 0, 0},
		{"no separator", append([]byte{kv.PrefixConsumeQueue, 'a', 'b', 'c', 'd', 'e', 'f'}, make([]byte, 7)...), true, false, "", 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				topic  string
				qid    int32
				offset int64
				kind   byte
				ok     bool
			)
			if tc.entry {
				topic, qid, offset, ok = parseEntryKey(tc.key)
			} else {
				topic, qid, kind, ok = parseMetaKey(tc.key)
			}
			if ok != tc.ok || topic != tc.topic || qid != tc.qid || offset != tc.offset || kind != tc.kind {
				t.Fatalf("got %q %d %d %q %v, want %q %d %d %q %v", topic, qid, offset, kind, ok, tc.topic, tc.qid, tc.offset, tc.kind, tc.ok)
			}
		})
	}
}
