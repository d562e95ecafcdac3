// Package transaction is the broker side of transactional messages
// (docs/protocol.md §6.5; Java's TransactionalMessageServiceImpl,
// EndTransactionProcessor and TransactionalMessageCheckService).
//
// Half messages are parked by the send path (send.HalfMessage) in
// RMQ_SYS_TRANS_HALF_TOPIC queue 0. END_TRANSACTION (37) commits one — it is
// stored again in REAL_TOPIC/REAL_QID with the commit sysFlag and
// preparedTransactionOffset — or rolls it back; either way an op record is
// written. A check service looks at half messages without an op record
// older than transactionTimeOut (or CHECK_IMMUNITY_TIME_IN_SECONDS) every
// transactionCheckInterval: it re-appends the half message with
// TRANSACTION_CHECK_TIMES incremented and sends CHECK_TRANSACTION_STATE
// (39) one-way to a live channel of the producer group (PGROUP); the
// producer answers with END_TRANSACTION. After transactionCheckMax checks
// the message is moved to TRANS_CHECK_MAX_TIME_TOPIC and dropped.
//
// Durable state is only what Java keeps: op records are messages in
// RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0 (tag "d", body "offset,offset,"), so
// they are in the CommitLog and survive any restart; the scan positions are
// the consumer offsets of group CID_RMQ_SYS_TRANS on both queues. On start
// the op records after the op position are read back. Positions may be
// older after a crash (offsets are flushed periodically): the scan then
// sees processed half messages again, and every one that ended has an op
// record. Unlike Java, op records are also written for the copies a check
// created when the transaction ends, and END_TRANSACTION for a transaction
// that already ended (by an op record, or in this process through another
// copy) is answered without storing it again, so a late commit racing a
// check does not deliver the message twice. Op records are written before
// END_TRANSACTION is answered; concurrent ones share op messages (group
// commit, transactionOpMsgMaxSize bytes of offsets per message) instead of
// Java's timed batching. An END_TRANSACTION naming a half message the scan
// passed and re-appended before a restart is answered "already ended": the
// check of the newer copy asks the producer again.
//
// A check that finds no live channel of the producer group counts towards
// transactionCheckMax as in Java, except during ProducerGrace after the
// service started: after a broker restart producers reconnect only with
// their next heartbeat (every 30 s), and pending transactions must not be
// used up meanwhile. Half messages older than fileReservedTime are dropped
// as in Java. The check service runs on a master only.
package transaction

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/internal/loop"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/processor/send"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Group is Java's MixAll.CID_SYS_RMQ_TRANS: the consumer group whose offsets
// on the half and op queues are the check scan's positions.
const Group = "CID_RMQ_SYS_TRANS"

// Store is the part of the message store the service uses;
// store.MessageStore implements it.
type Store interface {
	PutMessage(ctx context.Context, msg *message.Message) (store.PutResult, error)
	GetMessage(ctx context.Context, topic string, queueID int32, offset int64, maxMsgNums int, maxBytes int, filter store.MessageFilter) (*store.GetResult, error)
	ReadRecord(phyOffset int64) ([]byte, error)
	MaxOffset(topic string, queueID int32) int64
	MinOffset(topic string, queueID int32) int64
	CommitOffset(group, topic string, queueID int32, offset int64)
	QueryOffset(group, topic string, queueID int32) (int64, bool)
	// QueryMessage finds messages by UNIQ_KEY (uniq=true) in the key index.
	QueryMessage(topic, key string, uniq bool, maxNum int, begin, end int64) (*store.QueryResult, error)
}

// Topics is the part of the topic table the service uses (*topic.Manager).
type Topics interface {
	Get(name string) (protocol.TopicConfig, bool)
	CreateIfAbsent(tc protocol.TopicConfig) (protocol.TopicConfig, bool, error)
}

// CheckTarget is a producer connection (*remoting.Channel).
type CheckTarget interface {
	InvokeOneway(req *remoting.Command) error
	RemoteAddr() string
}

// Producers finds a live connection of a producer group for
// CHECK_TRANSACTION_STATE; nil when the group has none.
type Producers interface {
	CheckTarget(group string) CheckTarget
}

// ChannelProducers adapts a channel lookup such as
// client.ProducerManager.AvailableChannel.
type ChannelProducers func(group string) *remoting.Channel

// CheckTarget returns the group's channel, or nil.
func (f ChannelProducers) CheckTarget(group string) CheckTarget {
	if ch := f(group); ch != nil && ch.IsActive() {
		return ch
	}
	return nil
}

// Deps are the service's collaborators. Config, Store, Topics and Producers
// are required.
type Deps struct {
	// Config returns the live configuration: transactionTimeOut,
	// transactionCheckInterval, transactionCheckMax, fileReservedTime and
	// transactionOpMsgMaxSize are read on every use.
	Config    func() *config.Config
	Store     Store
	Topics    Topics
	Producers Producers
	// Schedule parks a committed message that asks for delayed delivery
	// (Java applies its schedule hook to every put); nil: stored as is.
	Schedule send.ScheduleHook
	// StoreHost is brokerIP1:port for op messages; nil: the store's own.
	StoreHost func() netip.AddrPort
	// ProducerGrace is how long after the start checks that find no
	// producer online do not count (0: DefaultProducerGrace; < 0: none).
	ProducerGrace time.Duration
	// Ended counts an END_TRANSACTION that committed or rolled back a half
	// message of realTopic born at bornMs (broker/metrics); nil: not
	// counted.
	Ended func(realTopic string, commit bool, bornMs int64)
	// Discarded counts a transaction the check scan gave up on (moved to
	// TRANS_CHECK_MAX_TIME_TOPIC) by its real topic (broker/metrics); nil:
	// not counted.
	Discarded func(realTopic string)
	// Now is the clock; nil: time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// DefaultProducerGrace covers two client heartbeat intervals.
const DefaultProducerGrace = time.Minute

// Stats count what the service did since it started.
type Stats struct {
	Commits, Rollbacks, Checks, Discards int64
}

// Service handles END_TRANSACTION and runs the check scan. It is safe for
// concurrent use.
type Service struct {
	d   Deps
	log *slog.Logger
	st  *state
	ops *opWriter

	round   sync.Mutex // one check round at a time
	started time.Time

	commits, rollbacks, checks, discards atomic.Int64
	// noProducerLogged rate-limits the "no producer online" warning.
	noProducerLogged atomic.Int64

	checker loop.Runner
}

// New builds the service and loads its state: the scan positions and the op
// records after the op position.
func New(d Deps) (*Service, error) {
	if d.Config == nil || d.Store == nil || d.Topics == nil || d.Producers == nil {
		return nil, errors.New("transaction: Deps.Config, Store, Topics and Producers are required")
	}
	defaults.Clock(&d.Now)
	defaults.Logger(&d.Logger)
	switch {
	case d.ProducerGrace == 0:
		d.ProducerGrace = DefaultProducerGrace
	case d.ProducerGrace < 0:
		d.ProducerGrace = 0
	}
	s := &Service{d: d, log: d.Logger, started: d.Now()}
	s.ops = &opWriter{put: s.putOps}
	half := s.position(protocol.TransHalfTopic)
	op := s.position(protocol.TransOpHalfTopic)
	s.st = newState(half, op)
	if err := s.readOps(context.Background()); err != nil {
		return nil, fmt.Errorf("transaction: read op records: %w", err)
	}
	snap := s.st.snapshot()
	s.log.Info("transaction state loaded", "halfOffset", half, "halfMax", d.Store.MaxOffset(protocol.TransHalfTopic, 0),
		"opOffset", op, "opMax", snap.opRead, "pendingOps", snap.done)
	return s, nil
}

// position is the scan position of a queue: the committed offset, else the
// queue's min offset (Java's fetchConsumeOffset), never below the min.
// A position beyond the queue's end (a torn CommitLog tail cut after the
// position was saved) is moved back to the end.
func (s *Service) position(topic string) int64 {
	minOff, maxOff := s.d.Store.MinOffset(topic, 0), s.d.Store.MaxOffset(topic, 0)
	off, ok := s.d.Store.QueryOffset(Group, topic, 0)
	switch {
	case !ok || off < minOff:
		return minOff
	case off > maxOff:
		s.log.Warn("transaction scan position beyond the queue's end: moved back", "topic", topic, "position", off, "max", maxOff)
		return maxOff
	}
	return off
}

func (s *Service) now() time.Time { return s.d.Now() }

func (s *Service) storeHost() netip.AddrPort {
	if s.d.StoreHost != nil {
		return s.d.StoreHost()
	}
	return netip.AddrPort{}
}

// Handlers maps END_TRANSACTION to its handler.
func (s *Service) Handlers() map[int32]remoting.Handler {
	return map[int32]remoting.Handler{code.EndTransaction: s.endTransaction}
}

// Register installs END_TRANSACTION on the send executor.
func (s *Service) Register(r processor.Registrar) {
	processor.RegisterAll(r, s.Handlers(), processor.PoolSend)
}

// Stats returns the counters.
func (s *Service) Stats() Stats {
	return Stats{Commits: s.commits.Load(), Rollbacks: s.rollbacks.Load(), Checks: s.checks.Load(), Discards: s.discards.Load()}
}

// Start runs the check service: a round every transactionCheckInterval.
func (s *Service) Start() {
	s.checker.Start(s.loop)
}

// Close stops the check service and records the scan positions.
func (s *Service) Close() {
	s.checker.Stop()
	s.commitPositions()
}

func (s *Service) interval() time.Duration {
	return defaults.Or(s.d.Config().TransactionCheckInterval, 30*time.Second)
}

func (s *Service) loop(stop <-chan struct{}) {
	ctx, cancel := loop.StopContext(stop)
	defer cancel()
	loop.Repeat(stop, s.interval, func() {
		start := s.now()
		if err := s.Check(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("transaction check round failed", "err", err)
		}
		s.log.Debug("transaction check round", "took", s.now().Sub(start))
	})
}

// commitPositions records the scan positions (half first: a flush between
// the two then keeps an op position that is safe for the half position).
func (s *Service) commitPositions() {
	s.st.prune()
	half, op := s.st.offsets()
	s.d.Store.CommitOffset(Group, protocol.TransHalfTopic, 0, half)
	s.d.Store.CommitOffset(Group, protocol.TransOpHalfTopic, 0, op)
}

// isStored reports a put error that still stored the message.
func isStored(err error) bool { return errors.Is(err, store.ErrFlushTimeout) }

// storeError answers a failure to store a message with the code a send
// gets for it (send.ErrorCode), what prefixed to the remark.
func storeError(what string, err error) error {
	return remoting.Errorf(processor.CodeOf(err, send.ErrorCode), "%s: %v", what, err)
}
