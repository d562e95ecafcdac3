package broker

import (
	"fmt"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/processor/recall"
	"github.com/rmqgo/rmq/broker/schedule"
	"github.com/rmqgo/rmq/broker/slavesync"
	"github.com/rmqgo/rmq/remoting/code"
)

// wireSchedule plugs delay-level and timer messages in (package schedule):
// the send path's ScheduleHook parks them in SCHEDULE_TOPIC_XXXX /
// rmq_sys_wheel_timer, and a delivery service indexes them by due time in
// Pebble and re-stores them in their real topic when due (a TIMER_DEL_UNIQKEY
// marker, or RECALL_MESSAGE, cancels one instead). Open recovers the
// index before the broker takes requests; delivery starts with the broker.
// It returns the service: the send path, the transaction service and
// send-back (wireRetry) park messages through it.
func (b *Broker) wireSchedule(w *wiring) (*schedule.Service, error) {
	cfg := b.cfg.Get()
	o := schedule.Options{
		Config:     b.cfg.Get,
		Store:      w.st,
		MaxDelay:   timerMaxDelay(cfg),
		RollWindow: timerRollWindow(cfg),
		Logger:     w.log.With("component", "schedule"),
	}
	if b.metrics != nil {
		// The rocketmq_timer_* event families and rocketmq_timing_messages.
		o.Observer = b.metrics
	}
	svc, err := schedule.Open(o)
	if err != nil {
		return nil, fmt.Errorf("broker: schedule service: %w", err)
	}
	w.m.starters = append(w.m.starters, svc.Start)
	w.m.closers = append(w.m.closers, svc.Close)
	// GET_ALL_DELAY_OFFSET, GET_TIMER_CHECK_POINT and GET_TIMER_METRICS:
	// what a slave (Apache's SlaveSynchronize) copies.
	ts, err := slavesync.NewTimerState(slavesync.TimerStateOptions{
		Source:       svc,
		IsMaster:     func() bool { return b.cfg.Get().IsMaster() },
		TimerEnabled: func() bool { return b.cfg.Get().TimerWheelEnable },
		StateVersion: b.stateVersion(nil),
		ConfigDir:    cfg.ConfigDir(),
		Logger:       w.log.With("component", "timer-state"),
	})
	if err != nil {
		return nil, fmt.Errorf("broker: timer state: %w", err)
	}
	w.m.timer = ts
	b.RegisterProcessor(code.GetAllDelayOffset, ts.DelayOffsetHandler(), processor.PoolAdmin)
	b.RegisterProcessor(code.GetTimerCheckPoint, ts.CheckpointHandler(), processor.PoolAdmin)
	b.RegisterProcessor(code.GetTimerMetrics, ts.MetricsHandler(), processor.PoolAdmin)
	// RECALL_MESSAGE cancels a pending timer through a marker
	// (recallMessageEnable; the send path hands out the handles).
	rp, err := recall.New(recall.Deps{
		Config:    b.cfg.Get,
		Topics:    b.topics,
		Schedule:  svc,
		Store:     w.st,
		StoreHost: b.storeHost,
		Logger:    w.log.With("component", "recall"),
	})
	if err != nil {
		return nil, fmt.Errorf("broker: recall processor: %w", err)
	}
	rp.Register(b)
	return svc, nil
}

// timerMaxDelay is how far ahead a timer may be (TIMER_* beyond it is
// MESSAGE_ILLEGAL).
func timerMaxDelay(cfg *config.Config) time.Duration {
	if s := cfg.TimerMaxDelaySec; s > 0 {
		return time.Duration(s) * time.Second
	}
	return schedule.DefaultMaxDelay
}

// timerRollWindow is Java's timerRollWindowSlot × timerPrecisionMs (2 days),
// at most half the CommitLog retention: a parked record is re-stored before
// retention may delete its file.
func timerRollWindow(cfg *config.Config) time.Duration {
	w := schedule.DefaultRollWindow
	if cfg.TimerRollWindowSlot > 0 && cfg.TimerPrecisionMs > 0 {
		w = time.Duration(cfg.TimerRollWindowSlot) * cfg.TimerPrecisionMs
	}
	if keep := hours(cfg.FileReservedTime) / 2; keep > 0 && w > keep {
		w = keep
	}
	if w < time.Minute {
		w = time.Minute
	}
	return w
}
