package client

import (
	"context"
	"sync"
)

// Lifecycle states of a producer or consumer.
const (
	stateNew = iota
	stateRunning
	stateClosed
)

// lifecycle tracks a client's state and its operations in flight, so that
// Shutdown can refuse new ones and drain the running ones.
type lifecycle struct {
	mu    sync.Mutex
	state int
	n     int           // operations in flight
	idle  chan struct{} // closed when n drops to 0 after close began
}

// begin registers an operation; it fails unless the client is running.
func (l *lifecycle) begin() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch l.state {
	case stateNew:
		return ErrNotStarted
	case stateClosed:
		return ErrClosed
	}
	l.n++
	return nil
}

// end finishes an operation registered by begin.
func (l *lifecycle) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n--
	if l.n == 0 && l.idle != nil {
		close(l.idle)
		l.idle = nil
	}
}

// start moves New to Running; it reports false in any other state.
func (l *lifecycle) start() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != stateNew {
		return false
	}
	l.state = stateRunning
	return true
}

// close moves to Closed and reports whether this call did it (later calls
// are no-ops). The returned channel is closed once no operation is in
// flight.
func (l *lifecycle) close() (bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := l.state != stateClosed
	l.state = stateClosed
	ch := make(chan struct{})
	if l.n == 0 {
		close(ch)
		return first, ch
	}
	if l.idle == nil {
		l.idle = make(chan struct{})
	}
	return first, l.idle
}

// drain waits until idle is closed or ctx ends.
func drain(ctx context.Context, idle <-chan struct{}) error {
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
