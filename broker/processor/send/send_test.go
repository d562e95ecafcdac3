package send

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

const basicProps = "TAGS\x01TagA\x02KEYS\x01key1\x02UNIQ_KEY\x01AABBCC\x02"

// TestSendChecks walks the send checks in Java's order; each case breaks
// one rule and, where it matters, also breaks a later one to prove which
// check answers first.
func TestSendChecks(t *testing.T) {
	huge := strings.Repeat("v", message.MaxPropertiesLength)
	tests := []struct {
		name      string
		mutate    func(*config.Config)
		setup     func(*fixture)
		req       *remoting.Command
		code      int32
		remark    string // substring
		stored    bool
		wantTopic string
		wantQueue int32
	}{
		{name: "slave rejects", mutate: func(c *config.Config) { c.BrokerRole = config.RoleSlave },
			req: sendV2("TopicTest", 0, basicProps, "b"), code: code.SystemBusy, remark: "REJECTREQUEST"},
		{name: "not accepting yet", mutate: func(c *config.Config) { c.StartAcceptSendRequestTimeStamp = 1 << 50 },
			req: sendV2("TopicTest", 0, basicProps, "b"), code: code.SystemError, remark: "unable to service"},
		{name: "order topic on unwritable broker", mutate: func(c *config.Config) { c.BrokerPermission = protocol.PermRead },
			setup: func(f *fixture) { _ = f.topics.SetOrderTopics(map[string]string{"TopicTest": "broker-a:4"}) },
			req:   sendV2("TopicTest", 0, basicProps, "b"), code: code.NoPermission, remark: "sending message is forbidden"},
		{name: "unordered topic on unwritable broker is accepted (Java)", mutate: func(c *config.Config) { c.BrokerPermission = protocol.PermRead },
			req: sendV2("TopicTest", 1, basicProps, "b"), code: code.Success, stored: true, wantTopic: "TopicTest", wantQueue: 1},
		{name: "illegal characters", req: sendV2("bad topic", 0, basicProps, "b"), code: code.InvalidParameter, remark: "illegal characters"},
		{name: "too long", req: sendV2(strings.Repeat("t", 128), 0, basicProps, "b"), code: code.InvalidParameter, remark: "longer than"},
		{name: "retry topic may be 255 long but group must exist",
			req:  sendV2("%RETRY%"+strings.Repeat("g", 200), 0, basicProps, "b"),
			code: code.SubscriptionGroupNotExist},
		{name: "name checked before forbidden", req: sendV2("SCHEDULE_TOPIC_XXXX!", 0, basicProps, "b"), code: code.InvalidParameter},
		{name: "schedule topic forbidden", req: sendV2("SCHEDULE_TOPIC_XXXX", 0, basicProps, "b"), code: code.NoPermission, remark: "forbidden"},
		{name: "half topic forbidden", req: sendV2("RMQ_SYS_TRANS_HALF_TOPIC", 0, basicProps, "b"), code: code.NoPermission},
		{name: "op half topic forbidden", req: sendV2("RMQ_SYS_TRANS_OP_HALF_TOPIC", 0, basicProps, "b"), code: code.NoPermission},
		{name: "self test topic forbidden", req: sendV2("SELF_TEST_TOPIC", 0, basicProps, "b"), code: code.NoPermission},
		{name: "offset moved event forbidden", req: sendV2("OFFSET_MOVED_EVENT", 0, basicProps, "b"), code: code.NoPermission},
		{name: "unknown topic auto-created from TBW102", req: sendV2("NewTopic", 3, basicProps, "b"),
			code: code.Success, stored: true, wantTopic: "NewTopic", wantQueue: 3},
		{name: "unknown topic without auto-create", mutate: func(c *config.Config) { c.AutoCreateTopicEnable = false },
			req: sendV2("NewTopic", 0, basicProps, "b"), code: code.TopicNotExist, remark: "not exist"},
		{name: "unknown default topic", req: with(sendV2("NewTopic", 0, basicProps, "b"), "c", "NoSuchDefault"),
			code: code.TopicNotExist},
		{name: "default topic without inherit", req: with(sendV2("NewTopic", 0, basicProps, "b"), "c", "TopicTest"),
			code: code.TopicNotExist},
		{name: "topic not writable", req: sendV2("ReadOnly", 0, basicProps, "b"), code: code.NoPermission, remark: "not writable"},
		{name: "queue id out of range", req: sendV2("TopicTest", 4, basicProps, "b"), code: code.InvalidParameter, remark: "queueId[4]"},
		{name: "queue id below read queue count", req: sendV2("ReadMore", 7, basicProps, "b"),
			code: code.Success, stored: true, wantTopic: "ReadMore", wantQueue: 7},
		{name: "queue id -1 picks a random queue", req: sendV2("TopicTest", -1, basicProps, "b"),
			code: code.Success, stored: true, wantTopic: "TopicTest", wantQueue: 2},
		{name: "queue id -5 picks a random queue", req: sendV2("TopicTest", -5, basicProps, "b"),
			code: code.Success, stored: true, wantTopic: "TopicTest", wantQueue: 2},
		{name: "queue checked before body size", req: sendV2("TopicTest", 9, basicProps, strings.Repeat("x", 4<<20+1)),
			code: code.InvalidParameter},
		{name: "retry group unknown", req: sendV2("%RETRY%unknown", 0, basicProps, "b"), code: code.SubscriptionGroupNotExist,
			remark: "unknown"},
		{name: "body of maxMessageSize", req: sendV2("TopicTest", 0, basicProps, strings.Repeat("x", 4<<20)),
			code: code.Success, stored: true, wantTopic: "TopicTest"},
		{name: "body over maxMessageSize", req: sendV2("TopicTest", 0, basicProps, strings.Repeat("x", 4<<20+1)),
			code: code.MessageIllegal, remark: "maxMessageSize"},
		{name: "properties too large", req: sendV2("TopicTest", 0, props("BIG", huge), "b"),
			code: code.MessageIllegal, remark: "properties"},
		{name: "compaction topic needs keys", req: sendV2("Compact", 0, props("TAGS", "a"), "b"),
			code: code.MessageIllegal, remark: "key is missing"},
		{name: "compaction topic with keys", req: sendV2("Compact", 0, props("KEYS", "k"), "b"),
			code: code.Success, stored: true, wantTopic: "Compact"},
		{name: "transactions rejected by config", mutate: func(c *config.Config) { c.RejectTransactionMessage = true },
			req: sendV2("TopicTest", 0, props("TRAN_MSG", "true"), "b"), code: code.NoPermission, remark: "transaction"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var muts []func(*config.Config)
			if tt.mutate != nil {
				muts = append(muts, tt.mutate)
			}
			f := newFixture(t, muts...)
			if tt.setup != nil {
				tt.setup(f)
			}
			resp := f.call(t, tt.req)
			wantCode(t, resp, tt.code)
			if tt.remark != "" && !strings.Contains(resp.Remark, tt.remark) {
				t.Errorf("remark %q does not mention %q", resp.Remark, tt.remark)
			}
			if resp.Ext(message.PropertyMsgRegion) != "DefaultRegion" || resp.Ext(message.PropertyTraceSwitch) != "true" {
				t.Errorf("MSG_REGION/TRACE_ON missing: %v", resp.ExtFields)
			}
			msgs := f.store.stored(t)
			if !tt.stored {
				if len(msgs) != 0 {
					t.Fatalf("stored %d messages, want none", len(msgs))
				}
				return
			}
			if len(msgs) != 1 {
				t.Fatalf("stored %d messages, want 1", len(msgs))
			}
			if msgs[0].Topic != tt.wantTopic || msgs[0].QueueID != tt.wantQueue {
				t.Errorf("stored to %s/%d, want %s/%d", msgs[0].Topic, msgs[0].QueueID, tt.wantTopic, tt.wantQueue)
			}
			if got := resp.Ext("queueId"); got != fmt.Sprint(tt.wantQueue) {
				t.Errorf("response queueId %s, want %d", got, tt.wantQueue)
			}
		})
	}
}

func TestAutoCreate(t *testing.T) {
	f := newFixture(t)
	resp := f.call(t, with(sendV1("AutoTopic", 1, basicProps, "b"), "defaultTopicQueueNums", "3"))
	wantCode(t, resp, code.Success)
	tc, ok := f.topics.Get("AutoTopic")
	if !ok {
		t.Fatal("topic not created")
	}
	if tc.ReadQueueNums != 3 || tc.WriteQueueNums != 3 || tc.Perm != protocol.PermRead|protocol.PermWrite {
		t.Errorf("created %+v, want 3 queues perm RW", tc)
	}
	if !slices.Equal(f.created, []string{"AutoTopic"}) {
		t.Errorf("TopicCreated calls %v", f.created)
	}
	// unitMode: Java's topic sysFlag for unit topics.
	resp = f.call(t, with(sendV1("UnitTopic", 0, basicProps, "b"), "unitMode", "true"))
	wantCode(t, resp, code.Success)
	if tc, _ := f.topics.Get("UnitTopic"); tc.TopicSysFlag != topicFlagUnit {
		t.Errorf("unit topic sysFlag %d", tc.TopicSysFlag)
	}
}

func TestRetryTopicCreatedWithoutTemplate(t *testing.T) {
	f := newFixture(t, func(c *config.Config) { c.AutoCreateTopicEnable = false })
	resp := f.call(t, sendV1("%RETRY%g1x", 0, basicProps, "b"))
	wantCode(t, resp, code.SubscriptionGroupNotExist) // the topic was created, the group is unknown
	tc, ok := f.topics.Get("%RETRY%g1x")
	if !ok || tc.WriteQueueNums != 1 || tc.Perm != 6 {
		t.Fatalf("retry topic %+v (exists %v), want 1 queue perm 6", tc, ok)
	}
}

// TestMissingHeaderFields removes each required field in turn, for both
// naming schemes: 29 with a remark naming the field.
func TestMissingHeaderFields(t *testing.T) {
	required := []string{"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag", "bornTimestamp", "flag"}
	short := map[string]string{"producerGroup": "a", "topic": "b", "defaultTopic": "c", "defaultTopicQueueNums": "d",
		"queueId": "e", "sysFlag": "f", "bornTimestamp": "g", "flag": "h"}
	f := newFixture(t)
	for _, long := range required {
		t.Run("v1/"+long, func(t *testing.T) {
			resp := f.call(t, with(sendV1("TopicTest", 0, basicProps, "b"), long, remotingtest.Absent))
			wantCode(t, resp, code.InvalidParameter)
			if !strings.Contains(resp.Remark, "<"+long+">") {
				t.Errorf("remark %q does not name %s", resp.Remark, long)
			}
		})
		t.Run("v2/"+long, func(t *testing.T) {
			resp := f.call(t, with(sendV2("TopicTest", 0, basicProps, "b"), short[long], remotingtest.Absent))
			wantCode(t, resp, code.InvalidParameter)
			if !strings.Contains(resp.Remark, "<"+short[long]+" ("+long+")>") {
				t.Errorf("remark %q does not name %s", resp.Remark, long)
			}
		})
	}
	for _, tc := range []struct{ key, val string }{{"e", "x"}, {"g", "1.5"}, {"f", "99999999999"}, {"j", "abc"}, {"l", "-"}} {
		t.Run("malformed "+tc.key, func(t *testing.T) {
			resp := f.call(t, with(sendV2("TopicTest", 0, basicProps, "b"), tc.key, tc.val))
			wantCode(t, resp, code.InvalidParameter)
			if !strings.Contains(resp.Remark, "<"+tc.key+" ") {
				t.Errorf("remark %q does not name %s", resp.Remark, tc.key)
			}
		})
	}
	if n := len(f.store.stored(t)); n != 0 {
		t.Fatalf("stored %d", n)
	}
	// V1 names on a V2 code are all missing: the first required one is named.
	resp := f.call(t, request(code.SendMessageV2, v1Ext("TopicTest", 0, basicProps), []byte("b")))
	wantCode(t, resp, code.InvalidParameter)
	if !strings.Contains(resp.Remark, "<a (producerGroup)>") {
		t.Errorf("remark %q", resp.Remark)
	}
}

// TestLongAndShortNames sends the same message with both header schemes.
func TestLongAndShortNames(t *testing.T) {
	f := newFixture(t)
	p := props("TAGS", "T", "KEYS", "k1 k2", "UNIQ_KEY", "U1", "custom", "v\x01with-sep")
	mk := func(req *remoting.Command) *remoting.Command {
		return with(req, "flag", "7", "f", "0", "h", "7", "reconsumeTimes", "2", "j", "2", "bornTimestamp", "123", "g", "123")
	}
	wantCode(t, f.call(t, mk(sendV1("TopicTest", 1, p, "body"))), code.Success)
	wantCode(t, f.call(t, mk(sendV2("TopicTest", 1, p, "body"))), code.Success)
	msgs := f.store.stored(t)
	if len(msgs) != 2 {
		t.Fatalf("stored %d", len(msgs))
	}
	for i, m := range msgs {
		if m.Topic != "TopicTest" || m.QueueID != 1 || m.Flag != 7 || m.ReconsumeTimes != 2 || m.BornTimestamp != 123 ||
			string(m.Body) != "body" || m.Tags() != "T" || m.Property("KEYS") != "k1 k2" || m.UniqKey() != "U1" ||
			m.Property("custom") != "v\x01with-sep" || m.Property("CLUSTER") != "C1" || m.QueueOffset != int64(i) {
			t.Errorf("message %d: %+v props %v", i, m, m.Properties)
		}
		if m.StoreHost != testStoreHost {
			t.Errorf("store host %v", m.StoreHost)
		}
	}
}

func TestPropertiesRewrite(t *testing.T) {
	f := newFixture(t)
	p := props("TAGS", "T", "__RMQ.TRANSIENT.TOPIC_SYS_FLAG", "1", "POP_CK", "0 1 2", "empty", "", "CLUSTER", "fake")
	resp := f.call(t, sendV1("TopicTest", 0, p+"junk\x02\x01v\x02", "b"))
	wantCode(t, resp, code.Success)
	m := f.store.last(t)
	if _, ok := m.Properties["__RMQ.TRANSIENT.TOPIC_SYS_FLAG"]; ok {
		t.Error("transient property stored")
	}
	if _, ok := m.Properties["POP_CK"]; ok {
		t.Error("POP_CK stored")
	}
	if m.Property("CLUSTER") != "C1" {
		t.Errorf("CLUSTER %q", m.Property("CLUSTER"))
	}
	uniq := m.UniqKey()
	if len(uniq) != 32 {
		t.Errorf("broker UNIQ_KEY %q", uniq)
	}
	if resp.Ext("transactionId") != uniq {
		t.Errorf("transactionId %q, want the UNIQ_KEY %q", resp.Ext("transactionId"), uniq)
	}
	if m.Property("MSG_REGION") != "DefaultRegion" || m.Property("TRACE_ON") != "true" {
		t.Errorf("MSG_REGION %q, TRACE_ON %q", m.Property("MSG_REGION"), m.Property("TRACE_ON"))
	}
	if len(m.Properties) != 5 {
		t.Errorf("properties %v", m.Properties)
	}
	// Two sends without UNIQ_KEY get different ones.
	wantCode(t, f.call(t, sendV1("TopicTest", 0, "", "b")), code.Success)
	if u2 := f.store.last(t).UniqKey(); u2 == "" || u2 == uniq {
		t.Errorf("second UNIQ_KEY %q", u2)
	}
}

// A request without a channel may carry its properties as a map
// (WithOrigin, the gRPC endpoint's way): they are stored as from the
// header's string, reserved ones dropped, and the string is ignored.
func TestWithProperties(t *testing.T) {
	f := newFixture(t)
	h, ok := f.p.Handlers()[code.SendMessage]
	if !ok {
		t.Fatal("no SEND_MESSAGE handler")
	}
	m := map[string]string{"TAGS": "T", "color": "red", "POP_CK": "0 1 2", "__RMQ.TRANSIENT.X": "1", "UNIQ_KEY": "ID1"}
	req := sendV1("TopicTest", 0, props("ignored", "yes"), "b")
	resp, err := h(WithOrigin(context.Background(), netip.AddrPort{}, m), nil, req)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, resp, code.Success)
	got := f.store.last(t)
	want := map[string]string{"TAGS": "T", "color": "red", "UNIQ_KEY": "ID1", "CLUSTER": "C1", "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}
	if !maps.Equal(got.Properties, want) {
		t.Errorf("stored properties %v, want %v", got.Properties, want)
	}
	// Over a channel the header's string counts, whatever the context says.
	f2 := newFixture(t)
	h2 := f2.p.Handlers()[code.SendMessage]
	ch := remoting.NewLocalChannel("127.0.0.1:10911", "127.0.0.1:50000", func(*remoting.Command) {})
	resp, err = h2(WithOrigin(context.Background(), netip.AddrPort{}, map[string]string{"color": "blue"}), ch, sendV1("TopicTest", 0, props("color", "green"), "b"))
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, resp, code.Success)
	if c := f2.store.last(t).Property("color"); c != "green" {
		t.Errorf("over a channel color=%q, want the header's green", c)
	}
}

func TestResponseFields(t *testing.T) {
	f := newFixture(t)
	wantCode(t, f.call(t, sendV2("TopicTest", 3, basicProps, "first")), code.Success)
	resp := f.call(t, sendV2("TopicTest", 3, basicProps, "second"))
	wantCode(t, resp, code.Success)
	if resp.Opaque != 7 || resp.Flag&remoting.FlagResponse == 0 || resp.Remark != "" {
		t.Errorf("response header %+v", resp)
	}
	msgs := f.store.stored(t)
	want := map[string]string{
		"msgId":         message.OffsetMsgID(testStoreHost, msgs[1].CommitLogOffset),
		"queueId":       "3",
		"queueOffset":   "1",
		"transactionId": "AABBCC",
		"MSG_REGION":    "DefaultRegion",
		"TRACE_ON":      "true",
	}
	if len(resp.ExtFields) != len(want) {
		t.Errorf("ext %v, want %v", resp.ExtFields, want)
	}
	for k, v := range want {
		if resp.Ext(k) != v {
			t.Errorf("%s = %q, want %q", k, resp.Ext(k), v)
		}
	}
	// Region and trace switch follow the config.
	f2 := newFixture(t, func(c *config.Config) { c.RegionID = "R1"; c.TraceOn = false })
	resp = f2.call(t, sendV2("TopicTest", 0, basicProps, "x"))
	if resp.Ext("MSG_REGION") != "R1" || resp.Ext("TRACE_ON") != "false" {
		t.Errorf("ext %v", resp.ExtFields)
	}
}

func TestMultiTagSysFlag(t *testing.T) {
	f := newFixture(t)
	wantCode(t, f.call(t, with(sendV2("MultiTag", 0, basicProps, "b"), "f", "1")), code.Success)
	if sf := f.store.last(t).SysFlag; sf != message.FlagCompressed|message.FlagMultiTags {
		t.Errorf("sysFlag %#x", sf)
	}
	wantCode(t, f.call(t, with(sendV2("TopicTest", 0, basicProps, "b"), "f", "1")), code.Success)
	if sf := f.store.last(t).SysFlag; sf != message.FlagCompressed {
		t.Errorf("sysFlag %#x, the compressed bit must be kept as sent", sf)
	}
}

func TestRetryAndDLQ(t *testing.T) {
	tests := []struct {
		name        string
		reconsume   string
		maxHeader   string
		version     int32
		locked      bool
		wantDLQ     bool
		wantMaxUsed string
	}{
		{name: "below group max", reconsume: "3", version: 513},
		{name: "equal to group max", reconsume: "16", version: 513},
		{name: "over group max", reconsume: "17", version: 513, wantDLQ: true},
		{name: "header max honoured", reconsume: "3", maxHeader: "2", version: 513, wantDLQ: true},
		{name: "header max ignored for old clients", reconsume: "3", maxHeader: "2", version: 100},
		{name: "orderly locks send to DLQ", reconsume: "0", version: 513, locked: true, wantDLQ: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.locks["g1"] = tt.locked
			lite := props("TAGS", "T", "UNIQ_KEY", "U", "INNER_MULTI_DISPATCH", "%LMQ%$p$l", "INNER_MULTI_QUEUE_OFFSET", "3")
			maxHeader := tt.maxHeader
			if maxHeader == "" {
				maxHeader = remotingtest.Absent
			}
			req := with(sendV1("%RETRY%g1", -1, lite, "b"), "reconsumeTimes", tt.reconsume, "maxReconsumeTimes", maxHeader)
			req.Version = tt.version
			resp := f.call(t, req)
			wantCode(t, resp, code.Success)
			m := f.store.last(t)
			if !tt.wantDLQ {
				if m.Topic != "%RETRY%g1" || m.Property("DELAY") != "" {
					t.Fatalf("stored to %s DELAY=%q", m.Topic, m.Property("DELAY"))
				}
				return
			}
			if m.Topic != "%DLQ%g1" || m.QueueID != 0 || m.Property("DELAY") != "-1" {
				t.Fatalf("stored to %s/%d DELAY=%q, want %%DLQ%%g1/0 DELAY=-1", m.Topic, m.QueueID, m.Property("DELAY"))
			}
			if m.Property("INNER_MULTI_DISPATCH") != "" || m.Property("INNER_MULTI_QUEUE_OFFSET") != "" {
				t.Errorf("multi-dispatch properties followed the message to the DLQ: %v", m.Properties)
			}
			tc, ok := f.topics.Get("%DLQ%g1")
			if !ok || tc.WriteQueueNums != 1 || tc.ReadQueueNums != 1 || tc.Perm != 6 {
				t.Errorf("DLQ topic %+v", tc)
			}
			if !slices.Contains(f.created, "%DLQ%g1") {
				t.Errorf("TopicCreated not told about the DLQ: %v", f.created)
			}
			if len(f.sched.got) != 0 {
				t.Error("DELAY=-1 must not be scheduled")
			}
		})
	}
}

func TestRetryGroupParsing(t *testing.T) {
	for in, want := range map[string]string{
		"%RETRY%g1":          "g1",
		"%RETRY%g1+TopicA":   "g1",
		"%RETRY%g1_TopicA":   "g1_TopicA",
		"%RETRY%g1+a+b":      "g1+a+b",
		"%RETRY%":            "",
		"%RETRY%+TopicA":     "",
		"%RETRY%CID_RMQ_SYS": "CID_RMQ_SYS",
	} {
		if got := retryGroup(in); got != want {
			t.Errorf("retryGroup(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTransactionHalfMessage(t *testing.T) {
	f := newFixture(t)
	p := props("TRAN_MSG", "true", "PGROUP", "pg", "UNIQ_KEY", "TX1", "TAGS", "T")
	resp := f.call(t, with(sendV2("TopicTest", 2, p, "b"), "f", "4"))
	wantCode(t, resp, code.Success)
	m := f.store.last(t)
	if m.Topic != protocol.TransHalfTopic || m.QueueID != 0 {
		t.Fatalf("half message stored to %s/%d", m.Topic, m.QueueID)
	}
	if m.Property("REAL_TOPIC") != "TopicTest" || m.Property("REAL_QID") != "2" || m.Property("__transactionId__") != "TX1" {
		t.Errorf("half properties %v", m.Properties)
	}
	if message.TransactionType(m.SysFlag) != message.TransactionNotType {
		t.Errorf("transaction bits kept: %#x", m.SysFlag)
	}
	if resp.Ext("transactionId") != "TX1" || resp.Ext("queueId") != "2" || resp.Ext("queueOffset") != "0" {
		t.Errorf("response %v", resp.ExtFields)
	}
	// sysFlag PREPARED alone also makes a half message.
	wantCode(t, f.call(t, with(sendV2("TopicTest", 1, basicProps, "b"), "f", "4")), code.Success)
	if m := f.store.last(t); m.Topic != protocol.TransHalfTopic || m.Property("REAL_QID") != "1" {
		t.Errorf("sysFlag-only half: %s %v", m.Topic, m.Properties)
	}
	// Old clients re-sending a consumed half message with a delay: normal.
	old := props("TRAN_MSG", "true", "DELAY", "3")
	wantCode(t, f.call(t, with(sendV2("TopicTest", 1, old, "b"), "j", "1")), code.Success)
	if m := f.store.last(t); m.Topic != "TopicTest" {
		t.Errorf("re-sent half stored to %s", m.Topic)
	}
}

func TestScheduleHook(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{props("DELAY", "3"), props("TIMER_DELIVER_MS", "1"), props("TIMER_DELAY_SEC", "1"), props("TIMER_DELAY_MS", "1")} {
		wantCode(t, f.call(t, sendV2("TopicTest", 0, p, "b")), code.Success)
	}
	wantCode(t, f.call(t, sendV2("TopicTest", 0, props("DELAY", "0"), "b")), code.Success)
	wantCode(t, f.call(t, sendV2("TopicTest", 0, props("DELAY", "x"), "b")), code.Success)
	if len(f.sched.got) != 4 {
		t.Fatalf("schedule hook called %d times, want 4", len(f.sched.got))
	}
	// A half message is never scheduled.
	wantCode(t, f.call(t, sendV2("TopicTest", 0, props("DELAY", "3", "TRAN_MSG", "true"), "b")), code.Success)
	if len(f.sched.got) != 4 {
		t.Fatal("half message scheduled")
	}
	// A hook error rejects; store.ErrMessageIllegal maps to 13.
	f.p.d.Schedule = scheduleFunc(func(*message.Message) error { return fmt.Errorf("too far: %w", store.ErrMessageIllegal) })
	wantCode(t, f.call(t, sendV2("TopicTest", 0, props("TIMER_DELAY_SEC", "999999999"), "b")), code.MessageIllegal)
	// Without a hook the message is stored as is.
	f.p.d.Schedule = nil
	wantCode(t, f.call(t, sendV2("TopicTest", 0, props("DELAY", "2"), "b")), code.Success)
	if m := f.store.last(t); m.Topic != "TopicTest" || m.Property("DELAY") != "2" {
		t.Errorf("stored %s %v", m.Topic, m.Properties)
	}
}

type scheduleFunc func(*message.Message) error

func (f scheduleFunc) Schedule(m *message.Message) error { return f(m) }

// recallingSchedule is a ScheduleHook that hands out recall handles.
type recallingSchedule struct{ scheduleFunc }

func (recallingSchedule) RecallHandle(m *message.Message, broker string) string {
	if m.Property("TIMER_DELIVER_MS") == "" {
		return ""
	}
	return "handle-" + m.Topic + "-" + broker
}

// TestRecallHandle: a hook that implements RecallHandler puts the handle of
// a single message in the send response (Java's attachRecallHandle); no
// handle, no field.
func TestRecallHandle(t *testing.T) {
	f := newFixture(t)
	f.p.d.Schedule = recallingSchedule{func(*message.Message) error { return nil }}
	r := f.call(t, sendV2("TopicTest", 0, props("TIMER_DELIVER_MS", "1"), "b"))
	wantCode(t, r, code.Success)
	if got := r.Ext("recallHandle"); got != "handle-TopicTest-"+f.cfg.Get().BrokerName {
		t.Fatalf("recallHandle %q", got)
	}
	r = f.call(t, sendV2("TopicTest", 0, props("DELAY", "1"), "b"))
	if _, ok := r.ExtFields["recallHandle"]; ok {
		t.Fatalf("recallHandle on a delay-level message: %v", r.ExtFields)
	}
}

func TestLiteTopic(t *testing.T) {
	f := newFixture(t)
	wantCode(t, f.call(t, sendV2("Lite", 0, props("__LITE_TOPIC", "user-42", "INNER_MULTI_DISPATCH", "%LMQ%evil"), "b")), code.Success)
	m := f.store.last(t)
	if got := m.Property("INNER_MULTI_DISPATCH"); got != "%LMQ%$Lite$user-42" {
		t.Errorf("INNER_MULTI_DISPATCH %q", got)
	}
	if m.Property("__LITE_TOPIC") != "user-42" {
		t.Error("__LITE_TOPIC not kept")
	}
	for _, bad := range []string{" ", "a$b", "a,b", "a.b", strings.Repeat("x", 65)} {
		resp := f.call(t, sendV2("Lite", 0, props("__LITE_TOPIC", bad), "b"))
		wantCode(t, resp, code.MessageIllegal)
	}
	wantCode(t, f.call(t, sendV2("Lite", 0, props("__LITE_TOPIC", strings.Repeat("x", 64)), "b")), code.Success)
	// A half message gets no dispatch until it is committed.
	wantCode(t, f.call(t, sendV2("Lite", 0, props("__LITE_TOPIC", "s1", "TRAN_MSG", "true"), "b")), code.Success)
	if m := f.store.last(t); m.Topic != "RMQ_SYS_TRANS_HALF_TOPIC" || m.Property("INNER_MULTI_DISPATCH") != "" || m.Property("__LITE_TOPIC") != "s1" {
		t.Errorf("half lite message: %s %v", m.Topic, m.Properties)
	}
	// Not a lite parent topic: the property is ignored.
	wantCode(t, f.call(t, sendV2("TopicTest", 0, props("__LITE_TOPIC", "a$b"), "b")), code.Success)
	if m := f.store.last(t); m.Property("INNER_MULTI_DISPATCH") != "" {
		t.Errorf("dispatch set on a normal topic: %v", m.Properties)
	}
}

// TestLiteTopicSizeConfig: the byte limit of a lite name is
// maxLiteTopicSize, the same value the lite send checker reads, for single
// and batch sends (it was a hard-coded 64 here).
func TestLiteTopicSizeConfig(t *testing.T) {
	tests := []struct {
		name    string
		max     int
		size    int
		want    int32
		wantLMQ bool
	}{
		{"default 64 accepts 64", 0, 64, code.Success, true},
		{"default 64 refuses 65", 0, 65, code.MessageIllegal, false},
		{"raised to 100 accepts 100", 100, 100, code.Success, true},
		{"raised to 100 refuses 101", 100, 101, code.MessageIllegal, false},
		{"lowered to 8 refuses 9", 8, 9, code.MessageIllegal, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *config.Config) {
				if tt.max > 0 {
					c.MaxLiteTopicSize = tt.max
				}
			})
			lite := strings.Repeat("x", tt.size)
			wantCode(t, f.call(t, sendV2("Lite", 0, props("__LITE_TOPIC", lite), "b")), tt.want)
			if tt.wantLMQ {
				if got := f.store.last(t).Property("INNER_MULTI_DISPATCH"); got != "%LMQ%$Lite$"+lite {
					t.Errorf("INNER_MULTI_DISPATCH %q", got)
				}
			}
			body := batchBody(t, 1, func(int) map[string]string { return map[string]string{"__LITE_TOPIC": lite} })
			wantCode(t, f.call(t, batchReq("Lite", 0, body)), tt.want)
		})
	}
}

func TestStoreErrors(t *testing.T) {
	tests := []struct {
		err  error
		code int32
	}{
		{store.ErrNotWritable, code.ServiceNotAvailable},
		{store.ErrDiskFull, code.ServiceNotAvailable},
		{store.ErrShutdown, code.ServiceNotAvailable},
		{fmt.Errorf("x: %w", store.ErrMessageIllegal), code.MessageIllegal},
		{store.ErrLMQQuota, code.LMQQuotaExceeded},
		{store.ErrFlushTimeout, code.FlushDiskTimeout},
		{errors.New("disk on fire"), code.SystemError},
		{&remoting.CodeError{Code: code.SlaveNotAvailable, Remark: "slave"}, code.SlaveNotAvailable},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			f := newFixture(t)
			f.store.err = tt.err
			resp := f.call(t, sendV2("TopicTest", 0, basicProps, "b"))
			wantCode(t, resp, tt.code)
			if resp.Remark == "" || resp.Ext("MSG_REGION") == "" {
				t.Errorf("response %+v", resp)
			}
			if resp.Ext("msgId") != "" {
				t.Errorf("failed send answers msgId %q", resp.Ext("msgId"))
			}
		})
	}
}

func TestFlushTimeoutKeepsFields(t *testing.T) {
	f := newFixture(t)
	f.store.flushTimedOut = true
	resp := f.call(t, sendV2("TopicTest", 1, basicProps, "b"))
	wantCode(t, resp, code.FlushDiskTimeout)
	if resp.Ext("msgId") == "" || resp.Ext("queueOffset") != "0" || resp.Ext("queueId") != "1" {
		t.Errorf("ext %v", resp.ExtFields)
	}
	// The error form with a result behaves the same.
	f.store.flushTimedOut = false
	f.store.err = store.ErrFlushTimeout
	f.store.res = store.PutResult{QueueOffset: 5, MsgIDs: []string{"ID"}}
	resp = f.call(t, sendV2("TopicTest", 1, basicProps, "b"))
	wantCode(t, resp, code.FlushDiskTimeout)
	if resp.Ext("msgId") != "ID" || resp.Ext("queueOffset") != "5" {
		t.Errorf("ext %v", resp.ExtFields)
	}
}

func TestRegisterAndNew(t *testing.T) {
	if _, err := New(Deps{}); err == nil {
		t.Fatal("New without deps succeeded")
	}
	f := newFixture(t)
	got := map[int32]processor.Pool{}
	f.p.Register(processor.RegistrarFunc(func(c int32, _ remoting.Handler, pool processor.Pool) { got[c] = pool }))
	for _, c := range []int32{code.SendMessage, code.SendMessageV2, code.SendBatchMessage, code.SendReplyMessage, code.SendReplyMessageV2} {
		if p, ok := got[c]; !ok || p != processor.PoolSend {
			t.Errorf("code %d registered %v on pool %d", c, ok, p)
		}
	}
}

// TestConcurrentSends races sends, batches and auto-creation of one topic
// (run with -race).
func TestConcurrentSends(t *testing.T) {
	f := newFixture(t)
	f.p.d.StoreHost = func() netip.AddrPort { return testStoreHost }
	const workers, each = 8, 40
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				var resp *remoting.Command
				switch i % 3 {
				case 0:
					resp = f.call(t, sendV2("Racy", -1, "", fmt.Sprint(w, "-", i)))
				case 1:
					resp = f.call(t, sendV1("TopicTest", i%4, props("DELAY", "1"), "x"))
				default:
					resp = f.call(t, batchReq("TopicTest", -1, batchBody(t, 3, func(int) map[string]string { return nil })))
				}
				if resp.Code != code.Success {
					t.Errorf("code %d %s", resp.Code, resp.Remark)
					return
				}
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, m := range f.store.stored(t) {
		k := fmt.Sprint(m.Topic, m.QueueID, m.QueueOffset)
		if seen[k] {
			t.Fatalf("duplicate offset %s", k)
		}
		seen[k] = true
	}
	if want := workers * (14 + 13 + 13*3); len(seen) != want {
		t.Errorf("stored %d, want %d", len(seen), want)
	}
	if c := slices.Index(f.created, "Racy"); c < 0 || slices.Index(f.created[c+1:], "Racy") >= 0 {
		t.Errorf("Racy created %v", f.created)
	}
}

// TestLongRetryTopic stores a %RETRY% topic longer than 127 bytes (magic v2
// record) and its DLQ.
func TestLongRetryTopic(t *testing.T) {
	f := newFixture(t)
	group := strings.Repeat("g", 150)
	f.groups[group] = 1
	wantCode(t, f.call(t, sendV1("%RETRY%"+group, 0, "", "b")), code.Success)
	wantCode(t, f.call(t, with(sendV1("%RETRY%"+group, 0, "", "b"), "reconsumeTimes", "2")), code.Success)
	msgs := f.store.stored(t)
	if len(msgs) != 2 || msgs[0].Topic != "%RETRY%"+group || msgs[1].Topic != "%DLQ%"+group {
		t.Fatalf("stored %d", len(msgs))
	}
	for _, r := range f.store.records {
		if _, magic, _ := message.RecordHeader(r); magic != message.MagicV2 {
			t.Errorf("magic %#x, want v2", magic)
		}
	}
}

func FuzzSendProperties(f *testing.F) {
	f.Add(basicProps, "0", "0")
	f.Add("\x01\x02\x01\x02", "-1", "4")
	f.Add("__LITE_TOPIC\x01a$b\x02TRAN_MSG\x01true\x02DELAY\x015", "1", "1")
	fx := newFixture(f)
	f.Fuzz(func(t *testing.T, p, queue, sysFlag string) {
		fx.store.forget()
		for _, topicName := range []string{"TopicTest", "Lite", "%RETRY%g1"} {
			resp := fx.call(t, with(sendV2(topicName, 0, p, "b"), "e", queue, "f", sysFlag))
			switch resp.Code {
			case code.Success, code.MessageIllegal, code.InvalidParameter, code.NoPermission:
			default:
				t.Fatalf("code %d: %s", resp.Code, resp.Remark)
			}
		}
	})
}

// statsRecorder records PutStats calls.
type statsRecorder struct{ calls []string }

func (r *statsRecorder) TopicPut(topic string, msgs, size int) {
	r.calls = append(r.calls, fmt.Sprintf("%s %d %d", topic, msgs, size))
}

// TestPutStats: a stored send counts its messages and body bytes for its
// topic (TOPIC_PUT_NUMS / TOPIC_PUT_SIZE); a refused one counts nothing.
func TestPutStats(t *testing.T) {
	f := newFixture(t)
	rec := &statsRecorder{}
	f.p.d.Stats = rec
	wantCode(t, f.call(t, sendV2("TopicTest", 1, props("TAGS", "T"), "hello")), code.Success)
	wantCode(t, f.call(t, sendV2("ReadOnly", 1, props("TAGS", "T"), "hello")), code.NoPermission)
	body := batchBody(t, 3, func(i int) map[string]string { return map[string]string{"TAGS": "t"} })
	wantCode(t, f.call(t, batchReq("MultiTag", 0, body)), code.Success)
	stored := f.store.stored(t)
	size := 0
	for _, m := range stored[1:] {
		size += len(m.Body)
	}
	if len(rec.calls) != 2 || rec.calls[0] != "TopicTest 1 5" || rec.calls[1] != fmt.Sprintf("MultiTag 3 %d", size) {
		t.Fatalf("stats calls %q", rec.calls)
	}
}
