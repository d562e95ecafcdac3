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
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Listen starts a proxy on a free loopback port forwarding to target.
func Listen(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address to connect to instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is where the proxy forwards.
func (p *Proxy) Target() string { return p.target }

// SetMode changes the link; Refuse also closes the open connections.
func (p *Proxy) SetMode(m Mode) {
	p.mu.Lock()
	p.mode = m
	var drop []net.Conn
	if m == Refuse {
		for c := range p.conns {
			drop = append(drop, c)
		}
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	for _, c := range drop {
		_ = c.Close()
	}
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

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.mode == Refuse {
		return false
	}
	p.conns[c] = struct{}{}
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
		if !p.track(in) {
			_ = in.Close()
			continue
		}
		p.wg.Add(1)
		go p.serve(in)
	}
}

func (p *Proxy) serve(in net.Conn) {
	defer p.wg.Done()
	defer p.untrack(in)
	out, err := net.DialTimeout("tcp", p.target, 3*time.Second)
	if err != nil {
		return
	}
	if !p.track(out) {
		_ = out.Close()
		return
	}
	defer p.untrack(out)
	done := make(chan struct{}, 2)
	go func() { p.pipe(out, in); done <- struct{}{} }()
	go func() { p.pipe(in, out); done <- struct{}{} }()
	<-done
	// One side ended: end the other so the peer sees the close.
	_ = in.Close()
	_ = out.Close()
	<-done
}

// pipe copies src to dst chunk by chunk, holding each chunk while the link
// is blackholed and pacing it under a rate limit.
func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 16<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.deliver(dst, buf[:n]) {
				return
			}
		}
		if err != nil {
			return // EOF or a closed side: serve closes both
		}
	}
}

func (p *Proxy) deliver(dst net.Conn, b []byte) bool {
	for len(b) > 0 {
		p.mu.Lock()
		for p.mode == Blackhole && !p.closed {
			p.cond.Wait()
		}
		closed, mode, rate := p.closed, p.mode, p.rate
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
