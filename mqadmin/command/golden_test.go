package command

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/admin/admintest"
	"github.com/rmqgo/rmq/remoting"
)

// The golden files in testdata/ are the stdout of Apache RocketMQ's Java
// mqadmin (rocketmq-tools 5.5.0) run against admintest.NewSample served over
// TCP, the cases in this order. Regenerate them with
//
//	RMQ_JAVA_GOLDEN=1 go test ./command -run TestCaptureJavaGolden
//
// (needs java and Maven; see scripts/mqadmin-java.sh; the sample's fixed
// ports 19876-19877 and 20911-20931 must be free).
func captureJava() bool { return os.Getenv("RMQ_JAVA_GOLDEN") == "1" }

// skipWhileCapturing skips a test that compares against golden files while
// RMQ_JAVA_GOLDEN=1 has capture, the test of that name, rewrite them.
func skipWhileCapturing(t *testing.T, capture string) {
	t.Helper()
	if captureJava() {
		t.Skip("RMQ_JAVA_GOLDEN=1: " + capture + " is rewriting the golden files this test compares against")
	}
}

// requireCapture skips a test that regenerates golden files with the Java
// mqadmin unless RMQ_JAVA_GOLDEN=1 asks for it.
func requireCapture(t *testing.T) {
	t.Helper()
	if !captureJava() {
		t.Skip("set RMQ_JAVA_GOLDEN=1 to regenerate the golden files with the Java mqadmin")
	}
}

const sampleNS = admintest.SampleNamesrv1 + ";" + admintest.SampleNamesrv2

type goldenCase struct {
	name string
	args []string
	exit int // our exit code (the Java tool always exits 0)
	// unordered: the Java tool shuffles its nameserver list, so lines per
	// nameserver come in random order.
	unordered bool
}

// goldenCases run in sequence against one fake: later cases see the
// changes of earlier ones.
func goldenCases() []goldenCase {
	return []goldenCase{
		{"clusterList_m", []string{"clusterList", "-m"}, ExitError, false}, // broker-c is down
		{"topicList", []string{"topicList"}, 0, false},
		{"topicList_c", []string{"topicList", "-c"}, 0, false},
		{"topicRoute", []string{"topicRoute", "-t", "TopicTest"}, 0, false},
		{"topicRoute_l", []string{"topicRoute", "-t", "TopicTest", "-l"}, 0, false},
		{"topicStatus", []string{"topicStatus", "-t", "TopicTest"}, 0, false},
		{"topicStatus_c", []string{"topicStatus", "-t", "TopicTest", "-c", "DefaultCluster"}, 0, false},
		{"brokerStatus_b", []string{"brokerStatus", "-b", admintest.SampleBrokerA0}, 0, false},
		{"brokerStatus_c", []string{"brokerStatus", "-c", "DefaultCluster"}, 0, false},
		{"getBrokerConfig_b", []string{"getBrokerConfig", "-b", admintest.SampleBrokerB0}, 0, false},
		{"getBrokerConfig_c", []string{"getBrokerConfig", "-c", "DefaultCluster"}, 0, false},
		{"getNamesrvConfig", []string{"getNamesrvConfig"}, 0, false},
		{"updateTopic_b", []string{"updateTopic", "-b", admintest.SampleBrokerA0, "-t", "NewT", "-r", "3", "-w", "5", "-p", "6"}, 0, false},
		{"updateTopic_c", []string{"updateTopic", "-c", "DefaultCluster", "-t", "NewT2", "-o", "true", "-a", "+message.type=FIFO,+zz=1,-cleanup.policy"}, 0, false},
		{"updateTopic_b_order", []string{"updateTopic", "-b", admintest.SampleBrokerB0, "-t", "NewT3", "-o", "true", "-u", "true", "-s", "true"}, 0, false},
		{"topicRoute_NewT2", []string{"topicRoute", "-t", "NewT2"}, 0, false},
		{"updateTopicList_b", []string{"updateTopicList", "-b", admintest.SampleBrokerA0, "-f", "testdata/topiclist.json"}, 0, false},
		{"updateTopicList_b2", []string{"updateTopicList", "-b", admintest.SampleBrokerB0, "-f", "testdata/topiclist.json"}, 0, false},
		{"updateTopicList_missing", []string{"updateTopicList", "-b", admintest.SampleBrokerA0, "-f", "testdata/no-such-file.json"}, 0, false},
		{"topicRoute_ListT1", []string{"topicRoute", "-t", "ListT1"}, 0, false},
		{"deleteTopic", []string{"deleteTopic", "-c", "DefaultCluster", "-t", "NewT"}, 0, false},
		{"updateBrokerConfig_c", []string{"updateBrokerConfig", "-c", "DefaultCluster", "-k", "flushDiskType", "-v", "SYNC_FLUSH"}, 0, false},
		{"updateBrokerConfig_c_all", []string{"updateBrokerConfig", "-c", "DefaultCluster", "-a", "true", "-k", "flushDiskType", "-v", "ASYNC_FLUSH"}, 0, false},
		{"updateBrokerConfig_b", []string{"updateBrokerConfig", "-b", admintest.SampleBrokerB0, "-k", "brokerPermission", "-v", "4"}, 0, false},
		{"getBrokerConfig_b_after", []string{"getBrokerConfig", "-b", admintest.SampleBrokerB0}, 0, false},
		{"updateNamesrvConfig", []string{"updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true"}, 0, false},
		{"updateKvConfig", []string{"updateKvConfig", "-s", "NS1", "-k", "k1", "-v", "v1"}, 0, false},
		{"deleteKvConfig", []string{"deleteKvConfig", "-s", "NS1", "-k", "k1"}, 0, false},
		{"wipeWritePerm", []string{"wipeWritePerm", "-b", "broker-a"}, 0, true},
		{"topicRoute_wiped", []string{"topicRoute", "-t", "TopicTest", "-l"}, 0, false},
		{"addWritePerm", []string{"addWritePerm", "-b", "broker-a"}, 0, true},
	}
}

func goldenPath(name string) string { return filepath.Join("testdata", name+".golden") }

// fakeEnv runs commands against fc in process.
func fakeEnv(fc *admintest.Cluster, stdout, stderr *bytes.Buffer) Env {
	return Env{
		Stdout:   stdout,
		Stderr:   stderr,
		Getenv:   func(string) string { return "" },
		Now:      func() time.Time { return time.UnixMilli(1700000000000 + 3*3600*1000 + 1800*1000) },
		Location: time.UTC,
		Dial: func(cfg admin.Config, log *slog.Logger) (*admin.Client, error) {
			return admin.NewWithInvoker(cfg, fc, log)
		},
	}
}

func TestGolden(t *testing.T) {
	skipWhileCapturing(t, "TestCaptureJavaGolden")
	fc := admintest.NewSample()
	for _, tc := range goldenCases() {
		want, err := os.ReadFile(goldenPath(tc.name))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var out, errb bytes.Buffer
		args := append(append([]string{}, tc.args...), "-n", sampleNS)
		code := Main(context.Background(), args, fakeEnv(fc, &out, &errb))
		if code != tc.exit {
			t.Errorf("%s: exit %d, want %d; stderr:\n%s", tc.name, code, tc.exit, errb.String())
		}
		checkGolden(t, tc.name+": ", out.String(), string(want), tc.unordered)
	}
}

// checkGolden fails t when got is not want (in any line order when
// unordered); name prefixes the message.
func checkGolden(t testing.TB, name, got, want string, unordered bool) {
	t.Helper()
	if unordered {
		got, want = sortLines(got), sortLines(want)
	}
	if got != want {
		t.Errorf("%sstdout differs from the Java tool's\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// goldenSuite is a set of golden cases over one sample: the output of
// case name is testdata/<prefix>_<name>.golden, which the test named
// capture regenerates from Java's mqadmin.
type goldenSuite struct {
	prefix, capture string
	sample          func() *admintest.Cluster
	cases           func() []caGoldenCase
}

func (s goldenSuite) path(name string) string {
	return filepath.Join("testdata", s.prefix+"_"+name+".golden")
}

// run checks our mqadmin against the golden files (skipped while the
// files are captured).
func (s goldenSuite) run(t *testing.T) {
	t.Helper()
	skipWhileCapturing(t, s.capture)
	runGoldenCases(t, s.sample(), s.cases(), s.path)
}

// captureJava regenerates the golden files (opt-in; needs java and Maven,
// and the sample's fixed ports free).
func (s goldenSuite) captureJava(t *testing.T) {
	t.Helper()
	requireCapture(t)
	serveSample(t, s.sample())
	captureGoldenCases(t, s.cases(), s.path)
}

// runGoldenCases runs cases in sequence against fc (later cases see the
// changes of earlier ones) and compares each stdout with its golden file,
// path(name); every case must exit 0.
func runGoldenCases(t *testing.T, fc *admintest.Cluster, cases []caGoldenCase, path func(string) string) {
	t.Helper()
	for _, tc := range cases {
		want, err := os.ReadFile(path(tc.name))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var out, errb bytes.Buffer
		args := append(append([]string{}, tc.args...), "-n", sampleNS)
		if code := Main(context.Background(), args, fakeEnv(fc, &out, &errb)); code != 0 {
			t.Errorf("%s: exit %d; stderr:\n%s", tc.name, code, errb.String())
		}
		checkGolden(t, tc.name+": ", out.String(), string(want), false)
	}
}

// captureGoldenCases runs the Java tool (in UTC) for each case against
// the servers the caller serves and writes its stdout to path(name).
func captureGoldenCases(t *testing.T, cases []caGoldenCase, path func(string) string) {
	t.Helper()
	for _, tc := range cases {
		out := runJavaMqadmin(t, append(append([]string{}, tc.args...), "-n", sampleNS), "RMQ_JAVA_OPTS=-Duser.timezone=UTC")
		if err := os.WriteFile(path(tc.name), out, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes", tc.name, len(out))
	}
}

// serveFake serves the handler made for the server's address on listen
// until t ends and returns that address.
func serveFake(t testing.TB, listen string, handler func(addr string) remoting.Handler) string {
	t.Helper()
	srv, err := remoting.NewServer(remoting.ServerConfig{ListenAddr: listen}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	srv.RegisterDefault(handler(srv.Addr()), nil)
	return srv.Addr()
}

// serveSample serves fc on the nameserver and live broker addresses of the
// sample, for the Java tool to read.
func serveSample(t testing.TB, fc *admintest.Cluster) {
	t.Helper()
	addrs := []string{admintest.SampleNamesrv1, admintest.SampleNamesrv2}
	for _, b := range fc.Brokers {
		if !fc.Down[b.Addr] {
			addrs = append(addrs, b.Addr)
		}
	}
	for _, addr := range addrs {
		serveFake(t, addr, fc.Handler)
	}
}

// runJavaMqadmin runs the Java mqadmin (scripts/mqadmin-java.sh) with args
// and the extra environment and returns its stdout.
func runJavaMqadmin(t testing.TB, args []string, env ...string) []byte {
	t.Helper()
	script, err := filepath.Abs("../../scripts/mqadmin-java.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script, args...)
	cmd.Env = append(append(os.Environ(), "RMQ_JAVA_LOG_DIR="+t.TempDir()), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if errb.Len() > 0 {
		t.Logf("java stderr:\n%s", errb.String())
	}
	return out.Bytes()
}

func sortLines(s string) string {
	lines := strings.SplitAfter(s, "\n")
	sort.Strings(lines)
	return strings.Join(lines, "")
}

// TestCaptureJavaGolden regenerates the golden files (opt-in).
func TestCaptureJavaGolden(t *testing.T) {
	requireCapture(t)
	serveSample(t, admintest.NewSample())
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range goldenCases() {
		out := runJavaMqadmin(t, append(append([]string{}, tc.args...), "-n", sampleNS))
		if err := os.WriteFile(goldenPath(tc.name), out, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes", tc.name, len(out))
	}
}
