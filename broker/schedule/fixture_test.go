package schedule

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/kv"
	"github.com/rmqgo/rmq/broker/store/storetest"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
)

// rig is a store in a temp dir with a schedule service on top; reopen
// simulates a broker restart on the same directory.
type rig struct {
	t    *testing.T
	dir  string
	cfg  *config.Config
	opts Options
	st   *store.Store
	svc  *Service
}

func testBrokerConfig(t *testing.T, levels string) *config.Config {
	t.Helper()
	c := config.Default(config.Host{Hostname: "broker-a", IP: "127.0.0.1", Home: t.TempDir()})
	if levels != "" {
		c.MessageDelayLevel = levels
	}
	return c
}

// newCrashRig is a started rig whose service never commits its key
// deletions, as if it crashed after every delivery.
func newCrashRig(t *testing.T) *rig {
	t.Helper()
	r := newRig(t, "", nil)
	r.svc.keepKeys = true
	r.svc.Start()
	return r
}

func newRig(t *testing.T, levels string, tune func(*Options)) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir(), cfg: testBrokerConfig(t, levels)}
	r.opts = Options{Config: func() *config.Config { return r.cfg }, ScanInterval: 20 * time.Millisecond}
	if tune != nil {
		tune(&r.opts)
	}
	r.open()
	t.Cleanup(r.close)
	return r
}

func (r *rig) open() {
	r.t.Helper()
	st := storetest.OpenDisk(r.t, r.dir, nil)
	r.st = st
	o := r.opts
	o.Store = st
	svc, err := Open(o)
	if err != nil {
		_ = st.Close()
		r.t.Fatal(err)
	}
	r.svc = svc
}

// close shuts down cleanly (service, then store).
func (r *rig) close() {
	if r.svc != nil {
		r.svc.Close()
		r.svc = nil
	}
	if r.st != nil {
		if err := r.st.Close(); err != nil {
			r.t.Errorf("close store: %v", err)
		}
		r.st = nil
	}
}

func (r *rig) restart() {
	r.t.Helper()
	r.close()
	r.open()
}

// send parks msg through the hook and stores it, as the send path does.
func (r *rig) send(m *message.Message) {
	r.t.Helper()
	if err := r.svc.Schedule(m); err != nil {
		r.t.Fatalf("schedule: %v", err)
	}
	if _, err := r.st.PutMessage(context.Background(), m); err != nil {
		r.t.Fatalf("put: %v", err)
	}
}

// sendDelayed sends messages "m<from>" to "m<to-1>" to queue 0 of topic,
// message i with a TIMER_DELAY_MS of delayMS(i).
func (r *rig) sendDelayed(topic string, from, to int, delayMS func(i int) string) {
	r.t.Helper()
	for i := from; i < to; i++ {
		r.send(newMsg(topic, 0, fmt.Sprintf("m%d", i), message.PropertyTimerDelayMS, delayMS(i)))
	}
}

// after is a delayMS of sendDelayed: the same delay for every message.
func after(ms string) func(int) string { return func(int) string { return ms } }

func newMsg(topic string, qid int32, body string, kv ...string) *message.Message {
	props := map[string]string{message.PropertyUniqClientMessageIDKeyIdx: "UNIQ-" + body}
	for i := 0; i+1 < len(kv); i += 2 {
		props[kv[i]] = kv[i+1]
	}
	return &message.Message{Topic: topic, QueueID: qid, Body: []byte(body), Properties: props, BornTimestamp: time.Now().UnixMilli()}
}

// read returns every message of a queue.
func (r *rig) read(topic string, qid int32) []*message.Message {
	r.t.Helper()
	var out []*message.Message
	for off := int64(0); ; {
		res, err := r.st.GetMessage(context.Background(), topic, qid, off, 256, 8<<20, nil)
		if err != nil {
			r.t.Fatal(err)
		}
		for _, rec := range res.Records {
			m, _, err := message.DecodeStored(rec, message.DecodeOptions{})
			if err != nil {
				r.t.Fatal(err)
			}
			out = append(out, m)
		}
		res.Release()
		if res.Status != store.Found {
			return out
		}
		off = res.NextBeginOffset
	}
}

// waitCount waits until a queue holds want messages.
func (r *rig) waitCount(topic string, qid int32, want int, timeout time.Duration) []*message.Message {
	r.t.Helper()
	var got []*message.Message
	testutil.Eventually(r.t, timeout, func() error {
		if got = r.read(topic, qid); len(got) < want {
			return fmt.Errorf("%s-%d: %d messages, want %d (stats %+v)", topic, qid, len(got), want, r.svc.Stats())
		}
		return nil
	})
	return got
}

// waitStats waits until the service's counters satisfy ok: they are added
// after a delivery batch is stored, so a message can be readable a moment
// before it is counted.
func (r *rig) waitStats(ok func(Stats) bool, timeout time.Duration) Stats {
	r.t.Helper()
	var st Stats
	testutil.Eventually(r.t, timeout, func() error {
		if st = r.svc.Stats(); !ok(st) {
			return fmt.Errorf("stats %+v", st)
		}
		return nil
	})
	return st
}

// pendingKeys counts the pending timer keys.
func (r *rig) pendingKeys() int {
	r.t.Helper()
	return r.countKeys(pendingPrefix())
}

// countKeys counts the keys that start with prefix.
func (r *rig) countKeys(prefix []byte) int {
	r.t.Helper()
	it, err := r.st.DB().NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: kv.PrefixEnd(prefix)})
	if err != nil {
		r.t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n
}

// wipeTimerSpace deletes every key of the timer key space: what a crash
// loses when Pebble had not flushed since the timers were indexed.
func (r *rig) wipeTimerSpace() {
	r.t.Helper()
	lo := []byte{kv.PrefixTimer}
	if err := r.st.DB().DeleteRange(lo, kv.PrefixEnd(lo), pebble.NoSync); err != nil {
		r.t.Fatal(err)
	}
}

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func bodies(ms []*message.Message) map[string]int {
	out := map[string]int{}
	for _, m := range ms {
		out[string(m.Body)]++
	}
	return out
}

func checkOnce(t *testing.T, got []*message.Message, want int, prefix string) {
	t.Helper()
	b := bodies(got)
	for i := 0; i < want; i++ {
		k := fmt.Sprintf("%s%d", prefix, i)
		if b[k] != 1 {
			t.Errorf("message %s delivered %d times", k, b[k])
		}
	}
	if len(got) != want {
		t.Errorf("%d messages delivered, want %d", len(got), want)
	}
}
