package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
)

func TestSlotEnd(t *testing.T) {
	for _, c := range []struct {
		ms   int64
		p    time.Duration
		want int64
	}{
		{1500, time.Second, 2000},
		{2000, time.Second, 2000}, // Java puts an exact multiple in the slot before
		{2001, time.Second, 3000},
		{1, time.Second, 1000},
		{1234, time.Millisecond, 1234},
		{1234, 0, 1234},
		{0, time.Second, 0},
	} {
		if got := slotEnd(c.ms, c.p); got != c.want {
			t.Errorf("slotEnd(%d, %v) = %d, want %d", c.ms, c.p, got, c.want)
		}
	}
	if got := DeleteKey("TopicA", "7F000001"); got != "TopicA+7F000001" {
		t.Fatalf("DeleteKey %q", got)
	}
}

// cancelKeys counts the pending cancellation keys.
func (r *rig) cancelKeys() int {
	r.t.Helper()
	return r.countKeys(cancelPrefix())
}

// marker is a cancellation of message uniq of topic, due at deliverMs.
func marker(topic, uniq string, deliverMs int64, body string) *message.Message {
	return newMsg(topic, 0, body, message.PropertyTimerDeliverMS, strconv.FormatInt(deliverMs, 10),
		message.PropertyTimerDelUniqKey, DeleteKey(topic, uniq))
}

func (r *rig) waitIdle(timeout time.Duration) {
	r.t.Helper()
	testutil.Eventually(r.t, timeout, func() error {
		if p, c := r.pendingKeys(), r.cancelKeys(); p != 0 || c != 0 {
			return fmt.Errorf("%d timer keys and %d cancellation keys left (stats %+v)", p, c, r.svc.Stats())
		}
		return nil
	})
}

// TestCancelTimer: markers (TIMER_DEL_UNIQKEY = topic+uniqKey) with the
// same delivery time, with the time + 1 ms (what a recall handle carries),
// and later in the same slot cancel their timers; a marker in another
// slot, of another topic or for an unknown key cancels nothing; no marker
// is ever delivered and nothing is left in the index.
func TestCancelTimer(t *testing.T) {
	t.Parallel() // waits for real delays to pass
	r := newRig(t, "", nil)
	r.svc.Start()
	p := r.cfg.TimerPrecisionMs.Milliseconds()
	// A due time in the middle of a slot, far enough ahead to send first.
	due := (time.Now().UnixMilli()/p+2)*p + p/2
	at := strconv.FormatInt(due, 10)
	for _, b := range []string{"same", "plus1", "sameslot", "otherslot", "othertopic", "kept"} {
		r.send(newMsg("X", 0, b, message.PropertyTimerDeliverMS, at))
	}
	r.send(marker("X", "UNIQ-same", due, "m1"))
	r.send(marker("X", "UNIQ-plus1", due+1, "m2"))
	r.send(marker("X", "UNIQ-sameslot", due/p*p+p-1, "m3"))
	r.send(marker("X", "UNIQ-otherslot", due+p, "m4"))
	r.send(marker("Y", "UNIQ-othertopic", due, "m5"))
	r.send(marker("X", "UNIQ-nothing", due, "m6"))
	if st := r.svc.Stats(); st.Delivered != 0 {
		t.Fatalf("delivered before due: %+v", st)
	}
	got := r.waitCount("X", 0, 3, 10*time.Second)
	r.waitIdle(5 * time.Second)
	checkBodies(t, r.read("X", 0), "otherslot", "othertopic", "kept")
	if got := r.read("Y", 0); len(got) != 0 {
		t.Fatalf("a marker was delivered to Y: %v", bodies(got))
	}
	for _, m := range got {
		if m.StoreTimestamp < due {
			t.Errorf("%s delivered %d ms early", m.Body, due-m.StoreTimestamp)
		}
	}
	st := r.svc.Stats()
	if st.Cancelled != 3 || st.Markers != 6 || st.Delivered != 3 || st.Dropped != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestCancelMarkerRefused: a marker due now or in the past is
// MESSAGE_ILLEGAL (Java's WHEEL_TIMER_MSG_ILLEGAL); one without a timer
// property is an ordinary message (Java ignores the property then).
func TestCancelMarkerRefused(t *testing.T) {
	r := newRig(t, "", nil)
	past := marker("X", "UNIQ-a", time.Now().Add(-time.Second).UnixMilli(), "m")
	if err := r.svc.Schedule(past); !errors.Is(err, store.ErrMessageIllegal) {
		t.Fatalf("past marker: %v, want MESSAGE_ILLEGAL", err)
	}
	plain := newMsg("X", 0, "p", message.PropertyTimerDelUniqKey, DeleteKey("X", "UNIQ-a"))
	if err := r.svc.Schedule(plain); err != nil || plain.Topic != "X" {
		t.Fatalf("marker without a timer: %v, topic %s", err, plain.Topic)
	}
}

// TestCancelSurvivesRestart: cancelled timers stay cancelled through a
// clean restart before they are due, a crash that lost the whole index
// (re-indexed from the consume queues), and a crash after the
// cancellation whose key deletions never reached Pebble.
func TestCancelSurvivesRestart(t *testing.T) {
	t.Parallel() // waits for real delays to pass
	for _, c := range []struct {
		name  string
		crash func(r *rig)
	}{
		{"clean", func(r *rig) { r.restart() }},
		{"index lost", func(r *rig) {
			r.svc.Close()
			r.wipeTimerSpace()
			r.svc = nil
			r.restart()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, "", nil)
			r.svc.Start()
			due := time.Now().Add(1500 * time.Millisecond).UnixMilli()
			const n = 10
			for i := 0; i < n; i++ {
				r.send(newMsg("R", 0, fmt.Sprintf("m%d", i), message.PropertyTimerDeliverMS, strconv.FormatInt(due, 10)))
			}
			for i := 0; i < n; i += 2 {
				r.send(marker("R", fmt.Sprintf("UNIQ-m%d", i), due, fmt.Sprintf("x%d", i)))
			}
			time.Sleep(100 * time.Millisecond)
			c.crash(r)
			if k := r.cancelKeys(); k != n/2 {
				t.Fatalf("%d cancellation keys after the restart, want %d", k, n/2)
			}
			r.svc.Start()
			r.waitCount("R", 0, n/2, 10*time.Second)
			r.waitIdle(5 * time.Second)
			checkBodies(t, r.read("R", 0), "m1", "m3", "m5", "m7", "m9")
		})
	}
	t.Run("deletions lost", func(t *testing.T) {
		r := newCrashRig(t)
		due := time.Now().Add(300 * time.Millisecond).UnixMilli()
		r.send(newMsg("K", 0, "gone", message.PropertyTimerDeliverMS, strconv.FormatInt(due, 10)))
		r.send(newMsg("K", 0, "kept", message.PropertyTimerDeliverMS, strconv.FormatInt(due, 10)))
		r.send(marker("K", "UNIQ-gone", due, "x"))
		r.waitCount("K", 0, 1, 5*time.Second)
		// The marker's key lies at the end of its slot.
		r.waitStats(func(st Stats) bool { return st.Cancelled == 1 && st.Markers == 1 }, 5*time.Second)
		// keepKeys: every key is still there, as after a crash that
		// lost the deletions.
		if k, c := r.pendingKeys(), r.cancelKeys(); k != 3 || c != 1 {
			t.Fatalf("%d timer keys, %d cancellation keys before the crash", k, c)
		}
		r.restart()
		r.svc.Start()
		r.waitIdle(5 * time.Second)
		checkBodies(t, r.read("K", 0), "kept")
		if st := r.svc.Stats(); st.Cancelled != 1 || st.Markers != 1 || st.Recovered != 1 {
			t.Fatalf("stats after the restart %+v", st)
		}
	})
}

// TestCancelFarTimer: a timer beyond the roll window is re-parked before
// it is due, and so is its marker; it is still cancelled.
func TestCancelFarTimer(t *testing.T) {
	t.Parallel() // waits for real delays to pass
	r := newRig(t, "", func(o *Options) { o.RollWindow = 300 * time.Millisecond })
	r.svc.Start()
	due := time.Now().Add(1300 * time.Millisecond).UnixMilli()
	r.send(newMsg("F", 0, "far", message.PropertyTimerDeliverMS, strconv.FormatInt(due, 10)))
	r.send(newMsg("F", 0, "kept", message.PropertyTimerDeliverMS, strconv.FormatInt(due, 10)))
	r.send(marker("F", "UNIQ-far", due+1, "x"))
	r.waitCount("F", 0, 1, 5*time.Second)
	r.waitIdle(5 * time.Second)
	checkBodies(t, r.read("F", 0), "kept")
	if st := r.svc.Stats(); st.Rolled < 4 || st.Cancelled != 1 || st.Markers != 1 {
		t.Fatalf("stats %+v", st)
	}
}
