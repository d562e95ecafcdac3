package command

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/rmqgo/rmq/pkg/admin/admintest"
)

// Golden files testdata/mx_*.golden are the stdout of the Java mqadmin
// (rocketmq-tools 5.5.0, -Duser.timezone=UTC) for the store maintenance,
// cold-data, exportPopRecord, queryCq and exportMetrics commands
// (maintenance.go, exportmetrics.go) against maintenanceSample, the cases
// in this order. Regenerate with
//
//	RMQ_JAVA_GOLDEN=1 go test ./command -run TestCaptureJavaMaintenanceGolden

// maintenanceSample is adminSample with the store maintenance codes
// answered, consume queues on broker-a, an online subscription, and the
// runtime keys exportMetrics reads.
func maintenanceSample() *admintest.Cluster {
	fc := adminSample()
	m := admintest.AttachMaintenance(fc)
	a := admintest.SampleBrokerA0
	m.Queues[a] = map[string]admintest.Queue{
		"TopicTest@0": {Min: 2, Max: 5, Entries: []admintest.QueueEntry{
			{PhysicOffset: 1000, PhysicSize: 180, TagsCode: 2598919},
			{PhysicOffset: 1180, PhysicSize: 181, TagsCode: 2598920},
			{PhysicOffset: 1361, PhysicSize: 182, TagsCode: 0},
		}},
	}
	m.Subscriptions["g1@TopicTest"] = `{"classFilterMode":false,"codeSet":[2598919,2598920],"expressionType":"TAG","subString":"TagA || TagB","subVersion":1700000000123,"tagsSet":["TagA","TagB"],"topic":"TopicTest"}`
	fc.Lock(func() {
		for i, b := range fc.Brokers {
			b.Runtime["putTps"] = "1.5 1.25 1.0"
			b.Runtime["getTransferredTps"] = "0.75 0.5 0.25"
			b.Runtime["msgPutTotalTodayMorning"] = "1200"
			b.Runtime["msgPutTotalYesterdayMorning"] = "200"
			b.Runtime["msgGetTotalTodayMorning"] = "900"
			b.Runtime["msgGetTotalYesterdayMorning"] = "100"
			b.Runtime["commitLogDiskRatio"] = "0.42"
			b.Runtime["consumeQueueDiskRatio"] = "0.42"
			b.Runtime["putMessageAverageSize"] = "180.5"
			if i == 0 {
				b.Runtime["totalMemKBytes"] = "16384000"
			}
			b.Config["clientCallbackExecutorThreads"] = "8"
		}
	})
	return fc
}

func maintenanceGoldenCases() []caGoldenCase {
	a, a1 := admintest.SampleBrokerA0, admintest.SampleBrokerA1
	return []caGoldenCase{
		{"cleanExpiredCQ_b", []string{"cleanExpiredCQ", "-b", a}},
		{"cleanExpiredCQ_c", []string{"cleanExpiredCQ", "-c", "DefaultCluster"}},
		{"cleanExpiredCQ_unknown", []string{"cleanExpiredCQ", "-c", "NoSuchCluster"}},
		{"cleanUnusedTopic_b", []string{"cleanUnusedTopic", "-b", a}},
		{"deleteExpiredCommitLog_c", []string{"deleteExpiredCommitLog", "-c", "DefaultCluster"}},
		{"resetMasterFlushOffset", []string{"resetMasterFlushOffset", "-b", a1, "-o", "4096"}},
		{"setCommitLogReadAheadMode_b", []string{"setCommitLogReadAheadMode", "-b", a, "-m", "1"}},
		{"setCommitLogReadAheadMode_c", []string{"setCommitLogReadAheadMode", "-c", "DefaultCluster", "-m", "0"}},
		{"setCommitLogReadAheadMode_bad", []string{"setCommitLogReadAheadMode", "-b", a, "-m", "2"}},
		{"updateColdDataFlowCtrGroupConfig_b", []string{"updateColdDataFlowCtrGroupConfig", "-b", a, "-g", "gX", "-v", "1000"}},
		{"updateColdDataFlowCtrGroupConfig_c", []string{"updateColdDataFlowCtrGroupConfig", "-c", "DefaultCluster", "-g", "gY", "-v", "2000"}},
		{"getColdDataFlowCtrInfo_b", []string{"getColdDataFlowCtrInfo", "-b", a}},
		{"removeColdDataFlowCtrGroupConfig_b", []string{"removeColdDataFlowCtrGroupConfig", "-b", a, "-g", "gX"}},
		{"getColdDataFlowCtrInfo_c", []string{"getColdDataFlowCtrInfo", "-c", "DefaultCluster"}},
		{"exportPopRecord_b", []string{"exportPopRecord", "-b", a}},
		{"exportPopRecord_c", []string{"exportPopRecord", "-c", "DefaultCluster"}},
		{"exportPopRecord_c_dry", []string{"exportPopRecord", "-c", "DefaultCluster", "-d", "false"}},
		{"queryCq", []string{"queryCq", "-t", "TopicTest", "-q", "0", "-i", "2", "-b", a}},
		{"queryCq_route", []string{"queryCq", "-t", "TopicTest", "-q", "0", "-i", "3", "-c", "1"}},
		{"queryCq_g", []string{"queryCq", "-t", "TopicTest", "-q", "0", "-i", "3", "-b", a, "-g", "g1"}},
		{"queryCq_g_offline", []string{"queryCq", "-t", "TopicTest", "-q", "0", "-i", "4", "-b", a, "-g", "g2"}},
	}
}

func TestMaintenanceGolden(t *testing.T) {
	mxGolden().run(t)
	// exportMetrics writes metrics.json (the golden holds stdout and file).
	fc := maintenanceSample()
	want, err := os.ReadFile(mxGoldenPath("exportMetrics"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := Main(context.Background(), exportArgs(exportMetricsArgs, dir), fakeEnv(fc, &out, &errb)); code != 0 {
		t.Fatalf("exportMetrics: exit %d; stderr:\n%s", code, errb.String())
	}
	checkGolden(t, "exportMetrics: ", exportOutput(t, out.Bytes(), dir), string(want), false)
}

var exportMetricsArgs = []string{"exportMetrics", "-c", "DefaultCluster", "-f", "<DIR>"}

func mxGolden() goldenSuite {
	return goldenSuite{"mx", "TestCaptureJavaMaintenanceGolden", maintenanceSample, maintenanceGoldenCases}
}

func mxGoldenPath(name string) string { return mxGolden().path(name) }

// TestCaptureJavaMaintenanceGolden regenerates the mx_ golden files
// (opt-in; needs java and Maven, and the sample's fixed ports free).
func TestCaptureJavaMaintenanceGolden(t *testing.T) {
	mxGolden().captureJava(t)
	dir := t.TempDir()
	out := runJavaMqadmin(t, exportArgs(exportMetricsArgs, dir), "RMQ_JAVA_OPTS=-Duser.timezone=UTC")
	if err := os.WriteFile(mxGoldenPath("exportMetrics"), []byte(exportOutput(t, out, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
}
