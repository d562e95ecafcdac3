package commitlog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/store/vfs"
	"github.com/rmqgo/rmq/pkg/message"
)

var storeHost = netip.MustParseAddrPort("10.0.0.9:10911")

// record encodes a message whose body identifies it (queue and sequence),
// padded to bodyLen.
func record(t testing.TB, topic string, queue int32, seq, bodyLen int) []byte {
	t.Helper()
	body := []byte(fmt.Sprintf("%s/%d/%d|", topic, queue, seq))
	if len(body) < bodyLen {
		body = append(body, bytes.Repeat([]byte{'x'}, bodyLen-len(body))...)
	}
	b, err := message.EncodeStored(&message.Message{
		Topic: topic, QueueID: queue, Body: body,
		Properties:    map[string]string{message.PropertyTags: "TagA", message.PropertyUniqClientMessageIDKeyIdx: fmt.Sprintf("U%d", seq)},
		BornTimestamp: 1, BornHost: netip.MustParseAddrPort("10.0.0.1:5000"), StoreHost: storeHost,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// assigner hands out consecutive offsets per topic/queue.
type assigner struct {
	mu   sync.Mutex
	next map[string]int64
}

func newAssigner() *assigner { return &assigner{next: map[string]int64{}} }

func (a *assigner) AssignQueueOffset(first message.View, n int) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := fmt.Sprintf("%s-%d", first.Topic(), first.QueueID())
	off := a.next[k]
	a.next[k] = off + int64(n)
	return off, nil
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// smallSegments makes cfg's segments fileSize bytes (a few records each,
// records up to 2 KiB), so that tests cross segment boundaries soon.
func smallSegments(cfg *Config, fileSize int) {
	cfg.FileSize = int64(fileSize)
	cfg.MaxRecordSize = 2048
	cfg.MaxBatchBytes = fileSize
}

// testConfig is a small-file configuration on fsys.
func testConfig(fsys vfs.FS, dir string) Config {
	cfg := DefaultConfig(dir + "/commitlog")
	cfg.FS = fsys
	cfg.FileSize = 64 << 10
	cfg.MaxRecordSize = 16 << 10
	cfg.MaxBatchBytes = 64 << 10
	cfg.FlushInterval = 20 * time.Millisecond
	cfg.CleanResourceInterval = 0
	cfg.Logger = quietLogger()
	return cfg
}

func mustOpen(t testing.TB, cfg Config) *Log {
	t.Helper()
	l, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustAppend(t testing.TB, l *Log, rec []byte) AppendResult {
	t.Helper()
	res, err := l.Append(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// readAll iterates the whole log, failing on any error but EOF.
func readAll(t testing.TB, l *Log) []Record {
	t.Helper()
	it := l.NewIterator(l.MinOffset(), IteratorOptions{})
	defer it.Close()
	var out []Record
	for {
		r, err := it.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("iterate at %d: %v", it.Offset(), err)
		}
		r.View = cloneView(t, r.View)
		out = append(out, r)
	}
	if it.Offset() != l.MaxOffset() {
		t.Fatalf("iterator stopped at %d, max %d", it.Offset(), l.MaxOffset())
	}
	return out
}

func cloneView(t testing.TB, v message.View) message.View {
	t.Helper()
	c, err := message.ParseView(bytes.Clone(v.Bytes()), message.ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sameRecord compares a stored record with what was appended, ignoring the
// fields the log assigns.
func sameRecord(stored message.View, appended []byte) bool {
	a, err := message.ParseView(appended, message.ParseOptions{})
	if err != nil || len(stored.Bytes()) != len(appended) {
		return false
	}
	return bytes.Equal(stored.Body(), a.Body()) && bytes.Equal(stored.Topic(), a.Topic()) &&
		bytes.Equal(stored.Properties(), a.Properties()) && stored.QueueID() == a.QueueID()
}

// syncFlushLog opens a SYNC_FLUSH log on a fault-injecting in-memory file
// system, closed when the test ends; tweak (may be nil) adjusts the config.
func syncFlushLog(t *testing.T, tweak func(*Config)) (*Log, *vfs.FaultFS) {
	t.Helper()
	ffs := vfs.NewFaultFS(vfs.NewMem())
	cfg := testConfig(ffs, "/s")
	cfg.FlushDiskType = SyncFlush
	if tweak != nil {
		tweak(&cfg)
	}
	l := mustOpen(t, cfg)
	t.Cleanup(func() { l.Close() })
	return l, ffs
}

// onSync makes every fsync on ffs run f first.
func onSync(ffs *vfs.FaultFS, f func()) {
	ffs.SetHook(func(op vfs.Op) error {
		if op.Kind == vfs.OpSync {
			f()
		}
		return nil
	})
}

// smallMemLog opens a log of fileSize-byte segments on a fresh in-memory
// file system.
func smallMemLog(t testing.TB, fileSize int) (*Log, *vfs.MemFS, Config) {
	t.Helper()
	mem := vfs.NewMem()
	cfg := testConfig(mem, "/s")
	smallSegments(&cfg, fileSize)
	return mustOpen(t, cfg), mem, cfg
}

// appendRecords appends n records of topic's queue 0, record i of
// bodyLen(i) bytes, and returns their physical offsets.
func appendRecords(t testing.TB, l *Log, topic string, n int, bodyLen func(i int) int) []int64 {
	t.Helper()
	offs := make([]int64, 0, n)
	for i := range n {
		offs = append(offs, mustAppend(t, l, record(t, topic, 0, i, bodyLen(i))).PhysicalOffset)
	}
	return offs
}
