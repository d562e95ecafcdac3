package command

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/admin"
)

// Golden files testdata/msg_*.golden are the stdout of the Java mqadmin
// (rocketmq-tools 5.5.0, -Duser.timezone=UTC) for the message commands
// against the message fixture (msg_fixture_test.go). Query commands ran
// against the fixture on the sample's fixed ports (their offset ids name
// them); pull and send commands against it on ephemeral ports. Message
// body paths are the Java tool's /tmp/rocketmq/msgbodys; the send result's
// id, which differs per run, is replaced by <MSGID>. Regenerate with
//
//	RMQ_JAVA_GOLDEN=1 go test ./command -run TestCaptureJavaMsgGolden

type msgMode int

const (
	modeQuery  msgMode = iota // admin requests only: served in process
	modeClient                // pkg/client too: served over TCP
)

type msgGoldenCase struct {
	name      string
	mode      msgMode
	args      func(f *msgFixture) []string
	unordered bool // Java's answer order across brokers is not fixed
}

func msgGoldenCases() []msgGoldenCase {
	return []msgGoldenCase{
		{"queryMsgById_offset", modeQuery, func(f *msgFixture) []string {
			return []string{"queryMsgById", "-t", msgTopic, "-i", f.ids["m1"]}
		}, false},
		{"queryMsgById_uniq", modeQuery, func(f *msgFixture) []string {
			return []string{"queryMsgById", "-t", msgTopic, "-i", uniq2}
		}, false},
		{"queryMsgById_multi", modeQuery, func(f *msgFixture) []string {
			return []string{"queryMsgById", "-t", msgTopic, "-i", f.ids["bare"] + ", " + uniq3}
		}, false},
		{"queryMsgById_f", modeQuery, func(f *msgFixture) []string {
			return []string{"queryMsgById", "-t", msgTopic, "-i", f.ids["m2"], "-f", "UTF-8"}
		}, false},
		{"queryMsgById_noConsumer", modeQuery, func(f *msgFixture) []string {
			return []string{"queryMsgById", "-t", quietTopic, "-i", f.ids["quiet"] + "," + uniqQuiet}
		}, false},
		{"queryMsgByUniqueKey_noConsumer", modeQuery, func(f *msgFixture) []string {
			return []string{"queryMsgByUniqueKey", "-t", quietTopic, "-i", uniqQuiet}
		}, false},
		{"queryMsgByKey", modeQuery, func(f *msgFixture) []string {
			return []string{"queryMsgByKey", "-t", msgTopic, "-k", "shared"}
		}, true},
		{"queryMsgByKey_one", modeQuery, func(f *msgFixture) []string {
			return []string{"queryMsgByKey", "-t", msgTopic, "-k", "order-2", "-b", "0", "-e", "1800000000000", "-m", "3"}
		}, false},
		{"queryMsgByUniqueKey", modeQuery, func(f *msgFixture) []string {
			return []string{"queryMsgByUniqueKey", "-t", msgTopic, "-i", uniqDup}
		}, false},
		{"queryMsgByUniqueKey_a", modeQuery, func(f *msgFixture) []string {
			return []string{"queryMsgByUniqueKey", "-t", msgTopic, "-i", uniqDup, "-a"}
		}, false},
		{"queryMsgByOffset", modeClient, func(f *msgFixture) []string {
			return []string{"queryMsgByOffset", "-t", msgTopic, "-b", "broker-a", "-i", "0", "-o", "1"}
		}, false},
		{"queryMsgByOffset_none", modeClient, func(f *msgFixture) []string {
			return []string{"queryMsgByOffset", "-t", msgTopic, "-b", "broker-a", "-i", "0", "-o", "9"}
		}, false},
		{"consumeMessage", modeClient, func(f *msgFixture) []string {
			return []string{"consumeMessage", "-t", msgTopic}
		}, false},
		{"consumeMessage_c2", modeClient, func(f *msgFixture) []string {
			return []string{"consumeMessage", "-t", msgTopic, "-c", "2"}
		}, false},
		{"consumeMessage_queue", modeClient, func(f *msgFixture) []string {
			return []string{"consumeMessage", "-t", msgTopic, "-b", "broker-a", "-i", "0", "-o", "1"}
		}, false},
		{"consumeMessage_queue_c1", modeClient, func(f *msgFixture) []string {
			return []string{"consumeMessage", "-t", msgTopic, "-b", "broker-a", "-i", "0", "-c", "1"}
		}, false},
		{"consumeMessage_beyond", modeClient, func(f *msgFixture) []string {
			return []string{"consumeMessage", "-t", msgTopic, "-b", "broker-b", "-i", "1", "-o", "7"}
		}, false},
		{"printMsg", modeClient, func(f *msgFixture) []string {
			return []string{"printMsg", "-t", msgTopic}
		}, false},
		{"printMsg_s_d", modeClient, func(f *msgFixture) []string {
			return []string{"printMsg", "-t", msgTopic, "-s", "TagA || TagB", "-d", "false", "-c", "UTF-8"}
		}, false},
		{"printMsg_b_e", modeClient, func(f *msgFixture) []string {
			return []string{"printMsg", "-t", msgTopic, "-b", "1700000000150", "-e", "2023-11-14#22:13:20:400"}
		}, false},
		{"printMsgByQueue", modeClient, func(f *msgFixture) []string {
			return []string{"printMsgByQueue", "-t", msgTopic, "-a", "broker-a", "-i", "0", "-p", "true", "-d", "true", "-f", "true"}
		}, false},
		{"printMsgByQueue_f", modeClient, func(f *msgFixture) []string {
			return []string{"printMsgByQueue", "-t", msgTopic, "-a", "broker-b", "-i", "1", "-f", "true", "-p", "true"}
		}, false},
		{"printMsgByQueue_s", modeClient, func(f *msgFixture) []string {
			return []string{"printMsgByQueue", "-t", msgTopic, "-a", "broker-b", "-i", "1", "-s", "TagB", "-p", "true"}
		}, false},
		{"checkMsgSendRT", modeClient, func(f *msgFixture) []string {
			return []string{"checkMsgSendRT", "-t", msgTopic, "-a", "10", "-s", "16"}
		}, false},
		{"sendMsgStatus", modeClient, func(f *msgFixture) []string {
			return []string{"sendMsgStatus", "-b", "broker-a", "-c", "3", "-s", "20"}
		}, false},
		{"sendMessage", modeClient, func(f *msgFixture) []string {
			return []string{"sendMessage", "-t", msgTopic, "-p", "hello golden", "-k", "k1 k2", "-c", "TagG", "-b", "broker-b", "-i", "3"}
		}, false},
	}
}

func msgGoldenPath(name string) string { return filepath.Join("testdata", "msg_"+name+".golden") }

// sendRow matches the result row of sendMessage; its id differs per run.
var sendRow = regexp.MustCompile(`(?m)^(\S+ +\S+ +SEND_OK +)\S+$`)

// Send times and client message ids differ per run: rtRow matches a line
// of checkMsgSendRT, avgRT its last line, statusRT a line of
// sendMsgStatus (its offset id names the fake's ephemeral port).
var (
	rtRow    = regexp.MustCompile(`(?m)^(\S+ +\d+ +(?:true|false) +)\d+$`)
	avgRT    = regexp.MustCompile(`(?m)^Avg RT: \S+$`)
	statusRT = regexp.MustCompile(`(?m)^rt=\d+ms, (SendResult=SendResult \[sendStatus=\S+, msgId=)[0-9A-F]+, offsetMsgId=[0-9A-F]+`)
)

func normalizeMsgOutput(s, bodyDir string) string {
	if bodyDir != "" {
		s = strings.ReplaceAll(s, bodyDir+"/", javaMsgBodyDir+"/")
	}
	s = rtRow.ReplaceAllString(s, "${1}<RT>")
	s = avgRT.ReplaceAllString(s, "Avg RT: <RT>")
	s = statusRT.ReplaceAllString(s, "rt=<RT>ms, ${1}<MSGID>, offsetMsgId=<OFFSETMSGID>")
	return sendRow.ReplaceAllString(s, "${1}<MSGID>")
}

// msgEnv runs commands against f: in process (modeQuery) or over TCP.
func msgEnv(f *msgFixture, mode msgMode, stdout, stderr *bytes.Buffer, bodyDir string) Env {
	env := fakeEnv(f.fc, stdout, stderr)
	env.MsgBodyDir = bodyDir
	if mode == modeClient {
		env.Dial = func(cfg admin.Config, log *slog.Logger) (*admin.Client, error) { return admin.New(cfg, log) }
	}
	return env
}

// msgResult is a run of runMsg.
type msgResult struct {
	result
	bodyDir string // where the bodies went (stdout names javaMsgBodyDir)
}

// runMsg runs our mqadmin against f and returns exit code, normalised
// stdout and stderr.
func runMsg(t *testing.T, f *msgFixture, mode msgMode, args ...string) msgResult {
	t.Helper()
	dir := t.TempDir()
	var out, errb bytes.Buffer
	args = append(append([]string{}, args...), "-n", f.ns)
	code := Main(context.Background(), args, msgEnv(f, mode, &out, &errb, dir))
	return msgResult{result{code, normalizeMsgOutput(out.String(), dir), errb.String()}, dir}
}

func TestMsgGolden(t *testing.T) {
	skipWhileCapturing(t, "TestCaptureJavaMsgGolden")
	if testing.Short() {
		t.Skip("short mode: serves fakes over TCP")
	}
	for _, tc := range msgGoldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			want, err := os.ReadFile(msgGoldenPath(tc.name))
			if err != nil {
				t.Fatal(err)
			}
			var f *msgFixture
			if tc.mode == modeQuery {
				f = inProcessMsgFixture(t)
			} else {
				f = servedMsgFixture(t, false)
			}
			r := runMsg(t, f, tc.mode, tc.args(f)...)
			if r.code != 0 {
				t.Errorf("exit %d; stderr:\n%s", r.code, r.stderr)
			}
			checkGolden(t, "", r.stdout, string(want), tc.unordered)
		})
	}
}

// TestCaptureJavaMsgGolden regenerates the msg_ golden files (opt-in; needs
// java and Maven, and the sample's ports 19876, 20911 and 20931 free).
func TestCaptureJavaMsgGolden(t *testing.T) {
	requireCapture(t)
	for _, tc := range msgGoldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			f := servedMsgFixture(t, tc.mode == modeQuery)
			out := runJavaMqadmin(t, append(tc.args(f), "-n", f.ns), "RMQ_JAVA_OPTS=-Duser.timezone=UTC")
			if err := os.WriteFile(msgGoldenPath(tc.name), []byte(normalizeMsgOutput(string(out), "")), 0o644); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // let the fixed ports go before the next case
		})
	}
}
