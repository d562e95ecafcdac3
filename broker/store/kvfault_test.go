package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/rmqgo/rmq/broker/store/kv/kvfault"
	"github.com/rmqgo/rmq/pkg/message"
)

// Fault injection on the Pebble side of the store (consume queues,
// consumer offsets, the key index): the CommitLog stays healthy, Pebble
// runs on a kvfault file system. Pebble's WAL is off, so what the
// dispatcher and the offset table commit becomes durable with a memtable
// flush; the consume queues and the index are re-derived from the
// CommitLog after a restart, consumer offsets are not (they are durable
// once a flush succeeded: offset.Store.Flush returning nil).

// kvFaultChildEnv makes the test binary run runKVFaultChild instead of
// the tests (a Pebble fatal error stops the process).
const kvFaultChildEnv = "STORE_KV_FAULT_CHILD"

func TestMain(m *testing.M) { kvfault.Main(m, kvFaultChildEnv, runKVFaultChild) }

func kvFaultConfig(root string, fs vfs.FS, log *slog.Logger) Config {
	cfg := testConfig(root)
	cfg.KV.FS = fs
	cfg.MaxMessageSize = 4 << 10
	// The tests flush offsets themselves.
	cfg.OffsetFlushInterval = time.Hour
	cfg.Logger = log
	return cfg
}

// putKeyed stores message seq of queue F-0 (the body checkQueue expects)
// with the business key key-<seq>.
func putKeyed(s *Store, seq int) (PutResult, error) {
	return s.PutMessage(context.Background(), msg("F", 0, fmt.Sprintf("fault-%04d|%0300d", seq, seq), map[string]string{"TAGS": "T", "KEYS": fmt.Sprintf("key-%d", seq)}))
}

// checkKeys fails unless the index finds each acknowledged message by key.
func checkKeys(t *testing.T, s *Store, want []acked) {
	t.Helper()
	for _, a := range want {
		r, err := s.QueryMessage("F", fmt.Sprintf("key-%d", a.seq), false, 4, 0, time.Now().Add(time.Hour).UnixMilli())
		if err != nil {
			t.Fatalf("query key-%d: %v", a.seq, err)
		}
		if len(r.Records) != 1 {
			t.Fatalf("query key-%d: %d records, want 1", a.seq, len(r.Records))
		}
	}
}

func closeWithin(t *testing.T, s *Store) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("Close hangs on a Pebble fault")
		return nil
	}
}

// TestStoreKVFlushFaults: a flushed table that cannot be created, written
// or synced (ENOSPC, EIO). Dispatch into Pebble's memtable goes on until
// a flush fails; from then on the store refuses sends (SERVICE_NOT_AVAILABLE,
// naming the consume queue store), pauses dispatch, reports the offset
// flush failure (nothing reported persisted that is not), and keeps
// serving reads. When the fault clears it recovers by itself; a store
// closed while it lasts loses nothing acknowledged: the consume queues
// and index are re-dispatched from the CommitLog, and consumer offsets are
// those last persisted (Close reports the ones it could not persist).
func TestStoreKVFlushFaults(t *testing.T) {
	for _, target := range []kvfault.Target{kvfault.FlushTableCreate, kvfault.FlushTableWrite, kvfault.FlushTableSync} {
		for _, c := range []struct {
			errno   syscall.Errno
			refusal error
		}{{syscall.ENOSPC, ErrDiskFull}, {syscall.EIO, ErrNotWritable}} {
			for _, heal := range []bool{true, false} {
				t.Run(fmt.Sprintf("%v/%v/heal=%v", target, c.errno, heal), func(t *testing.T) {
					root := t.TempDir()
					in := kvfault.New(vfs.Default)
					s := openStore(t, kvFaultConfig(root, in.FS(), slog.New(slog.DiscardHandler)))
					good := mustPut(t, s, putKeyed, 0, 20, "before the fault")
					waitDispatched(t, s, "F", 0, 20)
					s.CommitOffset("g", "F", 0, 5)
					if err := s.Offsets().Flush(); err != nil {
						t.Fatalf("offset flush before the fault: %v", err)
					}

					in.Arm(target, c.errno)
					// Sends stay acknowledged until Pebble fails a flush: they
					// are in the CommitLog, their entries in the memtable.
					good = append(good, mustPut(t, s, putKeyed, 100, 105, "before any flush failed")...)
					s.CommitOffset("g", "F", 0, 12)
					s.CommitOffset("g2", "F", 0, 3)
					err := s.Offsets().Flush()
					if err == nil {
						t.Fatal("offset flush reported success on a failing disk")
					}
					if !errors.Is(err, c.errno) || !strings.Contains(err.Error(), "offset: flush") {
						t.Fatalf("offset flush error %q: want context wrapping %v", err, c.errno)
					}
					if in.Hits() == 0 {
						t.Fatal("the fault never fired")
					}
					res, err := putKeyed(s, 900)
					if !errors.Is(err, c.refusal) || !strings.Contains(err.Error(), "consume queue store") || !errors.Is(s.db.Err(), c.errno) {
						t.Fatalf("put during the fault: %+v, %v; want %v naming the consume queue store", res, err, c.refusal)
					}
					if res.MsgIDs != nil || res.PhysicalOffset != 0 {
						t.Fatalf("refused put returned a result: %+v", res)
					}
					// Reads go on: messages, offsets, the key index.
					r, err := s.GetMessage(context.Background(), "F", 0, 0, 32, 0, nil)
					if err != nil || r.Status != Found || len(r.Records) < 20 {
						t.Fatalf("read during the fault: %v, %+v", err, r)
					}
					r.Release()
					if off, ok := s.QueryOffset("g", "F", 0); !ok || off != 12 {
						t.Fatalf("committed offset during the fault: %d %v", off, ok)
					}
					checkKeys(t, s, good[:20])

					if heal {
						in.Clear()
						deadline := time.Now().Add(15 * time.Second)
						for {
							res, err := putKeyed(s, 200)
							if err == nil {
								good = append(good, acked{200, res})
								break
							}
							if time.Now().After(deadline) {
								t.Fatalf("sends still refused after the fault cleared: %v", err)
							}
							time.Sleep(20 * time.Millisecond)
						}
						if err := s.Offsets().Flush(); err != nil {
							t.Fatalf("offset flush after the fault cleared: %v", err)
						}
						if err := closeWithin(t, s); err != nil {
							t.Fatalf("close after the fault cleared: %v", err)
						}
					} else if err := closeWithin(t, s); err == nil || !strings.Contains(err.Error(), "offset: flush") {
						t.Fatalf("close during the fault reported %v, want the offset flush failure", err)
					}

					s = openStore(t, kvFaultConfig(root, vfs.Default, slog.New(slog.DiscardHandler)))
					defer s.Close()
					checkQueue(t, s, good)
					checkKeys(t, s, good)
					wantG, wantG2 := int64(12), true
					if !heal {
						wantG, wantG2 = 5, false
					}
					if off, ok := s.QueryOffset("g", "F", 0); !ok || off != wantG {
						t.Fatalf("offset of g after reopen: %d %v, want %d", off, ok, wantG)
					}
					if _, ok := s.QueryOffset("g2", "F", 0); ok != wantG2 {
						t.Fatalf("offset of g2 present %v after reopen, want %v", ok, wantG2)
					}
					res, err = putKeyed(s, 999)
					if err != nil || res.QueueOffset != int64(len(good)) {
						t.Fatalf("put after reopen: %+v, %v; want queue offset %d", res, err, len(good))
					}
				})
			}
		}
	}
}

// TestStoreKVDispatchPaused: while Pebble cannot flush, records that
// reach the CommitLog without a send (HA replication appends) are not
// dispatched into memtables that could not be flushed (they would fill
// until Pebble stalls the dispatcher); dispatch resumes when the fault
// clears.
func TestStoreKVDispatchPaused(t *testing.T) {
	in := kvfault.New(vfs.Default)
	s := openStore(t, kvFaultConfig(t.TempDir(), in.FS(), slog.New(slog.DiscardHandler)))
	defer s.Close()
	for i := range 5 {
		if _, err := putKeyed(s, i); err != nil {
			t.Fatal(err)
		}
	}
	waitDispatched(t, s, "F", 0, 5)
	in.Arm(kvfault.FlushTableWrite, syscall.EIO)
	s.CommitOffset("g", "F", 0, 1)
	if err := s.Offsets().Flush(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("offset flush: %v", err)
	}
	rec, err := encodeAll(nil, []*message.Message{msg("F", 0, "replicated", nil)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitLog().Append(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	s.wakeDispatcher()
	time.Sleep(300 * time.Millisecond)
	if max := s.MaxOffset("F", 0); max != 5 || s.Stats().DispatchBehind == 0 {
		t.Fatalf("dispatched while Pebble could not flush: max offset %d, behind %d", max, s.Stats().DispatchBehind)
	}
	in.Clear()
	waitDispatched(t, s, "F", 0, 6)
}

// TestStoreKVFatalFaults: a MANIFEST write or sync failing after a flush
// is fatal to Pebble. The broker process stops with the error logged —
// it does not go on acknowledging — and a restart on a healthy disk has
// every acknowledged message (re-dispatched from the CommitLog) and the
// consumer offsets persisted before the fault.
func TestStoreKVFatalFaults(t *testing.T) {
	for _, target := range []kvfault.Target{kvfault.ManifestWrite, kvfault.ManifestSync} {
		for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EIO} {
			t.Run(fmt.Sprintf("%v/%v", target, errno), func(t *testing.T) {
				root := t.TempDir()
				log, err := kvfault.RunChild(t, fmt.Sprintf("%s=%s|%d|%d", kvFaultChildEnv, root, target, errno), 60*time.Second)
				if err == nil || strings.Contains(log, "SURVIVED") {
					t.Fatalf("the broker went on after a fatal Pebble error (exit %v):\n%s", err, log)
				}
				if !strings.Contains(log, "OFFSETS") || !strings.Contains(log, "pebble fatal error: the broker stops") || !strings.Contains(log, errno.Error()) {
					t.Fatalf("child log lacks the fatal error or stopped early:\n%s", log)
				}
				var good []acked
				for _, line := range strings.Split(log, "\n") {
					var a acked
					if n, _ := fmt.Sscanf(line, "ACK %d %d %d", &a.seq, &a.res.QueueOffset, &a.res.PhysicalOffset); n == 3 {
						good = append(good, a)
					}
				}
				if len(good) < 25 {
					t.Fatalf("child acknowledged %d messages:\n%s", len(good), log)
				}
				s := openStore(t, kvFaultConfig(root, vfs.Default, slog.New(slog.DiscardHandler)))
				defer s.Close()
				checkQueue(t, s, good)
				checkKeys(t, s, good)
				// 12 if the failed MANIFEST record still reached the file.
				if off, ok := s.QueryOffset("g", "F", 0); !ok || (off != 5 && off != 12) {
					t.Fatalf("offset of g after restart: %d %v, want 5 (persisted) or 12", off, ok)
				}
			})
		}
	}
}

// runKVFaultChild runs one TestStoreKVFatalFaults broker: spec is
// root|target|errno. It prints ACK lines for acknowledged sends and
// OFFSETS once offsets are persisted, arms the fault, sends and commits
// more, and flushes the offsets — which should stop the process. Printing
// SURVIVED is the failure the parent looks for.
func runKVFaultChild(spec string) int {
	parts := strings.Split(spec, "|")
	if len(parts) != 3 {
		fmt.Println("bad spec", spec)
		return 3
	}
	var target, errno int
	fmt.Sscan(parts[1], &target)
	fmt.Sscan(parts[2], &errno)
	in := kvfault.New(vfs.Default)
	s, err := Open(kvFaultConfig(parts[0], in.FS(), slog.New(slog.NewTextHandler(os.Stdout, nil))))
	if err != nil {
		fmt.Println("open:", err)
		return 3
	}
	send := func(seq int) error {
		res, err := putKeyed(s, seq)
		if err != nil {
			return err
		}
		fmt.Printf("ACK %d %d %d\n", seq, res.QueueOffset, res.PhysicalOffset)
		return nil
	}
	for i := range 20 {
		if err := send(i); err != nil {
			fmt.Println("put:", err)
			return 3
		}
	}
	s.CommitOffset("g", "F", 0, 5)
	if err := s.Offsets().Flush(); err != nil {
		fmt.Println("offset flush:", err)
		return 3
	}
	fmt.Println("OFFSETS")
	in.Arm(kvfault.Target(target), syscall.Errno(errno))
	for i := 100; i < 105; i++ {
		if err := send(i); err != nil {
			fmt.Println("put:", err)
			return 3
		}
	}
	s.CommitOffset("g", "F", 0, 12)
	err = s.Offsets().Flush()
	time.Sleep(5 * time.Second)
	for i := 200; i < 210; i++ {
		send(i)
	}
	fmt.Println("SURVIVED", err, "hits", in.Hits())
	return 0
}
