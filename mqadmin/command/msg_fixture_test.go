package command

import (
	"context"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rmqgo/rmq/pkg/admin/admintest"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
)

// The message fixture: a fake cluster (admintest with its message store)
// holding fixed messages, for the message commands' tests and golden files.
// Its records always name the sample's broker addresses as store hosts, so
// the same data can be served in process (query commands), on ephemeral
// ports (pkg/client commands) or, to capture the Java tool's output, on
// the sample's fixed ports.

const (
	msgTopic   = "MsgTopic"
	quietTopic = "QuietTopic" // no consumer group
)

// Fixed UNIQ_KEYs: their "port" bytes are above 65535, so, like real
// client ids, they never decode as offset message ids.
const (
	uniq1     = "0A0000011F2B1B6A92C81A3E00000001"
	uniq2     = "0A0000011F2B1B6A92C81A3E00000002"
	uniq3     = "0A0000011F2B1B6A92C81A3E00000003"
	uniqDup   = "0A0000011F2B1B6A92C81A3E00000004"
	uniqQuiet = "0A0000011F2B1B6A92C81A3E00000005"
)

var (
	storeA = netip.MustParseAddrPort(admintest.SampleBrokerA0)
	storeB = netip.MustParseAddrPort(admintest.SampleBrokerB0)
	bornAt = netip.MustParseAddrPort("127.0.0.1:50123")
)

const connPush = `{"connectionSet":[{"clientAddr":"127.0.0.1:60000","clientId":"127.0.0.1@1","language":"JAVA","version":479}],"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","subscriptionTable":{"MsgTopic":{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"SUB","subVersion":1,"tagsSet":[TAGS],"topic":"MsgTopic"}}}`

// msgFixture is one fake.
type msgFixture struct {
	fc *admintest.Cluster
	ms *admintest.Messages
	ns string
	a  string // broker-a master
	b  string // broker-b master
	// offsets ids of the stored messages, by name
	ids map[string]string
}

// newMsgFixture builds the fake with the given addresses.
func newMsgFixture(t testing.TB, ns, a, b string) *msgFixture {
	t.Helper()
	fc := admintest.New(ns)
	ba := fc.AddBroker("DefaultCluster", "broker-a", 0, a)
	bb := fc.AddBroker("DefaultCluster", "broker-b", 0, b)
	for _, br := range []*admintest.Broker{ba, bb} {
		br.Topics[msgTopic] = protocol.TopicConfig{TopicName: msgTopic, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG", Attributes: map[string]string{}}
		br.Groups[msgTopic] = []string{"pushGroup", "filterGroup", "pullGroup", "offlineGroup", "noRouteGroup", "emptyGroup"}
	}
	ba.Topics[quietTopic] = protocol.TopicConfig{TopicName: quietTopic, ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: "SINGLE_TAG", Attributes: map[string]string{}}
	// A Java broker's own topic (sendMsgStatus sends to it).
	ba.Topics["broker-a"] = protocol.TopicConfig{TopicName: "broker-a", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 7, TopicFilterType: "SINGLE_TAG", Attributes: map[string]string{}}
	for _, g := range []string{"pushGroup", "filterGroup", "pullGroup", "offlineGroup", "emptyGroup"} {
		ba.Topics[protocol.RetryTopic(g)] = protocol.TopicConfig{TopicName: protocol.RetryTopic(g), ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}
	}
	ms := admintest.AttachMessages(fc)
	ms.IgnoreTime = true
	ms.Connections["pushGroup"] = fmtConn("*", "")
	ms.Connections["filterGroup"] = fmtConn("TagC", `"TagC"`)
	ms.Connections["pullGroup"] = `{"connectionSet":[{"clientAddr":"127.0.0.1:60001","clientId":"127.0.0.1@2","language":"GO","version":317}],"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_ACTIVELY","messageModel":"CLUSTERING","subscriptionTable":{}}`
	ms.Connections["emptyGroup"] = `{"connectionSet":[],"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","subscriptionTable":{}}`
	stats := `{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"MsgTopic"}:{"brokerOffset":3,"consumerOffset":1,"lastTimestamp":0,"pullOffset":1}}}`
	ms.ConsumeStats["pushGroup"] = stats
	ms.ConsumeStats["filterGroup"] = stats

	f := &msgFixture{fc: fc, ms: ms, ns: ns, a: a, b: b, ids: map[string]string{}}
	put := func(name, addr string, store netip.AddrPort, m *message.Message) {
		m.StoreHost, m.BornHost = store, bornAt
		if err := ms.Put(addr, m); err != nil {
			t.Fatal(err)
		}
		f.ids[name] = m.OffsetMsgID()
	}
	props := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	put("m1", a, storeA, &message.Message{Topic: msgTopic, QueueID: 0, Body: []byte("hello"),
		BornTimestamp: 1700000000100, StoreTimestamp: 1700000000105,
		Properties: props("TAGS", "TagA", "KEYS", "order-1 shared", "UNIQ_KEY", uniq1, "WAIT", "true", "CLUSTER", "DefaultCluster")})
	put("m2", a, storeA, &message.Message{Topic: msgTopic, QueueID: 0, Body: []byte("wörld\xff"), Flag: 3,
		BornTimestamp: 1700000000200, StoreTimestamp: 1700000000205, ReconsumeTimes: 2,
		Properties: props("TAGS", "TagB", "KEYS", "order-2", "UNIQ_KEY", uniq2, "CLUSTER", "DefaultCluster", "PGROUP", "pg")})
	put("m3", b, storeB, &message.Message{Topic: msgTopic, QueueID: 1, Body: []byte("from b"),
		BornTimestamp: 1700000000300, StoreTimestamp: 1700003600305,
		Properties: props("KEYS", "shared", "UNIQ_KEY", uniq3, "CLUSTER", "DefaultCluster")})
	put("dupB", b, storeB, &message.Message{Topic: msgTopic, QueueID: 1, Body: []byte("copy two"),
		BornTimestamp: 1700000000400, StoreTimestamp: 1700000000405,
		Properties: props("TAGS", "TagA", "UNIQ_KEY", uniqDup, "CLUSTER", "DefaultCluster")})
	put("dupA", a, storeA, &message.Message{Topic: msgTopic, QueueID: 2, Body: []byte("copy one"),
		BornTimestamp: 1700000000300, StoreTimestamp: 1700000000310,
		Properties: props("TAGS", "TagA", "UNIQ_KEY", uniqDup, "CLUSTER", "DefaultCluster")})
	put("bare", a, storeA, &message.Message{Topic: msgTopic, QueueID: 0, Body: []byte{0, 1, 0x80},
		BornTimestamp: 1700000000500, StoreTimestamp: 1700000000505})
	put("quiet", a, storeA, &message.Message{Topic: quietTopic, Body: []byte("shh"),
		BornTimestamp: 1700000000600, StoreTimestamp: 1700000000605,
		Properties: props("UNIQ_KEY", uniqQuiet, "KEYS", "q")})
	return f
}

func fmtConn(sub, tags string) string {
	return strings.NewReplacer("SUB", sub, "TAGS", tags).Replace(connPush)
}

// inProcessMsgFixture is the fixture at the sample's fixed addresses,
// served without network (admin.Client through the Invoker).
func inProcessMsgFixture(t testing.TB) *msgFixture {
	return newMsgFixture(t, admintest.SampleNamesrv1, admintest.SampleBrokerA0, admintest.SampleBrokerB0)
}

// servedMsgFixture serves the fixture over TCP: on ephemeral ports, or on
// the sample's fixed ports when fixed is set (capturing the Java tool). It
// skips the test in short mode.
func servedMsgFixture(t testing.TB, fixed bool) *msgFixture {
	t.Helper()
	if testing.Short() {
		t.Skip("short mode: serves fakes over TCP")
	}
	var cur atomic.Pointer[admintest.Cluster]
	addrs := []string{"127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"}
	if fixed {
		addrs = []string{admintest.SampleNamesrv1, admintest.SampleBrokerA0, admintest.SampleBrokerB0}
	}
	var got []string
	for _, listen := range addrs {
		got = append(got, serveFake(t, listen, func(self string) remoting.Handler {
			// The fixture is made after the servers, which it names.
			return func(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
				return cur.Load().Handler(self)(ctx, ch, req)
			}
		}))
	}
	f := newMsgFixture(t, got[0], got[1], got[2])
	cur.Store(f.fc)
	return f
}
