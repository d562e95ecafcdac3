package pop

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/internal/fsutil"
	pkgclient "github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Message request modes (Java's MessageRequestMode).
const (
	ModePull = "PULL"
	ModePop  = "POP"
)

// Allocation strategies QUERY_ASSIGNMENT knows (their getName()).
const (
	StrategyAveragely         = "AVG"
	StrategyAveragelyByCircle = "AVG_BY_CIRCLE"
)

// RequestMode is SetMessageRequestModeRequestBody.
type RequestMode struct {
	ConsumerGroup    string `json:"consumerGroup"`
	Mode             string `json:"mode"`
	PopShareQueueNum int    `json:"popShareQueueNum"`
	Topic            string `json:"topic"`
}

// modeTable is Java's MessageRequestModeManager: per topic and group, pull
// or pop, persisted as messageRequestMode.json.
type modeTable struct {
	path string
	mu   sync.Mutex
	m    map[string]map[string]RequestMode // topic → group → mode
}

// RequestModeFileName is the file under the broker's config directory.
const RequestModeFileName = "messageRequestMode.json"

func loadModeTable(path string) (*modeTable, error) {
	t := &modeTable{path: path, m: map[string]map[string]RequestMode{}}
	if path == "" {
		return t, nil
	}
	var f ModeWrapper
	data, _, err := fsutil.ReadWithBackup(path, func(b []byte) error { return json.Unmarshal(b, &f) })
	if err != nil {
		return nil, fmt.Errorf("pop: request modes: %w", err)
	}
	if data != nil && f.MessageRequestModeMap != nil {
		t.m = f.MessageRequestModeMap
	}
	return t, nil
}

func (t *modeTable) get(topic, group string) (RequestMode, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m, ok := t.m[topic][group]
	return m, ok
}

func (t *modeTable) set(m RequestMode) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m[m.Topic] == nil {
		t.m[m.Topic] = map[string]RequestMode{}
	}
	t.m[m.Topic][m.ConsumerGroup] = m
	return t.persistLocked()
}

// persistLocked writes the table; t.mu must be held.
func (t *modeTable) persistLocked() error {
	if t.path == "" {
		return nil
	}
	b, err := json.Marshal(ModeWrapper{MessageRequestModeMap: t.m})
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(t.path, b, true)
}

// snapshot copies the table.
func (t *modeTable) snapshot() map[string]map[string]RequestMode {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]map[string]RequestMode, len(t.m))
	for topic, groups := range t.m {
		out[topic] = maps.Clone(groups)
	}
	return out
}

// replace swaps in a whole table (a slave's copy of its master's) and
// persists it.
func (t *modeTable) replace(m map[string]map[string]RequestMode) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m = make(map[string]map[string]RequestMode, len(m))
	for topic, groups := range m {
		t.m[topic] = maps.Clone(groups)
	}
	return t.persistLocked()
}

// ModeWrapper is Java's MessageRequestModeSerializeWrapper, the body of
// GET_ALL_MESSAGE_REQUEST_MODE (and the layout of messageRequestMode.json).
type ModeWrapper struct {
	MessageRequestModeMap map[string]map[string]RequestMode `json:"messageRequestModeMap"`
}

// RequestModes returns every SET_MESSAGE_REQUEST_MODE setting, topic →
// group → mode.
func (p *Processor) RequestModes() map[string]map[string]RequestMode { return p.modes.snapshot() }

// ReplaceRequestModes replaces every setting with m and persists them: a
// slave keeps its master's copy (org/apache/rocketmq/broker/slave/SlaveSynchronize.java
// syncMessageRequestMode).
func (p *Processor) ReplaceRequestModes(m map[string]map[string]RequestMode) error {
	return p.modes.replace(m)
}

// handleGetAllRequestModes answers GET_ALL_MESSAGE_REQUEST_MODE (402): what
// a slave copies from its master.
func (p *Processor) handleGetAllRequestModes(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	return processor.Reply(req, "message request modes", ModeWrapper{MessageRequestModeMap: p.modes.snapshot()})
}

// handleSetRequestMode answers SET_MESSAGE_REQUEST_MODE (401).
func (p *Processor) handleSetRequestMode(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var m RequestMode
	if err := protocol.Unmarshal(req.Body, &m); err != nil || m.Topic == "" || m.ConsumerGroup == "" {
		return nil, processor.BadRequestf("bad SetMessageRequestModeRequestBody: %v", err)
	}
	if err := checkNames(m.ConsumerGroup, m.Topic); err != nil {
		return nil, err
	}
	switch m.Mode {
	case "":
		m.Mode = ModePull
	case ModePull, ModePop:
	default:
		return nil, processor.BadRequestf("unknown message request mode %q", m.Mode)
	}
	if strings.HasPrefix(m.Topic, protocol.RetryGroupTopicPrefix) {
		return nil, errorf(code.NoPermission, "retry topic is not allowed to set mode")
	}
	if _, ok := p.d.Topics.Get(m.Topic); !ok {
		return nil, errorf(code.TopicNotExist, "topic[%s] not exist", m.Topic)
	}
	if _, ok := p.d.Groups.FindOrCreate(m.ConsumerGroup); !ok {
		return nil, errorf(code.SubscriptionGroupNotExist, "subscription group does not exist")
	}
	if err := p.modes.set(m); err != nil {
		return nil, errorf(code.SystemError, "persist message request mode: %v", err)
	}
	return remoting.NewResponse(req, code.Success, ""), nil
}

// assignmentRequest is QueryAssignmentRequestBody.
type assignmentRequest struct {
	ClientID      string `json:"clientId"`
	ConsumerGroup string `json:"consumerGroup"`
	MessageModel  string `json:"messageModel"`
	StrategyName  string `json:"strategyName"`
	Topic         string `json:"topic"`
}

type assignment struct {
	MessageQueue protocol.MessageQueue `json:"messageQueue"`
	Mode         string                `json:"mode"`
}

type assignmentResponse struct {
	MessageQueueAssignments []assignment `json:"messageQueueAssignments,omitempty"`
}

// routeTimeout bounds the nameserver lookup of QUERY_ASSIGNMENT.
const routeTimeout = 3 * time.Second

// handleQueryAssignment answers QUERY_ASSIGNMENT (400): the queues of the
// topic (all brokers) allocated to the client, with the group's request
// mode. Pop mode gives every client every queue as queueId −1 unless
// popShareQueueNum says otherwise (Java's allocate4Pop). A missing
// messageQueueAssignments (null in Java) tells the client to keep its
// current assignment.
func (p *Processor) handleQueryAssignment(ctx context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var q assignmentRequest
	if err := protocol.Unmarshal(req.Body, &q); err != nil || q.Topic == "" || q.ConsumerGroup == "" {
		return nil, processor.BadRequestf("bad QueryAssignmentRequestBody: %v", err)
	}
	mode, ok := p.modes.get(q.Topic, q.ConsumerGroup)
	if !ok {
		mode = RequestMode{Topic: q.Topic, ConsumerGroup: q.ConsumerGroup, Mode: ModePull}
		if cfg := p.d.Config(); !strings.HasPrefix(q.Topic, protocol.RetryGroupTopicPrefix) && strings.EqualFold(cfg.DefaultMessageRequestMode, ModePop) {
			mode.Mode, mode.PopShareQueueNum = ModePop, cfg.DefaultPopShareQueueNum
		}
	}
	queues := p.assign(ctx, q, mode)
	var out assignmentResponse
	if queues != nil {
		out.MessageQueueAssignments = []assignment{}
		for _, mq := range queues {
			out.MessageQueueAssignments = append(out.MessageQueueAssignments, assignment{MessageQueue: mq, Mode: mode.Mode})
		}
	}
	return processor.Reply(req, "queue assignment", out)
}

// assign is Java's doLoadBalance; nil means "no answer".
func (p *Processor) assign(ctx context.Context, q assignmentRequest, mode RequestMode) []protocol.MessageQueue {
	all := p.subscribeQueues(ctx, q.Topic)
	if all == nil {
		return nil
	}
	if q.MessageModel == "BROADCASTING" {
		return all
	}
	if !p.d.Config().ServerLoadBalancerEnable {
		return all
	}
	cids := p.d.Consumers.ClientIDs(q.ConsumerGroup)
	if len(cids) == 0 {
		return nil
	}
	slices.Sort(cids)
	var alloc pkgclient.AllocateStrategy
	switch q.StrategyName {
	case StrategyAveragely:
		// The client's own AVG strategy (Java's QueryAssignmentProcessor
		// uses the client's AllocateMessageQueueAveragely too): a group
		// split here matches one split by rebalancing clients.
		alloc = pkgclient.AllocateAveragely
	case StrategyAveragelyByCircle:
		alloc = allocateByCircle
	default:
		p.log.Warn("query assignment: unsupported strategy", "strategy", q.StrategyName, "group", q.ConsumerGroup)
		return nil
	}
	if mode.Mode != ModePop {
		return orEmpty(alloc(all, cids, q.ClientID))
	}
	n := mode.PopShareQueueNum
	if n <= 0 || n >= len(cids)-1 {
		out := make([]protocol.MessageQueue, 0, len(all))
		seen := map[string]bool{}
		for _, mq := range all {
			if !seen[mq.BrokerName] {
				seen[mq.BrokerName] = true
				out = append(out, protocol.MessageQueue{Topic: mq.Topic, BrokerName: mq.BrokerName, QueueID: -1})
			}
		}
		return out
	}
	if len(cids) > len(all) {
		// Every client gets one queue, sharing when there are fewer queues.
		i := slices.Index(cids, q.ClientID)
		if i < 0 {
			return []protocol.MessageQueue{}
		}
		return []protocol.MessageQueue{all[i%len(all)]}
	}
	out := alloc(all, cids, q.ClientID)
	if i := slices.Index(cids, q.ClientID); i >= 0 {
		for k := 1; k <= n; k++ {
			out = append(out, alloc(all, cids, cids[(i+k)%len(cids)])...)
		}
	}
	return orEmpty(out)
}

func orEmpty(q []protocol.MessageQueue) []protocol.MessageQueue {
	if q == nil {
		return []protocol.MessageQueue{}
	}
	return q
}

// subscribeQueues lists the topic's readable queues on every broker of
// its route, sorted (topic, broker, id); without a route, this broker's.
func (p *Processor) subscribeQueues(ctx context.Context, topic string) []protocol.MessageQueue {
	var out []protocol.MessageQueue
	if p.d.Routes != nil {
		rctx, cancel := context.WithTimeout(ctx, routeTimeout)
		rd, err := p.d.Routes(rctx, topic)
		cancel()
		if err == nil && rd != nil {
			for _, qd := range rd.QueueDatas {
				if qd.Perm&protocol.PermRead == 0 {
					continue
				}
				for i := 0; i < qd.ReadQueueNums; i++ {
					out = append(out, protocol.MessageQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: i})
				}
			}
			protocol.SortMessageQueues(out)
			return out
		}
		p.log.Debug("query assignment: route lookup failed, assigning local queues", "topic", topic, "err", err)
	}
	tc, ok := p.d.Topics.Get(topic)
	if !ok {
		return nil
	}
	if tc.Perm&protocol.PermRead != 0 {
		for i := 0; i < tc.ReadQueueNums; i++ {
			out = append(out, protocol.MessageQueue{Topic: topic, BrokerName: p.d.Config().BrokerName, QueueID: i})
		}
	}
	return orEmpty(out)
}

// allocateByCircle is Java's AllocateMessageQueueAveragelyByCircle.
func allocateByCircle(all []protocol.MessageQueue, cids []string, self string) []protocol.MessageQueue {
	index := slices.Index(cids, self)
	if index < 0 {
		return nil
	}
	var out []protocol.MessageQueue
	for i := index; i < len(all); i += len(cids) {
		out = append(out, all[i])
	}
	return out
}
