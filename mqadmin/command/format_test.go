package command

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// Expected values below were printed by Java 17 (see the Java snippets in
// the comments).

func TestJavaFixed(t *testing.T) {
	// String.format("%.2f|%.2f|%.2f|%.1f|%.4f|%9.2f|%.2f|%.1f|%2.2f",
	//     0.125, 1.005, 9.995, (double)(12345/10000.0f), 0.123456, 12.125, -0.001, (double)0.05f, 3.5)
	got := strings.Join([]string{
		javaFixed(0.125, 2), javaFixed(1.005, 2), javaFixed(9.995, 2), javaFixed(float64(float32(12345)/10000.0), 1),
		javaFixed(0.123456, 4), fmt.Sprintf("%9s", javaFixed(12.125, 2)), javaFixed(-0.001, 2),
		javaFixed(float64(float32(0.05)), 1), fmt.Sprintf("%2s", javaFixed(3.5, 2)),
	}, "|")
	if want := "0.13|1.01|10.00|1.2|0.1235|    12.13|-0.00|0.1|3.50"; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if javaFixed(0, 0) != "0" || javaFixed(99.96, 1) != "100.0" {
		t.Fatal(javaFixed(0, 0), javaFixed(99.96, 1))
	}
}

func TestJavaDouble(t *testing.T) {
	// Double.toString of 1e7, 123.0, 0.001, 0.0009, -2.5e-10, 9999999.99
	got := strings.Join([]string{javaDouble(1e7), javaDouble(123), javaDouble(0.001), javaDouble(0.0009), javaDouble(-2.5e-10), javaDouble(9999999.99), javaDouble(0)}, "|")
	if want := "1.0E7|123.0|0.001|9.0E-4|-2.5E-10|9999999.99|0.0"; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestJavaHashOrder(t *testing.T) {
	for _, tc := range []struct {
		name       string
		keys       []string
		cap        int
		concurrent bool
		want       string
	}{
		{
			// new HashSet<>() filled in this order, then String.join("|", set)
			"HashSet",
			[]string{"TopicTest", "%RETRY%g1", "BenchmarkTest", "TBW102", "SELF_TEST_TOPIC", "DefaultCluster", "broker-a", "broker-b", "OFFSET_MOVED_EVENT", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRACE_TOPIC", "DefaultCluster_REPLY_TOPIC", "rmq_sys_wheel_timer", "TopicΩ"},
			hashMapDefault, false,
			"BenchmarkTest|OFFSET_MOVED_EVENT|TBW102|SELF_TEST_TOPIC|DefaultCluster|SCHEDULE_TOPIC_XXXX|RMQ_SYS_TRACE_TOPIC|DefaultCluster_REPLY_TOPIC|rmq_sys_wheel_timer|broker-b|TopicTest|%RETRY%g1|broker-a|TopicΩ",
		},
		{
			// new HashMap<>(4), keySet
			"HashMap(4)",
			[]string{"10.0.0.1:10911", "10.0.0.3:10911", "NO_MASTER", "192.168.1.20:10911"},
			hashMapCap4, false,
			"10.0.0.1:10911|192.168.1.20:10911|NO_MASTER|10.0.0.3:10911",
		},
		{
			// new Properties(), keySet
			"Properties",
			[]string{"brokerClusterName", "brokerName", "brokerId", "listenPort", "namesrvAddr", "storePathRootDir", "flushDiskType", "brokerRole", "autoCreateTopicEnable", "brokerPermission", "deleteWhen", "fileReservedTime", "sendMessageThreadPoolNums"},
			0, true,
			"brokerId|flushDiskType|storePathRootDir|autoCreateTopicEnable|deleteWhen|sendMessageThreadPoolNums|brokerRole|brokerClusterName|brokerPermission|fileReservedTime|namesrvAddr|brokerName|listenPort",
		},
	} {
		if got := strings.Join(javaHashOrder(tc.keys, tc.cap, tc.concurrent), "|"); got != tc.want {
			t.Errorf("%s:\n got  %s\n want %s", tc.name, got, tc.want)
		}
	}
}

func TestHumanTime2(t *testing.T) {
	if got := humanTime2(1700000000123, time.UTC); got != "2023-11-14 22:13:20,123" {
		t.Fatal(got)
	}
	if got := frontStringAtLeast("abcdef", 3); got != "abc" {
		t.Fatal(got)
	}
}

func TestTopicConfigString(t *testing.T) {
	m, order, s, err := parseAttributes("+message.type=NORMAL,+a=b")
	if err != nil {
		t.Fatal(err)
	}
	tc := protocol.TopicConfig{TopicName: "T", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6, Attributes: m}
	// new TopicConfig("T") with attributes AttributeParser.parseToMap("+message.type=NORMAL,+a=b"), toString()
	want := "TopicConfig [topicName=T, readQueueNums=8, writeQueueNums=8, perm=RW-, topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false, attributes={+a=b, +message.type=NORMAL}]"
	if got := topicConfigString(tc, order); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if s != "+a=b,+message.type=NORMAL" {
		t.Fatal(s)
	}
	for _, bad := range []string{"a=b", "+a=", "k", "+a=1,+a=2"} {
		if _, _, _, err := parseAttributes(bad); err == nil {
			t.Errorf("parseAttributes(%q): want error", bad)
		}
	}
}

func TestPrettyRoute(t *testing.T) {
	// TopicRouteData.toJson(true) of the route below (fastjson2, RocketMQ 5.5.0).
	r := &protocol.TopicRouteData{
		BrokerDatas:       []protocol.BrokerData{{BrokerAddrs: map[int64]string{0: "10.0.0.1:10911"}, BrokerName: "broker-a", Cluster: "DefaultCluster", ZoneName: "z1"}},
		FilterServerTable: map[string][]string{"10.0.0.1:10911": {"x", "y"}, "e": {}},
		OrderTopicConf:    "broker-a:4",
		TopicQueueMappingByBroker: map[string]protocol.TopicQueueMappingInfo{"broker-a": {
			Bname: "broker-a", CurrIDMap: map[int]int{0: 0, 1: 3}, Epoch: 1700000000000, Scope: "__global__", Topic: "T", TotalQueues: 2,
		}},
	}
	want := "{\n" +
		"\t\"brokerDatas\":[\n" +
		"\t\t{\n" +
		"\t\t\t\"brokerAddrs\":{\n" +
		"\t\t\t\t0:\"10.0.0.1:10911\"\n" +
		"\t\t\t},\n" +
		"\t\t\t\"brokerName\":\"broker-a\",\n" +
		"\t\t\t\"cluster\":\"DefaultCluster\",\n" +
		"\t\t\t\"enableActingMaster\":false,\n" +
		"\t\t\t\"zoneName\":\"z1\"\n" +
		"\t\t}\n" +
		"\t],\n" +
		"\t\"filterServerTable\":{\n" +
		"\t\t\"10.0.0.1:10911\":[\n" +
		"\t\t\t\"x\",\n" +
		"\t\t\t\"y\"\n" +
		"\t\t],\n" +
		"\t\t\"e\":[]\n" +
		"\t},\n" +
		"\t\"orderTopicConf\":\"broker-a:4\",\n" +
		"\t\"queueDatas\":[\n" +
		"\t\t\n" +
		"\t],\n" +
		"\t\"topicQueueMappingByBroker\":{\n" +
		"\t\t\"broker-a\":{\n" +
		"\t\t\t\"bname\":\"broker-a\",\n" +
		"\t\t\t\"currIdMap\":{\n" +
		"\t\t\t\t0:0,\n" +
		"\t\t\t\t1:3\n" +
		"\t\t\t},\n" +
		"\t\t\t\"dirty\":false,\n" +
		"\t\t\t\"epoch\":1700000000000,\n" +
		"\t\t\t\"scope\":\"__global__\",\n" +
		"\t\t\t\"topic\":\"T\",\n" +
		"\t\t\t\"totalQueues\":2\n" +
		"\t\t}\n" +
		"\t}\n" +
		"}"
	if got := prettyRoute(r); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}

	// Decoded from {"brokerDatas":[{"brokerAddrs":{"0":..,"10":..,"2":..},"brokerName":"bé\"q","cluster":"c\n",...}],"queueDatas":[]}
	r = &protocol.TopicRouteData{
		BrokerDatas:       []protocol.BrokerData{{BrokerAddrs: map[int64]string{0: "1.2.3.4:1", 10: "1.2.3.4:2", 2: "1.2.3.4:3"}, BrokerName: "bé\"q", Cluster: "c\n", EnableActingMaster: true}},
		FilterServerTable: map[string][]string{},
	}
	want = "{\n\t\"brokerDatas\":[\n\t\t{\n\t\t\t\"brokerAddrs\":{\n\t\t\t\t0:\"1.2.3.4:1\",\n\t\t\t\t2:\"1.2.3.4:3\",\n\t\t\t\t10:\"1.2.3.4:2\"\n\t\t\t},\n" +
		"\t\t\t\"brokerName\":\"bé\\\"q\",\n\t\t\t\"cluster\":\"c\\n\",\n\t\t\t\"enableActingMaster\":true\n\t\t}\n\t],\n" +
		"\t\"filterServerTable\":{},\n\t\"queueDatas\":[\n\t\t\n\t]\n}"
	if got := prettyRoute(r); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
