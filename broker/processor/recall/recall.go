// Package recall answers RECALL_MESSAGE (370; Java 5.3.2+
// RecallMessageProcessor, DefaultMQProducer.recallMessage): a producer
// hands back the recall handle of a pending timer message and the broker
// stores a cancellation marker for it (package schedule), so the message
// is never delivered.
package recall

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"strconv"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/schedule"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Topics is what the processor needs of the topic manager.
type Topics interface {
	Get(name string) (protocol.TopicConfig, bool)
}

// Scheduler parks the marker in the timer (schedule.Service).
type Scheduler interface {
	Schedule(msg *message.Message) error
}

// Store stores the marker.
type Store interface {
	PutMessage(ctx context.Context, msg *message.Message) (store.PutResult, error)
}

// Deps are the processor's collaborators; all but StoreHost, Now and
// Logger are required.
type Deps struct {
	Config    func() *config.Config
	Topics    Topics
	Schedule  Scheduler
	Store     Store
	StoreHost func() netip.AddrPort
	Now       func() time.Time
	Logger    *slog.Logger
}

// Processor answers RECALL_MESSAGE. It is safe for concurrent use.
type Processor struct {
	d   Deps
	log *slog.Logger
}

// New validates d.
func New(d Deps) (*Processor, error) {
	if d.Config == nil || d.Topics == nil || d.Schedule == nil || d.Store == nil {
		return nil, errors.New("recall: Deps.Config, Topics, Schedule and Store are required")
	}
	defaults.Clock(&d.Now)
	defaults.Logger(&d.Logger)
	return &Processor{d: d, log: d.Logger}, nil
}

// Register installs the handler on the send pool.
func (p *Processor) Register(r processor.Registrar) {
	r.RegisterProcessor(code.RecallMessage, p.Handle, processor.PoolSend)
}

// Handle is RECALL_MESSAGE: the checks of Java's RecallMessageProcessor, in
// its order and with its codes and remarks, then the marker through the
// schedule hook into the store. The answer carries msgId = the recalled
// message's UNIQ_KEY.
func (p *Processor) Handle(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	topic, handle := f.Str("topic"), f.Str("recallHandle")
	group := f.OptStr("producerGroup", "")
	if err := f.Err(); err != nil {
		return nil, processor.BadRequest(err)
	}
	cfg := p.d.Config()
	switch {
	case !cfg.RecallMessageEnable:
		return nil, remoting.Errorf(code.NoPermission, "recall failed, operation is forbidden")
	case cfg.BrokerRole == config.RoleSlave:
		return nil, remoting.Errorf(code.SlaveNotAvailable, "recall failed, broker service not available")
	case cfg.BrokerPermission&protocol.PermWrite == 0 && !cfg.AllowRecallWhenBrokerNotWriteable:
		return nil, remoting.Errorf(code.ServiceNotAvailable, "recall failed, broker service not available")
	}
	if _, ok := p.d.Topics.Get(topic); !ok {
		return nil, remoting.Errorf(code.TopicNotExist, "recall failed, the topic[%s] not exist", topic)
	}
	h, err := schedule.DecodeRecallHandle(handle)
	if err != nil {
		return nil, remoting.Errorf(code.IllegalOperation, "%v", err)
	}
	if h.Topic != topic {
		return nil, remoting.Errorf(code.IllegalOperation, "recall failed, topic not match")
	}
	if h.BrokerName != cfg.BrokerName {
		return nil, remoting.Errorf(code.IllegalOperation, "recall failed, broker service not available")
	}
	now := p.d.Now()
	ts, err := strconv.ParseInt(h.Timestamp, 10, 64)
	maxDelay := int64(cfg.TimerMaxDelaySec) * 1000
	if left := ts - now.UnixMilli(); err != nil || left <= 0 || (maxDelay > 0 && left >= maxDelay) {
		return nil, remoting.Errorf(code.IllegalOperation, "recall failed, timestamp invalid")
	}
	marker := schedule.RecallMarker(h, group, now.UnixMilli())
	if ch != nil {
		if ap, err := netip.ParseAddrPort(ch.RemoteAddr()); err == nil {
			marker.BornHost = ap
		}
	}
	if p.d.StoreHost != nil {
		marker.StoreHost = p.d.StoreHost()
	}
	if err := p.d.Schedule.Schedule(marker); err != nil {
		p.log.Warn("recall: marker refused", "topic", topic, "msgId", h.MessageID, "err", err)
		return nil, remoting.Errorf(code.SystemError, "recall failed, execute error")
	}
	if _, err := p.d.Store.PutMessage(ctx, marker); err != nil && !errors.Is(err, store.ErrFlushTimeout) {
		p.log.Warn("recall: store marker", "topic", topic, "msgId", h.MessageID, "err", err)
		return nil, remoting.Errorf(code.SystemError, "recall failed, execute error")
	}
	p.log.Info("message recalled", "topic", topic, "msgId", h.MessageID, "deliverMs", h.Timestamp, "producerGroup", group)
	resp := remoting.NewResponse(req, code.Success, "")
	resp.SetExt("msgId", h.MessageID)
	region := cfg.RegionID
	if region == "" {
		region = "DefaultRegion"
	}
	resp.SetExt(message.PropertyMsgRegion, region)
	return resp, nil
}
