package slavesync

import (
	"context"
	"encoding/hex"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/schedule"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// fakeTimer is a broker's own delay and timer progress.
type fakeTimer struct {
	mu      sync.Mutex
	delay   map[int32]int64
	prog    schedule.TimerProgress
	timing  map[string]schedule.Timing
	version int64
}

func (f *fakeTimer) DelayOffsets() (map[int32]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.delay), nil
}

func (f *fakeTimer) Progress() (schedule.TimerProgress, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.prog, nil
}

func (f *fakeTimer) TimingCounts() (map[string]schedule.Timing, int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.timing), f.version
}

type timerRole struct {
	mu             sync.Mutex
	master, timers bool
}

func (r *timerRole) isMaster() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.master }
func (r *timerRole) enabled() bool  { r.mu.Lock(); defer r.mu.Unlock(); return r.timers }

func newTimerState(t *testing.T, dir string, src TimerSource, role *timerRole, now time.Time) *TimerState {
	t.Helper()
	ts, err := NewTimerState(TimerStateOptions{Source: src, IsMaster: role.isMaster, TimerEnabled: role.enabled,
		StateVersion: func() int64 { return 4 }, ConfigDir: dir, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func call(t *testing.T, h remoting.Handler, c int32) *remoting.Command {
	t.Helper()
	resp, err := h(context.Background(), nil, remoting.NewRequest(c, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestTimerStateMaster: a master answers with its own values in Java's
// bodies; a data version moves only when its values changed; with
// timerWheelEnable off the timer codes answer SYSTEM_ERROR with Java's
// remarks while the delay offsets still answer.
func TestTimerStateMaster(t *testing.T) {
	now := time.UnixMilli(1700000000000)
	src := &fakeTimer{delay: map[int32]int64{1: 3, 3: 0}, prog: schedule.TimerProgress{ReadTimeMs: 1700000001000, QueueOffset: 42},
		timing: map[string]schedule.Timing{"T": {Count: 2, UpdatedAtMs: 1700000000500}}, version: 9}
	role := &timerRole{master: true, timers: true}
	ts := newTimerState(t, t.TempDir(), src, role, now)

	resp := call(t, ts.DelayOffsetHandler(), code.GetAllDelayOffset)
	if want := `{"dataVersion":{"counter":1,"stateVersion":4,"timestamp":1700000000000},"offsetTable":{1:3,3:0}}`; resp.Code != code.Success || string(resp.Body) != want {
		t.Fatalf("delay offsets: %d %s, want %s", resp.Code, resp.Body, want)
	}
	resp = call(t, ts.CheckpointHandler(), code.GetTimerCheckPoint)
	want := "0000018bcfe56be8" + "0000000000000000" + "000000000000002a" + "000000000000002a" +
		"0000000000000004" + "0000018bcfe56800" + "0000000000000001"
	if resp.Code != code.Success || hex.EncodeToString(resp.Body) != want {
		t.Fatalf("checkpoint: %d %x, want %s", resp.Code, resp.Body, want)
	}
	resp = call(t, ts.MetricsHandler(), code.GetTimerMetrics)
	if want := `{"dataVersion":{"counter":1,"stateVersion":0,"timestamp":1700000000000},"timingCount":{"T":{"count":2,"timeStamp":1700000000500}}}`; string(resp.Body) != want {
		t.Fatalf("metrics: %s, want %s", resp.Body, want)
	}

	// Unchanged values keep their versions; changed ones move them.
	if d, _ := ts.DelayOffsets(); d.DataVersion.Counter != 1 {
		t.Fatalf("unchanged delay offsets moved their version: %+v", d.DataVersion)
	}
	src.mu.Lock()
	src.delay[1], src.prog.QueueOffset, src.version = 4, 43, 10
	src.mu.Unlock()
	d, _ := ts.DelayOffsets()
	c, _ := ts.Checkpoint()
	m := ts.Metrics()
	if d.DataVersion.Counter != 2 || c.DataVersion.Counter != 2 || m.DataVersion.Counter != 2 || c.MasterTimerQueueOffset != 43 {
		t.Fatalf("after a change: %+v %+v %+v", d, c, m)
	}

	role.mu.Lock()
	role.timers = false
	role.mu.Unlock()
	for _, tc := range []struct {
		h      remoting.Handler
		c      int32
		remark string
	}{
		{ts.CheckpointHandler(), code.GetTimerCheckPoint, "The checkpoint is null"},
		{ts.MetricsHandler(), code.GetTimerMetrics, "The timer message store is null"},
	} {
		if resp := call(t, tc.h, tc.c); resp.Code != code.SystemError || resp.Remark != tc.remark {
			t.Errorf("code %d with timerWheelEnable off: %d %q, want SYSTEM_ERROR %q", tc.c, resp.Code, resp.Remark, tc.remark)
		}
	}
	if resp := call(t, ts.DelayOffsetHandler(), code.GetAllDelayOffset); resp.Code != code.Success {
		t.Fatalf("delay offsets with timers off: %d", resp.Code)
	}
}

// TestSlaveCopiesTimerState: a slave's syncer copies the master's three
// bodies (the checkpoint at every check), keeps them in Apache's files and
// answers with them; they survive a restart; once master it answers with
// its own values again.
func TestSlaveCopiesTimerState(t *testing.T) {
	m := startMaster(t)
	setAll(m)
	delayBody := `{"dataVersion":{"counter":7,"stateVersion":0,"timestamp":1700000000123},"offsetTable":{1:5,2:0}}`
	ckpt := protocol.TimerCheckpoint{LastReadTimeMs: 1700000009000, LastTimerQueueOffset: 12, MasterTimerQueueOffset: 12,
		DataVersion: protocol.DataVersion{Counter: 3, Timestamp: 1700000000999}}
	metricsBody := `{"dataVersion":{"counter":2,"stateVersion":0,"timestamp":1700000000456},"timingCount":{"T":{"count":5,"timeStamp":1700000000400}}}`
	m.set(code.GetAllDelayOffset, delayBody)
	m.set(code.GetTimerCheckPoint, string(ckpt.Encode()))
	m.set(code.GetTimerMetrics, metricsBody)

	dir := t.TempDir()
	own := &fakeTimer{delay: map[int32]int64{1: 0}, timing: map[string]schedule.Timing{}}
	role := &timerRole{timers: true}
	ts := newTimerState(t, dir, own, role, time.UnixMilli(1700000000000))
	s := openSlave(t, t.TempDir())
	defer s.close()
	sy := s.syncer(t, m.srv.Addr(), Options{Timer: ts, TimerEnabled: role.enabled})
	if err := sy.SyncAll(context.Background(), m.srv.Addr()); err != nil {
		t.Fatal(err)
	}
	sy.tick(context.Background(), true) // not due: the checkpoint (and the small tables)
	if m.count(code.GetTimerCheckPoint) != 1 || m.count(code.GetAllDelayOffset) != 1 || m.count(code.GetTimerMetrics) != 1 {
		t.Fatalf("calls: delay %d checkpoint %d metrics %d", m.count(code.GetAllDelayOffset), m.count(code.GetTimerCheckPoint), m.count(code.GetTimerMetrics))
	}
	check := func(when string, ts *TimerState) {
		t.Helper()
		if resp := call(t, ts.DelayOffsetHandler(), code.GetAllDelayOffset); string(resp.Body) != delayBody {
			t.Errorf("%s: delay offsets %s", when, resp.Body)
		}
		if c, _ := ts.Checkpoint(); c != ckpt {
			t.Errorf("%s: checkpoint %+v, want %+v", when, c, ckpt)
		}
		if resp := call(t, ts.MetricsHandler(), code.GetTimerMetrics); string(resp.Body) != metricsBody {
			t.Errorf("%s: metrics %s", when, resp.Body)
		}
	}
	check("copied", ts)
	if b, err := os.ReadFile(filepath.Join(dir, DelayOffsetFile)); err != nil || string(b) != delayBody {
		t.Fatalf("%s: %s %v", DelayOffsetFile, b, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, TimerCheckpointFile)); err != nil || len(b) != protocol.TimerCheckpointSize {
		t.Fatalf("%s: %x %v", TimerCheckpointFile, b, err)
	}
	check("after a restart", newTimerState(t, dir, own, role, time.UnixMilli(1700000000000)))

	role.mu.Lock()
	role.master = true
	role.mu.Unlock()
	if d, _ := ts.DelayOffsets(); !maps.Equal(d.OffsetTable, map[int32]int64{1: 0}) {
		t.Fatalf("a master answers with its own offsets: %+v", d)
	}

	// timerWheelEnable off: the timer ones are not copied (Apache).
	role.mu.Lock()
	role.timers = false
	role.mu.Unlock()
	sy.tick(context.Background(), true)
	if err := sy.SyncAll(context.Background(), m.srv.Addr()); err != nil {
		t.Fatal(err)
	}
	if m.count(code.GetTimerCheckPoint) != 1 || m.count(code.GetTimerMetrics) != 1 || m.count(code.GetAllDelayOffset) != 2 {
		t.Fatalf("with timers off: delay %d checkpoint %d metrics %d", m.count(code.GetAllDelayOffset), m.count(code.GetTimerCheckPoint), m.count(code.GetTimerMetrics))
	}
}
