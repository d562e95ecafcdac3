// Package slavesync keeps a classic SLAVE broker's metadata a copy of its
// master's (org/apache/rocketmq/broker/slave/SlaveSynchronize.java and the
// slave task of BrokerController): topic configs with their static-topic
// mappings (GET_ALL_TOPIC_CONFIG 21), consumer offsets, LMQ and lite-topic
// ones included (GET_ALL_CONSUMER_OFFSET 43), subscription groups
// (GET_ALL_SUBSCRIPTIONGROUP_CONFIG 201) and message request modes
// (GET_ALL_MESSAGE_REQUEST_MODE 402). Every copy is persisted where the
// broker keeps its own, so it survives a slave restart.
//
// It also copies the master's delay and timer progress
// (GET_ALL_DELAY_OFFSET 45 and GET_TIMER_METRICS 61 with the others,
// GET_TIMER_CHECK_POINT 60 at every check, as Apache does), kept in
// Apache's files under <storePathRootDir>/config (timer.go): a slave
// answers these codes with its master's values, as an Apache slave does.
// A master computes them from its delay and timer index (broker/schedule:
// per level the consume-queue offset of SCHEDULE_TOPIC_XXXX below which
// everything was delivered; the earliest pending due time and the indexed
// offset of rmq_sys_wheel_timer; the timer messages waiting per topic), so
// that an Apache slave of ours, once promoted, carries on from them.
//
// When: a task wakes every CheckInterval (Apache: 3 s) and copies all when
// FullInterval (Apache: 60 s) passed since the last copy, and at once when
// the master's address is first learnt or changes (Apache waits for the
// next 60 s round). Topic configs, subscription groups and consumer
// offsets are also copied at every check as long as the master's last
// answer for them was small (SmallTableBytes; Apache: at the full copy
// only), so that a slave elected master has them as of a check ago: a topic
// created on the master without messages yet is routed, a group keeps its
// settings, and offsets are seconds old where a minute of consumption was
// redelivered before (a pop consumer, or a queue's new owner after a
// rebalance, reads the broker's offset).
package slavesync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/internal/loop"
	"github.com/rmqgo/rmq/broker/pop"
	"github.com/rmqgo/rmq/broker/store/offset"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Defaults (Apache's fixed periods).
const (
	DefaultCheckInterval = 3 * time.Second
	DefaultFullInterval  = 60 * time.Second
	DefaultTimeout       = 3 * time.Second
)

// Invoker sends one request (remoting.Client).
type Invoker interface {
	Invoke(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error)
}

// Topics is the topic table (topic.Manager).
type Topics interface {
	ReplaceAll(table map[string]protocol.TopicConfig, dv protocol.DataVersion) (bool, error)
}

// Mappings is the static-topic mapping table (statictopic.Manager).
type Mappings interface {
	ReplaceAll(details map[string]protocol.TopicQueueMappingDetail, dv protocol.DataVersion) (bool, error)
}

// Groups is the subscription group table (subscription.Manager).
type Groups interface {
	ReplaceAll(w subscription.Wrapper) (bool, error)
}

// OffsetStore is the consumer offset table (offset.Store).
type OffsetStore interface {
	Commit(k offset.Key, off int64)
	Flush() error
}

// RequestModes is the message request mode table (pop.Processor).
type RequestModes interface {
	ReplaceRequestModes(m map[string]map[string]pop.RequestMode) error
}

// Auth is the user and ACL table (auth.Store): a slave copies its
// master's users and ACLs (AUTH_LIST_USER 3005, AUTH_LIST_ACL 3010), which
// Apache leaves to the operator (each Apache broker keeps its own).
type Auth interface {
	ReplaceAll(users []protocol.UserInfo, acls []protocol.AclInfo) (bool, error)
}

// Options configure a Syncer. Invoker and MasterAddr are required; a nil
// table is not copied.
type Options struct {
	Invoker Invoker
	// MasterAddr is the master's address as last learnt ("" unknown).
	MasterAddr func() string
	// SelfAddr is this broker's address: a master address equal to it is
	// not copied from (Apache's guard).
	SelfAddr func() string

	Topics   Topics
	Mappings Mappings
	Groups   Groups
	Offsets  OffsetStore
	Modes    RequestModes
	Auth     Auth
	// Timer keeps the master's delay offsets, timer checkpoint and timer
	// metrics (TimerState); TimerEnabled is timerWheelEnable (nil: on):
	// off, the timer ones are not copied (Apache).
	Timer        TimerCopy
	TimerEnabled func() bool

	// CheckInterval, FullInterval and Timeout (per request); zero keeps
	// the defaults.
	CheckInterval time.Duration
	FullInterval  time.Duration
	Timeout       time.Duration
	Logger        *slog.Logger
	Now           func() time.Time
}

// Syncer copies the master's metadata; Start runs its task.
type Syncer struct {
	o       Options
	log     *slog.Logger
	run     loop.Runner
	trigger chan struct{}

	// topicsDue asks the task to copy the topic table now (WantTopics).
	topicsDue atomic.Bool

	mu         sync.Mutex // one copy at a time
	lastTopics time.Time  // start of the last topic copy (WantTopics' limit)
	lastAddr   string     // master address of the last copy attempt
	lastTry    time.Time  // start of the last copy attempt
	last       time.Time  // end of the last successful full copy
	// sizes holds the size of the master's last answer per request code
	// of the tables copied at every check while small (absent: none yet,
	// or it failed).
	sizes   map[int32]int
	noUsers string // master last said to keep no users (logged once)
}

// New checks o and builds a Syncer.
func New(o Options) (*Syncer, error) {
	if o.Invoker == nil || o.MasterAddr == nil {
		return nil, errors.New("slavesync: Options.Invoker and MasterAddr are required")
	}
	defaults.Positive(&o.CheckInterval, DefaultCheckInterval)
	defaults.Positive(&o.FullInterval, DefaultFullInterval)
	defaults.Positive(&o.Timeout, DefaultTimeout)
	defaults.Clock(&o.Now)
	defaults.Logger(&o.Logger)
	return &Syncer{o: o, log: o.Logger, trigger: make(chan struct{}, 1), sizes: map[int32]int{}}, nil
}

// Start runs the periodic task.
func (s *Syncer) Start() { s.run.Start(s.loop) }

// Close stops the task, waiting for a copy under way.
func (s *Syncer) Close() { s.run.Stop() }

// Trigger asks the task to check now; a new master address is copied from
// at once.
func (s *Syncer) Trigger() {
	loop.Wake(s.trigger)
}

// WantTopics asks for the master's topic table now: this replica stored
// messages of a topic it does not know. Without it, a topic created on the
// master in the minute before a failover was missing on the new master:
// unrouted, its messages stranded, and producers holding the old route
// stuck on the old master's address (a slave now). Copies are at most one
// a TopicsInterval apart.
func (s *Syncer) WantTopics() {
	if !s.topicsDue.Swap(true) {
		loop.Wake(s.trigger)
	}
}

// TopicsInterval is the least time between two copies WantTopics asks for.
const TopicsInterval = time.Second

// SmallTableBytes bounds a master's table (its answer's body) that is
// copied at every check; a larger one (lite topics' offsets run to
// millions) waits for the full copy.
const SmallTableBytes = 1 << 20

// LastSync is when the last full copy succeeded (zero: never).
func (s *Syncer) LastSync() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func (s *Syncer) loop(stop <-chan struct{}) {
	t := time.NewTicker(s.o.CheckInterval)
	defer t.Stop()
	ctx, cancel := loop.StopContext(stop)
	defer cancel()
	periodic := true
	for {
		s.tick(ctx, periodic)
		select {
		case <-stop:
			return
		case <-t.C:
			periodic = true
		case <-s.trigger:
			periodic = false
		}
	}
}

// tick copies when the master changed or the full period is over; a
// periodic one (not a Trigger or WantTopics) also copies the small tables.
func (s *Syncer) tick(ctx context.Context, periodic bool) {
	addr := s.o.MasterAddr()
	if addr == "" || (s.o.SelfAddr != nil && addr == s.o.SelfAddr()) {
		return
	}
	s.mu.Lock()
	due := addr != s.lastAddr || s.o.Now().Sub(s.lastTry) >= s.o.FullInterval
	s.mu.Unlock()
	if due {
		if err := s.SyncAll(ctx, addr); err != nil {
			s.log.Warn("copy metadata from the master", "master", addr, "err", err)
		}
		s.topicsDue.Store(false)
	} else {
		if s.topicsDue.Load() {
			s.copyTopicsNow(ctx, addr)
		}
		if periodic {
			s.copySmallTables(ctx, addr)
		}
	}
	// The timer checkpoint at every check (Apache: every 3 s).
	if err := s.syncTimerCheckpoint(ctx, addr); err != nil {
		s.log.Warn("copy the timer checkpoint from the master", "master", addr, "err", err)
	}
}

// SyncAll copies every table from the master at addr once. Each table is
// copied on its own: one failing leaves the others copied (as Apache's
// separate try blocks do). A failed copy is tried again a full period
// later, as in Apache: an unreachable master or a table too large for a
// frame costs one attempt a period, not one a check.
func (s *Syncer) SyncAll(ctx context.Context, addr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastAddr, s.lastTry, s.lastTopics = addr, s.o.Now(), s.o.Now()
	errs := []error{
		s.wrap("topic configs", s.syncTopics(ctx, addr)),
		s.wrap("consumer offsets", s.syncOffsets(ctx, addr)),
		s.wrap("subscription groups", s.syncGroups(ctx, addr)),
		s.wrap("message request modes", s.syncModes(ctx, addr)),
		s.wrap("users and ACLs", s.syncAuth(ctx, addr)),
		s.wrap("delay offsets", s.syncDelayOffsets(ctx, addr)),
		s.wrap("timer metrics", s.syncTimerMetrics(ctx, addr)),
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	s.last = s.o.Now()
	s.log.Debug("copied metadata from the master", "master", addr)
	return nil
}

// copyTopicsNow is WantTopics' copy, unless one ran within
// TopicsInterval: then a timer asks again when it has passed.
func (s *Syncer) copyTopicsNow(ctx context.Context, addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if wait := TopicsInterval - s.o.Now().Sub(s.lastTopics); wait > 0 {
		time.AfterFunc(wait, func() { loop.Wake(s.trigger) })
		return
	}
	s.topicsDue.Store(false)
	s.lastTopics = s.o.Now()
	if err := s.wrap("topic configs", s.syncTopics(ctx, addr)); err != nil {
		s.log.Warn("copy the topic table from the master", "master", addr, "err", err)
		return
	}
	s.log.Info("copied the topic table from the master: messages of a topic unknown here arrived", "master", addr)
}

// copySmallTables copies the topic configs, subscription groups and
// consumer offsets between full copies, each while the master's last answer
// for it was small. A failure waits for the full copy, as any failed copy
// does.
func (s *Syncer) copySmallTables(ctx context.Context, addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if addr != s.lastAddr {
		return
	}
	small := func(c int32) bool {
		n, ok := s.sizes[c]
		return ok && n <= SmallTableBytes
	}
	var errs []error
	if small(code.GetAllTopicConfig) {
		errs = append(errs, s.wrap("topic configs", s.syncTopics(ctx, addr)))
	}
	if small(code.GetAllSubscriptionGroupConfig) {
		errs = append(errs, s.wrap("subscription groups", s.syncGroups(ctx, addr)))
	}
	if small(code.GetAllConsumerOffset) {
		errs = append(errs, s.wrap("consumer offsets", s.syncOffsets(ctx, addr)))
	}
	if err := errors.Join(errs...); err != nil {
		s.log.Warn("copy small tables from the master", "master", addr, "err", err)
	}
}

// sized records the size of an answer (copySmallTables); a failure forgets
// it. Called with s.mu held.
func (s *Syncer) sized(c int32, n int, err error) error {
	if err != nil {
		delete(s.sizes, c)
	} else {
		s.sizes[c] = n
	}
	return err
}

func (s *Syncer) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// copyTable fetches one table with a request without header fields,
// decodes the body of a SUCCESS answer and applies it.
func copyTable[T any](ctx context.Context, s *Syncer, addr string, reqCode int32, decode func([]byte) (T, error), apply func(T) error) error {
	_, err := copyTableSized(ctx, s, addr, reqCode, decode, apply)
	return err
}

// copyTableSized is copyTable that also returns the answer's body size.
func copyTableSized[T any](ctx context.Context, s *Syncer, addr string, reqCode int32, decode func([]byte) (T, error), apply func(T) error) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	resp, err := s.o.Invoker.Invoke(ctx, addr, remoting.NewRequest(reqCode, nil, nil))
	if err != nil {
		return 0, err
	}
	if resp.Code == code.RequestCodeNotSupported {
		return 0, fmt.Errorf("%s: %w", code.RequestName(reqCode), errNotSupported)
	}
	if resp.Code != code.Success {
		return 0, &answerError{req: reqCode, code: resp.Code, remark: resp.Remark}
	}
	v, err := decode(resp.Body)
	if err != nil {
		return 0, err
	}
	// An answer from a broker that stopped being the master while the
	// request was on its way is dropped: this broker may have been
	// elected meanwhile (controller mode), and the old master's tables
	// would overwrite its own, the topic version with the old epoch's
	// stateVersion among them (issue 15).
	if cur := s.o.MasterAddr(); cur != addr {
		return 0, fmt.Errorf("%s: %w (now %q, asked %s)", code.RequestName(reqCode), errMasterChanged, cur, addr)
	}
	return len(resp.Body), apply(v)
}

func (s *Syncer) syncTopics(ctx context.Context, addr string) error {
	if s.o.Topics == nil && s.o.Mappings == nil {
		return nil
	}
	n, err := copyTableSized(ctx, s, addr, code.GetAllTopicConfig, DecodeTopics, func(w protocol.TopicConfigAndMappingSerializeWrapper) error {
		if s.o.Topics != nil {
			if _, err := s.o.Topics.ReplaceAll(w.TopicConfigTable, w.DataVersion); err != nil {
				return err
			}
		}
		// An Apache master without mappings may send none: then the
		// slave's stay as they are (Apache checks the map for null too).
		if s.o.Mappings != nil && w.TopicQueueMappingDetailMap != nil {
			if _, err := s.o.Mappings.ReplaceAll(w.TopicQueueMappingDetailMap, w.MappingDataVersion); err != nil {
				return err
			}
		}
		return nil
	})
	return s.sized(code.GetAllTopicConfig, n, err)
}

// syncOffsets stores the master's offsets over the slave's (Apache's
// putAll): an offset committed to the slave alone stays until the master
// has one for that queue, whatever is larger (upstream issue #1094). The
// copy is flushed at once so that it survives a crash.
func (s *Syncer) syncOffsets(ctx context.Context, addr string) error {
	if s.o.Offsets == nil {
		return nil
	}
	n, err := copyTableSized(ctx, s, addr, code.GetAllConsumerOffset, DecodeOffsets, func(w Offsets) error {
		for k, v := range w.Table {
			s.o.Offsets.Commit(k, v)
		}
		return s.o.Offsets.Flush()
	})
	return s.sized(code.GetAllConsumerOffset, n, err)
}

func (s *Syncer) syncGroups(ctx context.Context, addr string) error {
	if s.o.Groups == nil {
		return nil
	}
	n, err := copyTableSized(ctx, s, addr, code.GetAllSubscriptionGroupConfig, subscription.DecodeWrapper, func(w subscription.Wrapper) error {
		_, err := s.o.Groups.ReplaceAll(w)
		return err
	})
	return s.sized(code.GetAllSubscriptionGroupConfig, n, err)
}

func (s *Syncer) syncModes(ctx context.Context, addr string) error {
	if s.o.Modes == nil {
		return nil
	}
	return copyTable(ctx, s, addr, code.GetAllMessageRequestMode, decodeModes, s.o.Modes.ReplaceRequestModes)
}

// syncAuth copies the users, then the ACLs; both must answer for the copy
// to replace the slave's (a master without the auth codes leaves them).
func (s *Syncer) syncAuth(ctx context.Context, addr string) error {
	if s.o.Auth == nil {
		return nil
	}
	var users []protocol.UserInfo
	err := copyTable(ctx, s, addr, code.AuthListUser, decodeList[protocol.UserInfo], func(u []protocol.UserInfo) error {
		users = u
		return nil
	})
	if errors.Is(err, errNotSupported) {
		return nil // a master without the auth module (Apache before 5.3)
	}
	if ae := (*answerError)(nil); errors.As(err, &ae) && ae.code == code.SystemError {
		// Apache 5.3+ without an authentication metadata provider (its
		// default: authentication off) answers SYSTEM_ERROR ("The
		// authenticationMetadataProvider is not configured",
		// AuthenticationMetadataManagerImpl): it keeps no users, so
		// nothing is copied and the slave's table stays. Said once per
		// master rather than as a failed copy every period.
		if s.noUsers != addr {
			s.noUsers = addr
			s.log.Info("the master keeps no users (an Apache broker without authentication metadata): users and ACLs not copied", "master", addr, "remark", ae.remark)
		}
		return nil
	}
	if err != nil {
		return err
	}
	return copyTable(ctx, s, addr, code.AuthListACL, decodeList[protocol.AclInfo], func(acls []protocol.AclInfo) error {
		_, err := s.o.Auth.ReplaceAll(users, acls)
		return err
	})
}

// answerError is a master's answer other than SUCCESS.
type answerError struct {
	req, code int32
	remark    string
}

func (e *answerError) Error() string {
	return fmt.Sprintf("%s: code %d: %s", code.RequestName(e.req), e.code, e.remark)
}

// errNotSupported: the master does not serve a code.
var errNotSupported = errors.New("request code not supported by the master")

var errMasterChanged = errors.New("the master changed during the copy; answer dropped")

// decodeList parses a JSON array; an empty body is an empty list (Apache
// answers none when there is nothing).
func decodeList[T any](body []byte) ([]T, error) {
	var out []T
	if len(body) == 0 {
		return out, nil
	}
	if err := protocol.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return out, nil
}

// decodeModes parses a GET_ALL_MESSAGE_REQUEST_MODE body.
func decodeModes(body []byte) (map[string]map[string]pop.RequestMode, error) {
	var w pop.ModeWrapper
	if err := protocol.Unmarshal(body, &w); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if w.MessageRequestModeMap == nil {
		w.MessageRequestModeMap = map[string]map[string]pop.RequestMode{}
	}
	return w.MessageRequestModeMap, nil
}

// DecodeTopics parses a GET_ALL_TOPIC_CONFIG body
// (TopicConfigAndMappingSerializeWrapper); topics are decoded over Java's
// defaults. TopicQueueMappingDetailMap stays nil when the body has none.
func DecodeTopics(body []byte) (protocol.TopicConfigAndMappingSerializeWrapper, error) {
	var w protocol.TopicConfigAndMappingSerializeWrapper
	if err := protocol.Unmarshal(body, &w); err != nil {
		return w, fmt.Errorf("decode: %w", err)
	}
	table, dv, err := topic.DecodeTable(body)
	if err != nil {
		return w, err
	}
	w.TopicConfigTable, w.DataVersion = table, dv
	return w, nil
}
