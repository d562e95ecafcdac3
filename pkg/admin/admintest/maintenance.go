package admintest

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Maintenance answers the store maintenance and cold-data codes the way
// our broker does (broker/admin/maintenance.go): 306, 316, 329, 908 and
// 200056 succeed, 2004 checks its mode, 2001–2003 keep a cold-data group
// table per broker, and 321 reads the Queues set here.
type Maintenance struct {
	fc *Cluster
	// Queues are the consume queues per broker address, keyed "topic@queueId".
	Queues map[string]map[string]Queue
	// Subscriptions are the online subscriptions per "group@topic", as
	// JSON (321 with a consumer group).
	Subscriptions map[string]string

	cold map[string][]coldEntry // broker address → groups in insertion order
}

// Queue is one consume queue: its bounds and the entries from Min on.
type Queue struct {
	Min, Max int64
	Entries  []QueueEntry
}

// QueueEntry is one consume-queue entry.
type QueueEntry struct {
	PhysicOffset int64
	PhysicSize   int32
	TagsCode     int64
}

type coldEntry struct {
	group     string
	threshold int64
}

// AttachMaintenance makes fc answer those codes.
func AttachMaintenance(fc *Cluster) *Maintenance {
	m := &Maintenance{fc: fc, Queues: map[string]map[string]Queue{}, Subscriptions: map[string]string{}, cold: map[string][]coldEntry{}}
	fc.addOverride(m.handle)
	return m
}

func (m *Maintenance) handle(addr string, req *remoting.Command) (*remoting.Command, bool) {
	if m.fc.broker(addr) == nil {
		return nil, false
	}
	switch req.Code {
	case code.CleanExpiredConsumeQueue, code.CleanUnusedTopic, code.DeleteExpiredCommitLog, code.ResetMasterFlushOffset, code.PopRollback:
		return ok(req, nil), true
	case code.SetCommitLogReadMode:
		mode, err := strconv.Atoi(req.Ext("READ_AHEAD_MODE"))
		switch {
		case err != nil:
			return fail(req, code.SystemError, "set commitlog readahead mode failed"), true
		case mode != 0 && mode != 1:
			return fail(req, code.InvalidParameter, "set commitlog readahead mode param value error"), true
		}
		return remoting.NewResponse(req, code.Success, fmt.Sprintf("set commitlog readahead mode success, mode: %d", mode)), true
	case code.UpdateColdDataFlowCtrConfig:
		props := map[string]string{}
		for _, line := range strings.Split(string(req.Body), "\n") {
			if k, v, found := strings.Cut(strings.TrimSpace(line), "="); found && !strings.HasPrefix(k, "#") {
				props[k] = v
			}
		}
		for _, g := range slices.Sorted(maps.Keys(props)) {
			v, err := strconv.ParseInt(strings.TrimSpace(props[g]), 10, 64)
			if err != nil {
				continue
			}
			m.removeCold(addr, g)
			m.cold[addr] = append(m.cold[addr], coldEntry{g, v})
		}
		return ok(req, nil), true
	case code.RemoveColdDataFlowCtrConfig:
		m.removeCold(addr, string(req.Body))
		return ok(req, nil), true
	case code.GetColdDataFlowCtrInfo:
		var b strings.Builder
		for i, e := range m.cold[addr] {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%q:%d", e.group, e.threshold)
		}
		return ok(req, []byte(`{"runtimeTable":{},"configTable":{`+b.String()+`},"cgColdReadThreshold":3145728,"globalColdReadThreshold":104857600,"globalAcc":0}`)), true
	case code.QueryConsumeQueue:
		return m.queryConsumeQueue(addr, req), true
	}
	return nil, false
}

func (m *Maintenance) removeCold(addr, group string) {
	m.cold[addr] = slices.DeleteFunc(m.cold[addr], func(e coldEntry) bool { return e.group == group })
}

func (m *Maintenance) queryConsumeQueue(addr string, req *remoting.Command) *remoting.Command {
	topic, qid := req.Ext("topic"), req.Ext("queueId")
	q, found := m.Queues[addr][topic+"@"+qid]
	if !found {
		return fail(req, code.SystemError, "%s@%s is not exist!", qid, topic)
	}
	index, _ := strconv.ParseInt(req.Ext("index"), 10, 64)
	count, _ := strconv.ParseInt(req.Ext("count"), 10, 64)
	var fields []string
	if g, has := req.ExtFields["consumerGroup"]; has {
		if sub, online := m.Subscriptions[g+"@"+topic]; online {
			fields = append(fields, `"filterData":"null"`, `"subscriptionData":`+sub)
		} else {
			fields = append(fields, fmt.Sprintf(`"filterData":"%s@%s is not online!"`, g, topic))
		}
	}
	if index < q.Min || index >= q.Max {
		return remoting.NewResponse(req, code.Success, fmt.Sprintf("Index %d of %s@%s is not exist!", index, qid, topic))
	}
	var data []string
	for off := index; off < q.Max && off-index < count; off++ {
		e := q.Entries[off-q.Min]
		data = append(data, fmt.Sprintf(`{"eval":false,"physicOffset":%d,"physicSize":%d,"tagsCode":%d}`, e.PhysicOffset, e.PhysicSize, e.TagsCode))
	}
	fields = append(fields, fmt.Sprintf(`"maxQueueIndex":%d`, q.Max), fmt.Sprintf(`"minQueueIndex":%d`, q.Min), `"queueData":[`+strings.Join(data, ",")+`]`)
	return ok(req, []byte("{"+strings.Join(fields, ",")+"}"))
}
