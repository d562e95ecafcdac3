//go:build linux

package remoting

import (
	"errors"
	"fmt"
	"github.com/cloudwego/netpoll"
	"net"
	"syscall"
	"time"
)

// fdListener is the listener handed to netpoll. netpoll's own (from
// ConvertListener) duplicates the descriptor and its Close closes the
// duplicate twice (once by number, once through its *os.File); a
// descriptor opened in between by another goroutine — another server's
// listener, a client's connection — is closed under it. A listener hit so
// never registers with netpoll's poller and leaves its connections waiting
// in the backlog unanswered. This one uses the net.TCPListener's own
// descriptor, accepts through its RawConn (so Close cannot run underneath)
// and is closed once, by Go.
type fdListener struct {
	tcp *net.TCPListener
	raw syscall.RawConn
	fd  int
}

func newFDListener(ln net.Listener) (netpoll.Listener, error) {
	tcp, ok := ln.(*net.TCPListener)
	if !ok {
		return nil, fmt.Errorf("remoting: listener %T is not TCP", ln)
	}
	raw, err := tcp.SyscallConn()
	if err != nil {
		return nil, err
	}
	l := &fdListener{tcp: tcp, raw: raw, fd: -1}
	if err := raw.Control(func(fd uintptr) { l.fd = int(fd) }); err != nil {
		return nil, err
	}
	return l, nil
}

// Fd is the descriptor netpoll's poller watches.
func (l *fdListener) Fd() int { return l.fd }

func (l *fdListener) Addr() net.Addr { return l.tcp.Addr() }

// Close closes the descriptor once; netpoll detaches it from its poller
// before.
func (l *fdListener) Close() error { return l.tcp.Close() }

// Accept runs on netpoll's poller when the descriptor is readable: it
// never blocks, and answers (nil, nil) when no connection is pending, as
// netpoll expects. An error on a closed listener says "closed", which
// makes netpoll stop serving it.
func (l *fdListener) Accept() (net.Conn, error) {
	var (
		nfd  int
		sa   syscall.Sockaddr
		aerr error
	)
	if err := l.raw.Control(func(fd uintptr) {
		nfd, sa, aerr = syscall.Accept4(int(fd), syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
	}); err != nil {
		return nil, err
	}
	if aerr != nil {
		if errors.Is(aerr, syscall.EAGAIN) || errors.Is(aerr, syscall.EWOULDBLOCK) || errors.Is(aerr, syscall.ECONNABORTED) {
			return nil, nil
		}
		return nil, aerr
	}
	// netpoll sets TCP_NODELAY only on its own connection type.
	_ = syscall.SetsockoptInt(nfd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
	c := &acceptedConn{fd: nfd, local: l.tcp.Addr(), remote: sockaddrToTCP(sa)}
	if lsa, err := syscall.Getsockname(nfd); err == nil {
		if a := sockaddrToTCP(lsa); a != nil {
			c.local = a
		}
	}
	return c, nil
}

func sockaddrToTCP(sa syscall.Sockaddr) net.Addr {
	switch a := sa.(type) {
	case *syscall.SockaddrInet4:
		return &net.TCPAddr{IP: append(net.IP(nil), a.Addr[:]...), Port: a.Port}
	case *syscall.SockaddrInet6:
		return &net.TCPAddr{IP: append(net.IP(nil), a.Addr[:]...), Port: a.Port}
	}
	return nil
}

// acceptedConn carries an accepted descriptor and its addresses to
// netpoll, which takes the descriptor over (reads, writes and closes it
// itself); the net.Conn methods are never used.
type acceptedConn struct {
	fd            int
	local, remote net.Addr
}

var errHandedOver = errors.New("remoting: accepted descriptor belongs to netpoll")

func (c *acceptedConn) Fd() int                          { return c.fd }
func (c *acceptedConn) LocalAddr() net.Addr              { return c.local }
func (c *acceptedConn) RemoteAddr() net.Addr             { return c.remote }
func (c *acceptedConn) Read([]byte) (int, error)         { return 0, errHandedOver }
func (c *acceptedConn) Write([]byte) (int, error)        { return 0, errHandedOver }
func (c *acceptedConn) Close() error                     { return errHandedOver }
func (c *acceptedConn) SetDeadline(time.Time) error      { return errHandedOver }
func (c *acceptedConn) SetReadDeadline(time.Time) error  { return errHandedOver }
func (c *acceptedConn) SetWriteDeadline(time.Time) error { return errHandedOver }
