package client

import (
	"context"
	"math/rand/v2"
	"os"

	"github.com/rmqgo/rmq/pkg/message"
)

// Producer sends messages to the brokers of a RocketMQ cluster. It is safe
// for concurrent use. Build it with NewProducer, call Start before sending
// and Shutdown when done.
type Producer struct {
	groupClient
	cfg    ProducerConfig
	ids    *message.UniqIDGenerator
	zlib   *compressor
	faults *faultAvoidance // nil when DisableFaultAvoidance
}

// NewProducer checks cfg and builds a producer; nothing is dialled until the
// first send.
func NewProducer(cfg ProducerConfig) (*Producer, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	z, err := newCompressor(cfg.CompressLevel)
	if err != nil {
		return nil, err
	}
	p := &Producer{cfg: cfg, zlib: z}
	if !cfg.DisableFaultAvoidance {
		p.faults = newFaultAvoidance(nil)
	}
	p.groupClient = newGroupClient(cfg.CommonConfig, "producer", cfg.Group, p.heartbeatData)
	// The salt stands in for Java's class-loader hash: it keeps ids of two
	// producers in one process apart even when their counters meet.
	p.ids = message.NewUniqIDGenerator(localIP(), os.Getpid(), rand.Int32(), nil)
	return p, nil
}

// Shutdown refuses new sends, waits for sends in flight (async callbacks
// included) until ctx ends, unregisters from the brokers, then closes the
// connections, failing whatever is still pending. It returns ctx's error if
// the wait was cut short. Later calls do nothing.
func (p *Producer) Shutdown(ctx context.Context) error {
	first, idle := p.life.close()
	if !first {
		return nil
	}
	drainErr := drain(ctx, idle)
	p.core.stop()
	p.core.unregister(ctx, p.cfg.Group, "")
	return p.core.finishShutdown("producer", "producer", p.cfg.Group, "sends", drainErr)
}

// ClientID is the id brokers know this producer by (ip@instance).
func (p *Producer) ClientID() string { return p.core.clientID }

// Group is the producer group.
func (p *Producer) Group() string { return p.cfg.Group }

// heartbeatData announces the producer group (and, like Java, the internal
// producer used for consumer retries).
func (p *Producer) heartbeatData() *heartbeatData {
	return &heartbeatData{
		ClientID:        p.core.clientID,
		ConsumerDataSet: []consumerData{},
		ProducerDataSet: []producerData{{GroupName: p.cfg.Group}, {GroupName: clientInnerProducerGroupName}},
	}
}
