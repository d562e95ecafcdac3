package commitlog

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/rmqgo/rmq/broker/store/vfs"
)

// TestConcurrentAppends runs writers, readers and an iterator together
// (meant for -race) and checks offsets: contiguous physical offsets,
// per-queue offsets dense and increasing in physical order.
func TestConcurrentAppends(t *testing.T) {
	for _, mode := range []FlushDiskType{AsyncFlush, SyncFlush} {
		t.Run(mode.String(), func(t *testing.T) {
			cfg := testConfig(vfs.OS(), t.TempDir())
			cfg.FileSize = 32 << 10
			cfg.MaxRecordSize = 4096
			cfg.MaxBatchBytes = 16 << 10
			cfg.FlushDiskType = mode
			cfg.Assigner = newAssigner()
			l := mustOpen(t, cfg)
			defer l.Close()
			const writers, each = 8, 150
			var wg sync.WaitGroup
			done := make(chan struct{})
			// A reader tails the log while it grows.
			var tailed int
			var tailErr error
			var rwg sync.WaitGroup
			rwg.Go(func() {
				it := l.NewIterator(0, IteratorOptions{})
				defer it.Close()
				for {
					_, err := it.Next()
					if err == nil {
						tailed++
						continue
					}
					select {
					case <-done:
						for {
							if _, err := it.Next(); err != nil {
								return
							}
							tailed++
						}
					default:
					}
					if err.Error() != "EOF" {
						tailErr = err
						return
					}
				}
			})
			for w := range writers {
				wg.Go(func() {
					for i := range each {
						res, err := l.Append(context.Background(), record(t, "Q", int32(w%3), w*1000+i, 50+(i*13)%400))
						if err != nil {
							t.Error(err)
							return
						}
						if rec, err := l.ReadRecord(res.PhysicalOffset); err != nil {
							t.Error(err)
						} else {
							rec.Release()
						}
					}
				})
			}
			wg.Wait()
			close(done)
			rwg.Wait()
			if tailErr != nil {
				t.Fatal(tailErr)
			}
			recs := readAll(t, l)
			if len(recs) != writers*each || tailed != writers*each {
				t.Fatalf("%d records, tailed %d", len(recs), tailed)
			}
			next := map[string]int64{}
			for _, r := range recs {
				k := fmt.Sprintf("%s-%d", r.View.Topic(), r.View.QueueID())
				if r.View.QueueOffset() != next[k] {
					t.Fatalf("queue %s: offset %d, want %d", k, r.View.QueueOffset(), next[k])
				}
				next[k]++
			}
		})
	}
}
