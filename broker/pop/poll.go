package pop

import (
	"container/heap"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/broker/internal/deadline"
	"github.com/rmqgo/rmq/broker/internal/loop"
	"github.com/rmqgo/rmq/remoting"
)

// errPollFull: too many suspended pop requests (POLLING_FULL).
var errPollFull = errors.New("pop: polling queue full")

// pollKey is what a suspended pop waits on (Java's topic@cid@queueId
// polling key); QueueID −1 waits on every queue of the topic.
type pollKey struct {
	topic, group string
	qid          int32
}

type pollReq struct {
	ch       *remoting.Channel
	cmd      *remoting.Command
	key      pollKey
	deadline time.Time
	hpos     int
}

// Deadline and SetIndex place requests in the deadline heap.
func (r *pollReq) Deadline() time.Time { return r.deadline }
func (r *pollReq) SetIndex(i int)      { r.hpos = i }

// poller holds suspended pop (or notification) requests (Java's
// PopLongPollingService). A request is re-run when a message arrives in a
// queue it waits on, in its group's pop retry topic, when an orderly queue
// it waits on is unblocked, or at its deadline; the re-run may suspend it
// again until the deadline. No goroutine is held per request.
type poller struct {
	resume      func(ctx context.Context, ch *remoting.Channel, cmd *remoting.Command)
	maxPerKey   func() int
	maxTotal    func() int
	now         func() time.Time
	log         *slog.Logger
	retryTopics func(k pollKey) []string

	parked atomic.Int64 // len(dl), readable without mu (the arrival fast path)

	mu      sync.Mutex
	byKey   map[pollKey][]*pollReq
	byTopic map[string]map[pollKey]int // topic or pop retry topic → keys (reference count)
	dl      deadline.Heap[*pollReq]
	closed  bool

	exec   *remoting.Executor
	ctx    context.Context
	cancel context.CancelFunc
	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

func newPoller(name string, workers int, resume func(context.Context, *remoting.Channel, *remoting.Command),
	retryTopics func(pollKey) []string, maxPerKey, maxTotal func() int, now func() time.Time, log *slog.Logger) *poller {
	ctx, cancel := context.WithCancel(context.Background())
	p := &poller{
		resume: resume, maxPerKey: maxPerKey, maxTotal: maxTotal, now: now, log: log, retryTopics: retryTopics,
		byKey: map[pollKey][]*pollReq{}, byTopic: map[string]map[pollKey]int{},
		exec: remoting.NewExecutor(name, workers, 8192), ctx: ctx, cancel: cancel,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	p.exec.SetLogger(log)
	return p
}

// park suspends a request until deadline.
func (p *poller) park(ch *remoting.Channel, cmd *remoting.Command, key pollKey, deadline time.Time) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return errPollFull
	}
	if len(p.dl) >= p.maxTotal() || len(p.byKey[key]) >= p.maxPerKey() {
		p.mu.Unlock()
		return errPollFull
	}
	r := &pollReq{ch: ch, cmd: cmd, key: key, deadline: deadline}
	p.insertLocked(r)
	first := r.hpos == 0
	p.mu.Unlock()
	if first {
		loop.Wake(p.kick)
	}
	return nil
}

func (p *poller) topicsOf(k pollKey) []string {
	out := []string{k.topic}
	if p.retryTopics != nil {
		out = append(out, p.retryTopics(k)...)
	}
	return out
}

func (p *poller) insertLocked(r *pollReq) {
	list := p.byKey[r.key]
	if len(list) == 0 {
		for _, t := range p.topicsOf(r.key) {
			m := p.byTopic[t]
			if m == nil {
				m = map[pollKey]int{}
				p.byTopic[t] = m
			}
			m[r.key]++
		}
	}
	p.byKey[r.key] = append(list, r)
	heap.Push(&p.dl, r)
	p.parked.Store(int64(len(p.dl)))
}

// takeKeyLocked removes every request of key.
func (p *poller) takeKeyLocked(key pollKey) []*pollReq {
	list := p.byKey[key]
	if len(list) == 0 {
		return nil
	}
	p.dropKeyLocked(key)
	for _, r := range list {
		if r.hpos >= 0 {
			heap.Remove(&p.dl, r.hpos)
		}
	}
	p.parked.Store(int64(len(p.dl)))
	return list
}

// dropKeyLocked forgets key in the indexes.
func (p *poller) dropKeyLocked(key pollKey) {
	delete(p.byKey, key)
	for _, t := range p.topicsOf(key) {
		if m := p.byTopic[t]; m != nil {
			if m[key]--; m[key] <= 0 {
				delete(m, key)
			}
			if len(m) == 0 {
				delete(p.byTopic, t)
			}
		}
	}
}

// removeLocked takes one request out (deadline reached).
func (p *poller) removeLocked(r *pollReq) {
	list := p.byKey[r.key]
	for i, x := range list {
		if x == r {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		p.dropKeyLocked(r.key)
	} else {
		p.byKey[r.key] = list
	}
	if r.hpos >= 0 {
		heap.Remove(&p.dl, r.hpos)
	}
	p.parked.Store(int64(len(p.dl)))
}

// wakeArrival re-runs the requests waiting on a message stored in topic
// queue qid: pops of that queue and of all queues (qid −1), of any group,
// and pops whose pop retry topic is topic.
func (p *poller) wakeArrival(topic string, qid int32) {
	if p.parked.Load() == 0 {
		return // the common case: every dispatched message passes here
	}
	p.mu.Lock()
	var due []*pollReq
	for k := range p.byTopic[topic] {
		if k.topic != topic || k.qid == qid || k.qid < 0 {
			due = append(due, p.takeKeyLocked(k)...)
		}
	}
	p.mu.Unlock()
	p.dispatch(due, false)
}

// wakeQueue re-runs the requests of one group waiting on topic queue qid
// or on all its queues (an ack unblocked an orderly queue, a lock expired).
func (p *poller) wakeQueue(topic, group string, qid int32) {
	p.mu.Lock()
	due := p.takeKeyLocked(pollKey{topic, group, qid})
	if qid >= 0 {
		due = append(due, p.takeKeyLocked(pollKey{topic, group, -1})...)
	}
	p.mu.Unlock()
	p.dispatch(due, true)
}

// count is POLLING_INFO's pollingNum.
func (p *poller) count(key pollKey) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byKey[key])
}

// countBy counts the suspended requests by f of their keys.
func countBy[K comparable](p *poller, f func(pollKey) K) map[K]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[K]int{}
	for k, list := range p.byKey {
		out[f(k)] += len(list)
	}
	return out
}

// size is the number of suspended requests.
func (p *poller) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.dl)
}

// dispatch re-runs requests on the worker pool. When the pool is full a
// caller that must not block (the store's dispatcher) parks them again.
func (p *poller) dispatch(due []*pollReq, mayBlock bool) {
	for _, r := range due {
		if r.ch != nil && !r.ch.IsActive() {
			continue
		}
		r := r
		if p.exec.Submit(func() { p.resume(p.ctx, r.ch, r.cmd) }) {
			continue
		}
		if mayBlock {
			p.resume(p.ctx, r.ch, r.cmd)
			continue
		}
		p.mu.Lock()
		if !p.closed {
			p.insertLocked(r)
		}
		p.mu.Unlock()
	}
}

// expire re-runs the requests whose deadline passed (they answer
// POLLING_TIMEOUT unless a message came) and returns the next deadline.
func (p *poller) expire() time.Time {
	now := p.now()
	var due []*pollReq
	p.mu.Lock()
	for len(p.dl) > 0 && !now.Before(p.dl[0].deadline) {
		r := p.dl[0]
		p.removeLocked(r)
		due = append(due, r)
	}
	var next time.Time
	if len(p.dl) > 0 {
		next = p.dl[0].deadline
	}
	p.mu.Unlock()
	p.dispatch(due, true)
	return next
}

func (p *poller) start() {
	p.once.Do(func() { go p.loop() })
}

func (p *poller) loop() {
	defer close(p.done)
	loop.Rounds(p.stop, p.kick, func() time.Duration {
		if next := p.expire(); !next.IsZero() {
			return min(time.Second, next.Sub(p.now()))
		}
		return time.Second
	})
}

// close drops every suspended request and stops the workers.
func (p *poller) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.byKey, p.byTopic, p.dl = map[pollKey][]*pollReq{}, map[string]map[pollKey]int{}, nil
	p.parked.Store(0)
	p.mu.Unlock()
	close(p.stop)
	p.once.Do(func() { close(p.done) }) // never started: nothing to wait for
	<-p.done
	p.exec.Close()
	p.cancel()
}
