package statictopic

import (
	"context"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// javaBody is a 513 body exactly as the Java mqadmin sends it (fastjson,
// bare integer keys).
const javaBody = `{"bname":"a","currIdMap":{},"dirty":false,"epoch":1700000001000,"hostedQueues":{0:[{"bname":"a","endOffset":-1,"gen":0,"logicOffset":0,"queueId":0,"startOffset":0,"timeOfEnd":-1,"timeOfStart":-1}],1:[{"bname":"a","endOffset":-1,"gen":0,"logicOffset":0,"queueId":1,"startOffset":0,"timeOfEnd":-1,"timeOfStart":-1}]},"scope":"__global__","topic":"ST","totalQueues":2}`

func rawStaticReq(queues string, body string, kv ...string) *remoting.Command {
	ext := map[string]string{"topic": tpc, "defaultTopic": "TBW102", "readQueueNums": queues, "writeQueueNums": queues,
		"perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "force": "false"}
	for i := 0; i+1 < len(kv); i += 2 {
		ext[kv[i]] = kv[i+1]
	}
	return remoting.NewRequest(code.UpdateAndCreateStaticTopic, ext, []byte(body))
}

func TestUpdateAndCreateStaticTopic(t *testing.T) {
	c := newCluster(t, "a")
	a := c.nodes["a"]
	registered := 0
	a.svc.d.Registered = func(context.Context) { registered++ }

	r := a.do(t, rawStaticReq("2", javaBody))
	if r.Code != code.Success {
		t.Fatalf("Java body: %d %s", r.Code, r.Remark)
	}
	tc, ok := a.topics.Get(tpc)
	if !ok || tc.ReadQueueNums != 2 || tc.WriteQueueNums != 2 || tc.Perm != 6 || tc.Order {
		t.Fatalf("topic config %+v", tc)
	}
	if d, ok := a.mgr.Get(tpc); !ok || len(d.HostedQueues) != 2 || d.Epoch != 1700000001000 {
		t.Fatalf("mapping %+v", d)
	}
	if registered != 1 {
		t.Fatalf("registered %d times, want 1", registered)
	}

	withBname := strings.ReplaceAll(javaBody, `"bname":"a","currIdMap"`, `"bname":"b","currIdMap"`)
	olderEpoch := strings.ReplaceAll(javaBody, "1700000001000", "1700000000000")
	twice := strings.ReplaceAll(javaBody, `"queueId":1`, `"queueId":0`)
	newer := strings.ReplaceAll(javaBody, "1700000001000", "1700000002000")
	for _, tc := range []struct {
		name   string
		req    *remoting.Command
		code   int32
		remark string
	}{
		{"no body", rawStaticReq("2", ""), code.InvalidParameter, "empty body"},
		{"garbage body", rawStaticReq("2", "{not json"), code.InvalidParameter, "decode"},
		{"bad topic name", rawStaticReq("2", javaBody, "topic", "bad topic!"), code.InvalidParameter, "topic"},
		{"system topic", rawStaticReq("2", javaBody, "topic", "TBW102"), code.InvalidParameter, "system topic"},
		{"missing queue numbers", rawStaticReq("", javaBody), code.InvalidParameter, "readQueueNums"},
		{"bad filter type", rawStaticReq("2", javaBody, "topicFilterType", "NOPE"), code.InvalidParameter, "topicFilterType"},
		{"detail of another topic", rawStaticReq("2", strings.ReplaceAll(javaBody, `"topic":"ST"`, `"topic":"X"`)), code.InvalidParameter, "mapping is for topic"},
		{"detail of another broker", rawStaticReq("2", withBname), code.InvalidParameter, "not this broker"},
		{"queue beyond writeQueueNums", rawStaticReq("1", newer), code.InvalidParameter, "writeQueueNums"},
		{"physical queue mapped twice", rawStaticReq("2", strings.ReplaceAll(twice, "1700000001000", "1700000002000")), code.InvalidParameter, "mapped twice"},
		{"stale epoch", rawStaticReq("3", olderEpoch), code.SystemError, "older"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, v0 := a.mgr.All()
			tv0 := a.topics.DataVersion()
			r := a.do(t, tc.req)
			if r.Code != tc.code || !strings.Contains(r.Remark, tc.remark) {
				t.Fatalf("code %d remark %q, want %d containing %q", r.Code, r.Remark, tc.code, tc.remark)
			}
			// Refused: neither the mapping nor the topic config moved.
			if !a.mgr.DataVersion().Equal(v0) || !a.topics.DataVersion().Equal(tv0) {
				t.Fatalf("refusal changed state")
			}
			if tc, _ := a.topics.Get(tpc); tc.ReadQueueNums != 2 {
				t.Fatalf("topic config changed: %+v", tc)
			}
		})
	}

	// Extending: 3 logic queues, one more physical queue.
	ext := detail("a", 1700000002000, 3, map[int][]protocol.LogicQueueMappingItem{
		0: {it("a", 0, 0, 0)}, 1: {it("a", 0, 1, 0)}, 2: {it("a", 0, 2, 0)}})
	if r := a.do(t, staticReq(t, 3, ext, false)); r.Code != code.Success {
		t.Fatalf("extend: %d %s", r.Code, r.Remark)
	}
	if tc, _ := a.topics.Get(tpc); tc.WriteQueueNums != 3 {
		t.Fatalf("topic config after extend %+v", tc)
	}
	// force replaces whatever the epoch.
	forced := detail("a", 5, 3, map[int][]protocol.LogicQueueMappingItem{0: {it("a", 0, 0, 0)}})
	if r := a.do(t, staticReq(t, 3, forced, true)); r.Code != code.Success {
		t.Fatalf("force: %d %s", r.Code, r.Remark)
	}
	if d, _ := a.mgr.Get(tpc); d.Epoch != 5 || len(d.HostedQueues) != 3 {
		t.Fatalf("forced detail %+v", d)
	}
}
