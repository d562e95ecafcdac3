package remoting

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Executor is a fixed pool of workers fed by a bounded queue, like the Java
// broker's per-processor thread pools: when the queue is full Submit refuses
// the task so the server can answer SYSTEM_BUSY instead of queueing without
// bound.
type Executor struct {
	name  string
	tasks chan func()

	mu     sync.RWMutex // guards closed against a send on the closed channel
	closed bool
	wg     sync.WaitGroup
	log    atomic.Pointer[slog.Logger]
}

// NewExecutor starts workers goroutines (at least 1) sharing a queue of
// queueSize tasks. With queueSize 0 a task is accepted only when a worker is
// idle.
func NewExecutor(name string, workers, queueSize int) *Executor {
	if workers < 1 {
		workers = 1
	}
	if queueSize < 0 {
		queueSize = 0
	}
	e := &Executor{name: name, tasks: make(chan func(), queueSize)}
	for range workers {
		e.wg.Go(e.work)
	}
	return e
}

func (e *Executor) work() {
	for task := range e.tasks {
		e.run(task)
	}
}

// SetLogger sets where panics of submitted tasks are logged (default:
// slog.Default()).
func (e *Executor) SetLogger(l *slog.Logger) { e.log.Store(l) }

// run isolates a panicking task so the worker survives. Tasks submitted by
// Server and Client recover themselves and log with their own logger; this is
// the last line of defence for direct users.
func (e *Executor) run(task func()) {
	defer func() {
		if r := recover(); r != nil {
			l := e.log.Load()
			if l == nil {
				l = slog.Default()
			}
			l.Error("remoting: executor task panicked", "executor", e.name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	task()
}

// Submit queues task; it returns false when the queue is full or the
// executor is closed.
func (e *Executor) Submit(task func()) bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return false
	}
	select {
	case e.tasks <- task:
		return true
	default:
		return false
	}
}

// QueueLen is the number of tasks waiting for a worker.
func (e *Executor) QueueLen() int { return len(e.tasks) }

// Name is the name given to NewExecutor.
func (e *Executor) Name() string { return e.name }

// Close stops accepting tasks and waits until the queued ones have run.
func (e *Executor) Close() {
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		close(e.tasks)
	}
	e.mu.Unlock()
	e.wg.Wait()
}

// counter counts activities (in-flight requests, live connections) and lets
// one wait, with a deadline, for it to drop to zero. Unlike sync.WaitGroup,
// add may be called while a wait is in progress, which happens when requests
// keep arriving during a graceful shutdown.
type counter struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n reaches 0; nil when nobody waits
}

func (c *counter) add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *counter) done() {
	c.mu.Lock()
	c.n--
	if c.n == 0 && c.zero != nil {
		close(c.zero)
		c.zero = nil
	}
	c.mu.Unlock()
}

// goTracked runs f in a new goroutine counted by c.
func (c *counter) goTracked(f func()) {
	c.add()
	go func() {
		defer c.done()
		f()
	}()
}

func (c *counter) wait(ctx context.Context) error {
	c.mu.Lock()
	if c.n == 0 {
		c.mu.Unlock()
		return nil
	}
	if c.zero == nil {
		c.zero = make(chan struct{})
	}
	z := c.zero
	c.mu.Unlock()
	select {
	case <-z:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
