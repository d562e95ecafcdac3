package statictopic

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// Configs is a topic's configuration on each broker that has it: broker
// name → topic config with its mapping detail (Java's brokerConfigMap).
type Configs map[string]*protocol.TopicConfigAndQueueMapping

// Brokers returns the broker names, sorted.
func (c Configs) Brokers() []string { return slices.Sorted(maps.Keys(c)) }

// Clone deep-copies the configs, so that planning never touches its input.
func (c Configs) Clone() Configs {
	out := make(Configs, len(c))
	for b, tc := range c {
		out[b] = CloneConfig(tc)
	}
	return out
}

// CloneConfig deep-copies one config.
func CloneConfig(tc *protocol.TopicConfigAndQueueMapping) *protocol.TopicConfigAndQueueMapping {
	if tc == nil {
		return nil
	}
	n := *tc
	n.Attributes = maps.Clone(tc.Attributes)
	if n.Attributes == nil {
		n.Attributes = map[string]string{}
	}
	if tc.MappingDetail != nil {
		d := *tc.MappingDetail
		d.CurrIDMap = maps.Clone(tc.MappingDetail.CurrIDMap)
		if d.CurrIDMap == nil {
			d.CurrIDMap = map[int]int{}
		}
		d.HostedQueues = make(map[int][]Item, len(tc.MappingDetail.HostedQueues))
		for g, items := range tc.MappingDetail.HostedQueues {
			d.HostedQueues[g] = slices.Clone(items)
		}
		n.MappingDetail = &d
	}
	return &n
}

// NewConfig returns the config of a broker that joins a static topic:
// read = write = queues, perm 6, and an empty detail (Java's
// TopicConfigAndQueueMapping(new TopicConfig(topic, q, q), new
// TopicQueueMappingDetail(topic, total, broker, epoch))).
func NewConfig(topic, broker string, queues, total int, epoch int64) *protocol.TopicConfigAndQueueMapping {
	return &protocol.TopicConfigAndQueueMapping{
		Attributes:      map[string]string{},
		Perm:            protocol.PermRead | protocol.PermWrite,
		ReadQueueNums:   queues,
		WriteQueueNums:  queues,
		TopicFilterType: protocol.SingleTag,
		TopicName:       topic,
		MappingDetail: &protocol.TopicQueueMappingDetail{
			Bname: broker, CurrIDMap: map[int]int{}, Epoch: epoch, HostedQueues: map[int][]Item{},
			Scope: protocol.MappingScopeGlobal, Topic: topic, TotalQueues: total,
		},
	}
}

// Queue is one logic queue as its leader broker stores it.
type Queue struct {
	ID     int
	Leader string // broker of the last item
	Epoch  int64  // epoch of the leader's detail
	Scope  string
	Items  []Item
}

// MaxEpoch returns the highest epoch among the details (-1 when none).
func (c Configs) MaxEpoch() int64 {
	e := int64(-1)
	for _, tc := range c {
		if tc != nil && tc.MappingDetail != nil && tc.MappingDetail.Epoch > e {
			e = tc.MappingDetail.Epoch
		}
	}
	return e
}

// CheckNames verifies what must hold whatever the epochs: every broker has
// a detail named after it, not dirty, of this topic, all in one scope.
func CheckNames(topic string, cfgs Configs) error {
	scope := ""
	for _, b := range cfgs.Brokers() {
		tc := cfgs[b]
		if tc == nil || tc.MappingDetail == nil {
			return fmt.Errorf("topic %s on broker %s has no mapping info: it is not a static topic (converting a normal topic is not supported)", topic, b)
		}
		d := tc.MappingDetail
		switch {
		case d.Bname != b:
			return fmt.Errorf("the broker name is not equal %s != %s", b, d.Bname)
		case d.Dirty:
			return fmt.Errorf("the mapping info is dirty in broker %s", b)
		case tc.TopicName != d.Topic:
			return fmt.Errorf("the topic name is inconsistent in broker %s: %s != %s", b, tc.TopicName, d.Topic)
		case topic != "" && topic != d.Topic:
			return fmt.Errorf("the topic name is not match for broker %s: %s != %s", b, d.Topic, topic)
		}
		if scope != "" && d.Scope != scope {
			return fmt.Errorf("scope does not match %s != %s in %s", d.Scope, scope, b)
		}
		scope = d.Scope
	}
	return nil
}

// CheckNameEpochNum is docs/static-topics.md §3.4's consistency check: CheckNames, plus one epoch
// and one total queue number for all. It returns them.
func CheckNameEpochNum(topic string, cfgs Configs) (int64, int, error) {
	if err := CheckNames(topic, cfgs); err != nil {
		return 0, 0, err
	}
	epoch, num := int64(-1), -1
	for _, b := range cfgs.Brokers() {
		d := cfgs[b].MappingDetail
		if epoch != -1 && d.Epoch != epoch {
			return 0, 0, fmt.Errorf("epoch does not match %d != %d in %s", epoch, d.Epoch, b)
		}
		epoch = d.Epoch
		if num != -1 && d.TotalQueues != num {
			return 0, 0, fmt.Errorf("total queue number does not match %d != %d in %s", num, d.TotalQueues, b)
		}
		num = d.TotalQueues
	}
	return epoch, num, nil
}

// Details returns the configs' mapping details by epoch descending, then
// broker name.
func (c Configs) Details() []*protocol.TopicQueueMappingDetail {
	var ds []*protocol.TopicQueueMappingDetail
	for _, tc := range c {
		if tc != nil && tc.MappingDetail != nil {
			ds = append(ds, tc.MappingDetail)
		}
	}
	sort.SliceStable(ds, func(i, j int) bool {
		if ds[i].Epoch != ds[j].Epoch {
			return ds[i].Epoch > ds[j].Epoch
		}
		return ds[i].Bname < ds[j].Bname
	})
	return ds
}

// BuildLeaders maps every logic queue to the list its leader stores
// (Java's checkAndBuildMappingItems): only lists whose last item is on the
// storing broker count; every list is validated (docs/static-topics.md §3.1). A second leader for
// the same id is an error unless replace (then the highest epoch wins).
// complete requires ids 0..max(totalQueues)-1 exactly. Physical queues
// must not be shared (CheckReuse).
func BuildLeaders(cfgs Configs, replace, complete bool) (map[int]Queue, error) {
	out := map[int]Queue{}
	maxNum := 0
	for _, d := range cfgs.Details() {
		maxNum = max(maxNum, d.TotalQueues)
		for _, g := range slices.Sorted(maps.Keys(d.HostedQueues)) {
			items := d.HostedQueues[g]
			if err := CheckItems(items); err != nil {
				return nil, fmt.Errorf("logic queue %d on broker %s: %w", g, d.Bname, err)
			}
			if len(items) == 0 || Leader(items).Bname != d.Bname {
				continue
			}
			if g < 0 {
				return nil, fmt.Errorf("logic queue id %d on broker %s is negative", g, d.Bname)
			}
			if prev, dup := out[g]; dup {
				if !replace {
					return nil, fmt.Errorf("logic queue %d is led by both %s and %s", g, prev.Leader, d.Bname)
				}
				continue
			}
			out[g] = Queue{ID: g, Leader: d.Bname, Epoch: d.Epoch, Scope: d.Scope, Items: items}
		}
	}
	if complete {
		if len(out) != maxNum {
			return nil, fmt.Errorf("the total queue number in config does not match the real hosted queues %d != %d", maxNum, len(out))
		}
		for g := 0; g < maxNum; g++ {
			if _, ok := out[g]; !ok {
				return nil, fmt.Errorf("the queue number %d is not in globalIdMap", g)
			}
		}
	}
	if err := CheckReuse(out); err != nil {
		return nil, err
	}
	return out, nil
}

// CheckReuse verifies that no physical queue belongs to two logic queues,
// nor twice to one.
func CheckReuse(leaders map[int]Queue) error {
	type phys struct {
		broker string
		queue  int
	}
	seen := map[phys]int{}
	for _, g := range slices.Sorted(maps.Keys(leaders)) {
		for _, it := range leaders[g].Items {
			p := phys{it.Bname, it.QueueID}
			if prev, dup := seen[p]; dup {
				return fmt.Errorf("logic queues %d and %d share the physical queue %s-%d", prev, g, it.Bname, it.QueueID)
			}
			seen[p] = g
		}
	}
	return nil
}

// CheckPhysical verifies every config against the physical queues: read ≥
// write queues, items start at 0, live on a broker of the topic and within
// its write queues.
func CheckPhysical(cfgs Configs) error {
	for _, b := range cfgs.Brokers() {
		tc := cfgs[b]
		if tc.ReadQueueNums < tc.WriteQueueNums {
			return fmt.Errorf("broker %s: read queues %d are fewer than write queues %d", b, tc.ReadQueueNums, tc.WriteQueueNums)
		}
		if tc.MappingDetail == nil {
			continue
		}
		for _, g := range slices.Sorted(maps.Keys(tc.MappingDetail.HostedQueues)) {
			for _, it := range tc.MappingDetail.HostedQueues[g] {
				if it.StartOffset != 0 {
					return fmt.Errorf("logic queue %d on broker %s: the start offset does not begin from 0", g, b)
				}
				owner := cfgs[it.Bname]
				if owner == nil {
					return fmt.Errorf("logic queue %d on broker %s: item broker %s does not hold the topic", g, b, it.Bname)
				}
				if it.QueueID >= owner.WriteQueueNums {
					return fmt.Errorf("logic queue %d on broker %s: physical queue %s-%d is beyond its %d write queues", g, b, it.Bname, it.QueueID, owner.WriteQueueNums)
				}
			}
		}
	}
	return nil
}

// CheckTargetsComplete verifies that every broker hosting logic queues is a
// target (create/extend).
func CheckTargetsComplete(targets map[string]bool, cfgs Configs) error {
	for _, b := range cfgs.Brokers() {
		if d := cfgs[b].MappingDetail; d != nil && len(d.HostedQueues) > 0 && !targets[b] {
			return fmt.Errorf("the existed broker %s does not in target brokers", b)
		}
	}
	return nil
}

// CheckLeadersIn verifies that every leader is a target (remap).
func CheckLeadersIn(leaders map[int]Queue, targets map[string]bool) error {
	for _, g := range slices.Sorted(maps.Keys(leaders)) {
		if !targets[leaders[g].Leader] {
			return fmt.Errorf("the leader broker %s of logic queue %d is not a target broker", leaders[g].Leader, g)
		}
	}
	return nil
}

// CheckAll runs the checks a finished plan must pass: consistency, leaders
// of ids 0..n-1, no reuse, physical consistency.
func CheckAll(topic string, cfgs Configs) (map[int]Queue, error) {
	_, _, leaders, err := checkAll(topic, cfgs)
	return leaders, err
}

// checkAll is CheckAll that also returns the epoch and queue number
// CheckNameEpochNum found.
func checkAll(topic string, cfgs Configs) (epoch int64, num int, leaders map[int]Queue, err error) {
	if epoch, num, err = CheckNameEpochNum(topic, cfgs); err != nil {
		return 0, 0, nil, err
	}
	if leaders, err = BuildLeaders(cfgs, false, true); err != nil {
		return 0, 0, nil, err
	}
	if err := CheckPhysical(cfgs); err != nil {
		return 0, 0, nil, err
	}
	return epoch, num, leaders, nil
}
