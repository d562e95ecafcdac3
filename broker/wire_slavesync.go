package broker

import (
	"fmt"

	"github.com/rmqgo/rmq/broker/pop"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/slavesync"
	"github.com/rmqgo/rmq/broker/statictopic"
	"github.com/rmqgo/rmq/remoting/code"
)

// wireSlaveSync serves GET_ALL_CONSUMER_OFFSET (what a slave copies; the
// other tables' codes belong to their owners) and, on a classic SLAVE,
// runs the copy of the master's metadata (package slavesync): topics and
// static-topic mappings, consumer offsets, subscription groups and the
// message request modes of pops. Registration answers tell it the
// master's address (registered).
func (b *Broker) wireSlaveSync(w *wiring, pops *pop.Processor) error {
	b.RegisterProcessor(code.GetAllConsumerOffset, slavesync.OffsetsHandler(w.st.Offsets()), processor.PoolAdmin)
	cfg := b.cfg.Get()
	if cfg.IsMaster() || cfg.EnableControllerMode {
		return nil
	}
	o := slavesync.Options{
		Invoker:       b.client,
		MasterAddr:    b.MasterAddr,
		SelfAddr:      b.Addr,
		Topics:        b.topics,
		Groups:        w.m.subs,
		Offsets:       w.st.Offsets(),
		Modes:         pops,
		CheckInterval: cfg.SlaveSyncCheckInterval,
		FullInterval:  cfg.SlaveSyncFullInterval,
		Logger:        w.log.With("component", "slavesync"),
	}
	if mgr, ok := b.maps.(*statictopic.Manager); ok {
		o.Mappings = mgr
	}
	s, err := slavesync.New(o)
	if err != nil {
		return fmt.Errorf("broker: slave sync: %w", err)
	}
	b.slaveSync = s
	w.m.starters = append(w.m.starters, s.Start)
	w.m.closers = append(w.m.closers, s.Close)
	return nil
}
