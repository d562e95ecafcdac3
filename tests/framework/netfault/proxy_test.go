package netfault

import (
	"bufio"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
)

// echoServer answers each line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln := testutil.Listen(t)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, r *bufio.Reader, line string, within time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(within))
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	s, err := r.ReadString('\n')
	return s, err
}

// wantEcho sends line to the echo server and fails t unless it comes
// back within a second.
func wantEcho(t *testing.T, c net.Conn, r *bufio.Reader, line, what string) {
	t.Helper()
	if s, err := roundTrip(c, r, line, time.Second); err != nil || s != line+"\n" {
		t.Fatalf("%s: %q %v", what, s, err)
	}
}

// wantCut sends line and fails t if an answer comes within 200 ms.
func wantCut(t *testing.T, c net.Conn, r *bufio.Reader, line, what string) {
	t.Helper()
	if s, err := roundTrip(c, r, line, 200*time.Millisecond); err == nil {
		t.Fatalf("%s: %q", what, s)
	}
}

// wantLine fails t unless the next line read within a second is line
// (what a cut held, once the link passes again).
func wantLine(t *testing.T, c net.Conn, r *bufio.Reader, line, what string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(time.Second))
	if s, err := r.ReadString('\n'); err != nil || s != line+"\n" {
		t.Fatalf("%s: %q %v", what, s, err)
	}
}

// wantClosed fails t with msg unless reading c fails within a second.
func wantClosed(t *testing.T, c net.Conn, r *bufio.Reader, msg string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal(msg)
	}
}

// proxyTo starts a proxy on addr forwarding to target, closed when the
// test ends.
func proxyTo(t *testing.T, addr, target string) *Proxy {
	t.Helper()
	p, err := ListenOn(addr, target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// dial connects to addr; the connection is closed when the test ends.
func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

func TestModes(t *testing.T) {
	p := proxyTo(t, "127.0.0.1:0", echoServer(t))
	c, r := dial(t, p.Addr())
	wantEcho(t, c, r, "one", "pass")

	// Blackhole: the connection stays open, nothing comes back...
	p.SetMode(Blackhole)
	wantCut(t, c, r, "two", "blackholed link answered")
	// ...and what was held arrives when the link heals.
	p.SetMode(Pass)
	wantLine(t, c, r, "two", "after heal")

	// Refuse: open connections close, new ones are closed on accept.
	p.SetMode(Refuse)
	wantClosed(t, c, r, "refused link kept the connection")
	c2, err := net.Dial("tcp", p.Addr())
	if err == nil {
		c2.SetDeadline(time.Now().Add(time.Second))
		if _, err := c2.Read(make([]byte, 1)); err == nil {
			t.Fatal("new connection served while refusing")
		}
		c2.Close()
	}
	p.SetMode(Pass)
	c3, r3 := dial(t, p.Addr())
	wantEcho(t, c3, r3, "three", "after refuse")
}

func TestRate(t *testing.T) {
	p := proxyTo(t, "127.0.0.1:0", echoServer(t))
	p.SetRate(20_000) // 20 kB/s each way
	c, _ := dial(t, p.Addr())
	payload := make([]byte, 8_000)
	for i := range payload {
		payload[i] = 'x'
	}
	start := time.Now()
	go c.Write(payload)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, make([]byte, len(payload))); err != nil {
		t.Fatal(err)
	}
	// 8 kB through two limited hops at 20 kB/s: at least ~0.3 s.
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("8 kB took %v under a 20 kB/s limit", d)
	}
}

// TestModeFor: two clients of one proxy, told apart by their first line;
// one is blackholed, the other keeps passing; heal delivers what was held.
// The proxy listens on another loopback address (ListenOn).
func TestModeFor(t *testing.T) {
	p := proxyTo(t, "127.0.0.2:0", echoServer(t))
	greet := func(hello string) (net.Conn, *bufio.Reader) {
		c, r := dial(t, p.Addr())
		wantEcho(t, c, r, hello, hello)
		return c, r
	}
	a, ra := greet("hello a")
	b, rb := greet("hello b")
	isA := func(c Conn) bool { return string(c.First) == "hello a\n" }
	p.SetModeFor(isA, Blackhole)
	wantCut(t, a, ra, "a1", "the cut client got")
	wantEcho(t, b, rb, "b1", "the other client")
	// A new connection of the cut client is cut once it said hello.
	a2, ra2 := dial(t, p.Addr())
	wantCut(t, a2, ra2, "hello a", "the cut client's new connection got")
	p.SetModeFor(nil, Pass)
	wantLine(t, a, ra, "a1", "after heal")
	// Refuse closes only the matching connection.
	p.SetModeFor(isA, Refuse)
	wantClosed(t, a, ra, "the refused client kept its connection")
	wantEcho(t, b, rb, "b2", "the other client after refuse")
}

// TestFromProcess: a connection this process opened matches FromProcess
// of its pid and not of another process's.
func TestFromProcess(t *testing.T) {
	p := proxyTo(t, "127.0.0.1:0", echoServer(t))
	c, r := dial(t, p.Addr())
	p.SetModeFor(FromProcess(os.Getppid()), Blackhole)
	wantEcho(t, c, r, "one", "another process's match cut this one")
	p.SetModeFor(FromProcess(os.Getpid()), Blackhole)
	wantCut(t, c, r, "two", "this process's connection passed")
	// A close while cut is held too, and delivered on heal.
	p.SetModeFor(nil, Pass)
	wantLine(t, c, r, "two", "after heal")
}

// TestBlackholeHoldsClose: the server closing while the link is
// blackholed is not seen by the client until the link passes again.
func TestBlackholeHoldsClose(t *testing.T) {
	ln := testutil.Listen(t)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if s, err := ln.Accept(); err == nil {
			accepted <- s
		}
	}()
	p := proxyTo(t, "127.0.0.1:0", ln.Addr().String())
	c, _ := dial(t, p.Addr())
	c.Write([]byte("x"))
	s := <-accepted
	p.SetMode(Blackhole)
	s.Close()
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := c.Read(make([]byte, 1)); err == nil || !os.IsTimeout(err) {
		t.Fatalf("the close crossed the partition: %v", err)
	}
	p.SetMode(Pass)
	c.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after heal: %v, want EOF", err)
	}
}

// A target that does not answer drops the connection and is counted.
func TestDialFailures(t *testing.T) {
	ln := testutil.Listen(t)
	target := ln.Addr().String()
	ln.Close() // nobody listens there now
	p := proxyTo(t, "127.0.0.1:0", target)
	if n, err := p.DialFailures(); n != 0 || err != nil {
		t.Fatalf("before any connection: %d %v", n, err)
	}
	c, r := dial(t, p.Addr())
	c.Write([]byte("hello\n"))
	wantClosed(t, c, r, "a proxy whose target refuses kept the connection")
	testutil.WaitFor(t, time.Second, "the dial failure counted", func() bool { n, err := p.DialFailures(); return n == 1 && err != nil })
}
