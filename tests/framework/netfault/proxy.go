// Package netfault is a fault-injecting TCP proxy for end-to-end tests: a
// test points one server at another through a Proxy and can then cut the
// link the way networks fail — silently (a partition: bytes stop flowing,
// nobody is told), loudly (connections reset), or slowly (a rate limit).
package netfault

import (
	"net"
	"sync"
	"time"
)

// Mode is the state of a proxy's link.
type Mode int

const (
	// Pass forwards bytes both ways.
	Pass Mode = iota
	// Blackhole holds every byte (existing and new connections stay
	// open, nothing arrives): a partition as TCP sees it, detected only
	// by timeouts.
	Blackhole
	// Refuse closes every connection at once and every new one on
	// accept: a dead peer.
	Refuse
)

// Proxy forwards connections from its listen address to a target.
type Proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	cond   *sync.Cond
	mode   Mode
	rate   int // bytes per second per direction; 0 unlimited
	conns  map[net.Conn]*link
	closed bool
	wg     sync.WaitGroup
	// match and matchMode: the mode of the connections match accepts
	// (SetModeFor).
	match     func(Conn) bool
	matchMode Mode
	// dialFails and lastDialErr: connections the proxy dropped because
	// the target did not answer (a test's failure message says so).
	dialFails   int
	lastDialErr error
}

// Conn is what SetModeFor's match sees of a proxied connection.
type Conn struct {
	Client net.Addr // the client's end of the connection
	First  []byte   // the client's first bytes; nil until it sent some
}

// link is one proxied connection.
type link struct {
	conn    Conn
	matched bool // match accepted it (evaluated on SetModeFor, accept and first bytes)
}

// Listen starts a proxy on a free loopback port forwarding to target.
func Listen(target string) (*Proxy, error) {
	return ListenOn("127.0.0.1:0", target)
}

// ListenOn starts a proxy on addr forwarding to target. A process that
// advertises an address to its peers (a broker's brokerIP1 or brokerIP2)
// can be reached through a proxy on another loopback address with the same
// port: 127.0.0.0/8 is all loopback on Linux.
func ListenOn(addr, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]*link{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address to connect to instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is where the proxy forwards.
func (p *Proxy) Target() string { return p.target }

// DialFailures is how many connections the proxy dropped because it could
// not reach its target, and the last such error.
func (p *Proxy) DialFailures() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dialFails, p.lastDialErr
}

// SetMode changes the link; Refuse also closes the open connections.
func (p *Proxy) SetMode(m Mode) {
	p.mu.Lock()
	p.mode = m
	p.applyLocked()
}

// applyLocked wakes the links to see their modes and closes the connections
// now refused; it unlocks p.mu.
func (p *Proxy) applyLocked() {
	var drop []net.Conn
	for c, l := range p.conns {
		if p.modeOf(l) == Refuse {
			drop = append(drop, c)
		}
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	for _, c := range drop {
		_ = c.Close()
	}
}

// SetModeFor gives the connections match accepts their own mode (the
// proxy's mode still applies to the others): one of several clients of the
// same server can be cut, told apart by where it connects from
// (FromProcess) or what it sends first. match runs on every open
// connection now, on each new one when accepted and again once its client
// sent its first bytes. A nil match ends the exception.
func (p *Proxy) SetModeFor(match func(Conn) bool, m Mode) {
	p.mu.Lock()
	p.match, p.matchMode = match, m
	seen := map[*link]bool{}
	for _, l := range p.conns {
		if !seen[l] {
			seen[l] = true
			p.classify(l)
		}
	}
	p.applyLocked()
}

// classify runs match on l, under p.mu.
func (p *Proxy) classify(l *link) {
	l.matched = p.match != nil && p.match(l.conn)
}

// modeOf is the mode of the connection l, under p.mu.
func (p *Proxy) modeOf(l *link) Mode {
	if p.match != nil && l.matched {
		return p.matchMode
	}
	return p.mode
}

// SetRate limits each direction of each connection to bytesPerSec (0
// removes the limit).
func (p *Proxy) SetRate(bytesPerSec int) {
	p.mu.Lock()
	p.rate = bytesPerSec
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) track(c net.Conn, l *link) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l.conn.Client == nil {
		l.conn.Client = c.RemoteAddr()
		p.classify(l)
	}
	if p.closed || p.modeOf(l) == Refuse {
		return false
	}
	p.conns[c] = l
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		l := &link{}
		if !p.track(in, l) {
			_ = in.Close()
			continue
		}
		p.wg.Add(1)
		go p.serve(in, l)
	}
}

func (p *Proxy) serve(in net.Conn, l *link) {
	defer p.wg.Done()
	defer p.untrack(in)
	out, err := net.DialTimeout("tcp", p.target, 3*time.Second)
	if err != nil {
		p.mu.Lock()
		p.dialFails++
		p.lastDialErr = err
		p.mu.Unlock()
		return
	}
	if !p.track(out, l) {
		_ = out.Close()
		return
	}
	defer p.untrack(out)
	done := make(chan struct{}, 2)
	go func() { p.pipe(l, out, in, true); done <- struct{}{} }()
	go func() { p.pipe(l, in, out, false); done <- struct{}{} }()
	<-done
	// One side ended: end the other so the peer sees the close — once the
	// link passes again: a partition hides a close as it hides bytes.
	p.mu.Lock()
	for p.modeOf(l) == Blackhole && !p.closed {
		p.cond.Wait()
	}
	p.mu.Unlock()
	_ = in.Close()
	_ = out.Close()
	<-done
}

// pipe copies src to dst chunk by chunk, holding each chunk while the link
// is blackholed and pacing it under a rate limit. The client's first chunk
// (fromClient) identifies the link for SetModeFor.
func (p *Proxy) pipe(l *link, dst, src net.Conn, fromClient bool) {
	buf := make([]byte, 16<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if fromClient {
				p.mu.Lock()
				if l.conn.First == nil {
					l.conn.First = append([]byte{}, buf[:n]...)
					p.classify(l)
				}
				p.mu.Unlock()
			}
			if !p.deliver(l, dst, buf[:n]) {
				return
			}
		}
		if err != nil {
			return // EOF or a closed side: serve closes both
		}
	}
}

func (p *Proxy) deliver(l *link, dst net.Conn, b []byte) bool {
	for len(b) > 0 {
		p.mu.Lock()
		for p.modeOf(l) == Blackhole && !p.closed {
			p.cond.Wait()
		}
		closed, mode, rate := p.closed, p.modeOf(l), p.rate
		p.mu.Unlock()
		if closed || mode == Refuse {
			return false
		}
		chunk := b
		if rate > 0 {
			// Send at most a tenth of a second's worth, then wait that long.
			chunk = b[:min(len(b), max(rate/10, 1))]
		}
		if _, err := dst.Write(chunk); err != nil {
			return false
		}
		b = b[len(chunk):]
		if rate > 0 {
			time.Sleep(time.Duration(len(chunk)) * time.Second / time.Duration(rate))
		}
	}
	return true
}
