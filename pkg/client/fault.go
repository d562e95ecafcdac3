package client

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// Fault avoidance, Java's MQFaultStrategy (sendLatencyFaultEnable): a
// broker that answered slowly, or not at all, is skipped by round-robin
// sends for a while, so that after a broker dies sends stop paying a
// failed attempt each until the route refresh drops it. Java's tables:
// latency at least latencyMax[i] isolates for notAvailable[i]; a transport
// failure counts as 10 s of latency.
var (
	faultLatencyMax   = [...]time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 550 * time.Millisecond, 1800 * time.Millisecond, 3 * time.Second, 5 * time.Second, 15 * time.Second}
	faultNotAvailable = [...]time.Duration{0, 0, 2 * time.Second, 5 * time.Second, 6 * time.Second, 10 * time.Second, 30 * time.Second}
)

const faultIsolationLatency = 10 * time.Second

// faultAvoidance remembers until when each broker is to be avoided.
type faultAvoidance struct {
	mu    sync.Mutex
	until map[string]time.Time
	now   func() time.Time
}

func newFaultAvoidance(now func() time.Time) *faultAvoidance {
	if now == nil {
		now = time.Now
	}
	return &faultAvoidance{until: make(map[string]time.Time), now: now}
}

// notAvailableFor is how long a broker with this latency is avoided.
func notAvailableFor(latency time.Duration) time.Duration {
	for i := len(faultLatencyMax) - 1; i >= 0; i-- {
		if latency >= faultLatencyMax[i] {
			return faultNotAvailable[i]
		}
	}
	return 0
}

// record notes one attempt's outcome: isolated (a transport failure) or
// its latency.
func (f *faultAvoidance) record(broker string, latency time.Duration, isolated bool) {
	if isolated {
		latency = faultIsolationLatency
	}
	d := notAvailableFor(latency)
	f.mu.Lock()
	defer f.mu.Unlock()
	if d <= 0 {
		delete(f.until, broker)
		return
	}
	f.until[broker] = f.now().Add(d)
}

// available reports whether broker may be used now.
func (f *faultAvoidance) available(broker string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.until[broker]
	if !ok {
		return true
	}
	if !f.now().Before(u) {
		delete(f.until, broker)
		return true
	}
	return false
}

// pick is selectQueue that also skips avoided brokers: the next queue
// whose broker is available and not lastBroker; failing that, plain
// selectQueue (a send must go somewhere).
func (f *faultAvoidance) pick(queues []protocol.MessageQueue, pos *atomic.Uint32, lastBroker string) protocol.MessageQueue {
	n := uint32(len(queues))
	for range n {
		mq := queues[pos.Add(1)%n]
		if mq.BrokerName != lastBroker && f.available(mq.BrokerName) {
			return mq
		}
	}
	return selectQueue(queues, pos, lastBroker)
}

// isTransportError reports whether err means the broker could not be
// reached or did not answer (as opposed to an answer with an error code).
func isTransportError(err error) bool {
	var re *ResponseError
	return err != nil && !errors.As(err, &re) && !errors.Is(err, ErrInvalidMessage)
}

// pickQueue is the round-robin choice of a send, avoiding faulty brokers
// unless fault avoidance is off.
func (p *Producer) pickQueue(pub *publishInfo, lastBroker string) protocol.MessageQueue {
	if p.faults == nil {
		return selectQueue(pub.queues, &pub.next, lastBroker)
	}
	return p.faults.pick(pub.queues, &pub.next, lastBroker)
}

// noteLatency feeds one attempt's outcome to fault avoidance.
func (p *Producer) noteLatency(broker string, latency time.Duration, err error) {
	if p.faults != nil && broker != "" {
		p.faults.record(broker, latency, isTransportError(err))
	}
}
