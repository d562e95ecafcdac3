package slavesync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/schedule"
	"github.com/rmqgo/rmq/internal/fsutil"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// The delay and timer progress a slave copies: GET_ALL_DELAY_OFFSET (45),
// GET_TIMER_CHECK_POINT (60) and GET_TIMER_METRICS (61).
//
// A master answers with its own values (package schedule: DelayOffsets,
// Progress, TimingCounts). A slave delivers nothing, so its own index says
// nothing about what was delivered: once it holds a copy of its master's
// it answers with that, as an Apache slave answers with the tables it
// copied. The copies are kept under <storePathRootDir>/config in Apache's
// files and formats (delayOffset.json, timercheck, timermetrics).

// TimerSource is this broker's own delay and timer progress
// (schedule.Service).
type TimerSource interface {
	DelayOffsets() (map[int32]int64, error)
	Progress() (schedule.TimerProgress, error)
	TimingCounts() (map[string]schedule.Timing, int64)
}

// TimerStateOptions configure a TimerState.
type TimerStateOptions struct {
	// Source is required.
	Source TimerSource
	// IsMaster reports the broker's current role; TimerEnabled its
	// timerWheelEnable. Both required.
	IsMaster     func() bool
	TimerEnabled func() bool
	// StateVersion is the store's state-machine version (nil: 0), written
	// into the checkpoint's data version as Java does.
	StateVersion func() int64
	// ConfigDir keeps the copies ("" keeps them in memory only).
	ConfigDir string
	Now       func() time.Time
	Logger    *slog.Logger
}

// File names of the copies (Java's StorePathConfigHelper and
// BrokerController paths under <storePathRootDir>/config).
const (
	DelayOffsetFile     = "delayOffset.json"
	TimerCheckpointFile = "timercheck"
	TimerMetricsFile    = "timermetrics"
)

// TimerState answers the three codes and keeps a slave's copies.
type TimerState struct {
	o   TimerStateOptions
	log *slog.Logger

	mu sync.Mutex
	// Data versions of this broker's own values: the counter moves when
	// a value changed since the last answer (Java bumps its versions
	// when the tables change).
	delayDV, ckptDV, metricsDV protocol.DataVersion
	lastDelay                  map[int32]int64
	lastCkpt                   [2]int64
	lastTiming                 int64
	// The master's, copied (nil: none yet).
	copyDelay   *protocol.DelayOffsets
	copyCkpt    *protocol.TimerCheckpoint
	copyMetrics *protocol.TimerMetrics
}

// NewTimerState loads the copies kept in ConfigDir.
func NewTimerState(o TimerStateOptions) (*TimerState, error) {
	if o.Source == nil || o.IsMaster == nil || o.TimerEnabled == nil {
		return nil, errors.New("slavesync: TimerStateOptions.Source, IsMaster and TimerEnabled are required")
	}
	defaults.Clock(&o.Now)
	defaults.Logger(&o.Logger)
	now := o.Now().UnixMilli()
	t := &TimerState{o: o, log: o.Logger, lastTiming: -1,
		delayDV: protocol.DataVersion{Timestamp: now}, ckptDV: protocol.DataVersion{Timestamp: now},
		metricsDV: protocol.DataVersion{Timestamp: now}}
	if o.ConfigDir == "" {
		return t, nil
	}
	var err error
	if t.copyDelay, err = loadCopy(t, DelayOffsetFile, protocol.DecodeDelayOffsets); err != nil {
		return nil, err
	}
	if t.copyCkpt, err = loadCopy(t, TimerCheckpointFile, protocol.DecodeTimerCheckpoint); err != nil {
		return nil, err
	}
	if t.copyMetrics, err = loadCopy(t, TimerMetricsFile, protocol.DecodeTimerMetrics); err != nil {
		return nil, err
	}
	return t, nil
}

// loadCopy reads and decodes one kept copy (nil: none kept).
func loadCopy[T any](t *TimerState, name string, decode func([]byte) (T, error)) (*T, error) {
	b, ok, err := t.read(name)
	if err != nil || !ok {
		return nil, err
	}
	v, err := decode(b)
	if err != nil {
		return nil, fmt.Errorf("slavesync: %s: %w", name, err)
	}
	return &v, nil
}

func (t *TimerState) read(name string) ([]byte, bool, error) {
	b, from, err := fsutil.ReadWithBackup(filepath.Join(t.o.ConfigDir, name), func([]byte) error { return nil })
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("slavesync: read %s: %w", name, err)
	}
	return b, from != "", nil
}

func (t *TimerState) write(name string, b []byte) error {
	if t.o.ConfigDir == "" {
		return nil
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(t.o.ConfigDir, name), b, true); err != nil {
		return fmt.Errorf("slavesync: keep %s: %w", name, err)
	}
	return nil
}

// useCopy: a slave answers with its master's values once it has them.
func (t *TimerState) useCopy() bool { return !t.o.IsMaster() }

func (t *TimerState) stateVersion() int64 {
	if t.o.StateVersion == nil {
		return 0
	}
	return t.o.StateVersion()
}

// DelayOffsets is the GET_ALL_DELAY_OFFSET answer.
func (t *TimerState) DelayOffsets() (protocol.DelayOffsets, error) {
	t.mu.Lock()
	if c := t.copyDelay; c != nil && t.useCopy() {
		d := protocol.DelayOffsets{DataVersion: c.DataVersion, OffsetTable: maps.Clone(c.OffsetTable)}
		t.mu.Unlock()
		return d, nil
	}
	t.mu.Unlock()
	table, err := t.o.Source.DelayOffsets()
	if err != nil {
		return protocol.DelayOffsets{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !maps.Equal(table, t.lastDelay) {
		t.lastDelay = table
		t.bump(&t.delayDV, t.stateVersion())
	}
	return protocol.DelayOffsets{DataVersion: t.delayDV, OffsetTable: maps.Clone(table)}, nil
}

// Checkpoint is the GET_TIMER_CHECK_POINT answer (Java's TimerCheckpoint
// of a master: its timer log position is 0, there is no timer log here).
func (t *TimerState) Checkpoint() (protocol.TimerCheckpoint, error) {
	t.mu.Lock()
	if c := t.copyCkpt; c != nil && t.useCopy() {
		out := *c
		t.mu.Unlock()
		return out, nil
	}
	t.mu.Unlock()
	p, err := t.o.Source.Progress()
	if err != nil {
		return protocol.TimerCheckpoint{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if v := [2]int64{p.ReadTimeMs, p.QueueOffset}; v != t.lastCkpt {
		t.lastCkpt = v
		t.bump(&t.ckptDV, t.stateVersion())
	}
	return protocol.TimerCheckpoint{LastReadTimeMs: p.ReadTimeMs, LastTimerQueueOffset: p.QueueOffset,
		MasterTimerQueueOffset: p.QueueOffset, DataVersion: t.ckptDV}, nil
}

// Metrics is the GET_TIMER_METRICS answer.
func (t *TimerState) Metrics() protocol.TimerMetrics {
	t.mu.Lock()
	if c := t.copyMetrics; c != nil && t.useCopy() {
		out := protocol.TimerMetrics{DataVersion: c.DataVersion, TimingCount: maps.Clone(c.TimingCount)}
		t.mu.Unlock()
		return out
	}
	t.mu.Unlock()
	counts, version := t.o.Source.TimingCounts()
	out := protocol.TimerMetrics{TimingCount: make(map[string]protocol.TimerMetric, len(counts))}
	for topic, c := range counts {
		out.TimingCount[topic] = protocol.TimerMetric{Count: c.Count, TimeStamp: c.UpdatedAtMs}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if version != t.lastTiming {
		t.lastTiming = version
		t.bump(&t.metricsDV, 0) // Java's TimerMetrics: nextVersion()
	}
	out.DataVersion = t.metricsDV
	return out
}

func (t *TimerState) bump(dv *protocol.DataVersion, state int64) {
	dv.Counter++
	dv.StateVersion = state
	dv.Timestamp = t.o.Now().UnixMilli()
}

// ReplaceDelayOffsets keeps the master's delay offsets (Java writes the
// body into delayOffset.json as it came).
func (t *TimerState) ReplaceDelayOffsets(body []byte) error {
	d, err := protocol.DecodeDelayOffsets(body)
	if err != nil {
		return err
	}
	return keepCopy(t, &t.copyDelay, d, nil, DelayOffsetFile, func() []byte { return body })
}

// ReplaceCheckpoint keeps the master's timer checkpoint.
func (t *TimerState) ReplaceCheckpoint(c protocol.TimerCheckpoint) error {
	same := func(old *protocol.TimerCheckpoint) bool { return *old == c }
	return keepCopy(t, &t.copyCkpt, c, same, TimerCheckpointFile, c.Encode)
}

// ReplaceMetrics keeps the master's timer metrics when their data version
// differs from the copy's (Java's syncTimerMetrics).
func (t *TimerState) ReplaceMetrics(m protocol.TimerMetrics) error {
	same := func(old *protocol.TimerMetrics) bool { return old.DataVersion.Equal(m.DataVersion) }
	return keepCopy(t, &t.copyMetrics, m, same, TimerMetricsFile, m.Encode)
}

// keepCopy writes body() to file, then makes *slot v (under t.mu); it does
// nothing when same (if not nil) reports that the copy held is v already.
func keepCopy[T any](t *TimerState, slot **T, v T, same func(*T) bool, file string, body func() []byte) error {
	t.mu.Lock()
	held := *slot != nil && same != nil && same(*slot)
	t.mu.Unlock()
	if held {
		return nil
	}
	if err := t.write(file, body()); err != nil {
		return err
	}
	t.mu.Lock()
	*slot = &v
	t.mu.Unlock()
	return nil
}

// DelayOffsetHandler answers GET_ALL_DELAY_OFFSET (45). The handlers
// answer as Java's AdminBrokerProcessor; with timerWheelEnable off the
// timer codes answer SYSTEM_ERROR with its remarks (no TimerCheckpoint or
// TimerMessageStore then).
func (t *TimerState) DelayOffsetHandler() remoting.Handler {
	return t.handler("", func() ([]byte, error) {
		d, err := t.DelayOffsets()
		return d.Encode(), err
	})
}

// CheckpointHandler answers GET_TIMER_CHECK_POINT (60).
func (t *TimerState) CheckpointHandler() remoting.Handler {
	return t.handler("The checkpoint is null", func() ([]byte, error) {
		c, err := t.Checkpoint()
		return c.Encode(), err
	})
}

// MetricsHandler answers GET_TIMER_METRICS (61).
func (t *TimerState) MetricsHandler() remoting.Handler {
	return t.handler("The timer message store is null", func() ([]byte, error) { return t.Metrics().Encode(), nil })
}

// handler answers body(); offRemark non-empty: a timer code, answered
// SYSTEM_ERROR with it while timerWheelEnable is off.
func (t *TimerState) handler(offRemark string, body func() ([]byte, error)) remoting.Handler {
	return func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		if offRemark != "" && !t.o.TimerEnabled() {
			return remoting.NewResponse(req, code.SystemError, offRemark), nil
		}
		b, err := body()
		if err != nil {
			return nil, err
		}
		resp := remoting.NewResponse(req, code.Success, "")
		resp.Body = b
		return resp, nil
	}
}

// TimerCopy is where a slave keeps its master's delay and timer progress
// (TimerState).
type TimerCopy interface {
	ReplaceDelayOffsets(body []byte) error
	ReplaceCheckpoint(c protocol.TimerCheckpoint) error
	ReplaceMetrics(m protocol.TimerMetrics) error
}

// syncDelayOffsets copies the delay offsets (every full period, Java's
// syncDelayOffset).
func (s *Syncer) syncDelayOffsets(ctx context.Context, addr string) error {
	if s.o.Timer == nil {
		return nil
	}
	return copyIfServed(ctx, s, addr, code.GetAllDelayOffset, func(b []byte) ([]byte, error) { return b, nil }, s.o.Timer.ReplaceDelayOffsets)
}

// syncTimerMetrics copies the timer metrics (every full period while
// timerWheelEnable is on, Java's syncTimerMetrics).
func (s *Syncer) syncTimerMetrics(ctx context.Context, addr string) error {
	if s.o.Timer == nil || !s.timerEnabled() {
		return nil
	}
	return copyIfServed(ctx, s, addr, code.GetTimerMetrics, protocol.DecodeTimerMetrics, s.o.Timer.ReplaceMetrics)
}

// syncTimerCheckpoint copies the timer checkpoint (every check, Java's
// syncTimerCheckPoint: "latency-sensitive, so sync it more frequently").
func (s *Syncer) syncTimerCheckpoint(ctx context.Context, addr string) error {
	if s.o.Timer == nil || !s.timerEnabled() {
		return nil
	}
	return copyIfServed(ctx, s, addr, code.GetTimerCheckPoint, protocol.DecodeTimerCheckpoint, s.o.Timer.ReplaceCheckpoint)
}

// copyIfServed is copyTable; a master that does not serve the code (an
// older rmq) is not an error.
func copyIfServed[T any](ctx context.Context, s *Syncer, addr string, reqCode int32, decode func([]byte) (T, error), apply func(T) error) error {
	err := copyTable(ctx, s, addr, reqCode, decode, apply)
	if errors.Is(err, errNotSupported) {
		return nil
	}
	return err
}

func (s *Syncer) timerEnabled() bool { return s.o.TimerEnabled == nil || s.o.TimerEnabled() }
