package broker

import (
	"fmt"

	"github.com/rmqgo/rmq/broker/pop"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/slavesync"
	"github.com/rmqgo/rmq/broker/statictopic"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// wireSlaveSync serves GET_ALL_CONSUMER_OFFSET (what a slave copies; the
// other tables' codes belong to their owners) and, on a classic SLAVE,
// runs the copy of the master's metadata (package slavesync): topics and
// static-topic mappings, consumer offsets, subscription groups and the
// message request modes of pops. Registration answers tell it the
// master's address (registered). In controller mode the copy runs on
// every replica and idles while this broker is the master, so that a
// slave elected later has the topics, groups and offsets.
func (b *Broker) wireSlaveSync(w *wiring, pops *pop.Processor) error {
	b.RegisterProcessor(code.GetAllConsumerOffset, slavesync.OffsetsHandler(w.st.Offsets()), processor.PoolAdmin)
	cfg := b.cfg.Get()
	if cfg.IsMaster() && !cfg.EnableControllerMode {
		return nil
	}
	masterAddr := b.MasterAddr
	if cfg.EnableControllerMode {
		masterAddr = func() string {
			if b.cfg.Get().IsMaster() {
				return ""
			}
			return b.MasterAddr()
		}
	}
	// Its own client: the copy's answers may exceed the 16 MiB frames the
	// nameserver client accepts (a consumer offset per lite topic and
	// group), and the master's connection closes with the syncer.
	ccfg := b.clientConfig()
	ccfg.MaxFrameSize = copyMaxFrameSize
	client := remoting.NewClient(ccfg, w.log.With("component", "slavesync-client"))
	b.signInner(client)
	o := slavesync.Options{
		Invoker:       client,
		MasterAddr:    masterAddr,
		SelfAddr:      b.Addr,
		Topics:        b.topics,
		Groups:        w.m.subs,
		Offsets:       w.st.Offsets(),
		Modes:         pops,
		Auth:          authCopy{b},
		Timer:         w.m.timer,
		TimerEnabled:  func() bool { return b.cfg.Get().TimerWheelEnable },
		CheckInterval: cfg.SlaveSyncCheckInterval,
		FullInterval:  cfg.SlaveSyncFullInterval,
		Logger:        w.log.With("component", "slavesync"),
	}
	if mgr, ok := b.maps.(*statictopic.Manager); ok {
		o.Mappings = mgr
	}
	s, err := slavesync.New(o)
	if err != nil {
		_ = client.Close()
		return fmt.Errorf("broker: slave sync: %w", err)
	}
	b.slaveSync = s
	// A replica storing messages of a topic it does not know copies the
	// master's topic table now, not at the next full copy (60 s): elected
	// or promoted meanwhile, it would not route the topic.
	w.st.AddQueueCreatedListener(func(topic string, _ int32) {
		if !b.cfg.Get().IsMaster() && !b.topics.Contains(topic) {
			s.WantTopics()
		}
	})
	w.m.starters = append(w.m.starters, s.Start)
	w.m.closers = append(w.m.closers, func() {
		s.Close()
		_ = client.Close()
	})
	return nil
}

// copyMaxFrameSize bounds an answer the slave's copy accepts from its
// master: about ten million consumer offsets.
const copyMaxFrameSize = 512 << 20
