package broker

import (
	"fmt"
	"time"

	"github.com/rmqgo/rmq/broker/lock"
)

// wireOrderly plugs orderly consumption in: the queue lock table and its
// LOCK_BATCH_MQ / UNLOCK_BATCH_MQ handlers (admin executor), and the send
// path's view of it (send.Deps.Locks: retries of a group holding live locks
// go straight to its DLQ, as in Java), which it returns. maxLive is the
// lock expiry (WithLockMaxLiveTime); zero keeps lock.DefaultMaxLiveTime.
func (b *Broker) wireOrderly(w *wiring, maxLive time.Duration) (*lock.Manager, error) {
	if maxLive <= 0 {
		maxLive = lock.DefaultMaxLiveTime
	}
	log := w.log.With("component", "lock")
	locks := lock.NewManager(lock.Options{MaxLiveTime: maxLive, Logger: log})
	p, err := lock.NewProcessor(lock.Deps{
		Manager:    locks,
		Topics:     b.topics,
		BrokerName: func() string { return b.cfg.Get().BrokerName },
		Logger:     log,
	})
	if err != nil {
		return nil, fmt.Errorf("broker: lock processor: %w", err)
	}
	p.Register(b)
	w.m.starters = append(w.m.starters, p.Start)
	w.m.closers = append(w.m.closers, p.Close)
	if maxLive != lock.DefaultMaxLiveTime {
		log.Info("orderly lock expiry overridden", "maxLiveTime", maxLive)
	}
	return locks, nil
}
