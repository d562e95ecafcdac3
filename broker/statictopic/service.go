package statictopic

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/longpoll"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/store/consumequeue"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Header fields of static-topic requests (Java's RpcRequestHeader and
// TopicRequestHeader).
const (
	// FieldLogic is "lo": absent or true for client requests; a forwarded
	// (physical) request carries lo=false and is served without mapping.
	FieldLogic = "lo"
	// FieldBrokerName is "bname": the broker a forwarded request is for.
	// Client requests may carry it too (physical or mock name); it is
	// ignored on the receiving side.
	FieldBrokerName = "bname"
)

// Store is the part of the message store the rewriting reads.
type Store interface {
	MaxOffset(topic string, queueID int32) int64
	MinOffset(topic string, queueID int32) int64
	SearchOffsetByTime(topic string, queueID int32, ts int64, boundary consumequeue.BoundaryType) (int64, error)
	EarliestMessageTime(topic string, queueID int32) int64
	CommitOffset(group, topic string, queueID int32, offset int64)
	QueryOffset(group, topic string, queueID int32) (int64, bool)
}

// Topics is the part of the topic table request 513 needs
// (*topic.Manager implements it).
type Topics interface {
	Update(list ...protocol.TopicConfig) ([]string, error)
	IsSystemTopic(name string) bool
}

// Deps are the Service's collaborators. Config, Mappings and Store are
// required; without Remote every read of another broker's segment fails;
// without Topics request 513 is refused.
type Deps struct {
	Config   func() *config.Config
	Mappings *Manager
	Store    Store
	Topics   Topics
	Remote   Remote
	// Registered runs after request 513 changed the table, before the
	// answer (the broker registers with the nameservers at once, as Java).
	Registered func(ctx context.Context)
	// Updated runs after request 513 stored a new mapping of topic (the
	// clean service settles backups once the admin operation is over).
	Updated func(topic string)
	// Hold tunes long polling of static pulls (parked on the physical
	// queue, re-run through the rewriting).
	Hold   longpoll.Config
	Now    func() time.Time
	Logger *slog.Logger
}

// Service rewrites requests about logic queues (docs/static-topics.md §7).
type Service struct {
	d    Deps
	log  *slog.Logger
	me   string
	hold *longpoll.Service
	// inner holds the wrapped handlers by code (resumed pulls need the
	// pull handler).
	inner map[int32]remoting.Handler
}

// New validates d.
func New(d Deps) (*Service, error) {
	if d.Config == nil || d.Mappings == nil || d.Store == nil {
		return nil, errors.New("statictopic: Deps.Config, Mappings and Store are required")
	}
	defaults.Clock(&d.Now)
	defaults.Logger(&d.Logger)
	s := &Service{d: d, log: d.Logger, me: d.Mappings.BrokerName(), inner: map[int32]remoting.Handler{}}
	hc := d.Hold
	defaults.Positive(&hc.Workers, 2)
	defaults.Positive(&hc.QueueSize, 1024)
	if hc.Now == nil {
		hc.Now = d.Now
	}
	if hc.Logger == nil {
		hc.Logger = d.Logger
	}
	s.hold = longpoll.New(hc, s.resume, func(topic string, qid int32) int64 { return d.Store.MaxOffset(topic, qid) })
	return s, nil
}

// Start runs long polling of static pulls.
func (s *Service) Start() { s.hold.Start() }

// Close answers parked static pulls and stops long polling.
func (s *Service) Close() {
	s.hold.Drain()
	s.hold.Close()
}

// OnArrival is the store arrival listener that wakes parked static pulls;
// it costs one atomic load while no topic is static.
func (s *Service) OnArrival(topic string, queueID int32, queueOffset int64, tagsCode int64, storeTime int64) {
	if s.d.Mappings.Len() == 0 {
		return
	}
	s.hold.OnArrival(topic, queueID, queueOffset, tagsCode, storeTime)
}

// Wrapper replaces a registered handler (the broker's WrapProcessor).
type Wrapper interface {
	WrapProcessor(code int32, wrap func(remoting.Handler) remoting.Handler) bool
}

// WrappedCodes are the request codes Wrap rewrites.
var WrappedCodes = []int32{
	code.SendMessage, code.SendMessageV2, code.SendBatchMessage,
	code.PullMessage, code.LitePullMessage,
	code.QueryConsumerOffset, code.UpdateConsumerOffset,
	code.GetMaxOffset, code.GetMinOffset, code.SearchOffsetByTimestamp, code.GetEarliestMsgStoreTime,
	code.GetConsumeStats,
}

// Wrap puts the rewriting in front of the registered handlers of
// WrappedCodes; it returns the codes that had no handler.
func (s *Service) Wrap(w Wrapper) []int32 {
	var missing []int32
	for _, c := range WrappedCodes {
		if !w.WrapProcessor(c, func(h remoting.Handler) remoting.Handler { return s.Handler(c, h) }) {
			missing = append(missing, c)
		}
	}
	return missing
}

// Handler returns the rewriting handler of one code in front of inner
// (inner itself for codes that need none).
func (s *Service) Handler(c int32, inner remoting.Handler) remoting.Handler {
	s.inner[c] = inner
	switch c {
	case code.SendMessage:
		return s.send(inner, false)
	case code.SendMessageV2, code.SendBatchMessage:
		return s.send(inner, true)
	case code.PullMessage, code.LitePullMessage:
		return s.pull(inner)
	case code.QueryConsumerOffset:
		return s.queryConsumerOffset(inner)
	case code.UpdateConsumerOffset:
		return s.updateConsumerOffset(inner)
	case code.GetMaxOffset:
		return s.getMaxOffset(inner)
	case code.GetMinOffset:
		return s.getMinOffset(inner)
	case code.SearchOffsetByTimestamp:
		return s.searchOffsetByTimestamp(inner)
	case code.GetEarliestMsgStoreTime:
		return s.getEarliestMsgStoreTime(inner)
	case code.GetConsumeStats:
		return s.getConsumeStats(inner)
	}
	return inner
}

// physicalRequest reports a forwarded request (lo=false): no mapping.
func physicalRequest(req *remoting.Command) bool {
	return strings.EqualFold(strings.TrimSpace(req.Ext(FieldLogic)), "false")
}

// mapped returns the topic's detail unless the request is physical or the
// topic is not static.
func (s *Service) mapped(req *remoting.Command, topicKey string) *protocol.TopicQueueMappingDetail {
	if physicalRequest(req) {
		return nil
	}
	return s.d.Mappings.lookup(req.Ext(topicKey))
}

// queueCtx is the mapping context of one logic queue (§7.0).
type queueCtx struct {
	topic   string
	logicID int32
	items   []item
	leader  *item
}

// queue builds the context of a logic queue; the error is
// NOT_LEADER_FOR_QUEUE when this broker does not lead it.
func (s *Service) queue(d *protocol.TopicQueueMappingDetail, logicID int32) (queueCtx, error) {
	qc := queueCtx{topic: d.Topic, logicID: logicID}
	if logicID >= 0 {
		qc.items = d.HostedQueues[int(logicID)]
		qc.leader = leaderOf(qc.items)
	}
	if qc.leader == nil || qc.leader.Bname != s.me || d.Bname != s.me {
		return qc, remoting.Errorf(code.NotLeaderForQueue, "logic queue %s-%d is not led by broker %s, refresh the route", d.Topic, logicID, s.me)
	}
	return qc, nil
}

// ledQueue picks a logic queue this broker leads (send without a queue id).
func (s *Service) ledQueue(d *protocol.TopicQueueMappingDetail) int32 {
	for _, g := range slices.Sorted(maps.Keys(d.HostedQueues)) {
		if l := leaderOf(d.HostedQueues[g]); l != nil && l.Bname == s.me {
			return int32(g)
		}
	}
	return -1
}

// rewritten copies req with replaced header fields; the original stays
// intact (a parked pull is re-run from it).
func rewritten(req *remoting.Command, set map[string]string) *remoting.Command {
	c := *req
	c.ExtFields = cloneExt(req.Fields())
	for k, v := range set {
		c.ExtFields[k] = v
	}
	return &c
}

// forwardReq builds a physical request for broker bname from req.
func forwardReq(req *remoting.Command, bname string, set map[string]string) *remoting.Command {
	ext := cloneExt(req.Fields())
	for k, v := range set {
		ext[k] = v
	}
	ext[FieldLogic] = "false"
	ext[FieldBrokerName] = bname
	return remoting.NewRequest(req.Code, ext, req.Body)
}

// forward sends a physical request to bname; a transport failure becomes
// SYSTEM_ERROR.
func (s *Service) forward(ctx context.Context, req *remoting.Command, bname string, set map[string]string) (*remoting.Command, error) {
	if s.d.Remote == nil {
		return nil, remoting.Errorf(code.SystemError, "cannot reach broker %s: no broker-to-broker client", bname)
	}
	resp, err := s.d.Remote.Invoke(ctx, bname, forwardReq(req, bname, set))
	if err != nil {
		return nil, processor.KeepCode(err, code.SystemError, "%v", err)
	}
	return resp, nil
}

// remoteOffset forwards an offset request and reads the answer's field.
func (s *Service) remoteOffset(ctx context.Context, req *remoting.Command, it *item, set map[string]string, field string) (int64, error) {
	if set == nil {
		set = map[string]string{}
	}
	set["queueId"] = strconv.Itoa(it.QueueID)
	resp, err := s.forward(ctx, req, it.Bname, set)
	if err != nil {
		return 0, err
	}
	if resp.Code != code.Success {
		return 0, remoting.Errorf(code.SystemError, "broker %s answered %d: %s", it.Bname, resp.Code, resp.Remark)
	}
	v, err := strconv.ParseInt(resp.Ext(field), 10, 64)
	if err != nil {
		return 0, remoting.Errorf(code.SystemError, "broker %s answered a bad %s %q", it.Bname, field, resp.Ext(field))
	}
	return v, nil
}

func offsetResponse(req *remoting.Command, key string, v int64) *remoting.Command {
	resp := remoting.NewResponse(req, code.Success, "")
	resp.SetExt(key, strconv.FormatInt(v, 10))
	return resp
}
