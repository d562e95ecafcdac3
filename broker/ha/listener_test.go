package ha

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
)

// TestListenerKeepsPortAcrossTerms: the port stays bound from start to
// Close; each master term accepts through its own view; a connection that
// arrives between terms is closed, not queued for the next master.
func TestListenerKeepsPortAcrossTerms(t *testing.T) {
	ln := testutil.Listen(t)
	l := NewListener(ln, nil)
	addr := l.Addr().String()

	// No term yet: accepted and closed.
	expectClosedByServer(t, addr)

	for term := range 3 {
		v := l.View()
		if v.Addr().String() != addr {
			t.Fatalf("term %d: view address %s, want %s", term, v.Addr(), addr)
		}
		got := make(chan net.Conn, 1)
		go func() {
			nc, err := v.Accept()
			if err == nil {
				got <- nc
			}
		}()
		c := dialAddr(t, addr)
		select {
		case nc := <-got:
			if _, err := c.Write([]byte{byte(term)}); err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 1)
			if _, err := io.ReadFull(nc, b); err != nil || b[0] != byte(term) {
				t.Fatalf("term %d: read %v %v", term, b, err)
			}
			nc.Close()
		case <-time.After(5 * time.Second):
			t.Fatalf("term %d: view accepted nothing", term)
		}
		c.Close()
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := v.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("term %d: Accept after Close: %v", term, err)
		}
		// Between terms the port is still ours: nobody else can bind it,
		// and a slave's dial is answered by a close.
		if other, err := net.Listen("tcp", addr); err == nil {
			other.Close()
			t.Fatalf("term %d: the port was free between terms", term)
		}
		expectClosedByServer(t, addr)
	}

	// A new view replaces an open one, which ends.
	v1 := l.View()
	v2 := l.View()
	if _, err := v1.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("replaced view: Accept %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := v2.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("view after Close: Accept %v", err)
	}
	if _, err := l.View().Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("view opened after Close: Accept %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	other, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the port is still bound after Close: %v", err)
	}
	other.Close()
}

func dialAddr(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func expectClosedByServer(t *testing.T, addr string) {
	t.Helper()
	c := dialAddr(t, addr)
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("a connection without a master term was not closed: n=%d err=%v", n, err)
	}
}

func isTimeout(err error) bool { var ne net.Error; return errors.As(err, &ne) && ne.Timeout() }
