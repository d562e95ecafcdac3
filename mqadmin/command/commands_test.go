package command

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/admin/admintest"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

type result struct {
	code           int
	stdout, stderr string
}

func runFake(t *testing.T, fc *admintest.Cluster, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, fakeEnv(fc, &out, &errb))
	return result{code, out.String(), errb.String()}
}

func TestClusterListFixedClock(t *testing.T) {
	// testdata/clusterList_fixedclock.golden is the Java tool's output for
	// NewSample with its #Hour column recomputed for the fake clock
	// (earliestMessageTimeStamp + 3.5 h).
	want, err := os.ReadFile("testdata/clusterList_fixedclock.golden")
	if err != nil {
		t.Fatal(err)
	}
	r := runFake(t, admintest.NewSample(), "clusterList", "-n", admintest.SampleNamesrv1)
	if r.stdout != string(want) {
		t.Fatalf("got\n%s\nwant\n%s", r.stdout, want)
	}
	// broker-c is down: its row is printed with empty values (as Java), the
	// failure goes to stderr and the exit code says so.
	if r.code != ExitError || !strings.Contains(r.stderr, "broker broker-c (127.0.0.1:20941)") || !strings.Contains(r.stderr, "connection refused") {
		t.Fatalf("code %d stderr %q", r.code, r.stderr)
	}
	r = runFake(t, admintest.NewSample(), "clusterList", "-n", admintest.SampleNamesrv1, "-c", "DefaultCluster")
	if r.code != 0 || strings.Contains(r.stdout, "OtherCluster") || strings.Count(r.stdout, "\n") != 4 {
		t.Fatalf("-c: %+v", r)
	}
	r = runFake(t, admintest.NewSample(), "clusterList", "-n", admintest.SampleNamesrv1, "-c", "Nope")
	if r.code != ExitError || r.stdout != "" || !strings.Contains(r.stderr, "Make sure the specified clusterName exists") {
		t.Fatalf("unknown cluster: %+v", r)
	}
}

func TestClusterListInterval(t *testing.T) {
	fc := admintest.NewSample()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb bytes.Buffer
	out := &cancelAfter{n: 2, cancel: cancel}
	env := fakeEnv(fc, nil, &errb)
	env.Stdout = out
	code := Main(ctx, []string{"clusterList", "-i", "0", "-c", "DefaultCluster", "-n", admintest.SampleNamesrv1}, env)
	if code != 0 || out.headers != 2 {
		t.Fatalf("code %d, %d iterations, stderr %s", code, out.headers, errb.String())
	}
	r := runFake(t, fc, "clusterList", "-i", "x", "-n", admintest.SampleNamesrv1)
	if r.code != ExitUsage {
		t.Fatalf("bad interval: %+v", r)
	}
}

// cancelAfter cancels once n clusterList tables were written.
type cancelAfter struct {
	bytes.Buffer
	n, headers int
	cancel     func()
}

func (c *cancelAfter) Write(p []byte) (int, error) {
	if strings.HasPrefix(string(p), "#Cluster Name") {
		if c.headers++; c.headers >= c.n {
			c.cancel()
		}
	}
	return c.Buffer.Write(p)
}

func TestJSONOutput(t *testing.T) {
	fc := admintest.NewSample()
	ns := admintest.SampleNamesrv1 + ";" + admintest.SampleNamesrv2
	for _, tc := range []struct {
		args  []string
		check func(m map[string]any) bool
	}{
		{[]string{"topicRoute", "-t", "TopicTest"}, func(m map[string]any) bool { return len(m["brokerDatas"].([]any)) == 2 }},
		{[]string{"topicStatus", "-t", "TopicTest"}, func(m map[string]any) bool { return len(m["queues"].([]any)) == 6 }},
		{[]string{"clusterList", "-c", "DefaultCluster"}, func(m map[string]any) bool {
			b := m["brokers"].([]any)[0].(map[string]any)
			return len(m["brokers"].([]any)) == 3 && b["inTps"].(float64) == 12.125 && b["runtime"].(map[string]any)["brokerActive"] == "true"
		}},
		{[]string{"topicList"}, func(m map[string]any) bool { return len(m["topics"].([]any)) == 42 }},
		{[]string{"brokerStatus", "-b", admintest.SampleBrokerA0}, func(m map[string]any) bool { return m["runtime"].(map[string]any)["putTps"] == "12.125 11.0 10.0" }},
		{[]string{"getBrokerConfig", "-c", "DefaultCluster"}, func(m map[string]any) bool { return len(m["brokers"].([]any)) == 3 }},
		{[]string{"getNamesrvConfig"}, func(m map[string]any) bool { return len(m["nameServers"].([]any)) == 2 }},
		{[]string{"updateTopic", "-c", "DefaultCluster", "-t", "J", "-o", "true"}, func(m map[string]any) bool {
			return len(m["createdOn"].([]any)) == 2 && m["orderConf"] == "broker-b:8;broker-a:8" && m["topicConfig"].(map[string]any)["order"] == true
		}},
		{[]string{"wipeWritePerm", "-b", "broker-a"}, func(m map[string]any) bool {
			return m["nameServers"].([]any)[0].(map[string]any)["topicCount"].(float64) == 43
		}},
		{[]string{"updateKvConfig", "-s", "N", "-k", "k", "-v", "v"}, func(m map[string]any) bool { return m["value"] == "v" }},
	} {
		args := append(append([]string{}, tc.args...), "-n", ns, "--output", "json")
		r := runFake(t, fc, args...)
		var m map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &m); err != nil || r.code != 0 {
			t.Errorf("%v: code %d err %v\nstdout %s\nstderr %s", tc.args, r.code, err, r.stdout, r.stderr)
			continue
		}
		if !tc.check(m) {
			t.Errorf("%v: unexpected JSON %s", tc.args, r.stdout)
		}
	}
}

func TestFailures(t *testing.T) {
	ns := admintest.SampleNamesrv1
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"route error", []string{"topicRoute", "-t", "Nope", "-n", ns}, ExitError,
			"mqadmin topicRoute: GET_ROUTEINFO_BY_TOPIC to 127.0.0.1:19876 failed: TOPIC_NOT_EXIST (code 17): No topic route info in name server for the topic: Nope\n"},
		{"missing required", []string{"topicRoute", "-n", ns}, ExitUsage, `mqadmin topicRoute: required flag(s) "topic" not set`},
		{"group required", []string{"brokerStatus", "-n", ns}, ExitUsage, "at least one of the flags in the group [brokerAddr clusterName] is required"},
		{"group exclusive", []string{"updateTopic", "-b", "x", "-c", "y", "-t", "T", "-n", ns}, ExitUsage, "none of the others can be"},
		{"bad int", []string{"updateTopic", "-b", admintest.SampleBrokerA0, "-t", "T", "-w", "x", "-n", ns}, ExitUsage, `invalid value "x" for -w`},
		{"bad perm", []string{"updateTopic", "-b", admintest.SampleBrokerA0, "-t", "T", "-p", "9", "-n", ns}, ExitUsage, "topicPermission value: 9 is invalid."},
		{"bad attrs", []string{"updateTopic", "-b", admintest.SampleBrokerA0, "-t", "T", "-a", "x=y", "-n", ns}, ExitUsage, "add/alter attribute format is wrong: x"},
		{"bad broker perm", []string{"updateBrokerConfig", "-b", admintest.SampleBrokerA0, "-k", "brokerPermission", "-v", "8", "-n", ns}, ExitUsage, "brokerPermission value: 8 is invalid."},
		{"unknown command", []string{"nope"}, ExitUsage, "mqadmin: The sub command nope not exist."},
		{"a Java command for Apache's BrokerContainer", []string{"addBroker", "-c", "x", "-b", "y"}, ExitUsage, "mqadmin: The sub command addBroker is not provided here: it starts or stops a broker inside Apache's BrokerContainer"},
		{"a Java command for Apache's RocksDB store", []string{"rocksDBConfigToJson"}, ExitUsage, "keeps its metadata in JSON files"},
		{"unknown flag", []string{"topicList", "--bogus", "-n", ns}, ExitUsage, "unknown flag: --bogus"},
		{"extra arg", []string{"topicList", "extra", "-n", ns}, ExitUsage, "unexpected argument(s): extra"},
		{"bad output", []string{"topicList", "--output", "xml", "-n", ns}, ExitUsage, `invalid --output "xml"`},
		{"no namesrv", []string{"topicList"}, ExitError, "no name server address configured (use -n or set NAMESRV_ADDR)"},
		{"unknown cluster", []string{"updateTopic", "-c", "Nope", "-t", "T", "-n", ns}, ExitError, `cluster "Nope": Make sure the specified clusterName exists`},
		{"broker down", []string{"brokerStatus", "-b", admintest.SampleBrokerC0, "-n", ns}, ExitError, "GET_BROKER_RUNTIME_INFO to 127.0.0.1:20941: dial tcp 127.0.0.1:20941: connect: connection refused"},
	} {
		fc := admintest.NewSample()
		r := runFake(t, fc, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("%s: code %d (want %d)\nstderr %q\nwant it to contain %q", tc.name, r.code, tc.code, r.stderr, tc.stderr)
		}
		if r.stdout != "" {
			t.Errorf("%s: stdout %q", tc.name, r.stdout)
		}
		if tc.code == ExitUsage {
			for _, c := range fc.Calls() {
				t.Errorf("%s: usage error sent request %d to %s", tc.name, c.Code, c.Addr)
			}
		}
	}
}

func TestPartialFailures(t *testing.T) {
	fc := admintest.NewSample()
	fc.Down[admintest.SampleNamesrv2] = true
	r := runFake(t, fc, "wipeWritePerm", "-b", "broker-a", "-n", admintest.SampleNamesrv1+";"+admintest.SampleNamesrv2)
	want := "wipe write perm of broker[broker-a] in name server[127.0.0.1:19876] OK, 42\n" +
		"wipe write perm of broker[broker-a] in name server[127.0.0.1:19877] Failed\n"
	if r.code != ExitError || r.stdout != want || !strings.Contains(r.stderr, "WIPE_WRITE_PERM_OF_BROKER to 127.0.0.1:19877") {
		t.Fatalf("%+v", r)
	}

	fc = admintest.NewSample()
	fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
		if addr == admintest.SampleBrokerA0 && req.Code == code.UpdateBrokerConfig {
			return remoting.NewResponse(req, code.NoPermission, "Can not update config in black list."), true
		}
		return nil, false
	}
	r = runFake(t, fc, "updateBrokerConfig", "-c", "DefaultCluster", "-k", "k", "-v", "v", "-n", admintest.SampleNamesrv1)
	if r.code != ExitError || r.stdout != "update broker config success, 127.0.0.1:20931\n" ||
		!strings.Contains(r.stderr, "UPDATE_BROKER_CONFIG to 127.0.0.1:20911 failed: NO_PERMISSION (code 16): Can not update config in black list.") {
		t.Fatalf("%+v", r)
	}
}

func TestNamesrvFromEnvAndCaseInsensitive(t *testing.T) {
	fc := admintest.NewSample()
	var out, errb bytes.Buffer
	env := fakeEnv(fc, &out, &errb)
	env.Getenv = func(k string) string {
		if k == "NAMESRV_ADDR" {
			return admintest.SampleNamesrv2
		}
		return ""
	}
	if code := Main(context.Background(), []string{"TOPICLIST"}, env); code != 0 || !strings.Contains(out.String(), "TopicTest\n") {
		t.Fatalf("code %d out %q err %q", code, out.String(), errb.String())
	}
	if calls := fc.Calls(); len(calls) != 1 || calls[0].Addr != admintest.SampleNamesrv2 {
		t.Fatalf("calls %+v", calls)
	}
	// updateNamesrvConfig prints the -n list only when -n was given.
	out.Reset()
	if code := Main(context.Background(), []string{"updateNamesrvConfig", "-k", "a", "-v", "b"}, env); code != 0 ||
		out.String() != "update name server config success!\na : b\n" {
		t.Fatalf("code %d out %q", code, out.String())
	}
}

func TestHelp(t *testing.T) {
	fc := admintest.NewSample()
	r := runFake(t, fc)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "The most commonly used mqadmin commands are:\n   updateTopic                         Update or create topic.\n") ||
		!strings.HasSuffix(r.stdout, "\nSee 'mqadmin help <command>' for more information on a specific command.\n") {
		t.Fatalf("%+v", r)
	}
	want := "usage: mqadmin topicRoute [-ak <arg>] [-h] [-l] [-n <arg>] [--output <arg>] [-sk <arg>] -t <arg> [--tls] [--tlsConfigFile <arg>] [--toolsConfig <arg>]\n" +
		" -ak,--accessKey <arg>      access key (ACL 2.0: username) that signs every request (default: from --toolsConfig)\n" +
		" -h,--help                  Print help\n" +
		" -l,--list                  Use list format to print data\n" +
		" -n,--namesrvAddr <arg>     Name server address list, eg: '192.168.0.1:9876;192.168.0.2:9876' (default: $NAMESRV_ADDR)\n" +
		"    --output <arg>          output format: text (as the Java tool) or json\n" +
		" -sk,--secretKey <arg>      secret key (ACL 2.0: password) of the access key\n" +
		" -t,--topic <arg>           topic name\n" +
		"    --tls                   connect over TLS (the Java tool's -Dtls.enable=true)\n" +
		"    --tlsConfigFile <arg>   with --tls: properties file of tls.client.* and tls.test.mode.enable keys, read when it exists (Java's -Dtls.config.file)\n" +
		"    --toolsConfig <arg>     YAML file with accessKey and secretKey, as the Java tool's tools.yml (default: $ROCKETMQ_HOME/conf/tools.yml if it exists)\n"
	for _, args := range [][]string{{"help", "topicRoute"}, {"topicRoute", "-h"}, {"topicroute", "--help"}} {
		r = runFake(t, fc, args...)
		if r.code != 0 || r.stdout != want {
			t.Errorf("%v: %+v", args, r)
		}
	}
	if len(fc.Calls()) != 0 {
		t.Fatal("help sent requests")
	}
}

// TestOverTCP runs mqadmin with the real admin client against the fake
// served by remoting servers.
func TestOverTCP(t *testing.T) {
	fc := admintest.New()
	ns := serveFake(t, "127.0.0.1:0", fc.Handler)
	broker := serveFake(t, "127.0.0.1:0", fc.Handler)
	fc.Lock(func() {
		fc.NameServers = []string{ns}
		fc.NamesrvConfig[ns] = map[string]string{}
	})
	fc.AddBroker("C", "broker-a", 0, broker)

	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Location: time.UTC} // real admin.New
	if code := Main(context.Background(), []string{"updateTopic", "-c", "C", "-t", "TcpTopic", "-w", "2", "-r", "2", "-n", ns}, env); code != 0 {
		t.Fatalf("updateTopic: %d %s", code, errb.String())
	}
	if !strings.HasPrefix(out.String(), "create topic to "+broker+" success.\n") {
		t.Fatalf("out %q", out.String())
	}
	out.Reset()
	if code := Main(context.Background(), []string{"topicRoute", "-t", "TcpTopic", "-l", "-n", ns}, env); code != 0 {
		t.Fatalf("topicRoute: %d %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "broker-a") || !strings.Contains(out.String(), "Total:") {
		t.Fatalf("out %q", out.String())
	}
	out.Reset()
	if code := Main(context.Background(), []string{"topicStatus", "-t", "TcpTopic", "-n", ns}, env); code != 0 ||
		strings.Count(out.String(), "broker-a ") != 2 {
		t.Fatalf("topicStatus: %d %q %s", code, out.String(), errb.String())
	}
}

// TestUpdateTopicList: -c sends the file's topics to every master of the
// cluster; absent fields take TopicConfig's defaults; a file that is not
// a JSON array fails without sending anything.
func TestUpdateTopicList(t *testing.T) {
	fc := admintest.NewSample()
	ns := admintest.SampleNamesrv1
	r := runFake(t, fc, "updateTopicList", "-c", "DefaultCluster", "-f", "testdata/topiclist.json", "-n", ns)
	want := "submit batch of topic config to " + admintest.SampleBrokerA0 + " success, please check the result later.\n" +
		"submit batch of topic config to " + admintest.SampleBrokerB0 + " success, please check the result later.\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("code %d\nstdout %q\nwant   %q\nstderr %s", r.code, r.stdout, want, r.stderr)
	}
	masters := 0
	for _, b := range fc.Brokers {
		if b.ID != 0 || b.Cluster != "DefaultCluster" || fc.Down[b.Addr] {
			continue
		}
		masters++
		t2, t3 := b.Topics["ListT2"], b.Topics["ListT3"]
		if t2.ReadQueueNums != 4 || t2.Perm != 4 || !t2.Order || t2.Attributes["+message.type"] != "FIFO" {
			t.Errorf("%s: ListT2 %+v", b.Addr, t2)
		}
		if t3.ReadQueueNums != 16 || t3.WriteQueueNums != 16 || t3.Perm != 6 || t3.TopicFilterType != "SINGLE_TAG" {
			t.Errorf("%s: ListT3 %+v, want TopicConfig's defaults", b.Addr, t3)
		}
	}
	if masters != 2 {
		t.Fatalf("%d live masters in the sample cluster, want 2", masters)
	}

	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"topicName":"NotAList"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runFake(t, fc, "updateTopicList", "-b", admintest.SampleBrokerA0, "-f", bad, "-n", ns)
	if r.code != ExitError || !strings.Contains(r.stderr, "not a JSON array of topic configs") {
		t.Fatalf("bad file: code %d stderr %q", r.code, r.stderr)
	}
	if _, ok := fc.Brokers[0].Topics["NotAList"]; ok {
		t.Fatal("a topic of a bad file was created")
	}
	r = runFake(t, fc, "updateTopicList", "-b", admintest.SampleBrokerA0, "-c", "DefaultCluster", "-f", bad, "-n", ns)
	if r.code != ExitUsage {
		t.Fatalf("-b with -c: code %d stderr %q", r.code, r.stderr)
	}
}
