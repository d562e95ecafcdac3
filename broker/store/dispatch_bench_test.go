package store

import (
	"context"
	"log/slog"
	"net/netip"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/pkg/message"
)

// BenchmarkDispatch8Queues is what the consume queue costs under a batch
// send load: b.N messages put in batches of 16 (mqbench producer -b 16)
// over 8 queues of one topic, each with a UNIQ_KEY as a client makes it,
// dispatched while they are put. It reports the process CPU per message
// (puts, dispatch and Pebble's flushes and compactions, which it waits
// for), the bytes Pebble flushed and compacted per message and its write
// amplification, and the compaction work Pebble left undone (debt).
// Enough messages to give Pebble several levels:
//
//	go test -run '^$' -bench Dispatch8Queues -benchtime 2000000x ./broker/store/
func BenchmarkDispatch8Queues(b *testing.B) {
	dir := b.TempDir()
	cfg := DefaultConfig(dir)
	cfg.CommitLog.FileSize = 256 << 20
	cfg.CommitLog.CleanResourceInterval = 0
	cfg.Logger = slog.New(slog.DiscardHandler)
	s, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	body := make([]byte, 128)
	gen := message.NewUniqIDGenerator(netip.MustParseAddr("10.1.2.3"), 4242, 77, nil)
	const batch = 16
	msgs := make([]*message.Message, batch)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i += batch {
		n := min(batch, b.N-i)
		for j := range n {
			msgs[j] = &message.Message{Topic: "BenchTopic", QueueID: int32(i / batch % 8), Body: body, BornTimestamp: 1,
				Properties: map[string]string{message.PropertyUniqClientMessageIDKeyIdx: gen.Next()}}
		}
		if _, err := s.PutMessages(ctx, msgs[:n]); err != nil {
			b.Fatal(err)
		}
	}
	for s.cq.DispatchedOffset() < s.cl.MaxOffset() {
		time.Sleep(time.Millisecond)
	}
	// Pebble's share: the memtables flushed and the compactions they
	// start, as a long run would have them in the background (what
	// Pebble does not start is reported as debt).
	if err := s.cq.Flush(); err != nil {
		b.Fatal(err)
	}
	for idle, deadline := 0, time.Now().Add(2*time.Minute); idle < 25 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if s.db.Metrics().Compact.NumInProgress == 0 {
			idle++
		} else {
			idle = 0
		}
	}
	cpu := processCPU() - cpu0
	b.StopTimer()
	m := s.db.Metrics()
	tot := m.Total()
	n := float64(b.N)
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/msg")
	b.ReportMetric(float64(tot.TableBytesFlushed)/n, "flushB/msg")
	b.ReportMetric(float64(tot.TableBytesCompacted)/n, "compactB/msg")
	b.ReportMetric(float64(tot.TableBytesRead)/n, "compactReadB/msg")
	b.ReportMetric(tot.WriteAmp(), "writeAmp")
	b.ReportMetric(float64(m.Compact.EstimatedDebt)/n, "debtB/msg")
	b.ReportMetric(float64(tot.TablesCount), "tables")
	b.ReportMetric(float64(m.Levels[0].TablesCount), "L0tables")
	b.ReportMetric(float64(levels(m)), "levels")
	if testing.Verbose() {
		b.Logf("pebble:\n%s", m)
	}
	runtime.KeepAlive(msgs)
}

// processCPU is the user and system CPU time of the process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// levels counts the LSM levels holding tables.
func levels(m *pebble.Metrics) int {
	n := 0
	for _, l := range m.Levels {
		if l.TablesCount > 0 {
			n++
		}
	}
	return n
}
