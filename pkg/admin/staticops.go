package admin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/pkg/statictopic"
	"github.com/rmqgo/rmq/remoting/code"
)

// Static topics, admin side (docs/static-topics.md §8.5, §8.6, §9): reading a
// topic's state from every broker, writing it (request 513) and applying
// plans made by package statictopic.

// CreateStaticTopic sends UPDATE_AND_CREATE_STATIC_TOPIC (513) to one
// broker: its topic config in the header (defaultTopic TBW102) and its
// mapping detail as the body.
func (c *Client) CreateStaticTopic(ctx context.Context, brokerAddr string, tc *protocol.TopicConfigAndQueueMapping, force bool) error {
	if tc == nil || tc.MappingDetail == nil {
		return fmt.Errorf("%s: topic config without mapping detail", code.RequestName(code.UpdateAndCreateStaticTopic))
	}
	ext := topicHeader(protocol.TopicConfig{
		TopicName: tc.TopicName, ReadQueueNums: tc.ReadQueueNums, WriteQueueNums: tc.WriteQueueNums, Perm: tc.Perm,
		TopicFilterType: tc.TopicFilterType, TopicSysFlag: tc.TopicSysFlag, Order: tc.Order,
	}, statictopic.DefaultTopic, force)
	d := *tc.MappingDetail
	d.CurrIDMap = map[int]int{} // not meaningful in a detail; Java sends {}
	if d.HostedQueues == nil {
		d.HostedQueues = map[int][]protocol.LogicQueueMappingItem{}
	}
	body, err := protocol.Marshal(d)
	if err != nil {
		return fmt.Errorf("%s: encode mapping: %w", code.RequestName(code.UpdateAndCreateStaticTopic), err)
	}
	_, err = c.invokeOK(ctx, brokerAddr, code.UpdateAndCreateStaticTopic, ext, body)
	return err
}

// ExamineTopicConfigAll reads topic's config from the master of every
// broker of ci (Java's MQAdminUtils.examineTopicConfigAll): brokers without
// the topic are left out; any other failure, and a broker without a master,
// is an error (its state would be unknown).
func (c *Client) ExamineTopicConfigAll(ctx context.Context, topic string, ci *protocol.ClusterInfo) (statictopic.Configs, error) {
	out := statictopic.Configs{}
	for _, name := range slices.Sorted(maps.Keys(ci.BrokerAddrTable)) {
		addr, err := MasterAddrByBrokerName(ci, name)
		if err != nil {
			return nil, fmt.Errorf("read topic %s from broker %s: %w", topic, name, err)
		}
		tc, err := c.GetTopicConfig(ctx, addr, topic)
		if err != nil {
			if IsCode(err, code.TopicNotExist) {
				continue
			}
			return nil, fmt.Errorf("read topic %s from broker %s: %w", topic, name, err)
		}
		if tc.Attributes == nil {
			tc.Attributes = map[string]string{}
		}
		out[name] = tc
	}
	return out, nil
}

// BrokersInSameClusters returns every broker of the clusters that hold one
// of names (Java's getAllBrokersInSameCluster), sorted.
func BrokersInSameClusters(ci *protocol.ClusterInfo, names []string) []string {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	all := map[string]bool{}
	for _, cluster := range ClusterNames(ci) {
		members := BrokerNamesOf(ci, cluster)
		if slices.ContainsFunc(members, func(b string) bool { return want[b] }) {
			for _, b := range members {
				all[b] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(all))
}

// StaticStep is one event of an applied plan: the start of a step (Title
// set, Done 0), then one event per unit of work as it completes (Line set,
// Done counting up to Total), so a caller can show the progress of each
// step.
type StaticStep struct {
	Step, Steps int    // 1-based step number and step count
	Title       string // what the step does; set on the first event of a step
	Line        string // what was done
	Done, Total int    // units of the step done so far, and in all
	Unit        string // what a unit is: "brokers" or "logic queues"
}

// Units of StaticStep.
const (
	UnitBrokers     = "brokers"
	UnitLogicQueues = "logic queues"
)

// ApplyStaticTopicPlan writes a plan to the brokers with force=false.
//
// CREATE_OR_UPDATE: every broker, in name order (Java's
// updateTopicConfigMappingAll). REMAPPING (Java's
// MQAdminUtils.remappingStaticTopic): 1. the new leaders, which then accept
// writes; 2. the old leaders, which then refuse them (fencing); 3. the
// logic offset of each moved queue, decided from the old leader's max
// offset; 4. the new leaders again with it, then the old leaders' copies;
// 5. every other broker. Every broker must have a master, checked before
// anything is written. A failure stops at once: the brokers are then at
// different epochs, and statictopic.Repair finishes from there.
func (c *Client) ApplyStaticTopicPlan(ctx context.Context, p *statictopic.Plan, ci *protocol.ClusterInfo, report func(StaticStep)) error {
	if report == nil {
		report = func(StaticStep) {}
	}
	addrs := map[string]string{}
	for _, b := range p.BrokerConfigMap.Brokers() {
		addr, err := MasterAddrByBrokerName(ci, b)
		if err != nil {
			return fmt.Errorf("can't find addr for broker %s: %w", b, err)
		}
		addrs[b] = addr
	}
	// writeAll is one step: request 513 to each of brokers, in order.
	writeAll := func(step, steps int, title string, brokers []string) error {
		report(StaticStep{Step: step, Steps: steps, Title: title, Total: len(brokers), Unit: UnitBrokers})
		for i, b := range brokers {
			tc := p.BrokerConfigMap[b]
			if err := c.CreateStaticTopic(ctx, addrs[b], tc, false); err != nil {
				return fmt.Errorf("step %d/%d: write broker %s: %w", step, steps, b, err)
			}
			report(StaticStep{Step: step, Steps: steps, Line: fmt.Sprintf("%s (%s): %s", b, addrs[b], describeConfig(tc)),
				Done: i + 1, Total: len(brokers), Unit: UnitBrokers})
		}
		return nil
	}
	if p.Type != statictopic.TypeRemapping {
		return writeAll(1, 1, fmt.Sprintf("write every broker at epoch %d", p.Epoch), p.BrokerConfigMap.Brokers())
	}

	const steps = 5
	in, out := nameSet(p.BrokerToMapIn), nameSet(p.BrokerToMapOut)
	for b := range in {
		if p.BrokerConfigMap[b] == nil {
			return fmt.Errorf("the plan has no config for map-in broker %s", b)
		}
	}
	for b := range out {
		if p.BrokerConfigMap[b] == nil {
			return fmt.Errorf("the plan has no config for map-out broker %s", b)
		}
	}
	if err := writeAll(1, steps, "new leaders accept writes: "+joinNames(p.BrokerToMapIn), p.BrokerToMapIn); err != nil {
		return err
	}
	if err := writeAll(2, steps, "old leaders stop accepting writes: "+joinNames(p.BrokerToMapOut), p.BrokerToMapOut); err != nil {
		return err
	}
	undecided := p.Undecided()
	report(StaticStep{Step: 3, Steps: steps, Title: fmt.Sprintf("decide the logic offsets of %d moved logic queue(s)", len(undecided)),
		Total: len(undecided), Unit: UnitLogicQueues})
	stats := map[string]*protocol.TopicStatsTable{}
	for i, g := range undecided {
		prev, err := p.PreviousLeader(g)
		if err != nil {
			return fmt.Errorf("step 3/%d: %w", steps, err)
		}
		st, ok := stats[prev.Bname]
		if !ok {
			addr, err := MasterAddrByBrokerName(ci, prev.Bname)
			if err != nil {
				return fmt.Errorf("step 3/%d: %w", steps, err)
			}
			if st, err = c.GetTopicStats(ctx, addr, p.Topic); err != nil {
				return fmt.Errorf("step 3/%d: offsets of the old leader %s: %w", steps, prev.Bname, err)
			}
			stats[prev.Bname] = st
		}
		off, ok := st.OffsetTable[protocol.MessageQueue{Topic: p.Topic, BrokerName: prev.Bname, QueueID: prev.QueueID}]
		if !ok {
			return fmt.Errorf("step 3/%d: cannot get the max offset of the old leader %s-%d of logic queue %d", steps, prev.Bname, prev.QueueID, g)
		}
		v, err := p.Decide(g, off.MaxOffset)
		if err != nil {
			return fmt.Errorf("step 3/%d: %w", steps, err)
		}
		report(StaticStep{Step: 3, Steps: steps, Line: fmt.Sprintf("logic queue %d: %s-%d ends at offset %d, the new leader starts at logic offset %d", g, prev.Bname, prev.QueueID, off.MaxOffset, v),
			Done: i + 1, Total: len(undecided), Unit: UnitLogicQueues})
	}
	// The old leaders' copies are written again too (Java leaves -1 there):
	// harmless for the brokers, and it leaves nothing undecided behind.
	if err := writeAll(4, steps, "write the logic offsets: "+joinNames(p.BrokerToMapIn)+", then the copies on "+joinNames(p.BrokerToMapOut),
		append(slices.Clone(p.BrokerToMapIn), p.BrokerToMapOut...)); err != nil {
		return err
	}
	var others []string
	for _, b := range p.BrokerConfigMap.Brokers() {
		if !in[b] && !out[b] {
			others = append(others, b)
		}
	}
	return writeAll(5, steps, "every other broker: "+joinNames(others), others)
}

func nameSet(list []string) map[string]bool {
	m := map[string]bool{}
	for _, n := range list {
		m[n] = true
	}
	return m
}

func joinNames(s []string) string {
	if len(s) == 0 {
		return "(none)"
	}
	return strings.Join(s, ", ")
}

// describeConfig summarises what one broker gets.
func describeConfig(tc *protocol.TopicConfigAndQueueMapping) string {
	d := tc.MappingDetail
	var leads []string
	for _, g := range slices.Sorted(maps.Keys(d.HostedQueues)) {
		if items := d.HostedQueues[g]; len(items) > 0 && items[len(items)-1].Bname == d.Bname {
			leads = append(leads, strconv.Itoa(g))
		}
	}
	return fmt.Sprintf("epoch %d, %d read/%d write queues, leads logic queues [%s]", d.Epoch, tc.ReadQueueNums, tc.WriteQueueNums, strings.Join(leads, " "))
}
