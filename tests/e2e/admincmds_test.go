package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

// TestJavaMQAdminMoreCommands runs Apache's mqadmin 5.5.0 against our
// broker, two batches of commands in one JVM each, and our mqadmin on the
// same cluster right after: the outputs (and the files the export
// commands write) are the same. Batch 1 is read-only once Java's
// updateSubGroupList (225) made the groups: producer (328),
// exportMetadata (21, 305), topicClusterList, allocateMQ,
// getConsumerConfig (201), brokerConsumeStats (317), printMsg,
// exportConfigs, exportMetrics (28, 26, 201, 21, 315, 203), queryCq (321),
// getColdDataFlowCtrInfo (2003), exportPopRecord (200056),
// cleanExpiredCQ (306), cleanUnusedTopic (316), deleteExpiredCommitLog
// (329), resetMasterFlushOffset (908); statsAll's counts. Batch 2 changes
// state, and ours repeats it to the same end: the cold-data table (2001,
// 2002), setCommitLogReadAheadMode (2004), skipAccumulatedMessage,
// setConsumeMode, updateTopicPerm, updateOrderConf (nameserver KV),
// cloneGroupOffset (offsets copied).
func TestJavaMQAdminMoreCommands(t *testing.T) {
	skipShort(t, "the Java tool takes a few seconds per batch")
	t.Parallel()
	c := startCluster(t, framework.Options{Brokers: 1})
	addr := c.Brokers()[0].Addr()
	ns := c.NamesrvAddr()
	mqadmin(t, c, "updateTopic", "-b", addr, "-t", "MoreT", "-r", "2", "-w", "2")

	p, err := client.NewProducer(client.ProducerConfig{CommonConfig: client.CommonConfig{NameServers: []string{ns}}, Group: "more_pg"})
	started(t, p, err)
	defer p.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for range 4 {
		if _, err := p.SendSync(ctx, &message.Message{Topic: "MoreT", Body: []byte("x"), Properties: map[string]string{"TAGS": "TagA"}}); err != nil {
			t.Fatal(err)
		}
	}
	adm, err := admin.New(admin.Config{NameServers: []string{ns}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()

	dir := t.TempDir()
	groups := filepath.Join(dir, "groups.json")
	if err := os.WriteFile(groups, []byte(`[{"groupName":"more_g1","retryMaxTimes":3},{"groupName":"more_g2","consumeEnable":false}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	// Our mqadmin runs each command of a batch; Java's writes under
	// dir/java, ours under dir/ours ("<D>" in an argument).
	jdir, odir := filepath.Join(dir, "java"), filepath.Join(dir, "ours")
	java := func(cmds [][]string) []string {
		t.Helper()
		var jc [][]string
		for _, cmd := range cmds {
			var args []string
			for _, a := range cmd {
				args = append(args, strings.ReplaceAll(a, "<D>", jdir))
			}
			jc = append(jc, append(args, "-n", ns))
		}
		outs, err := harness.RunJavaMQAdminBatch(t, nil, jc)
		if err != nil {
			t.Fatal(err)
		}
		return outs
	}
	ours := func(cmd []string) string {
		t.Helper()
		var args []string
		for _, a := range cmd {
			args = append(args, strings.ReplaceAll(a, "<D>", odir))
		}
		return strings.ReplaceAll(mqadmin(t, c, args...), odir, jdir)
	}
	same := func(cmds [][]string, jouts []string, skip map[string]bool) {
		t.Helper()
		for i, cmd := range cmds {
			if skip[cmd[0]] {
				continue
			}
			// A producer's heartbeat may come between the two reads.
			want := heartbeatTime.ReplaceAllString(jouts[i], "$1<T>")
			o := heartbeatTime.ReplaceAllString(ours(cmd), "$1<T>")
			// "producer" lists live connections: the Java batch's own
			// (printMsg's tool consumer and its inner producer) is gone
			// once the broker has handled the exited JVM's close, which
			// under load can come after ours runs (a CI failure).
			for deadline := time.Now().Add(5 * time.Second); cmd[0] == "producer" && o != want && time.Now().Before(deadline); {
				time.Sleep(200 * time.Millisecond)
				o = heartbeatTime.ReplaceAllString(ours(cmd), "$1<T>")
			}
			if o != want {
				t.Errorf("%v:\njava:\n%s\nours:\n%s", cmd, jouts[i], o)
			}
		}
	}

	// Batch 1. The group table first (Java), then the offsets of more_g1.
	if out := java([][]string{{"updateSubGroupList", "-b", addr, "-f", groups}})[0]; !strings.Contains(out, "submit batch of group config to "+addr+" success") {
		t.Fatalf("updateSubGroupList: %s", out)
	}
	for q := range 2 {
		if err := adm.UpdateConsumerOffset(ctx, addr, "more_g1", "MoreT", q, 1); err != nil {
			t.Fatal(err)
		}
	}
	batch1 := [][]string{
		{"getConsumerConfig", "-g", "more_g1"},
		{"producer", "-b", addr},
		{"exportMetadata", "-b", addr, "-t", "-f", "<D>/meta"},
		{"topicClusterList", "-t", "MoreT"},
		{"allocateMQ", "-t", "MoreT", "-i", "a,b,c"},
		{"brokerConsumeStats", "-b", addr},
		{"statsAll", "-t", "MoreT"},
		{"printMsg", "-t", "MoreT"},
		{"exportConfigs", "-c", "DefaultCluster", "-f", "<D>/configs"},
		{"exportMetrics", "-c", "DefaultCluster", "-f", "<D>/metrics"},
		{"queryCq", "-t", "MoreT", "-q", "0", "-i", "0"},
		{"queryCq", "-t", "MoreT", "-q", "1", "-i", "1", "-c", "1", "-g", "nobody", "-b", addr},
		{"getColdDataFlowCtrInfo", "-b", addr},
		{"exportPopRecord", "-b", addr},
		{"exportPopRecord", "-c", "DefaultCluster", "-d", "false"},
		{"cleanExpiredCQ", "-b", addr},
		{"cleanExpiredCQ", "-c", "NoSuchCluster"},
		{"cleanUnusedTopic", "-c", "DefaultCluster"},
		{"deleteExpiredCommitLog"},
		{"resetMasterFlushOffset", "-b", addr, "-o", "100"},
		{"setCommitLogReadAheadMode", "-b", addr, "-m", "3"},
	}
	j1 := java(batch1)
	same(batch1, j1, map[string]bool{"statsAll": true})
	mustContain(t, j1[0], "=============================DefaultCluster:broker-a=============================",
		"groupName                               =  more_g1", "retryMaxTimes                           =  3")
	mustContain(t, j1[1], "producer group (more_pg) instance : clientId="+p.ClientID()+",remoteIP=/127.0.0.1:", "language=GO")
	mustContain(t, j1[5], "MoreT", "more_g1", "Diff Total: 2")
	mustContain(t, j1[10], "max: 2, min: 0", "idx: 1\nConsumeQueueData{physicOffset=")
	mustContain(t, j1[11], "nobody@MoreT is not online!")
	if j1[15] != "success" || j1[16] != "false" || j1[17] != "success" || j1[18] != "success" {
		t.Errorf("clean commands: %q %q %q %q", j1[15], j1[16], j1[17], j1[18])
	}
	// statsAll: the TPS and 24-hour columns move with the clock (a minute
	// window rolls); the accumulation is the same.
	if jf, of := statsFields(j1[6]), statsFields(ours(batch1[6])); jf != of || !strings.Contains(jf, "MoreT more_g1 2") {
		t.Errorf("statsAll: java %q, ours %q", jf, of)
	}
	for _, f := range []string{"meta/topic.json", "configs/configs.json", "metrics/metrics.json"} {
		jb, err := os.ReadFile(filepath.Join(jdir, f))
		if err != nil {
			t.Fatal(err)
		}
		ob, err := os.ReadFile(filepath.Join(odir, f))
		if err != nil {
			t.Fatal(err)
		}
		if j, o := movingFigures.ReplaceAllString(string(jb), "$1:<N>"), movingFigures.ReplaceAllString(string(ob), "$1:<N>"); j != o {
			t.Errorf("%s\njava:\n%s\nours:\n%s", f, jb, ob)
		}
	}
	mustContain(t, mustRead(t, filepath.Join(jdir, "metrics/metrics.json")), `"topicSize":1`, `"groupSize":2`, `"rocketmqVersion":"V5_5_0"`)

	// Batch 2: Java's changes, then ours to the same end state.
	batch2 := [][]string{
		{"updateColdDataFlowCtrGroupConfig", "-b", addr, "-g", "gX", "-v", "1000"},
		{"updateColdDataFlowCtrGroupConfig", "-c", "DefaultCluster", "-g", "gY", "-v", "2000"},
		{"removeColdDataFlowCtrGroupConfig", "-b", addr, "-g", "gX"},
		{"getColdDataFlowCtrInfo", "-c", "DefaultCluster"},
		{"setCommitLogReadAheadMode", "-c", "DefaultCluster", "-m", "1"},
		{"skipAccumulatedMessage", "-g", "more_g1", "-t", "MoreT"},
		{"setConsumeMode", "-b", addr, "-t", "MoreT", "-g", "more_g1", "-m", "POP", "-q", "2"},
		{"updateTopicPerm", "-b", addr, "-t", "MoreT", "-p", "6"},
		{"updateOrderConf", "-t", "MoreT", "-m", "put", "-v", "broker-a:2"},
		{"updateOrderConf", "-t", "MoreT", "-m", "get"},
		{"cloneGroupOffset", "-s", "more_g1", "-d", "more_g2", "-t", "MoreT"},
	}
	// cloneGroupOffset reads more_g1's consume stats over its retry topic's route.
	mqadmin(t, c, "updateTopic", "-b", addr, "-t", "%RETRY%more_g1", "-r", "1", "-w", "1")
	j2 := java(batch2)
	same(batch2, j2, nil)
	mustContain(t, j2[3], `"configTable":{`+"\n\t\t"+`"gY":2000`+"\n\t}")
	mustContain(t, j2[4], "commitLog set readAhead mode rstStrset commitlog readahead mode success, mode: 1")
	if cfg := mqadmin(t, c, "getBrokerConfig", "-b", addr); !regexp.MustCompile(`dataReadAheadEnable\s+=\s+false`).MatchString(cfg) {
		t.Error("setCommitLogReadAheadMode -m 1 left dataReadAheadEnable on")
	}
	mustContain(t, j2[5], "broker-a                                  0                                         2")
	mustContain(t, j2[9], "broker-a:2")
	mustContain(t, j2[10], "clone group offset success. srcGroup[more_g1], destGroup=[more_g2], topic[MoreT]")
	// more_g1 was at 2 on both queues (skipAccumulatedMessage): so is more_g2.
	cloned := 0
	for _, l := range strings.Split(mqadmin(t, c, "brokerConsumeStats", "-b", addr), "\n") {
		if f := strings.Fields(l); len(f) >= 6 && f[0] == "MoreT" && f[1] == "more_g2" && f[5] == "2" {
			cloned++
		}
	}
	if cloned != 2 {
		t.Errorf("more_g2 has offset 2 on %d queues, want 2", cloned)
	}

	// Batch 3: the commands whose figures move with the clock or the
	// sends (round-trip times, message ids, offsets) compared with those
	// masked; updateTopicList reads a file of its own per tool.
	mqadmin(t, c, "updateTopic", "-b", addr, "-t", "RtT", "-r", "2", "-w", "2")
	for tool, names := range map[string][2]string{jdir: {"ListJ1", "ListJ2"}, odir: {"ListO1", "ListO2"}} {
		if err := os.MkdirAll(tool, 0o755); err != nil {
			t.Fatal(err)
		}
		list := `[{"topicName":"` + names[0] + `","readQueueNums":3,"writeQueueNums":3,"perm":6},{"topicName":"` + names[1] + `","perm":4}]`
		if err := os.WriteFile(filepath.Join(tool, "topics.json"), []byte(list), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	batch3 := [][]string{
		{"updateTopicList", "-b", addr, "-f", "<D>/topics.json"},
		{"printMsgByQueue", "-t", "MoreT", "-a", "broker-a", "-i", "0", "-p", "true", "-d", "true", "-f", "true"},
		{"checkMsgSendRT", "-t", "RtT", "-a", "4", "-s", "16"},
		{"sendMsgStatus", "-b", "broker-a", "-c", "2", "-s", "20"},
	}
	j3 := java(batch3)
	for i, cmd := range batch3 {
		if j, o := sendFigures(j3[i]), sendFigures(ours(cmd)); j != o {
			t.Errorf("%v:\njava:\n%s\nours:\n%s", cmd, j, o)
		}
	}
	mustContain(t, j3[0], "submit batch of topic config to "+addr+" success")
	mustContain(t, j3[1], "MessageExt [brokerName=broker-a, queueId=0,", "Tag: TagA")
	mustContain(t, sendFigures(j3[2]), "broker-a                          1     true                    <RT>", "Avg RT: <RT>")
	mustContain(t, sendFigures(j3[3]), "rt=<RT>ms, SendResult=SendResult [sendStatus=SEND_OK")
	// Both lists took effect: Java's on the broker first, then ours (a
	// topic without queue numbers gets TopicConfig's default, 16).
	ctx3, cancel3 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel3()
	for name, queues := range map[string]int{"ListJ1": 3, "ListJ2": 16, "ListO1": 3, "ListO2": 16} {
		tc, err := adm.GetTopicConfig(ctx3, addr, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tc.WriteQueueNums != queues {
			t.Errorf("%s: %d write queues, want %d", name, tc.WriteQueueNums, queues)
		}
	}
}

// sendFigures masks what differs between two runs of a sending command:
// round-trip times, message ids and queue offsets.
func sendFigures(out string) string {
	for _, m := range sendMasks {
		out = m.re.ReplaceAllString(out, m.to)
	}
	return out
}

var sendMasks = []struct {
	re *regexp.Regexp
	to string
}{
	{regexp.MustCompile(`(?m)^(\S+ +\d+ +(?:true|false) +)\d+$`), "$1<RT>"},
	{regexp.MustCompile(`Avg RT: [0-9.]+`), "Avg RT: <RT>"},
	{regexp.MustCompile(`rt=\d+ms`), "rt=<RT>ms"},
	{regexp.MustCompile(`(msgId|offsetMsgId)=[0-9A-F]+`), "$1=<ID>"},
	{regexp.MustCompile(`queueOffset=\d+`), "queueOffset=<N>"},
}

// movingFigures are the values of exported files that change between two
// reads a second apart: rates, disk ratios, and the topic table's data
// version (a topic's queue offsets are registered with it).
var movingFigures = regexp.MustCompile(`("[a-zA-Z]*(?:Tps|DiskRatio)"|"counter"|"timestamp"):"?[0-9.E-]+"?`)

// statsFields is statsAll's topic, group and accumulation columns.
func statsFields(out string) string {
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) == 7 {
			rows = append(rows, strings.Join(f[:3], " "))
		}
	}
	return strings.Join(rows, "\n")
}

var heartbeatTime = regexp.MustCompile(`(lastUpdateTimestamp=)\d+`)

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestJavaClusterRT: clusterRT runs until it is stopped, so the Java tool
// and ours each run for a while against our broker; their header and first
// row agree once the measured round-trip time is masked.
func TestJavaClusterRT(t *testing.T) {
	skipShort(t, "the Java tool runs for seconds")
	t.Parallel()
	c := startCluster(t, framework.Options{Brokers: 1})
	ns := c.NamesrvAddr()
	// Skips with a message where Java is missing.
	if _, err := harness.RunJavaMQAdmin(t, "clusterList", "-n", ns); err != nil {
		t.Fatal(err)
	}
	args := []string{"clusterRT", "-a", "3", "-s", "8", "-i", "1", "-n", ns}
	// The first round's rows, RT masked (the tools print it differently
	// rounded: Java a double, both in milliseconds).
	firstRound := func(tool, out string) string {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) < 2 {
			t.Fatalf("%s clusterRT printed %q", tool, out)
		}
		f := strings.Fields(lines[1])
		if len(f) != 5 {
			t.Fatalf("%s clusterRT row %q", tool, lines[1])
		}
		f[2] = "<RT>"
		return lines[0] + "\n" + strings.Join(f, " ")
	}
	script := filepath.Join(harness.RepoRoot(t), "scripts", "mqadmin-java.sh")
	jout, _, _, _ := harness.RunGroup(context.Background(), 20*time.Second,
		[]string{"RMQ_JAVA_LOG_DIR=" + t.TempDir()}, script, args...)
	ours := filepath.Join(harness.BuildBinaries(t, harness.MQAdmin), harness.MQAdmin)
	oout, _, _, _ := harness.RunGroup(context.Background(), 5*time.Second, nil, ours, args...)
	j, o := firstRound("java", jout), firstRound("ours", oout)
	if j != o {
		t.Errorf("clusterRT:\njava:\n%s\nours:\n%s", j, o)
	}
	if want := "DefaultCluster broker-a <RT> 3 0"; !strings.HasSuffix(j, want) {
		t.Errorf("java's first row %q, want %q", j, want)
	}
}

// TestJavaStartMonitoring: startMonitoring logs a round 20 s after its
// start (Java to its log file, ours to stderr). Both tools run at once
// against our broker, one round each; the lines of a group with a known
// lag (two queues with 3 messages each, the group's offsets at 1) are the
// same: undone totals, the largest queue's, the delay of the newest
// message behind the last consumed one, and the blocked queue of the
// group's consumer (its handler holds the first message).
func TestJavaStartMonitoring(t *testing.T) {
	skipShort(t, "the first round comes 20 s after the start")
	t.Parallel()
	c := startCluster(t, framework.Options{Brokers: 1})
	ns := c.NamesrvAddr()
	addr := c.Brokers()[0].Addr()
	// Skips with a message where Java is missing.
	if _, err := harness.RunJavaMQAdmin(t, "clusterList", "-n", ns); err != nil {
		t.Fatal(err)
	}
	mqadmin(t, c, "updateTopic", "-b", addr, "-t", "MonT", "-r", "2", "-w", "2")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := client.NewProducer(client.ProducerConfig{CommonConfig: client.CommonConfig{NameServers: []string{ns}}, Group: "mon_pg"})
	started(t, p, err)
	defer p.Shutdown(context.Background())
	for q := range 2 {
		for range 3 {
			mq := protocol.MessageQueue{Topic: "MonT", BrokerName: "broker-a", QueueID: q}
			if _, err := p.SendSync(ctx, &message.Message{Topic: "MonT", Body: []byte("x")}, client.WithQueue(mq)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond) // distinct store times
		}
	}
	// The group's offsets are at 1, and it is online: a consumer of MonT
	// whose handler holds the first message it gets, so the committed
	// offsets stay where they are (an online group's consume stats cover
	// only the topics it subscribes, as Apache's).
	adm, err := admin.New(admin.Config{NameServers: []string{ns}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	for q := range 2 {
		if err := adm.UpdateConsumerOffset(ctx, addr, "mon_g", "MonT", q, 1); err != nil {
			t.Fatal(err)
		}
	}
	pc, err := client.NewPushConsumer(client.PushConsumerConfig{CommonConfig: sdkCommon(c, nil, "mon"), Group: "mon_g",
		ConsumeGoroutines: 1,
		Handler: func(ctx context.Context, _ *client.ConsumeRequest) client.ConsumeResult {
			<-ctx.Done()
			return client.ConsumeRetryLater
		}})
	subscribed(t, pc, err, "MonT")
	defer pc.Shutdown(context.Background())
	// The retry topic comes with the consumer's heartbeat; its offset is
	// set too, whether or not the consumer commits one before the rounds.
	testutil.Eventually(t, 10*time.Second, func() error {
		return adm.UpdateConsumerOffset(ctx, addr, "mon_g", "%RETRY%mon_g", 0, 0)
	})

	logDir := t.TempDir()
	script := filepath.Join(harness.RepoRoot(t), "scripts", "mqadmin-java.sh")
	ours := filepath.Join(harness.BuildBinaries(t, harness.MQAdmin), harness.MQAdmin)
	var oerr string
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, oerr, _, _ = harness.RunGroup(ctx, 40*time.Second, nil, ours, "startMonitoring", "--rounds", "1", "-n", ns)
	}()
	// Java runs until stopped: its round starts 20 s after its clients.
	harness.RunGroup(ctx, 30*time.Second, []string{"RMQ_JAVA_LOG_DIR=" + logDir}, script, "startMonitoring", "-n", ns)
	<-done
	jlog := mustRead(t, filepath.Join(logDir, "mqadmin-java.log"))

	// The round's lines about mon_g, from "[MONITOR]" on (Java's log
	// lines start with a time, level, thread and logger).
	lines := func(tool, log string) string {
		t.Helper()
		var keep []string
		for _, l := range strings.Split(log, "\n") {
			i := strings.Index(l, "[MONITOR]")
			if i < 0 {
				continue
			}
			if l = l[i:]; strings.Contains(l, "Round") || strings.Contains(l, "consumerGroup=mon_g,") || strings.Contains(l, "ConsumerGroup: mon_g,") {
				keep = append(keep, l)
			}
		}
		if len(keep) == 0 {
			t.Fatalf("%s logged no round:\n%s", tool, log)
		}
		return strings.Join(keep, "\n")
	}
	// A blocked queue's figure is now minus its last consume time (0 here:
	// nothing consumed), read a moment apart by the two tools.
	blockedFor := regexp.MustCompile(`maybe blocked, \d+ms`)
	j := blockedFor.ReplaceAllString(lines("java", jlog), "maybe blocked, <T>ms")
	o := blockedFor.ReplaceAllString(lines("ours", oerr), "maybe blocked, <T>ms")
	if j != o {
		t.Errorf("startMonitoring:\njava:\n%s\nours:\n%s", j, o)
	}
	mustContain(t, j, "[MONITOR] =========================================beginRound",
		"UndoneMsgs [consumerGroup=mon_g, topic=MonT, undoneMsgsTotal=4, undoneMsgsSingleMQ=2, undoneMsgsDelayTimeMills=",
		"[NOTIFY] reportConsumerRunningInfo: ConsumerGroup: mon_g, ClientId: ",
		"[MONITOR] =========================================endRound")
}
