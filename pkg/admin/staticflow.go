package admin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/pkg/statictopic"
)

// StaticTopicRequest is one run of updateStaticTopic or
// remappingStaticTopic.
type StaticTopicRequest struct {
	Topic string
	// TotalQueues is the logic queue count to create or extend to
	// (updateStaticTopic -qn).
	TotalQueues int
	// Brokers (-b) or Clusters (-c) name the target brokers.
	Brokers  []string
	Clusters []string
	// File, when set, is a plan to apply as it is (-mf) instead of
	// planning; it must be newer than the brokers' state.
	File *statictopic.Plan
	// DryRun plans (and saves the plan) but writes nothing to the brokers.
	DryRun  bool
	Options statictopic.Options

	// Save stores a plan (suffix .before, .after or .repair) and returns
	// where; nil does not store.
	Save func(p *statictopic.Plan, suffix string) (string, error)
	// OnFile, OnRepair, OnPlan and OnStep report progress; nil ignores.
	OnFile   func(suffix, path string)
	OnRepair func(reasons []string, p *statictopic.Plan)
	OnPlan   func(p *statictopic.Plan, cur statictopic.Configs)
	OnStep   func(StaticStep)
}

// StaticTopicResult says what a run did.
type StaticTopicResult struct {
	// Repaired is the plan that finished an interrupted change, if any.
	Repaired *statictopic.Plan
	// Plan is the plan of the requested change (nil when there was
	// nothing to do).
	Plan *statictopic.Plan
	// Applied: Plan was written to every broker.
	Applied bool
	// NothingToDo: the brokers already had what was asked (possibly after
	// Repaired finished it).
	NothingToDo bool
}

// SuffixRepair is the file suffix of a plan that finishes an interrupted
// change (next to statictopic.SuffixBefore and SuffixAfter).
const SuffixRepair = ".repair"

// ErrStaleEpoch marks a mapping file older than the brokers' data.
var ErrStaleEpoch = errors.New("stale epoch")

// UpdateStaticTopic creates a static topic of req.TotalQueues logic queues
// or extends one (docs/static-topics.md §9.1). An interrupted earlier change is
// finished first (statictopic.Repair), so re-running a command that failed
// half way completes it. Bad input (a shrinking queue count, an unknown
// broker or cluster, a normal topic of that name, an inconsistent mapping)
// fails before anything is written.
func (c *Client) UpdateStaticTopic(ctx context.Context, req StaticTopicRequest) (*StaticTopicResult, error) {
	return c.staticTopic(ctx, req, false)
}

// RemapStaticTopic moves the logic queues of a static topic onto the
// target brokers (docs/static-topics.md §9.2), finishing an interrupted earlier
// change first as UpdateStaticTopic does.
func (c *Client) RemapStaticTopic(ctx context.Context, req StaticTopicRequest) (*StaticTopicResult, error) {
	return c.staticTopic(ctx, req, true)
}

func (req *StaticTopicRequest) fill() {
	if req.Save == nil {
		req.Save = func(*statictopic.Plan, string) (string, error) { return "", nil }
	}
	if req.OnFile == nil {
		req.OnFile = func(string, string) {}
	}
	if req.OnRepair == nil {
		req.OnRepair = func([]string, *statictopic.Plan) {}
	}
	if req.OnPlan == nil {
		req.OnPlan = func(*statictopic.Plan, statictopic.Configs) {}
	}
	if req.OnStep == nil {
		req.OnStep = func(StaticStep) {}
	}
}

func (c *Client) staticTopic(ctx context.Context, req StaticTopicRequest, remap bool) (*StaticTopicResult, error) {
	req.fill()
	topic := req.Topic
	if err := protocol.ValidateTopic(topic); err != nil {
		return nil, err
	}
	ci, err := c.GetBrokerClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	if len(ci.ClusterAddrTable) == 0 {
		return nil, errors.New("the cluster info is empty")
	}
	targets, err := staticTargets(ci, req.Brokers, req.Clusters)
	if err != nil {
		return nil, err
	}
	state, err := c.ExamineTopicConfigAll(ctx, topic, ci)
	if err != nil {
		return nil, err
	}
	if req.File != nil {
		return c.applyStaticFile(ctx, req, remap, ci, state)
	}

	res := &StaticTopicResult{}
	if !remap {
		// Refuse a shrinking count before finishing anything interrupted.
		total := 0
		for _, tc := range state {
			if tc.MappingDetail != nil {
				total = max(total, tc.MappingDetail.TotalQueues)
			}
		}
		if req.TotalQueues < total {
			return res, fmt.Errorf("cannot decrease the queue num for static topic %s: %d < %d", topic, req.TotalQueues, total)
		}
	}
	if state, err = c.finishInterrupted(ctx, req, ci, state, res); err != nil || (req.DryRun && res.Repaired != nil) {
		return res, err
	}
	if remap && len(state) == 0 {
		return res, fmt.Errorf("no topic route to do the remapping: topic %s does not exist on any broker", topic)
	}
	beforeEpoch := req.Options.NowMS()
	if len(state) > 0 {
		if beforeEpoch, _, err = statictopic.CheckNameEpochNum(topic, state); err != nil {
			return res, err
		}
	}
	before := &statictopic.Plan{Topic: topic, Type: statictopic.TypeCreateOrUpdate, Epoch: beforeEpoch, BrokerConfigMap: state, BrokerToMapIn: []string{}, BrokerToMapOut: []string{}}
	if err := c.saveStatic(req, before, statictopic.SuffixBefore); err != nil {
		return res, err
	}

	var p *statictopic.Plan
	if remap {
		p, err = statictopic.PlanRemap(topic, targets, state, req.Options)
	} else {
		all := slices.Sorted(maps.Keys(nameSet(append(slices.Clone(targets), state.Brokers()...))))
		p, err = statictopic.PlanCreate(topic, req.TotalQueues, all, state, req.Options)
		if errors.Is(err, statictopic.ErrNothingToDo) {
			return c.completeOnly(ctx, req, ci, state, res, err)
		}
	}
	if err != nil {
		return res, err
	}
	if remap && res.Repaired != nil && len(p.BrokerToMapIn)+len(p.BrokerToMapOut) == 0 {
		// Finishing the interrupted remap already did what was asked.
		res.NothingToDo = true
		return res, nil
	}
	if err := c.saveStatic(req, p, statictopic.SuffixAfter); err != nil {
		return res, err
	}
	return c.applyPlanned(ctx, req, ci, state, p, res)
}

// applyPlanned completes plan p (the brokers of the same clusters),
// reports it and, unless this is a dry run, applies it.
func (c *Client) applyPlanned(ctx context.Context, req StaticTopicRequest, ci *protocol.ClusterInfo, state statictopic.Configs, p *statictopic.Plan, res *StaticTopicResult) (*StaticTopicResult, error) {
	p.Complete(BrokersInSameClusters(ci, p.BrokerConfigMap.Brokers()))
	return c.reportAndApply(ctx, req, ci, state, p, res)
}

// reportAndApply reports plan p and, unless this is a dry run, applies it.
func (c *Client) reportAndApply(ctx context.Context, req StaticTopicRequest, ci *protocol.ClusterInfo, state statictopic.Configs, p *statictopic.Plan, res *StaticTopicResult) (*StaticTopicResult, error) {
	res.Plan = p
	req.OnPlan(p, state)
	if req.DryRun {
		return res, nil
	}
	if err := c.ApplyStaticTopicPlan(ctx, p, ci, req.OnStep); err != nil {
		return res, interrupted(err)
	}
	res.Applied = true
	return res, nil
}

// interrupted explains what a failed apply leaves behind.
func interrupted(err error) error {
	return fmt.Errorf("%w; the change stopped half way and the brokers may be at different epochs: run the same command again to finish it", err)
}

// finishInterrupted repairs an interrupted change (nothing in a dry run but
// reporting it) and returns the state to plan from.
func (c *Client) finishInterrupted(ctx context.Context, req StaticTopicRequest, ci *protocol.ClusterInfo, state statictopic.Configs, res *StaticTopicResult) (statictopic.Configs, error) {
	if len(state) == 0 {
		return state, nil
	}
	rp, reasons, err := statictopic.Repair(req.Topic, state, req.Options)
	if err != nil || rp == nil {
		return state, err
	}
	res.Repaired = rp
	rp.Complete(BrokersInSameClusters(ci, rp.BrokerConfigMap.Brokers()))
	if err := c.saveStatic(req, rp, SuffixRepair); err != nil {
		return state, err
	}
	req.OnRepair(reasons, rp)
	req.OnPlan(rp, state)
	if req.DryRun {
		return state, nil
	}
	if err := c.ApplyStaticTopicPlan(ctx, rp, ci, req.OnStep); err != nil {
		return state, fmt.Errorf("finishing the interrupted change: %w", interrupted(err))
	}
	return c.ExamineTopicConfigAll(ctx, req.Topic, ci)
}

// completeOnly handles an update to the queue count the topic already has:
// brokers of its clusters that still lack the topic get their empty config
// (an earlier run stopped before them); otherwise there is nothing to do,
// which is an error unless this run just finished an interrupted change.
func (c *Client) completeOnly(ctx context.Context, req StaticTopicRequest, ci *protocol.ClusterInfo, state statictopic.Configs, res *StaticTopicResult, nothing error) (*StaticTopicResult, error) {
	p := &statictopic.Plan{Topic: req.Topic, Type: statictopic.TypeCreateOrUpdate, Epoch: state.MaxEpoch(), BrokerConfigMap: state.Clone(), BrokerToMapIn: []string{}, BrokerToMapOut: []string{}}
	added := p.Complete(BrokersInSameClusters(ci, state.Brokers()))
	if len(added) == 0 {
		if res.Repaired != nil {
			res.NothingToDo = true
			return res, nil
		}
		return res, nothing
	}
	for _, b := range state.Brokers() {
		delete(p.BrokerConfigMap, b) // only the missing brokers are written
	}
	if err := c.saveStatic(req, p, statictopic.SuffixAfter); err != nil {
		return res, err
	}
	return c.reportAndApply(ctx, req, ci, state, p, res)
}

// applyStaticFile applies a plan read from a file (-mf).
func (c *Client) applyStaticFile(ctx context.Context, req StaticTopicRequest, remap bool, ci *protocol.ClusterInfo, state statictopic.Configs) (*StaticTopicResult, error) {
	res := &StaticTopicResult{}
	p := &statictopic.Plan{Topic: req.File.Topic, Type: req.File.Type, Epoch: req.File.Epoch, BrokerConfigMap: req.File.BrokerConfigMap.Clone(),
		BrokerToMapIn: slices.Clone(req.File.BrokerToMapIn), BrokerToMapOut: slices.Clone(req.File.BrokerToMapOut)}
	wantType := statictopic.TypeCreateOrUpdate
	if remap {
		wantType = statictopic.TypeRemapping
	}
	switch {
	case p.Topic != req.Topic:
		return res, fmt.Errorf("the mapping file is for topic %s, not %s", p.Topic, req.Topic)
	case p.Type != wantType:
		return res, fmt.Errorf("the mapping file is a %s plan; this command applies %s plans", p.Type, wantType)
	case len(p.BrokerConfigMap) == 0:
		return res, errors.New("the mapping file has no broker configs")
	}
	epoch, total, err := statictopic.CheckNameEpochNum(req.Topic, p.BrokerConfigMap)
	if err == nil && epoch != p.Epoch {
		err = fmt.Errorf("the plan epoch %d differs from its configs' epoch %d", p.Epoch, epoch)
	}
	if err == nil {
		_, err = statictopic.CheckAll(req.Topic, p.BrokerConfigMap)
	}
	if err != nil {
		return res, fmt.Errorf("the mapping file is invalid: %w", err)
	}
	if !remap && req.TotalQueues > 0 && req.TotalQueues != total {
		return res, fmt.Errorf("the mapping file has %d logic queues, -qn says %d", total, req.TotalQueues)
	}
	for _, b := range append(append(p.BrokerConfigMap.Brokers(), p.BrokerToMapIn...), p.BrokerToMapOut...) {
		if p.BrokerConfigMap[b] == nil {
			return res, fmt.Errorf("the mapping file is invalid: broker %s to map in or out has no config", b)
		}
		if _, err := MasterAddrByBrokerName(ci, b); err != nil {
			return res, fmt.Errorf("the mapping file names broker %s, which has no master in the cluster: %w", b, err)
		}
	}

	cur := state.MaxEpoch()
	switch {
	case p.Epoch < cur:
		return res, fmt.Errorf("%w: the mapping file is at epoch %d but the brokers are at epoch %d; plan again", ErrStaleEpoch, p.Epoch, cur)
	case p.Epoch == cur:
		// The same file was applied before, possibly in part.
		if state, err = c.finishInterrupted(ctx, req, ci, state, res); err != nil || (req.DryRun && res.Repaired != nil) {
			return res, err
		}
		if sameLeaders(state, p.BrokerConfigMap) {
			res.NothingToDo = true
			return res, nil
		}
		return res, fmt.Errorf("%w: the brokers moved on from the mapping file (epoch %d) and do not match it; plan again without -mf", ErrStaleEpoch, p.Epoch)
	}
	if rp, reasons, err := statictopic.Repair(req.Topic, state, req.Options); err != nil {
		return res, err
	} else if rp != nil {
		return res, fmt.Errorf("the topic has an interrupted change (%s); finish it by running the command without -mf, then plan again", strings.Join(reasons, "; "))
	}
	for _, b := range state.Brokers() {
		nc := p.BrokerConfigMap[b]
		if nc == nil {
			continue
		}
		od := state[b].MappingDetail
		for g, items := range od.HostedQueues {
			if nitems, ok := nc.MappingDetail.HostedQueues[g]; ok {
				if err := statictopic.CheckImmutable(items, nitems, false); err != nil {
					return res, fmt.Errorf("the mapping file does not follow the brokers' data: logic queue %d on broker %s: %w", g, b, err)
				}
			}
		}
	}
	return c.applyPlanned(ctx, req, ci, state, p, res)
}

// sameLeaders compares the leader and item list of every logic queue.
func sameLeaders(a, b statictopic.Configs) bool {
	la, err1 := statictopic.BuildLeaders(a, true, false)
	lb, err2 := statictopic.BuildLeaders(b, true, false)
	if err1 != nil || err2 != nil || len(la) != len(lb) {
		return false
	}
	for g, qa := range la {
		qb, ok := lb[g]
		if !ok || qa.Leader != qb.Leader || len(qa.Items) != len(qb.Items) {
			return false
		}
		for i := range qa.Items {
			x, y := qa.Items[i], qb.Items[i]
			if x.Gen != y.Gen || x.Bname != y.Bname || x.QueueID != y.QueueID {
				return false
			}
		}
	}
	return true
}

func (c *Client) saveStatic(req StaticTopicRequest, p *statictopic.Plan, suffix string) error {
	path, err := req.Save(p, suffix)
	if err != nil {
		return fmt.Errorf("write file failed: %w", err)
	}
	if path != "" {
		req.OnFile(suffix, path)
	}
	return nil
}

// staticTargets resolves -b or -c into broker names. Unknown brokers or
// clusters, and brokers without a master, are refused.
func staticTargets(ci *protocol.ClusterInfo, brokers, clusters []string) ([]string, error) {
	out := map[string]bool{}
	for _, b := range brokers {
		if b = strings.TrimSpace(b); b == "" {
			continue
		}
		if _, ok := ci.BrokerAddrTable[b]; !ok {
			known := slices.Sorted(maps.Keys(ci.BrokerAddrTable))
			return nil, fmt.Errorf("broker %s is not in the cluster (known brokers: %s)", b, strings.Join(known, ", "))
		}
		out[b] = true
	}
	for _, cl := range clusters {
		if cl = strings.TrimSpace(cl); cl == "" {
			continue
		}
		if _, ok := ci.ClusterAddrTable[cl]; !ok {
			return nil, fmt.Errorf("cluster %s: %w", cl, ErrClusterNotFound)
		}
		for _, b := range BrokerNamesOf(ci, cl) {
			out[b] = true
		}
	}
	if len(out) == 0 {
		return nil, errors.New("find none brokers, do nothing")
	}
	for b := range out {
		if _, err := MasterAddrByBrokerName(ci, b); err != nil {
			return nil, fmt.Errorf("can't find addr for broker %s: %w", b, err)
		}
	}
	return slices.Sorted(maps.Keys(out)), nil
}
