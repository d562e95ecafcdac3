package statictopic

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/internal/loop"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// DefaultCleanInterval is how often the clean service runs (Java: 5 min).
const DefaultCleanInterval = 5 * time.Minute

// DefaultSettleDelay is how long after the last request 513 for a topic the
// stale backups are examined (Settle): an admin operation sends its 513
// requests within a second or so.
const DefaultSettleDelay = 2 * time.Second

// CleanDeps are the clean service's collaborators; Mappings and Store are
// required. Without Remote and Routes only local segments are examined.
type CleanDeps struct {
	Mappings *Manager
	Store    Store
	Remote   Remote
	Routes   RouteSource
	// DeleteWhen is the store's deleteWhen ("04", "04;05"): the service
	// does its work only during those hours, like the CommitLog cleanup.
	// nil: every run works.
	DeleteWhen func() string
	// Interval between runs; 0 means DefaultCleanInterval.
	Interval time.Duration
	// SettleDelay is the quiet time after Settle before stale backups are
	// dropped; 0 means DefaultSettleDelay.
	SettleDelay time.Duration
	// Changed runs after the table changed (the broker re-registers).
	Changed func()
	Now     func() time.Time
	Logger  *slog.Logger
}

// CleanService drops mapping items whose physical queue holds no data any
// more (on the leader) and backup lists at least two generations old (on
// former leaders) — Java's TopicQueueMappingCleanService (§10).
type CleanService struct {
	d   CleanDeps
	log *slog.Logger
	me  string

	mu      sync.Mutex
	started bool
	wake    chan struct{}
	settle  chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

// NewCleanService validates d.
func NewCleanService(d CleanDeps) (*CleanService, error) {
	if d.Mappings == nil || d.Store == nil {
		return nil, errors.New("statictopic: CleanDeps.Mappings and Store are required")
	}
	defaults.Positive(&d.Interval, DefaultCleanInterval)
	defaults.Positive(&d.SettleDelay, DefaultSettleDelay)
	defaults.Clock(&d.Now)
	defaults.Logger(&d.Logger)
	return &CleanService{d: d, log: d.Logger, me: d.Mappings.BrokerName(), wake: make(chan struct{}, 1),
		settle: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}, nil
}

// Start runs the service every Interval.
func (c *CleanService) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return
	}
	c.started = true
	go c.loop()
}

// Wakeup asks for a run now.
func (c *CleanService) Wakeup() {
	loop.Wake(c.wake)
}

// Settle asks for CleanStaleBackups once no request 513 has arrived for
// SettleDelay, whatever the hour (the service's Deps.Updated hook).
//
// Java drops stale backups only in the deleteWhen hour. Until then the Java
// admin's remappingStaticTopic breaks on them: its step 3 scans every list
// of an old leader, also a backup two generations old whose last item still
// has logicOffset -1 (a → c, then c → b), recomputes it and copies that
// stale list into the new leader's plan, which the new leader then refuses
// ("leader differs but epoch equal"; a Java broker does the same). Such a
// backup is useless once the remap that made it stale is complete (the
// leader holds the full list), so it is dropped as soon as the cluster has
// settled under one epoch; during an operation the epochs differ and
// nothing is dropped.
func (c *CleanService) Settle(string) {
	loop.Wake(c.settle)
}

// Close stops the service and waits for a run in progress.
func (c *CleanService) Close() {
	c.mu.Lock()
	started := c.started
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	c.mu.Unlock()
	if started {
		<-c.done
	}
}

func (c *CleanService) loop() {
	defer close(c.done)
	t := time.NewTicker(c.d.Interval)
	defer t.Stop()
	ctx, cancel := loop.StopContext(c.stop)
	defer cancel()
	settle := time.NewTimer(c.d.SettleDelay)
	settle.Stop()
	defer settle.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-c.settle:
			settle.Reset(c.d.SettleDelay)
			continue
		case <-settle.C:
			c.CleanStaleBackups(ctx)
			continue
		case <-t.C:
		case <-c.wake:
		}
		c.RunOnce(ctx)
	}
}

// RunOnce runs both sub-tasks if the hour is listed in deleteWhen; it
// reports whether the table changed.
func (c *CleanService) RunOnce(ctx context.Context) bool {
	if c.d.DeleteWhen != nil && !timeToDo(c.d.DeleteWhen(), c.d.Now()) {
		return false
	}
	changed := c.CleanExpiredItems(ctx)
	if c.CleanStaleBackups(ctx) {
		changed = true
	}
	return changed
}

// timeToDo is Java's UtilAll.isItTimeToDo: the current hour is listed.
func timeToDo(when string, now time.Time) bool {
	for _, h := range strings.Split(when, ";") {
		if n, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && n == now.Hour() {
			return true
		}
	}
	return false
}

// ownDetails lists the non-empty details of this broker, sorted by topic.
func (c *CleanService) ownDetails() []*protocol.TopicQueueMappingDetail {
	t := c.d.Mappings.cur.Load()
	var out []*protocol.TopicQueueMappingDetail
	for _, topic := range slices.Sorted(maps.Keys(t.details)) {
		d := t.details[topic]
		if len(d.HostedQueues) == 0 {
			continue
		}
		if d.Bname != c.me {
			c.log.Warn("static topic mapping should not exist on this broker", "topic", topic, "bname", d.Bname)
			continue
		}
		out = append(out, d)
	}
	return out
}

// mappingEdit changes a detail under the mapping lock; it reports whether
// it changed anything.
type mappingEdit func(n *protocol.TopicQueueMappingDetail) bool

// cleanEach applies, to each of this broker's details, the edit plan
// returns for it (nil: none), and finishes the task if any edit changed
// the table.
func (c *CleanService) cleanEach(task string, plan func(d *protocol.TopicQueueMappingDetail) mappingEdit) bool {
	changed := false
	for _, d := range c.ownDetails() {
		edit := plan(d)
		if edit == nil {
			continue
		}
		ok, err := c.d.Mappings.edit(d.Topic, edit)
		if err != nil {
			c.log.Error("clean static topic mappings", "task", task, "topic", d.Topic, "err", err)
		}
		changed = changed || ok
	}
	if changed {
		c.finish(task)
	}
	return changed
}

// finish bumps the version, persists and reports a change.
func (c *CleanService) finish(what string) {
	if err := c.d.Mappings.bump(); err != nil {
		c.log.Error("bump static topic mapping version", "err", err)
	}
	if err := c.d.Mappings.Persist(); err != nil {
		c.log.Error("persist static topic mappings", "err", err)
	}
	c.log.Info("static topic mappings cleaned", "task", what)
	if c.d.Changed != nil {
		c.d.Changed()
	}
}

// CleanExpiredItems drops, from every list this broker leads, the earliest
// item when its physical queue holds no data any more (§10.1). One item per
// list and run; the leader is never removed, nor an item whose successor is
// still undecided (its messages would lose their logic offsets).
func (c *CleanService) CleanExpiredItems(ctx context.Context) bool {
	return c.cleanEach("expired items", func(d *protocol.TopicQueueMappingDetail) mappingEdit {
		return c.expiredItems(ctx, d)
	})
}

// expiredItems plans CleanExpiredItems's edit of one detail; nil when
// nothing is to drop.
func (c *CleanService) expiredItems(ctx context.Context, d *protocol.TopicQueueMappingDetail) mappingEdit {
	brokers := map[string]bool{}
	for _, items := range d.HostedQueues {
		if len(items) >= 2 && leaderOf(items).Bname == c.me {
			brokers[items[0].Bname] = true
		}
	}
	if len(brokers) == 0 {
		return nil
	}
	stats := map[string]protocol.MQMap[protocol.TopicOffset]{}
	for _, b := range slices.Sorted(maps.Keys(brokers)) {
		st, err := c.topicStats(ctx, d, b)
		if err != nil {
			c.log.Warn("get topic stats for static topic clean", "topic", d.Topic, "broker", b, "err", err)
			continue
		}
		stats[b] = st
	}
	drop := map[int]int{} // logic queue → gen of the item to drop
	for g, items := range d.HostedQueues {
		if len(items) < 2 || leaderOf(items).Bname != c.me || !decided(&items[1]) {
			continue
		}
		e := items[0]
		off, ok := stats[e.Bname][protocol.MessageQueue{Topic: d.Topic, BrokerName: e.Bname, QueueID: e.QueueID}]
		if !ok {
			continue
		}
		if off.MaxOffset == off.MinOffset || off.MaxOffset == 0 {
			drop[g] = e.Gen
			c.log.Info("static topic item expired", "topic", d.Topic, "logicQueue", g, "gen", e.Gen, "bname", e.Bname,
				"queueId", e.QueueID, "min", off.MinOffset, "max", off.MaxOffset)
		}
	}
	if len(drop) == 0 {
		return nil
	}
	return func(n *protocol.TopicQueueMappingDetail) bool {
		edited := false
		for g, gen := range drop {
			items := n.HostedQueues[g]
			// Re-check under the lock: an update may have landed.
			if len(items) >= 2 && items[0].Gen == gen && leaderOf(items).Bname == c.me && decided(&items[1]) {
				n.HostedQueues[g] = slices.Clone(items[1:])
				edited = true
			}
		}
		return edited
	}
}

// topicStats is GET_TOPIC_STATS_INFO of a topic on broker b (the local
// store for this broker).
func (c *CleanService) topicStats(ctx context.Context, d *protocol.TopicQueueMappingDetail, b string) (protocol.MQMap[protocol.TopicOffset], error) {
	if b == c.me {
		out := protocol.MQMap[protocol.TopicOffset]{}
		for _, items := range d.HostedQueues {
			for _, it := range items {
				if it.Bname == c.me {
					out[protocol.MessageQueue{Topic: d.Topic, BrokerName: c.me, QueueID: it.QueueID}] = protocol.TopicOffset{
						MinOffset: max(c.d.Store.MinOffset(d.Topic, int32(it.QueueID)), 0),
						MaxOffset: max(c.d.Store.MaxOffset(d.Topic, int32(it.QueueID)), 0),
					}
				}
			}
		}
		return out, nil
	}
	var st protocol.TopicStatsTable
	ext := map[string]string{"topic": d.Topic, FieldLogic: "false", FieldBrokerName: b}
	if err := c.ask(ctx, b, code.GetTopicStatsInfo, ext, protocol.UnmarshalMQKeyed, &st); err != nil {
		return nil, err
	}
	return st.OffsetTable, nil
}

// CleanStaleBackups drops the backup lists this broker keeps for logic
// queues it used to lead once the real leader (from the route) is at least
// two generations further, and that leader's detail confirms it under the
// same epoch (§10.2).
func (c *CleanService) CleanStaleBackups(ctx context.Context) bool {
	if c.d.Routes == nil {
		return false
	}
	return c.cleanEach("stale backups", func(d *protocol.TopicQueueMappingDetail) mappingEdit {
		return c.staleBackups(ctx, d)
	})
}

// staleBackups plans CleanStaleBackups's edit of one detail; nil when
// nothing is to drop.
func (c *CleanService) staleBackups(ctx context.Context, d *protocol.TopicQueueMappingDetail) mappingEdit {
	stale := map[int]string{}
	for g, items := range d.HostedQueues {
		if l := leaderOf(items); l != nil && l.Bname != c.me {
			stale[g] = l.Bname
		}
	}
	if len(stale) == 0 {
		return nil
	}
	route, err := c.d.Routes.Route(ctx, d.Topic)
	if err != nil {
		c.log.Warn("get route for static topic clean", "topic", d.Topic, "err", err)
		return nil
	}
	real := LogicLeaders(route, d.Scope)
	remoteDetails := map[string]*protocol.TopicQueueMappingDetail{}
	for _, g := range slices.Sorted(maps.Keys(stale)) {
		b := real[g]
		if b == "" || strings.HasPrefix(b, MockBrokerPrefix) {
			continue
		}
		if _, done := remoteDetails[b]; done {
			continue
		}
		rd, err := c.leaderDetail(ctx, d, b)
		if err != nil {
			c.log.Warn("get topic config for static topic clean", "topic", d.Topic, "broker", b, "err", err)
		}
		remoteDetails[b] = rd
	}
	var remove []int
	for g, recorded := range stale {
		b := real[g]
		rd := remoteDetails[b]
		if rd == nil || rd.TotalQueues != d.TotalQueues || rd.Epoch != d.Epoch {
			continue
		}
		if l := leaderOf(rd.HostedQueues[g]); l == nil || l.Bname != b {
			continue
		}
		if b != recorded {
			remove = append(remove, g)
		}
	}
	if len(remove) == 0 {
		return nil
	}
	return func(n *protocol.TopicQueueMappingDetail) bool {
		edited := false
		for _, g := range remove {
			if l := leaderOf(n.HostedQueues[g]); l != nil && l.Bname == stale[g] && n.Epoch == d.Epoch {
				delete(n.HostedQueues, g)
				edited = true
				c.log.Info("static topic backup list dropped", "topic", d.Topic, "logicQueue", g, "recordedLeader", stale[g], "realLeader", real[g])
			}
		}
		return edited
	}
}

// ask sends a request to broker b and decodes the body of its SUCCESS
// answer into out with decode; any other code is an error.
func (c *CleanService) ask(ctx context.Context, b string, reqCode int32, ext map[string]string, decode func([]byte, any) error, out any) error {
	if c.d.Remote == nil {
		return errors.New("no broker-to-broker client")
	}
	resp, err := c.d.Remote.Invoke(ctx, b, remoting.NewRequest(reqCode, ext, nil))
	if err != nil {
		return err
	}
	if resp.Code != code.Success {
		return errors.New("code " + strconv.Itoa(int(resp.Code)) + ": " + resp.Remark)
	}
	return decode(resp.Body, out)
}

// leaderDetail is broker b's mapping of the topic (GET_TOPIC_CONFIG with
// lo=true), nil unless it names b.
func (c *CleanService) leaderDetail(ctx context.Context, own *protocol.TopicQueueMappingDetail, b string) (*protocol.TopicQueueMappingDetail, error) {
	if b == c.me {
		return own, nil
	}
	var tc protocol.TopicConfigAndQueueMapping
	ext := map[string]string{"topic": own.Topic, FieldLogic: "true", FieldBrokerName: b}
	if err := c.ask(ctx, b, code.GetTopicConfig, ext, protocol.Unmarshal, &tc); err != nil {
		return nil, err
	}
	if tc.MappingDetail == nil || tc.MappingDetail.Bname != b {
		return nil, nil
	}
	return tc.MappingDetail, nil
}

// LogicLeaders computes the broker leading each logic queue of a scope
// from a route, as clients do (docs/static-topics.md §6): per logic queue the
// info with the highest epoch that lists it in currIdMap wins; queues
// nobody claims map to NoneBrokerName.
func LogicLeaders(route *protocol.TopicRouteData, scope string) map[int]string {
	if scope == "" {
		scope = protocol.MappingScopeGlobal
	}
	var infos []protocol.TopicQueueMappingInfo
	for _, b := range slices.Sorted(maps.Keys(route.TopicQueueMappingByBroker)) {
		info := route.TopicQueueMappingByBroker[b]
		s := info.Scope
		if s == "" {
			s = protocol.MappingScopeGlobal
		}
		if s == scope {
			if info.Bname == "" {
				info.Bname = b
			}
			infos = append(infos, info)
		}
	}
	slices.SortStableFunc(infos, func(a, b protocol.TopicQueueMappingInfo) int {
		switch {
		case a.Epoch > b.Epoch:
			return -1
		case a.Epoch < b.Epoch:
			return 1
		}
		return 0
	})
	maxTotal := 0
	winner := map[int]protocol.TopicQueueMappingInfo{}
	for _, info := range infos {
		maxTotal = max(maxTotal, info.TotalQueues)
		for g := range info.CurrIDMap {
			if cur, ok := winner[g]; !ok || info.Epoch >= cur.Epoch {
				winner[g] = info
			}
		}
	}
	out := make(map[int]string, maxTotal)
	for g := range maxTotal {
		if w, ok := winner[g]; ok {
			out[g] = w.Bname
		} else {
			out[g] = NoneBrokerName
		}
	}
	return out
}
