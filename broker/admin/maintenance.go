package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/internal/javaorder"
	pcfg "github.com/rmqgo/rmq/pkg/config"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Store is what the store maintenance codes act on (the broker's message
// store).
type Store interface {
	// CleanExpiredQueues destroys the consume queues whose messages all
	// left with deleted CommitLog files; it returns how many.
	CleanExpiredQueues() (int, error)
	// CleanUnusedTopics destroys the consume queues of the topics inUse
	// denies; it returns how many topics.
	CleanUnusedTopics(inUse func(topic string) bool) (int, error)
	// DeleteExpiredFiles makes the CommitLog's next retention rounds delete
	// expired files whatever the hour.
	DeleteExpiredFiles()
	// SetReadAhead turns the kernel's read-ahead on the CommitLog files on
	// or off.
	SetReadAhead(on bool) error
	// SetMasterFlushedOffset records the master's flushed offset (slave).
	SetMasterFlushedOffset(off int64)
	// QueueEntries reads up to n entries of a queue from offset from; ok is
	// false when the queue does not exist.
	QueueEntries(topic string, queueID int32, from int64, n int) (QueueEntries, bool, error)
}

// QueueEntries is a slice of one consume queue and its bounds.
type QueueEntries struct {
	Min, Max int64
	Entries  []QueueEntry
}

// QueueEntry is one consume-queue entry.
type QueueEntry struct {
	Offset          int64
	CommitLogOffset int64
	Size            int32
	TagsCode        int64
}

// MaintenanceDeps are the collaborators of the store maintenance and
// cold-data codes. Config and Store are required.
type MaintenanceDeps struct {
	Config *config.Holder
	Store  Store
	// TopicExists reports whether a topic is in the topic table
	// (CLEAN_UNUSED_TOPIC keeps those).
	TopicExists func(topic string) bool
	// Subscription is the online subscription of a group to a topic
	// (QUERY_CONSUME_QUEUE with a consumer group); nil: none is online.
	Subscription func(group, topic string) (any, bool)
	Logger       *slog.Logger
}

// Maintenance answers Apache's store maintenance codes (CLEAN_EXPIRED_CONSUMEQUEUE
// 306, CLEAN_UNUSED_TOPIC 316, DELETE_EXPIRED_COMMITLOG 329,
// QUERY_CONSUME_QUEUE 321, SET_COMMITLOG_READ_MODE 2004,
// RESET_MASTER_FLUSH_OFFSET 908, POP_ROLLBACK 200056) and the cold-data
// flow control table (2001–2003), as Apache's AdminBrokerProcessor.
type Maintenance struct {
	d    MaintenanceDeps
	log  *slog.Logger
	cold coldTable
}

// NewMaintenance returns the handlers' owner.
func NewMaintenance(d MaintenanceDeps) (*Maintenance, error) {
	if d.Config == nil || d.Store == nil {
		return nil, errors.New("admin: MaintenanceDeps.Config and Store are required")
	}
	if d.TopicExists == nil {
		d.TopicExists = func(string) bool { return false }
	}
	defaults.Logger(&d.Logger)
	return &Maintenance{d: d, log: d.Logger, cold: coldTable{groups: map[string]int64{}}}, nil
}

// Header fields, Apache's remarks and limits.
const (
	readAheadModeField        = "READ_AHEAD_MODE"
	masterFlushOffsetField    = "masterFlushOffset"
	consumerGroupField        = "consumerGroup"
	madvNormal, madvRandom    = 0, 1
	setReadModeFailed         = "set commitlog readahead mode failed"
	setReadModeBadValue       = "set commitlog readahead mode param value error"
	setReadModeBadParam       = "set commitlog readahead mode param error"
	coldCtrPropertiesErr      = "string2Properties error"
	queueMissingRemark        = "%d@%s is not exist!"
	indexMissingRemark        = "Index %d of %d@%s is not exist!"
	offlineFilterData         = "%s@%s is not online!"
	maxQueryConsumeQueueCount = 1 << 16
)

// Handlers maps each code to its handler (all on the admin executor, as
// Apache registers AdminBrokerProcessor).
func (m *Maintenance) Handlers() map[int32]remoting.Handler {
	return map[int32]remoting.Handler{
		code.CleanExpiredConsumeQueue:    m.cleanExpiredConsumeQueue,
		code.CleanUnusedTopic:            m.cleanUnusedTopic,
		code.DeleteExpiredCommitLog:      m.deleteExpiredCommitLog,
		code.QueryConsumeQueue:           m.queryConsumeQueue,
		code.SetCommitLogReadMode:        m.setCommitLogReadMode,
		code.ResetMasterFlushOffset:      m.resetMasterFlushOffset,
		code.UpdateColdDataFlowCtrConfig: m.updateColdDataFlowCtrConfig,
		code.RemoveColdDataFlowCtrConfig: m.removeColdDataFlowCtrConfig,
		code.GetColdDataFlowCtrInfo:      m.getColdDataFlowCtrInfo,
		code.PopRollback:                 m.popRollback,
	}
}

// Register installs the handlers on the admin executor.
func (m *Maintenance) Register(r processor.Registrar) {
	processor.RegisterAll(r, m.Handlers(), processor.PoolAdmin)
}

func ok(req *remoting.Command) *remoting.Command { return remoting.NewResponse(req, code.Success, "") }

// cleanExpiredConsumeQueue is CLEAN_EXPIRED_CONSUMEQUEUE (306).
func (m *Maintenance) cleanExpiredConsumeQueue(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	n, err := m.d.Store.CleanExpiredQueues()
	if err != nil {
		return remoting.NewResponse(req, code.SystemError, err.Error()), nil
	}
	m.log.Info("cleanExpiredConsumeQueue", "queuesDestroyed", n, "remote", processor.RemoteAddr(ch))
	return ok(req), nil
}

// cleanUnusedTopic is CLEAN_UNUSED_TOPIC (316): the consume queues of
// topics no longer in the topic table go.
func (m *Maintenance) cleanUnusedTopic(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	n, err := m.d.Store.CleanUnusedTopics(m.d.TopicExists)
	if err != nil {
		// Apache's handler lets store errors escape (SYSTEM_ERROR with the
		// exception's text).
		return remoting.NewResponse(req, code.SystemError, err.Error()), nil
	}
	m.log.Warn("cleanUnusedTopic", "topicsCleaned", n, "remote", processor.RemoteAddr(ch))
	return ok(req), nil
}

// deleteExpiredCommitLog is DELETE_EXPIRED_COMMITLOG (329): answered at
// once; the deletion runs in the retention rounds that follow.
func (m *Maintenance) deleteExpiredCommitLog(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	m.d.Store.DeleteExpiredFiles()
	m.log.Warn("deleteExpiredCommitLog", "remote", processor.RemoteAddr(ch))
	return ok(req), nil
}

// setCommitLogReadMode is SET_COMMITLOG_READ_MODE (2004): READ_AHEAD_MODE
// 0 (MADV_NORMAL) or 1 (MADV_RANDOM) sets dataReadAheadEnable and advises
// every mapped CommitLog file.
func (m *Maintenance) setCommitLogReadMode(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if req.ExtFields == nil {
		return remoting.NewResponse(req, code.SystemError, setReadModeBadParam), nil
	}
	mode, err := strconv.Atoi(req.ExtFields[readAheadModeField])
	if err != nil {
		return remoting.NewResponse(req, code.SystemError, setReadModeFailed), nil
	}
	if mode != madvNormal && mode != madvRandom {
		return remoting.NewResponse(req, code.InvalidParameter, setReadModeBadValue), nil
	}
	on := mode == madvNormal
	if _, err := m.d.Config.Update(map[string]string{"dataReadAheadEnable": strconv.FormatBool(on)}); err != nil {
		m.log.Error("set commitlog readahead mode", "err", err)
		return remoting.NewResponse(req, code.SystemError, setReadModeFailed), nil
	}
	if err := m.d.Store.SetReadAhead(on); err != nil {
		m.log.Error("set commitlog readahead mode", "err", err)
		return remoting.NewResponse(req, code.SystemError, setReadModeFailed), nil
	}
	m.log.Info("setCommitLogReadaheadMode", "mode", mode, "remote", processor.RemoteAddr(ch))
	return remoting.NewResponse(req, code.Success, fmt.Sprintf("set commitlog readahead mode success, mode: %d", mode)), nil
}

// resetMasterFlushOffset is RESET_MASTER_FLUSH_OFFSET (908): a slave
// records the offset; a master ignores it. Both answer SUCCESS.
func (m *Maintenance) resetMasterFlushOffset(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if m.d.Config.Get().BrokerID != 0 {
		if v, has := req.ExtFields[masterFlushOffsetField]; has {
			off, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, processor.BadRequestf("masterFlushOffset %q: %v", v, err)
			}
			m.d.Store.SetMasterFlushedOffset(off)
			m.log.Info("resetMasterFlushOffset", "masterFlushOffset", off, "remote", processor.RemoteAddr(ch))
		}
	}
	return ok(req), nil
}

// popRollback is POP_ROLLBACK (200056, mqadmin exportPopRecord): Apache
// moves the records of its optional KV pop service
// (popConsumerKVServiceInit) into checkpoint messages of the revive
// topic, and answers SUCCESS doing nothing without that service. Our pop
// state is already journaled to the revive topic (broker/pop), so there
// is nothing to move.
func (m *Maintenance) popRollback(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	m.log.Info("exportPopRecord: pop state is journaled to the revive topic already", "remote", processor.RemoteAddr(ch))
	return ok(req), nil
}

// consumeQueueData is Apache's ConsumeQueueData (fastjson: fields in
// alphabetical order, nulls left out).
type consumeQueueData struct {
	BitMap         *string `json:"bitMap,omitempty"`
	Eval           bool    `json:"eval"`
	ExtendDataJSON *string `json:"extendDataJson,omitempty"`
	Msg            *string `json:"msg,omitempty"`
	PhysicOffset   int64   `json:"physicOffset"`
	PhysicSize     int32   `json:"physicSize"`
	TagsCode       int64   `json:"tagsCode"`
}

// queryConsumeQueueBody is Apache's QueryConsumeQueueResponseBody.
type queryConsumeQueueBody struct {
	FilterData       *string            `json:"filterData,omitempty"`
	MaxQueueIndex    int64              `json:"maxQueueIndex"`
	MinQueueIndex    int64              `json:"minQueueIndex"`
	QueueData        []consumeQueueData `json:"queueData,omitempty"`
	SubscriptionData any                `json:"subscriptionData,omitempty"`
}

// queryConsumeQueue is QUERY_CONSUME_QUEUE (321): count entries of a queue
// from index, with the group's subscription when one is named. Our queues
// have no extension units (Apache's enableConsumeQueueExt), so entries
// carry offset, size and tags code only.
func (m *Maintenance) queryConsumeQueue(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	topic := f.Str("topic")
	qid := f.Int32("queueId")
	index := f.Int64("index")
	count := f.Int32("count")
	group, hasGroup := req.ExtFields[consumerGroupField]
	if err := f.Err(); err != nil {
		return nil, processor.BadRequest(err)
	}
	n := int(min(max(count, 0), maxQueryConsumeQueueCount))
	qe, found, err := m.d.Store.QueueEntries(topic, qid, index, n)
	if err != nil {
		return nil, err
	}
	if !found {
		return remoting.NewResponse(req, code.SystemError, fmt.Sprintf(queueMissingRemark, qid, topic)), nil
	}
	body := queryConsumeQueueBody{MaxQueueIndex: qe.Max, MinQueueIndex: qe.Min}
	if hasGroup {
		var sub any
		var online bool
		if m.d.Subscription != nil {
			sub, online = m.d.Subscription(group, topic)
		}
		var fd string
		if online {
			body.SubscriptionData = sub
			fd = "null" // no ConsumerFilterData kept for the group (Apache's JSON of null)
		} else {
			fd = fmt.Sprintf(offlineFilterData, group, topic)
		}
		body.FilterData = &fd
	}
	if index < qe.Min || index >= qe.Max {
		return remoting.NewResponse(req, code.Success, fmt.Sprintf(indexMissingRemark, index, qid, topic)), nil
	}
	body.QueueData = make([]consumeQueueData, 0, len(qe.Entries))
	for _, e := range qe.Entries {
		if e.Offset-index >= int64(count) {
			break
		}
		body.QueueData = append(body.QueueData, consumeQueueData{PhysicOffset: e.CommitLogOffset, PhysicSize: e.Size, TagsCode: e.TagsCode})
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode consume queue: %w", err)
	}
	resp := remoting.NewResponse(req, code.Success, "")
	resp.Body = data
	return resp, nil
}

// coldTable is the configurable part of Apache's ColdDataCgCtrService:
// per-group cold read thresholds set by mqadmin. Its runtime table (groups
// reading cold data, and the global accumulator) stays empty: our store
// does not tell cold reads from warm ones, which is what Apache's table
// holds only with coldDataFlowControlEnable on (off by default).
type coldTable struct {
	mu     sync.Mutex
	groups map[string]int64
	order  []string // insertion order (a hash bucket's order)
}

func (c *coldTable) put(group string, threshold int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, has := c.groups[group]; !has {
		c.order = append(c.order, group)
	}
	c.groups[group] = threshold
}

func (c *coldTable) remove(group string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, has := c.groups[group]; !has {
		return
	}
	delete(c.groups, group)
	for i, g := range c.order {
		if g == group {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
}

// configJSON is the table as a JSON object, in the iteration order of
// Apache's ConcurrentHashMap of it.
func (c *coldTable) configJSON() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	b.WriteByte('{')
	for i, g := range javaorder.HashOrder(c.order, javaorder.HashMapDefault, true) {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(g)
		b.Write(k)
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(c.groups[g], 10))
	}
	b.WriteByte('}')
	return b.String()
}

// updateColdDataFlowCtrConfig is UPDATE_COLD_DATA_FLOW_CTR_CONFIG (2001):
// a properties body group=threshold; entries whose threshold is not a
// number are skipped (Apache logs them).
func (m *Maintenance) updateColdDataFlowCtrConfig(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if req.Body != nil {
		props, err := pcfg.ParseProperties(req.Body)
		if err != nil {
			return remoting.NewResponse(req, code.SystemError, coldCtrPropertiesErr), nil
		}
		keys := slices.Sorted(maps.Keys(props))
		for _, k := range keys {
			v, err := strconv.ParseInt(strings.TrimSpace(props[k]), 10, 64)
			if err != nil {
				m.log.Error("updateColdDataFlowCtrGroupConfig: threshold is not a number", "group", k, "value", props[k])
				continue
			}
			m.cold.put(k, v)
		}
		m.log.Info("updateColdDataFlowCtrGroupConfig", "groups", keys, "remote", processor.RemoteAddr(ch))
	}
	return ok(req), nil
}

// removeColdDataFlowCtrConfig is REMOVE_COLD_DATA_FLOW_CTR_CONFIG (2002):
// the body is the group.
func (m *Maintenance) removeColdDataFlowCtrConfig(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if req.Body != nil {
		m.cold.remove(string(req.Body))
		m.log.Info("removeColdDataFlowCtrGroupConfig", "group", string(req.Body), "remote", processor.RemoteAddr(ch))
	}
	return ok(req), nil
}

// getColdDataFlowCtrInfo is GET_COLD_DATA_FLOW_CTR_INFO (2003): Apache's
// ColdDataCgCtrService.getColdDataFlowCtrInfo, keys in its order.
func (m *Maintenance) getColdDataFlowCtrInfo(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	cfg := m.d.Config.Get()
	body := fmt.Sprintf(`{"runtimeTable":{},"configTable":%s,"cgColdReadThreshold":%d,"globalColdReadThreshold":%d,"globalAcc":0}`,
		m.cold.configJSON(), cfg.CgColdReadThreshold, cfg.GlobalColdReadThreshold)
	resp := ok(req)
	resp.Body = []byte(body)
	return resp, nil
}
