package commitlog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rmqgo/rmq/broker/store/vfs"
	"github.com/rmqgo/rmq/pkg/message"
)

// crashRun appends from several goroutines, crashes the file system at a
// random moment (keeping a torn prefix of unsynced writes) and reopens. It
// returns the acknowledged appends (offset → record) and the reopened log.
func crashRun(t *testing.T, seed uint64, mode FlushDiskType) (map[int64][]byte, *Log, *vfs.MemFS) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed*7+1))
	mem := vfs.NewMem()
	// The crashed process does nothing more: every file operation of the
	// old log after the crash fails (a roll or a segment made ahead after
	// it would otherwise leave files a real crash cannot).
	var dead atomic.Bool
	ffs := vfs.NewFaultFS(mem)
	ffs.SetHook(func(vfs.Op) error {
		if dead.Load() {
			return errors.New("the process crashed")
		}
		return nil
	})
	cfg := testConfig(ffs, "/s")
	smallSegments(&cfg, 8192)
	cfg.FlushDiskType = mode
	cfg.Assigner = newAssigner()
	// Odd seeds crash with the next segment made ahead (the broker's
	// setting): recovery must drop or adopt the empty spare.
	cfg.PrepareNext = seed%2 == 1
	l := mustOpen(t, cfg)

	var mu sync.Mutex
	acked := map[int64][]byte{}
	crashAfter := 20 + rng.IntN(150)
	var wg sync.WaitGroup
	var once sync.Once
	var count int
	stop := make(chan struct{})
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				rec := record(t, "C", int32(w), i, 50+(w*131+i*17)%900)
				res, err := l.Append(context.Background(), rec)
				if err != nil {
					return // the log was "crashed" under us
				}
				mu.Lock()
				acked[res.PhysicalOffset] = rec
				count++
				if count >= crashAfter {
					once.Do(func() {
						// Power cut: what the disk has now is all that survives.
						dead.Store(true)
						mem.Crash(vfs.CrashOptions{Rand: rng})
						close(stop)
					})
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	// The old Log is abandoned like a killed process; its files are gone
	// from the crashed FS's point of view.
	l.abandon()
	cfg.FS = mem
	l2, err := Open(cfg)
	if err != nil {
		t.Fatalf("seed %d: reopen: %v", seed, err)
	}
	return acked, l2, mem
}

// flushCrashReopen flushes l, kills it, crashes mem and reopens the log:
// what a process killed right after a successful flush finds.
func flushCrashReopen(t *testing.T, l *Log, mem *vfs.MemFS, cfg Config) *Log {
	t.Helper()
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	l.abandon()
	mem.Crash(vfs.CrashOptions{})
	return mustOpen(t, cfg)
}

// abandon stops background goroutines without flushing or touching files,
// standing in for a killed process.
func (l *Log) abandon() {
	l.mu.Lock()
	if l.err == nil {
		l.err, _ = ErrClosed, l.failed.Swap(true)
	}
	l.cond.Broadcast()
	l.mu.Unlock()
	l.closeOnce.Do(func() {
		close(l.stop)
		l.wg.Wait()
	})
}

// verifyRecovered checks the invariants after a crash: the log is a run of
// valid records, each one identical to an acknowledged append or to one
// still in flight, and it never serves a corrupt record.
func verifyRecovered(t *testing.T, seed uint64, l *Log, acked map[int64][]byte) []Record {
	t.Helper()
	if !l.Recovery().Abnormal {
		t.Fatalf("seed %d: crash not detected", seed)
	}
	recs := readAll(t, l)
	for _, r := range recs {
		if !r.View.VerifyCRC() {
			t.Fatalf("seed %d: corrupt record served at %d", seed, r.Offset)
		}
		if want, ok := acked[r.Offset]; ok && !sameRecord(r.View, want) {
			t.Fatalf("seed %d: record at %d differs from the acknowledged one", seed, r.Offset)
		}
	}
	return recs
}

func TestCrashSyncFlushLosesNothingAcked(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			acked, l, _ := crashRun(t, seed, SyncFlush)
			defer l.Close()
			recs := verifyRecovered(t, seed, l, acked)
			have := map[int64]bool{}
			for _, r := range recs {
				have[r.Offset] = true
			}
			for off := range acked {
				if !have[off] {
					t.Fatalf("seed %d: fsynced record at %d lost (max %d)", seed, off, l.MaxOffset())
				}
			}
			// The log keeps working after recovery.
			mustAppend(t, l, record(t, "C", 0, 1000, 100))
		})
	}
}

func TestCrashAsyncFlushKeepsAPrefix(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			acked, l, _ := crashRun(t, seed, AsyncFlush)
			defer l.Close()
			verifyRecovered(t, seed, l, acked)
			// Every record that survived was acknowledged, or was being
			// appended when the crash hit; whatever was fsynced survived.
			res := mustAppend(t, l, record(t, "C", 0, 1000, 100))
			if res.PhysicalOffset != l.MaxOffset()-int64(res.Size) {
				t.Fatal("append after recovery")
			}
		})
	}
}

// TestRecoveryCutsCorruption flips bytes inside records and checks that
// recovery cuts the log before them and that nothing after is resurrected.
func TestRecoveryCutsCorruption(t *testing.T) {
	for seed := range uint64(16) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 3))
			l, mem, cfg := smallMemLog(t, 8192)
			offs := appendRecords(t, l, "X", 30, func(int) int { return 100 + rng.IntN(500) })
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			// Corrupt one record of the last segment, then crash (abort
			// marker stays).
			last := l.SegmentBases()[len(l.SegmentBases())-1]
			var victims []int64
			for _, o := range offs {
				if o >= last {
					victims = append(victims, o)
				}
			}
			victim := victims[rng.IntN(len(victims))]
			// The stored format protects the size, magic and body (CRC);
			// the physical offset is checked too. Other header fields have
			// no checksum in RocketMQ's format, so flips go where they count.
			var flip int64
			switch rng.IntN(3) {
			case 0:
				flip = victim + int64(rng.IntN(8)) // totalSize, magic
			case 1:
				flip = victim + 28 + int64(rng.IntN(8)) // physical offset
			default:
				flip = victim + 88 + int64(rng.IntN(100)) // body
			}
			l.abandon()
			file := cfg.Dir + "/" + segmentName(last)
			b := []byte{byte(rng.IntN(255) + 1)}
			f, _ := mem.Open(file)
			old := make([]byte, 1)
			f.ReadAt(old, flip-last)
			f.Close()
			if err := mem.Corrupt(file, flip-last, []byte{old[0] ^ b[0]}); err != nil {
				t.Fatal(err)
			}
			l = mustOpen(t, cfg)
			defer l.Close()
			r := l.Recovery()
			if l.MaxOffset() != victim || !r.Truncated {
				t.Fatalf("recovered to %d (%+v), corrupt record at %d", l.MaxOffset(), r, victim)
			}
			n := len(readAll(t, l))
			// New appends overwrite the cut tail; the old records after the
			// victim must never come back, even after another crash.
			for i := range 3 {
				mustAppend(t, l, record(t, "Y", 0, i, 100+rng.IntN(500)))
			}
			l = flushCrashReopen(t, l, mem, cfg)
			defer l.Close()
			recs := readAll(t, l)
			if len(recs) != n+3 {
				t.Fatalf("after second recovery: %d records, want %d", len(recs), n+3)
			}
			for _, r := range recs[n:] {
				if string(r.View.Topic()) != "Y" {
					t.Fatalf("stale record resurrected at %d", r.Offset)
				}
			}
		})
	}
}

// TestReadNeverServesCorruption: bit rot in an old segment (not rescanned
// at a clean start) is caught when the record is read.
func TestReadNeverServesCorruption(t *testing.T) {
	l, mem, cfg := smallMemLog(t, 4096)
	offs := appendRecords(t, l, "R", 20, func(int) int { return 300 })
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	victim := offs[1]
	if err := mem.Corrupt(cfg.Dir+"/"+segmentName(0), victim+100, []byte{0xEE}); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, cfg)
	defer l.Close()
	if _, err := l.ReadRecord(victim); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read corrupt record: %v", err)
	}
	it := l.NewIterator(0, IteratorOptions{})
	defer it.Close()
	if _, err := it.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := it.Next(); !errors.Is(err, ErrCorrupt) || it.Offset() != victim {
		t.Fatalf("iterator over corrupt record: %v at %d", err, it.Offset())
	}
	if rec, err := l.ReadRecord(offs[2]); err != nil || rec.View.PhysicalOffset() != offs[2] {
		t.Fatalf("neighbour: %v", err)
	}
	if _, err := l.ReadRecord(victim + 1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("misaligned read: %v", err)
	}
	_ = message.BlankMagic
}
