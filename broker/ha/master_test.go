package ha

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/internal/testutil"
)

// rawMaster is a master with no slave, for raw-socket clients.
func rawMaster(t *testing.T, opts Options) (*store.Store, *Master) {
	t.Helper()
	st := openStore(t, tempDir(t, "master"))
	m := NewMaster(st.CommitLog(), testutil.Listen(t), opts)
	m.Start()
	t.Cleanup(func() {
		_ = m.Close()
		_ = st.Close()
	})
	return st, m
}

// loadedMaster is rawMaster with five messages of topic in its log; it
// returns the master and the end of the log.
func loadedMaster(t *testing.T, opts Options, topic string) (*Master, int64) {
	t.Helper()
	st, m := rawMaster(t, opts)
	put(t, st, topic, 0, 5)
	return m, st.CommitLog().MaxOffset()
}

func dial(t *testing.T, m *Master) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", m.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return nc
}

func report(t *testing.T, nc net.Conn, off int64) {
	t.Helper()
	if _, err := nc.Write(AppendReport(nil, off)); err != nil {
		t.Fatal(err)
	}
}

// expectClosed drains nc until the master closes it.
func expectClosed(t *testing.T, nc net.Conn, within time.Duration) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, nc)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %v", within)
	}
}

// TestStrangerHugeOffset (#3015): anything writing a large offset to the HA
// port is closed and completes no waiting send.
func TestStrangerHugeOffset(t *testing.T) {
	m, end := loadedMaster(t, fastOptions(nil), "TopicS")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	waited := make(chan error, 1)
	go func() { waited <- m.WaitAcks(ctx, end, 2, 0) }()
	nc := dial(t, m)
	report(t, nc, 1<<62)
	expectClosed(t, nc, 2*time.Second)
	if err := <-waited; !errors.Is(err, ErrReplicaTimeout) {
		t.Fatalf("the waiting send completed: %v", err)
	}
	if n := m.AckedSlaves(end); n != 0 {
		t.Fatalf("%d slaves acked", n)
	}
}

// receive plays a slave on a raw connection: it reports 0 (an empty
// slave, so the transfer starts at the master's last file, here 0), reads
// frames until it holds end, and acknowledges end.
func receive(t *testing.T, nc net.Conn, end int64) {
	t.Helper()
	report(t, nc, 0)
	tr := NewTransferReader(nc)
	_ = nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	for got := int64(0); got < end; {
		f, err := tr.Next()
		if err != nil {
			t.Fatalf("reading transfer frames: %v", err)
		}
		got = f.Start + int64(len(f.Body))
	}
	_ = nc.SetReadDeadline(time.Time{})
	report(t, nc, end)
}

// TestDecreasingReportClosed: a report below the previous one on the same
// connection closes it; a valid ack of received bytes counts meanwhile.
func TestDecreasingReportClosed(t *testing.T) {
	m, end := loadedMaster(t, fastOptions(nil), "TopicD")
	nc := dial(t, m)
	receive(t, nc, end)
	testutil.WaitFor(t, 2*time.Second, "ack counted", func() bool { return m.AckedSlaves(end) == 1 })
	report(t, nc, end-1)
	expectClosed(t, nc, 2*time.Second)
	testutil.WaitFor(t, 2*time.Second, "ack forgotten", func() bool { return m.AckedSlaves(end) == 0 })
}

// TestAckCountsOnlyWhatWasTransferred: a first report claiming the whole
// log (a stranger, or a slave that reconnected) completes no waiting send;
// a report beyond the bytes a connection was sent closes it; two slaves on
// one host each count.
func TestAckCountsOnlyWhatWasTransferred(t *testing.T) {
	m, end := loadedMaster(t, fastOptions(nil), "TopicN")

	claimer := dial(t, m)
	report(t, claimer, end)
	testutil.WaitFor(t, 2*time.Second, "claimer seen", func() bool {
		st := m.Status()
		return len(st.HAConnectionInfo) == 1 && st.HAConnectionInfo[0].SlaveAckOffset == end
	})
	if n := m.AckedSlaves(end); n != 0 {
		t.Fatalf("a first report counted as an ack of %d: %d slaves", end, n)
	}

	a, b := dial(t, m), dial(t, m)
	receive(t, a, end)
	receive(t, b, end)
	testutil.WaitFor(t, 2*time.Second, "both slaves on one host count", func() bool { return m.AckedSlaves(end) == 2 })

	_ = a.Close()
	testutil.WaitFor(t, 2*time.Second, "a closed slave no longer counts", func() bool { return m.AckedSlaves(end) == 1 })

	// An ack within the master's log but beyond what the connection was
	// sent is a lie: the transfer is throttled to 100 bytes a second, so
	// the connection has been sent far less than end.
	opts := fastOptions(nil)
	opts.MaxTransferBytesPerSecond = 100
	slow, end2 := loadedMaster(t, opts, "TopicN")
	liar := dial(t, slow)
	report(t, liar, 0)
	report(t, liar, end2)
	expectClosed(t, liar, 2*time.Second)
	if n := slow.AckedSlaves(end2); n != 0 {
		t.Fatalf("the liar counted: %d", n)
	}
}

// TestKeepAliveAndHousekeeping: an idle master sends empty frames at the
// next offset every heartbeat interval, and closes a slave that stays
// silent for the housekeeping interval.
func TestKeepAliveAndHousekeeping(t *testing.T) {
	opts := fastOptions(nil)
	opts.HousekeepingInterval = 600 * time.Millisecond
	st, m := rawMaster(t, opts)
	put(t, st, "TopicK", 0, 3)
	end := st.CommitLog().MaxOffset()
	nc := dial(t, m)
	report(t, nc, end)
	tr := NewTransferReader(nc)
	_ = nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	start := time.Now()
	for range 3 {
		f, err := tr.Next()
		if err != nil {
			t.Fatal(err)
		}
		if f.Start != end || len(f.Body) != 0 {
			t.Fatalf("keep-alive frame: start %d, %d bytes (want %d, 0)", f.Start, len(f.Body), end)
		}
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("three keep-alives in %v: not spaced by the heartbeat interval", d)
	}
	// Silent since the report: closed after the housekeeping interval.
	expectClosed(t, nc, 2*time.Second)
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Fatalf("closed after %v, before the housekeeping interval", d)
	}
}

// TestSlaveBehindMinOffset (#3388): a slave whose offset is no longer on
// the master is closed with a "full resync" log line, not fed heartbeats.
func TestSlaveBehindMinOffset(t *testing.T) {
	// A master whose log starts at a later file: itself a slave that
	// started empty.
	p := startLastFilePair(t)
	p.s.Close()
	st := p.slave
	if st.CommitLog().MinOffset() == 0 {
		t.Fatal("expected a log that starts above 0")
	}

	var logs logBuffer
	opts := fastOptions(logs.logger())
	m := NewMaster(st.CommitLog(), testutil.Listen(t), opts)
	m.Start()
	defer m.Close()
	nc := dial(t, m)
	report(t, nc, 1)
	expectClosed(t, nc, 2*time.Second)
	testutil.WaitFor(t, 2*time.Second, "resync log line", func() bool { return logs.contains("slave needs a full resync") })
}

// TestSlaveRejectsMisplacedFrame: a frame that does not start at the
// slave's end closes the connection; the slave reconnects.
func TestSlaveRejectsMisplacedFrame(t *testing.T) {
	slave := openStore(t, tempDir(t, "slave"))
	defer slave.Close()
	first := logBytes(t, 2)

	ln := testutil.Listen(t)
	defer ln.Close()
	var logs logBuffer
	addr := ln.Addr().String()
	s := NewSlave(slave.CommitLog(), func() string { return addr }, fastOptions(logs.logger()))
	s.Start()
	defer s.Close()
	accept := func() net.Conn {
		nc, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		var b [ReportSize]byte
		if _, err := ReadReport(nc, &b); err != nil {
			t.Fatalf("no report on connect: %v", err)
		}
		return nc
	}
	nc := accept()
	if _, err := nc.Write(append(AppendHeader(nil, 0, len(first)), first...)); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 2*time.Second, "appended", func() bool { return slave.CommitLog().MaxOffset() == int64(len(first)) })
	if _, err := nc.Write(AppendHeader(nil, 7, 0)); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, nc, 2*time.Second)
	nc.Close()
	nc = accept() // reconnected
	nc.Close()
	if !logs.contains("local log ends at") {
		t.Fatal("no log line for the misplaced frame")
	}
}

// TestPumpHold: a frame shorter than the batch waits for the ack of the
// bytes in flight unless it cannot grow (it reaches the end of a CommitLog
// file); full frames and frames with nothing in flight leave at once.
func TestPumpHold(t *testing.T) {
	_, m := rawMaster(t, fastOptions(nil))
	const batch = 1024
	inFlight := func() bool { return true }
	settled := func() bool { return false }
	for _, tc := range []struct {
		name    string
		unacked func() bool
		next, n int64
		want    bool
	}{
		{"short frame, bytes in flight", inFlight, 0, 100, true},
		{"short frame, all acked", settled, 0, 100, false},
		{"no rule (auto-switch)", nil, 0, 100, false},
		{"nothing to send", inFlight, 0, 0, false},
		{"full batch", inFlight, 0, batch, false},
		{"reaches the file end", inFlight, testFileSize - 100, 100, false},
		{"short of the file end", inFlight, testFileSize - 200, 100, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pump{h: &m.hub, unacked: tc.unacked}
			if got := p.hold(tc.next, tc.n, batch); got != tc.want {
				t.Fatalf("hold(%d, %d) = %v, want %v", tc.next, tc.n, got, tc.want)
			}
		})
	}
}

// TestWaitAcksReleasedOnClose: sends waiting for acks fail as soon as the
// master closes, not when their timeout ends, and a waiter that gave up
// is gone from the table.
func TestWaitAcksReleasedOnClose(t *testing.T) {
	st, m := rawMaster(t, fastOptions(nil))
	end := put(t, st, "TopicC", 0, 1).End
	if err := m.WaitAcks(context.Background(), end, 2, 20*time.Millisecond); !errors.Is(err, ErrReplicaTimeout) {
		t.Fatalf("no slave: %v", err)
	}
	m.mu.Lock()
	left := len(m.waiters)
	m.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d waiters left after a timeout", left)
	}
	waited := make(chan error, 1)
	go func() { waited <- m.WaitAcks(context.Background(), end, 2, time.Minute) }()
	testutil.WaitFor(t, 5*time.Second, "send waiting", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.waiters) == 1
	})
	_ = m.Close()
	wantReplicaTimeout(t, waited, "the master's close")
	if err := m.WaitAcks(context.Background(), end, 2, time.Minute); !errors.Is(err, ErrReplicaTimeout) {
		t.Fatalf("closed master: %v", err)
	}
}

// TestSlaveCoalescesReports: frames that arrive in one read are appended
// and then reported once, with the offset after the last; a frame that
// arrives alone is reported at once.
func TestSlaveCoalescesReports(t *testing.T) {
	slave := openStore(t, tempDir(t, "slave"))
	defer slave.Close()
	data := logBytes(t, 4)
	if len(data) > 12<<10 {
		t.Fatalf("test data of %d bytes should fit one loopback segment", len(data))
	}

	ln := testutil.Listen(t)
	defer ln.Close()
	addr := ln.Addr().String()
	opts := fastOptions(nil)
	opts.HeartbeatInterval = time.Hour // no keep-alive report in between
	s := NewSlave(slave.CommitLog(), func() string { return addr }, opts)
	s.Start()
	defer s.Close()
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var b [ReportSize]byte
	if off, err := ReadReport(nc, &b); err != nil || off != 0 {
		t.Fatalf("first report %d, %v; want 0", off, err)
	}

	// Three frames (ending inside records) in one write, then one alone.
	cuts := []int{0, len(data) / 5, len(data) / 2, len(data) * 3 / 4, len(data)}
	var burst []byte
	for i := 0; i < 3; i++ {
		burst = AppendHeader(burst, int64(cuts[i]), cuts[i+1]-cuts[i])
		burst = append(burst, data[cuts[i]:cuts[i+1]]...)
	}
	if _, err := nc.Write(burst); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if off, err := ReadReport(nc, &b); err != nil || off != int64(cuts[3]) {
		t.Fatalf("report after the burst %d, %v; want %d (one report for three frames)", off, err, cuts[3])
	}
	if _, err := nc.Write(append(AppendHeader(nil, int64(cuts[3]), cuts[4]-cuts[3]), data[cuts[3]:]...)); err != nil {
		t.Fatal(err)
	}
	if off, err := ReadReport(nc, &b); err != nil || off != int64(len(data)) {
		t.Fatalf("report after the last frame %d, %v; want %d", off, err, len(data))
	}
	if got := slave.CommitLog().MaxOffset(); got != int64(len(data)) {
		t.Fatalf("slave ends at %d, want %d", got, len(data))
	}
}

// logBytes is the CommitLog of a store holding n messages (put).
func logBytes(t *testing.T, n int) []byte {
	t.Helper()
	src := openStore(t, tempDir(t, "src"))
	defer src.Close()
	put(t, src, "TopicX", 0, n)
	buf, err := src.CommitLog().ReadChunk(0, 1<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Release()
	return append([]byte(nil), buf.Bytes()...)
}
