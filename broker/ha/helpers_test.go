package ha

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
)

func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }

const testFileSize = 64 << 10

func openStore(t testing.TB, dir string) *store.Store {
	t.Helper()
	cfg := store.DefaultConfig(dir)
	cfg.CommitLog.FileSize = testFileSize
	cfg.CommitLog.MaxBatchBytes = testFileSize
	cfg.CommitLog.FlushInterval = 20 * time.Millisecond
	cfg.CommitLog.CleanResourceInterval = 0
	cfg.MaxMessageSize = 16 << 10
	cfg.Logger = slog.New(slog.DiscardHandler)
	s, err := store.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// put stores n messages of varied sizes over two queues of topic.
func put(t testing.TB, s *store.Store, topic string, from, n int) store.PutResult {
	t.Helper()
	var res store.PutResult
	for i := from; i < from+n; i++ {
		body := bytes.Repeat([]byte{byte('a' + i%26)}, 100+(i*379)%3000)
		m := &message.Message{
			Topic: topic, QueueID: int32(i % 2), Body: body,
			Properties:    map[string]string{message.PropertyTags: "T", message.PropertyKeys: fmt.Sprintf("k%d", i)},
			BornTimestamp: time.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("127.0.0.1:5000"),
		}
		var err error
		if res, err = s.PutMessage(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

// fastOptions keep the intervals short for tests.
func fastOptions(log *slog.Logger) Options {
	return Options{
		HeartbeatInterval:    100 * time.Millisecond,
		HousekeepingInterval: 2 * time.Second,
		TransferBatchSize:    1000, // frames end inside records
		ReconnectDelay:       50 * time.Millisecond,
		Logger:               log,
	}
}

// sameLog fails unless both stores hold identical CommitLog bytes over the
// slave's range, which must end where the master's does.
func sameLog(t testing.TB, master, slave *store.Store) {
	t.Helper()
	mc, sc := master.CommitLog(), slave.CommitLog()
	if mc.MaxOffset() != sc.MaxOffset() {
		t.Fatalf("max offsets: master %d, slave %d", mc.MaxOffset(), sc.MaxOffset())
	}
	for off := sc.MinOffset(); off < sc.MaxOffset(); {
		a, err := mc.ReadChunk(off, 1<<20, 0)
		if err != nil {
			t.Fatal(err)
		}
		b, err := sc.Read(off, len(a.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("bytes differ in [%d, +%d)", off, len(a.Bytes()))
		}
		off += int64(len(a.Bytes()))
		a.Release()
		b.Release()
	}
}

func caughtUp(master, slave *store.Store) func() bool {
	return func() bool { return slave.CommitLog().MaxOffset() == master.CommitLog().MaxOffset() }
}

// checkReencoded drives a frame decoder over data, read through r: next
// decodes one frame and returns it re-encoded after again, or the
// decoder's error. It fails t unless the accepted frames re-encode to
// exactly the bytes consumed, and a clean EOF comes only at the end of
// data.
func checkReencoded(t *testing.T, data []byte, r *bytes.Reader, next func(again []byte) ([]byte, error)) {
	t.Helper()
	var again []byte
	for {
		var err error
		if again, err = next(again); err != nil {
			if errors.Is(err, io.EOF) && !bytes.Equal(again, data) {
				t.Fatalf("clean EOF but re-encoded %d of %d bytes", len(again), len(data))
			}
			return
		}
		if !bytes.Equal(again, data[:len(data)-r.Len()]) {
			t.Fatal("re-encoded frames differ from the consumed bytes")
		}
	}
}

// wantReplicaTimeout fails unless the send waiting on errc ends with
// ErrReplicaTimeout within five seconds; cause names what should end it.
func wantReplicaTimeout(t *testing.T, errc <-chan error, cause string) {
	t.Helper()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrReplicaTimeout) {
			t.Fatalf("waiting send ended by %s: %v, want ErrReplicaTimeout", cause, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("waiting send not ended by %s", cause)
	}
}

// logBuffer collects log lines for assertions.
type logBuffer struct{ testutil.SyncBuffer }

func (l *logBuffer) contains(s string) bool { return strings.Contains(l.String(), s) }

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

func tempDir(t testing.TB, name string) string { return filepath.Join(t.TempDir(), name) }
