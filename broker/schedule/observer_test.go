package schedule

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
)

// recorder is an Observer that counts events by real topic.
type recorder struct {
	mu                 sync.Mutex
	enq, deq           map[string]int // timers
	enqMarker, deqMark map[string]int // cancellation markers
	delays             map[string][]int64
	delayed            map[string]int // delay-level deliveries
	delayedBytes       map[string]int64
}

func newRecorder() *recorder {
	return &recorder{enq: map[string]int{}, deq: map[string]int{}, enqMarker: map[string]int{}, deqMark: map[string]int{},
		delays: map[string][]int64{}, delayed: map[string]int{}, delayedBytes: map[string]int64{}}
}

func (r *recorder) TimerEnqueued(topic string, marker bool, bornMs, deliverMs int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if marker {
		r.enqMarker[topic]++
		return
	}
	r.enq[topic]++
	r.delays[topic] = append(r.delays[topic], deliverMs-bornMs)
}

func (r *recorder) TimerDequeued(topic string, marker bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if marker {
		r.deqMark[topic]++
		return
	}
	r.deq[topic]++
}

func (r *recorder) DelayDelivered(topic string, msgs int, bytes int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delayed[topic] += msgs
	r.delayedBytes[topic] += bytes
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("enq %v deq %v enqMarker %v deqMarker %v", r.enq, r.deq, r.enqMarker, r.deqMark)
}

// TestObserverTimerEvents: the Observer hears of each timer-topic message
// taken into the index and taken out (delivered or cancelled), markers
// flagged, by REAL_TOPIC, with the message's birth and delivery times;
// delay-level messages are not timer messages (Java's TimerMessageStore
// never sees them).
func TestObserverTimerEvents(t *testing.T) {
	t.Parallel() // waits for real delays to pass
	rec := newRecorder()
	r := newRig(t, "1s", func(o *Options) { o.Observer = rec })
	r.svc.Start()
	p := r.cfg.TimerPrecisionMs.Milliseconds()
	due := (time.Now().UnixMilli()/p+2)*p + p/2
	r.sendDelayed("T", 0, 2, func(i int) string { return strconv.Itoa(300 + 100*i) })
	r.send(newMsg("T", 0, "lvl", message.PropertyDelayTimeLevel, "1"))
	r.send(newMsg("U", 0, "kept", message.PropertyTimerDeliverMS, strconv.FormatInt(due, 10)))
	r.send(newMsg("U", 0, "gone", message.PropertyTimerDeliverMS, strconv.FormatInt(due, 10)))
	r.send(marker("U", "UNIQ-gone", due, "m"))
	r.waitCount("T", 0, 3, 10*time.Second)
	r.waitCount("U", 0, 1, 10*time.Second)
	r.waitIdle(5 * time.Second)
	testutil.Eventually(t, 5*time.Second, func() error {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if rec.deq["T"] != 2 || rec.deq["U"] != 2 || rec.deqMark["U"] != 1 {
			return fmt.Errorf("dequeues: %v %v", rec.deq, rec.deqMark)
		}
		return nil
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.enq["T"] != 2 || rec.enq["U"] != 2 || rec.enqMarker["U"] != 1 || len(rec.enq) != 2 || len(rec.enqMarker) != 1 {
		t.Fatalf("enqueues: %v markers %v", rec.enq, rec.enqMarker)
	}
	if len(rec.deq) != 2 || len(rec.deqMark) != 1 {
		t.Fatalf("dequeues: %v markers %v", rec.deq, rec.deqMark)
	}
	// The delay-level message alone is reported as a delay delivery, with
	// the bytes its copy took in the CommitLog.
	if len(rec.delayed) != 1 || rec.delayed["T"] != 1 || rec.delayedBytes["T"] < 100 {
		t.Fatalf("delay deliveries: %v bytes %v", rec.delayed, rec.delayedBytes)
	}
	for i, d := range rec.delays["T"] {
		// TIMER_DELAY_MS counts from the store time, a little after birth.
		if want := int64(300 + 100*i); d < want || d > want+1000 {
			t.Errorf("T timer %d: delivery %d ms after birth, want about %d", i, d, want)
		}
	}
}
