package remoting

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting/code"
)

// codeRecord is a handler that only records the bodies it ran for.
const codeRecord = code.PutKVConfig

type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) handle(_ context.Context, _ *Channel, req *Command) (*Command, error) {
	r.mu.Lock()
	r.seen = append(r.seen, string(req.Body))
	r.mu.Unlock()
	return NewResponse(req, code.Success, ""), nil
}

// take returns what ran and forgets it.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := r.seen
	r.seen = nil
	return seen
}

func (r *recorder) ran() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// cutServer starts a server with a recorder and reports each closed
// connection's remote address.
func cutServer(t testing.TB) (*Server, *recorder, chan string) {
	t.Helper()
	s := startServer(t, nil, nil)
	rec := &recorder{}
	s.Register(codeRecord, rec.handle, nil)
	closed := make(chan string, 1024)
	s.OnClose(func(ch *Channel) { closed <- ch.RemoteAddr() })
	return s, rec, closed
}

func recordReq(t testing.TB, st SerializeType, body string) []byte {
	t.Helper()
	req := NewRequest(codeRecord, map[string]string{"namespace": "ns", "key": "k", "value": body}, []byte(body))
	req.SerializeType = st
	return mustEncode(t, req)
}

// sendAndHangUp writes the chunks (pausing between them so they arrive in
// separate reads), closes the connection and waits until the server has seen
// the close.
func sendAndHangUp(t testing.TB, addr string, closed <-chan string, chunks ...[]byte) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, waitDeadline)
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	local := conn.LocalAddr().String()
	for i, c := range chunks {
		if i > 0 {
			time.Sleep(time.Millisecond)
		}
		if _, err := conn.Write(c); err != nil {
			t.Fatal(err)
		}
	}
	_ = conn.Close()
	deadline := time.After(waitDeadline)
	for {
		select {
		case got := <-closed:
			if got == local {
				return
			}
		case <-deadline:
			t.Fatalf("server did not see %s close", local)
		}
	}
}

// A connection that ends inside a frame executes nothing of that frame,
// wherever the cut falls: in the length field, the header mark, the header
// or the body.
func TestCutFrameRunsNothing(t *testing.T) {
	s, rec, closed := cutServer(t)
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		frame := recordReq(t, st, "cut")
		for cut := 1; cut < len(frame); cut++ {
			sendAndHangUp(t, s.Addr(), closed, frame[:cut])
		}
		// Split over two reads, then cut: still nothing.
		for cut := 2; cut < len(frame); cut += 7 {
			sendAndHangUp(t, s.Addr(), closed, frame[:cut/2], frame[cut/2:cut])
		}
	}
	// Handlers run on executors after the read loop hands them over: give a
	// wrongly dispatched frame time to show up.
	time.Sleep(50 * time.Millisecond)
	if got := rec.ran(); len(got) != 0 {
		t.Fatalf("cut frames executed: %q", got)
	}
	mustInvoke(t, newClient(t, nil), s.Addr(), echoReq(SerializeJSON, "still serving"))
}

// A frame whose length field promises more than ever arrives swallows what
// follows: a complete request inside it is not executed (the leftover bytes
// must not be parsed as a frame of their own).
func TestRequestInsideUnfinishedFrameNotRun(t *testing.T) {
	s, rec, closed := cutServer(t)
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		inner := recordReq(t, st, "embedded")
		for _, filler := range [][]byte{nil, {1, 2, 3, 4}, {0, 0, 0, 0}, inner[:4]} {
			outer := binary.BigEndian.AppendUint32(nil, 100_000)
			outer = append(outer, filler...)
			sendAndHangUp(t, s.Addr(), closed, outer, inner)
			sendAndHangUp(t, s.Addr(), closed, append(outer, inner...))
		}
	}
	time.Sleep(50 * time.Millisecond)
	if got := rec.ran(); len(got) != 0 {
		t.Fatalf("requests inside an unfinished frame executed: %q", got)
	}
}

// Complete frames before a cut run, once each and in order; the cut one
// does not.
func TestFramesBeforeCutRun(t *testing.T) {
	s, rec, closed := cutServer(t)
	a, b, c := recordReq(t, SerializeJSON, "a"), recordReq(t, SerializeRocketMQ, "b"), recordReq(t, SerializeJSON, "c")
	stream := append(append(append([]byte{}, a...), b...), c[:len(c)-1]...)
	sendAndHangUp(t, s.Addr(), closed, stream)
	testutil.WaitFor(t, waitDeadline, "the two whole frames", func() bool { return len(rec.ran()) >= 2 })
	time.Sleep(50 * time.Millisecond)
	got := rec.ran()
	slices.Sort(got)
	if fmt.Sprint(got) != "[a b]" {
		t.Fatalf("ran %s, want [a b]", got)
	}
}

// splitCase builds, from fuzzed numbers, one to four valid frames (bodies
// unique to round), the stream cut at an arbitrary byte when cut is odd, and
// the stream up to the cut split into at most nine chunks at arbitrary
// points. want lists the bodies of the frames that arrive whole, sorted.
func splitCase(t testing.TB, round int, n uint8, splits []byte, cut uint16) (chunks [][]byte, bodies, want []string) {
	var stream []byte
	var ends []int
	for i := range 1 + int(n%4) {
		body := fmt.Sprintf("r%d-f%d", round, i)
		stream = append(stream, recordReq(t, SerializeType(i%2), body)...)
		ends = append(ends, len(stream))
		bodies = append(bodies, body)
	}
	end := len(stream)
	if cut%2 == 1 {
		end = int(cut/2) % len(stream)
	}
	for i, e := range ends {
		if e <= end {
			want = append(want, bodies[i])
		}
	}
	slices.Sort(want)
	points := []int{0}
	for _, b := range splits[:min(len(splits), 8)] {
		points = append(points, int(b)*end/256)
	}
	points = append(points, end)
	slices.Sort(points)
	for i := 1; i < len(points); i++ {
		if points[i] > points[i-1] {
			chunks = append(chunks, stream[points[i-1]:points[i]])
		}
	}
	return chunks, bodies, want
}

// ranOf lists the bodies of bodies among ran, sorted.
func ranOf(ran, bodies []string) []string {
	var got []string
	for _, b := range ran {
		if slices.Contains(bodies, b) {
			got = append(got, b)
		}
	}
	slices.Sort(got)
	return got
}

// chunkReader is a connection's input as the frame loop sees it: chunks
// arrive one at a time. Peek(n) takes in further chunks until n bytes are
// there, as a connection's Peek waits for them, and fails once the input has
// ended (the peer hung up) short of n.
type chunkReader struct {
	buf    []byte
	chunks [][]byte
}

var errInputEnded = errors.New("input ended")

func (r *chunkReader) Len() int { return len(r.buf) }

func (r *chunkReader) Peek(n int) ([]byte, error) {
	for len(r.buf) < n && len(r.chunks) > 0 {
		r.arrive()
	}
	if len(r.buf) < n {
		return nil, errInputEnded
	}
	return r.buf[:n], nil
}

func (r *chunkReader) Skip(n int) error {
	if n > len(r.buf) {
		return errInputEnded
	}
	r.buf = r.buf[n:]
	return nil
}

func (r *chunkReader) Release() error { return nil }

func (r *chunkReader) arrive() {
	r.buf = append(r.buf, r.chunks[0]...)
	r.chunks = r.chunks[1:]
}

// FuzzSplitFrames feeds valid frames split at arbitrary points, optionally
// cut at an arbitrary byte, to the server's frame loop (readFrames, what
// onRequest runs for a connection): every frame that arrived whole runs
// exactly once, nothing of a cut frame runs. The loop is driven as netpoll
// drives it (called again whenever new input is there, until it fails),
// without a socket, so that ten million executions take minutes;
// TestSplitFramesOverTCP sends cases like these over real connections.
func FuzzSplitFrames(f *testing.F) {
	f.Add(uint8(3), []byte{10, 200}, uint16(0))
	f.Add(uint8(1), []byte{1, 2, 3, 4, 5}, uint16(2*40+1))
	f.Add(uint8(2), []byte{}, uint16(2*7+1))
	f.Add(uint8(4), []byte{128, 129, 130, 255}, uint16(2*300+1))
	s, rec, _ := cutServer(f)
	var round int
	f.Fuzz(func(t *testing.T, n uint8, splits []byte, cut uint16) {
		round++
		chunks, _, want := splitCase(t, round, n, splits, cut)
		ch := NewLocalChannel("local", fmt.Sprintf("fuzz-%d", round), func(*Command) {})
		r := &chunkReader{chunks: chunks}
		for {
			if r.Len() == 0 {
				if len(r.chunks) == 0 {
					break // the peer hung up between frames
				}
				r.arrive()
			}
			if err := s.readFrames(ch, r); err != nil {
				if len(r.chunks) > 0 {
					t.Fatalf("frame loop failed with %d chunks still to come: %v", len(r.chunks), err)
				}
				if !errors.Is(err, errInputEnded) {
					t.Fatalf("frame loop: %v, want the end of input", err)
				}
				break
			}
		}
		// Every frame was dispatched inside readFrames; wait for the
		// handlers to finish.
		deadline := time.Now().Add(waitDeadline)
		for s.Handling() > 0 {
			if time.Now().After(deadline) {
				t.Fatal("handlers still running")
			}
			runtime.Gosched()
		}
		// Bodies are unique to the round: a frame of an earlier round
		// that ran late would show up here as one too many.
		got := rec.take()
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("ran %q, want %q (chunks %d)", got, want, len(chunks))
		}
	})
}

// TestSplitFramesOverTCP sends split and cut streams like FuzzSplitFrames's
// over real connections: netpoll's Peek must wait for the rest of a frame
// and fail once the peer hung up.
func TestSplitFramesOverTCP(t *testing.T) {
	s, rec, closed := cutServer(t)
	rnd := rand.New(rand.NewPCG(19, 7))
	for round := range 40 {
		splits := make([]byte, rnd.IntN(9))
		for i := range splits {
			splits[i] = byte(rnd.IntN(256))
		}
		n, cut := uint8(rnd.IntN(256)), uint16(rnd.IntN(1<<16))
		chunks, bodies, want := splitCase(t, round, n, splits, cut)
		sendAndHangUp(t, s.Addr(), closed, chunks...)
		testutil.WaitFor(t, waitDeadline, "whole frames to run", func() bool { return len(ranOf(rec.ran(), bodies)) >= len(want) })
		time.Sleep(10 * time.Millisecond) // room for a wrongly run frame to show
		if got := ranOf(rec.ran(), bodies); !slices.Equal(got, want) {
			t.Fatalf("round %d: ran %q, want %q (chunks %d)", round, got, want, len(chunks))
		}
	}
}
