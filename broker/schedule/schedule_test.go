package schedule

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
)

func TestLevelTable(t *testing.T) {
	var lt levelTable
	got := lt.get("1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h")
	if len(got) != 18 || got[0] != time.Second || got[2] != 10*time.Second || got[17] != 2*time.Hour {
		t.Fatalf("default table %v", got)
	}
	if got := lt.get("1s 2d"); len(got) != 2 || got[1] != 48*time.Hour {
		t.Fatalf("re-parse %v", got)
	}
	// Garbage keeps the previous table.
	if got := lt.get("1s 5x"); len(got) != 2 {
		t.Fatalf("garbage replaced the table: %v", got)
	}
	var fresh levelTable
	if got := fresh.get("nope"); len(got) != 18 {
		t.Fatalf("garbage on a fresh table: %v", got)
	}
	lv := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}
	for _, c := range []struct {
		level int
		want  time.Duration
	}{{1, time.Second}, {3, 3 * time.Second}, {4, 3 * time.Second}, {99, 3 * time.Second}, {0, time.Second}} {
		if got := levelDelay(lv, c.level); got != c.want {
			t.Errorf("levelDelay(%d) = %v, want %v", c.level, got, c.want)
		}
	}
}

func TestKeys(t *testing.T) {
	a, b, c := timerKey(5, 900), timerKey(6, 1), timerKey(6, 2)
	if bytes.Compare(a, b) >= 0 || bytes.Compare(b, c) >= 0 {
		t.Fatal("keys do not sort by (deliverMs, offset)")
	}
	if s := successor(b); bytes.Compare(b, s) >= 0 || bytes.Compare(s, c) >= 0 {
		t.Fatal("successor not between neighbours")
	}
	if ms, phy, ok := parseTimerKey(c); !ok || ms != 6 || phy != 2 {
		t.Fatalf("parse %d %d %v", ms, phy, ok)
	}
	if _, _, ok := parseTimerKey(c[:10]); ok {
		t.Fatal("short key parsed")
	}
	if !bytes.HasPrefix(a, pendingPrefix()) {
		t.Fatal("prefix")
	}
	if ms, phy, ok := parseMarker(formatMarker(1700000000123, 42)); !ok || ms != 1700000000123 || phy != 42 {
		t.Fatal("marker round trip")
	}
	for _, bad := range []string{"", "1", "a,2", "1,b"} {
		if _, _, ok := parseMarker(bad); ok {
			t.Errorf("marker %q parsed", bad)
		}
	}
}

func TestHistogram(t *testing.T) {
	var h histogram
	for i := int64(0); i < 1000; i++ {
		h.observe(i)
	}
	p50, p99, mx := h.quantiles(0.5, 0.99)
	within := func(got time.Duration, want int64) bool {
		d := got.Milliseconds() - want
		return d <= 0 && d > -want/16-1
	}
	if !within(p50, 500) || !within(p99, 990) || mx != 999*time.Millisecond {
		t.Fatalf("p50 %v p99 %v max %v", p50, p99, mx)
	}
	for _, v := range []int64{0, 63, 64, 65, 127, 128, 1000, 123456789} {
		if lo := bucketLow(bucketOf(v)); lo > v || v-lo > v/32+1 {
			t.Errorf("bucket of %d starts at %d", v, lo)
		}
	}
	h.reset()
	if a, b, c := h.quantiles(0.5, 0.99); a+b+c != 0 {
		t.Fatal("reset")
	}
}

func TestScheduleRewrite(t *testing.T) {
	r := newRig(t, "", nil)
	now := time.Now()
	r.svc.o.Now = func() time.Time { return now }
	nowMs := now.UnixMilli()

	m := newMsg("T", 3, "d", message.PropertyDelayTimeLevel, "3", message.PropertyTimerDelaySec, "9", PropertyTimerKey, "1,2")
	if err := r.svc.Schedule(m); err != nil {
		t.Fatal(err)
	}
	if m.Topic != ScheduleTopic || m.QueueID != 2 || m.Property(message.PropertyRealTopic) != "T" || m.Property(message.PropertyRealQueueID) != "3" {
		t.Fatalf("delay rewrite %+v", m)
	}
	if m.Property(message.PropertyTimerDelaySec) != "" || m.Property(PropertyTimerKey) != "" || m.Property(message.PropertyUniqClientMessageIDKeyIdx) != "UNIQ-d" {
		t.Fatalf("props %v", m.Properties)
	}
	m = newMsg("T", 0, "clamp", message.PropertyDelayTimeLevel, "40")
	if err := r.svc.Schedule(m); err != nil || m.QueueID != 17 || m.Property(message.PropertyDelayTimeLevel) != "18" {
		t.Fatalf("clamp: %v %+v", err, m)
	}

	for _, c := range []struct {
		key, val string
		want     int64
	}{
		{message.PropertyTimerDelaySec, "10", nowMs + 10000},
		{message.PropertyTimerDelayMS, "1500", nowMs + 1500},
		{message.PropertyTimerDeliverMS, strconv.FormatInt(nowMs+86400000*39, 10), nowMs + 86400000*39},
	} {
		m := newMsg("T", 1, "timer", c.key, c.val)
		if err := r.svc.Schedule(m); err != nil {
			t.Fatalf("%s=%s: %v", c.key, c.val, err)
		}
		if m.Topic != TimerTopic || m.QueueID != 0 || m.Property(message.PropertyTimerOutMS) != strconv.FormatInt(c.want, 10) ||
			m.Property(message.PropertyRealTopic) != "T" || m.Property(message.PropertyRealQueueID) != "1" {
			t.Fatalf("%s=%s: %+v", c.key, c.val, m)
		}
	}
	// TIMER_DELAY_SEC wins over TIMER_DELIVER_MS (Java's order).
	m = newMsg("T", 1, "order", message.PropertyTimerDeliverMS, "1", message.PropertyTimerDelaySec, "2")
	if err := r.svc.Schedule(m); err != nil || m.Property(message.PropertyTimerOutMS) != strconv.FormatInt(nowMs+2000, 10) {
		t.Fatalf("precedence: %v %v", err, m.Properties)
	}

	for _, c := range [][2]string{
		{message.PropertyTimerDelaySec, "-1"},
		{message.PropertyTimerDelayMS, "abc"},
		{message.PropertyTimerDeliverMS, "-5"},
		{message.PropertyTimerDeliverMS, "1.5e12"},
		{message.PropertyTimerDelaySec, strconv.Itoa(41 * 86400)},
		{message.PropertyTimerDelayMS, "9223372036854775807"},
		{message.PropertyTimerDeliverMS, strconv.FormatInt(nowMs+41*86400000, 10)},
	} {
		m := newMsg("T", 1, "bad", c[0], c[1])
		err := r.svc.Schedule(m)
		if !errors.Is(err, store.ErrMessageIllegal) {
			t.Errorf("%s=%s: err %v, want MESSAGE_ILLEGAL", c[0], c[1], err)
		}
		if m.Topic != "T" {
			t.Errorf("%s=%s: rewritten despite the error", c[0], c[1])
		}
	}
	// A delivery time already past: stored as is (Java).
	m = newMsg("T", 1, "past", message.PropertyTimerDeliverMS, strconv.FormatInt(nowMs-1000, 10))
	if err := r.svc.Schedule(m); err != nil || m.Topic != "T" {
		t.Fatalf("past: %v %+v", err, m)
	}
	// Already converted (TIMER_OUT_MS): not a timer (Java).
	m = newMsg("T", 1, "out", message.PropertyTimerDelaySec, "5", message.PropertyTimerOutMS, "1")
	if err := r.svc.Schedule(m); err != nil || m.Topic != "T" {
		t.Fatalf("TIMER_OUT_MS: %v %+v", err, m)
	}
	r.cfg.TimerWheelEnable = false
	m = newMsg("T", 1, "off", message.PropertyTimerDelaySec, "5")
	if err := r.svc.Schedule(m); !errors.Is(err, store.ErrMessageIllegal) {
		t.Fatalf("timer wheel off: %v", err)
	}
	m = newMsg("T", 1, "off", message.PropertyDelayTimeLevel, "1")
	if err := r.svc.Schedule(m); err != nil || m.Topic != ScheduleTopic {
		t.Fatalf("delay level with the timer wheel off: %v", err)
	}
}

func TestDeliverDelayLevelsAndTimers(t *testing.T) {
	t.Parallel() // waits for real delays to pass
	r := newRig(t, "1s 2s 3s", nil)
	r.svc.Start()
	start := time.Now()
	r.send(newMsg("Real", 2, "lvl1", message.PropertyDelayTimeLevel, "1", message.PropertyTags, "TagA", message.PropertyKeys, "k1"))
	r.send(newMsg("Real", 2, "lvl2", message.PropertyDelayTimeLevel, "2"))
	r.send(newMsg("Real", 2, "ms", message.PropertyTimerDelayMS, "700"))
	deliverAt := start.Add(1500 * time.Millisecond)
	r.send(newMsg("Real", 2, "at", message.PropertyTimerDeliverMS, ms(deliverAt)))
	// Nothing in the real topic yet.
	if got := r.read("Real", 2); len(got) != 0 {
		t.Fatalf("delivered early: %d", len(got))
	}
	got := r.waitCount("Real", 2, 4, 10*time.Second)
	order := []string{}
	for _, m := range got {
		order = append(order, string(m.Body))
		if m.Property(message.PropertyUniqClientMessageIDKeyIdx) != "UNIQ-"+string(m.Body) {
			t.Errorf("%s: UNIQ_KEY %q", m.Body, m.Property(message.PropertyUniqClientMessageIDKeyIdx))
		}
		for _, k := range []string{message.PropertyDelayTimeLevel, message.PropertyTimerDelayMS, message.PropertyTimerDeliverMS} {
			if v := m.Property(k); v != "" {
				t.Errorf("%s: %s=%s left on the delivered message", m.Body, k, v)
			}
		}
		if m.Property(PropertyTimerKey) == "" || m.Property(message.PropertyRealTopic) != "Real" {
			t.Errorf("%s: props %v", m.Body, m.Properties)
		}
		early := func(d time.Duration) {
			if m.StoreTimestamp < start.UnixMilli()+d.Milliseconds() {
				t.Errorf("%s delivered %d ms after the send, before %v", m.Body, m.StoreTimestamp-start.UnixMilli(), d)
			}
		}
		switch string(m.Body) {
		case "lvl1":
			early(time.Second)
			if m.Tags() != "TagA" || m.Property(message.PropertyKeys) != "k1" {
				t.Errorf("lvl1 lost tags/keys: %v", m.Properties)
			}
		case "lvl2":
			early(2 * time.Second)
		case "ms":
			early(700 * time.Millisecond)
			if m.Property(message.PropertyTimerOutMS) == "" {
				t.Error("timer without TIMER_OUT_MS")
			}
		case "at":
			if m.StoreTimestamp < deliverAt.UnixMilli() {
				t.Errorf("TIMER_DELIVER_MS: delivered at %d, due %d", m.StoreTimestamp, deliverAt.UnixMilli())
			}
		}
	}
	if !slices.Equal(order, []string{"ms", "lvl1", "at", "lvl2"}) {
		t.Errorf("delivery order %v", order)
	}
	// The keys go once the CommitLog is flushed.
	testutil.Eventually(t, 5*time.Second, func() error {
		if k := r.pendingKeys(); k != 0 {
			return fmt.Errorf("%d keys left after delivery", k)
		}
		return nil
	})
	st := r.svc.Stats()
	if st.Delivered != 4 || st.Indexed != 4 || st.Dropped != 0 || st.LatenessP99 > time.Second {
		t.Fatalf("stats %+v", st)
	}
	t.Logf("stats %+v", st)
}

func TestDueScanDeliversInOrderNeverEarly(t *testing.T) {
	t.Parallel() // waits for real delays to pass
	r := newRig(t, "", func(o *Options) { o.RoundSize = 7; o.Workers = 3 })
	r.svc.Start()
	base := time.Now().Add(300 * time.Millisecond)
	const n = 200
	due := map[string]int64{}
	perm := rand.Perm(n)
	for _, i := range perm {
		at := base.Add(time.Duration(i%40) * 20 * time.Millisecond)
		body := fmt.Sprintf("m%d", i)
		due[body] = at.UnixMilli()
		r.send(newMsg("Ord", int32(i%3), body, message.PropertyTimerDeliverMS, ms(at)))
	}
	var all []*message.Message
	testutil.Eventually(t, 10*time.Second, func() error {
		all = all[:0]
		for q := int32(0); q < 3; q++ {
			all = append(all, r.read("Ord", q)...)
		}
		if len(all) < n {
			return fmt.Errorf("%d of %d delivered", len(all), n)
		}
		return nil
	})
	checkOnce(t, all, n, "m")
	for q := int32(0); q < 3; q++ {
		prev := int64(0)
		for _, m := range r.read("Ord", q) {
			d := due[string(m.Body)]
			if m.StoreTimestamp < d {
				t.Errorf("%s delivered %d ms early", m.Body, d-m.StoreTimestamp)
			}
			if d < prev {
				t.Errorf("queue %d: %s (due %d) after a message due %d", q, m.Body, d, prev)
			}
			prev = d
		}
	}
}

func TestLateKeyBeforeCursor(t *testing.T) {
	r := newRig(t, "", nil)
	r.svc.Start()
	r.send(newMsg("Late", 0, "first", message.PropertyTimerDelayMS, "100"))
	r.waitCount("Late", 0, 1, 5*time.Second)
	// A record parked directly with a due time far behind the cursor.
	m := newMsg("Late", 0, "old", message.PropertyTimerOutMS, "1000", message.PropertyRealTopic, "Late", message.PropertyRealQueueID, "0")
	m.Topic = TimerTopic
	if _, err := r.st.PutMessage(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	got := r.waitCount("Late", 0, 2, 5*time.Second)
	time.Sleep(200 * time.Millisecond)
	checkBodies(t, r.read("Late", 0), "first", "old")
	if string(got[1].Body) != "old" {
		t.Fatalf("bodies %v", bodies(got))
	}
}

func checkBodies(t *testing.T, got []*message.Message, want ...string) {
	t.Helper()
	b := bodies(got)
	for _, w := range want {
		if b[w] != 1 {
			t.Errorf("%s delivered %d times", w, b[w])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d delivered (%v), want %d", len(got), b, len(want))
	}
}

func TestInvalidParkedMessageDropped(t *testing.T) {
	r := newRig(t, "", nil)
	r.svc.Start()
	m := newMsg("X", 0, "noreal", message.PropertyTimerOutMS, "1000")
	m.Topic = TimerTopic
	if _, err := r.st.PutMessage(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	r.send(newMsg("X", 0, "ok", message.PropertyTimerDelayMS, "50"))
	r.waitCount("X", 0, 1, 5*time.Second)
	r.waitStats(func(st Stats) bool { return st.Dropped == 1 }, 5*time.Second)
}

// A clean restart with timers pending loses none and repeats none; after
// delivery, another restart delivers nothing again.
func TestRestartDeliversOnce(t *testing.T) {
	t.Parallel() // waits for real delays to pass
	r := newRig(t, "1s 1s", nil)
	r.svc.Start()
	const n = 50
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			r.send(newMsg("R", 0, fmt.Sprintf("m%d", i), message.PropertyDelayTimeLevel, "1"))
		} else {
			r.send(newMsg("R", 0, fmt.Sprintf("m%d", i), message.PropertyTimerDelayMS, "1200"))
		}
	}
	r.restart() // before anything is due
	if got := r.read("R", 0); len(got) != 0 {
		t.Fatalf("%d delivered before the restart", len(got))
	}
	r.svc.Start()
	r.waitCount("R", 0, n, 10*time.Second)
	r.restart()
	r.svc.Start()
	time.Sleep(300 * time.Millisecond)
	checkOnce(t, r.read("R", 0), n, "m")
	if r.pendingKeys() != 0 {
		t.Fatalf("%d keys left", r.pendingKeys())
	}
}

// Crash after the deliveries reached the CommitLog, before the key
// deletions reached Pebble: recovery finds the delivered copies and does not
// deliver again.
func TestCrashBetweenDeliverAndDelete(t *testing.T) {
	r := newCrashRig(t)
	const n = 30
	r.sendDelayed("C", 0, n, func(i int) string { return strconv.Itoa(50 + i) })
	r.waitCount("C", 0, n, 5*time.Second)
	if k := r.pendingKeys(); k != n {
		t.Fatalf("%d keys before the crash, want %d", k, n)
	}
	r.restart()
	if k := r.pendingKeys(); k != 0 {
		t.Fatalf("%d keys survived recovery", k)
	}
	if st := r.svc.Stats(); st.Recovered != n {
		t.Fatalf("stats %+v", st)
	}
	r.svc.Start()
	time.Sleep(300 * time.Millisecond)
	checkOnce(t, r.read("C", 0), n, "m")
}

// The same crash when neither the marker scan nor the unmarked-delivery
// scan can help (their starts moved past the deliveries): the messages
// come again, none is lost.
func TestCrashWithoutMarkersDuplicatesAtMost(t *testing.T) {
	r := newCrashRig(t)
	const n = 20
	r.sendDelayed("D", 0, n, after("30"))
	r.waitCount("D", 0, n, 5*time.Second)
	r.svc.Close()
	for _, k := range [][]byte{markScanKey(), unmarkedScanKey()} {
		if err := r.st.DB().Set(k, u64(r.st.CommitLog().MaxOffset()), pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	r.svc = nil
	r.restart()
	r.svc.Start()
	got := r.waitCount("D", 0, 2*n, 5*time.Second)
	b := bodies(got)
	for i := 0; i < n; i++ {
		if c := b[fmt.Sprintf("m%d", i)]; c != 2 {
			t.Errorf("m%d delivered %d times, want 2 (a duplicate)", i, c)
		}
	}
}

// Pebble lost every timer key and checkpoint (no flush since they were
// written): recovery re-indexes the parked records from the consume queues
// and removes those already delivered.
func TestCrashLosingTheIndex(t *testing.T) {
	t.Parallel() // waits for real delays to pass
	r := newRig(t, "", nil)
	r.svc.Start()
	const delivered, pending = 10, 10
	r.sendDelayed("L", 0, delivered, after("20"))
	r.waitCount("L", 0, delivered, 5*time.Second)
	r.sendDelayed("L", delivered, delivered+pending, after("1500"))
	time.Sleep(100 * time.Millisecond)
	r.svc.Close()
	r.wipeTimerSpace()
	r.svc = nil
	r.restart()
	if k := r.pendingKeys(); k != pending {
		t.Fatalf("%d keys after recovery, want %d", k, pending)
	}
	r.svc.Start()
	r.waitCount("L", 0, delivered+pending, 5*time.Second)
	time.Sleep(200 * time.Millisecond)
	checkOnce(t, r.read("L", 0), delivered+pending, "m")
}

// Timers further than the roll window are re-parked and still delivered
// once, on time.
func TestRollFarTimers(t *testing.T) {
	t.Parallel() // waits for real delays to pass
	r := newRig(t, "", func(o *Options) { o.RollWindow = 300 * time.Millisecond })
	r.svc.Start()
	at := time.Now().Add(1200 * time.Millisecond)
	r.send(newMsg("F", 0, "far", message.PropertyTimerDeliverMS, ms(at)))
	r.send(newMsg("F", 0, "lvl", message.PropertyDelayTimeLevel, "1")) // 1 s > window
	got := r.waitCount("F", 0, 2, 5*time.Second)
	for _, m := range got {
		if string(m.Body) == "far" && m.StoreTimestamp < at.UnixMilli() {
			t.Errorf("far delivered %d ms early", at.UnixMilli()-m.StoreTimestamp)
		}
		if m.Property(message.PropertyTimerRollTimes) != "" {
			t.Errorf("%s: TIMER_ROLL_TIMES left", m.Body)
		}
	}
	r.waitStats(func(st Stats) bool { return st.Rolled >= 3 && st.Delivered == 2 }, 2*time.Second)
	r.restart()
	r.svc.Start()
	time.Sleep(200 * time.Millisecond)
	checkBodies(t, r.read("F", 0), "far", "lvl")
}

// A level table shortened between runs: messages parked in the queues of
// the dropped levels are still delivered (at the longest remaining delay).
func TestShrunkLevelTable(t *testing.T) {
	t.Parallel() // waits for real delays to pass
	r := newRig(t, "1s 1s 2s", nil)
	r.send(newMsg("S", 0, "lvl3", message.PropertyDelayTimeLevel, "3"))
	r.cfg.MessageDelayLevel = "1s"
	r.restart()
	r.svc.Start()
	r.send(newMsg("S", 0, "lvl9", message.PropertyDelayTimeLevel, "9")) // clamped to level 1
	got := r.waitCount("S", 0, 2, 5*time.Second)
	checkBodies(t, got, "lvl3", "lvl9")
}

// The marker scan after a crash reads the CommitLog only when a pending
// timer could be named by a marker: a broker without timers does not
// re-read its whole CommitLog at every start (the scan's mark, written
// without sync, is what a kill -9 loses).
func TestMarkerScanOnlyWithPendingTimers(t *testing.T) {
	r := newRig(t, "", nil)
	for i := range 50 {
		if _, err := r.st.PutMessage(context.Background(), newMsg("P", 0, fmt.Sprintf("p%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if removed, scanned, err := r.svc.recoverMarkers(0); err != nil || removed != 0 || scanned != 0 {
		t.Fatalf("no timers: recoverMarkers(0) = %d removed, %d scanned, %v; want nothing scanned", removed, scanned, err)
	}
	r.send(newMsg("P", 0, "later", message.PropertyTimerDelayMS, "3600000"))
	r.restart() // re-indexes the parked timer
	if k := r.pendingKeys(); k != 1 {
		t.Fatalf("%d pending keys, want 1", k)
	}
	removed, scanned, err := r.svc.recoverMarkers(0)
	if err != nil || removed != 0 || scanned != r.st.CommitLog().MaxOffset() {
		t.Fatalf("one timer: recoverMarkers(0) = %d removed, %d scanned, %v; want the whole CommitLog (%d) scanned", removed, scanned, err, r.st.CommitLog().MaxOffset())
	}
}
