package broker

import (
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// TestWithLockMaxLiveTime: an orderly lock nobody renews is free for
// another client once the configured expiry has passed.
func TestWithLockMaxLiveTime(t *testing.T) {
	const maxLive = 300 * time.Millisecond
	b := startBroker(t, testConfig(t, t.TempDir(), ""), nil, WithLockMaxLiveTime(maxLive), WithRegisterTiming(time.Hour, time.Hour, time.Hour))
	send := invoker(t, b)
	invoke := func(c int32, ext map[string]string, body []byte) *remoting.Command {
		t.Helper()
		resp := send(c, ext, body)
		if resp.Code != code.Success {
			t.Fatalf("request %d: %d %s", c, resp.Code, resp.Remark)
		}
		return resp
	}
	invoke(code.UpdateAndCreateTopic, map[string]string{"topic": "Orders", "readQueueNums": "1", "writeQueueNums": "1",
		"perm": "6", "topicFilterType": "SINGLE_TAG"}, nil)
	mq := protocol.MessageQueue{Topic: "Orders", BrokerName: "broker-a", QueueID: 0}
	lock := func(clientID string) bool {
		t.Helper()
		body, err := protocol.Marshal(map[string]any{"consumerGroup": "G", "clientId": clientID, "mqSet": []protocol.MessageQueue{mq}})
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			LockOKMQSet []protocol.MessageQueue `json:"lockOKMQSet"`
		}
		if err := protocol.Unmarshal(invoke(code.LockBatchMQ, nil, body).Body, &got); err != nil {
			t.Fatal(err)
		}
		return len(got.LockOKMQSet) == 1
	}
	if !lock("A") {
		t.Fatal("A could not take the free lock")
	}
	if lock("B") {
		t.Fatal("B took A's live lock")
	}
	time.Sleep(maxLive + 100*time.Millisecond)
	if !lock("B") {
		t.Fatalf("B could not take A's lock after %v without renewal", maxLive)
	}
}
