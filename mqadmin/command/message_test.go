package command

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

func decodeJSON(t *testing.T, r msgResult) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil || r.code != 0 {
		t.Fatalf("code %d err %v\nstdout %s\nstderr %s", r.code, err, r.stdout, r.stderr)
	}
	return m
}

// TestSendThenFind sends with our sendMessage (pkg/client over TCP) and
// finds the message with every query command.
func TestSendThenFind(t *testing.T) {
	f := servedMsgFixture(t, false)
	r := runMsg(t, f, modeClient, "sendMessage", "-t", msgTopic, "-p", " round trip ", "-k", "rt-key other", "-c", "RT", "--output", "json")
	sent := decodeJSON(t, r)
	id, _ := sent["msgId"].(string)
	offID, _ := sent["offsetMsgId"].(string)
	if id == "" || offID == "" || sent["sendStatus"] != "SEND_OK" {
		t.Fatalf("send: %v", sent)
	}
	broker, qid := sent["brokerName"].(string), sent["queueId"].(float64)

	// queryMsgByKey: the row names the message.
	r = runMsg(t, f, modeClient, "queryMsgByKey", "-t", msgTopic, "-k", "rt-key")
	if r.code != 0 || !strings.Contains(r.stdout, id) || strings.Count(r.stdout, "\n") != 2 {
		t.Fatalf("queryMsgByKey: %+v", r)
	}
	for _, args := range [][]string{
		{"queryMsgById", "-t", msgTopic, "-i", offID},
		{"queryMsgById", "-t", msgTopic, "-i", id},
		{"queryMsgByUniqueKey", "-t", msgTopic, "-i", id},
	} {
		r = runMsg(t, f, modeClient, append(args, "--output", "json")...)
		m := decodeJSON(t, r)
		msg := m["messages"].([]any)[0].(map[string]any)
		props := msg["properties"].(map[string]any)
		if msg["msgId"] != id || msg["offsetMsgId"] != offID || msg["tags"] != "RT" || msg["keys"] != "rt-key other" ||
			props["WAIT"] != "true" || props["CLUSTER"] != "DefaultCluster" || msg["bodyPath"] == "" {
			t.Fatalf("%v: %v", args, msg)
		}
		body, err := os.ReadFile(strings.Replace(msg["bodyPath"].(string), javaMsgBodyDir, r.bodyDir, 1))
		if err != nil || string(body) != "round trip" { // -p is trimmed, as Java does
			t.Fatalf("%v: body file %q %v", args, body, err)
		}
	}
	// consumeMessage by queue and queryMsgByOffset read it back.
	r = runMsg(t, f, modeClient, "consumeMessage", "-t", msgTopic, "-b", broker, "-i", strconv.Itoa(int(qid)), "--output", "json")
	m := decodeJSON(t, r)
	found := false
	for _, q := range m["queues"].([]any) {
		for _, msg := range q.(map[string]any)["messages"].([]any) {
			mm := msg.(map[string]any)
			found = found || (mm["msgId"] == id && mm["body"] == "round trip")
		}
	}
	if !found {
		t.Fatalf("consumeMessage: %s", r.stdout)
	}
	r = runMsg(t, f, modeClient, "queryMsgByOffset", "-t", msgTopic, "-b", broker, "-i", strconv.Itoa(int(qid)), "-o", strconv.Itoa(int(sent["queueOffset"].(float64))), "-f", "UTF-8")
	if r.code != 0 || !strings.Contains(r.stdout, "OffsetID:            "+offID) || !strings.Contains(r.stdout, "Message Body:        round trip\n") {
		t.Fatalf("queryMsgByOffset: %+v", r)
	}

	// Text output of sendMessage: Java's table; -b without -i is ignored.
	r = runMsg(t, f, modeClient, "sendMessage", "-t", msgTopic, "-p", "x", "-b", "broker-b")
	if r.code != 0 || !regexp.MustCompile(`^#Broker Name {20}  #QID  #Send Result {8}    #MsgId\n\S+ +\d+ +SEND_OK +<MSGID>\n$`).MatchString(r.stdout) {
		t.Fatalf("sendMessage text: %q", r.stdout)
	}
}

func TestMessageCommandsJSON(t *testing.T) {
	q := inProcessMsgFixture(t)
	s := servedMsgFixture(t, false)
	for _, tc := range []struct {
		f     *msgFixture
		mode  msgMode
		args  []string
		check func(m map[string]any) bool
	}{
		{q, modeQuery, []string{"queryMsgById", "-t", msgTopic, "-i", q.ids["m1"] + "," + uniq2}, func(m map[string]any) bool {
			msgs := m["messages"].([]any)
			first := msgs[0].(map[string]any)
			tracks := first["tracks"].([]any)
			return len(msgs) == 2 && first["msgId"] == uniq1 && len(tracks) == 6 &&
				tracks[3].(map[string]any)["trackType"] == "CONSUMED" && first["body"] == nil
		}},
		{q, modeQuery, []string{"queryMsgByKey", "-t", msgTopic, "-k", "shared"}, func(m map[string]any) bool {
			msgs := m["messages"].([]any)
			return len(msgs) == 2 && strings.Contains(msgs[0].(map[string]any)["indexKey"].(string), "@MsgTopic@K@shared@")
		}},
		{q, modeQuery, []string{"queryMsgByUniqueKey", "-t", msgTopic, "-i", uniqDup, "-a"}, func(m map[string]any) bool {
			msgs := m["messages"].([]any)
			return len(msgs) == 2 && strings.HasSuffix(msgs[1].(map[string]any)["bodyPath"].(string), uniqDup+"_1")
		}},
		{q, modeQuery, []string{"queryMsgById", "-t", msgTopic, "-i", q.ids["m2"], "-f", "ISO-8859-1"}, func(m map[string]any) bool {
			return m["messages"].([]any)[0].(map[string]any)["body"] == "wÃ¶rld\u00ff"
		}},
		{s, modeClient, []string{"queryMsgByOffset", "-t", msgTopic, "-b", "broker-a", "-i", "0", "-o", "9"}, func(m map[string]any) bool {
			return m["pullStatus"] != "FOUND" && len(m["messages"].([]any)) == 0
		}},
		{s, modeClient, []string{"consumeMessage", "-t", msgTopic, "-c", "3"}, func(m map[string]any) bool {
			n := 0
			for _, q := range m["queues"].([]any) {
				n += len(q.(map[string]any)["messages"].([]any))
			}
			// Java's count: the empty queue still uses one up.
			return n == 1 && len(m["queues"].([]any)) == 2
		}},
	} {
		r := runMsg(t, tc.f, tc.mode, append(tc.args, "--output", "json")...)
		m := decodeJSON(t, r)
		if !tc.check(m) {
			t.Errorf("%v: %s", tc.args, r.stdout)
		}
	}
}

func TestMessageCommandErrors(t *testing.T) {
	q := inProcessMsgFixture(t)
	s := servedMsgFixture(t, false)
	for _, tc := range []struct {
		f      *msgFixture
		mode   msgMode
		args   []string
		code   int
		stderr string
	}{
		{q, modeQuery, []string{"queryMsgById", "-i", uniq1}, ExitUsage, `required flag(s) "topic" not set`},
		{q, modeQuery, []string{"queryMsgById", "-t", msgTopic, "-i", "0A0000011F2B1B6A92C81A3E0000FFFF"}, ExitError, "query message by key finished, but no message."},
		{q, modeQuery, []string{"queryMsgById", "-t", msgTopic, "-i", uniq1, "-f", "EBCDIC"}, ExitUsage, "unsupported charset"},
		{q, modeQuery, []string{"queryMsgByKey", "-t", msgTopic, "-k", "zzz"}, ExitError, "but no message"},
		{q, modeQuery, []string{"queryMsgByKey", "-t", "NoTopic", "-k", "zzz"}, ExitError, "TOPIC_NOT_EXIST"},
		{q, modeQuery, []string{"queryMsgByKey", "-t", msgTopic, "-k", "k", "-p", "X"}, ExitUsage, "index type error, just support K for keys or T for tags"},
		{q, modeQuery, []string{"queryMsgByKey", "-t", msgTopic, "-k", "k", "-b", "soon"}, ExitUsage, "not an integer"},
		{q, modeQuery, []string{"queryMsgByUniqueKey", "-t", msgTopic, "-i", "nope"}, ExitError, "but no message"},
		{s, modeClient, []string{"sendMessage", "-t", msgTopic, "-p", "x", "-i", "1"}, ExitUsage, "Broker name must be set if the queue is chosen!"},
		{s, modeClient, []string{"sendMessage", "-t", msgTopic, "-p", "  "}, ExitError, "body length is zero"},
		{s, modeClient, []string{"sendMessage", "-t", "NoTopic", "-p", "x", "-b", "broker-x", "-i", "0"}, ExitError, "broker-x"},
		{s, modeClient, []string{"consumeMessage", "-t", msgTopic, "-c", "0"}, ExitUsage, "Please input a positive messageNumber!"},
		{s, modeClient, []string{"consumeMessage", "-t", msgTopic, "-i", "0"}, ExitUsage, "Please set the brokerName before queueId!"},
		{s, modeClient, []string{"consumeMessage", "-t", msgTopic, "-o", "0"}, ExitUsage, "Please set queueId before offset!"},
		{s, modeClient, []string{"consumeMessage", "-t", msgTopic, "-s", "4102444800000"}, ExitUsage, "Please set the beginTimestamp before now!"},
		{s, modeClient, []string{"consumeMessage", "-t", msgTopic, "-e", "4102444800000"}, ExitUsage, "Please set the endTimestamp before now!"},
		{s, modeClient, []string{"consumeMessage", "-t", msgTopic, "-s", "1700000000000", "-e", "1600000000000"}, ExitUsage, "beginTimestamp is less than or equal to the endTimestamp"},
		{s, modeClient, []string{"consumeMessage", "-t", msgTopic, "-s", "yesterday"}, ExitUsage, "yyyy-MM-dd#HH:mm:ss:SSS"},
		{s, modeClient, []string{"consumeMessage", "-t", "NoTopic"}, ExitError, "NoTopic"},
		{s, modeClient, []string{"queryMsgByOffset", "-t", msgTopic, "-b", "broker-x", "-i", "0", "-o", "0"}, ExitError, "broker-x"},
		{s, modeClient, []string{"queryMsgByOffset", "-t", msgTopic, "-b", "broker-a", "-i", "x", "-o", "0"}, ExitUsage, "not an integer"},
	} {
		r := runMsg(t, tc.f, tc.mode, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("%v: code %d (want %d)\nstderr %s\nstdout %s", tc.args, r.code, tc.code, r.stderr, r.stdout)
		}
	}
	// Without a nameserver.
	r := runFake(t, q.fc, "sendMessage", "-t", msgTopic, "-p", "x")
	if r.code != ExitError || !strings.Contains(r.stderr, "use -n or set NAMESRV_ADDR") {
		t.Errorf("no namesrv: %+v", r)
	}
}

// TestTrackUnsupported: a broker without QUERY_TOPIC_CONSUME_BY_WHO (like
// ours today): the message is printed, the failure goes to stderr, exit 0,
// as the Java tool (which prints the stack trace).
func TestTrackUnsupported(t *testing.T) {
	f := inProcessMsgFixture(t)
	next := f.fc.Override
	f.fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
		if req.Code == code.QueryTopicConsumeByWho {
			return remoting.NewResponse(req, code.RequestCodeNotSupported, " request type 300 not supported"), true
		}
		return next(addr, req)
	}
	want, err := os.ReadFile(msgGoldenPath("queryMsgById_offset"))
	if err != nil {
		t.Fatal(err)
	}
	r := runMsg(t, f, modeQuery, "queryMsgById", "-t", msgTopic, "-i", f.ids["m1"])
	head, _, _ := strings.Cut(string(want), "\n\n\n")
	if r.code != 0 || r.stdout != head+"\n" || !strings.Contains(r.stderr, "message track of "+uniq1) {
		t.Fatalf("%+v", r)
	}
}

func TestQueryMsgByIDResend(t *testing.T) {
	f := servedMsgFixture(t, false)
	r := runMsg(t, f, modeClient, "queryMsgById", "-t", msgTopic, "-i", uniq1, "-s", "true")
	re := regexp.MustCompile(`^prepare resend msg\. originalMsgId=` + uniq1 + `SendResult \[sendStatus=SEND_OK, msgId=` + uniq1 + `, offsetMsgId=[0-9A-F]{32}, messageQueue=MessageQueue \[topic=MsgTopic, brokerName=broker-[ab], queueId=\d\], queueOffset=\d+, recallHandle=null\]$`)
	if r.code != 0 || !re.MatchString(r.stdout) {
		t.Fatalf("%+v", r)
	}
	// The copy has the same UNIQ_KEY: -a shows both.
	r = runMsg(t, f, modeClient, "queryMsgByUniqueKey", "-t", msgTopic, "-i", uniq1, "-a", "--output", "json")
	if m := decodeJSON(t, r); len(m["messages"].([]any)) != 2 {
		t.Fatalf("after resend: %s", r.stdout)
	}
	r = runMsg(t, f, modeClient, "queryMsgById", "-t", msgTopic, "-i", uniq1, "-s", "false")
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("-s false: %+v", r)
	}
}

func TestQueryMsgByIDDirectPush(t *testing.T) {
	f := inProcessMsgFixture(t)
	next := f.fc.Override
	var direct []map[string]string
	f.fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
		switch req.Code {
		case code.GetConsumerRunningInfo:
			resp := remoting.NewResponse(req, code.Success, "")
			typ := "CONSUME_PASSIVELY"
			if req.Ext("clientId") == "pullClient" {
				typ = "CONSUME_ACTIVELY"
			}
			resp.Body = []byte(`{"properties":{"PROP_CONSUME_TYPE":"` + typ + `","PROP_THREADPOOL_CORE_SIZE":20},"subscriptionSet":[]}`)
			return resp, true
		case code.ConsumeMessageDirectly:
			direct = append(direct, map[string]string{"addr": addr, "msgId": req.Ext("msgId"), "group": req.Ext("consumerGroup")})
			resp := remoting.NewResponse(req, code.Success, "")
			resp.Body = []byte(`{"autoCommit":true,"consumeResult":"CR_SUCCESS","order":false,"spentTimeMills":4}`)
			return resp, true
		}
		return next(addr, req)
	}
	r := runMsg(t, f, modeQuery, "queryMsgById", "-t", msgTopic, "-i", uniq1, "-g", "pushGroup", "-d", "c1")
	want := "ConsumeMessageDirectlyResult [order=false, autoCommit=true, consumeResult=CR_SUCCESS, remark=null, spentTimeMills=4]"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("%+v", r)
	}
	// The broker that stores it gets the offset id.
	if len(direct) != 1 || direct[0]["addr"] != f.a || direct[0]["msgId"] != f.ids["m1"] || direct[0]["group"] != "pushGroup" {
		t.Fatalf("309: %v", direct)
	}
	r = runMsg(t, f, modeQuery, "queryMsgById", "-t", msgTopic, "-i", uniq1, "-g", "pushGroup", "-d", "pullClient")
	if r.code != 0 || r.stdout != "this pullClient client is not push consumer ,not support direct push \n" {
		t.Fatalf("pull client: %+v", r)
	}
	r = runMsg(t, f, modeQuery, "queryMsgByUniqueKey", "-t", msgTopic, "-i", uniq1, "-g", "pushGroup", "-d", "c1")
	if r.code != 0 || r.stdout != want {
		t.Fatalf("queryMsgByUniqueKey: %+v", r)
	}
}

func TestMessageCommandsHelpAndList(t *testing.T) {
	r := runFake(t, inProcessMsgFixture(t).fc, "help", "queryMsgByKey")
	if !strings.HasPrefix(r.stdout, "usage: mqadmin queryMsgByKey [-b <arg>] [-c <arg>] [-e <arg>] [-h] [-k <arg>]") && !strings.Contains(r.stdout, "-k,--msgKey <arg>") {
		t.Fatalf("%q", r.stdout)
	}
	r = runFake(t, inProcessMsgFixture(t).fc)
	for _, name := range []string{"queryMsgById", "queryMsgByKey", "queryMsgByUniqueKey", "queryMsgByOffset", "sendMessage", "consumeMessage"} {
		if !strings.Contains(r.stdout, "   "+name+" ") {
			t.Errorf("%s not listed:\n%s", name, r.stdout)
		}
	}
	// Java's order: query commands after brokerStatus.
	if i, j := strings.Index(r.stdout, "brokerStatus"), strings.Index(r.stdout, "queryMsgById"); i < 0 || j < i {
		t.Errorf("order:\n%s", r.stdout)
	}
}
