package broker

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/rmqgo/rmq/broker/lock"
)

// envLockMaxLiveTime overrides the orderly lock expiry in milliseconds: the
// environment form of Java's system property
// rocketmq.broker.rebalance.lockMaxLiveTime (60000), which is not a
// broker.conf key. Tests shorten it.
const envLockMaxLiveTime = "ROCKETMQ_BROKER_REBALANCE_LOCKMAXLIVETIME"

// wireOrderly plugs orderly consumption in: the queue lock table and its
// LOCK_BATCH_MQ / UNLOCK_BATCH_MQ handlers (admin executor), and the send
// path's view of it (send.Deps.Locks: retries of a group holding live locks
// go straight to its DLQ, as in Java).
func (b *Broker) wireOrderly(w *wiring) error {
	maxLive := lock.DefaultMaxLiveTime
	if v := os.Getenv(envLockMaxLiveTime); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 {
			return fmt.Errorf("broker: %s=%q: want a positive number of milliseconds", envLockMaxLiveTime, v)
		}
		maxLive = time.Duration(ms) * time.Millisecond
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
		return fmt.Errorf("broker: lock processor: %w", err)
	}
	p.Register(w.reg)
	w.sendDeps.Locks = locks
	w.m.starters = append(w.m.starters, p.Start)
	w.m.closers = append(w.m.closers, p.Close)
	if maxLive != lock.DefaultMaxLiveTime {
		log.Info("orderly lock expiry overridden", "maxLiveTime", maxLive)
	}
	return nil
}
