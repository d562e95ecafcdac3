package commitlog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/store/vfs"
	"github.com/rmqgo/rmq/pkg/message"
)

// Benchmarks run on the real disk in the test's temp dir. Compare in one
// run:
//
//	go test -run '^$' -bench 'Append$|RawWrite|AppendVsRaw' ./broker/store/commitlog/
//
// BenchmarkAppendVsRaw reports the ratio directly (target ≥ 0.8).

const benchRecordBody = 1024 - 100 // record ≈ 1 KiB with headers and properties

func benchLog(b *testing.B, dir string, mode FlushDiskType, fsys vfs.FS) *Log {
	return benchLogWith(b, dir, mode, fsys, nil)
}

func benchLogWith(b *testing.B, dir string, mode FlushDiskType, fsys vfs.FS, tweak func(*Config)) *Log {
	b.Helper()
	cfg := DefaultConfig(filepath.Join(dir, "commitlog"))
	cfg.FS = fsys
	cfg.FileSize = 64 << 20
	cfg.FlushDiskType = mode
	cfg.CleanResourceInterval = 0
	cfg.Logger = quietLogger()
	cfg.Assigner = &counter{}
	if tweak != nil {
		tweak(&cfg)
	}
	l, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// appendN appends n copies of rec sequentially and returns the time taken.
func appendN(b *testing.B, l *Log, rec []byte, n int) time.Duration {
	ctx := context.Background()
	start := time.Now()
	for range n {
		if _, err := l.Append(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// rawN writes n copies of rec with one write(2) each, sequentially.
func rawN(b *testing.B, dir string, rec []byte, n int) time.Duration {
	f, err := os.Create(filepath.Join(dir, "raw"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	start := time.Now()
	for range n {
		if _, err := f.Write(rec); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// counter is the cheapest possible assigner (one queue), so benchmarks
// measure the log, not the test's bookkeeping.
type counter struct{ n int64 }

func (c *counter) AssignQueueOffset(_ message.View, n int) (int64, error) {
	off := c.n
	c.n += int64(n)
	return off, nil
}

func BenchmarkAppend(b *testing.B) {
	rec := record(b, "BenchTopic", 0, 0, benchRecordBody)
	l := benchLog(b, b.TempDir(), AsyncFlush, vfs.OS())
	defer l.Close()
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	b.ResetTimer()
	appendN(b, l, rec, b.N)
}

func BenchmarkRawWrite(b *testing.B) {
	rec := record(b, "BenchTopic", 0, 0, benchRecordBody)
	dir := b.TempDir()
	b.SetBytes(int64(len(rec)))
	b.ResetTimer()
	rawN(b, dir, rec, b.N)
}

// BenchmarkAppendVsRaw times both with the same count in the same process
// and reports append throughput as a fraction of raw (ratio).
func BenchmarkAppendVsRaw(b *testing.B) {
	rec := record(b, "BenchTopic", 0, 0, benchRecordBody)
	dir := b.TempDir()
	l := benchLog(b, dir, AsyncFlush, vfs.OS())
	defer l.Close()
	b.SetBytes(int64(len(rec)))
	b.ResetTimer()
	// Alternate halves so page-cache and disk state affect both alike.
	half := b.N/2 + 1
	tr := rawN(b, dir, rec, half)
	ta := appendN(b, l, rec, half)
	tr += rawN(b, dir, rec, half)
	ta += appendN(b, l, rec, half)
	b.ReportMetric(float64(tr)/float64(ta), "ratio")
}

func BenchmarkAppendSync(b *testing.B) {
	for _, zeroAhead := range []int64{0, 16 << 20} {
		for _, writers := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("zeroAhead=%dMiB/writers=%d", zeroAhead>>20, writers), func(b *testing.B) {
				benchAppendSync(b, writers, zeroAhead)
			})
		}
	}
}

// benchAppendSync appends from writers goroutines with SYNC_FLUSH and
// reports fsyncs and process CPU (user + system) per append.
func benchAppendSync(b *testing.B, writers int, zeroAhead int64) {
	rec := record(b, "BenchTopic", 0, 0, benchRecordBody)
	ffs := vfs.NewFaultFS(vfs.OS()) // pass-through, counts fsyncs
	l := benchLogWith(b, b.TempDir(), SyncFlush, ffs, func(c *Config) { c.ZeroAhead = zeroAhead })
	defer l.Close()
	b.SetBytes(int64(len(rec)))
	_, s0, _ := ffs.Stats()
	cpu0 := processCPU()
	var left atomic.Int64
	left.Store(int64(b.N))
	b.ResetTimer()
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if _, err := l.Append(context.Background(), rec); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	_, s1, _ := ffs.Stats()
	b.ReportMetric(float64(s1-s0)/float64(b.N), "fsyncs/op")
	b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// processCPU is the process's user + system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRecoverScan times the recovery scan after a crash (abort marker
// left, no checkpoint): every record of a 256 MiB log of 1 KiB records is
// verified (header, CRC, layout, position), as the broker does after
// kill -9. MB/s is the re-scan rate issue 18 targets (≥ 1 GB/s).
//
//	go test -run '^$' -bench RecoverScan -cpuprofile /tmp/rec.cpu ./broker/store/commitlog/
func BenchmarkRecoverScan(b *testing.B) {
	const size = 256 << 20
	dir := b.TempDir()
	cfg := DefaultConfig(filepath.Join(dir, "commitlog"))
	cfg.FileSize = 1 << 30
	cfg.CleanResourceInterval = 0
	cfg.PrepareNext = false
	cfg.Logger = quietLogger()
	cfg.Assigner = &counter{}
	l, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	// Batches of records as the broker writes them, each naming its own
	// offset (Append sets it).
	rec := record(b, "BenchTopic", 0, 0, benchRecordBody)
	for l.MaxOffset() < size {
		if _, err := l.Append(context.Background(), rec); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	l.abandon() // the abort marker stays: the next Open verifies everything
	ckpt := cfg.CheckpointPath
	b.SetBytes(l.MaxOffset())
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		_ = os.Remove(ckpt) // no checkpoint: scan from the first record
		b.StartTimer()
		l2, err := Open(cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		r := l2.Recovery()
		if !r.Abnormal || r.End != l.MaxOffset() || r.ScanFrom != 0 {
			b.Fatalf("recovery %+v, want abnormal, 0..%d", r, l.MaxOffset())
		}
		b.ReportMetric(float64(r.End-r.ScanFrom)/r.ScanTook.Seconds()/1e6, "scanMB/s")
		l2.abandon()
		b.StartTimer()
	}
}
