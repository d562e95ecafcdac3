package ha

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	"github.com/rmqgo/rmq/broker/store/commitlog"
)

// hub is what both master kinds share: the HA listener, the lock over
// their connection tables, and the channel that wakes idle connection
// writers (wake).
type hub struct {
	opts Options
	cl   *commitlog.Log
	ln   net.Listener
	log  *slog.Logger

	mu     sync.Mutex
	wake   chan struct{} // closed and replaced by Wake
	idle   atomic.Int32  // connection writers waiting on wake
	closed bool
	wg     sync.WaitGroup
}

func newHub(cl *commitlog.Log, ln net.Listener, opts Options) hub {
	opts = opts.withDefaults()
	return hub{opts: opts, cl: cl, ln: ln, log: opts.Logger, wake: make(chan struct{})}
}

// Addr is the listening address.
func (h *hub) Addr() net.Addr { return h.ln.Addr() }

// serve accepts until the listener closes; add takes each connection.
func (h *hub) serve(add func(net.Conn)) {
	defer h.wg.Done()
	for {
		nc, err := h.ln.Accept()
		if err != nil {
			h.mu.Lock()
			closed := h.closed
			h.mu.Unlock()
			if !closed {
				h.log.Error("ha accept", "err", err)
			}
			return
		}
		add(nc)
	}
}

// admit records a new connection (register runs under mu) and starts its
// reader and writer, unless the master is closing.
func (h *hub) admit(nc net.Conn, register func(), read, write func()) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		_ = nc.Close()
		return
	}
	register()
	h.wg.Add(2)
	h.mu.Unlock()
	h.log.Info("ha slave connected", "addr", nc.RemoteAddr().String())
	go read()
	go write()
}

// Wake makes idle connections look for new bytes now (called when a send
// starts waiting, so its bytes leave at once). With no writer idle it
// does nothing: a busy writer looks for new bytes before it idles (see
// pump.idle), and under load most sends find every writer busy.
func (h *hub) Wake() {
	if h.idle.Load() == 0 {
		return
	}
	h.mu.Lock()
	close(h.wake)
	h.wake = make(chan struct{})
	h.mu.Unlock()
}

func (h *hub) wakeChan() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.wake
}
