package schedule

import (
	"context"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
)

func (r *rig) delayOffsets() map[int32]int64 {
	r.t.Helper()
	d, err := r.svc.DelayOffsets()
	if err != nil {
		r.t.Fatal(err)
	}
	return d
}

func (r *rig) waitDelayOffsets(want map[int32]int64) {
	r.t.Helper()
	testutil.Eventually(r.t, 10*time.Second, func() error {
		if got := r.delayOffsets(); !maps.Equal(got, want) {
			return fmt.Errorf("delay offsets %v, want %v", got, want)
		}
		return nil
	})
}

func (r *rig) timing() map[string]int64 {
	r.t.Helper()
	c, _ := r.svc.TimingCounts()
	out := map[string]int64{}
	for topic, t := range c {
		out[topic] = t.Count
	}
	return out
}

func (r *rig) waitTiming(want map[string]int64) {
	r.t.Helper()
	testutil.Eventually(r.t, 10*time.Second, func() error {
		if got := r.timing(); !maps.Equal(got, want) {
			return fmt.Errorf("timing counts %v, want %v (stats %+v)", got, want, r.svc.Stats())
		}
		return nil
	})
}

// TestDelayOffsets: per level, the delay offset is the consume-queue
// offset of SCHEDULE_TOPIC_XXXX queue level−1 below which every message
// was delivered (Java's ScheduleMessageService offsetTable); it is kept
// across a restart, and a delivery whose key deletion was lost (a crash)
// holds it back.
func TestDelayOffsets(t *testing.T) {
	t.Parallel() // waits for a 1 s level
	for _, crash := range []bool{false, true} {
		t.Run(fmt.Sprintf("crash=%v", crash), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, "1s 1h", nil)
			r.svc.keepKeys = crash
			if got := r.delayOffsets(); len(got) != 0 {
				t.Fatalf("no delay-level message yet: %v", got)
			}
			for i := range 3 {
				r.send(newMsg("T", 0, fmt.Sprintf("a%d", i), message.PropertyDelayTimeLevel, "1"))
			}
			r.send(newMsg("T", 1, "b0", message.PropertyDelayTimeLevel, "2"))
			r.svc.Start()
			r.waitCount("T", 0, 3, 10*time.Second)
			want := map[int32]int64{1: 3, 2: 0}
			if crash {
				want[1] = 0 // delivered, but the keys are still there
			}
			r.waitDelayOffsets(want)
			r.restart()
			if crash {
				// Recovery found the delivered copies and removed their keys.
				want[1] = 3
			}
			if got := r.delayOffsets(); !maps.Equal(got, want) {
				t.Fatalf("after the restart: %v, want %v", got, want)
			}
			if got := len(r.read("T", 0)); got != 3 {
				t.Fatalf("%d deliveries of level 1 after the restart, want 3", got)
			}
		})
	}
}

// TestTimerProgress: the checkpoint's queue offset is the indexed end of
// rmq_sys_wheel_timer queue 0; its read time is the earliest pending due
// time (at most now), floored to the timer precision.
func TestTimerProgress(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", nil)
	r.svc.keepKeys = true // the delivered key stays pending
	p, err := r.svc.Progress()
	if err != nil || p.QueueOffset != 0 {
		t.Fatalf("empty: %+v %v", p, err)
	}
	due := time.Now().Add(300 * time.Millisecond)
	r.send(newMsg("T", 0, "soon", message.PropertyTimerDeliverMS, ms(due)))
	r.send(newMsg("T", 0, "later", message.PropertyTimerDelaySec, "3600"))
	r.svc.Start()
	r.waitCount("T", 0, 1, 10*time.Second)
	testutil.Eventually(t, 5*time.Second, func() error {
		p, err = r.svc.Progress()
		if err == nil && p.QueueOffset != 2 {
			err = fmt.Errorf("progress %+v, want queue offset 2", p)
		}
		return err
	})
	if prec := r.cfg.TimerPrecisionMs.Milliseconds(); p.ReadTimeMs > due.UnixMilli() || p.ReadTimeMs%prec != 0 || p.ReadTimeMs <= due.UnixMilli()-prec {
		t.Fatalf("read time %d: want the pending key's %d floored to %d ms", p.ReadTimeMs, due.UnixMilli(), prec)
	}
	r.restart() // recovery removes the delivered key
	r.svc.Start()
	before := time.Now().UnixMilli()
	if p, err = r.svc.Progress(); err != nil || p.QueueOffset != 2 || p.ReadTimeMs < before-r.cfg.TimerPrecisionMs.Milliseconds() {
		t.Fatalf("after the restart: %+v %v, want queue offset 2 and about now (%d)", p, err, before)
	}
}

// TestTimingCounts: the timer messages waiting per real topic count up at
// indexing and down at delivery or cancellation (markers never count, nor
// delay-level messages), and survive a clean restart, a crash that lost
// the key deletions, a crash that lost the whole timer key space, and an
// upgrade from a store without counts.
func TestTimingCounts(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", nil)
	r.svc.Start()
	for i := range 3 {
		r.send(newMsg("A", 0, fmt.Sprintf("a%d", i), message.PropertyTimerDelaySec, "3600"))
	}
	soon := ms(time.Now().Add(200 * time.Millisecond))
	r.send(newMsg("B", 0, "b0", message.PropertyTimerDeliverMS, soon))
	r.send(newMsg("B", 0, "b1", message.PropertyTimerDeliverMS, soon))
	r.send(newMsg("C", 0, "c0", message.PropertyDelayTimeLevel, "1"))
	r.waitCount("B", 0, 2, 10*time.Second)
	r.waitCount("C", 0, 1, 10*time.Second)
	want := map[string]int64{"A": 3, "B": 0}
	r.waitTiming(want)

	r.restart()
	if got := r.timing(); !maps.Equal(got, want) {
		t.Fatalf("after a clean restart: %v, want %v", got, want)
	}

	// A crash after delivery: the key deletions (and their counts) lost;
	// the delivery stopped counting at once all the same.
	r.svc.keepKeys = true
	r.svc.Start()
	r.send(newMsg("B", 0, "b2", message.PropertyTimerDeliverMS, ms(time.Now().Add(100*time.Millisecond))))
	r.waitCount("B", 0, 3, 10*time.Second)
	r.waitTiming(want)
	r.restart()
	if got := r.timing(); !maps.Equal(got, want) {
		t.Fatalf("after a crash that lost the key deletions: %v, want %v", got, want)
	}

	// A crash that lost every timer write: everything is re-indexed and
	// the delivered ones found again.
	r.wipeTimerSpace()
	r.restart()
	if got := r.timing(); !maps.Equal(got, want) {
		t.Fatalf("after losing the timer key space: %v, want %v", got, want)
	}

	// A store written before the counts: they are counted from the keys.
	b := r.st.DB().NewBatch()
	for _, k := range [][]byte{timingKey("A"), timingKey("B"), timingInitKey()} {
		if err := b.Delete(k, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	r.restart()
	if got := r.timing(); got["A"] != 3 || got["B"] != 0 {
		t.Fatalf("counted from the keys: %v, want A 3 (B 0 or absent)", got)
	}
	if got := len(r.read("B", 0)); got != 3 {
		t.Fatalf("%d deliveries to B, want 3", got)
	}
}

// TestPromotedSlaveSkipsDelivered: a slave indexes the parked messages it
// replicates but delivers nothing; the master's delivered copies reach its
// CommitLog, their keys stay in its index. Once promoted it removes those
// keys before delivering: a message the old master delivered is not
// delivered again, one it had not delivered is, and the timing count
// follows.
func TestPromotedSlaveSkipsDelivered(t *testing.T) {
	t.Parallel()
	var cfg atomic.Pointer[config.Config]
	base := testBrokerConfig(t, "")
	slaveCfg := *base
	slaveCfg.BrokerRole, slaveCfg.BrokerID = config.RoleSlave, 1
	cfg.Store(&slaveCfg)
	r := newRig(t, "", func(o *Options) { o.Config = cfg.Load })
	due := time.Now().Add(200 * time.Millisecond)
	park := func(body string) *message.Message {
		m := newMsg("T", 0, body, message.PropertyTimerDeliverMS, ms(due))
		if err := r.svc.Schedule(m); err != nil {
			t.Fatal(err)
		}
		res, err := r.st.PutMessage(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		m.CommitLogOffset = res.PhysicalOffset
		return m
	}
	done := park("delivered-by-the-master")
	park("left-to-the-new-master")
	r.svc.Start()
	r.waitTiming(map[string]int64{"T": 2})
	// The old master's delivered copy of the first, as replication
	// brings it.
	cp := newMsg("T", 0, "delivered-by-the-master", PropertyTimerKey, formatMarker(due.UnixMilli(), done.CommitLogOffset))
	if _, err := r.st.PutMessage(context.Background(), cp); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // both due: a slave still delivers nothing
	if got := len(r.read("T", 0)); got != 1 {
		t.Fatalf("a slave delivered: %d messages in T, want 1", got)
	}
	cfg.Store(base)
	got := r.waitCount("T", 0, 2, 10*time.Second)
	r.waitTiming(map[string]int64{"T": 0})
	time.Sleep(300 * time.Millisecond)
	if got = r.read("T", 0); len(got) != 2 {
		t.Fatalf("after the promotion T holds %v, want the master's copy and one delivery", bodies(got))
	}
	if b := bodies(got); b["delivered-by-the-master"] != 1 || b["left-to-the-new-master"] != 1 {
		t.Fatalf("after the promotion: %v", b)
	}
}

// TestPromotedSlaveSkipsUnmarkedDeliveries: a master that marks no
// delivered copy (Apache's ScheduleMessageService and TimerMessageStore)
// still leaves each copy with its message's UNIQ_KEY, stored after it. A
// slave of such a master, promoted, removes the keys of the timer and
// delay-level messages whose copies it replicated, and delivers the rest:
// one whose UNIQ_KEY appears only before it was parked (the original of
// a retry) is delivered.
func TestPromotedSlaveSkipsUnmarkedDeliveries(t *testing.T) {
	t.Parallel()
	var cfg atomic.Pointer[config.Config]
	base := testBrokerConfig(t, "1s 2s")
	slaveCfg := *base
	slaveCfg.BrokerRole, slaveCfg.BrokerID = config.RoleSlave, 1
	cfg.Store(&slaveCfg)
	r := newRig(t, "1s 2s", func(o *Options) { o.Config = cfg.Load })
	put := func(m *message.Message) {
		t.Helper()
		if _, err := r.st.PutMessage(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	due := ms(time.Now().Add(200 * time.Millisecond))
	park := func(m *message.Message) {
		t.Helper()
		if err := r.svc.Schedule(m); err != nil {
			t.Fatal(err)
		}
		put(m)
	}
	put(newMsg("T", 0, "retried")) // the original, before its timer
	park(newMsg("T", 0, "retried", message.PropertyTimerDeliverMS, due))
	park(newMsg("T", 0, "timer-delivered-by-the-master", message.PropertyTimerDeliverMS, due))
	park(newMsg("T", 0, "delay-delivered-by-the-master", message.PropertyDelayTimeLevel, "1"))
	park(newMsg("T", 0, "left-to-the-new-master", message.PropertyTimerDeliverMS, due))
	r.svc.Start()
	r.waitTiming(map[string]int64{"T": 3})
	// The old master's copies as replication brings them: same UNIQ_KEY,
	// no marker.
	put(newMsg("T", 0, "timer-delivered-by-the-master"))
	put(newMsg("T", 0, "delay-delivered-by-the-master"))
	time.Sleep(1200 * time.Millisecond) // all due: a slave still delivers nothing
	if got := len(r.read("T", 0)); got != 3 {
		t.Fatalf("a slave delivered: %d messages in T, want 3", got)
	}
	cfg.Store(base)
	r.waitCount("T", 0, 5, 10*time.Second)
	r.waitTiming(map[string]int64{"T": 0})
	time.Sleep(1500 * time.Millisecond)
	got := bodies(r.read("T", 0))
	want := map[string]int{"retried": 2, "timer-delivered-by-the-master": 1, "delay-delivered-by-the-master": 1, "left-to-the-new-master": 1}
	if !maps.Equal(got, want) {
		t.Fatalf("after the promotion T holds %v, want %v", got, want)
	}
}
