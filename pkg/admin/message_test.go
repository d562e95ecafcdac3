package admin_test

import (
	"context"
	"errors"
	"maps"
	"math"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/admin/admintest"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// msgFixture: fixture plus topic T on broker-a and broker-b and a message
// store.
func msgFixture(t *testing.T) (*admintest.Cluster, *admintest.Messages, *admin.Client) {
	t.Helper()
	fc, c := fixture(t)
	for _, b := range fc.Brokers {
		if b.ID == 0 {
			b.Topics["T"] = protocol.NewTopicConfig("T")
		}
	}
	ms := admintest.AttachMessages(fc)
	return fc, ms, c
}

func put(t *testing.T, ms *admintest.Messages, addr string, m *message.Message) string {
	t.Helper()
	if err := ms.Put(addr, m); err != nil {
		t.Fatal(err)
	}
	return m.OffsetMsgID()
}

func TestViewMessage(t *testing.T) {
	fc, ms, c := msgFixture(t)
	m := &message.Message{Topic: "T", Body: []byte("x"), Properties: map[string]string{"ZZ": "1", "AA": "2", "UNIQ_KEY": "U1"}}
	id := put(t, ms, bb0, m)
	got, err := c.ViewMessage(context.Background(), "T", id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Topic != "T" || string(got.Body) != "x" || got.OffsetMsgID() != id || got.UniqKey() != "U1" {
		t.Fatalf("got %+v", got.Message)
	}
	// Stored order (the fake, like our broker, sorts keys).
	if !reflect.DeepEqual(got.PropertyKeys, []string{"AA", "UNIQ_KEY", "ZZ"}) {
		t.Fatalf("keys %v", got.PropertyKeys)
	}
	calls := fc.Calls()
	last := calls[len(calls)-1]
	if last.Addr != bb0 || last.Code != code.ViewMessageByID || last.Ext["offset"] != "0" || last.Ext["topic"] != "T" {
		t.Fatalf("call %+v", last)
	}
	if _, err := c.ViewMessage(context.Background(), "T", "nothex"); !errors.Is(err, message.ErrBadMsgID) {
		t.Fatalf("bad id: %v", err)
	}
	// An offset nothing is stored at: the broker's error.
	bad := message.OffsetMsgID(netip.MustParseAddrPort(bb0), 999)
	if _, err := c.ViewMessage(context.Background(), "T", bad); !admin.IsCode(err, code.SystemError) {
		t.Fatalf("missing: %v", err)
	}
}

func TestViewMessageDecompresses(t *testing.T) {
	_, ms, c := msgFixture(t)
	body := []byte(strings.Repeat("compress me ", 100))
	z, flag, err := message.Compress(body)
	if err != nil {
		t.Fatal(err)
	}
	id := put(t, ms, ba0, &message.Message{Topic: "T", Body: z, SysFlag: flag})
	got, err := c.ViewMessage(context.Background(), "T", id)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Body) != string(body) || got.SysFlag&message.FlagCompressed != 0 {
		t.Fatalf("body %q flag %d", got.Body[:10], got.SysFlag)
	}
}

func TestQueryMessage(t *testing.T) {
	fc, ms, c := msgFixture(t)
	ms.IgnoreTime = true
	put(t, ms, ba0, &message.Message{Topic: "T", Body: []byte("a"), Properties: map[string]string{"KEYS": "k1 k2", "UNIQ_KEY": "UA"}})
	put(t, ms, bb0, &message.Message{Topic: "T", Body: []byte("b"), Properties: map[string]string{"KEYS": "k2", "UNIQ_KEY": "UB"}})
	// A hash duplicate: the broker returns it for k1 but KEYS do not hold k1.
	dup := put(t, ms, bb0, &message.Message{Topic: "T", Body: []byte("c"), Properties: map[string]string{"KEYS": "k10", "UNIQ_KEY": "UC"}})
	fc.Override = func(next func(string, *remoting.Command) (*remoting.Command, bool)) func(string, *remoting.Command) (*remoting.Command, bool) {
		return func(addr string, req *remoting.Command) (*remoting.Command, bool) {
			if addr == bb0 && req.Code == code.QueryMessage && req.Ext("key") == "k1" {
				cp := remoting.NewRequest(req.Code, maps.Clone(req.ExtFields), nil)
				cp.SetExt("key", "k10")
				req = cp
			}
			return next(addr, req)
		}
	}(fc.Override)
	ctx := context.Background()

	res, err := c.QueryMessage(ctx, admin.QueryMessageRequest{Topic: "T", Key: "k2", MaxNum: 64, End: math.MaxInt64})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 2 || string(res.Messages[0].Body) != "a" || string(res.Messages[1].Body) != "b" {
		t.Fatalf("k2: %d messages", len(res.Messages))
	}
	var q []admintest.Call
	for _, cl := range fc.Calls() {
		if cl.Code == code.QueryMessage {
			q = append(q, cl)
		}
	}
	if len(q) != 2 {
		t.Fatalf("%d QUERY_MESSAGE calls", len(q))
	}
	want := map[string]string{"topic": "T", "key": "k2", "maxNum": "64", "beginTimestamp": "0", "endTimestamp": "9223372036854775807", "indexType": "K", "_UNIQUE_KEY_QUERY": "false"}
	if !reflect.DeepEqual(q[0].Ext, want) {
		t.Fatalf("ext %v", q[0].Ext)
	}

	res, err = c.QueryMessage(ctx, admin.QueryMessageRequest{Topic: "T", Key: "k1", MaxNum: 64})
	if err != nil || len(res.Messages) != 1 || res.Messages[0].UniqKey() != "UA" {
		t.Fatalf("k1 (duplicate %s dropped): %v %v", dup, res, err)
	}
	res, err = c.QueryMessage(ctx, admin.QueryMessageRequest{Topic: "T", Key: "UB", Unique: true, MaxNum: 32})
	if err != nil || len(res.Messages) != 1 || string(res.Messages[0].Body) != "b" {
		t.Fatalf("unique: %v %v", res, err)
	}
	calls := fc.Calls()
	if last := calls[len(calls)-1]; last.Ext["_UNIQUE_KEY_QUERY"] != "true" || last.Ext["indexType"] != "U" {
		t.Fatalf("unique ext %v", last.Ext)
	}
	if _, err := c.QueryMessage(ctx, admin.QueryMessageRequest{Topic: "T", Key: "nope", MaxNum: 64}); !errors.Is(err, admin.ErrNoMessage) {
		t.Fatalf("none: %v", err)
	}
	// A broker that fails is skipped.
	fc.Down[bb0] = true
	res, err = c.QueryMessage(ctx, admin.QueryMessageRequest{Topic: "T", Key: "k2", MaxNum: 64})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("one broker down: %v %v", res, err)
	}
	if _, err := c.QueryMessage(ctx, admin.QueryMessageRequest{Topic: "NoSuch", Key: "k", MaxNum: 64}); !admin.IsCode(err, code.TopicNotExist) {
		t.Fatalf("no route: %v", err)
	}
	// -c with another cluster leaves no broker.
	if _, err := c.QueryMessage(ctx, admin.QueryMessageRequest{Topic: "T", Key: "k2", Cluster: "Other"}); err == nil || !strings.Contains(err.Error(), "not matched route info") {
		t.Fatalf("cluster filter: %v", err)
	}
}

func TestQueryMessageByID(t *testing.T) {
	fc, ms, c := msgFixture(t)
	now := time.UnixMilli(1700000100000)
	ms.Now = func() int64 { return now.UnixMilli() - 1000 }
	id := put(t, ms, ba0, &message.Message{Topic: "T", Body: []byte("a"), Properties: map[string]string{"UNIQ_KEY": "0A0000011F2B1B6A92C81A3E00000001"}})
	ctx := context.Background()
	m, viewErr, err := c.QueryMessageByID(ctx, "", "T", id, now)
	if err != nil || viewErr != nil || string(m.Body) != "a" {
		t.Fatalf("offset id: %v %v", viewErr, err)
	}
	// A UNIQ_KEY does not decode (its "port" is above 65535): straight to
	// QUERY_MESSAGE on every broker, begin = now − 3 days.
	n := len(fc.Calls())
	m, viewErr, err = c.QueryMessageByID(ctx, "", "T", "0A0000011F2B1B6A92C81A3E00000001", now)
	if err != nil || !errors.Is(viewErr, message.ErrBadMsgID) || string(m.Body) != "a" {
		t.Fatalf("uniq key: %v %v", viewErr, err)
	}
	for _, cl := range fc.Calls()[n:] {
		if cl.Code == code.QueryMessage && (cl.Ext["beginTimestamp"] != "1699740900000" || cl.Ext["endTimestamp"] != "9223372036854775807" || cl.Ext["maxNum"] != "32") {
			t.Fatalf("query ext %v", cl.Ext)
		}
	}
	if _, _, err := c.QueryMessageByID(ctx, "", "T", "0A0000011F2B1B6A92C81A3E00000009", now); !errors.Is(err, admin.ErrNoMessage) {
		t.Fatalf("missing: %v", err)
	}
}

func TestMessageTrackDetail(t *testing.T) {
	fc, ms, c := msgFixture(t)
	a := fc.Brokers[0]
	a.Groups["T"] = []string{"push", "pull", "off", "gone", "bcast", "idle"}
	for _, g := range []string{"push", "pull", "off", "bcast", "idle"} {
		a.Topics[protocol.RetryTopic(g)] = protocol.NewTopicConfig(protocol.RetryTopic(g))
	}
	conn := func(typ, model string) string {
		return `{"connectionSet":[{"clientId":"x"}],"consumeType":"` + typ + `","messageModel":"` + model + `","subscriptionTable":{"T":{"tagsSet":["TagA"]}}}`
	}
	ms.Connections["push"] = conn("CONSUME_PASSIVELY", "CLUSTERING")
	ms.Connections["pull"] = conn("CONSUME_ACTIVELY", "CLUSTERING")
	ms.Connections["bcast"] = conn("CONSUME_PASSIVELY", "BROADCASTING")
	ms.Connections["idle"] = conn("CONSUME_PASSIVELY", "CLUSTERING")
	ms.ConsumeStats["push"] = `{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"brokerOffset":5,"consumerOffset":1,"lastTimestamp":0,"pullOffset":1}}}`
	id := put(t, ms, ba0, &message.Message{Topic: "T", Body: []byte("a"), Properties: map[string]string{"TAGS": "TagB"}})
	m, err := c.ViewMessage(context.Background(), "T", id)
	if err != nil {
		t.Fatal(err)
	}
	tracks, err := c.MessageTrackDetail(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, tr := range tracks {
		got[tr.ConsumerGroup] = string(tr.TrackType)
	}
	want := map[string]string{"push": "CONSUMED_BUT_FILTERED", "pull": "PULL", "off": "NOT_ONLINE", "gone": "UNKNOWN", "bcast": "CONSUME_BROADCASTING", "idle": "NOT_CONSUME_YET"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tracks %v", tracks)
	}
	if s := tracks[2].String(); s != "MessageTrack [consumerGroup=off, trackType=NOT_ONLINE, exceptionDesc=CODE:206 DESC:the consumer group[off] not online]" {
		t.Fatalf("toString %q", s)
	}
	// A broker that does not answer QUERY_TOPIC_CONSUME_BY_WHO.
	fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
		if req.Code == code.QueryTopicConsumeByWho {
			return remoting.NewResponse(req, code.RequestCodeNotSupported, "no"), true
		}
		return nil, false
	}
	if _, err := c.MessageTrackDetail(context.Background(), m); !admin.IsCode(err, code.RequestCodeNotSupported) {
		t.Fatalf("300 unsupported: %v", err)
	}
}

func TestPropertyKeyOrder(t *testing.T) {
	got := admin.PropertyKeyOrder([]byte("B\x011\x02A\x012\x02\x01x\x02C\x01\x02B\x013\x02D\x014"))
	if !reflect.DeepEqual(got, []string{"B", "A", "D"}) {
		t.Fatalf("%v", got)
	}
}
