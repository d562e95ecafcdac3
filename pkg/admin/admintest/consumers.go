package admintest

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// OffsetWrapper is one queue of a fake group's consume stats, as the
// admin client decodes it.
type OffsetWrapper = admin.OffsetWrapper

// Consumers fakes the consumer administration of the brokers: consume
// stats (208), connections (203, 204), running info (307, as if forwarded
// to the client), offset resets (222, 15, 29, 30), subscription groups
// (200, 201, 207, 352, 225), QUERY_TOPICS_BY_CONSUMER (343),
// INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223), GET_BROKER_CONSUME_STATS
// (317), GET_ALL_PRODUCER_INFO (328), SET_MESSAGE_REQUEST_MODE (401) and
// VIEW_BROKER_STATS_DATA (315). Install it with
// AttachConsumers; the maps may be set up before requests flow, or under
// Cluster.Lock.
type Consumers struct {
	fc *Cluster

	// Offsets: broker address → group → queue → offsets (208, 222).
	Offsets map[string]map[string]protocol.MQMap[OffsetWrapper]
	// ConsumeTps per broker address and group.
	ConsumeTps map[string]map[string]float64
	// Connections: group → ConsumerConnection JSON (203, on every broker);
	// a group without one is not online (206).
	Connections map[string]string
	// Producers: group → ProducerConnection JSON (204); absent groups
	// answer SYSTEM_ERROR as our broker does.
	Producers map[string]string
	// RunningInfo: client id → ConsumerRunningInfo JSON (307); absent
	// clients are not online.
	RunningInfo map[string]string
	// Status: client id → offsets it holds (223).
	Status map[string]protocol.MQMap[int64]
	// NotOnline lists groups for which 222 answers CONSUMER_NOT_ONLINE (a
	// broker that only resets through clients, none online).
	NotOnline map[string]bool
	// SubGroups: broker address → group → SubscriptionGroupConfig JSON.
	SubGroups map[string]map[string]string
	// SearchOffset answers SEARCH_OFFSET_BY_TIMESTAMP (29) and, with
	// timestamp -1, GET_MAX_OFFSET (30): default the broker offset for a
	// negative timestamp, else 0.
	SearchOffset func(addr, topic string, queueID int, timestamp int64) int64
	// ProducerTables: broker address → GET_ALL_PRODUCER_INFO (328) body;
	// a broker without one answers an empty table.
	ProducerTables map[string]string
	// RequestModes: broker address → SET_MESSAGE_REQUEST_MODE (401) bodies
	// received, in order.
	RequestModes map[string][]string
	// BrokerStats: broker address → "statsName statsKey" → the
	// VIEW_BROKER_STATS_DATA (315) answer; absent ones answer SYSTEM_ERROR
	// "The stats <name> <key> not exist", as Apache's broker.
	BrokerStats map[string]map[string]admin.BrokerStatsData
}

// AttachConsumers installs a consumer fake on fc (it sets fc.Override,
// keeping a previous Override as a fallback) and returns it.
func AttachConsumers(fc *Cluster) *Consumers {
	cs := &Consumers{
		fc:          fc,
		Offsets:     map[string]map[string]protocol.MQMap[OffsetWrapper]{},
		ConsumeTps:  map[string]map[string]float64{},
		Connections: map[string]string{},
		Producers:   map[string]string{},
		RunningInfo: map[string]string{},
		Status:      map[string]protocol.MQMap[int64]{},
		SubGroups:   map[string]map[string]string{},
		NotOnline:   map[string]bool{},

		ProducerTables: map[string]string{},
		RequestModes:   map[string][]string{},
		BrokerStats:    map[string]map[string]admin.BrokerStatsData{},
	}
	fc.addOverride(cs.handle)
	return cs
}

// SetOffset records a group's offsets of one queue on the broker at addr.
func (cs *Consumers) SetOffset(addr, group string, mq protocol.MessageQueue, w OffsetWrapper) {
	if cs.Offsets[addr] == nil {
		cs.Offsets[addr] = map[string]protocol.MQMap[OffsetWrapper]{}
	}
	if cs.Offsets[addr][group] == nil {
		cs.Offsets[addr][group] = protocol.MQMap[OffsetWrapper]{}
	}
	cs.Offsets[addr][group][mq] = w
}

func mqBody(req *remoting.Command, v any) *remoting.Command {
	b, err := protocol.MarshalMQKeyed(v)
	if err != nil {
		return fail(req, code.SystemError, "%v", err)
	}
	return ok(req, b)
}

func (cs *Consumers) handle(addr string, req *remoting.Command) (*remoting.Command, bool) {
	b := cs.fc.broker(addr)
	if b == nil {
		return nil, false
	}
	switch req.Code {
	case code.GetConsumeStats:
		group, topic := req.Ext("consumerGroup"), req.Ext("topic")
		st := struct {
			ConsumeTps  float64                       `json:"consumeTps"`
			OffsetTable protocol.MQMap[OffsetWrapper] `json:"offsetTable"`
		}{cs.ConsumeTps[addr][group], protocol.MQMap[OffsetWrapper]{}}
		for mq, w := range cs.Offsets[addr][group] {
			if topic == "" || mq.Topic == topic {
				st.OffsetTable[mq] = w
			}
		}
		return mqBody(req, st), true
	case code.GetConsumerConnectionList:
		g := req.Ext("consumerGroup")
		return stored(req, cs.Connections, g, code.ConsumerNotOnline, "the consumer group[%s] not online", g), true
	case code.GetProducerConnectionList:
		g := req.Ext("producerGroup")
		return stored(req, cs.Producers, g, code.SystemError, "the producer group[%s] not exist", g), true
	case code.GetConsumerRunningInfo:
		g, id := req.Ext("consumerGroup"), req.Ext("clientId")
		return stored(req, cs.RunningInfo, id, code.SystemError, "The Consumer <%s> <%s> not online", g, id), true
	case code.InvokeBrokerToGetConsumerStatus:
		table := map[string]protocol.MQMap[int64]{}
		for id, t := range cs.Status {
			if c := req.Ext("clientAddr"); c == "" || c == id {
				table[id] = t
			}
		}
		return mqBody(req, struct {
			ConsumerTable     map[string]protocol.MQMap[int64] `json:"consumerTable"`
			MessageQueueTable protocol.MQMap[int64]            `json:"messageQueueTable"`
		}{table, protocol.MQMap[int64]{}}), true
	case code.QueryTopicsByConsumer:
		var topics []string
		for mq := range cs.Offsets[addr][req.Ext("group")] {
			topics = append(topics, mq.Topic)
		}
		sort.Strings(topics)
		topics = slices.Compact(topics)
		return ok(req, protocol.MustMarshal(protocol.TopicList{BrokerAddr: addr, TopicList: topics})), true
	case code.InvokeBrokerToResetOffset:
		return cs.reset(addr, b, req), true
	case code.UpdateConsumerOffset:
		qid, _ := strconv.Atoi(req.Ext("queueId"))
		off, _ := strconv.ParseInt(req.Ext("commitOffset"), 10, 64)
		mq := protocol.MessageQueue{Topic: req.Ext("topic"), BrokerName: b.Name, QueueID: qid}
		w := cs.Offsets[addr][req.Ext("consumerGroup")][mq]
		w.ConsumerOffset = off
		cs.SetOffset(addr, req.Ext("consumerGroup"), mq, w)
		return ok(req, nil), true
	case code.SearchOffsetByTimestamp, code.GetMaxOffset:
		qid, _ := strconv.Atoi(req.Ext("queueId"))
		ts := int64(-1)
		if req.Code == code.SearchOffsetByTimestamp {
			ts, _ = strconv.ParseInt(req.Ext("timestamp"), 10, 64)
		}
		resp := ok(req, nil)
		resp.SetExt("offset", strconv.FormatInt(cs.searchOffset(addr, b.Name, req.Ext("topic"), qid, ts), 10))
		return resp, true
	case code.UpdateAndCreateSubscriptionGroup:
		var g struct {
			GroupName string `json:"groupName"`
		}
		if err := json.Unmarshal(req.Body, &g); err != nil || g.GroupName == "" {
			return fail(req, code.InvalidParameter, "bad subscription group body"), true
		}
		if cs.SubGroups[addr] == nil {
			cs.SubGroups[addr] = map[string]string{}
		}
		cs.SubGroups[addr][g.GroupName] = string(req.Body)
		return ok(req, nil), true
	case code.UpdateAndCreateSubscriptionGroupList:
		var list struct {
			GroupConfigList []json.RawMessage `json:"groupConfigList"`
		}
		if err := json.Unmarshal(req.Body, &list); err != nil {
			return fail(req, code.InvalidParameter, "bad subscription group list: %v", err), true
		}
		names := make([]string, len(list.GroupConfigList))
		for i, raw := range list.GroupConfigList {
			var g struct {
				GroupName string `json:"groupName"`
			}
			if err := json.Unmarshal(raw, &g); err != nil || protocol.ValidateGroup(g.GroupName) != nil {
				return fail(req, code.InvalidParameter, "bad subscription group %s", raw), true
			}
			names[i] = g.GroupName
		}
		if cs.SubGroups[addr] == nil {
			cs.SubGroups[addr] = map[string]string{}
		}
		for i, raw := range list.GroupConfigList {
			cs.SubGroups[addr][names[i]] = string(raw)
		}
		return ok(req, nil), true
	case code.GetAllSubscriptionGroupConfig:
		// The whole table in one page, without totalGroupNum (as an old
		// broker answers).
		table := map[string]json.RawMessage{}
		for name, body := range cs.SubGroups[addr] {
			table[name] = json.RawMessage(body)
		}
		return ok(req, protocol.MustMarshal(struct {
			DataVersion            protocol.DataVersion       `json:"dataVersion"`
			SubscriptionGroupTable map[string]json.RawMessage `json:"subscriptionGroupTable"`
		}{protocol.DataVersion{Counter: 2, Timestamp: 1700000000000}, table})), true
	case code.GetBrokerConsumeStats:
		return cs.brokerConsumeStats(addr, req), true
	case code.ViewBrokerStatsData:
		name, key := req.Ext("statsName"), req.Ext("statsKey")
		d, found := cs.BrokerStats[addr][name+" "+key]
		if !found {
			return fail(req, code.SystemError, "The stats <%s> <%s> not exist", name, key), true
		}
		return ok(req, protocol.MustMarshal(d)), true
	case code.GetAllProducerInfo:
		if t, found := cs.ProducerTables[addr]; found {
			return ok(req, []byte(t)), true
		}
		return ok(req, []byte(`{"data":{}}`)), true
	case code.SetMessageRequestMode:
		var m struct {
			ConsumerGroup string `json:"consumerGroup"`
			Topic         string `json:"topic"`
		}
		if err := json.Unmarshal(req.Body, &m); err != nil || m.ConsumerGroup == "" || m.Topic == "" {
			return fail(req, code.InvalidParameter, "bad SetMessageRequestModeRequestBody"), true
		}
		if _, found := b.Topics[m.Topic]; !found {
			return fail(req, code.TopicNotExist, "topic[%s] not exist", m.Topic), true
		}
		cs.RequestModes[addr] = append(cs.RequestModes[addr], string(req.Body))
		return ok(req, nil), true
	case code.DeleteSubscriptionGroup:
		delete(cs.SubGroups[addr], req.Ext("groupName"))
		return ok(req, nil), true
	case code.GetSubscriptionGroupConfig:
		g := req.Ext("group")
		return stored(req, cs.SubGroups[addr], g, code.SubscriptionGroupNotExist, "No group in this broker: %s", g), true
	}
	return nil, false
}

// stored answers req with the body m holds under key, or fails with code
// failCode and the message format makes of args.
func stored(req *remoting.Command, m map[string]string, key string, failCode int32, format string, args ...any) *remoting.Command {
	body, found := m[key]
	if !found {
		return fail(req, failCode, format, args...)
	}
	return ok(req, []byte(body))
}

func (cs *Consumers) searchOffset(addr, brokerName, topic string, qid int, ts int64) int64 {
	if cs.SearchOffset != nil {
		return cs.SearchOffset(addr, topic, qid, ts)
	}
	if ts >= 0 {
		return 0
	}
	var hi int64
	for _, offs := range cs.Offsets[addr] {
		if w, found := offs[protocol.MessageQueue{Topic: topic, BrokerName: brokerName, QueueID: qid}]; found {
			hi = max(hi, w.BrokerOffset)
		}
	}
	return hi
}

// reset is a server-side reset: every read queue of the topic moves to the
// searched offset (or queueId to offset), committed, and answered.
func (cs *Consumers) reset(addr string, b *Broker, req *remoting.Command) *remoting.Command {
	if cs.NotOnline[req.Ext("group")] {
		return fail(req, code.ConsumerNotOnline, "Consumer not online, so can not reset offset, Group: %s Topic: %s Timestamp: %s",
			req.Ext("group"), req.Ext("topic"), req.Ext("timestamp"))
	}
	topic, group := req.Ext("topic"), req.Ext("group")
	tc, found := b.Topics[topic]
	if !found {
		return fail(req, code.TopicNotExist, "Topic %s does not exist", topic)
	}
	ts, _ := strconv.ParseInt(req.Ext("timestamp"), 10, 64)
	qid, err := strconv.Atoi(req.Ext("queueId"))
	if err != nil {
		qid = -1
	}
	offset, err := strconv.ParseInt(req.Ext("offset"), 10, 64)
	if err != nil {
		offset = -1
	}
	table := protocol.MQMap[int64]{}
	for q := range tc.ReadQueueNums {
		if qid >= 0 && q != qid {
			continue
		}
		mq := protocol.MessageQueue{Topic: topic, BrokerName: b.Name, QueueID: q}
		off := offset
		if qid < 0 || off < 0 {
			off = cs.searchOffset(addr, b.Name, topic, q, ts)
		}
		w := cs.Offsets[addr][group][mq]
		w.ConsumerOffset = off
		cs.SetOffset(addr, group, mq, w)
		table[mq] = off
	}
	return mqBody(req, struct {
		OffsetTable protocol.MQMap[int64] `json:"offsetTable"`
	}{table})
}

// brokerConsumeStats answers GET_BROKER_CONSUME_STATS (317) from Offsets:
// one entry per group (sorted), one ConsumeStats per topic (sorted).
func (cs *Consumers) brokerConsumeStats(addr string, req *remoting.Command) *remoting.Command {
	type consumeStats struct {
		ConsumeTps  float64                       `json:"consumeTps"`
		OffsetTable protocol.MQMap[OffsetWrapper] `json:"offsetTable"`
	}
	type statsList struct {
		BrokerAddr        string                      `json:"brokerAddr"`
		ConsumeStatsList  []map[string][]consumeStats `json:"consumeStatsList"`
		TotalDiff         int64                       `json:"totalDiff"`
		TotalInflightDiff int64                       `json:"totalInflightDiff"`
	}
	out := statsList{BrokerAddr: addr, ConsumeStatsList: []map[string][]consumeStats{}}
	groups := make([]string, 0, len(cs.Offsets[addr]))
	for g := range cs.Offsets[addr] {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		byTopic := map[string]protocol.MQMap[OffsetWrapper]{}
		for mq, w := range cs.Offsets[addr][g] {
			if byTopic[mq.Topic] == nil {
				byTopic[mq.Topic] = protocol.MQMap[OffsetWrapper]{}
			}
			byTopic[mq.Topic][mq] = w
			out.TotalDiff += w.BrokerOffset - w.ConsumerOffset
			out.TotalInflightDiff += w.PullOffset - w.ConsumerOffset
		}
		topics := make([]string, 0, len(byTopic))
		for t := range byTopic {
			topics = append(topics, t)
		}
		sort.Strings(topics)
		list := make([]consumeStats, 0, len(topics))
		for _, t := range topics {
			list = append(list, consumeStats{ConsumeTps: cs.ConsumeTps[addr][g], OffsetTable: byTopic[t]})
		}
		out.ConsumeStatsList = append(out.ConsumeStatsList, map[string][]consumeStats{g: list})
	}
	return mqBody(req, out)
}
