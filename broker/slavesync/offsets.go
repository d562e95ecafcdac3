package slavesync

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/broker/store/offset"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// OffsetTable is what GET_ALL_CONSUMER_OFFSET reads: the broker's consumer
// offset store (offset.Store).
type OffsetTable interface {
	Range(f func(offset.Key, int64) bool)
	Version() (counter, openedMs int64)
}

// topicGroupSep joins topic and group in the offset table's keys
// (ConsumerOffsetManager.TOPIC_GROUP_SEPARATOR).
const topicGroupSep = "@"

// EncodeOffsets is the GET_ALL_CONSUMER_OFFSET body (Java's
// ConsumerOffsetSerializeWrapper, as ConsumerOffsetManager.encode writes
// it): {"dataVersion":{…},"offsetTable":{"topic@group":{0:12,1:7}}} with
// the queue ids as bare keys, as fastjson writes a Map<Integer,Long>.
// Every offset goes into offsetTable, those of LMQ and lite topics too: an
// Apache slave copies only that table (its lmqOffsetTable is left behind,
// upstream issue #8509), and ours reads both.
func EncodeOffsets(t OffsetTable) []byte {
	byKey := map[string]map[int32]int64{}
	t.Range(func(k offset.Key, v int64) bool {
		tg := k.Topic + topicGroupSep + k.Group
		if byKey[tg] == nil {
			byKey[tg] = map[int32]int64{}
		}
		byKey[tg][k.QueueID] = v
		return true
	})
	counter, opened := t.Version()
	dv := protocol.MustMarshal(protocol.DataVersion{Counter: counter, Timestamp: opened})
	b := make([]byte, 0, 64+len(byKey)*48)
	b = append(b, `{"dataVersion":`...)
	b = append(b, dv...)
	b = append(b, `,"offsetTable":{`...)
	for i, tg := range slices.Sorted(maps.Keys(byKey)) {
		if i > 0 {
			b = append(b, ',')
		}
		key, _ := json.Marshal(tg) // a string always encodes
		b = append(b, key...)
		b = append(b, ":{"...)
		queues := byKey[tg]
		for j, q := range slices.Sorted(maps.Keys(queues)) {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(q), 10)
			b = append(b, ':')
			b = strconv.AppendInt(b, queues[q], 10)
		}
		b = append(b, '}')
	}
	return append(b, "}}"...)
}

// Offsets is a decoded GET_ALL_CONSUMER_OFFSET body.
type Offsets struct {
	DataVersion protocol.DataVersion
	Table       map[offset.Key]int64
}

// DecodeOffsets parses a GET_ALL_CONSUMER_OFFSET body: offsetTable, plus
// lmqOffsetTable ("topic@group" → offset of queue 0), which an Apache
// master running LmqConsumerOffsetManager keeps apart. Keys without a
// separator are skipped.
func DecodeOffsets(body []byte) (Offsets, error) {
	var w struct {
		DataVersion    protocol.DataVersion       `json:"dataVersion"`
		OffsetTable    map[string]map[int32]int64 `json:"offsetTable"`
		LmqOffsetTable map[string]int64           `json:"lmqOffsetTable"`
	}
	if err := protocol.Unmarshal(body, &w); err != nil {
		return Offsets{}, fmt.Errorf("slavesync: consumer offsets: %w", err)
	}
	out := Offsets{DataVersion: w.DataVersion, Table: make(map[offset.Key]int64, len(w.OffsetTable)+len(w.LmqOffsetTable))}
	for tg, queues := range w.OffsetTable {
		topic, group, ok := strings.Cut(tg, topicGroupSep)
		if !ok {
			continue
		}
		for q, v := range queues {
			out.Table[offset.Key{Group: group, Topic: topic, QueueID: q}] = v
		}
	}
	for tg, v := range w.LmqOffsetTable {
		topic, group, ok := strings.Cut(tg, topicGroupSep)
		if !ok {
			continue
		}
		out.Table[offset.Key{Group: group, Topic: topic, QueueID: 0}] = v
	}
	return out, nil
}

// OffsetsHandler answers GET_ALL_CONSUMER_OFFSET (43) from t: what a
// slave copies from its master.
func OffsetsHandler(t OffsetTable) remoting.Handler {
	return func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		resp := remoting.NewResponse(req, code.Success, "")
		resp.Body = EncodeOffsets(t)
		return resp, nil
	}
}
