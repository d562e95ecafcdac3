package command

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/admin/admintest"
)

// Golden files testdata/ax_*.golden are the stdout of the Java mqadmin
// (rocketmq-tools 5.5.0, -Duser.timezone=UTC) for the topic, group and
// producer commands of topicadmin.go and groupadmin.go against
// adminSample, served on the sample's fixed ports, the cases in this
// order. Regenerate with
//
//	RMQ_JAVA_GOLDEN=1 go test ./command -run TestCaptureJavaAdminCmdsGolden

// adminSample is consumerSample with broker-c up (getConsumerConfig asks
// every broker of the cluster info) and producer tables on broker-a.
func adminSample() *admintest.Cluster {
	fc, cs := consumerSampleWith()
	fc.Down[admintest.SampleBrokerC0] = false
	cs.SubGroups[admintest.SampleBrokerA0] = map[string]string{
		"g1":             `{"groupName":"g1","consumeEnable":true,"retryQueueNums":2,"retryMaxTimes":5,"brokerId":0,"attributes":{"k":"v"}}`,
		"TOOLS_CONSUMER": `{"groupName":"TOOLS_CONSUMER"}`,
		"CID_RMQ_SYS_X":  `{"groupName":"CID_RMQ_SYS_X"}`,
		"gOrder":         `{"groupName":"gOrder","consumeMessageOrderly":true,"groupRetryPolicy":{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":1000,"max":60000,"multiplier":2}}}`,
	}
	cs.SubGroups[admintest.SampleBrokerB0] = map[string]string{
		"g1": `{"groupName":"g1","retryQueueNums":3}`,
		"g2": `{"groupName":"g2","consumeBroadcastEnable":false}`,
	}
	cs.ProducerTables[admintest.SampleBrokerA0] = `{"data":{"pg1":[` +
		`{"clientId":"127.0.0.1@p1","lastUpdateTimestamp":1700000000100,"language":"JAVA","remoteIP":"/127.0.0.1:50002","version":513},` +
		`{"clientId":"127.0.0.1@p2","lastUpdateTimestamp":1700000000200,"language":"GO","remoteIP":"/127.0.0.1:50004","version":0}],` +
		`"pg2":[],"TOOLS_PRODUCER":[{"clientId":"127.0.0.1@t","lastUpdateTimestamp":1700000000300,"language":"JAVA","remoteIP":"/127.0.0.1:50005","version":513}]}}`
	item := func(sum int64, tps float64) admin.BrokerStatsItem {
		return admin.BrokerStatsItem{Sum: sum, Tps: tps, Avgpt: 1}
	}
	a, b := admintest.SampleBrokerA0, admintest.SampleBrokerB0
	cs.BrokerStats[a] = map[string]admin.BrokerStatsData{
		"TOPIC_PUT_NUMS TopicTest":    {StatsMinute: item(60, 1.125), StatsHour: item(600, 0.2), StatsDay: item(1000, 0.01)},
		"GROUP_GET_NUMS TopicTest@g1": {StatsMinute: item(3, 0.005), StatsHour: item(30, 0.01)},
		"GROUP_GET_NUMS TopicTest@g2": {StatsMinute: item(7, 0.125)},
		"TOPIC_PUT_NUMS Topic_13":     {StatsMinute: item(0, 0), StatsHour: item(5, 0.001)},
	}
	cs.BrokerStats[b] = map[string]admin.BrokerStatsData{
		"TOPIC_PUT_NUMS TopicTest":    {StatsMinute: item(30, 0.5), StatsHour: item(70, 0.02)},
		"GROUP_GET_NUMS TopicTest@g2": {StatsMinute: item(2, 0.035), StatsDay: item(9, 0.0001)},
	}
	return fc
}

func adminCmdsGoldenCases() []caGoldenCase {
	a, a1, b, c := admintest.SampleBrokerA0, admintest.SampleBrokerA1, admintest.SampleBrokerB0, admintest.SampleBrokerC0
	return []caGoldenCase{
		{"updateTopicPerm_b", []string{"updateTopicPerm", "-b", a, "-t", "TopicTest", "-p", "4"}},
		{"updateTopicPerm_b_same", []string{"updateTopicPerm", "-b", a, "-t", "TopicTest", "-p", "4"}},
		{"updateTopicPerm_b_slave", []string{"updateTopicPerm", "-b", a1, "-t", "TopicTest", "-p", "2"}},
		{"updateTopicPerm_c", []string{"updateTopicPerm", "-c", "DefaultCluster", "-t", "TopicTest", "-p", "6"}},
		{"topicRoute_perm", []string{"topicRoute", "-t", "TopicTest"}},
		{"topicClusterList", []string{"topicClusterList", "-t", "TopicTest"}},
		{"updateOrderConf_put", []string{"updateOrderConf", "-t", "TopicTest", "-m", "put", "-v", "broker-a:4;broker-b:4"}},
		{"updateOrderConf_get", []string{"updateOrderConf", "-t", "TopicTest", "-m", "get"}},
		{"updateOrderConf_delete", []string{"updateOrderConf", "-t", "TopicTest", "-m", "delete"}},
		{"allocateMQ", []string{"allocateMQ", "-t", "TopicTest", "-i", "10.0.0.1,10.0.0.2,10.0.0.3"}},
		{"allocateMQ_many", []string{"allocateMQ", "-t", "TopicTest", "-i", "c1,c2,c3,c4,c5,c6,c7,c8,c9,c10"}},
		{"updateSubGroupList_b", []string{"updateSubGroupList", "-b", c, "-f", "testdata/subgrouplist.json"}},
		{"updateSubGroupList_b2", []string{"updateSubGroupList", "-b", a, "-f", "testdata/subgrouplist.json"}},
		{"updateSubGroupList_b3", []string{"updateSubGroupList", "-b", b, "-f", "testdata/subgrouplist.json"}},
		{"updateSubGroupList_missing", []string{"updateSubGroupList", "-b", a, "-f", "testdata/no-such-file.json"}},
		{"getConsumerConfig", []string{"getConsumerConfig", "-g", "gl1"}},
		{"setConsumeMode_b", []string{"setConsumeMode", "-b", a, "-t", "TopicTest", "-g", "g1", "-m", "POP", "-q", "2"}},
		{"setConsumeMode_c", []string{"setConsumeMode", "-c", "DefaultCluster", "-t", "TopicTest", "-g", "g1", "-m", "PULL"}},
		{"cloneGroupOffset", []string{"cloneGroupOffset", "-s", "g1", "-d", "g9", "-t", "TopicTest"}},
		{"skipAccumulatedMessage", []string{"skipAccumulatedMessage", "-g", "g1", "-t", "TopicTest"}},
		{"skipAccumulatedMessage_old", []string{"skipAccumulatedMessage", "-g", "g3", "-t", "TopicTest", "-f", "false"}},
		{"brokerConsumeStats", []string{"brokerConsumeStats", "-b", a}},
		{"brokerConsumeStats_l", []string{"brokerConsumeStats", "-b", b, "-l", "5", "-o", "false", "-t", "3000"}},
		{"producer", []string{"producer", "-b", a}},
		{"producer_none", []string{"producer", "-b", b}},
		{"statsAll_t", []string{"statsAll", "-t", "TopicTest"}},
		{"statsAll_a", []string{"statsAll", "-a"}},
		{"statsAll", []string{"statsAll"}},
	}
}

func axGolden() goldenSuite {
	return goldenSuite{"ax", "TestCaptureJavaAdminCmdsGolden", adminSample, adminCmdsGoldenCases}
}

func axGoldenPath(name string) string { return axGolden().path(name) }

func TestAdminCmdsGolden(t *testing.T) { axGolden().run(t) }

// TestCaptureJavaAdminCmdsGolden regenerates the ax_ golden files.
func TestCaptureJavaAdminCmdsGolden(t *testing.T) { axGolden().captureJava(t) }

// Export cases write files: "<DIR>" in their arguments is a fresh
// directory, and their golden file holds the stdout (the directory written
// as <DIR>) followed by each file written, in name order, after a line
// "--- <name>". exportTime values are written as <TIME>.
func exportGoldenCases() []caGoldenCase {
	a := admintest.SampleBrokerA0
	return []caGoldenCase{
		{"exportConfigs", []string{"exportConfigs", "-c", "DefaultCluster", "-f", "<DIR>"}},
		{"exportConfigs_unknown", []string{"exportConfigs", "-c", "NoSuchCluster", "-f", "<DIR>"}},
		{"exportMetadata_c", []string{"exportMetadata", "-c", "DefaultCluster", "-f", "<DIR>"}},
		{"exportMetadata_c_t_s", []string{"exportMetadata", "-c", "DefaultCluster", "-f", "<DIR>", "-t", "-s"}},
		{"exportMetadata_c_g", []string{"exportMetadata", "-c", "DefaultCluster", "-f", "<DIR>", "-g"}},
		{"exportMetadata_b_t", []string{"exportMetadata", "-b", a, "-f", "<DIR>", "-t"}},
		{"exportMetadata_b_g", []string{"exportMetadata", "-b", a, "-f", "<DIR>", "-g"}},
	}
}

var exportTime = regexp.MustCompile(`"exportTime":\d+`)

// exportOutput is what an export case's golden file holds.
func exportOutput(t *testing.T, stdout []byte, dir string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(strings.ReplaceAll(string(stdout), dir, "<DIR>"))
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(&b, "\n--- %s\n%s", rel, exportTime.ReplaceAll(data, []byte(`"exportTime":<TIME>`)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func exportArgs(args []string, dir string) []string {
	out := make([]string, 0, len(args)+2)
	for _, a := range args {
		out = append(out, strings.ReplaceAll(a, "<DIR>", dir))
	}
	return append(out, "-n", sampleNS)
}

func TestExportGolden(t *testing.T) {
	skipWhileCapturing(t, "TestCaptureJavaExportGolden")
	fc := adminSample()
	for _, tc := range exportGoldenCases() {
		want, err := os.ReadFile(axGoldenPath(tc.name))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		dir := t.TempDir()
		var out, errb bytes.Buffer
		if code := Main(context.Background(), exportArgs(tc.args, dir), fakeEnv(fc, &out, &errb)); code != 0 {
			t.Errorf("%s: exit %d; stderr:\n%s", tc.name, code, errb.String())
		}
		checkGolden(t, tc.name+": ", exportOutput(t, out.Bytes(), dir), string(want), false)
	}
}

// TestCaptureJavaExportGolden regenerates the export golden files (opt-in).
func TestCaptureJavaExportGolden(t *testing.T) {
	requireCapture(t)
	serveSample(t, adminSample())
	for _, tc := range exportGoldenCases() {
		dir := t.TempDir()
		out := runJavaMqadmin(t, exportArgs(tc.args, dir), "RMQ_JAVA_OPTS=-Duser.timezone=UTC")
		if err := os.WriteFile(axGoldenPath(tc.name), []byte(exportOutput(t, out, dir)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
