package ha

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Listener holds the HA port for a broker's whole life in controller
// mode, whatever its role. Apache's auto-switch HA service accepts from
// broker start (AutoSwitchHAService.start), so the port a slave serves on
// once promoted is taken at start: a promotion never fails to bind it, and
// nothing else can take it in between. Each master term accepts through a
// View; a connection that arrives while no view is open (the broker is a
// slave, or fenced before its first role) is closed at once, and the slave
// that made it retries.
type Listener struct {
	ln  net.Listener
	log *slog.Logger

	mu     sync.Mutex
	view   *listenerView
	closed bool
	done   chan struct{}
}

// NewListener takes ownership of ln and starts accepting.
func NewListener(ln net.Listener, log *slog.Logger) *Listener {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &Listener{ln: ln, log: log, done: make(chan struct{})}
	go l.accept()
	return l
}

// Addr is the bound address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// View opens a listener for one master term and closes the previous one.
// Closing the view leaves the port bound.
func (l *Listener) View() net.Listener {
	v := &listenerView{parent: l, conns: make(chan net.Conn), closed: make(chan struct{})}
	l.mu.Lock()
	old := l.view
	if l.closed {
		v.once.Do(func() { close(v.closed) })
	} else {
		l.view = v
	}
	l.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	return v
}

// Close unbinds the port and ends the open view.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	v := l.view
	l.view = nil
	l.mu.Unlock()
	err := l.ln.Close()
	<-l.done
	if v != nil {
		_ = v.Close()
	}
	return err
}

func (l *Listener) accept() {
	defer close(l.done)
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			l.mu.Lock()
			closed := l.closed
			l.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors and the like: the port stays ours.
			l.log.Warn("ha accept", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		l.mu.Lock()
		v := l.view
		l.mu.Unlock()
		if v == nil {
			_ = nc.Close()
			continue
		}
		select {
		case v.conns <- nc:
		case <-v.closed:
			_ = nc.Close()
		}
	}
}

// listenerView is one master term's net.Listener over a Listener.
type listenerView struct {
	parent *Listener
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func (v *listenerView) Accept() (net.Conn, error) {
	select {
	case nc := <-v.conns:
		return nc, nil
	case <-v.closed:
		return nil, net.ErrClosed
	}
}

func (v *listenerView) Close() error {
	v.once.Do(func() {
		close(v.closed)
		v.parent.mu.Lock()
		if v.parent.view == v {
			v.parent.view = nil
		}
		v.parent.mu.Unlock()
	})
	return nil
}

func (v *listenerView) Addr() net.Addr { return v.parent.Addr() }
