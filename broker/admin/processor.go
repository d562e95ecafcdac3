// Package admin answers the broker's admin requests (Java's
// AdminBrokerProcessor subset used by mqadmin and client-go admin): topic
// create/update/delete/list/config/stats, broker runtime info, and broker
// config read/update.
package admin

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/mapping"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// QueueOffsets reads queue offsets from the message store. Without one,
// stats report empty queues.
type QueueOffsets interface {
	MinOffsetInQueue(topic string, queueID int) int64
	MaxOffsetInQueue(topic string, queueID int) int64
	// MessageStoreTimestamp is the store time of the message at offset (0 if none).
	MessageStoreTimestamp(topic string, queueID int, offset int64) int64
}

// RuntimeInfoProvider contributes the message store's part of
// GET_BROKER_RUNTIME_INFO (Java's MessageStore.getRuntimeInfo keys, e.g.
// putTps, commitLogMaxOffset); its entries override the defaults.
type RuntimeInfoProvider interface {
	RuntimeInfo() map[string]string
}

// TopicPutTps is optionally implemented by the store's stats.
type TopicPutTps interface {
	TopicPutTps(topic string) float64
}

// PoolStats reports the queues of the request executors, keyed by pool
// name (PoolSend, PoolPull, ...).
type PoolStats func() map[string]PoolStat

// PoolStat is one executor's queue: its length and how long its oldest
// request has waited.
type PoolStat struct {
	Queued   int
	HeadWait time.Duration
}

// Executor pool names used in runtime info.
const (
	PoolSend           = "send"
	PoolPull           = "pull"
	PoolLitePull       = "litePull"
	PoolQuery          = "query"
	PoolAck            = "ack"
	PoolAdmin          = "admin"
	PoolEndTransaction = "endTransaction"
)

// Hooks let the broker react to admin changes.
type Hooks struct {
	// ConfigChanged runs after UPDATE_BROKER_CONFIG changed keys.
	ConfigChanged func(keys []string)
	// TopicDeleted runs after DELETE_TOPIC_IN_BROKER removed a topic, to
	// drop its messages, offsets and mapping.
	TopicDeleted func(topic string)
	// TopicsChanged runs after topics were created or updated, before the
	// answer: registering them with the nameservers synchronously (as Java
	// does) means a route query right after `updateTopic` finds the topic.
	TopicsChanged func(ctx context.Context, names []string)
}

// Deps are the processor's collaborators. Config and Topics are required.
type Deps struct {
	Config   *config.Holder
	Topics   *topic.Manager
	Mappings mapping.Source      // nil: no static topics
	Offsets  QueueOffsets        // nil: empty queues
	Runtime  RuntimeInfoProvider // nil: store keys are zero
	Pools    PoolStats           // nil: empty queues
	Stats    StatsViewer         // nil: VIEW_BROKER_STATS_DATA finds nothing
	// RetryTopicsOf names the pop retry topics (v1 and v2) of the groups
	// with offsets on a topic: DELETE_TOPIC_IN_BROKER deletes those that
	// exist too when clearRetryTopicWhenDeleteTopic is on. nil: none.
	RetryTopicsOf func(topic string) []string
	Hooks         Hooks
	// BootTime is when the broker started (bootTimestamp, runtime).
	BootTime time.Time
	// IsActive reports brokerActive (Java: special services running, i.e.
	// master); nil means "is master".
	IsActive func() bool
	Logger   *slog.Logger
}

// Processor holds the handlers.
type Processor struct {
	d   Deps
	log *slog.Logger
}

// New returns a Processor.
func New(d Deps) (*Processor, error) {
	if d.Config == nil || d.Topics == nil {
		return nil, errors.New("admin: Deps.Config and Deps.Topics are required")
	}
	if d.Mappings == nil {
		d.Mappings = mapping.NewNone()
	}
	if d.BootTime.IsZero() {
		d.BootTime = time.Now()
	}
	defaults.Logger(&d.Logger)
	log := d.Logger
	return &Processor{d: d, log: log}, nil
}

// Handlers maps each admin request code to its handler. Handlers tolerate a
// nil channel, so tests may call them directly.
func (p *Processor) Handlers() map[int32]remoting.Handler {
	return map[int32]remoting.Handler{
		code.UpdateAndCreateTopic:         p.wrap(p.updateAndCreateTopic),
		code.UpdateAndCreateTopicList:     p.wrap(p.updateAndCreateTopicList),
		code.DeleteTopicInBroker:          p.wrap(p.deleteTopic),
		code.GetAllTopicConfig:            p.wrap(p.getAllTopicConfig),
		code.GetTopicConfig:               p.wrap(p.getTopicConfig),
		code.GetTopicStatsInfo:            p.wrap(p.getTopicStatsInfo),
		code.GetBrokerRuntimeInfo:         p.wrap(p.getBrokerRuntimeInfo),
		code.GetBrokerConfig:              p.wrap(p.getBrokerConfig),
		code.UpdateBrokerConfig:           p.wrap(p.updateBrokerConfig),
		code.ViewBrokerStatsData:          p.viewBrokerStatsData,
		code.GetSystemTopicListFromBroker: p.wrap(p.systemTopicList),
	}
}

// Register installs every handler on the admin executor.
func (p *Processor) Register(r processor.Registrar) {
	processor.RegisterAll(r, p.Handlers(), processor.PoolAdmin)
}

// wrap funnels every handler error through toCodeError, the single place
// where domain errors become response codes.
func (p *Processor) wrap(h remoting.Handler) remoting.Handler {
	return func(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		resp, err := h(ctx, ch, req)
		if err != nil {
			cerr := toCodeError(err)
			p.log.Info("admin request failed", "code", req.Code, "remote", processor.RemoteAddr(ch), "err", err)
			return nil, cerr
		}
		return resp, nil
	}
}
