package statictopic

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// Plan types and file suffixes (Java's TopicRemappingDetailWrapper).
const (
	TypeCreateOrUpdate = "CREATE_OR_UPDATE"
	TypeRemapping      = "REMAPPING"
	SuffixBefore       = ".before"
	SuffixAfter        = ".after"
)

// Plan is the admin's working set (docs/static-topics.md §2.5): the topic config of every broker
// as it must be after the operation, at one new epoch, and for a remap the
// brokers that gain (map in) and lose (map out) leadership. It is the JSON
// of the .before/.after files.
type Plan struct {
	BrokerConfigMap Configs  `json:"brokerConfigMap"`
	BrokerToMapIn   []string `json:"brokerToMapIn"`
	BrokerToMapOut  []string `json:"brokerToMapOut"`
	Epoch           int64    `json:"epoch"`
	Topic           string   `json:"topic"`
	Type            string   `json:"type"`
}

// DecodePlan reads a plan file, in our form or the Java tool's (fastjson
// writes integer map keys without quotes).
func DecodePlan(data []byte) (*Plan, error) {
	var p Plan
	if err := protocol.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("decode mapping data: %w", err)
	}
	if p.BrokerConfigMap == nil {
		p.BrokerConfigMap = Configs{}
	}
	for b, tc := range p.BrokerConfigMap {
		if tc == nil {
			return nil, fmt.Errorf("decode mapping data: broker %s has no config", b)
		}
		if tc.Attributes == nil {
			tc.Attributes = map[string]string{}
		}
		if d := tc.MappingDetail; d != nil {
			if d.HostedQueues == nil {
				d.HostedQueues = map[int][]Item{}
			}
			if d.CurrIDMap == nil {
				d.CurrIDMap = map[int]int{}
			}
		}
	}
	p.BrokerToMapIn = sortedNames(set(p.BrokerToMapIn))
	p.BrokerToMapOut = sortedNames(set(p.BrokerToMapOut))
	return &p, nil
}

// Options tune the planners.
type Options struct {
	// Now is the clock epochs derive from; nil means time.Now.
	Now func() time.Time
	// Shuffle orders the least loaded brokers of a round when creating
	// queues; nil keeps broker-name order (see Allocator).
	Shuffle func([]string)
}

// NowMS is the clock in milliseconds.
func (o Options) NowMS() int64 {
	if o.Now == nil {
		return time.Now().UnixMilli()
	}
	return o.Now().UnixMilli()
}

// ErrNothingToDo says that the topic already has the requested queues.
var ErrNothingToDo = errors.New("the topic queue num is equal the existed queue num, do nothing")

// sortedNames lists a set, never nil (a null list would break Java's
// reader of plan files).
func sortedNames(m map[string]bool) []string {
	return append([]string{}, slices.Sorted(maps.Keys(m))...)
}

func set(names []string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// PlanCreate plans creating a static topic of n logic queues, or extending
// one to n (docs/static-topics.md §8.2). targets are the brokers new queues may go to; brokers
// that already host queues must be among them. cur is the topic's current
// consistent state (empty for a new topic); ids it lacks below its
// totalQueues (a create that stopped half way) are allocated again.
func PlanCreate(topic string, n int, targets []string, cur Configs, opt Options) (*Plan, error) {
	if n <= 0 {
		return nil, fmt.Errorf("the total queue number must be positive, got %d", n)
	}
	if len(targets) == 0 {
		return nil, errors.New("find none brokers, do nothing")
	}
	tset := set(targets)
	cfgs := cur.Clone()
	if err := CheckTargetsComplete(tset, cfgs); err != nil {
		return nil, err
	}
	now := opt.NowMS()
	epoch := now
	leaders := map[int]Queue{}
	if len(cfgs) > 0 {
		var err error
		if epoch, _, err = CheckNameEpochNum(topic, cfgs); err != nil {
			return nil, err
		}
		if leaders, err = BuildLeaders(cfgs, false, false); err != nil {
			return nil, err
		}
		if err := CheckPhysical(cfgs); err != nil {
			return nil, err
		}
		fillDecidedCopies(cfgs, leaders)
	}
	maxID := -1
	for g := range leaders {
		maxID = max(maxID, g)
	}
	if n < len(leaders) || maxID >= n {
		return nil, fmt.Errorf("cannot decrease the queue num for static topic %s: %d < %d", topic, n, max(len(leaders), maxID+1))
	}
	if n == len(leaders) {
		return nil, ErrNothingToDo
	}

	count := map[string]int{}
	for _, t := range targets {
		count[t] = 0
	}
	idToBroker := map[int]string{}
	for g, q := range leaders {
		idToBroker[g] = q.Leader
		count[q.Leader]++
	}
	alloc := NewAllocator(idToBroker, count, nil, opt.Shuffle)
	alloc.UpTo(n)

	newEpoch := max(epoch+1000, now)
	for g := 0; g < n; g++ {
		if _, ok := leaders[g]; ok {
			continue
		}
		b := alloc.IDToBroker[g]
		tc := cfgs[b]
		if tc == nil {
			tc = NewConfig(topic, b, 1, n, newEpoch)
			cfgs[b] = tc
		} else {
			tc.ReadQueueNums++
			tc.WriteQueueNums++
		}
		tc.MappingDetail.HostedQueues[g] = []Item{NewItem(0, tc.WriteQueueNums-1, b, 0)}
	}
	for _, tc := range cfgs {
		tc.MappingDetail.Epoch = newEpoch
		tc.MappingDetail.TotalQueues = n
	}
	if _, err := CheckAll(topic, cfgs); err != nil {
		return nil, fmt.Errorf("the new mapping fails its checks: %w", err)
	}
	return &Plan{Topic: topic, Type: TypeCreateOrUpdate, Epoch: newEpoch, BrokerConfigMap: cfgs, BrokerToMapIn: []string{}, BrokerToMapOut: []string{}}, nil
}

// PlanRemap plans moving the logic queues of a consistent static topic so
// that the targets lead them evenly (docs/static-topics.md §8.3). A broker only gains or only
// loses queues. A moved queue gets a new leader item with an undecided
// logic offset, decided while the plan is applied (Decide).
func PlanRemap(topic string, targets []string, cur Configs, opt Options) (*Plan, error) {
	if len(targets) == 0 {
		return nil, errors.New("find none brokers, do nothing")
	}
	if len(cur) == 0 {
		return nil, fmt.Errorf("no topic route to do the remapping for %s", topic)
	}
	cfgs := cur.Clone()
	epoch, num, leaders, err := checkAll(topic, cfgs)
	if err != nil {
		return nil, err
	}
	for _, g := range slices.Sorted(maps.Keys(leaders)) {
		if items := leaders[g].Items; len(items) >= 2 && Leader(items).LogicOffset < 0 {
			return nil, fmt.Errorf("logic queue %d: the leader on %s has no logic offset yet (an interrupted remapping)", g, leaders[g].Leader)
		}
	}
	fillDecidedCopies(cfgs, leaders)

	count, before := map[string]int{}, map[string]int{}
	for _, t := range targets {
		count[t] = 0
	}
	for _, q := range leaders {
		before[q.Leader]++
	}
	alloc := NewAllocator(nil, count, before, nil)
	alloc.UpTo(num)
	expected := alloc.Count

	assign := map[int]string{}
	var waiting []int
	for _, g := range slices.Sorted(maps.Keys(leaders)) {
		l := leaders[g].Leader
		if expected[l] > 0 {
			assign[g] = l
			expected[l]--
			continue
		}
		waiting = append(waiting, g)
	}
	for _, b := range slices.Sorted(maps.Keys(expected)) {
		for ; expected[b] > 0; expected[b]-- {
			assign[waiting[0]] = b
			waiting = waiting[1:]
		}
	}

	newEpoch := max(epoch+1000, opt.NowMS())
	in, out := map[string]bool{}, map[string]bool{}
	for _, g := range slices.Sorted(maps.Keys(assign)) {
		q := leaders[g]
		to := assign[g]
		if to == q.Leader {
			continue
		}
		in[to], out[q.Leader] = true, true
		tc := cfgs[to]
		if tc == nil {
			tc = NewConfig(topic, to, 0, num, newEpoch)
			cfgs[to] = tc
		}
		tc.ReadQueueNums++
		tc.WriteQueueNums++
		items := append(slices.Clone(q.Items), NewItem(Leader(q.Items).Gen+1, tc.WriteQueueNums-1, to, -1))
		tc.MappingDetail.HostedQueues[g] = items
		cfgs[q.Leader].MappingDetail.HostedQueues[g] = slices.Clone(items)
	}
	for _, tc := range cfgs {
		tc.MappingDetail.Epoch = newEpoch
		tc.MappingDetail.TotalQueues = num
	}
	leaders, err = CheckAll(topic, cfgs)
	if err == nil {
		err = CheckLeadersIn(leaders, set(targets))
	}
	if err != nil {
		return nil, fmt.Errorf("the new mapping fails its checks: %w", err)
	}
	return &Plan{Topic: topic, Type: TypeRemapping, Epoch: newEpoch, BrokerConfigMap: cfgs,
		BrokerToMapIn: sortedNames(in), BrokerToMapOut: sortedNames(out)}, nil
}

// Repair plans finishing an operation that stopped half way, from the
// brokers' state alone (the epoch tells which data is newer):
//
//   - brokers at different epochs (some were written, some not);
//   - a logic queue whose new leader still has no logic offset (a remap
//     stopped between its first and fourth step);
//   - a broker still leading a logic queue that a newer epoch gave to
//     another broker (a remap stopped before fencing it).
//
// For each logic queue the claim of the highest epoch wins; the old leaders
// are fenced and the undecided logic offsets are decided when the plan is
// applied, exactly as in a remap. The result is a REMAPPING plan at a new
// epoch (nil when nothing needs repair) and a reason per finding. Ids that
// no broker leads stay missing: only updateStaticTopic can allocate them.
func Repair(topic string, cur Configs, opt Options) (*Plan, []string, error) {
	if len(cur) == 0 {
		return nil, nil, nil
	}
	if err := CheckNames(topic, cur); err != nil {
		return nil, nil, err
	}
	cfgs := cur.Clone()
	maxE := cfgs.MaxEpoch()
	var reasons []string
	total := 0
	for _, b := range cfgs.Brokers() {
		d := cfgs[b].MappingDetail
		if d.Epoch != maxE {
			reasons = append(reasons, fmt.Sprintf("broker %s is at epoch %d, behind epoch %d", b, d.Epoch, maxE))
		} else {
			total = max(total, d.TotalQueues)
		}
	}

	// Claims of the highest epoch win; two claims at one epoch cannot be
	// settled from the state.
	leaders := map[int]Queue{}
	for _, d := range cfgs.Details() {
		for _, g := range slices.Sorted(maps.Keys(d.HostedQueues)) {
			items := d.HostedQueues[g]
			if err := CheckItems(items); err != nil {
				return nil, nil, fmt.Errorf("logic queue %d on broker %s: %w", g, d.Bname, err)
			}
			if len(items) == 0 || Leader(items).Bname != d.Bname {
				continue
			}
			if prev, ok := leaders[g]; ok {
				if prev.Epoch == d.Epoch {
					return nil, nil, fmt.Errorf("logic queue %d is led by both %s and %s at epoch %d", g, prev.Leader, d.Bname, d.Epoch)
				}
				continue
			}
			leaders[g] = Queue{ID: g, Leader: d.Bname, Epoch: d.Epoch, Scope: d.Scope, Items: items}
		}
	}

	in, out := map[string]bool{}, map[string]bool{}
	for _, b := range cfgs.Brokers() {
		d := cfgs[b].MappingDetail
		for _, g := range slices.Sorted(maps.Keys(d.HostedQueues)) {
			items := d.HostedQueues[g]
			if len(items) == 0 || Leader(items).Bname != b || leaders[g].Leader == b {
				continue
			}
			reasons = append(reasons, fmt.Sprintf("broker %s still leads logic queue %d, which broker %s leads at epoch %d", b, g, leaders[g].Leader, leaders[g].Epoch))
			d.HostedQueues[g] = slices.Clone(leaders[g].Items)
			out[b] = true
		}
	}
	for _, g := range slices.Sorted(maps.Keys(leaders)) {
		q := leaders[g]
		if len(q.Items) < 2 || Leader(q.Items).LogicOffset >= 0 {
			continue
		}
		old := q.Items[len(q.Items)-2]
		oc := cfgs[old.Bname]
		if oc == nil {
			return nil, nil, fmt.Errorf("logic queue %d: the previous leader %s does not hold the topic", g, old.Bname)
		}
		reasons = append(reasons, fmt.Sprintf("logic queue %d: the new leader %s has no logic offset yet", g, q.Leader))
		in[q.Leader], out[old.Bname] = true, true
		oc.MappingDetail.HostedQueues[g] = slices.Clone(q.Items)
	}
	if len(reasons) == 0 {
		return nil, nil, nil
	}
	fillDecidedCopies(cfgs, leaders)

	newEpoch := max(maxE+1000, opt.NowMS())
	for _, tc := range cfgs {
		tc.MappingDetail.Epoch = newEpoch
		tc.MappingDetail.TotalQueues = total
	}
	if _, _, err := CheckNameEpochNum(topic, cfgs); err != nil {
		return nil, nil, err
	}
	if _, err := BuildLeaders(cfgs, false, false); err != nil {
		return nil, nil, fmt.Errorf("cannot repair: %w", err)
	}
	if err := CheckPhysical(cfgs); err != nil {
		return nil, nil, fmt.Errorf("cannot repair: %w", err)
	}
	return &Plan{Topic: topic, Type: TypeRemapping, Epoch: newEpoch, BrokerConfigMap: cfgs,
		BrokerToMapIn: sortedNames(in), BrokerToMapOut: sortedNames(out)}, reasons, nil
}

// fillDecidedCopies gives the copies old leaders keep of a list the logic
// offset its leader decided. Java never rewrites those copies after a remap
// (they keep -1, harmless: they are not leaders), so their lack is no
// reason to repair; but whatever this package writes carries the value.
func fillDecidedCopies(cfgs Configs, leaders map[int]Queue) {
	for _, b := range cfgs.Brokers() {
		d := cfgs[b].MappingDetail
		for g, items := range d.HostedQueues {
			q := leaders[g]
			if len(items) == 0 || len(q.Items) == 0 || Leader(items).LogicOffset >= 0 {
				continue
			}
			l, c := Leader(q.Items), Leader(items)
			if l.LogicOffset >= 0 && l.Gen == c.Gen && l.Bname == c.Bname && l.QueueID == c.QueueID {
				items[len(items)-1].LogicOffset = l.LogicOffset
			}
		}
	}
}

// Undecided lists the logic ids whose leader item on a map-in broker still
// waits for its logic offset (docs/static-topics.md §9.2 step 3; only these, not every stale
// list of a map-out broker as Java scans).
func (p *Plan) Undecided() []int {
	var out []int
	for _, b := range p.BrokerToMapIn {
		tc := p.BrokerConfigMap[b]
		if tc == nil || tc.MappingDetail == nil {
			continue
		}
		for g, items := range tc.MappingDetail.HostedQueues {
			if len(items) >= 2 && Leader(items).Bname == b && Leader(items).LogicOffset < 0 {
				out = append(out, g)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// PreviousLeader returns the item before the leader of logic queue g, as
// the leader's list in the plan has it.
func (p *Plan) PreviousLeader(g int) (Item, error) {
	items := p.leaderList(g)
	if len(items) < 2 {
		return Item{}, fmt.Errorf("logic queue %d has no previous leader", g)
	}
	return items[len(items)-2], nil
}

func (p *Plan) leaderList(g int) []Item {
	for _, b := range p.BrokerConfigMap.Brokers() {
		if d := p.BrokerConfigMap[b].MappingDetail; d != nil {
			if items := d.HostedQueues[g]; len(items) > 0 && Leader(items).Bname == b {
				return items
			}
		}
	}
	return nil
}

// Decide sets the logic offset of g's new leader from the previous
// leader's physical max offset, once the previous leader no longer accepts
// writes: rounded up to the next block (docs/static-topics.md §9.2 step 3). Every copy of the
// list in the plan gets it. It returns the decided offset.
func (p *Plan) Decide(g int, prevMax int64) (int64, error) {
	items := p.leaderList(g)
	if len(items) < 2 {
		return 0, fmt.Errorf("logic queue %d has no previous leader", g)
	}
	leader, prev := Leader(items), items[len(items)-2]
	if prevMax < prev.StartOffset {
		return 0, fmt.Errorf("logic queue %d: the max offset %d of %s-%d is smaller than its start offset %d", g, prevMax, prev.Bname, prev.QueueID, prev.StartOffset)
	}
	v := RoundUp(LogicStrictly(prev, prevMax), BlockSeqSize)
	for _, tc := range p.BrokerConfigMap {
		if tc.MappingDetail == nil {
			continue
		}
		list := tc.MappingDetail.HostedQueues[g]
		for i := range list {
			if list[i].Gen == leader.Gen && list[i].Bname == leader.Bname && list[i].QueueID == leader.QueueID && list[i].LogicOffset < 0 {
				list[i].LogicOffset = v
			}
		}
	}
	return v, nil
}

// Complete adds every broker of allBrokers that the plan lacks, with an
// empty mapping and no queues (docs/static-topics.md §8.5): so that a missing broker is seen as an
// inconsistency rather than as "topic absent". It returns the added ones.
func (p *Plan) Complete(allBrokers []string) []string {
	total := 0
	for _, tc := range p.BrokerConfigMap {
		if tc != nil && tc.MappingDetail != nil {
			total = max(total, tc.MappingDetail.TotalQueues)
		}
	}
	var added []string
	for _, b := range allBrokers {
		if _, ok := p.BrokerConfigMap[b]; !ok {
			p.BrokerConfigMap[b] = NewConfig(p.Topic, b, 0, total, p.Epoch)
			added = append(added, b)
		}
	}
	slices.Sort(added)
	return added
}

// Leaders returns logic id → leader broker of the plan.
func (p *Plan) Leaders() map[int]string {
	out := map[int]string{}
	for _, b := range p.BrokerConfigMap.Brokers() {
		if d := p.BrokerConfigMap[b].MappingDetail; d != nil {
			for g, items := range d.HostedQueues {
				if len(items) > 0 && Leader(items).Bname == b {
					out[g] = b
				}
			}
		}
	}
	return out
}
