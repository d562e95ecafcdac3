package ha

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"
)

// TestReporterNeverGoesBack: the read loop (append, then report) and the
// keep-alive (report) run at once; what reaches the wire never decreases,
// since the master closes a connection whose offset goes back.
func TestReporterNeverGoesBack(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	l := newLink(s.CommitLog(), func() string { return "" }, fastOptions(nil))
	defer l.cancel()

	var mu sync.Mutex
	var wire []int64
	report := l.reporter(func(b []byte) error {
		// A slow write widens the window between reading the log end and
		// sending it.
		time.Sleep(50 * time.Microsecond)
		mu.Lock()
		wire = append(wire, int64(binary.BigEndian.Uint64(b[4:12])))
		mu.Unlock()
		return nil
	}, AppendAck)

	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
				if err := report(true); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	for i := range 300 {
		put(t, s, "ReporterTopic", i, 1)
		if err := report(false); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	for i := 1; i < len(wire); i++ {
		if wire[i] < wire[i-1] {
			t.Fatalf("report %d is %d after %d", i, wire[i], wire[i-1])
		}
	}
	if last := wire[len(wire)-1]; last != s.CommitLog().MaxOffset() {
		t.Fatalf("last report %d, log end %d", last, s.CommitLog().MaxOffset())
	}
}
