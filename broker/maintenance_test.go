package broker

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/internal/testutil/fakens"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// TestMaintenanceCodes: the store maintenance and cold-data codes over the
// wire (Apache's answers: codes, remarks, bodies) and their effect on the
// store.
func TestMaintenanceCodes(t *testing.T) {
	b, invoke := startAdminTestBroker(t)
	ctx := context.Background()
	for _, topic := range []string{"Used", "Unused"} {
		if r := invoke(code.UpdateAndCreateTopic, map[string]string{"topic": topic, "readQueueNums": "2", "writeQueueNums": "2", "perm": "6"}, nil); r.Code != code.Success {
			t.Fatalf("create %s: %d %s", topic, r.Code, r.Remark)
		}
		for i := range 3 {
			m := &message.Message{Topic: topic, QueueID: 0, Body: []byte("x"), Properties: map[string]string{"TAGS": "TagA"}, BornTimestamp: time.Now().UnixMilli()}
			if _, err := b.store.PutMessage(ctx, m); err != nil {
				t.Fatalf("put %d: %v", i, err)
			}
		}
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		if b.store.MaxOffset("Unused", 0) < 3 || b.store.MaxOffset("Used", 0) < 3 {
			return context.DeadlineExceeded
		}
		return nil
	})

	// 321: entries from an index, bounds, the remark past the end.
	r := invoke(321, map[string]string{"topic": "Used", "queueId": "0", "index": "1", "count": "5", "consumerGroup": "gNone"}, nil)
	var body struct {
		FilterData    string `json:"filterData"`
		MaxQueueIndex int64  `json:"maxQueueIndex"`
		MinQueueIndex int64  `json:"minQueueIndex"`
		QueueData     []struct {
			PhysicOffset int64 `json:"physicOffset"`
			PhysicSize   int32 `json:"physicSize"`
			TagsCode     int64 `json:"tagsCode"`
		} `json:"queueData"`
	}
	if r.Code != code.Success || json.Unmarshal(r.Body, &body) != nil {
		t.Fatalf("321: %d %s %s", r.Code, r.Remark, r.Body)
	}
	if body.MaxQueueIndex != 3 || body.MinQueueIndex != 0 || len(body.QueueData) != 2 || body.FilterData != "gNone@Used is not online!" {
		t.Errorf("321 body %s", r.Body)
	}
	if len(body.QueueData) > 0 && (body.QueueData[0].PhysicSize <= 0 || body.QueueData[0].TagsCode != int64(javaHash("TagA"))) {
		t.Errorf("321 entry %+v", body.QueueData[0])
	}
	if r := invoke(321, map[string]string{"topic": "Used", "queueId": "0", "index": "3", "count": "5"}, nil); r.Code != code.Success || r.Remark != "Index 3 of 0@Used is not exist!" || len(r.Body) != 0 {
		t.Errorf("321 past the end: %d %q %s", r.Code, r.Remark, r.Body)
	}
	if r := invoke(321, map[string]string{"topic": "Nope", "queueId": "0", "index": "0", "count": "1"}, nil); r.Code != code.SystemError || r.Remark != "0@Nope is not exist!" {
		t.Errorf("321 unknown queue: %d %q", r.Code, r.Remark)
	}

	// 316: the queues of a topic no longer in the table go; Used stays.
	if _, err := b.topics.Delete("Unused"); err != nil {
		t.Fatal(err)
	}
	if r := invoke(316, nil, nil); r.Code != code.Success {
		t.Fatalf("316: %d %s", r.Code, r.Remark)
	}
	if q := b.store.Queues("Unused"); len(q) != 0 {
		t.Errorf("Unused keeps queues %v", q)
	}
	if q := b.store.Queues("Used"); len(q) == 0 {
		t.Error("Used lost its queues")
	}
	// 306 with nothing expired: success, nothing destroyed.
	if r := invoke(306, nil, nil); r.Code != code.Success || len(b.store.Queues("Used")) == 0 {
		t.Errorf("306: %d %s", r.Code, r.Remark)
	}
	// 329: success; the next retention round deletes expired files.
	if r := invoke(329, nil, nil); r.Code != code.Success {
		t.Errorf("329: %d %s", r.Code, r.Remark)
	}

	// 2004: Apache's remarks; mode 1 turns dataReadAheadEnable off.
	for _, tc := range []struct {
		ext    map[string]string
		code   int32
		remark string
	}{
		{map[string]string{"READ_AHEAD_MODE": "1"}, code.Success, "set commitlog readahead mode success, mode: 1"},
		{map[string]string{"READ_AHEAD_MODE": "2"}, code.InvalidParameter, "set commitlog readahead mode param value error"},
		{map[string]string{"READ_AHEAD_MODE": "x"}, code.SystemError, "set commitlog readahead mode failed"},
	} {
		if r := invoke(2004, tc.ext, nil); r.Code != tc.code || r.Remark != tc.remark {
			t.Errorf("2004 %v: %d %q, want %d %q", tc.ext, r.Code, r.Remark, tc.code, tc.remark)
		}
	}
	if b.cfg.Get().DataReadAheadEnable || b.store.CommitLog().ReadAhead() {
		t.Error("mode 1 left read-ahead on")
	}
	if r := invoke(2004, map[string]string{"READ_AHEAD_MODE": "0"}, nil); r.Code != code.Success || !b.store.CommitLog().ReadAhead() {
		t.Errorf("mode 0: %d %q", r.Code, r.Remark)
	}

	// 2001-2003: the group table.
	if r := invoke(2001, nil, []byte("gA=100\ngB=200\ngC=x\n")); r.Code != code.Success {
		t.Fatalf("2001: %d %s", r.Code, r.Remark)
	}
	if r := invoke(2002, nil, []byte("gB")); r.Code != code.Success {
		t.Fatalf("2002: %d %s", r.Code, r.Remark)
	}
	r = invoke(2003, nil, nil)
	want := `{"runtimeTable":{},"configTable":{"gA":100},"cgColdReadThreshold":3145728,"globalColdReadThreshold":104857600,"globalAcc":0}`
	if r.Code != code.Success || string(r.Body) != want {
		t.Errorf("2003: %d %s, want %s", r.Code, r.Body, want)
	}

	// 908 on a master: success, nothing recorded; 200056: success.
	if r := invoke(code.ResetMasterFlushOffset, map[string]string{"masterFlushOffset": "123"}, nil); r.Code != code.Success || b.store.CommitLog().MasterFlushedOffset() != 0 {
		t.Errorf("908 on a master: %d %s, recorded %d", r.Code, r.Remark, b.store.CommitLog().MasterFlushedOffset())
	}
	if r := invoke(200056, nil, nil); r.Code != code.Success {
		t.Errorf("200056: %d %s", r.Code, r.Remark)
	}
}

// startAdminTestBroker starts a broker on a fake nameserver and returns it
// with a request sender.
func startAdminTestBroker(t *testing.T) (*Broker, func(c int32, ext map[string]string, body []byte) *remoting.Command) {
	t.Helper()
	ns := fakens.Start(t)
	b, err := New(testConfig(t, t.TempDir(), ns.Addr()), nil, WithRegisterTiming(time.Hour, time.Hour, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Shutdown(context.Background()) })
	return b, invoker(t, b)
}

func javaHash(s string) int32 {
	var h int32
	for _, c := range s {
		h = 31*h + c
	}
	return h
}

// TestOffsetAdminCodes: CLONE_GROUP_OFFSET (314), QUERY_SUBSCRIPTION_BY_CONSUMER
// (345), QUERY_CORRECTION_OFFSET (308) and QUERY_CONSUME_TIME_SPAN (303)
// over the wire, on committed offsets and stored messages.
func TestOffsetAdminCodes(t *testing.T) {
	b, invoke := startAdminTestBroker(t)
	ctx := context.Background()
	if r := invoke(code.UpdateAndCreateTopic, map[string]string{"topic": "OT", "readQueueNums": "2", "writeQueueNums": "2", "perm": "6"}, nil); r.Code != code.Success {
		t.Fatalf("create: %d %s", r.Code, r.Remark)
	}
	for i := range 4 {
		m := &message.Message{Topic: "OT", QueueID: int32(i % 2), Body: []byte("x"), BornTimestamp: time.Now().UnixMilli()}
		if _, err := b.store.PutMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		if b.store.MaxOffset("OT", 1) < 2 {
			return context.DeadlineExceeded
		}
		return nil
	})
	b.store.CommitOffset("g1", "OT", 0, 2)
	b.store.CommitOffset("g1", "OT", 1, 1)
	b.store.CommitOffset("g3", "OT", 0, 1)

	if r := invoke(code.CloneGroupOffset, map[string]string{"srcGroup": "g1", "destGroup": "g2", "topic": "OT", "offline": "true"}, nil); r.Code != code.Success {
		t.Fatalf("314: %d %s", r.Code, r.Remark)
	}
	for q, want := range []int64{2, 1} {
		if off, ok := b.store.QueryOffset("g2", "OT", int32(q)); !ok || off != want {
			t.Errorf("cloned offset of queue %d: %d %v, want %d", q, off, ok, want)
		}
	}
	r := invoke(code.QuerySubscriptionByConsumer, map[string]string{"group": "g1", "topic": "OT"}, nil)
	if r.Code != code.Success || string(r.Body) != `{"group":"g1","topic":"OT"}` {
		t.Errorf("345: %d %s", r.Code, r.Body)
	}
	// g3 is behind g1 and g2 on queue 0 (Long.MAX_VALUE), has nothing on 1.
	r = invoke(code.QueryCorrectionOffset, map[string]string{"topic": "OT", "compareGroup": "g3", "filterGroups": "g3"}, nil)
	if r.Code != code.Success || string(r.Body) != `{"correctionOffsets":{"0":9223372036854775807,"1":1}}` {
		t.Errorf("308: %d %s", r.Code, r.Body)
	}
	r = invoke(code.QueryConsumeTimeSpan, map[string]string{"topic": "OT", "group": "g1"}, nil)
	var spans struct {
		Set []struct {
			ConsumeTimeStamp, DelayTime, MaxTimeStamp, MinTimeStamp int64
		} `json:"consumeTimeSpanSet"`
	}
	if r.Code != code.Success || json.Unmarshal(r.Body, &spans) != nil || len(spans.Set) != 2 {
		t.Fatalf("303: %d %s", r.Code, r.Body)
	}
	if s := spans.Set[0]; s.MinTimeStamp <= 0 || s.MaxTimeStamp < s.MinTimeStamp || s.ConsumeTimeStamp != s.MaxTimeStamp || s.DelayTime != 0 {
		t.Errorf("303 queue 0 (all consumed): %+v", s)
	}
	if s := spans.Set[1]; s.DelayTime < 0 || s.ConsumeTimeStamp != s.MinTimeStamp || s.MaxTimeStamp < s.MinTimeStamp {
		t.Errorf("303 queue 1: %+v", s)
	}
	if r := invoke(code.QueryConsumeTimeSpan, map[string]string{"topic": "Nope", "group": "g1"}, nil); r.Code != code.TopicNotExist || r.Remark != "topic[Nope] not exist" {
		t.Errorf("303 unknown topic: %d %q", r.Code, r.Remark)
	}

	// 353: forbid g1 to read OT, read it back, in the group table (201), then allow it again.
	for _, tc := range []struct {
		ext  map[string]string
		body string
	}{
		{map[string]string{"group": "g1", "topic": "OT", "readable": "false"}, `{"group":"g1","readable":false,"topic":"OT"}`},
		{map[string]string{"group": "g1", "topic": "OT"}, `{"group":"g1","readable":false,"topic":"OT"}`},
		{map[string]string{"group": "g1", "topic": "OT", "readable": "true"}, `{"group":"g1","readable":true,"topic":"OT"}`},
	} {
		if r := invoke(code.UpdateAndGetGroupForbidden, tc.ext, nil); r.Code != code.Success || string(r.Body) != tc.body {
			t.Errorf("353 %v: %d %s, want %s", tc.ext, r.Code, r.Body, tc.body)
		}
		if tc.ext["readable"] == "false" {
			if r := invoke(code.GetAllSubscriptionGroupConfig, nil, nil); !strings.Contains(string(r.Body), `"forbiddenTable":{"g1":{"OT":4}}`) {
				t.Errorf("201 after 353: %s", r.Body)
			}
		}
	}
}
