package e2e

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
	"github.com/rmqgo/rmq/tests/framework"
)

const (
	stTopic = "StaticBrokerE2E"
	stGroup = "static_e2e_cg"
	stMock  = "__syslo__global__"
)

// stItem is a mapping item as the admin builds it.
func stItem(bname string, gen, qid int, logic int64) protocol.LogicQueueMappingItem {
	return protocol.LogicQueueMappingItem{Bname: bname, Gen: gen, QueueID: qid, LogicOffset: logic, EndOffset: -1, TimeOfStart: -1, TimeOfEnd: -1}
}

// bareKeys writes integer map keys without quotes, as the Java admin's
// fastjson does in 513 bodies.
var bareKeys = regexp.MustCompile(`"(\d+)":`)

type stEnv struct {
	t   *testing.T
	ctx context.Context
	adm *admin.Client
	rc  *remoting.Client
}

// update sends UPDATE_AND_CREATE_STATIC_TOPIC through pkg/admin.
func (e *stEnv) update(addr string, queues int, d protocol.TopicQueueMappingDetail) error {
	e.t.Helper()
	body := bareKeys.ReplaceAll(protocol.MustMarshal(d), []byte("$1:"))
	q := strconv.Itoa(queues)
	_, err := e.adm.Invoke(e.ctx, addr, code.UpdateAndCreateStaticTopic, map[string]string{
		"topic": stTopic, "defaultTopic": "TBW102", "readQueueNums": q, "writeQueueNums": q, "perm": "6",
		"topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "force": "false",
	}, body)
	return err
}

func (e *stEnv) mustUpdate(addr string, queues int, d protocol.TopicQueueMappingDetail) {
	e.t.Helper()
	if err := e.update(addr, queues, d); err != nil {
		e.t.Fatalf("513 to %s (%s): %v", addr, d.Bname, err)
	}
}

// call sends any request and returns the response whatever its code.
func (e *stEnv) call(addr string, req *remoting.Command) *remoting.Command {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	resp, err := e.rc.Invoke(ctx, addr, req)
	if err != nil {
		e.t.Fatalf("request %d to %s: %v", req.Code, addr, err)
	}
	return resp
}

func (e *stEnv) send(addr string, logicQueue int, body string) *remoting.Command {
	e.t.Helper()
	return e.call(addr, remoting.NewRequest(code.SendMessageV2, map[string]string{
		"a": "static_e2e_pg", "b": stTopic, "c": "TBW102", "d": "4", "e": strconv.Itoa(logicQueue), "f": "0",
		"g": strconv.FormatInt(time.Now().UnixMilli(), 10), "h": "0", "i": "", "j": "0", "k": "false", "m": "false",
		"n": "broker-x",
	}, []byte(body)))
}

func (e *stEnv) mustSend(addr string, logicQueue int, body string, wantOffset int64) {
	e.t.Helper()
	r := e.send(addr, logicQueue, body)
	if r.Code != code.Success || r.Ext("queueId") != strconv.Itoa(logicQueue) || r.Ext("queueOffset") != strconv.FormatInt(wantOffset, 10) {
		e.t.Fatalf("send %q to logic queue %d on %s: code %d (%s) queueId %s queueOffset %s, want offset %d",
			body, logicQueue, addr, r.Code, r.Remark, r.Ext("queueId"), r.Ext("queueOffset"), wantOffset)
	}
}

func stPull(logicQueue int, offset int64, sysFlag int, suspend time.Duration) *remoting.Command {
	return remoting.NewRequest(code.PullMessage, map[string]string{
		"consumerGroup": stGroup, "topic": stTopic, "queueId": strconv.Itoa(logicQueue),
		"queueOffset": strconv.FormatInt(offset, 10), "maxMsgNums": "3", "sysFlag": strconv.Itoa(sysFlag | pullFlagSubscription),
		"commitOffset": "0", "suspendTimeoutMillis": strconv.FormatInt(suspend.Milliseconds(), 10), "subscription": "*",
		"subVersion": "0", "expressionType": "TAG", "bname": stMock,
	}, nil)
}

func stOffsetReq(c int32, logicQueue int, kv ...string) *remoting.Command {
	ext := map[string]string{"topic": stTopic, "queueId": strconv.Itoa(logicQueue), "consumerGroup": stGroup}
	for i := 0; i+1 < len(kv); i += 2 {
		ext[kv[i]] = kv[i+1]
	}
	return remoting.NewRequest(c, ext, nil)
}

type pulled struct {
	logic int64
	body  string
}

// pullAll follows nextBeginOffset from offset until PULL_NOT_FOUND and
// returns the messages with their logic offsets and the codes seen.
func (e *stEnv) pullAll(addr string, logicQueue int, offset int64) ([]pulled, []int32) {
	e.t.Helper()
	var out []pulled
	var codes []int32
	for range 50 {
		r := e.call(addr, stPull(logicQueue, offset, 0, 0))
		codes = append(codes, r.Code)
		switch r.Code {
		case code.Success:
			msgs, err := message.DecodeAll(r.Body, message.DecodeOptions{})
			if err != nil {
				e.t.Fatal(err)
			}
			delta := remotingtest.ExtInt(e.t, r, "offsetDelta")
			for _, m := range msgs {
				out = append(out, pulled{m.QueueOffset + delta, string(m.Body)})
			}
		case code.PullRetryImmediately:
		case code.PullNotFound:
			return out, codes
		default:
			e.t.Fatalf("pull at %d: code %d %s", offset, r.Code, r.Remark)
		}
		offset = remotingtest.ExtInt(e.t, r, "nextBeginOffset")
	}
	e.t.Fatalf("pull from %d never caught up (codes %v)", offset, codes)
	return nil, nil
}

// TestStaticTopicBroker drives the broker side of static topics with
// hand-built mappings (no planning): create a two-queue static topic over
// two brokers, send through logic queues, remap logic queue 0 from
// broker-a to broker-b as remappingStaticTopic does (new leader, fence,
// decide the logic offset, finalize), send more, and read everything back
// through broker-b across the segment boundary.
func TestStaticTopicBroker(t *testing.T) {
	c := startCluster(t, framework.Options{Brokers: 2})
	a, b := c.Brokers()[0], c.Brokers()[1]
	adm, err := admin.New(admin.Config{NameServers: []string{c.NamesrvAddr()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	rc := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer rc.Close()
	e := &stEnv{t: t, ctx: context.Background(), adm: adm, rc: rc}

	detail := func(bname string, epoch int64, hosted map[int][]protocol.LogicQueueMappingItem) protocol.TopicQueueMappingDetail {
		if hosted == nil {
			hosted = map[int][]protocol.LogicQueueMappingItem{}
		}
		return protocol.TopicQueueMappingDetail{Topic: stTopic, Bname: bname, Epoch: epoch, TotalQueues: 2,
			Scope: protocol.MappingScopeGlobal, CurrIDMap: map[int]int{}, HostedQueues: hosted}
	}
	route := func() *protocol.TopicRouteData {
		t.Helper()
		r := e.call(c.NamesrvAddr(), remoting.NewRequest(code.GetRouteInfoByTopic, map[string]string{"topic": stTopic}, nil))
		if r.Code != code.Success {
			t.Fatalf("route: %d %s", r.Code, r.Remark)
		}
		var rd protocol.TopicRouteData
		if err := protocol.Unmarshal(r.Body, &rd); err != nil {
			t.Fatal(err)
		}
		return &rd
	}
	leaders := func(rd *protocol.TopicRouteData) map[string]string {
		out := map[string]string{}
		for name, info := range rd.TopicQueueMappingByBroker {
			out[name] = fmt.Sprintf("%d:%v", info.Epoch, info.CurrIDMap)
		}
		return out
	}

	// 1. Create: logic 0 on a (physical a/0), logic 1 on b (physical b/0).
	e1 := time.Now().UnixMilli() + 1000
	e.mustUpdate(a.Addr(), 1, detail(a.Name(), e1, map[int][]protocol.LogicQueueMappingItem{0: {stItem(a.Name(), 0, 0, 0)}}))
	e.mustUpdate(b.Addr(), 1, detail(b.Name(), e1, map[int][]protocol.LogicQueueMappingItem{1: {stItem(b.Name(), 0, 0, 0)}}))
	// Refusals change nothing: an older epoch, a physical queue mapped twice.
	if err := e.update(a.Addr(), 1, detail(a.Name(), e1-1, map[int][]protocol.LogicQueueMappingItem{0: {stItem(a.Name(), 0, 0, 0)}})); err == nil {
		t.Fatal("stale epoch accepted")
	}
	if err := e.update(a.Addr(), 1, detail(a.Name(), e1+1, map[int][]protocol.LogicQueueMappingItem{0: {stItem(a.Name(), 0, 0, 0)}, 1: {stItem(a.Name(), 0, 0, 0)}})); err == nil {
		t.Fatal("physical queue mapped twice accepted")
	}
	if got, want := leaders(route()), map[string]string{a.Name(): fmt.Sprintf("%d:map[0:0]", e1), b.Name(): fmt.Sprintf("%d:map[1:0]", e1)}; !reflect.DeepEqual(got, want) {
		t.Fatalf("route mappings %v, want %v", got, want)
	}
	tc, err := adm.GetTopicConfig(e.ctx, a.Addr(), stTopic)
	if err != nil || tc.MappingDetail == nil || tc.MappingDetail.Epoch != e1 || len(tc.MappingDetail.HostedQueues[0]) != 1 {
		t.Fatalf("GET_TOPIC_CONFIG on a: %+v %v", tc, err)
	}

	// 2. Send through the logic queues; the wrong leader answers 501.
	for i := range 5 {
		e.mustSend(a.Addr(), 0, "a"+strconv.Itoa(i), int64(i))
	}
	e.mustSend(b.Addr(), 1, "q1", 0)
	if r := e.send(b.Addr(), 0, "wrong broker"); r.Code != code.NotLeaderForQueue {
		t.Fatalf("send to a non-leader: %d %s", r.Code, r.Remark)
	}
	// Committed before the remap, on the old leader.
	if r := e.call(a.Addr(), stOffsetReq(code.UpdateConsumerOffset, 0, "commitOffset", "3")); r.Code != code.Success {
		t.Fatalf("commit 3: %d %s", r.Code, r.Remark)
	}

	// 3. Remap logic 0 to b (physical b/1) under epoch e2.
	e2 := max(e1+1000, time.Now().UnixMilli())
	remapped := []protocol.LogicQueueMappingItem{stItem(a.Name(), 0, 0, 0), stItem(b.Name(), 1, 1, -1)}
	e.mustUpdate(b.Addr(), 2, detail(b.Name(), e2, map[int][]protocol.LogicQueueMappingItem{0: remapped, 1: {stItem(b.Name(), 0, 0, 0)}}))
	e.mustUpdate(a.Addr(), 1, detail(a.Name(), e2, map[int][]protocol.LogicQueueMappingItem{0: remapped}))
	if r := e.send(a.Addr(), 0, "fenced"); r.Code != code.NotLeaderForQueue {
		t.Fatalf("send to the fenced old leader: %d %s", r.Code, r.Remark)
	}
	stats, err := adm.GetTopicStats(e.ctx, a.Addr(), stTopic)
	if err != nil {
		t.Fatal(err)
	}
	oldMax := stats.OffsetTable[protocol.MessageQueue{Topic: stTopic, BrokerName: a.Name(), QueueID: 0}].MaxOffset
	if oldMax != 5 {
		t.Fatalf("a/0 max %d, want 5", oldMax)
	}
	remapped[1].LogicOffset = 10000 // roundUp(5, 10000)
	e.mustUpdate(b.Addr(), 2, detail(b.Name(), e2, map[int][]protocol.LogicQueueMappingItem{0: remapped, 1: {stItem(b.Name(), 0, 0, 0)}}))
	e.mustUpdate(a.Addr(), 1, detail(a.Name(), e2, map[int][]protocol.LogicQueueMappingItem{0: remapped}))
	if got, want := leaders(route()), map[string]string{a.Name(): fmt.Sprintf("%d:map[]", e2), b.Name(): fmt.Sprintf("%d:map[0:1 1:0]", e2)}; !reflect.DeepEqual(got, want) {
		t.Fatalf("route mappings after the remap %v, want %v", got, want)
	}
	// A late registration of the old epoch cannot undo it (nameserver
	// fencing) — and the broker itself refuses the old epoch.
	if err := e.update(b.Addr(), 1, detail(b.Name(), e1, map[int][]protocol.LogicQueueMappingItem{1: {stItem(b.Name(), 0, 0, 0)}})); err == nil {
		t.Fatal("b accepted the old epoch")
	}

	// 4. Send more, on the new leader; remember a time on the boundary.
	time.Sleep(20 * time.Millisecond)
	boundary := time.Now().UnixMilli()
	time.Sleep(20 * time.Millisecond)
	for i := range 4 {
		e.mustSend(b.Addr(), 0, "b"+strconv.Itoa(i), 10000+int64(i))
	}

	// 5. Pull everything from logic offset 0 through b.
	got, codes := e.pullAll(b.Addr(), 0, 0)
	want := []pulled{{0, "a0"}, {1, "a1"}, {2, "a2"}, {3, "a3"}, {4, "a4"}, {10000, "b0"}, {10001, "b1"}, {10002, "b2"}, {10003, "b3"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("pulled %v, want %v (codes %v)", got, want, codes)
	}
	if !slicesContain(codes, code.PullRetryImmediately) {
		t.Errorf("no PULL_RETRY_IMMEDIATELY at the boundary: %v", codes)
	}
	if r := e.call(a.Addr(), stPull(0, 0, 0, 0)); r.Code != code.NotLeaderForQueue {
		t.Errorf("pull on the old leader: %d", r.Code)
	}
	for _, tc := range []struct {
		name string
		req  *remoting.Command
		key  string
		want int64
	}{
		{"max", stOffsetReq(code.GetMaxOffset, 0), "offset", 10004},
		{"min", stOffsetReq(code.GetMinOffset, 0), "offset", 0},
		{"search on the boundary", stOffsetReq(code.SearchOffsetByTimestamp, 0, "timestamp", strconv.FormatInt(boundary, 10)), "offset", 10000},
		{"search before everything", stOffsetReq(code.SearchOffsetByTimestamp, 0, "timestamp", "1"), "offset", 0},
		{"search upper on the boundary", stOffsetReq(code.SearchOffsetByTimestamp, 0, "timestamp", strconv.FormatInt(boundary, 10), "boundaryType", "UPPER"), "offset", 4},
		{"committed before the remap survives", stOffsetReq(code.QueryConsumerOffset, 0), "offset", 3},
		{"logic 1 untouched", stOffsetReq(code.GetMaxOffset, 1), "offset", 1},
	} {
		r := e.call(b.Addr(), tc.req)
		if r.Code != code.Success || remotingtest.ExtInt(t, r, tc.key) != tc.want {
			t.Errorf("%s: code %d (%s) %s=%s, want %d", tc.name, r.Code, r.Remark, tc.key, r.Ext(tc.key), tc.want)
		}
	}
	if r := e.call(b.Addr(), stOffsetReq(code.GetEarliestMsgStoreTime, 0)); r.Code != code.Success || remotingtest.ExtInt(t, r, "timestamp") >= boundary {
		t.Errorf("earliest store time: %d %s %s", r.Code, r.Remark, r.Ext("timestamp"))
	}

	// 6. Commits land on the segment that holds them.
	if r := e.call(b.Addr(), stOffsetReq(code.UpdateConsumerOffset, 0, "commitOffset", "4")); r.Code != code.Success {
		t.Fatalf("commit 4: %d %s", r.Code, r.Remark)
	}
	phys := stOffsetReq(code.QueryConsumerOffset, 0, "lo", "false")
	if r := e.call(a.Addr(), phys); r.Code != code.Success || r.Ext("offset") != "4" {
		t.Fatalf("a/0 physical offset: %d %s %s, want 4", r.Code, r.Remark, r.Ext("offset"))
	}
	if r := e.call(b.Addr(), stOffsetReq(code.UpdateConsumerOffset, 0, "commitOffset", "10002")); r.Code != code.Success {
		t.Fatalf("commit 10002: %d %s", r.Code, r.Remark)
	}
	physB := stOffsetReq(code.QueryConsumerOffset, 1, "lo", "false")
	if r := e.call(b.Addr(), physB); r.Code != code.Success || r.Ext("offset") != "2" {
		t.Fatalf("b/1 physical offset: %d %s %s, want 2", r.Code, r.Remark, r.Ext("offset"))
	}

	// 7. Long polling on the leader's end answers once a message arrives.
	done := make(chan *remoting.Command, 1)
	go func() {
		ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
		defer cancel()
		r, err := rc.Invoke(ctx, b.Addr(), stPull(0, 10004, pullFlagSuspend, 5*time.Second))
		if err != nil {
			r = remoting.NewResponse(remoting.NewRequest(0, nil, nil), -1, err.Error())
		}
		done <- r
	}()
	time.Sleep(300 * time.Millisecond)
	e.mustSend(b.Addr(), 0, "late", 10004)
	select {
	case r := <-done:
		if r.Code != code.Success || remotingtest.ExtInt(t, r, "nextBeginOffset") != 10005 {
			t.Fatalf("suspended pull: %d %s next %s", r.Code, r.Remark, r.Ext("nextBeginOffset"))
		}
	case <-time.After(4 * time.Second):
		t.Fatal("suspended pull not woken by the arrival")
	}

	// 8. The mapping survives a restart of b.
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	b.Start(t)
	testutil.Eventually(t, 10*time.Second, func() error {
		r, err := rc.Invoke(e.ctx, b.Addr(), stOffsetReq(code.QueryConsumerOffset, 0))
		if err != nil {
			return err
		}
		if r.Code != code.Success || r.Ext("offset") != "10002" {
			return fmt.Errorf("query after restart: %d %s %s", r.Code, r.Remark, r.Ext("offset"))
		}
		return nil
	})
	if r := e.call(b.Addr(), stOffsetReq(code.GetMaxOffset, 0)); r.Code != code.Success || r.Ext("offset") != "10005" {
		t.Fatalf("max after restart: %d %s %s", r.Code, r.Remark, r.Ext("offset"))
	}

	// 9. Deleting the topic drops the mappings (brokers and nameserver):
	// re-created as a normal topic it is not static any more.
	if _, err := adm.DeleteTopic(e.ctx, "DefaultCluster", stTopic); err != nil {
		t.Fatal(err)
	}
	normal := protocol.NewTopicConfig(stTopic)
	normal.ReadQueueNums, normal.WriteQueueNums = 2, 2
	if err := adm.CreateTopic(e.ctx, b.Addr(), normal, ""); err != nil {
		t.Fatal(err)
	}
	if rd := route(); len(rd.TopicQueueMappingByBroker) != 0 {
		t.Fatalf("re-created topic still has mappings: %v", leaders(rd))
	}
	if tc, err := adm.GetTopicConfig(e.ctx, b.Addr(), stTopic); err != nil || tc.MappingDetail != nil {
		t.Fatalf("re-created topic config on b: %+v %v", tc, err)
	}
	e.mustSend(b.Addr(), 0, "plain", 0) // physical queue 0 again
}

func slicesContain(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
