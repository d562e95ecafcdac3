package netfault

import (
	"bufio"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// echoServer answers each line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
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
	if s, err := roundTrip(c, r, "one", time.Second); err != nil || s != "one\n" {
		t.Fatalf("pass: %q %v", s, err)
	}

	// Blackhole: the connection stays open, nothing comes back...
	p.SetMode(Blackhole)
	if s, err := roundTrip(c, r, "two", 200*time.Millisecond); err == nil {
		t.Fatalf("blackholed link answered %q", s)
	}
	// ...and what was held arrives when the link heals.
	p.SetMode(Pass)
	c.SetDeadline(time.Now().Add(time.Second))
	if s, err := r.ReadString('\n'); err != nil || s != "two\n" {
		t.Fatalf("after heal: %q %v", s, err)
	}

	// Refuse: open connections close, new ones are closed on accept.
	p.SetMode(Refuse)
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("refused link kept the connection")
	}
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
	if s, err := roundTrip(c3, r3, "three", time.Second); err != nil || s != "three\n" {
		t.Fatalf("after refuse: %q %v", s, err)
	}
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
		if s, err := roundTrip(c, r, hello, time.Second); err != nil || s != hello+"\n" {
			t.Fatalf("%s: %q %v", hello, s, err)
		}
		return c, r
	}
	a, ra := greet("hello a")
	b, rb := greet("hello b")
	isA := func(c Conn) bool { return string(c.First) == "hello a\n" }
	p.SetModeFor(isA, Blackhole)
	if s, err := roundTrip(a, ra, "a1", 200*time.Millisecond); err == nil {
		t.Fatalf("the cut client got %q", s)
	}
	if s, err := roundTrip(b, rb, "b1", time.Second); err != nil || s != "b1\n" {
		t.Fatalf("the other client: %q %v", s, err)
	}
	// A new connection of the cut client is cut once it said hello.
	a2, ra2 := dial(t, p.Addr())
	if s, err := roundTrip(a2, ra2, "hello a", 200*time.Millisecond); err == nil {
		t.Fatalf("the cut client's new connection got %q", s)
	}
	p.SetModeFor(nil, Pass)
	a.SetDeadline(time.Now().Add(time.Second))
	if s, err := ra.ReadString('\n'); err != nil || s != "a1\n" {
		t.Fatalf("after heal: %q %v", s, err)
	}
	// Refuse closes only the matching connection.
	p.SetModeFor(isA, Refuse)
	a.SetDeadline(time.Now().Add(time.Second))
	if _, err := ra.ReadString('\n'); err == nil {
		t.Fatal("the refused client kept its connection")
	}
	if s, err := roundTrip(b, rb, "b2", time.Second); err != nil || s != "b2\n" {
		t.Fatalf("the other client after refuse: %q %v", s, err)
	}
}

// TestFromProcess: a connection this process opened matches FromProcess
// of its pid and not of another process's.
func TestFromProcess(t *testing.T) {
	p := proxyTo(t, "127.0.0.1:0", echoServer(t))
	c, r := dial(t, p.Addr())
	p.SetModeFor(FromProcess(os.Getppid()), Blackhole)
	if s, err := roundTrip(c, r, "one", time.Second); err != nil || s != "one\n" {
		t.Fatalf("another process's match cut this one: %q %v", s, err)
	}
	p.SetModeFor(FromProcess(os.Getpid()), Blackhole)
	if s, err := roundTrip(c, r, "two", 200*time.Millisecond); err == nil {
		t.Fatalf("this process's connection passed: %q", s)
	}
	// A close while cut is held too, and delivered on heal.
	p.SetModeFor(nil, Pass)
	c.SetDeadline(time.Now().Add(time.Second))
	if s, err := r.ReadString('\n'); err != nil || s != "two\n" {
		t.Fatalf("after heal: %q %v", s, err)
	}
}

// TestBlackholeHoldsClose: the server closing while the link is
// blackholed is not seen by the client until the link passes again.
func TestBlackholeHoldsClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
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
