package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
)

// BenchmarkManyQueues stores b.N messages, each into a queue of its own,
// and reports what one queue costs: Pebble bytes on disk, process RSS, and
// the dispatch rate. One million queues:
//
//	go test -run '^$' -bench ManyQueues -benchtime 1000000x ./broker/store/
//
// Half the queues are plain (1000 topics × queue ids), half are LMQs
// reached by multi-dispatch, as lite topics create them.
func BenchmarkManyQueues(b *testing.B) {
	dir := b.TempDir()
	cfg := DefaultConfig(dir)
	cfg.CommitLog.FileSize = 256 << 20
	cfg.MaxLmqConsumeQueueNum = b.N + 1
	s, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { s.Close() }() // the one reopened below
	ctx := context.Background()
	body := make([]byte, 128)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		m := &message.Message{Body: body, Properties: map[string]string{}, BornTimestamp: 1}
		if i%2 == 0 {
			m.Topic = "Q" + strconv.Itoa(i%1000)
			m.QueueID = int32(i / 1000)
		} else {
			m.Topic = "Parent"
			m.Properties[message.PropertyInnerMultiDispatch] = "%LMQ%$Parent$lite-" + strconv.Itoa(i)
		}
		if _, err := s.PutMessage(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
	// Wait for the dispatcher to index everything.
	for s.cq.DispatchedOffset() < s.cl.MaxOffset() {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if err := s.cq.Flush(); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	queues := s.cq.QueueCount()
	b.ReportMetric(float64(queues), "queues")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(testutil.DirSize(filepath.Join(dir, "kv")))/float64(queues), "pebbleB/queue")
	b.ReportMetric(float64(rssAnonKiB())/1024, "rssAnonMiB")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/float64(queues), "heapB/queue")
	// A restart rebuilds the table from Pebble (LMQs from their newest
	// entries): how long it takes, and that nothing is missing.
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	s, err = Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(time.Since(t0).Seconds(), "reopenSec")
	if got := s.cq.QueueCount(); got != queues {
		b.Fatalf("%d queues after a restart, had %d", got, queues)
	}
}

func rssAnonKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "RssAnon:") {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(line, "RssAnon:"), "kB")), &kb)
			return kb
		}
	}
	return 0
}
