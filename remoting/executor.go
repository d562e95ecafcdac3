package remoting

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Executor is a fixed pool of workers fed by a bounded FIFO queue, like the
// Java broker's per-processor thread pools: when the queue is full Submit
// refuses the task so the server can answer SYSTEM_BUSY instead of queueing
// without bound. Each queued task remembers when it was queued, so that
// DropExpired can answer the ones that waited too long (Apache's
// BrokerFastFailure) even while every worker is stuck.
type Executor struct {
	name string

	mu     sync.Mutex
	ready  sync.Cond // signalled when a task is queued or the executor closes
	queue  []queued  // ring buffer of capacity limit (grown on demand)
	head   int
	n      int
	limit  int // queue capacity
	idle   int // workers waiting for a task
	closed bool
	queued atomic.Int64 // n, readable without the lock

	wg  sync.WaitGroup
	log atomic.Pointer[slog.Logger]
}

// queued is a task waiting for a worker; drop answers it instead of running
// it (nil: it cannot be dropped).
type queued struct {
	run   func()
	drop  DropFunc
	since time.Time
	req   request // a server's request, when req.req != nil (run and drop are nil)
}

// DropReason says why a queued task is answered instead of run.
type DropReason int

const (
	// DropExpired: it waited in the queue longer than allowed.
	DropExpired DropReason = iota
	// DropBusy: the server sheds its queue (Apache: the OS page cache is
	// busy, the disk cannot keep up).
	DropBusy
)

// DropFunc answers a dropped task: why, how long it waited and how many
// tasks are still queued behind it.
type DropFunc func(why DropReason, waited time.Duration, queueLen int)

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
	e := &Executor{name: name, limit: queueSize}
	e.ready.L = &e.mu
	for range workers {
		e.wg.Go(e.work)
	}
	return e
}

func (e *Executor) work() {
	for {
		e.mu.Lock()
		for e.n == 0 && !e.closed {
			e.idle++
			e.ready.Wait()
			e.idle--
		}
		if e.n == 0 { // closed and drained
			e.mu.Unlock()
			return
		}
		t := e.popLocked()
		e.mu.Unlock()
		if t.req.req != nil {
			e.run(t.req.serve)
		} else {
			e.run(t.run)
		}
	}
}

func (e *Executor) popLocked() queued {
	t := e.queue[e.head]
	e.queue[e.head] = queued{}
	e.head = (e.head + 1) % len(e.queue)
	e.n--
	e.queued.Store(int64(e.n))
	return t
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
func (e *Executor) Submit(task func()) bool { return e.SubmitDroppable(task, nil) }

// SubmitDroppable queues task like Submit; drop, if not nil, is called
// instead of task when DropExpired or DropQueued removes it from the queue.
func (e *Executor) SubmitDroppable(task func(), drop DropFunc) bool {
	return e.SubmitSince(task, drop, time.Now())
}

// SubmitSince is SubmitDroppable for a task whose wait counts from since
// (a request's receipt, whose time the server read already: a clock read
// per request less).
func (e *Executor) SubmitSince(task func(), drop DropFunc, now time.Time) bool {
	return e.submit(queued{run: task, drop: drop, since: now})
}

// submitRequest queues a server's request: its fields travel in the queue
// entry, where two closures per request would be allocated otherwise.
func (e *Executor) submitRequest(r request, since time.Time) bool {
	return e.submit(queued{since: since, req: r})
}

func (e *Executor) submit(t queued) bool {
	e.mu.Lock()
	// Room is the queue's capacity plus the idle workers about to take a
	// task, so a queue of 0 still hands a task to an idle worker.
	if e.closed || e.n >= e.limit+e.idle {
		e.mu.Unlock()
		return false
	}
	if e.n == len(e.queue) {
		e.growLocked()
	}
	e.queue[(e.head+e.n)%len(e.queue)] = t
	e.n++
	e.queued.Store(int64(e.n))
	if e.idle > 0 {
		e.ready.Signal()
	}
	e.mu.Unlock()
	return true
}

func (e *Executor) growLocked() {
	next := make([]queued, max(8, 2*len(e.queue)))
	for i := range e.n {
		next[i] = e.queue[(e.head+i)%len(e.queue)]
	}
	e.queue, e.head = next, 0
}

// DropExpired answers, oldest first, the queued tasks that have waited
// maxWait or longer and can be dropped (DropExpired), with their wait and
// the queue's length after them; it stops at the first task that is
// younger or cannot be dropped, as Apache's BrokerFastFailure stops at the
// queue's head. It returns how many it dropped.
func (e *Executor) DropExpired(maxWait time.Duration) int {
	return e.drop(DropExpired, maxWait)
}

// DropQueued answers (DropBusy) every queued task that can be dropped, from
// the head up to the first one that cannot.
func (e *Executor) DropQueued() int { return e.drop(DropBusy, 0) }

func (e *Executor) drop(why DropReason, maxWait time.Duration) int {
	if e.queued.Load() == 0 {
		return 0
	}
	now := time.Now()
	type dropped struct {
		drop   DropFunc
		req    request
		waited time.Duration
		left   int
	}
	var out []dropped
	e.mu.Lock()
	for e.n > 0 {
		t := e.queue[e.head]
		waited := now.Sub(t.since)
		if (t.drop == nil && t.req.req == nil) || waited < maxWait {
			break
		}
		e.popLocked()
		out = append(out, dropped{t.drop, t.req, waited, e.n})
	}
	e.mu.Unlock()
	for _, d := range out {
		if d.req.req != nil {
			d.req.drop(why, d.waited, d.left)
		} else {
			d.drop(why, d.waited, d.left)
		}
	}
	return len(out)
}

// HeadWait is how long the oldest queued task has waited (0: none queued).
func (e *Executor) HeadWait() time.Duration {
	if e.queued.Load() == 0 {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == 0 {
		return 0
	}
	return time.Since(e.queue[e.head].since)
}

// QueueLen is the number of tasks waiting for a worker.
func (e *Executor) QueueLen() int { return int(e.queued.Load()) }

// Name is the name given to NewExecutor.
func (e *Executor) Name() string { return e.name }

// Close stops accepting tasks and waits until the queued ones have run.
func (e *Executor) Close() {
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		e.ready.Broadcast()
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
