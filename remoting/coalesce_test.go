package remoting

import (
	"errors"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// Frames written concurrently through a coalescing transport all arrive,
// whole and in one piece each.
func TestCoalescingTransportDeliversEveryFrame(t *testing.T) {
	t.Parallel()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	tr := newConnTransport(a, waitDeadline, newWriteBufs())
	ch := newChannel(1, "local", "remote", tr, nil, time.Second, nil)
	const writers, each = 16, 50
	got := make(chan int, 1)
	go func() {
		n := 0
		for n < writers*each {
			cmd, err := readCmd(b, waitDeadline)
			if err != nil {
				break
			}
			if cmd.Code != codeEcho || len(cmd.Body) != 4096 {
				break
			}
			n++
		}
		got <- n
	}()
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range each {
				req := NewRequest(codeEcho, map[string]string{"k": "v"}, make([]byte, 4096))
				req.Flag |= FlagOneway
				if err := ch.write(req); err != nil {
					t.Errorf("write: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := recv(t, got, "reader"); n != writers*each {
		t.Fatalf("read %d frames of %d", n, writers*each)
	}
}

// A peer that stops reading: what is queued stays bounded (writers wait),
// and the send that times out fails every later write.
func TestCoalescingTransportBackpressureAndFailure(t *testing.T) {
	t.Parallel()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	tr := newConnTransport(a, 300*time.Millisecond, newWriteBufs())
	const frame = 64 << 10
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			buf := make([]byte, frame)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := tr.write(buf[:8], buf[8:]); err != nil {
					return
				}
				if err := tr.flush(false); err != nil {
					return
				}
			}
		})
	}
	// Let the first send block on the pipe nobody reads, then sample.
	deadline := time.Now().Add(200 * time.Millisecond)
	most := 0
	for time.Now().Before(deadline) {
		tr.mu.Lock()
		most = max(most, len(tr.pending))
		tr.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	if most > maxPendingWrite+8*frame {
		t.Errorf("%d bytes queued for a peer that does not read (bound %d)", most, maxPendingWrite+8*frame)
	}
	close(stop)
	wg.Wait() // the blocked send times out; everyone returns
	err := tr.write([]byte{1}, nil)
	if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write after the timed-out send: %v", err)
	}
}
