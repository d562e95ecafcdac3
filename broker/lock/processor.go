package lock

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/internal/loop"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Topics is the part of the topic table the handlers use (*topic.Manager).
type Topics interface {
	Get(name string) (protocol.TopicConfig, bool)
}

// Deps are the processor's collaborators. Manager is required.
type Deps struct {
	Manager *Manager
	// Topics, when set, restricts locks to queues of topics this broker
	// has: a queue of an unknown topic, or with a queue id outside the
	// topic's queues, is never granted [our choice; Java grants any queue].
	Topics Topics
	// BrokerName returns this broker's name: the queue-id bound is checked
	// only for queues named after this broker (static topics use logic
	// queue ids under a mock broker name). nil: never checked.
	BrokerName func() string
	// SweepInterval is how often expired locks are dropped (0: MaxLiveTime).
	SweepInterval time.Duration
	Logger        *slog.Logger
}

// Processor answers LOCK_BATCH_MQ and UNLOCK_BATCH_MQ.
type Processor struct {
	d   Deps
	log *slog.Logger

	sweeper loop.Runner
}

// NewProcessor returns a Processor.
func NewProcessor(d Deps) (*Processor, error) {
	if d.Manager == nil {
		return nil, fmt.Errorf("lock: Deps.Manager is required")
	}
	defaults.Logger(&d.Logger)
	if d.SweepInterval <= 0 {
		d.SweepInterval = d.Manager.MaxLiveTime()
	}
	return &Processor{d: d, log: d.Logger}, nil
}

// Handlers maps the request codes to their handlers.
func (p *Processor) Handlers() map[int32]remoting.Handler {
	return map[int32]remoting.Handler{
		code.LockBatchMQ:   p.lockBatch,
		code.UnlockBatchMQ: p.unlockBatch,
	}
}

// Register installs the handlers on the admin executor.
func (p *Processor) Register(r processor.Registrar) {
	processor.RegisterAll(r, p.Handlers(), processor.PoolAdmin)
}

// Start runs the sweeper that drops expired locks.
func (p *Processor) Start() {
	p.sweeper.Start(func(stop <-chan struct{}) {
		loop.Tick(stop, p.d.SweepInterval, func() {
			if n := p.d.Manager.Sweep(); n > 0 {
				p.log.Info("dropped expired queue locks", "count", n)
			}
		})
	})
}

// Close stops the sweeper.
func (p *Processor) Close() {
	p.sweeper.Stop()
}

// batchBody is LockBatchRequestBody / UnlockBatchRequestBody (docs/protocol.md §4.7).
type batchBody struct {
	ConsumerGroup  string                  `json:"consumerGroup"`
	ClientID       string                  `json:"clientId"`
	MQSet          []protocol.MessageQueue `json:"mqSet"`
	OnlyThisBroker bool                    `json:"onlyThisBroker"`
}

// lockResponseBody is LockBatchResponseBody.
type lockResponseBody struct {
	LockOKMQSet []protocol.MessageQueue `json:"lockOKMQSet"`
}

// decodeBody reads a lock or unlock body; a missing body, bad JSON or an
// empty group or client id is INVALID_PARAMETER (Java fails the request
// with SYSTEM_ERROR on the NullPointerException instead).
func decodeBody(req *remoting.Command) (batchBody, error) {
	var b batchBody
	if len(req.Body) == 0 {
		return b, remoting.Errorf(code.InvalidParameter, "request code %d: the request body is empty", req.Code)
	}
	if err := protocol.Unmarshal(req.Body, &b); err != nil {
		return b, remoting.Errorf(code.InvalidParameter, "request code %d: bad body: %v", req.Code, err)
	}
	switch {
	case b.ConsumerGroup == "":
		return b, remoting.Errorf(code.InvalidParameter, "request code %d: consumerGroup is empty", req.Code)
	case b.ClientID == "":
		return b, remoting.Errorf(code.InvalidParameter, "request code %d: clientId is empty", req.Code)
	}
	return b, nil
}

// lockable filters out queues this broker cannot serve.
func (p *Processor) lockable(b *batchBody) []protocol.MessageQueue {
	if p.d.Topics == nil {
		return b.MQSet
	}
	self := ""
	if p.d.BrokerName != nil {
		self = p.d.BrokerName()
	}
	out := make([]protocol.MessageQueue, 0, len(b.MQSet))
	for _, mq := range b.MQSet {
		tc, ok := p.d.Topics.Get(mq.Topic)
		switch {
		case !ok:
			p.log.Debug("lock refused: unknown topic", "group", b.ConsumerGroup, "clientId", b.ClientID, "mq", mq.String())
			continue
		case mq.QueueID < 0,
			self != "" && mq.BrokerName == self && mq.QueueID >= max(tc.ReadQueueNums, tc.WriteQueueNums):
			p.log.Debug("lock refused: no such queue", "group", b.ConsumerGroup, "clientId", b.ClientID, "mq", mq.String())
			continue
		}
		out = append(out, mq)
	}
	return out
}

// lockBatch answers LOCK_BATCH_MQ: SUCCESS with the queues now held
// (possibly none).
func (p *Processor) lockBatch(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	b, err := decodeBody(req)
	if err != nil {
		return nil, err
	}
	ok := p.d.Manager.TryLockBatch(b.ConsumerGroup, b.ClientID, p.lockable(&b))
	return processor.Reply(req, "lock response", lockResponseBody{LockOKMQSet: ok})
}

// unlockBatch answers UNLOCK_BATCH_MQ (client-go sends it "one-way"
// without the flag and ignores the answer).
func (p *Processor) unlockBatch(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	b, err := decodeBody(req)
	if err != nil {
		return nil, err
	}
	p.d.Manager.UnlockBatch(b.ConsumerGroup, b.ClientID, b.MQSet)
	return remoting.NewResponse(req, code.Success, ""), nil
}
