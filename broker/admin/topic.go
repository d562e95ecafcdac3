package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// checkAdminTopicName applies the rules of an admin create/update: valid
// name, and (with validateSystemTopicWhenUpdateTopic, the default) not a
// system topic — Java answers both with INVALID_PARAMETER.
func (p *Processor) checkAdminTopicName(name string) error {
	if err := protocol.ValidateTopic(name); err != nil {
		return fmt.Errorf("%w: %v", topic.ErrInvalidTopic, err)
	}
	if p.d.Config.Get().ValidateSystemTopicWhenUpdateTopic && p.d.Topics.IsSystemTopic(name) {
		return fmt.Errorf("%w: the topic[%s] is conflict with system topic", errReservedTopic, name)
	}
	return nil
}

// checkAdminTopicConfig adds the checks an admin request gets on top of
// topic.Validate: at least one queue each way (a 0-queue topic is only
// legitimate for static-topic bookkeeping, request 513), and MIXED message
// type only when enableMixedMessageType.
func (p *Processor) checkAdminTopicConfig(tc protocol.TopicConfig) error {
	if tc.ReadQueueNums < 1 || tc.WriteQueueNums < 1 {
		return fmt.Errorf("%w: readQueueNums %d / writeQueueNums %d: both must be in [1, %d]",
			topic.ErrInvalidConfig, tc.ReadQueueNums, tc.WriteQueueNums, topic.MaxQueueNums)
	}
	if !p.d.Config.Get().EnableMixedMessageType && tc.Attributes["+"+topic.AttrMessageType] == topic.MessageTypeMixed {
		return fmt.Errorf("%w: MIXED message type is not supported", topic.ErrInvalidConfig)
	}
	return topic.Validate(tc)
}

// updateAndCreateTopic is UPDATE_AND_CREATE_TOPIC (17).
func (p *Processor) updateAndCreateTopic(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	name := f.OptStr("topic", "")
	if err := p.checkAdminTopicName(name); err != nil {
		return nil, err
	}
	tc := protocol.TopicConfigOf(f, name)
	tc.Order = f.OptBool("order", false)
	attrs := f.OptStr("attributes", "")
	if err := f.Err(); err != nil {
		return nil, badRequest("%v", err)
	}
	mods, err := topic.ParseAttributeMods(attrs)
	if err != nil {
		return nil, fmt.Errorf("%w: attributes %q: %v", topic.ErrInvalidConfig, attrs, err)
	}
	tc.Attributes = mods
	if err := p.checkAdminTopicConfig(tc); err != nil {
		return nil, err
	}
	changed, err := p.d.Topics.Update(tc)
	if err != nil {
		return nil, fmt.Errorf("update topic %s: %w", name, err)
	}
	if len(changed) > 0 && p.d.Hooks.TopicsChanged != nil {
		p.d.Hooks.TopicsChanged(ctx, changed)
	}
	p.log.Info("update or create topic", "topic", name, "changed", len(changed) > 0, "remote", processor.RemoteAddr(ch))
	return remoting.NewResponse(req, code.Success, ""), nil
}

// createTopicListBody is the UPDATE_AND_CREATE_TOPIC_LIST (18) body.
type createTopicListBody struct {
	TopicConfigList []protocol.TopicConfig `json:"topicConfigList"`
}

// updateAndCreateTopicList is UPDATE_AND_CREATE_TOPIC_LIST (18): all topics
// are checked before any is applied.
func (p *Processor) updateAndCreateTopicList(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if len(req.Body) == 0 {
		return nil, badRequest("empty body, want {\"topicConfigList\":[...]}")
	}
	var raw struct {
		TopicConfigList []json.RawMessage `json:"topicConfigList"`
	}
	if err := protocol.Unmarshal(req.Body, &raw); err != nil {
		return nil, badRequest("decode topic config list: %v", err)
	}
	list := make([]protocol.TopicConfig, 0, len(raw.TopicConfigList))
	for i, rm := range raw.TopicConfigList {
		// Decode over Java's defaults so absent fields keep them.
		tc := protocol.NewTopicConfig("")
		if err := protocol.Unmarshal(rm, &tc); err != nil {
			return nil, badRequest("decode topic config #%d: %v", i, err)
		}
		if tc.Attributes == nil {
			tc.Attributes = map[string]string{}
		}
		if err := p.checkAdminTopicName(tc.TopicName); err != nil {
			return nil, err
		}
		if err := p.checkAdminTopicConfig(tc); err != nil {
			return nil, fmt.Errorf("topic %s: %w", tc.TopicName, err)
		}
		list = append(list, tc)
	}
	changed, err := p.d.Topics.Update(list...)
	if err != nil {
		return nil, fmt.Errorf("update topic list: %w", err)
	}
	if len(changed) > 0 && p.d.Hooks.TopicsChanged != nil {
		p.d.Hooks.TopicsChanged(ctx, changed)
	}
	p.log.Info("update or create topic list", "topics", len(list), "changed", len(changed), "remote", processor.RemoteAddr(ch))
	return remoting.NewResponse(req, code.Success, ""), nil
}

// deleteTopic is DELETE_TOPIC_IN_BROKER (215). Deleting an unknown topic
// succeeds, as in Java.
func (p *Processor) deleteTopic(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	name := req.Ext("topic")
	if strings.TrimSpace(name) == "" {
		return nil, fmt.Errorf("%w: the specified topic is blank", topic.ErrInvalidTopic)
	}
	if p.d.Config.Get().ValidateSystemTopicWhenUpdateTopic && p.d.Topics.IsSystemTopic(name) {
		return nil, fmt.Errorf("%w: the topic[%s] is conflict with system topic", errReservedTopic, name)
	}
	names := []string{name}
	if p.d.Config.Get().ClearRetryTopicWhenDeleteTopic && p.d.RetryTopicsOf != nil {
		// The pop retry topics of the topic's groups go with it (Java's
		// AdminBrokerProcessor.deleteTopic); asked before the topic's
		// offsets are dropped.
		for _, rt := range p.d.RetryTopicsOf(name) {
			if rt != name && p.d.Topics.Contains(rt) && !slices.Contains(names, rt) {
				names = append(names, rt)
			}
		}
	}
	for _, n := range names {
		existed, err := p.d.Topics.Delete(n)
		if err != nil {
			return nil, fmt.Errorf("delete topic %s: %w", n, err)
		}
		if p.d.Hooks.TopicDeleted != nil {
			p.d.Hooks.TopicDeleted(n)
		}
		p.log.Info("delete topic", "topic", n, "existed", existed, "remote", processor.RemoteAddr(ch))
	}
	return remoting.NewResponse(req, code.Success, ""), nil
}

// getAllTopicConfig is GET_ALL_TOPIC_CONFIG (21). Requests carrying any of
// dataVersion/topicSeq/maxTopicNum get a page of the name-sorted table
// (enableSplitMetadata); others get everything.
func (p *Processor) getAllTopicConfig(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	cfg := p.d.Config.Get()
	f := protocol.FieldsOf(req.ExtFields)
	dvText := f.OptStr("dataVersion", "")
	seq := int(f.OptInt32("topicSeq", 0))
	maxNum := int(f.OptInt32("maxTopicNum", math.MaxInt32))
	if err := f.Err(); err != nil {
		return nil, badRequest("%v", err)
	}
	table, dv := p.d.Topics.Snapshot()
	details, mdv := p.d.Mappings.All()
	total := len(table)
	paged := f.Has("dataVersion") || f.Has("topicSeq") || f.Has("maxTopicNum")
	if cfg.EnableSplitMetadata && paged {
		var asked protocol.DataVersion
		if dvText == "" || protocol.Unmarshal([]byte(dvText), &asked) != nil || !asked.Equal(dv) {
			seq = 0 // the client's view is stale: start over
		}
		names := slices.Sorted(maps.Keys(table))
		end := min(seq+min(cfg.SplitMetadataSize, max(maxNum, 0)), len(names))
		page := map[string]protocol.TopicConfig{}
		pageDetails := map[string]protocol.TopicQueueMappingDetail{}
		if seq >= 0 && seq < end {
			for _, n := range names[seq:end] {
				page[n] = table[n]
				if d, ok := details[n]; ok {
					pageDetails[n] = d
				}
			}
		}
		table, details = page, pageDetails
	}
	resp, err := processor.Reply(req, "topic configs", protocol.TopicConfigAndMappingSerializeWrapper{
		DataVersion:                dv,
		MappingDataVersion:         mdv,
		TopicConfigTable:           table,
		TopicQueueMappingDetailMap: details,
		TopicQueueMappingInfoMap:   map[string]protocol.TopicQueueMappingInfo{},
	})
	if err != nil {
		return nil, err
	}
	resp.SetExt("totalTopicNum", strconv.Itoa(total))
	return resp, nil
}

// getTopicConfig is GET_TOPIC_CONFIG (351); unknown topics answer 17, which
// mqadmin topicStatus and the static-topic commands expect.
func (p *Processor) getTopicConfig(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	name := f.Str("topic")
	lo := f.OptBool("lo", false)
	if err := f.Err(); err != nil {
		return nil, badRequest("%v", err)
	}
	tc, ok := p.d.Topics.Get(name)
	if !ok {
		return nil, fmt.Errorf("%w: No topic in this broker. topic: %s", processor.ErrTopicNotExist, name)
	}
	out := protocol.TopicConfigAndQueueMapping{
		Attributes:      tc.Attributes,
		Order:           tc.Order,
		Perm:            tc.Perm,
		ReadQueueNums:   tc.ReadQueueNums,
		TopicFilterType: tc.TopicFilterType,
		TopicName:       tc.TopicName,
		TopicSysFlag:    tc.TopicSysFlag,
		WriteQueueNums:  tc.WriteQueueNums,
	}
	if lo {
		if d, ok := p.d.Mappings.Get(name); ok {
			out.MappingDetail = &d
		}
	}
	return processor.Reply(req, "topic config "+name, out)
}

// getTopicStatsInfo is GET_TOPIC_STATS_INFO (202): one entry per queue id in
// 0..max(read, write)-1, from the store when there is one, else zeros.
func (p *Processor) getTopicStatsInfo(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	name := f.Str("topic")
	if err := f.Err(); err != nil {
		return nil, badRequest("%v", err)
	}
	tc, ok := p.d.Topics.Get(name)
	if !ok {
		return nil, fmt.Errorf("%w: topic[%s] not exist", processor.ErrTopicNotExist, name)
	}
	brokerName := p.d.Config.Get().BrokerName
	stats := protocol.TopicStatsTable{OffsetTable: protocol.MQMap[protocol.TopicOffset]{}}
	for q := range max(tc.ReadQueueNums, tc.WriteQueueNums) {
		var off protocol.TopicOffset
		if s := p.d.Offsets; s != nil {
			off.MinOffset = max(s.MinOffsetInQueue(name, q), 0)
			off.MaxOffset = max(s.MaxOffsetInQueue(name, q), 0)
			if off.MaxOffset > 0 {
				off.LastUpdateTimestamp = s.MessageStoreTimestamp(name, q, off.MaxOffset-1)
			}
		}
		stats.OffsetTable[protocol.MessageQueue{BrokerName: brokerName, QueueID: q, Topic: name}] = off
	}
	if t, ok := p.d.Offsets.(TopicPutTps); ok {
		stats.TopicPutTps = t.TopicPutTps(name)
	}
	return processor.ReplyMQKeyed(req, "topic stats "+name, stats)
}

// systemTopicList is GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305): the reserved
// topic names and the topics the broker created at boot, as Apache's
// TopicValidator.getSystemTopicSet (mqadmin exportMetadata leaves them
// out).
func (p *Processor) systemTopicList(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	return processor.Reply(req, "system topics", protocol.TopicList{TopicList: p.d.Topics.SystemTopics()})
}
