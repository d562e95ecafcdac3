package pop

import (
	"cmp"
	"context"
	"github.com/rmqgo/rmq/broker/pop/popcodec"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// GET_POP_STATUS (code.GetPopStatus, an rmq-go extension): what mqadmin
// popStatus shows. Apache RocketMQ offers no way to see pop state; here it
// is read from the checkpoints, order infos and pop-offset shadows in
// Pebble, the consumer offsets and the revive service's counters.

// Status limits.
const (
	// DefaultStatusQueues caps the per-queue rows of a detailed status.
	DefaultStatusQueues = 1000
	maxStatusQueues     = 100_000
)

// StatusRequest selects what Status reports.
type StatusRequest struct {
	Group  string // "" = every group
	Topic  string // the consumed topic; "" = every topic
	Detail bool   // per-queue rows
	// MaxQueues caps the per-queue rows (0: DefaultStatusQueues).
	MaxQueues int
}

// statusKey is one reported (group, consumed topic).
type statusKey struct{ group, topic string }

// queueRef is one queue of a group's report: of the consumed topic or of
// one of its pop retry topics.
type queueRef struct {
	topic string
	qid   int32
}

type groupAcc struct {
	st     protocol.PopGroupStatus
	queues map[queueRef]*protocol.PopQueueStatus
	// oldestDue is the earliest due time of its overdue checkpoints.
	oldestDue int64
}

func (g *groupAcc) queue(topic string, qid int32) *protocol.PopQueueStatus {
	k := queueRef{topic, qid}
	q := g.queues[k]
	if q == nil {
		q = &protocol.PopQueueStatus{Topic: topic, QueueID: qid, PopOffset: -1, Retry: topic != g.st.Topic}
		g.queues[k] = q
	}
	return q
}

func minPositive(a, b int64) int64 {
	if a <= 0 {
		return b
	}
	if b <= 0 {
		return a
	}
	return min(a, b)
}

// statusScan collects the state of the groups matching the request.
type statusScan struct {
	p      *Processor
	req    StatusRequest
	now    int64
	groups map[statusKey]*groupAcc
}

// consumed maps a stored topic (maybe a pop retry topic of group) to the
// topic the group consumes.
func consumed(storedTopic, group string) string {
	if t, ok := popcodec.ParseRetryTopic(storedTopic, group); ok {
		return t
	}
	return storedTopic
}

// acc returns the accumulator of (group, topic), nil when filtered out.
func (s *statusScan) acc(group, topic string) *groupAcc {
	if s.req.Group != "" && group != s.req.Group {
		return nil
	}
	if s.req.Topic != "" && topic != s.req.Topic {
		return nil
	}
	k := statusKey{group, topic}
	g := s.groups[k]
	if g == nil {
		g = &groupAcc{st: protocol.PopGroupStatus{Group: group, Topic: topic}, queues: map[queueRef]*protocol.PopQueueStatus{}}
		s.groups[k] = g
	}
	return g
}

// iterOptions bounds a scan of table tab to the requested group.
func (s *statusScan) iterOptions(tab byte) *pebble.IterOptions {
	if s.req.Group == "" {
		return prefixIter(tab)
	}
	lo := append(tablePrefix(tab), s.req.Group...)
	lo = append(lo, 0)
	return &pebble.IterOptions{LowerBound: lo, UpperBound: endOf(lo)}
}

// scan calls row with the key (past its table prefix) and the value of
// every row of table tab the request covers.
func (s *statusScan) scan(db *pebble.DB, tab byte, row func(key, value []byte)) error {
	it, err := db.NewIter(s.iterOptions(tab))
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		row(it.Key()[2:], it.Value())
	}
	return it.Error()
}

// unacked counts n messages of queue q popped and not acked, overdue of
// them past their invisible time, the oldest popped at popTime.
func (g *groupAcc) unacked(q *protocol.PopQueueStatus, n, overdue, popTime int64) {
	g.st.InFlight += n
	q.InFlight += n
	g.st.Overdue += overdue
	q.Overdue += overdue
	g.st.OldestPopTime = minPositive(g.st.OldestPopTime, popTime)
	q.OldestPopTime = minPositive(q.OldestPopTime, popTime)
}

func (s *statusScan) checkpoints(db *pebble.DB) error {
	return s.scan(db, tabCheckpoint, func(key, value []byte) {
		id, ok := parseIDTail(key)
		if !ok {
			return
		}
		ck, err := decodeCK(id, value)
		if err != nil {
			s.p.log.Warn("pop status: skip undecodable checkpoint", "group", id.Group, "topic", id.Topic, "queue", id.QueueID, "err", err)
			return
		}
		n := int64(ck.inFlight())
		g := s.acc(id.Group, consumed(id.Topic, id.Group))
		if g == nil || n == 0 {
			return
		}
		q := g.queue(id.Topic, id.QueueID)
		g.st.Checkpoints++
		q.Checkpoints++
		var overdue int64
		if ck.Due <= s.now {
			overdue = n
			g.oldestDue = minPositive(g.oldestDue, ck.Due)
		}
		g.unacked(q, n, overdue, ck.PopTime)
		if ck.Tries > 0 {
			g.st.ReviveFailing++
		}
	})
}

func (s *statusScan) orders(db *pebble.DB) error {
	return s.scan(db, tabOrder, func(key, value []byte) {
		group, topic, qid, ok := parseQueueTail(key)
		if !ok {
			return
		}
		info, err := decodeOrder(value)
		if err != nil {
			s.p.log.Warn("pop status: skip undecodable order info", "group", group, "topic", topic, "queue", qid, "err", err)
			return
		}
		g := s.acc(group, consumed(topic, group))
		if g == nil {
			return
		}
		q := g.queue(topic, qid)
		q.Orderly = true
		var unacked, overdue int64
		for i, off := range info.Offsets {
			if info.acked(i) {
				continue
			}
			unacked++
			next := info.PopTime + info.InvisibleTime
			if t, ok := info.NextVisible[off]; ok {
				next = t
			}
			if next <= s.now {
				overdue++
			}
		}
		if unacked > 0 {
			g.unacked(q, unacked, overdue, info.PopTime)
		}
		if until := info.freeAt(s.now); until > 0 {
			q.Blocked, q.BlockedUntil = true, until
			g.st.BlockedQueues++
		}
	})
}

// shadows adds the queues popped since the broker started (their pop
// offsets are recorded with the journal) so that groups with nothing in
// flight are reported too.
func (s *statusScan) shadows(db *pebble.DB) error {
	return s.scan(db, tabShadow, func(key, _ []byte) {
		group, topic, qid, ok := parseQueueTail(key)
		if !ok {
			return
		}
		if g := s.acc(group, consumed(topic, group)); g != nil {
			g.queue(topic, qid)
		}
	})
}

func (s *statusScan) offsets(g *groupAcc) {
	p := s.p
	for _, t := range []string{g.st.Topic, popcodec.RetryTopicV1(g.st.Topic, g.st.Group), popcodec.RetryTopicV2(g.st.Topic, g.st.Group)} {
		if tc, ok := p.d.Topics.Get(t); ok {
			for i := range tc.ReadQueueNums {
				g.queue(t, int32(i))
			}
		}
	}
	for _, q := range g.queues {
		q.MaxOffset = max(p.st.MaxOffset(q.Topic, q.QueueID), 0)
		off, ok := p.st.QueryOffset(g.st.Group, q.Topic, q.QueueID)
		switch {
		case ok && off >= 0:
			q.PopOffset = off
		case q.Retry:
			off = max(p.st.MinOffset(q.Topic, q.QueueID), 0) // a retry topic is popped from its start
		default:
			continue // where the group starts depends on its init mode
		}
		rest := max(q.MaxOffset-off, 0)
		if q.Retry {
			g.st.RetryBacklog += rest
		} else {
			g.st.Backlog += rest
		}
	}
}

// Status reads the pop state of the groups matching req.
func (p *Processor) Status(req StatusRequest) (protocol.PopStatusBody, error) {
	now := p.d.Now().UnixMilli()
	if req.MaxQueues <= 0 {
		req.MaxQueues = DefaultStatusQueues
	}
	s := &statusScan{p: p, req: req, now: now, groups: map[statusKey]*groupAcc{}}
	db := p.st.DB()
	for _, f := range []func(*pebble.DB) error{s.checkpoints, s.orders, s.shadows} {
		if err := f(db); err != nil {
			return protocol.PopStatusBody{}, err
		}
	}
	if req.Group != "" && req.Topic != "" {
		s.acc(req.Group, req.Topic) // asked for: reported even when idle
	}
	out := protocol.PopStatusBody{BrokerName: p.d.Config().BrokerName, Now: now, Groups: []protocol.PopGroupStatus{}}
	keys := make([]statusKey, 0, len(s.groups))
	for k := range s.groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b statusKey) int {
		return cmp.Or(cmp.Compare(a.group, b.group), cmp.Compare(a.topic, b.topic))
	})
	rows := 0
	suspended := countBy(p.pops, func(k pollKey) statusKey { return statusKey{k.group, k.topic} })
	for _, k := range keys {
		g := s.groups[k]
		s.offsets(g)
		g.st.SuspendedPops = suspended[k]
		if g.oldestDue > 0 {
			g.st.ReviveLagMillis = max(now-g.oldestDue, 0)
		}
		if req.Detail {
			qs := make([]protocol.PopQueueStatus, 0, len(g.queues))
			for _, q := range g.queues {
				qs = append(qs, *q)
			}
			slices.SortFunc(qs, func(a, b protocol.PopQueueStatus) int {
				return cmp.Or(compareBool(a.Retry, b.Retry), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.QueueID, b.QueueID))
			})
			if rows+len(qs) > req.MaxQueues {
				qs = qs[:max(req.MaxQueues-rows, 0)]
				out.Truncated = true
			}
			rows += len(qs)
			if len(qs) > 0 {
				g.st.Queues = qs
			}
		}
		out.Groups = append(out.Groups, g.st)
		t := &out.Totals
		t.Groups++
		t.InFlight += g.st.InFlight
		t.Overdue += g.st.Overdue
		t.Checkpoints += g.st.Checkpoints
		t.BlockedQueues += g.st.BlockedQueues
		t.OldestPopTime = minPositive(t.OldestPopTime, g.st.OldestPopTime)
	}
	out.Totals.SuspendedPops = p.pops.size()
	out.Totals.SuspendedNotifications = p.notices.size()
	rv, err := p.reviveStatus(now)
	if err != nil {
		return protocol.PopStatusBody{}, err
	}
	out.Revive = rv
	return out, nil
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// reviveStatus reads the revive index (keys only) and the journal
// positions.
func (p *Processor) reviveStatus(now int64) (protocol.PopReviveStatus, error) {
	r := p.revive
	out := protocol.PopReviveStatus{
		Topic:          p.j.topic,
		Revived:        r.revived.Load(),
		DeadLettered:   r.dlq.Load(),
		Failed:         r.failed.Load(),
		LastRoundTime:  r.lastRound.Load(),
		LastRoundCount: r.lastCount.Load(),
		Queues:         []protocol.PopReviveQueue{},
	}
	db := p.st.DB()
	it, err := db.NewIter(prefixIter(tabDue))
	if err != nil {
		return out, err
	}
	for it.First(); it.Valid(); it.Next() {
		due, _, ok := parseDueKey(it.Key())
		if !ok {
			continue
		}
		if out.Checkpoints == 0 {
			out.OldestDue = due // the index is sorted by due time
		}
		out.Checkpoints++
		if due <= now {
			out.Overdue++
		}
	}
	if err := it.Close(); err != nil {
		return out, err
	}
	if out.OldestDue > 0 && out.OldestDue <= now {
		out.LagMillis = now - out.OldestDue
	}
	for _, q := range p.st.Queues(p.j.topic) {
		rq := protocol.PopReviveQueue{QueueID: q, MaxOffset: max(p.st.MaxOffset(p.j.topic, q), 0)}
		v, ok, err := getValue(db, journalPosKey(p.j.topic, q))
		if err != nil {
			return out, err
		}
		if ok {
			rq.Applied, _ = readU64(v)
		}
		out.Queues = append(out.Queues, rq)
	}
	slices.SortFunc(out.Queues, func(a, b protocol.PopReviveQueue) int { return cmp.Compare(a.QueueID, b.QueueID) })
	return out, nil
}

// parseStatusRequest reads the GET_POP_STATUS header.
func parseStatusRequest(ext map[string]string) (StatusRequest, error) {
	f := protocol.FieldsOf(ext)
	r := StatusRequest{
		Group:     f.OptStr(protocol.PopStatusFieldGroup, ""),
		Topic:     f.OptStr(protocol.PopStatusFieldTopic, ""),
		Detail:    f.OptBool(protocol.PopStatusFieldDetail, false),
		MaxQueues: int(f.OptInt32(protocol.PopStatusFieldMaxQueues, 0)),
	}
	if err := f.Err(); err != nil {
		return r, processor.BadRequestf("%v", err)
	}
	if r.Group != "" {
		if err := checkName("consumerGroup", r.Group); err != nil {
			return r, processor.BadRequestf("%v", err)
		}
	}
	if r.Topic != "" {
		if err := checkName("topic", r.Topic); err != nil {
			return r, processor.BadRequestf("%v", err)
		}
	}
	if r.MaxQueues < 0 || r.MaxQueues > maxStatusQueues {
		return r, processor.BadRequestf("maxQueues %d out of range [0, %d]", r.MaxQueues, maxStatusQueues)
	}
	return r, nil
}

// handleStatus answers GET_POP_STATUS.
func (p *Processor) handleStatus(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	r, err := parseStatusRequest(req.ExtFields)
	if err != nil {
		return nil, err
	}
	st, err := p.Status(r)
	if err != nil {
		return nil, errorf(code.SystemError, "read pop state: %v", err)
	}
	return processor.Reply(req, "pop status", st)
}
