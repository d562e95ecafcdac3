package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/framework"
)

// badInputMaxMessageSize is the broker's maxMessageSize in
// TestBadInputMessages (64 KiB instead of 4 MiB keeps the test cheap).
const badInputMaxMessageSize = 64 << 10

// sendV2Request is a SEND_MESSAGE_V2 (310) request with the short header names of
// docs/protocol.md §5.1, as the Java client sends it.
func sendV2Request(topic, defaultTopic string, queueID int, body []byte) *remoting.Command {
	return remoting.NewRequest(code.SendMessageV2, map[string]string{
		"a": "badinput_pg", "b": topic, "c": defaultTopic, "d": "4", "e": strconv.Itoa(queueID),
		"f": "0", "g": strconv.FormatInt(time.Now().UnixMilli(), 10), "h": "0",
		"i": "TAGS\x01TagA\x02KEYS\x01k1\x02", "j": "0", "k": "false", "l": "16", "m": "false", "n": "broker-a",
	}, body)
}

// sendV1Request is the same request as SEND_MESSAGE (10), with the long names client-go
// uses.
func sendV1Request(topic string, queueID int, body []byte) *remoting.Command {
	return remoting.NewRequest(code.SendMessage, map[string]string{
		"producerGroup": "badinput_pg", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": strconv.Itoa(queueID), "sysFlag": "0", "bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10),
		"flag": "0", "properties": "TAGS\x01TagA\x02", "reconsumeTimes": "0", "unitMode": "false",
		"maxReconsumeTimes": "16", "batch": "false", "bname": "broker-a",
	}, body)
}

// pullFlagSubscription and pullFlagSuspend are PULL_MESSAGE sysFlag bits
// (docs/protocol.md §6.2).
const (
	pullFlagSuspend      = 1 << 1
	pullFlagSubscription = 1 << 2
)

// pullRequest is a PULL_MESSAGE (11) with every field of docs/protocol.md §3.3.
func pullRequest(topic string, queueID int, offset int64, sysFlag int) *remoting.Command {
	return remoting.NewRequest(code.PullMessage, map[string]string{
		"consumerGroup": "badinput_cg", "topic": topic, "queueId": strconv.Itoa(queueID),
		"queueOffset": strconv.FormatInt(offset, 10), "maxMsgNums": "32", "sysFlag": strconv.Itoa(sysFlag),
		"commitOffset": "0", "suspendTimeoutMillis": "2000", "subscription": "*",
		"subVersion": strconv.FormatInt(time.Now().UnixMilli(), 10), "expressionType": "TAG", "bname": "broker-a",
	}, nil)
}

// wantResp fails unless resp has code want and a remark when it is an error.
func wantResp(t *testing.T, what string, resp *remoting.Command, want int32) {
	t.Helper()
	if resp.Code != want {
		t.Fatalf("%s: code %d (remark %q), want %d", what, resp.Code, resp.Remark, want)
	}
	if want != code.Success && want != code.PullNotFound && want != code.PullOffsetMoved && resp.Remark == "" {
		t.Fatalf("%s: code %d without a remark", what, resp.Code)
	}
}

// TestBadInputMessages sends bad messages and bad pulls to a real broker
// (maxMessageSize 64 KiB): each gets the documented code — MESSAGE_ILLEGAL
// for an oversize body, INVALID_PARAMETER / NO_PERMISSION /
// TOPIC_NOT_EXIST for bad, forbidden and unknown topics, PULL_NOT_FOUND /
// PULL_OFFSET_MOVED with the right nextBeginOffset for unknown queues and
// out-of-range offsets — and the broker keeps storing and serving.
func TestBadInputMessages(t *testing.T) {
	t.Parallel()
	c := startCluster(t, framework.Options{Brokers: 1,
		BrokerConf: map[string]string{"maxMessageSize": strconv.Itoa(badInputMaxMessageSize)}})
	addr := c.Brokers()[0].Addr()
	const topic = "BadInputTopic"
	mqadmin(t, c, "updateTopic", "-b", addr, "-t", topic, "-r", "4", "-w", "4")

	// A body at the limit is stored; one byte more is MESSAGE_ILLEGAL, in
	// both header styles. Bodies are not compressed by a raw request.
	wantResp(t, "body of maxMessageSize", roundTrip(t, addr, sendV2Request(topic, "TBW102", 0, make([]byte, badInputMaxMessageSize))), code.Success)
	for name, req := range map[string]*remoting.Command{
		"V2 oversize": sendV2Request(topic, "TBW102", 0, make([]byte, badInputMaxMessageSize+1)),
		"V1 oversize": sendV1Request(topic, 0, make([]byte, 4*badInputMaxMessageSize)),
	} {
		resp := roundTrip(t, addr, req)
		wantResp(t, name, resp, code.MessageIllegal)
		if resp.ExtFields["msgId"] != "" {
			t.Fatalf("%s: refused message answered msgId %q", name, resp.ExtFields["msgId"])
		}
	}
	// Properties longer than 32767 bytes cannot be stored either.
	big := sendV2Request(topic, "TBW102", 0, []byte("x"))
	big.ExtFields["i"] = "KEYS\x01" + strings.Repeat("k", 40000) + "\x02"
	wantResp(t, "properties over 32767 bytes", roundTrip(t, addr, big), code.MessageIllegal)

	// Topic names: illegal → 29, send-forbidden system topics → 16, an
	// unknown topic whose template does not exist → 17.
	for _, tc := range []struct {
		topic, template string
		want            int32
	}{
		{"bad topic!", "TBW102", code.InvalidParameter},
		{"a/b", "TBW102", code.InvalidParameter},
		{strings.Repeat("t", 128), "TBW102", code.InvalidParameter},
		{"", "TBW102", code.InvalidParameter},
		{"SCHEDULE_TOPIC_XXXX", "TBW102", code.NoPermission},
		{"RMQ_SYS_TRANS_HALF_TOPIC", "TBW102", code.NoPermission},
		{"RMQ_SYS_TRANS_OP_HALF_TOPIC", "TBW102", code.NoPermission},
		{"NoSuchTopicNoTemplate", "NoSuchTemplate", code.TopicNotExist},
	} {
		wantResp(t, fmt.Sprintf("send to %.20q (template %s)", tc.topic, tc.template),
			roundTrip(t, addr, sendV2Request(tc.topic, tc.template, 0, []byte("x"))), tc.want)
	}
	// A queue id beyond the topic's queues → 29.
	wantResp(t, "send to queue 99", roundTrip(t, addr, sendV2Request(topic, "TBW102", 99, []byte("x"))), code.InvalidParameter)

	// Three more messages in queue 0 (four in all), none elsewhere.
	for i := range 3 {
		wantResp(t, "send", roundTrip(t, addr, sendV2Request(topic, "TBW102", 0, []byte(fmt.Sprint("m", i)))), code.Success)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if resp := roundTrip(t, addr, pullRequest(topic, 0, 3, pullFlagSubscription)); resp.Code != code.Success {
			return fmt.Errorf("message 3 not pullable yet: %d", resp.Code)
		}
		return nil
	})

	// Pulls (docs/protocol.md §6.2): the code and nextBeginOffset of each row.
	for _, tc := range []struct {
		name    string
		queueID int
		offset  int64
		sysFlag int
		want    int32
		next    int64
	}{
		{"offset = max", 0, 4, pullFlagSubscription, code.PullNotFound, 4},
		{"offset > max", 0, 1000, pullFlagSubscription, code.PullOffsetMoved, 4},
		{"offset > max, long polling", 0, 1000, pullFlagSubscription | pullFlagSuspend, code.PullOffsetMoved, 4},
		{"offset < min", 0, -5, pullFlagSubscription, code.PullOffsetMoved, 0},
		{"empty queue at 0", 2, 0, pullFlagSubscription, code.PullNotFound, 0},
		{"empty queue beyond 0", 2, 7, pullFlagSubscription, code.PullOffsetMoved, 0},
		{"empty queue, long polling beyond 0", 3, 7, pullFlagSubscription | pullFlagSuspend, code.PullOffsetMoved, 0},
	} {
		resp := roundTrip(t, addr, pullRequest(topic, tc.queueID, tc.offset, tc.sysFlag))
		wantResp(t, "pull "+tc.name, resp, tc.want)
		if got := resp.ExtFields["nextBeginOffset"]; got != strconv.FormatInt(tc.next, 10) {
			t.Fatalf("pull %s: nextBeginOffset %q, want %d (ext %v)", tc.name, got, tc.next, resp.ExtFields)
		}
		for _, k := range []string{"minOffset", "maxOffset", "suggestWhichBrokerId"} {
			if _, ok := resp.ExtFields[k]; !ok {
				t.Fatalf("pull %s: no %s in %v", tc.name, k, resp.ExtFields)
			}
		}
		if len(resp.Body) != 0 {
			t.Fatalf("pull %s: %d body bytes", tc.name, len(resp.Body))
		}
	}
	// A queue the topic does not have → 29; a topic the broker does not
	// have → 17; a missing required field → 29.
	wantResp(t, "pull queue 99", roundTrip(t, addr, pullRequest(topic, 99, 0, pullFlagSubscription)), code.InvalidParameter)
	wantResp(t, "pull queue -1", roundTrip(t, addr, pullRequest(topic, -1, 0, pullFlagSubscription)), code.InvalidParameter)
	wantResp(t, "pull unknown topic", roundTrip(t, addr, pullRequest("NoSuchTopic", 0, 0, pullFlagSubscription)), code.TopicNotExist)
	noOffset := pullRequest(topic, 0, 0, pullFlagSubscription)
	delete(noOffset.ExtFields, "queueOffset")
	wantResp(t, "pull without queueOffset", roundTrip(t, addr, noOffset), code.InvalidParameter)

	// The broker still stores and serves: the four good messages come back
	// intact (CRC checked) at offsets 0..3, and a new send lands at 4.
	resp := roundTrip(t, addr, pullRequest(topic, 0, 0, pullFlagSubscription))
	wantResp(t, "pull from 0", resp, code.Success)
	msgs, err := message.DecodeAll(resp.Body, message.DecodeOptions{VerifyCRC: true})
	if err != nil {
		t.Fatalf("pulled body: %v", err)
	}
	if len(msgs) != 4 || resp.ExtFields["nextBeginOffset"] != "4" {
		t.Fatalf("pulled %d messages, nextBeginOffset %q; want 4, 4", len(msgs), resp.ExtFields["nextBeginOffset"])
	}
	for i, m := range msgs {
		want := fmt.Sprint("m", i-1)
		if i == 0 {
			want = string(make([]byte, badInputMaxMessageSize))
		}
		if m.QueueOffset != int64(i) || string(m.Body) != want {
			t.Fatalf("message %d: offset %d body %.10q", i, m.QueueOffset, m.Body)
		}
	}
	resp = roundTrip(t, addr, sendV1Request(topic, 0, []byte("after")))
	wantResp(t, "send after bad input", resp, code.Success)
	if resp.ExtFields["queueOffset"] != "4" {
		t.Fatalf("send after bad input: queueOffset %q, want 4", resp.ExtFields["queueOffset"])
	}
	if !c.Brokers()[0].Running() {
		t.Fatal("broker exited")
	}
}
